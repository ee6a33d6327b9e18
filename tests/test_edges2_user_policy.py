"""User policies that step outside the contract "a finite real number >= 0, and nothing else":
whatever the policy does, the command ends with one error line naming the policy and the
problem and exit status 2, or with the result alone on stdout.

References: Python's own numbers (``float(10**400)`` overflows; a complex number has no order),
and the JSON grammar (stdout parses as exactly one JSON object or is empty).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _cli_inputs import CLUSTERS, TABLE1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_routing.cli import main

COMMANDS = {
    "multiskill-simulate": ("multiskill simulate --policy".split(), TABLE1),
    "multiskill-compare": (
        "multiskill compare-policies --replications 3 --policies".split(),
        TABLE1,
    ),
    "deadlines-exact": ("deadlines evaluate --policy".split(), CLUSTERS),
    "deadlines-compare": ("deadlines compare-policies --policies".split(), CLUSTERS),
}

#: Index bodies that break the contract, and a word the error line must contain.
BROKEN = {
    "return 10 ** {k}": "finite",  # an int beyond the doubles
    "return -(10 ** {k})": "finite",
    "return complex(jobs, 0)": "not a number",
    "return np.complex128(jobs + 1)": "not a number",
    "return np.complex64(1j)": "not a number",
    "sys.exit(0)": "SystemExit",
    "sys.exit({k})": "SystemExit",
    "sys.exit('bye')": "SystemExit",
    "raise SystemExit": "SystemExit",
    "return np.float32('inf')": "finite",
    "return Fraction(-1, {k})": "finite",
    "return str(jobs)": "not a number",
    "return [jobs]": "not a number",
    "return np.array([1.0, 2.0])": "not a number",
}
#: Module-level statements that break it at import.
BROKEN_IMPORT = {
    "sys.exit(0)": "SystemExit",
    "sys.exit({k})": "SystemExit",
    "raise SystemExit('stop')": "SystemExit",
}
CHATTER = [
    "print('chatter', jobs)",
    "print('{{\"cost\": 0}}')",
    "os.write(1, b'raw to fd 1\\n')",
    "sys.stdout.write('no newline')",
]
HEADER = "import os\nimport sys\nfrom fractions import Fraction\n\nimport numpy as np\n"


def _run(capfd, tmp_path, command, source):
    argv, instance = COMMANDS[command]
    (tmp_path / "instance.json").write_text(json.dumps(instance))
    policy = tmp_path / "mine.py"
    policy.write_text(source)
    spec = f"{policy}:index"
    try:  # a policy that does not load is argparse's usage error: SystemExit(2)
        code = main(
            [*argv[:2], str(tmp_path / "instance.json"), *argv[2:], spec, "--horizon", "20"]
            + (["--replications", "2"] if command == "multiskill-simulate" else [])
        )
    except SystemExit as exc:
        code = exc.code
    out, err = capfd.readouterr()
    return spec, code, out, err


def _one_error_line(spec, code, out, err, word):
    assert (code, out) == (2, "")
    ours = [line for line in err.splitlines() if line.startswith("queue-routing")]
    assert len(ours) == 1 and err.endswith(ours[0] + "\n"), err
    assert spec in ours[0] and word in ours[0], ours[0]
    assert ": error: " in ours[0] and "internal error" not in ours[0]


hc = [HealthCheck.function_scoped_fixture]


@settings(max_examples=40, deadline=None, suppress_health_check=hc)
@given(
    command=st.sampled_from(sorted(COMMANDS)),
    body=st.sampled_from(sorted(BROKEN)),
    k=st.integers(309, 1000),
    chatter=st.sampled_from(["", *CHATTER]),
)
def test_a_broken_index_is_one_error_line(capfd, tmp_path_factory, command, body, k, chatter):
    tmp_path = tmp_path_factory.mktemp("policy")
    lines = [chatter.replace("jobs", "0") if chatter else "", body.format(k=k)]
    source = (
        HEADER
        + "\n\ndef index(server, jobs, instance):\n"
        + "".join(f"    {line}\n" for line in lines if line)
    )
    spec, code, out, err = _run(capfd, tmp_path, command, source)
    _one_error_line(spec, code, out, err, BROKEN[body])


@settings(max_examples=15, deadline=None, suppress_health_check=hc)
@given(
    command=st.sampled_from(sorted(COMMANDS)),
    statement=st.sampled_from(sorted(BROKEN_IMPORT)),
    k=st.integers(1, 255),
    chatter=st.sampled_from(["", *CHATTER]),
)
def test_a_broken_import_is_one_error_line(capfd, tmp_path_factory, command, statement, k, chatter):
    tmp_path = tmp_path_factory.mktemp("policy")
    source = (
        HEADER
        + (chatter.replace("jobs", "0") + "\n" if chatter else "")
        + statement.format(k=k)
        + "\n\ndef index(server, jobs, instance):\n    return jobs + 1.0\n"
    )
    spec, code, out, err = _run(capfd, tmp_path, command, source)
    _one_error_line(spec, code, out, err, BROKEN_IMPORT[statement])


@settings(max_examples=12, deadline=None, suppress_health_check=hc)
@given(
    command=st.sampled_from(sorted(COMMANDS)),
    chatter=st.lists(st.sampled_from(CHATTER), min_size=1, max_size=3),
    at_import=st.booleans(),
)
def test_what_a_policy_prints_never_reaches_stdout(
    capfd, tmp_path_factory, command, chatter, at_import
):
    tmp_path = tmp_path_factory.mktemp("policy")
    module = [c.replace("jobs", "0") for c in chatter] if at_import else []
    body = [] if at_import else chatter
    source = (
        HEADER
        + "".join(f"{line}\n" for line in module)
        + "\n\ndef index(server, jobs, instance):\n"
        + "".join(f"    {line}\n" for line in body)
        + "    return jobs + 1.0\n"
    )
    _, code, out, err = _run(capfd, tmp_path, command, source)
    assert code == 0, err
    assert out.endswith("}\n") and out.count("\n") == 1
    json.loads(out)  # exactly the result
    assert "chatter" in err or "raw to fd 1" in err or "no newline" in err or '"cost"' in err


def test_prints_go_to_stderr_in_a_real_process(tmp_path):
    (tmp_path / "t1.json").write_text(json.dumps(TABLE1))
    (tmp_path / "mine.py").write_text(
        HEADER + "print('at import')\n\ndef index(server, jobs, instance):\n"
        "    print('in index')\n    os.write(1, b'fd 1\\n')\n    return jobs + 1.0\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "queue_routing.cli",
            "multiskill",
            "simulate",
            "t1.json",
            "--policy",
            "mine.py:index",
            "--horizon",
            "20",
            "--replications",
            "2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) >= {"cost", "ci95"}
    assert proc.stdout.count("\n") == 1
    for text in ("at import", "in index", "fd 1"):
        assert text in proc.stderr


@pytest.mark.parametrize("value", ["10 ** 400", "np.complex128(2.0)"])
def test_the_library_refuses_as_the_command(value):
    from queue_routing.user_policy import UserPolicy, UserPolicyError

    namespace: dict = {}
    exec(HEADER + f"\ndef index(server, jobs, instance):\n    return {value}\n", namespace)
    with pytest.raises(UserPolicyError, match=r"^policy 'p': index\(0, 0, instance\) returned"):
        UserPolicy("p", index=namespace["index"]).index_table(2, 3, None)
