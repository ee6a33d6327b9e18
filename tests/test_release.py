"""Release hygiene: one version, reported everywhere, and distributions that install.

The version is written once, as ``queue_routing.__version__``; the build reads it from there
(``pyproject.toml``: ``dynamic = ["version"]``), and the command, the provenance record and
``CITATION.cff`` report it. ``-m deploy`` (run by ``.ci/run``) builds the sdist and the wheel
with ``python -m build``, checks them with ``twine check``, installs the wheel into a fresh
virtual environment and runs the installed command on the paper's Table 1.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import numpy as np
import pytest
import yaml
from _cli_inputs import TABLE1
from scipy.optimize import minimize

from _workflow import ROOT

#: The version as the source writes it (read as text, not imported).
SOURCE_VERSION = re.search(
    r'^__version__ = "([^"]+)"$', (ROOT / "src" / "queue_routing" / "__init__.py").read_text(), re.M
).group(1)


def test_the_version_is_written_once_and_reported_everywhere():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "queue_routing.__version__"
    }
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(citation["version"]) == SOURCE_VERSION
    proc = subprocess.run(
        [sys.executable, "-m", "queue_routing.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == f"queue-routing {SOURCE_VERSION}"
    from queue_routing.workflow.provenance import collect

    record = collect({"seed": 1}, git={"commit": "unknown", "dirty": "unknown"})
    assert record["package"] == {"name": "queue-routing", "version": SOURCE_VERSION}


def test_changelog_has_the_usual_sections_and_this_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert versions[0] == "Unreleased" and SOURCE_VERSION in versions
    sections = set(re.findall(r"^### (\w+)$", text, re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert "Added" in sections


def table1_optimum():
    """LOAD-OPT on Table 1 by scipy on the routing probabilities, written here from the
    model (docs/multiskill.md#model-and-units), independent of the package's solvers."""
    mu = np.array(TABLE1["mu"], float)
    cost = np.array(TABLE1["cost"], float)
    eta = np.array(TABLE1["eta"], float)

    def holding(p):
        rho = np.concatenate([[((1 - p) * eta).sum() / mu[0]], p * eta / mu[1:]])
        if np.any(rho >= 1):
            return 1e12
        return float((cost * rho / (1 - rho)).sum())

    best = min(
        (
            minimize(holding, start, method="L-BFGS-B", bounds=[(0, 1)] * len(eta), tol=1e-14)
            for start in (np.full(len(eta), 0.5), np.clip(mu[1:] / eta * 0.9, 0, 1))
        ),
        key=lambda r: r.fun,
    )
    return best.fun


def _sources(dest: Path) -> Path:
    """What the distributions are built from, copied out of the checkout (a build writes
    ``build/`` and ``*.egg-info`` next to its sources)."""
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(
        ROOT / "src", dest / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    return dest


@pytest.mark.deploy
def test_wheel_installs_into_a_fresh_environment_and_solves_table1(tmp_path):
    pytest.importorskip(
        "build", reason='the release extra is not installed: pip install -e ".[release]"'
    )
    pytest.importorskip(
        "twine", reason='the release extra is not installed: pip install -e ".[release]"'
    )
    sources = tmp_path / "sources"
    sources.mkdir()
    _sources(sources)
    dist = tmp_path / "dist"
    # --no-isolation: the build backend (setuptools, pinned) comes from this environment, so
    # the build needs no download
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(sources)],
        check=True,
        capture_output=True,
    )
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"queue_routing-{SOURCE_VERSION}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"queue_routing-{SOURCE_VERSION}.tar.gz"]
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("PASSED") == 2, check.stdout

    # a fresh environment: the wheel alone, its dependencies taken from this environment's
    # site-packages (a path entry, so this environment's editable install is not visible)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(wheels[0])],
        check=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import queue_routing; print(queue_routing.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the wheel's copy, not the checkout's

    command = venv / "bin" / "queue-routing"
    version = subprocess.run(
        [str(command), "--version"], capture_output=True, text=True, check=True, env=env
    )
    assert version.stdout.strip() == f"queue-routing {SOURCE_VERSION}"
    (tmp_path / "table1.json").write_text(json.dumps(TABLE1))
    solved = subprocess.run(
        [str(command), "multiskill", "solve", "table1.json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    )
    result = json.loads(solved.stdout)
    reference = table1_optimum()
    assert result["cost"] == pytest.approx(reference, rel=1e-7)
    assert len(result["probabilities"]) == len(TABLE1["eta"])
