"""Repository hygiene: Snakemake lint, snakefmt and ruff are clean, and the package's import
graph is layered: no import cycle among its modules, no private name imported across them."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tool(name):
    path = shutil.which(name) or str(Path(sys.executable).with_name(name))
    if not Path(path).exists():
        pytest.skip(f"{name} is not installed")
    return path


def run(*cmd):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_snakemake_lint_is_clean():
    proc = run(tool("snakemake"), "--lint")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations" in proc.stdout + proc.stderr


def test_snakefmt_is_clean():
    proc = run(tool("snakefmt"), "--check", "Snakefile", "workflow/Snakefile", "workflow/rules")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean():
    proc = run(tool("ruff"), "check", "src", "tests", "benchmarks", "workflow/scripts")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(tool("ruff"), "format", "--check", "src", "tests", "benchmarks", "workflow/scripts")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_shell_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package shellcheck)")
    proc = run("shellcheck", "tools/slurm-single-node", ".ci/run")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the package's import graph ------------------------------------------------------------
PACKAGE = ROOT / "src" / "queue_routing"


def _modules() -> dict[str, Path]:
    """``{dotted module name: path}`` of every module of the package (a package by its name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """``(target module, imported name or None)`` of every import of the package's own modules
    in ``path``, at any depth (imports inside functions count: they tie modules just as much).
    ``from .x import y`` names the module ``x.y`` when that is a module, else ``x``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    yield sub, None
                elif base in modules:
                    yield base, alias.name


def _graph():
    """The import edges between distinct modules, and the private names imported across them.
    A package's ``__init__`` importing its own submodules is its public face (what it
    re-exports), not a dependency, so those edges are left out of the cycle check."""
    modules = _modules()
    edges = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        for target, imported in _imports(name, path, modules):
            if target == name:
                continue
            if not (path.name == "__init__.py" and target.startswith(name + ".")):
                edges[name].add(target)
            if imported and imported.startswith("_") and not imported.startswith("__"):
                private.append(f"{name} imports {target}.{imported}")
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), or a module
    importing itself: every import cycle lies in one."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges[v]:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle_and_only_cycles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_package_modules():
    edges, _ = _graph()
    cycles = _cycles(edges)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_is_imported_from_another_module():
    _, private = _graph()
    assert not private, "a name a sibling module uses is public:\n" + "\n".join(private)
