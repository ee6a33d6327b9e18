"""Validation of the pipeline's configuration, with one-line errors that name the key.

The JSON schema ``workflow/schemas/config.schema.yaml`` types, ranges and describes every
key; :func:`validate_config` first rejects keys that were renamed (:data:`RENAMED_KEYS`)
or replaced (:data:`REPLACED_KEYS`), then checks a config against the schema and applies
the cross-key rules a JSON schema cannot express (``first <= last``, ``warmup < horizon``,
...). The first problem found is raised as a :class:`ConfigError` whose message is a single
line naming the dotted key, the offending value and what is allowed, e.g.::

    multiskill.instances_per_size: 0 is out of range; allowed: integer in [1, 100000]
        -- Random stable instances per C (10 in the paper).

(printed on one line), or for a renamed key::

    serverpools.stochastic.window: renamed to serverpools.stochastic.horizon

The tables of renamed and replaced keys are generic (dotted paths, any part): a part that
renames a key adds one entry, and a config that still sets the old key stops with that line.

The Snakefile calls it before any rule is defined, so an invalid config never starts a job
nor creates an output directory.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = [
    "RENAMED_KEYS",
    "REPLACED_KEYS",
    "ConfigError",
    "coerce_strings",
    "cross_key_problems",
    "load_schema",
    "non_finite_problems",
    "renamed_key_problems",
    "replaced_key_problems",
    "run_time_problems",
    "validate_config",
]

#: Keys that were renamed, old dotted path -> new dotted path (same value, same meaning). A
#: config (default, any ``--configfile`` or ``--config``) that still sets an old key stops with
#: one line naming the new key, before the schema check (which would only call it an unknown
#: key).
RENAMED_KEYS: dict[str, str] = {
    # Part C: a measured window is `horizon` time units after a `warmup`.
    "serverpools.stochastic.window": "serverpools.stochastic.horizon",
    "serverpools.stochastic.burn_in_margin": "serverpools.stochastic.warmup_margin",
    "serverpools.covariance.burn_in": "serverpools.covariance.warmup",
    # Part C: a fluid trajectory covers [0, t_end].
    "serverpools.fluid.stable.t_max": "serverpools.fluid.stable.t_end",
    "serverpools.fluid.unstable.t_max": "serverpools.fluid.unstable.t_end",
}


#: Keys that were replaced by keys of another meaning or value, old dotted path -> what to set
#: instead (reported like a renamed key: one line naming the new key, before the schema check).
REPLACED_KEYS: dict[str, str] = {
    # Part C: a measured window is `horizon` time units after a `warmup` (the covariance run
    # ended at t_end = warmup + horizon); the stationarity test takes a confidence level.
    "serverpools.covariance.t_end": (
        "replaced by serverpools.covariance.horizon, the measured time after the warmup "
        "(horizon = t_end - warmup)"
    ),
    "serverpools.stochastic.level": (
        "replaced by serverpools.stochastic.stationarity_confidence = 1 - level "
        "(0.99 for level 0.01)"
    ),
    # Part C's stationary time averages: the warm-up is derived from the linearisation and r,
    # a run covers that warm-up plus the horizon, and the verdict reads slope intervals
    # instead of a threshold.
    "serverpools.stochastic.t_end": (
        "replaced: a run covers the derived warm-up plus serverpools.stochastic.horizon"
    ),
    "serverpools.stochastic.burn_in": (
        "replaced: the warm-up is derived from A_u and r (serverpools.stochastic.warmup_margin)"
    ),
    "serverpools.stochastic.warmup": (
        "replaced: the warm-up is derived from A_u and r (serverpools.stochastic.warmup_margin)"
    ),
    "serverpools.stochastic.slope_threshold": (
        "replaced: the verdict reads the slope interval (serverpools.stochastic.confidence, "
        "fit_decades)"
    ),
}


class ConfigError(ValueError):
    """An invalid configuration value; ``key`` is the dotted path of the offending key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)


def load_schema(path: str | Path) -> dict:
    """Read the YAML JSON-schema at ``path``."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _dotted(parts) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in parts).replace(".[", "[")


def _number(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _allowed(schema: Mapping) -> str:
    """A short human description of what ``schema`` allows."""
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    kind = schema.get("type", "value")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None or high is not None:
        left = "(" if "exclusiveMinimum" in schema else "["
        right = ")" if "exclusiveMaximum" in schema else "]"
        low_text = "-inf" if low is None else _number(low)
        high_text = "inf" if high is None else _number(high)
        return f"{kind} in {left}{low_text}, {high_text}{right}"
    if kind == "array" and "items" in schema:
        inner = _allowed(schema["items"])
        size = ""
        if "minItems" in schema or "maxItems" in schema:
            size = f" of {schema.get('minItems', 0)}..{schema.get('maxItems', 'any')} items"
        return f"list{size} of {inner}"
    return str(kind)


def _describe(error: jsonschema.ValidationError) -> ConfigError:
    path = list(error.absolute_path)
    key = _dotted(path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    validator = error.validator
    if validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = key or "the top level"
        return ConfigError(
            _dotted([*path, extra[0]]) if extra else key,
            f"unknown key in {where} (allowed keys: {', '.join(allowed)})",
        )
    if validator == "required":
        return ConfigError(key, f"missing key ({error.message})")
    value = error.instance
    description = schema.get("description", "").strip().replace("\n", " ")
    allowed = _allowed(schema)
    if validator == "type":
        what = f"has the wrong type ({type(value).__name__})"
    elif validator in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        what = "is out of range"
    else:
        what = f"is invalid ({error.message})"
    text = f"{value!r} {what}; allowed: {allowed}"
    if description:
        text += f" -- {description}"
    return ConfigError(key, text)


def renamed_key_problems(
    config: Mapping[str, Any], renamed: Mapping[str, str] = RENAMED_KEYS
) -> list[tuple[str, str]]:
    """Old keys of ``renamed`` still set in ``config``, as ``(old key, message)`` pairs.

    In the order of ``renamed``; the message is ``"renamed to <new dotted key>"``. Works on
    any config (no schema assumed).
    """
    problems: list[tuple[str, str]] = []
    for old, new in renamed.items():
        if _has_key(config, old):
            problems.append((old, f"renamed to {new}"))
    return problems


def _has_key(config: Mapping[str, Any], dotted: str) -> bool:
    *parents, leaf = dotted.split(".")
    node: Any = config
    for part in parents:
        node = node.get(part) if isinstance(node, Mapping) else None
    return isinstance(node, Mapping) and leaf in node


def replaced_key_problems(
    config: Mapping[str, Any], replaced: Mapping[str, str] = REPLACED_KEYS
) -> list[tuple[str, str]]:
    """Keys of ``replaced`` still set in ``config``, as ``(old key, message)`` pairs.

    The message says what to set instead (:data:`REPLACED_KEYS`). No schema assumed.
    """
    return [(old, message) for old, message in replaced.items() if _has_key(config, old)]


def _range_problems(
    section: Mapping[str, Any], where: str, keys: Sequence[str]
) -> list[tuple[str, str]]:
    """``(key, message)`` for each ``[low, high]`` of ``section`` (at the dotted ``where``)
    among ``keys`` whose low end exceeds its high end."""
    problems = []
    for key in keys:
        low, high = section[key]
        if low > high:
            problems.append((f"{where}.{key}", f"low {low} must be <= high {high}"))
    return problems


def cross_key_problems(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Rules between keys that the schema cannot express, as ``(key, message)`` pairs.

    Assumes ``config`` already satisfies the schema.
    """
    problems: list[tuple[str, str]] = []
    sizes = config["multiskill"]["sizes"]
    if sizes["first"] > sizes["last"]:
        problems.append(
            ("multiskill.sizes", f"first {sizes['first']} must be <= last {sizes['last']}")
        )
    sp = config["serverpools"]
    problems += _range_problems(sp["search"], "serverpools.search", ("mu_range", "flow_range"))
    if sp["boundary"]["theta_min"] >= sp["boundary"]["theta_max"]:
        problems.append(
            (
                "serverpools.boundary",
                f"theta_min {sp['boundary']['theta_min']} must be < "
                f"theta_max {sp['boundary']['theta_max']}",
            )
        )
    limit = sp["fluid_limit"]
    steps = limit["t_end"] / limit["record_every"]
    if abs(steps - round(steps)) > 1e-9 * steps:
        problems.append(
            (
                "serverpools.fluid_limit.t_end",
                f"{limit['t_end']:g} must be a whole multiple of record_every "
                f"{limit['record_every']:g}",
            )
        )

    dl = config["deadlines"]
    base = dl["base"]
    if len(base["servers"]) != len(base["service_rates"]):
        problems.append(("deadlines.base", "servers and service_rates must have the same length"))
    else:
        capacity = sum(m * mu for m, mu in zip(base["servers"], base["service_rates"], strict=True))
        if max(dl["sweeps"]["pure_routing"]) >= capacity:
            problems.append(
                (
                    "deadlines.sweeps.pure_routing",
                    f"arrival rates must be < total capacity sum m_k mu_k = {capacity:g}",
                )
            )
    problems += _range_problems(dl["large"], "deadlines.large", ("servers_range", "rate_range"))
    if dl["large"]["warmup"] >= dl["large"]["horizon"]:
        problems.append(
            (
                "deadlines.large.warmup",
                f"{dl['large']['warmup']} must be < horizon {dl['large']['horizon']}",
            )
        )
    return problems


#: How a string of ``--config`` reads as a number or a boolean (a JSON-like grammar, not
#: YAML 1.1's, which reads ``1:30`` as the sexagesimal 90 and ``1_000`` as 1000).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOOLEANS = {"true": True, "false": False, "True": True, "False": False}


def _parse_scalar(text: str, kinds: set[str]) -> Any:
    """``text`` as the number or boolean of one of ``kinds``, or ``text`` itself."""
    text = text.strip()
    if "boolean" in kinds and text in _BOOLEANS:
        return _BOOLEANS[text]
    if kinds & {"integer", "number"} and _INTEGER.fullmatch(text):
        return int(text)
    if "number" in kinds and _NUMBER.fullmatch(text):
        return float(text)
    return text


def coerce_strings(config: Any, schema: Mapping, path: tuple = ()) -> list[str]:
    """Turn the strings that Snakemake's ``--config`` hands over for nested keys into the
    numbers or booleans the schema asks for, in place (in mappings and in lists); return
    the dotted keys changed.

    ``--config seed=5`` arrives as the integer 5, but ``--config 'multiskill={"simulation":
    {"horizon": 30}}'`` arrives with ``"30"`` as a string, and a nested list as a list of
    strings. A string is converted only where the schema expects a number, an integer or a
    boolean and the string is one in a strict grammar (``30``, ``-2.5e3``, ``true``; not
    YAML 1.1's sexagesimal ``1:30`` or ``1_000``); anything else is left for the schema check
    to report.

    >>> schema = {"type": "object", "properties": {"a": {"type": "object",
    ...     "properties": {"h": {"type": "number"}, "name": {"type": "string"},
    ...     "xs": {"type": "array", "items": {"type": "number"}}}}}}
    >>> config = {"a": {"h": "30.5", "name": "30", "xs": ["1", "2.5"]}}
    >>> coerce_strings(config, schema), config
    (['a.h', 'a.xs[0]', 'a.xs[1]'], {'a': {'h': 30.5, 'name': '30', 'xs': [1, 2.5]}})
    >>> config = {"a": {"h": "1:30"}}
    >>> coerce_strings(config, schema), config
    ([], {'a': {'h': '1:30'}})
    """
    changed: list[str] = []
    if not isinstance(schema, Mapping):
        return changed
    if isinstance(config, dict):
        properties = schema.get("properties", {})
        entries = [(key, properties.get(key)) for key in config]
    elif isinstance(config, list):
        items = schema.get("items")
        entries = [(i, items) for i in range(len(config))]
    else:
        return changed
    for key, sub in entries:
        if not isinstance(sub, Mapping):
            continue
        value = config[key]
        name = _dotted([*path, key])
        kinds = sub.get("type", [])
        kinds = {kinds} if isinstance(kinds, str) else set(kinds)
        if isinstance(value, str) and kinds & {"number", "integer", "boolean"}:
            parsed = _parse_scalar(value, kinds)
            if parsed is not value and not isinstance(parsed, str):
                config[key] = parsed
                changed.append(name)
        elif isinstance(value, dict | list):
            changed += coerce_strings(value, sub, (*path, key))
    return changed


def non_finite_problems(config: Any, path: tuple = ()) -> list[tuple[str, str]]:
    """``(dotted key, message)`` for every NaN or infinite number in ``config`` (a YAML
    ``.nan`` or ``.inf`` passes a JSON schema's type and range checks, so it is caught here).

    >>> non_finite_problems({"a": {"b": float("nan")}, "c": [1.0, float("inf")]})
    [('a.b', 'nan is not a finite number'), ('c[1]', 'inf is not a finite number')]
    """
    problems: list[tuple[str, str]] = []
    if isinstance(config, Mapping):
        items = config.items()
    elif isinstance(config, list | tuple):
        items = enumerate(config)
    else:
        if isinstance(config, float) and not math.isfinite(config):
            problems.append((_dotted(path), f"{config} is not a finite number"))
        return problems
    for key, value in items:
        problems += non_finite_problems(value, (*path, key))
    return problems


def validate_config(config: Mapping[str, Any], schema: Mapping | str | Path) -> None:
    """Check ``config`` against ``schema`` and the cross-key rules.

    Parameters
    ----------
    config : mapping
        The merged configuration (default config plus any ``--configfile`` / ``--config``).
        Strings that ``--config`` hands over for nested numbers are converted in place
        (:func:`coerce_strings`), so the rules read the numbers.
    schema : mapping or path
        The JSON schema, or the path of its YAML file.

    Raises
    ------
    ConfigError
        For the first problem found (a renamed key of :data:`RENAMED_KEYS` or a replaced
        one of :data:`REPLACED_KEYS`, then the most
        relevant schema error by :func:`jsonschema.exceptions.best_match`, then the
        cross-key rules), with a one-line message naming the dotted key.
    """
    for key, message in renamed_key_problems(config) + replaced_key_problems(config):
        raise ConfigError(key, message)
    if not isinstance(schema, Mapping):
        schema = load_schema(schema)
    coerce_strings(config, schema)
    for key, message in non_finite_problems(config):
        raise ConfigError(key, message)
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(config)))
    if error is not None:
        raise _describe(error)
    for key, message in cross_key_problems(config):
        raise ConfigError(key, message)
    for key, message in run_time_problems(config):
        raise ConfigError(key, message)


#: The config's lists of policies that may name a user policy ``path.py:name``, per part.
POLICY_LISTS = {
    "multiskill.simulation.policies": "A",
    "multiskill.job_sizes.policies": "A",
    "deadlines.large.policies": "B",
}


def _lookup(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def run_time_problems(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(dotted key, message)`` for values that pass the schema but would fail only when a
    job runs: a job-size law the parser refuses (``lognormal:0``, ``erlang:3_0``), a user
    policy whose file or function is missing or whose signature is wrong, and a Part B user
    policy that does not give a real index on the part's base instance (e.g. a Part A
    policy, which reads attributes a Part B instance does not have).

    >>> found = run_time_problems({"multiskill": {"job_sizes": {"laws": ["lognormal:0"]}}})
    >>> found[0][0], found[0][1].startswith("job sizes: lognormal needs a finite SCV > 0")
    ('multiskill.job_sizes.laws[0]', True)
    """
    from ..multiskill.sizes import job_sizes
    from ..user_policy import is_spec, load_policy

    problems: list[tuple[str, str]] = []
    laws = _lookup(config, "multiskill.job_sizes.laws")
    for i, law in enumerate(laws if isinstance(laws, list) else []):
        try:
            job_sizes(law)
        except ValueError as exc:
            problems.append((f"multiskill.job_sizes.laws[{i}]", str(exc)))
    for key, part in POLICY_LISTS.items():
        values = _lookup(config, key)
        for i, spec in enumerate(values if isinstance(values, list) else []):
            if not is_spec(spec):
                continue
            try:
                policy = load_policy(spec)
                _try_policy(policy, part, config)
            except Exception as exc:  # the user's code: any error is the finding
                message = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                problems.append((f"{key}[{i}]", message))
    return problems


def _try_policy(policy: Any, part: str, config: Mapping[str, Any]) -> None:
    """Raise unless ``policy`` gives a real index ``>= 0`` for every server (Part A, on the
    instance of Table 1) or cluster (Part B, on the base instance of ``deadlines.base``) at
    0..2 jobs: what every job of that part asks of it first (a policy written for the
    other part reads attributes this part's instance does not have)."""
    if part == "A":
        from ..multiskill.instances import table1

        instance, label = table1(), "a Part A instance (Table 1)"
        n = len(instance.mu)
    else:
        from ..deadlines.instances import base_instance

        base = _lookup(config, "deadlines.base")
        if not isinstance(base, Mapping):
            return
        instance = base_instance(base)
        n, label = instance.n_clusters, "a Part B instance (deadlines.base)"
    try:
        policy.index_table(n, 2, instance)
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"fails on {label}: {text}; is it a policy of the other part? (docs/your-own-policy.md)"
        ) from None
