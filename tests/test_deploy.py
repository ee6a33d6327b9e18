"""The workflow deployed as a Snakemake module, the workflow catalog's standard usage.

A study directory of one's own holds ``workflow/Snakefile`` (the module declaration
``snakedeploy deploy-workflow`` writes, pointing at this repository's ``workflow/Snakefile``)
and ``config/config.yaml`` (here a copy of ``workflow/config/smoke.yaml``: only the keys it
changes). The dry run, in the default suite, schedules exactly the jobs of the in-repository
smoke run; the full run (``-m deploy``, run by ``.ci/run``) writes byte for byte the tables and
figures of the in-repository smoke run (the session's ``smoke_run``), under the same merged
configuration.
"""

import json
import re
import shutil
import subprocess

import pytest
import yaml

from _workflow import ROOT, SMOKE, SNAKEMAKE, digests, environment, run_snakemake

#: What ``snakedeploy deploy-workflow`` writes as the study's workflow/Snakefile, with the
#: repository's local path in place of ``github("owner/repo", path="workflow/Snakefile",
#: tag=...)``.
MODULE_SNAKEFILE = """configfile: "config/config.yaml"


module queue_routing:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from queue_routing
"""


def deploy(study, config=SMOKE):
    """A study directory using the workflow as a module, with ``config`` as its config."""
    (study / "workflow").mkdir(parents=True)
    (study / "config").mkdir()
    snakefile = ROOT / "workflow" / "Snakefile"
    (study / "workflow" / "Snakefile").write_text(MODULE_SNAKEFILE.format(snakefile=snakefile))
    shutil.copyfile(config, study / "config" / "config.yaml")
    return study


def run_in(study, *args, timeout=1800):
    """Snakemake as the catalog's usage runs it: from the study directory, no -s."""
    proc = subprocess.run(
        [SNAKEMAKE, *args],
        cwd=study,
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
        timeout=timeout,
    )
    if proc.returncode != 0:
        pytest.fail(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout + proc.stderr


def job_counts(output):
    """``{rule: jobs}`` from the "Job stats" table of a dry run."""
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", table, re.M)}


def test_deployed_module_schedules_the_jobs_of_the_repository_run(tmp_path):
    study = deploy(tmp_path / "study")
    deployed = job_counts(run_in(study, "--cores", "1", "-n"))
    here = job_counts(run_snakemake(tmp_path / "here", "--configfile", str(SMOKE), "-n").stdout)
    # the default target of the module is `reproduce`, the repository's `all` asks for the same
    assert deployed.pop("reproduce") == 1 and here.pop("all") == 1
    # the smoke config sets a few keys only: the module took every other from default.yaml
    assert deployed == here
    assert deployed["provenance"] == 1 and sum(deployed.values()) > 50


def test_catalog_files():
    catalog = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())
    usage = catalog["usage"]
    assert set(usage) == {"mandatory-flags", "software-stack-deployment", "report"}
    assert usage["mandatory-flags"]["desc"] and usage["mandatory-flags"]["flags"]
    assert set(usage["software-stack-deployment"]) == {"conda", "apptainer", "apptainer+conda"}
    assert all(isinstance(v, bool) for v in usage["software-stack-deployment"].values())
    assert isinstance(usage["report"], bool)
    assert (ROOT / "workflow" / "Snakefile").is_file()
    assert (ROOT / "config" / "README.md").is_file()
    # the template config sets default values only (the study starts from the reproduction)
    template = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    defaults = yaml.safe_load((ROOT / "workflow" / "config" / "default.yaml").read_text())
    for key, value in template.items():
        assert defaults[key] == value, key


@pytest.mark.deploy
def test_smoke_run_deployed_as_a_module_equals_the_repository_run(smoke_run, tmp_path):
    study = deploy(tmp_path / "study")
    run_in(study, "--cores", "2")
    assert digests(study, figures=True) == digests(smoke_run, figures=True)
    # the same merged configuration and code, as the provenance records of both runs say
    ours = json.loads((study / "results" / "provenance.json").read_text())
    theirs = json.loads((smoke_run / "results" / "provenance.json").read_text())
    for key in ("config_sha256", "package", "python", "libraries", "platform"):
        assert ours[key] == theirs[key], key
    assert ours["git"]["commit"] == theirs["git"]["commit"]
