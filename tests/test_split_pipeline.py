"""Any split of the work gives byte-identical tables: the smoke run's Part A simulations and
optimal-routing study (its cases in rounds, each resumed from the last) and Part C stochastic
runs split into other chunks, compared with the smoke run's own (one chunk per job).

Only the chunked rules and their aggregations run here (in a fresh directory), with chunk
sizes that cut both Part A axes (instances, replications) and Part C's replications; the
aggregated tables must equal the smoke run's byte for byte. The other chunked rules are
split by the SLURM test (tests/smoke_split.yaml), and every split is checked on the library
functions in tests/test_chunks.py.
"""

import json

import yaml

from _workflow import CHUNK_FILE, SMOKE, run_snakemake
from queue_routing.io import write_table
from queue_routing.multiskill.optimal_study import optimal_gap_rows

#: The aggregated tables compared (their chunks differ by design).
TABLES = [
    "results/multiskill/multiskill_simulation_table/policies.csv",
    "results/multiskill/multiskill_simulation_table/differences.csv",
    "results/multiskill/multiskill_simulation_table/summary.csv",
    "results/multiskill/multiskill_simulation_table/summary.md",
    "results/multiskill/multiskill_simulation_table/load_sweep.csv",
    "results/multiskill/multiskill_simulation_table/load_sweep_differences.csv",
    "results/multiskill/multiskill_simulation_table/table1.md",
    "results/serverpools/serverpools_stochastic_summary/traces.csv",
    "results/serverpools/serverpools_stochastic_summary/runs.csv",
    "results/serverpools/serverpools_stochastic_summary/time_averages.csv",
    "results/serverpools/serverpools_stochastic_summary/verdicts.csv",
    "results/multiskill/multiskill_optimal_table/rows.csv",
    "results/multiskill/multiskill_optimal_table/gaps.csv",
    "results/multiskill/multiskill_optimal_table/summary.csv",
    "results/multiskill/multiskill_optimal_table/gaps.md",
]

SPLIT = {
    "scaling": {
        "jobs": {
            # random instances: 3 replications in blocks of 2 + 1 (paired statistics across
            # jobs); Table 1: one load factor per job
            "multiskill_simulate": {"instances": 0, "replications": 2},
            "multiskill_simulate_table1": {"load_factors": 1, "replications": 0},
            "serverpools_stochastic": {"replications": 1},
            # the optimal-routing study: one case (template, load) per job
            "multiskill_optimal": {"cases": 1},
        }
    }
}


def test_another_split_gives_byte_identical_tables(smoke_run, tmp_path):
    config = tmp_path / "split.yaml"
    config.write_text(yaml.safe_dump(SPLIT))
    workdir = tmp_path / "run"
    run_snakemake(workdir, *TABLES, "--configfile", str(SMOKE), str(config))
    ours = sorted(p.name for p in (workdir / "results").rglob("*") if CHUNK_FILE.fullmatch(p.name))
    theirs = sorted(
        p.name for p in (smoke_run / "results").rglob("*") if CHUNK_FILE.fullmatch(p.name)
    )
    assert "r0-1.csv" not in theirs and ours != theirs  # the work was split otherwise
    assert {"i0-1_r0-1.csv", "i0-1_r2-2.csv", "i0-0_r0-2.csv", "r1-1_trace.csv"} <= set(ours)
    assert {"i0-0_r0-0.csv", "i1-1_r0-0.csv"} <= set(ours)  # the optimal study, a case a job
    for rel in TABLES:
        assert (workdir / rel).read_bytes() == (smoke_run / rel).read_bytes(), rel


#: One case of the optimal-routing study whose rounds are as short as they can be: each does
#: one piece (a block of value-iteration steps, a box, a policy, a block of PI's values for
#: PI²), so how many there are does not depend on the machine's speed.
ROUNDS = {
    "multiskill": {
        "optimal": {
            "c2_kinds": ["symmetric-2"],
            "c2_loads": [0.5],
            "c3_kinds": [],
            "policies": ["jsq", "pi", "pi2"],
            "rtol": 1.0e-3,
        }
    },
    "scaling": {"jobs": {"multiskill_optimal": {"cases": 0, "round_seconds": 1.0e-6}}},
}


def test_a_case_in_rounds_gives_the_rows_of_the_uninterrupted_case(tmp_path):
    """The rounds are checkpoints, run one after the other until one reports the case done;
    the chunk's rows equal those of the case computed in one piece by the library."""
    config = tmp_path / "rounds.yaml"
    config.write_text(yaml.safe_dump(ROUNDS))
    workdir = tmp_path / "run"
    chunk = "results/multiskill/multiskill_optimal/C2/i0-0_r0-0.csv"
    run_snakemake(workdir, chunk, "--configfile", str(SMOKE), str(config))
    rounds = workdir / "results" / "multiskill" / "multiskill_optimal_round" / "C2" / "i0-0_r0-0"
    done = [json.loads((rounds / f"round{r}.json").read_text())["done"] for r in range(5)]
    assert done == [False] * 4 + [True], done  # 2 boxes, JSQ, PI, PI's values and PI²
    assert sorted(p.name for p in rounds.iterdir()) == sorted(
        f"round{r}.{ext}" for r in range(5) for ext in ("json", "npz")
    )
    opt = ROUNDS["multiskill"]["optimal"]
    whole = optimal_gap_rows([("symmetric-2", 0.5)], opt["policies"], rtol=opt["rtol"])
    write_table(whole, tmp_path / "whole.csv")
    assert (workdir / chunk).read_bytes() == (tmp_path / "whole.csv").read_bytes()
