"""The repository is self-contained, citable and reproducible.

* no file of the repository points outside it (to the developers' private notes);
* every ``docs/<part>.md#<anchor>`` cited anywhere, and every link inside ``docs/``, resolves;
* the licence, the citation file and the pinned environment are present and consistent
  with ``pyproject.toml`` (the citation file by a structural check of the Citation File
  Format 1.2.0: its official JSON schema ships with ``cffconvert``, which needs
  ``jsonschema < 4`` and so cannot live next to our ``jsonschema >= 4.18``);
* ``queue_routing.workflow.provenance`` records what it promises;
* ``snakemake`` finds the top-level Snakefile and the default profile ``profiles/default``.
"""

import hashlib
import json
import platform
import re
import shutil
import subprocess
import tomllib
from datetime import date
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import queue_routing
from _workflow import ROOT, SMOKE, SNAKEFILE, SNAKEMAKE, environment
from queue_routing.workflow import provenance

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
GIT = shutil.which("git")


def repository_files():
    """Files of the repository: tracked ones and new ones not ignored (what a commit takes)."""
    if GIT is None:
        pytest.skip("git is not installed")
    proc = subprocess.run(
        [GIT, "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"not a git checkout: {proc.stderr.decode(errors='replace').strip()}")
    names = sorted({name for name in proc.stdout.decode().split("\0") if name})
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def text_of(path):
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None  # binary (PNG figures)
    return data.decode("utf-8", errors="replace")


# -- self-contained --------------------------------------------------------------------------
def test_no_file_points_to_the_developers_shared_folder():
    """Docstrings cite the documentation in docs/, never material outside the repository."""
    needle = "shared" + "/"  # spelled so that this file does not match itself
    hits = []
    for path in repository_files():
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if needle in line:
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == [], "files that point outside the repository:\n" + "\n".join(hits)


def github_anchors(markdown):
    """The anchors GitHub generates for the headings of a Markdown text."""
    anchors, seen = set(), {}
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


DOCS = ROOT / "docs"
DOC_PAGES = ["README.md", "multiskill.md", "deadlines.md", "serverpools.md"]
#: The site's other written pages (the guides, moved out of the README).
GUIDE_PAGES = [
    "getting-started.md",
    "tutorial.md",
    "guide-multiskill.md",
    "guide-deadlines.md",
    "guide-serverpools.md",
    "running.md",
    "configuration.md",
    "your-own-policy.md",
    "limits.md",
    "benchmarks.md",
    "developer-guide.md",
]


def test_docs_exist_and_end_with_what_is_ours():
    for name in DOC_PAGES:
        assert (DOCS / name).is_file(), name
    for name in DOC_PAGES[1:]:
        anchors = github_anchors((DOCS / name).read_text())
        assert "what-the-source-text-lacked-and-what-we-reconstructed" in anchors, name
        assert "model-and-units" in anchors, name


def test_every_cited_docs_anchor_exists():
    pages = DOC_PAGES + GUIDE_PAGES
    anchors = {name: github_anchors((DOCS / name).read_text()) for name in pages}
    cited = re.compile(r"docs/([\w-]+\.md)#([\w-]+)")
    problems = []
    for path in repository_files():
        text = text_of(path)
        if text is None:
            continue
        for page, anchor in cited.findall(text):
            if page not in anchors or anchor not in anchors[page]:
                problems.append(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    # links inside the documentation: (page.md#anchor) and (#anchor)
    link = re.compile(r"\]\(([\w-]+\.md)?#([\w-]+)\)")
    for name in pages:
        for page, anchor in link.findall((DOCS / name).read_text()):
            target = page or name
            if target not in anchors or anchor not in anchors[target]:
                problems.append(f"docs/{name}: ({page}#{anchor})")
    assert problems == [], "unresolved section references:\n" + "\n".join(problems)


# -- licence ---------------------------------------------------------------------------------
def test_licence_is_mit_as_pyproject_declares():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 queue-routing developers" in text
    assert "Permission is hereby granted, free of charge, to any person obtaining a copy" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    assert PYPROJECT["project"]["license"] == "MIT"


def test_build_backend_accepts_an_spdx_licence_string():
    """PEP 639 ``license = "MIT"`` needs setuptools >= 77; older ones reject the string."""
    reqs = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    setuptools = [r for r in reqs if canonicalize_name(r.name) == "setuptools"]
    assert len(setuptools) == 1
    spec = setuptools[0].specifier
    assert not spec.contains("76.9.9") and spec.contains("77.0.0") and spec.contains("84.2.1")
    assert PYPROJECT["build-system"]["build-backend"] == "setuptools.build_meta"


# -- citation --------------------------------------------------------------------------------
CFF_TOP_KEYS = {
    "abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi",
    "identifiers", "keywords", "license", "license-url", "message", "preferred-citation",
    "references", "repository", "repository-artifact", "repository-code", "title", "type",
    "url", "version",
}  # fmt: skip
# The subset of the format's reference keys that this file may use.
CFF_REFERENCE_KEYS = {
    "abstract", "authors", "doi", "end", "identifiers", "issue", "journal", "keywords",
    "month", "pages", "start", "title", "type", "url", "volume", "year",
}  # fmt: skip
DOI = re.compile(r"^10\.\d{4,9}/\S+$")
PAPER_DOIS = {
    "10.1007/s10479-022-04532-7",  # Part A, Annals of Operations Research 312 (2022)
    "10.1016/j.cor.2012.05.004",  # Part B, Computers & Operations Research 39 (2012)
    "10.1214/12-AAP895",  # Part C, Annals of Applied Probability 23 (2013)
}


def check_person_or_entity(author):
    assert isinstance(author, dict) and author, author
    if "name" in author:  # an entity
        assert isinstance(author["name"], str) and author["name"].strip()
    else:
        assert isinstance(author.get("family-names"), str) and author["family-names"].strip()
        assert isinstance(author.get("given-names"), str) and author["given-names"].strip()


def test_citation_file_follows_cff_1_2_0():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert set(cff) <= CFF_TOP_KEYS, set(cff) - CFF_TOP_KEYS
    for key in ("cff-version", "message", "title", "authors"):  # required by the format
        assert key in cff, key
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert isinstance(cff["message"], str) and isinstance(cff["title"], str)
    assert isinstance(cff["authors"], list) and cff["authors"]
    for author in cff["authors"]:
        check_person_or_entity(author)
    # the version is written once, as queue_routing.__version__, which the build reads
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert str(cff["version"]) == queue_routing.__version__
    assert cff["license"] == PYPROJECT["project"]["license"] == "MIT"
    # a string in YYYY-MM-DD form (quoted, so YAML does not turn it into a date object)
    assert isinstance(cff["date-released"], str)
    assert date.fromisoformat(cff["date-released"]) <= date.today()
    refs = cff["references"]
    assert isinstance(refs, list) and len(refs) == len(PAPER_DOIS)
    for ref in refs:
        assert set(ref) <= CFF_REFERENCE_KEYS, set(ref) - CFF_REFERENCE_KEYS
        assert ref["type"] == "article"
        assert isinstance(ref["title"], str) and isinstance(ref["journal"], str)
        assert isinstance(ref["authors"], list) and ref["authors"]
        for author in ref["authors"]:
            check_person_or_entity(author)
        assert isinstance(ref["year"], int) and isinstance(ref["volume"], int)
        assert 1 <= ref.get("month", 1) <= 12
        assert DOI.match(ref["doi"]), ref["doi"]
        for ident in ref.get("identifiers", []):
            assert ident["type"] in {"doi", "url", "swh", "other"}
            assert isinstance(ident["value"], str) and ident["value"]
    assert {ref["doi"] for ref in refs} == PAPER_DOIS


# -- pinned environment ----------------------------------------------------------------------
def pins():
    out = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", line.strip())
        assert match, f"not an exact pin: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in out, f"pinned twice: {name}"
        out[name] = Version(match.group(2))
    return out


def dependency_closure(root="queue-routing", extras=("dev",)):
    """Names of every installed distribution that ``root[extras]`` needs (transitively)."""
    dists = {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}
    seen, todo = {}, [(root, set(extras))]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in seen and wanted <= seen[key]:
            continue
        seen[key] = seen.get(key, set()) | wanted
        dist = dists.get(key)
        if dist is None:
            continue  # not installed here: the coverage test below reports it
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{"extra": e} for e in seen[key] | {""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, set(req.extras)))
    seen.pop(canonicalize_name(root))
    return seen


def test_constraints_pin_every_dependency_exactly():
    header = (ROOT / "constraints.txt").read_text().split("\n\n", 1)[0]
    assert 'pip install -c constraints.txt -e ".[dev]"' in header
    assert "pip freeze --exclude-editable" in header  # how to regenerate it
    pinned = pins()
    assert "queue-routing" not in pinned and "pip" not in pinned
    # every direct requirement of pyproject is pinned, at a version it accepts
    project = PYPROJECT["project"]
    direct = [*project["dependencies"], *project["optional-dependencies"]["cluster"]]
    direct += [r for r in project["optional-dependencies"]["dev"] if "queue-routing" not in r]
    for text in direct:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pinned, f"{name} is not pinned"
        assert req.specifier.contains(pinned[name]), f"{name}=={pinned[name]} violates {req}"
    # and so is everything they pull in, as installed here
    missing = sorted(set(dependency_closure()) - set(pinned))
    assert missing == [], f"installed dependencies without a pin: {missing}"


def test_ci_installs_the_pinned_environment():
    text = (ROOT / ".ci" / "run").read_text()
    assert 'pip install --quiet -c constraints.txt -e ".[dev]"' in text


# -- provenance ------------------------------------------------------------------------------
def test_canonical_json_is_sorted_compact_utf8():
    assert provenance.canonical_json({"b": [1, 2.5], "a": {"y": None, "x": True}}) == (
        '{"a":{"x":true,"y":null},"b":[1,2.5]}'
    )
    assert provenance.canonical_json({"name": "Niño-Mora"}) == '{"name":"Niño-Mora"}'


def test_config_digest_depends_on_content_not_order():
    a = {"seed": 1, "part": {"x": [1, 2], "y": "z"}}
    b = {"part": {"y": "z", "x": [1, 2]}, "seed": 1}
    assert provenance.config_digest(a) == provenance.config_digest(b)
    assert provenance.config_digest(a) != provenance.config_digest({**a, "seed": 2})
    changed = {"seed": 1, "part": {"x": [2, 1], "y": "z"}}
    assert provenance.config_digest(a) != provenance.config_digest(changed)
    expected = hashlib.sha256(b'{"part":{"x":[1,2],"y":"z"},"seed":1}').hexdigest()
    assert provenance.config_digest(a) == expected
    assert provenance.config_digest({}) == hashlib.sha256(b"{}").hexdigest()


RECORD_PARTS = {
    "config_sha256": "ab" * 32,
    "git": {"commit": "c0ffee", "dirty": False},
    "package_version": "0.1.0",
    "python": "3.11.7",
    "libraries": {"scipy": "1.17.1", "numpy": "2.4.6"},
    "platform_info": {"system": "Linux", "machine": "x86_64"},
}


def test_provenance_record_is_assembled_from_its_parts():
    record = provenance.provenance_record(**RECORD_PARTS)
    assert record == {
        "config_sha256": "ab" * 32,
        "git": {"commit": "c0ffee", "dirty": False},
        "package": {"name": "queue-routing", "version": "0.1.0"},
        "python": "3.11.7",
        "libraries": {"numpy": "2.4.6", "scipy": "1.17.1"},
        "platform": {"machine": "x86_64", "system": "Linux"},
    }
    assert list(record["libraries"]) == ["numpy", "scipy"]  # sorted
    with pytest.raises(ValueError, match="config_sha256"):
        provenance.provenance_record(**{**RECORD_PARTS, "config_sha256": "xyz"})
    with pytest.raises(ValueError, match="dirty"):
        provenance.provenance_record(**{**RECORD_PARTS, "git": {"commit": "c0ffee"}})


def git(*args, cwd):
    subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_git_state_of_a_checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    assert provenance.git_state(repo) == {"commit": "unknown", "dirty": "unknown"}  # no commit
    (repo / "code.py").write_text("x = 1\n")
    git("add", "code.py", cwd=repo)
    git("commit", "-q", "-m", "first", cwd=repo)
    head = subprocess.run(
        [GIT, "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert provenance.git_state(repo) == {"commit": head, "dirty": False}
    (repo / "results.csv").write_text("untracked output\n")
    assert provenance.git_state(repo)["dirty"] is False  # untracked files do not count
    (repo / "code.py").write_text("x = 2\n")
    assert provenance.git_state(repo) == {"commit": head, "dirty": True}
    # a directory inside the checkout is not the checkout: it does not borrow its commit
    (repo / "sub").mkdir()
    assert provenance.git_state(repo / "sub") == {"commit": "unknown", "dirty": "unknown"}


def test_git_state_outside_a_checkout(tmp_path):
    assert provenance.git_state(tmp_path) == {"commit": "unknown", "dirty": "unknown"}


def test_environment_measurements():
    versions = provenance.library_versions()
    assert list(versions) == list(provenance.LIBRARIES)
    assert versions["numpy"] == np.__version__
    assert provenance.library_versions(["no-such-distribution-qr"]) == {
        "no-such-distribution-qr": "not installed"
    }
    info = provenance.platform_summary()
    assert info["system"] == platform.system() and info["machine"] == platform.machine()
    assert platform.node() not in info.values()  # no host name


def test_collect_and_write(tmp_path):
    config = {"seed": 3, "part": {"k": 1.5}}
    record = provenance.collect(config, git={"commit": "abc", "dirty": True})
    assert record["config_sha256"] == provenance.config_digest(config)
    assert record["git"] == {"commit": "abc", "dirty": True}
    assert record["package"]["version"] == queue_routing.__version__
    assert record["python"] == platform.python_version()
    with pytest.raises(ValueError, match="source_dir"):
        provenance.collect(config)
    path = tmp_path / "results" / "provenance.json"
    provenance.write_provenance(record, path)
    text = path.read_text()
    assert json.loads(text) == record
    assert text == json.dumps(record, indent=2, sort_keys=True) + "\n"
    assert not list(path.parent.glob("*.tmp"))


# -- entry point and default profile ---------------------------------------------------------
def dry_run(*args, cwd):
    proc = subprocess.run(
        [SNAKEMAKE, "-n", "--configfile", str(SMOKE), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def profile_line(output):
    lines = [line for line in output.splitlines() if "Using workflow specific profile" in line]
    assert len(lines) == 1, output[-3000:]
    return lines[0]


def test_dry_run_from_elsewhere_finds_the_default_profile_next_to_the_snakefile(tmp_path):
    output = dry_run("-s", str(SNAKEFILE), cwd=tmp_path)
    line = profile_line(output)
    assert f"{ROOT / 'profiles' / 'default'} " in line + " ", line
    assert re.search(r"^provenance\s+1$", output, re.M), "rule all must require provenance"
    assert re.search(r"^all\s+1$", output, re.M), "rule all must be the default target"


def test_dry_run_from_the_repository_root_uses_the_top_level_snakefile(tmp_path):
    output = dry_run("--directory", str(tmp_path), cwd=ROOT)
    assert re.search(r"profiles/default\b", profile_line(output))
    assert "workflow/profiles" not in output
    snakefile = re.search(r"^\s*Snakefile: (\S+)$", output, re.M)
    assert snakefile and Path(ROOT, snakefile.group(1)).resolve() == SNAKEFILE.resolve()
    assert re.search(r"^all\s+1$", output, re.M)
