"""The documentation site: it builds strictly, its generated references are complete and
current, and the tutorial's code runs.

The site needs the ``docs`` extra (``pip install -e ".[docs]"``, included in ``dev``); without
it these tests are skipped, saying so.
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _workflow import ROOT

DOCS = ROOT / "docs"
MISSING = [
    name
    for name in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
    if importlib.util.find_spec(name.split(".")[0]) is None
    or (name.count(".") and importlib.util.find_spec(name) is None)
]
needs_docs = pytest.mark.skipif(
    bool(MISSING),
    reason=f"the docs extra is not installed (missing {', '.join(MISSING)}): "
    'pip install -e ".[docs]"',
)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load("gen_reference", DOCS / "gen_reference.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once by the command mkdocs.yml documents (strict)."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"},
        timeout=900,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def _text(html_path):
    """The visible text of a page, tags dropped (enough to find names in it)."""
    html = Path(html_path).read_text()
    html = re.sub(r"<script.*?</script>|<style.*?</style>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# -- the build -------------------------------------------------------------------------------
@needs_docs
def test_every_page_of_the_nav_is_built(site):
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml's `!!python/...` tags (the slugify function) are mkdocs' business here
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *args: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)

    def pages(nav):
        for entry in nav:
            value = next(iter(entry.values())) if isinstance(entry, dict) else entry
            if isinstance(value, list):
                yield from pages(value)
            else:
                yield value

    built = []
    for page in pages(config["nav"]):
        stem = page[: -len(".md")]
        html = site / ("index.html" if stem == "README" else f"{stem}/index.html")
        assert html.is_file(), page
        built.append(page)
    # the existing documents are all in the site
    for name in ("README.md", "multiskill.md", "deadlines.md", "serverpools.md"):
        assert name in built


@needs_docs
def test_the_api_reference_renders_every_public_name(site):
    for part in gen.PARTS:
        package = importlib.import_module(f"queue_routing.{part}")
        text = _text(site / "reference" / "api" / part / "index.html")
        missing = [name for name in package.__all__ if not re.search(rf"\b{name}\b", text)]
        assert missing == [], f"{part}: {missing}"
    # numpy-style sections are parsed, not shown as typed
    solve_page = (site / "reference" / "api" / "multiskill" / "index.html").read_text()
    assert "Parameters:" in solve_page or "Parameters</span>" in solve_page
    assert "----------" not in _text(site / "reference" / "api" / "multiskill" / "index.html")


@needs_docs
def test_the_math_is_handed_to_mathjax(site):
    for name in ("multiskill", "deadlines", "serverpools"):
        page = (site / name / "index.html").read_text()
        assert 'class="arithmatex"' in page  # $...$ handed to MathJax, not mangled by Markdown
        # every ```math block of the document is displayed math, none a code block
        blocks = (DOCS / f"{name}.md").read_text().count("```math")
        assert page.count('<pre class="arithmatex">') == blocks, name
        assert "language-math" not in page
    assert (site / "javascripts" / "mathjax.js").is_file()


# -- the generated references ----------------------------------------------------------------
def _leaves(mapping, prefix=""):
    for key, value in mapping.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            yield from _leaves(value, dotted)
        else:
            yield dotted


def test_config_reference_lists_every_key_of_the_default_config_with_its_default():
    text = gen.config_reference()
    defaults = yaml.safe_load((ROOT / "workflow" / "config" / "default.yaml").read_text())
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| `([\w.-]+)` \| (.*?) \| (.*?) \| (.*) \|$", line)
        if match:
            rows[match.group(1)] = match.group(3)
    missing = [key for key in _leaves(defaults) if key not in rows]
    assert missing == [], missing
    # each default as default.yaml gives it (read here independently of the generator)
    for key in _leaves(defaults):
        value = defaults
        for part in key.split("."):
            value = value[part]
        shown = rows[key].strip("`").replace("\\|", "|")
        assert json.loads(shown) == value, key


def test_config_readme_is_the_current_reference():
    """config/README.md (the workflow catalog's description of the configuration) is what
    the generator makes from the schema today: `python docs/gen_reference.py` rewrites it."""
    assert (ROOT / "config" / "README.md").read_text() == gen.config_reference()


def test_cli_reference_has_every_command_and_option():
    from queue_routing.cli import build_parser

    text = gen.cli_reference()
    parser = build_parser()

    def subparsers(p):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices
        return {}

    commands = 0
    for part in subparsers(parser).values():
        for command in subparsers(part).values():
            commands += 1
            heading = f"### `{command.prog}`"
            assert heading in text, heading
            section = text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
            # every option argparse's own --help lists is in the section
            options = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", command.format_help()))
            options.discard("-h")
            options.discard("--help")
            missing = sorted(
                o for o in options if f"`{o}" not in section and f" {o}" not in section
            )
            assert missing == [], f"{command.prog}: {missing}"
    assert commands >= 10


def test_markdown_docstrings_fence_doctests_and_read_roles():
    ext = _load("griffe_docstrings", DOCS / "hooks" / "griffe_docstrings.py")
    text = "Uses :func:`~queue_routing.multiskill.solve` and :mod:`.model`.\n\n>>> a[0][1]\n3\n"
    out = ext.markdown_docstring(text)
    assert out.splitlines() == [
        "Uses `solve` and `.model`.",
        "",
        "```python",
        ">>> a[0][1]",
        "3",
        "```",
    ]
    # inside a fence nothing changes
    fenced = "```python\n>>> x\n:func:`y`\n```"
    assert ext.markdown_docstring(fenced) == fenced


def test_links_out_of_the_docs_folder_go_to_the_sites_copies():
    import doctest

    hooks = _load("reference_hook", DOCS / "hooks" / "reference.py")
    assert doctest.testmod(hooks).failed == 0
    assert hooks.outside_target("multiskill.md", "../figures/multiskill_fig8.png") == (
        "figures/multiskill_fig8.png"
    )
    assert hooks.outside_target("multiskill.md", "../src/queue_routing/io.py") is None
    assert hooks.outside_target("multiskill.md", "https://doi.org/10.1/x") is None


# -- the tutorial ----------------------------------------------------------------------------
def test_tutorial_code_runs_in_order(tmp_path):
    """Every ```python block of docs/tutorial.md, in order, in one namespace, in a fresh
    process in an empty directory: it runs without error and writes its three figures."""
    blocks = re.findall(
        r"^```python\n(.*?)^```", (DOCS / "tutorial.md").read_text(), flags=re.S | re.M
    )
    assert len(blocks) >= 10
    script = tmp_path / "tutorial.py"
    script.write_text("\n\n".join(blocks))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in ("part_a_policies.png", "part_b_cost.png", "part_c_deviation.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
