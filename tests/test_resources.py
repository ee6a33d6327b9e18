"""Resources that follow the work: the cost model directly, and the requests of a dry run.

The cost model (``queue_routing.workflow.resources``) turns each job's work into a predicted wall
time and memory; the requests are those times the safety factor and the attempt. Checked here:
the functions themselves (scaling with the work, the attempt, their constants against the
instances they describe), and through ``snakemake -n`` what only a dry run shows: that the
rules schedule the jobs of the plan (``queue_routing.workflow.plan``, unit-tested in
tests/test_plan.py) and request what it predicts for each, and that every heavy rule is retried
with requests that grow with the attempt.
"""

import math
import re

import pytest

from _workflow import ROOT, SMOKE, merged_config, run_snakemake
from queue_routing.workflow import plan
from queue_routing.workflow import resources as cost

LARGE = ROOT / "workflow" / "config" / "large.yaml"


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
    js = {"horizon": 4000.0, "warmup": 50.0, "instances": 1, "policies": ["jsq"]}
    one = cost.multiskill_job_sizes_seconds(234.0, **js, replications=10, laws=3)
    longer = {**js, "horizon": 40000.0, "warmup": 500.0}
    assert cost.multiskill_job_sizes_seconds(
        234.0, **longer, replications=10, laws=3
    ) == pytest.approx(10 * one)
    assert cost.multiskill_job_sizes_seconds(234.0, **js, replications=20, laws=6) == (
        pytest.approx(4 * one)
    )
    # recorded data: in proportion to the points and the replications
    trace = cost.serverpools_trace_mb(80.0, 0.5, 3)
    assert cost.serverpools_trace_mb(800.0, 0.5, 3) == pytest.approx(10 * trace)
    assert cost.serverpools_trace_mb(80.0, 0.05, 6) == pytest.approx(20 * trace)
    grids = cost.serverpools_fluid_limit_mb(6.0, 0.05, 4)
    assert cost.serverpools_fluid_limit_mb(60.0, 0.05, 8) == pytest.approx(20 * grids)
    assert cost.serverpools_search_mb(2) == 2 * cost.serverpools_search_mb(1)


def test_the_model_describes_the_instances_it_predicts_for():
    from queue_routing.multiskill.instances import TABLE1, random_instance
    from queue_routing.serverpools import solve_spp
    from queue_routing.serverpools.experiments import stochastic_warmup
    from queue_routing.serverpools.instances import example_system
    from queue_routing.serverpools.linear import stability_verdict

    for example, rate in cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES.items():
        assert float(sum(example_system(example).arrival_rates)) == pytest.approx(rate, rel=1e-12)
    assert set(cost.SERVERPOOLS_GROWTH_RATES) == set(cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES)
    for example, gamma in cost.SERVERPOOLS_GROWTH_RATES.items():
        solution = solve_spp(example_system(example))
        assert stability_verdict(solution).max_real_underloaded == pytest.approx(gamma, rel=1e-9)
        for r in (100, 1e4, 316228, 1e6):  # the planned run length is the pipeline's
            planned = cost.serverpools_run_length(example, r, horizon=60.0, warmup_margin=6.9)
            warmup = stochastic_warmup(solution, r, margin=6.9)
            assert planned == pytest.approx(warmup + 60.0, rel=1e-9), (example, r)
    table1 = sum(TABLE1["mu"]) + 1.3 * sum(TABLE1["eta"])
    assert cost.table1_event_rate(1.3) == pytest.approx(table1)
    assert (cost.TABLE1_MU, cost.TABLE1_ETA) == (sum(TABLE1["mu"]), sum(TABLE1["eta"]))
    # the job-size study's events: an arrival and a departure per job
    assert cost.multiskill_job_sizes_event_rate() == pytest.approx(2 * sum(TABLE1["eta"]))
    etas = [eta for k in range(40) for eta in random_instance(200, 2022, k).eta]  # 8000 draws
    assert sum(etas) / len(etas) == pytest.approx(cost.MULTISKILL_MEAN_ETA, rel=0.03)
    assert cost.multiskill_job_sizes_event_rate(50) == pytest.approx(2 * 10.5 * 50)
    for n_classes in (10, 50, 200):  # the fitted uniformisation rate, within 10% of each draw
        fit = cost.multiskill_event_rate(n_classes)
        for k in range(5):
            inst = random_instance(n_classes, 2022, k)
            assert abs(float(inst.eta.sum() + inst.mu.sum()) / fit - 1) < 0.1


# -- through a dry run ----------------------------------------------------------------------
#: A heavy job's message ends with its requests: "... chunk <label> (<runtime> min, <mem> MB)".
JOB = re.compile(r"^Job \d+: (?P<what>.*?) \((?P<runtime>\d+) min, (?P<mem>\d+) MB\)$", re.M)
#: The messages of two chunked rules, with their wildcards.
CHUNKED = {
    "multiskill_simulate": (
        re.compile(r"Part A: simulating the routing policies, C=(\d+), chunk (\S+)"),
        ("n_classes", "chunk"),
    ),
    "serverpools_stochastic": (
        re.compile(r"Part C: simulating the (\w+) example at scale r=(\d+), chunk (\S+)"),
        ("example", "r", "chunk"),
    ),
}


#: The cores of the dry runs: explicit, so that the plan they are compared with is the one a
#: local run on that many cores makes, whatever machine runs the test.
DRY_RUN_CORES = 2


def _dry_run(workdir, *configs, cores=DRY_RUN_CORES):
    args = ["--configfile", *map(str, configs)]
    proc = run_snakemake(workdir, "-n", *args, cores=str(cores))
    text = proc.stdout + proc.stderr
    total = int(re.search(r"^total\s+(\d+)$", text, re.M).group(1))
    return total, [m.groupdict() for m in JOB.finditer(text)]


@pytest.mark.parametrize("overlay", [SMOKE, LARGE], ids=["smoke", "large"])
def test_dry_run_schedules_the_plan_and_requests_its_predictions(tmp_path, overlay):
    """The rules schedule exactly the plan's chunks and request, for each job, the plan's
    prediction times the safety factor (checked on Part A's and Part C's simulations); no
    heavy job requests more than a job of the target's length, or less than the base memory.
    The large DAG has several hundred jobs."""
    config = merged(overlay)
    safety = config["scaling"]["safety_factor"]
    total, jobs = _dry_run(tmp_path, overlay)
    if overlay == LARGE:
        assert 300 <= total <= 1200, total
    longest = cost.runtime_minutes(60.0 * config["scaling"]["target_minutes"], safety_factor=safety)
    planned = plan.plan(config, DRY_RUN_CORES)  # a local run cuts its chunks for its cores
    scheduled = {rule: [] for rule in CHUNKED}
    for job in jobs:
        runtime, mem = int(job["runtime"]), int(job["mem"])
        assert runtime <= longest, job  # no job predicted beyond the target
        assert mem >= cost.memory_mb(safety_factor=safety), job
        for rule, (message, names) in CHUNKED.items():
            if m := message.fullmatch(job["what"]):
                wildcards = dict(zip(names, m.groups(), strict=True))
                seconds = plan.job_seconds(rule, wildcards, config)
                data = plan.job_mb(rule, wildcards, config)
                assert runtime == cost.runtime_minutes(seconds, safety_factor=safety), job
                assert mem == cost.memory_mb(data, safety_factor=safety), job
                scheduled[rule].append(wildcards)
    for rule, wildcards in scheduled.items():
        key = sorted(planned[rule], key=str)
        assert sorted(wildcards, key=str) == key, rule


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
