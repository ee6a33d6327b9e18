"""The subpackages' lazy public names (queue_routing._lazy) behave like eager imports."""

import subprocess
import sys

import pytest

PACKAGES = ["queue_routing.multiskill", "queue_routing.deadlines", "queue_routing.serverpools"]


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing imported yet); return its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_to_its_defining_submodule(package):
    out = _fresh(
        f"import importlib, {package} as p\n"
        "bad = [n for n in p.__all__ if getattr(p, n) is None]\n"
        "assert set(p.__all__) <= set(dir(p))\n"
        "print(len(p.__all__), bad)"
    )
    count, bad = out.split(" ", 1)
    assert int(count) > 10 and bad == "[]"


def test_a_figure_module_does_not_import_the_compiled_simulators():
    out = _fresh(
        "import sys, queue_routing.multiskill.figures, queue_routing.serverpools.figures\n"
        "import queue_routing.deadlines.figures\n"
        "heavy = ('numba', 'scipy.stats', 'queue_routing.multiskill.simulation',\n"
        "         'queue_routing.deadlines.markov', 'queue_routing.deadlines.simulation',\n"
        "         'queue_routing.deadlines.three_cluster', 'queue_routing.deadlines.experiments')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    assert out == "[]"


def test_a_public_name_that_is_also_a_submodule_keeps_its_meaning():
    # multiskill.compare is a function defined in multiskill/compare.py: importing the module
    # (before or after the name is first used) must not rebind the package's attribute.
    out = _fresh(
        "import queue_routing.multiskill.compare as first\n"
        "import queue_routing.multiskill as ms\n"
        "from queue_routing.multiskill import compare, fixed_point\n"
        "import queue_routing.multiskill.fixed_point\n"
        "print(callable(first), type(ms.compare).__name__, type(ms.fixed_point).__name__,"
        " compare is ms.compare, fixed_point is ms.fixed_point)"
    )
    assert out == "True function function True True"


def test_an_unknown_name_is_an_attribute_error():
    import queue_routing.multiskill as ms

    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        ms.no_such_name  # noqa: B018
    assert not hasattr(ms, "__wrapped__")
