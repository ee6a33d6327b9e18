"""Index policies of one's own for the simulators of Parts A and B (ours).

Method and the reasons: ``docs/README.md#your-own-policy``.

A user policy is an **index function** ::

    index(server: int, jobs: int, instance) -> float

``server`` is a position in the instance's arrays (Part A: server ``j = 0..C``, 0 the shared
server, as in ``instance.mu[j]``; Part B: ``instance.clusters[server]``, the cluster
numbered ``server + 1`` in the docs and the CLI), ``jobs`` is the number of jobs the
arriving job finds there (waiting plus in service, **not** counting itself; ``0, 1, 2,
...``) and ``instance`` the instance simulated (:class:`queue_routing.multiskill.Instance` or
:class:`queue_routing.deadlines.Instance`). The value is a finite number ``>= 0`` in the
units of a cost per job; **smaller is preferred**:

* Part A: an arriving class-``i`` job joins its dedicated server ``i`` iff
  ``index(i, x_i) <= index(0, x_0)`` (ties to the dedicated server), else server 0. The
  built-in index policies are ``index(j, x) = w_j (x + 1)``
  (:func:`~queue_routing.multiskill.simulation.policy_weights`): JSQ is ``jobs + 1``.
* Part B: the arriving job is rejected iff ``min_k index(k, x_k) >= R`` (the rejection cost;
  never without one), else routed to the cluster of least index, ties to the lowest ``k``:
  the rule of the built-in IO, PI and RB indices (cost per job: a deadline miss costs 1).

The function is evaluated **once**, before the simulation, into a table ``table[server,
jobs]`` for ``jobs = 0..table_size`` (:meth:`UserPolicy.index_table`); the compiled kernels
read the table, so a user policy runs at the speed of a built-in and needs no numba code of
its own (it may call anything, e.g. the package's own solvers). An arrival that finds a
server beyond the table is **counted, never extrapolated**: the server counts as full
(index ``+inf``), the count is the result's ``table_bound`` and a warning (Part A
:class:`~queue_routing.multiskill.simulation.TableBoundWarning`, Part B
:class:`~queue_routing.deadlines.policies.TableBoundWarning`) says to raise
``table_size``; a paired comparison refuses such a run by default.

Where a policy can be given:

* from Python, as the ``policy`` argument of ``simulate`` / ``compare_policies`` (Part A)
  and ``simulate_policy`` / ``evaluate`` / ``compare_policies`` (Part B): a built-in name, a
  callable with the signature above, a :class:`UserPolicy` (e.g. from a ready table,
  :meth:`UserPolicy.from_table`, or Part A weights, :meth:`UserPolicy.from_weights`), or a
  string ``"path.py:name"``;
* from the command line and the pipeline's config, as the string ``path/to/file.py:name``
  (a path relative to the working directory, then ``:`` and the function's name), in
  ``--policy``, ``--policies`` and ``multiskill.simulation.policies``.

A policy is named in every output (rows, JSON keys, rankings) by the string as given, or by
the function's ``__name__`` when it is a callable; figures label it by the part after the
``:``. The policy never enters the keys of the random streams, so a user policy sees the
same events as the built-ins (common random numbers, ``docs/README.md#random-numbers``).

Every problem is a :class:`UserPolicyError` (a ``ValueError``) with one line that names the
policy: file missing, not a Python file, the module failing to import, name missing, not
callable, a signature that does not take ``(server, jobs, instance)``, an exception raised
by the function (``sys.exit`` included), or a value that is not a finite real number ``>= 0``
(a complex number, or an integer too large for a double, is not). The CLI prints it as one
line and exits with status 2. While the user's code runs (its module's import, the index
calls) whatever it prints goes to stderr, never into a result written to stdout.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import math
import numbers
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .checks import show
from .errors import ArgumentError

__all__ = [
    "DEFAULT_TABLE_SIZE",
    "SPEC_PATTERN",
    "UserPolicy",
    "UserPolicyError",
    "is_spec",
    "load_policy",
    "policy_label",
    "policy_name",
    "resolve_policies",
    "resolve_policy",
]

#: Default ``table_size``: the index is tabulated for ``jobs = 0..400`` at every server.
DEFAULT_TABLE_SIZE = 400
#: The config schema's pattern of a policy string ``path/to/file.py:name`` (the path may
#: hold ``:``, as :func:`is_spec`, which splits at the last one, accepts).
SPEC_PATTERN = r"^.+\.py:[A-Za-z_][A-Za-z0-9_]*$"


class UserPolicyError(ValueError):
    """A user policy that cannot be loaded or evaluated; one line naming the policy."""


def is_spec(text: Any) -> bool:
    """Whether ``text`` has the form ``path.py:name`` of a user policy.

    >>> is_spec("docs/examples/my_policy.py:pi_damped"), is_spec("pi"), is_spec("a.py")
    (True, False, False)
    """
    if not isinstance(text, str):
        return False
    path, sep, name = text.rpartition(":")
    return bool(sep) and path.endswith(".py") and name.isidentifier()


def policy_label(policy: str) -> str:
    """The short label of a policy in figures: the function's name of ``path.py:name``,
    else the name itself.

    >>> policy_label("docs/examples/my_policy.py:pi_damped"), policy_label("jsq")
    ('pi_damped', 'jsq')
    """
    return policy.rpartition(":")[2] if is_spec(policy) else policy


@dataclass(frozen=True)
class UserPolicy:
    """An index policy given by the user (module docstring: meaning, units, rule).

    Attributes
    ----------
    name:
        How the policy is called in outputs: the string ``path.py:name`` as given, the
        function's ``__name__``, or the name given to :meth:`from_table`.
    index:
        ``index(server, jobs, instance) -> float`` (cost per job, smaller preferred), or
        ``None`` for a policy given by its table.
    table:
        ``table[server, jobs]``, ``jobs = 0..table.shape[1] - 1`` (a policy given by its
        table), or ``None``.
    """

    name: str
    index: Callable[[int, int, Any], float] | None = field(default=None, repr=False)
    table: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise UserPolicyError(f"a user policy needs a non-empty name, got {self.name!r}")
        if (self.index is None) == (self.table is None):
            raise UserPolicyError(f"policy {self.name!r}: give exactly one of index and table")
        if self.index is not None:
            _check_signature(self.name, self.index)
        else:
            t = _checked_values(self.name, self.table)
            if t.ndim != 2 or t.shape[1] == 0:
                raise UserPolicyError(
                    f"policy {self.name!r}: the table must be 2-D, table[server, jobs], "
                    f"got shape {t.shape}"
                )
            t.setflags(write=False)
            object.__setattr__(self, "table", t)

    @classmethod
    def from_table(cls, name: str, table: Any) -> UserPolicy:
        """A policy given by its table ``table[server, jobs]`` (finite, ``>= 0``)."""
        return cls(name=name, table=np.array(table, dtype=float))

    @classmethod
    def from_weights(cls, name: str, weights: Any) -> UserPolicy:
        """Part A's form of the built-in index policies: ``index(j, x) = weights[j] (x + 1)``
        with one weight per server (finite, ``>= 0``; the built-ins' are those of
        :func:`~queue_routing.multiskill.simulation.policy_weights`).

        >>> UserPolicy.from_weights("w", [2.0, 0.5]).index_table(2, 2, None).tolist()
        [[2.0, 4.0, 6.0], [0.5, 1.0, 1.5]]
        """
        w = _checked_values(name, weights)
        if w.ndim != 1:
            raise UserPolicyError(f"policy {name!r}: weights must be 1-D, got shape {w.shape}")

        def index(server: int, jobs: int, instance: Any) -> float:
            return float(w[server]) * (jobs + 1)

        return cls(name=name, index=index)

    @property
    def label(self) -> str:
        """Short label for figures (:func:`policy_label`)."""
        return policy_label(self.name)

    def index_table(self, n_servers: int, table_size: int, instance: Any) -> np.ndarray:
        """``table[server, jobs]`` for ``server < n_servers``, ``jobs = 0..table_size``
        (float64, C-contiguous, read-only; cost per job).

        The index function is called once per entry, in order of ``server`` then ``jobs``;
        a given table must have ``n_servers`` rows and at least ``table_size + 1`` columns
        (its first ``table_size + 1`` are used). Raises :class:`UserPolicyError` for an
        exception of the function or a value that is not a finite number ``>= 0``.

        >>> jsq = UserPolicy("jsq_again", index=lambda server, jobs, instance: jobs + 1)
        >>> jsq.index_table(2, 3, None).tolist()
        [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]
        """
        n_servers, table_size = int(n_servers), int(table_size)
        if self.table is not None:
            t = self.table
            if t.shape[0] != n_servers or t.shape[1] < table_size + 1:
                raise UserPolicyError(
                    f"policy {self.name!r}: the table has shape {t.shape}; this instance "
                    f"needs {n_servers} rows and at least {table_size + 1} columns "
                    f"(jobs = 0..{table_size})"
                )
            out = np.ascontiguousarray(t[:, : table_size + 1], dtype=float).copy()
        else:
            out = np.empty((n_servers, table_size + 1))
            for server in range(n_servers):
                for jobs in range(table_size + 1):
                    out[server, jobs] = _value(self, server, jobs, instance)
        out.setflags(write=False)
        return out


def _check_signature(name: str, func: Any) -> None:
    if not callable(func):
        raise UserPolicyError(f"policy {name!r}: {type(func).__name__} object is not callable")
    target = getattr(func, "py_func", func)  # a numba dispatcher: its Python function
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: accept, errors at call
        return
    try:
        sig.bind(0, 0, None)
    except TypeError:
        raise UserPolicyError(
            f"policy {name!r}: the function must take (server, jobs, instance); "
            f"its signature is {sig}"
        ) from None


class _ToStderr:
    """What the user's code prints to ``sys.stdout``, sent to ``sys.stderr``; remembers
    whether a line was left open (so that the next message starts on a line of its own)."""

    def __init__(self) -> None:
        self.open_line = False

    def write(self, text: str) -> int:
        if text:
            sys.stderr.write(text)
            self.open_line = not text.endswith("\n")
        return len(text)

    def flush(self) -> None:
        sys.stderr.flush()


@contextlib.contextmanager
def _user_code() -> Iterator[None]:
    """While the user's code runs: what it prints goes to stderr (stdout carries results),
    its last line ended."""
    out = _ToStderr()
    try:
        with contextlib.redirect_stdout(out):
            yield
    finally:
        if out.open_line:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\n")


def _raised(exc: BaseException) -> str:
    """``Type: message`` of an exception of the user's code, on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _short(v: Any) -> str:
    """``repr(v)`` in at most 60 characters (an integer of 400 digits is not a message)."""
    text = repr(v)
    return text if len(text) <= 60 else f"{text[:28]}...{text[-28:]} ({len(text)} characters)"


def _value(policy: UserPolicy, server: int, jobs: int, instance: Any) -> float:
    try:
        with _user_code():
            v = policy.index(server, jobs, instance)
    except (Exception, SystemExit) as exc:  # the user's code: one line naming the call
        raise UserPolicyError(
            f"policy {policy.name!r}: index({server}, {jobs}, instance) raised {_raised(exc)}"
        ) from None
    if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real):
        raise UserPolicyError(
            f"policy {policy.name!r}: index({server}, {jobs}, instance) returned "
            f"{_short(v)} ({type(v).__name__}), not a number"
        )
    try:
        f = float(v)
    except (OverflowError, TypeError, ValueError):  # an integer beyond the doubles
        raise UserPolicyError(
            f"policy {policy.name!r}: index({server}, {jobs}, instance) returned {_short(v)}; "
            "an index must be finite and >= 0 (a number a double can hold)"
        ) from None
    if not math.isfinite(f) or f < 0:
        raise UserPolicyError(
            f"policy {policy.name!r}: index({server}, {jobs}, instance) returned {f!r}; "
            "an index must be finite and >= 0"
        )
    return f


def _checked_values(name: str, table: Any) -> np.ndarray:
    try:
        t = np.array(table, dtype=float)
    except (TypeError, ValueError):
        raise UserPolicyError(f"policy {name!r}: the table must hold numbers") from None
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        raise UserPolicyError(
            f"policy {name!r}: table{list(where)} = {t[where]!r}; an index must be finite and >= 0"
        )
    return t


def load_policy(spec: str) -> UserPolicy:
    """The policy ``path/to/file.py:name``: function ``name`` of the Python file (a path
    relative to the working directory), imported from the file (not from ``sys.path``).

    The module is executed once per file content and cached (a changed file is reloaded).
    Raises :class:`UserPolicyError` (one line naming ``spec``) if the string has another
    form, the file is missing or fails to import, or ``name`` is missing, not callable or
    does not take ``(server, jobs, instance)``.

    >>> try:
    ...     load_policy("no/such/file.py:index")
    ... except UserPolicyError as exc:
    ...     print(exc)
    policy 'no/such/file.py:index': file no/such/file.py not found
    """
    if not is_spec(spec):
        raise UserPolicyError(
            f"policy {spec!r}: a user policy is given as path/to/file.py:name (a Python file, "
            "':' and the name of its index function)"
        )
    path_text, _, name = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise UserPolicyError(f"policy {spec!r}: file {path_text} not found")
    source = path.read_bytes()
    module = _module(spec, path, source)
    if not hasattr(module, name):
        raise UserPolicyError(f"policy {spec!r}: {path_text} defines no {name!r}")
    return UserPolicy(name=spec, index=getattr(module, name))


_MODULES: dict[tuple[str, str], Any] = {}


def _module(spec: str, path: Path, source: bytes) -> Any:
    digest = hashlib.sha256(source).hexdigest()[:16]
    key = (str(path.resolve()), digest)
    if key in _MODULES:
        return _MODULES[key]
    mod_name = f"_queue_routing_user_policy_{digest}"
    loader_spec = importlib.util.spec_from_file_location(mod_name, path)
    if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - .py files load
        raise UserPolicyError(f"policy {spec!r}: {path} cannot be imported")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look the module up
    try:
        with _user_code():
            loader_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the user's module: one line naming the file
        del sys.modules[mod_name]
        raise UserPolicyError(f"policy {spec!r}: importing {path} raised {_raised(exc)}") from None
    _MODULES[key] = module
    return module


def resolve_policy(policy: Any, builtins: tuple[str, ...]) -> str | UserPolicy:
    """A built-in name (returned as is) or the :class:`UserPolicy` that ``policy`` gives.

    ``policy`` is a name of ``builtins``, a string ``path.py:name`` (:func:`load_policy`),
    a :class:`UserPolicy`, or a callable ``index(server, jobs, instance)`` (named by its
    ``__name__``). Anything else raises :class:`UserPolicyError` naming the choices.

    >>> resolve_policy("jsq", ("jsq", "pi"))
    'jsq'
    >>> def double(server, jobs, instance):
    ...     return 2.0 * (jobs + 1)
    >>> resolve_policy(double, ("jsq", "pi")).name
    'double'
    """
    if isinstance(policy, str):
        if policy in builtins:
            return policy
        if is_spec(policy):
            return load_policy(policy)
        raise UserPolicyError(
            f"policy must be one of {', '.join(builtins)} or path/to/file.py:name; got {policy!r}"
        )
    if isinstance(policy, UserPolicy):
        return policy
    if callable(policy):
        return UserPolicy(name=getattr(policy, "__name__", type(policy).__name__), index=policy)
    raise UserPolicyError(
        f"policy must be one of {', '.join(builtins)}, path/to/file.py:name, a callable "
        f"index(server, jobs, instance) or a UserPolicy; got {type(policy).__name__}"
    )


def policy_name(policy: str | UserPolicy) -> str:
    """The name of a resolved policy in outputs (:func:`resolve_policy`)."""
    return policy.name if isinstance(policy, UserPolicy) else policy


def resolve_policies(
    policies: Any, known: Sequence[str], *, load: bool = True
) -> dict[str, str | UserPolicy]:
    """``{name: policy}`` of a paired comparison's policies, in the order given.

    ``policies`` is a sequence or a comma-separated string of names of ``known`` (the part's
    built-ins, returned as is) and user policies (``"path.py:name"``, callables,
    :class:`UserPolicy`; :func:`resolve_policy`), each named as in the outputs
    (:func:`policy_name`). With ``load=False`` (statistics made from costs already simulated)
    any other non-empty string is kept as a user policy's name, unloaded. An empty list, a
    repeated name or a name that is neither raises
    :class:`~queue_routing.errors.ArgumentError` naming ``policies``; a user policy that
    cannot be loaded, :class:`UserPolicyError`.

    >>> list(resolve_policies("jsq, pi", ("bernoulli", "jsq", "pi")))
    ['jsq', 'pi']
    >>> resolve_policies(["pi", "pi"], ("pi",))
    Traceback (most recent call last):
    ...
    queue_routing.errors.ArgumentError: policies must not repeat a policy
    """
    if isinstance(policies, str):
        policies = [p.strip() for p in policies.split(",") if p.strip()]
    if not isinstance(policies, Sequence):
        raise ArgumentError(
            "policies", f"policies must be a sequence of names, got {show(policies)}"
        )
    if not policies:
        raise ArgumentError("policies", "policies must name at least one policy")
    resolved: dict[str, str | UserPolicy] = {}
    for p in policies:
        if isinstance(p, str) and p in known:
            q: str | UserPolicy = p
        elif not load and isinstance(p, str) and p:
            q = p  # a user policy's name in the costs
        elif load and (not isinstance(p, str) or ":" in p):
            q = resolve_policy(p, tuple(known))
        else:
            raise ArgumentError(
                "policies",
                f"policies must be among {', '.join(known)} or path/to/file.py:name; got {show(p)}",
            )
        name = policy_name(q)
        if name in resolved:
            raise ArgumentError("policies", "policies must not repeat a policy")
        resolved[name] = q
    return resolved
