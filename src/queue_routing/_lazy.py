"""Lazy public names for the subpackages (PEP 562).

``from queue_routing.multiskill import table1`` imports only the submodules ``table1`` needs,
not the compiled simulators, the Markov chains and pandas with them: a pipeline script or a
CLI call that draws one figure starts in a fraction of the time. Attribute access, ``from ...
import``, ``dir()`` and ``__all__`` behave as with eager imports; a submodule not yet imported
(``queue_routing.multiskill.simulation``) is imported on first attribute access too.

>>> import queue_routing.multiskill as ms
>>> ms.table1().n_classes
5
>>> "simulate" in dir(ms)
True
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: Every name a submodule lists in its ``__all__``: ``{".model": ALL}`` in a package's exports.
ALL = "*"

_ALL_LITERAL = re.compile(r"^__all__ = (\[.*?\]|\(.*?\))\n", re.S | re.M)
_NAME = re.compile(r"[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']")


def module_all(package: str, module: str) -> tuple[str, ...]:
    """The ``__all__`` of ``package``'s submodule ``module`` (``".model"``), read from its
    source without importing it (a top-level ``__all__ = [...]`` literal; a millisecond for a
    package, where importing would load numba and the simulators).

    >>> "Instance" in module_all("queue_routing.multiskill", ".model")
    True
    """
    path = Path(sys.modules[package].__file__).parent / (module.lstrip(".") + ".py")
    match = _ALL_LITERAL.search(path.read_text())
    if match is None:
        raise ValueError(f"{package}{module}: no top-level __all__ = [...] literal")
    return tuple(_NAME.findall(match.group(1)))


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Module ``__getattr__``, ``__dir__`` and ``__all__`` of a package with lazy names.

    Parameters
    ----------
    package : the package's ``__name__``.
    exports : for each relative submodule name (``".model"``), the public names it defines,
        or :data:`ALL` for every name of the submodule's ``__all__`` (:func:`module_all`), so
        that a submodule's public names are written once.

    Returns
    -------
    ``(__getattr__, __dir__, __all__)`` to assign at the package's top level; ``__all__`` is
    sorted. A name listed twice is a programming error (``ValueError`` at import).

    A public name may also be a submodule's name (``multiskill.compare``, the function, is
    defined in ``multiskill/compare.py``). Importing that submodule would rebind the package's
    attribute to the module; the package's class is switched to one that keeps the public
    name, as eager ``from .compare import compare`` did.
    """
    where: dict[str, str] = {}
    for module, names in exports.items():
        for name in module_all(package, module) if names == ALL else names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is exported by {where[name]} and {module}")
            where[name] = module
    public = sorted(where)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if name.startswith("__"):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        globals_ = importlib.import_module(package).__dict__
        globals_[name] = value  # cache: the next access is a plain attribute lookup
        return value

    def __dir__() -> list[str]:
        return sorted(set(public) | set(importlib.import_module(package).__dict__))

    sys.modules[package].__class__ = _package_class(frozenset(where))
    return __getattr__, __dir__, public


def _package_class(public: frozenset[str]) -> type[types.ModuleType]:
    class LazyPackage(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if (
                name in public
                and isinstance(value, types.ModuleType)
                and value.__name__ == f"{self.__name__}.{name}"
            ):
                return  # the import system binding a submodule over a public name of it
            super().__setattr__(name, value)

    return LazyPackage
