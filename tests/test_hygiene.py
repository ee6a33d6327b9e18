"""Repository hygiene: Snakemake lint, snakefmt and ruff are clean."""

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
