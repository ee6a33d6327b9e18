"""Resources that follow the work: the cost model directly, and the requests of a dry run.

The cost model (``queue_routing.workflow.resources``) turns each job's work into a predicted wall
time and memory; the requests are those times the safety factor and the attempt. Checked here:
the functions themselves (scaling with the work, the attempt, their constants against the
instances they describe), and through ``snakemake -n`` that the large config's DAG has several
hundred jobs, none predicted beyond its target, each requesting what the model predicts for
its chunk, and that ten times the horizon raises the requests or the number of jobs tenfold.
"""

import math
import re

import pytest
import yaml

from _workflow import ROOT, SMOKE, merged_config, run_snakemake
from queue_routing.workflow import resources as cost
from queue_routing.workflow.chunks import parse_chunk

LARGE = ROOT / "workflow" / "config" / "large.yaml"
DEFAULT = ROOT / "workflow" / "config" / "default.yaml"


merged = merged_config


# -- the functions ---------------------------------------------------------------------------
def test_requests_scale_with_the_attempt_and_the_safety_factor():
    assert cost.runtime_minutes(600.0, attempt=3) == 3 * cost.runtime_minutes(600.0)
    assert cost.runtime_minutes(600.0, safety_factor=1.0) == math.ceil(610.0 / 60.0)
    assert cost.runtime_minutes(0.0) == cost.MIN_RUNTIME_MINUTES
    assert cost.memory_mb(attempt=2) == 2 * cost.memory_mb()
    assert cost.memory_mb(100.0, safety_factor=1.0) == cost.BASE_MEMORY_MB + 100
    for bad in ({"attempt": 0}, {"attempt": 1.5}, {"safety_factor": 0.0}):
        with pytest.raises(ValueError):
            cost.runtime_minutes(1.0, **bad)
    with pytest.raises(ValueError):
        cost.runtime_minutes(float("nan"))


def test_predicted_times_are_linear_in_the_work():
    a = {"policies": ["bernoulli", "jsq", "pi"], "horizon": 1000.0, "warmup": 100.0}
    one = cost.multiskill_simulation_seconds(3000.0, replications=10, **a)
    longer = {**a, "horizon": 10000.0, "warmup": 1000.0}
    assert cost.multiskill_simulation_seconds(3000.0, replications=10, **longer) == pytest.approx(
        10 * one
    )
    twice = cost.multiskill_simulation_seconds(3000.0, replications=20, **a)
    assert twice == pytest.approx(2 * one)
    # Bernoulli routing is simulated as the control even when not compared
    assert cost.multiskill_simulation_seconds(
        3000.0, replications=10, **{**a, "policies": ["jsq", "pi"]}
    ) == pytest.approx(one)
    b = {"replications": 10, "horizon": 2000.0, "warmup": 200.0}
    ten = cost.deadlines_large_seconds(40.0, 20, **{**b, "horizon": 20000.0, "warmup": 2000.0})
    one = cost.deadlines_large_seconds(40.0, 20, **b)
    assert 8 * one < ten <= 10 * one  # the index tables are built once, whatever the horizon
    c = cost.serverpools_simulation_seconds(1e4, 2.7, 150.0, 3)
    assert cost.serverpools_simulation_seconds(1e5, 2.7, 150.0, 3) == pytest.approx(10 * c)
    assert cost.serverpools_simulation_seconds(1e4, 2.7, 1500.0, 3) == pytest.approx(10 * c)
    s = cost.serverpools_search_seconds(25, (5, 5), 1000, workers=1)
    assert cost.serverpools_search_seconds(25, (5, 5), 10000, workers=2) == pytest.approx(5 * s)


def test_the_model_describes_the_instances_it_predicts_for():
    from queue_routing.multiskill.instances import TABLE1, random_instance
    from queue_routing.serverpools import solve_spp
    from queue_routing.serverpools.experiments import stochastic_burn_in
    from queue_routing.serverpools.instances import example_system
    from queue_routing.serverpools.linear import stability_verdict

    for example, rate in cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES.items():
        assert float(sum(example_system(example).arrival_rates)) == pytest.approx(rate, rel=1e-12)
    assert set(cost.SERVERPOOLS_GROWTH_RATES) == set(cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES)
    for example, gamma in cost.SERVERPOOLS_GROWTH_RATES.items():
        solution = solve_spp(example_system(example))
        assert stability_verdict(solution).max_real_underloaded == pytest.approx(gamma, rel=1e-9)
        for r in (100, 1e4, 316228, 1e6):  # the planned run length is the pipeline's
            planned = cost.serverpools_run_length(example, r, window=60.0, margin=6.9)
            burn_in = stochastic_burn_in(solution, r, margin=6.9)
            assert planned == pytest.approx(burn_in + 60.0, rel=1e-9), (example, r)
    table1 = sum(TABLE1["mu"]) + 1.3 * sum(TABLE1["eta"])
    assert cost.table1_event_rate(1.3) == pytest.approx(table1)
    for n_classes in (10, 50, 200):  # the fitted uniformisation rate, within 10% of each draw
        fit = cost.multiskill_event_rate(n_classes)
        for k in range(5):
            inst = random_instance(n_classes, 2022, k)
            assert abs(float(inst.eta.sum() + inst.mu.sum()) / fit - 1) < 0.1


# -- through a dry run ----------------------------------------------------------------------
#: A heavy job's message ends with its requests: "... chunk <label> (<runtime> min, <mem> MB)".
JOB = re.compile(r"^Job \d+: (?P<what>.*?) \((?P<runtime>\d+) min, (?P<mem>\d+) MB\)$", re.M)
PART_A = re.compile(r"Part A: simulating the routing policies, C=(\d+), chunk (\S+)")
PART_C = re.compile(r"Part C: simulating the (\w+) example at scale r=(\d+), chunk (\S+)")


def _dry_run(workdir, *configs):
    args = ["--configfile", *map(str, configs)]
    proc = run_snakemake(workdir, "-n", *args, cores=None)
    text = proc.stdout + proc.stderr
    total = int(re.search(r"^total\s+(\d+)$", text, re.M).group(1))
    return total, [m.groupdict() for m in JOB.finditer(text)]


def _expected_part_a(config, n_classes, label):
    sim = config["multiskill"]["simulation"]
    unit = cost.multiskill_simulation_seconds(
        cost.multiskill_event_rate(n_classes),
        policies=sim["policies"],
        replications=1,
        horizon=sim["horizon"],
        warmup=sim["warmup"],
    )
    return parse_chunk(label).size * unit


def test_large_config_dry_run_lists_hundreds_of_bounded_jobs_as_the_model_predicts(tmp_path):
    config = merged(LARGE)
    safety = config["scaling"]["safety_factor"]
    total, jobs = _dry_run(tmp_path, LARGE)
    assert 300 <= total <= 1200, total
    longest = cost.runtime_minutes(60.0 * config["scaling"]["target_minutes"], safety_factor=safety)
    checked = {"A": 0, "C": 0}
    for job in jobs:
        runtime, mem = int(job["runtime"]), int(job["mem"])
        assert runtime <= longest, job  # no job predicted beyond the target
        assert mem >= cost.memory_mb(safety_factor=safety), job
        if m := PART_A.fullmatch(job["what"]):
            seconds = _expected_part_a(config, int(m[1]), m[2])
            assert runtime == cost.runtime_minutes(seconds, safety_factor=safety), job
            checked["A"] += 1
        elif m := PART_C.fullmatch(job["what"]):
            st = config["serverpools"]["stochastic"]
            length = cost.serverpools_run_length(
                m[1], int(m[2]), window=st["window"], margin=st["burn_in_margin"]
            )
            seconds = cost.serverpools_simulation_seconds(
                int(m[2]),
                cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES[m[1]],
                length,
                len(parse_chunk(m[3]).replications),
            )
            assert runtime == cost.runtime_minutes(seconds, safety_factor=safety), job
            checked["C"] += 1
    sizes = config["multiskill"]["sizes"]
    n_sizes = len(range(sizes["first"], sizes["last"] + 1, sizes["step"]))
    assert checked["A"] >= n_sizes and checked["C"] >= 10, checked
    # every replication of every instance is in exactly one chunk
    cells = sum(
        parse_chunk(PART_A.fullmatch(j["what"])[2]).size
        for j in jobs
        if PART_A.fullmatch(j["what"])
    )
    sim = config["multiskill"]["simulation"]
    assert cells == n_sizes * config["multiskill"]["instances_per_size"] * sim["replications"]


def test_ten_times_the_horizon_raises_the_requests_or_the_jobs_tenfold(tmp_path):
    base = tmp_path / "base.yaml"  # two sizes of the default study, 150 instances each
    base.write_text(
        yaml.safe_dump(
            {
                "multiskill": {
                    "sizes": {"first": 150, "last": 200, "step": 50},
                    "instances_per_size": 150,
                }
            }
        )
    )
    longer = tmp_path / "longer.yaml"
    sim = merged()["multiskill"]["simulation"]
    longer.write_text(
        yaml.safe_dump(
            {
                "multiskill": {
                    "simulation": {"horizon": 10 * sim["horizon"], "warmup": 10 * sim["warmup"]}
                }
            }
        )
    )

    def part_a(*configs):
        _, jobs = _dry_run(tmp_path / "run", *configs)
        ours = [j for j in jobs if PART_A.fullmatch(j["what"])]
        return len(ours), sum(int(j["runtime"]) for j in ours)

    jobs_before, minutes_before = part_a(base)
    jobs_after, minutes_after = part_a(base, longer)
    assert jobs_before == 2 and jobs_after >= 8  # each size's job no longer fits 10 minutes
    assert 8 * minutes_before <= minutes_after <= 12 * minutes_before


def test_smoke_and_default_dags_keep_one_chunk_per_job(tmp_path):
    """At the shipped small scales every chunked rule's work fits one job (the derived
    chunking), so the smoke and default DAGs are those of one job per size, example, ..."""
    total, jobs = _dry_run(tmp_path, SMOKE)
    labels = [m[2] for j in jobs if (m := PART_A.fullmatch(j["what"]))]
    assert labels == ["i0-1_r0-2"] * 3 and total == 92


def test_every_heavy_rule_is_retried_with_attempt_scaled_requests():
    """A rule with resources has ``retries: RETRIES`` and requests from job_resources (whose
    runtime and mem_mb take the attempt): a job that runs out of time is resubmitted with
    twice, then three times, its limit."""
    text = "\n".join(p.read_text() for p in sorted((ROOT / "workflow" / "rules").glob("*.smk")))
    rules = re.split(r"^(?=(?:use )?rule )", text, flags=re.M)
    heavy = [r for r in rules if "resources:" in r]
    assert len(heavy) >= 15
    for rule in heavy:
        name = rule.split(":", 1)[0]
        assert "retries: RETRIES" in rule, name
        assert re.search(r"\*\*(small_)?job_resources\(", rule), name
        assert "runtime=" not in rule and "mem_mb=" not in rule, name
