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
            # the optimal-routing study: one case (template, load) per job, each predicted
            # at 0.5 s and so done in rounds of 0.3 s (as many as it takes), then its rows
            "multiskill_optimal": {"cases": 1, "round_seconds": 0.3},
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
    rounds = workdir / "results" / "multiskill" / "multiskill_optimal_round" / "C2"
    for case in ("i0-0_r0-0", "i1-1_r0-0"):  # each case in rounds, saved and resumed,
        done = [json.loads(p.read_text())["done"] for p in sorted(rounds.glob(f"{case}/*.json"))]
        assert len(done) >= 2 and done[-1] and not any(done[:-1]), (case, done)  # to the end
        names = sorted(p.name for p in (rounds / case).glob("*.npz"))
        assert names == sorted(f"round{r}.npz" for r in range(len(done))), names
    for rel in TABLES:
        assert (workdir / rel).read_bytes() == (smoke_run / rel).read_bytes(), rel
