"""Job planning (``queue_routing.workflow.plan``): the chunks of each heavy rule and each job's
predicted seconds and MB, as functions of the config, without Snakemake.

The references are the cost model's documented formulas written out here with its documented
constants (``queue_routing.workflow.resources``: 20 ns + 4 ns per policy and step, 36.4 C + 15
steps per unit time, ...); the constants themselves are checked against the instances in
tests/test_resources.py, and the glue of the rules (that the dry run requests these numbers)
there too.
"""

import copy
import math

import pytest

from _workflow import ROOT, SMOKE, merged_config
from queue_routing.errors import ArgumentError
from queue_routing.workflow import plan
from queue_routing.workflow import resources as cost
from queue_routing.workflow.chunks import parse_chunk

LARGE = ROOT / "workflow" / "config" / "large.yaml"

#: Every key the planning reads, at small, round values (not the shipped configs: the numbers
#: below are worked out from these).
CONFIG = {
    "scaling": {
        "target_minutes": 10,
        "safety_factor": 2.0,
        "retries": 2,
        "jobs": {
            "multiskill_simulate": {"instances": 0, "replications": 0},
            "multiskill_simulate_table1": {"load_factors": 0, "replications": 0},
            "multiskill_optimal": {"cases": 0},
            "deadlines_large": {"replications": 0},
            "serverpools_stochastic": {"replications": 0},
            "serverpools_covariance": {"replications": 0},
            "serverpools_search": {"sizes": 0, "samples": 0},
        },
    },
    "multiskill": {
        "sizes": {"first": 10, "last": 30, "step": 10},
        "instances_per_size": 10,
        "fixed_point": {
            "update_rules": ["jacobi", "single"],
            "initial_partitions": ["dedicated", "both", "shared", "random"],
            "random_initial_partitions": 5,
        },
        "simulation": {
            "policies": ["bernoulli", "jsq", "led", "io", "pi"],
            "horizon": 600.0,
            "warmup": 60.0,
            "replications": 10,
            "table1_load_factors": [0.5, 1.0, 1.3],
            "table1_horizon": 5000.0,
        },
        "job_sizes": {
            "laws": ["deterministic", "exponential", "lognormal:4"],
            "policies": ["jsq", "pi"],
            "replications": 10,
            "warmup": 50.0,
            "table1_horizon": 4000.0,
            "random_n_classes": 10,
            "random_instances": 3,
            "random_horizon": 500.0,
        },
        "optimal": {
            "c2_kinds": ["symmetric-2", "costs-2"],
            "c2_loads": [0.5, 0.75],
            "c3_kinds": ["symmetric-3"],
            "c3_loads": [0.5],
            "policies": ["bernoulli", "pi", "pi2"],
            "rtol": 1e-4,
            "switching": {"kind": "costs-2", "load": 0.75, "others": [0, 2]},
        },
    },
    "deadlines": {
        "exact": {"truncation": 30},
        "sweeps": {
            "arrival_rate": [1.0, 2.0, 3.0, 3.5],
            "rejection_cost": [1.0, 2.0],
            "mean_deadline": [0.5, 1.0, 1.5],
            "distribution": ["constant", "uniform", "exponential"],
            "pure_routing": [1.0, 2.0],
        },
        "large": {
            "clusters": [4, 20],
            "servers_range": [1, 4],
            "rate_range": [0.5, 1.5],
            "load": 0.9,
            "policies": ["bs", "io", "rb"],
            "horizon": 2000.0,
            "warmup": 200.0,
            "replications": 10,
        },
    },
    "serverpools": {
        "search": {"max_classes": 5, "max_pools": 4, "samples_per_size": 10000},
        "stochastic": {
            "examples": ["stable", "large_cycle"],
            "r": [100, 1.0e4],
            "horizon": 60.0,
            "warmup_margin": 6.907755,
            "record_every": 0.5,
            "replications": 3,
        },
        "covariance": {"r": 2000, "warmup": 20.0, "horizon": 980.0, "replications": 20},
        "fluid_limit": {"r": [1000], "t_end": 6.0, "record_every": 0.05, "replications": 4},
        "lap": {
            "r": {"large_cycle": [1000, 1000000]},
            "static_r_max": 1000,
            "horizon": {"lqfs-lb": 20.0, "lap": 20.0, "static": 200.0},
            "replications": 3,
        },
    },
}


def config_with(**changes):
    """:data:`CONFIG` with ``changes`` ({"multiskill.simulation.horizon": 6000.0, ...})."""
    config = copy.deepcopy(CONFIG)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = config
        for key in parents:
            node = node[key]
        node[leaf] = value
    return config


def seconds(rule, **wildcards):
    return plan.job_seconds(rule, wildcards, CONFIG)


# -- Part A ------------------------------------------------------------------------------------
def test_part_a_jobs_are_predicted_by_their_steps_runs_and_events():
    # a chunk of 5 instances x 10 replications with C = 20: 36.4 C + 15 steps per unit time for
    # 660 time units, each step 20 ns + 4 ns for each of the 5 policies
    step = 20e-9 + 4e-9 * 5
    expected = 50 * (36.4 * 20 + 15) * (600 + 60) * step
    assert seconds("multiskill_simulate", n_classes="20", chunk="i0-4_r0-9") == pytest.approx(
        expected, rel=1e-12
    )
    # Table 1 at the load factors 1.0 and 1.3 (items 1..2), 5 replications of 5060 time units
    table1 = 5 * sum((176 + f * 117) * (5000 + 60) * step for f in (1.0, 1.3))
    assert seconds("multiskill_simulate_table1", chunk="i1-2_r0-4") == pytest.approx(table1)
    # Algorithm 1 from 3 partitions and 5 random ones under 2 update rules: 16 runs per
    # instance of 1 ms + 0.02 ms C; the comparisons one run's worth per instance
    run = 1e-3 + 2e-5 * 30
    assert seconds("multiskill_solve", n_classes="30") == pytest.approx(10 * 16 * run)
    assert seconds("multiskill_compare", n_classes=30) == pytest.approx(10 * run)
    # job sizes: 2 sum(eta) events per unit time (Table 1: 2 x 117; random: 2 x 10.5 C) of
    # Bernoulli, JSQ and PI under 3 laws, 10 replications, 150 ns an event
    laws_policies_reps = 3 * 3 * 10 * 1.5e-7
    table1_js = 2 * 117 * (4000 + 50) * laws_policies_reps
    random_js = 2 * 10.5 * 10 * (500 + 50) * 3 * laws_policies_reps
    assert seconds("multiskill_job_sizes", sample="table1") == pytest.approx(table1_js)
    assert seconds("multiskill_job_sizes", sample="random") == pytest.approx(random_js)
    for rule in ("multiskill_simulate", "multiskill_solve", "multiskill_job_sizes"):
        assert plan.job_mb(rule, {}, CONFIG) == 0.0


def test_part_a_optimal_study_is_predicted_by_its_instances_and_loads():
    # per case at C = 2: 0.3 s + (400 s / 5^6) ((1 - 0.5)/(1 - load))^6 (400 s at load 0.9);
    # at C = 3: 12 s ((1 - 0.5)/(1 - load))^4; the cases are the templates at every load,
    # template by template (2 x [0.5, 0.75])
    c2 = {load: 0.3 + 400.0 / 5**6 * (0.5 / (1 - load)) ** 6 for load in (0.5, 0.75)}
    assert c2[0.75] == pytest.approx(1.9384)
    chunk = 2 * (c2[0.5] + c2[0.75])
    assert seconds("multiskill_optimal", n_classes="2", chunk="i0-3_r0-0") == pytest.approx(chunk)
    assert seconds("multiskill_optimal", n_classes="2", chunk="i1-1_r0-0") == pytest.approx(
        c2[0.75]
    )
    assert seconds("multiskill_optimal", n_classes="3", chunk="i0-0_r0-0") == pytest.approx(12.0)
    assert seconds("multiskill_optimal_switching") == pytest.approx(c2[0.75])


def test_part_a_bernoulli_routing_is_simulated_even_when_not_compared():
    without = config_with(**{"multiskill.simulation.policies": ["jsq", "led", "io", "pi"]})
    w = {"n_classes": "20", "chunk": "i0-4_r0-9"}
    assert plan.job_seconds("multiskill_simulate", w, without) == plan.job_seconds(
        "multiskill_simulate", w, CONFIG
    )


# -- Part B ------------------------------------------------------------------------------------
def test_part_b_jobs_are_predicted_by_their_arrivals_and_points():
    # n = 20: expected arrival rate 0.9 x 20 x E[m] 2.5 x E[mu] 1.0 = 45 for 2200 time units,
    # PI and the 3 configured policies at 200 ns + 8 ns n an arrival; each replication's unit
    # counts the index tables (0.05 s + 0.01 s n), so a chunk of k replications is k units
    unit = 4 * 45.0 * 2200 * (200e-9 + 8e-9 * 20) + (0.05 + 0.01 * 20)
    assert seconds("deadlines_large", n="20", chunk="r0-4") == pytest.approx(5 * unit)
    # two clusters: 1.5 ms (L/10)^3.3 a point at L = 2.25 x the initial truncation 30; the
    # distribution sweep is crossed with the 4 arrival rates
    point = 1.5e-3 * (2.25 * 30 / 10) ** 3.3
    for sweep, points in [("arrival_rate", 4), ("distribution", 12), ("pure_routing", 2)]:
        assert seconds("deadlines_two_cluster", sweep=sweep) == pytest.approx(points * point)
    # three clusters: a fixed prediction per sweep job (the four measured 40 s in all)
    for sweep in ("load", "rejection_cost", "distribution", "pure_routing"):
        assert seconds("deadlines_three_cluster", tcsweep=sweep) == 30.0


# -- Part C ------------------------------------------------------------------------------------
def test_part_c_jobs_are_predicted_by_their_events_samples_and_points():
    # stable at r = 10^4: a warm-up of margin / (2 |gamma|) (gamma = -1) plus the horizon 60;
    # 2 r sum(lambda) events per unit time (sum(lambda) = 2.7), 110 ns each; 2 replications
    length = 6.907755 / 2 + 60.0
    expected = 2 * 2 * 1e4 * 2.7 * length * 110e-9
    stable = {"example": "stable", "r": "10000", "chunk": "r0-1"}
    assert plan.job_seconds("serverpools_stochastic", stable, CONFIG) == pytest.approx(expected)
    # ... and its traces, a point every 0.5 time units, about 100 bytes a point
    assert plan.job_mb("serverpools_stochastic", stable, CONFIG) == pytest.approx(
        2 * length / 0.5 * 1e-4
    )
    # large cycle at r = 100 (unstable, gamma = 0.4193): (ln(r)/2 + margin) / gamma + 60
    cycle_length = (math.log(100) / 2 + 6.907755) / 0.4192559077406969 + 60.0
    cycle = {"example": "large_cycle", "r": "100", "chunk": "r0-2"}
    assert plan.job_seconds("serverpools_stochastic", cycle, CONFIG) == pytest.approx(
        3 * 2 * 100 * 1.009599 * cycle_length * 110e-9
    )
    # covariance: the stable example at r = 2000 for warm-up 20 + horizon 980
    assert seconds("serverpools_covariance", chunk="r0-9") == pytest.approx(
        10 * 2 * 2000 * 2.7 * 1000.0 * 110e-9
    )
    # search: 10 sizes x 1000 samples, each at most 0.4 ms + 0.02 ms (I + J) of the largest
    # size (5, 4), on one process holding half a job's base memory
    search = {"chunk": "i0-9_r0-999"}
    assert plan.job_seconds("serverpools_search", search, CONFIG) == pytest.approx(
        10 * 1000 * (0.4e-3 + 0.02e-3 * 9)
    )
    assert plan.job_mb("serverpools_search", search, CONFIG) == cost.BASE_MEMORY_MB / 2
    # fluid limit: 4 replications on [0, 6] at r = 1000, grids of 120 points of about 1 kB
    fluid = {"example": "stable", "r": "1000"}
    assert plan.job_seconds("serverpools_fluid_limit", fluid, CONFIG) == pytest.approx(
        4 * 2 * 1000 * 2.7 * 6.0 * 110e-9
    )
    assert plan.job_mb("serverpools_fluid_limit", fluid, CONFIG) == pytest.approx(4 * 120 * 1e-3)


def test_part_c_lap_study_jobs_are_predicted_by_each_disciplines_warmup_and_events():
    # LAP on the large cycle at r = 10^6: warm-up margin / (2 * 3.8) (its slowest mode is the
    # rate 3.8 of class 2's root-ward activity) plus the horizon 20; 3 replications of
    # 2 r sum(lambda) events per unit time at 110 ns
    lap = {"example": "large_cycle", "policy": "lap", "r": "1000000"}
    length = 6.907755 / (2 * 3.8) + 20.0
    assert plan.job_seconds("serverpools_lap", lap, CONFIG) == pytest.approx(
        3 * 2 * 1e6 * 1.009599 * length * 110e-9
    )
    # static routing: the slowest activity's rate 0.087, its own horizon 200
    static = dict(lap, policy="static")
    assert plan.job_seconds("serverpools_lap", static, CONFIG) == pytest.approx(
        3 * 2 * 1e6 * 1.009599 * (6.907755 / (2 * 0.087) + 200.0) * 110e-9
    )
    # LQFS-LB where the stochastic study has no run: its unstable warm-up (ln(r)/2 + m)/gamma
    lqfs = dict(lap, policy="lqfs-lb", r="1000")
    cycle_length = (math.log(1000) / 2 + 6.907755) / 0.4192559077406969 + 20.0
    assert plan.job_seconds("serverpools_lap", lqfs, CONFIG) == pytest.approx(
        3 * 2 * 1000 * 1.009599 * cycle_length * 110e-9
    )


def test_part_c_covariance_simulates_warmup_plus_horizon():
    """The covariance run's simulated time is warm-up + horizon: moving time from one to the
    other changes nothing, lengthening either lengthens the job in proportion."""
    w = {"chunk": "r0-19"}
    base = plan.job_seconds("serverpools_covariance", w, CONFIG)
    moved = config_with(**{"serverpools.covariance.warmup": 500.0})
    moved["serverpools"]["covariance"]["horizon"] = 500.0
    assert plan.job_seconds("serverpools_covariance", w, moved) == pytest.approx(base)
    longer = config_with(**{"serverpools.covariance.horizon": 1980.0})
    assert plan.job_seconds("serverpools_covariance", w, longer) == pytest.approx(2 * base)


# -- chunks ------------------------------------------------------------------------------------
def test_target_is_the_minutes_less_the_start_up():
    assert plan.target_seconds({"scaling": {"target_minutes": 10}}) == 600.0 - 10.0
    assert plan.target_seconds({"scaling": {"target_minutes": 1}}) == 50.0
    assert plan.target_seconds({"scaling": {"target_minutes": 0.1}}) == 1.0  # at least 1 s


def test_work_that_fits_a_job_is_one_chunk():
    assert plan.chunk_labels("multiskill_simulate", {"n_classes": 30}, CONFIG) == ["i0-9_r0-9"]
    assert plan.chunk_labels("multiskill_simulate_table1", {}, CONFIG) == ["i0-2_r0-9"]
    assert plan.chunk_labels("deadlines_large", {"n": "20"}, CONFIG) == ["r0-9"]
    stochastic = {"example": "stable", "r": 10000}
    assert plan.chunk_labels("serverpools_stochastic", stochastic, CONFIG) == ["r0-2"]
    assert plan.chunk_labels("serverpools_covariance", {}, CONFIG) == ["r0-19"]
    # the search: 0.6 ms x 10000 samples = 6 s per size, 20 sizes (I <= 5, J <= 4)
    assert plan.chunk_labels("serverpools_search", {}, CONFIG) == ["i0-19_r0-9999"]


def test_explicit_block_sizes_win():
    jobs = {"instances": 3, "replications": 5}
    config = config_with(**{"scaling.jobs.multiskill_simulate": jobs})
    labels = plan.chunk_labels("multiskill_simulate", {"n_classes": 10}, config)
    items = ["i0-2", "i3-5", "i6-7", "i8-9"]  # 10 instances in 4 balanced blocks of <= 3
    assert labels == [f"{i}_{r}" for i in items for r in ("r0-4", "r5-9")]
    config = config_with(**{"scaling.jobs.serverpools_search": {"sizes": 7, "samples": 0}})
    assert plan.chunk_labels("serverpools_search", {}, config) == [
        "i0-6_r0-9999",
        "i7-13_r0-9999",
        "i14-19_r0-9999",
    ]


def _covered(labels, n_items, n_replications):
    cells = [
        (i, r)
        for label in labels
        for i in (parse_chunk(label).items or [None])
        for r in parse_chunk(label).replications
    ]
    items = range(n_items) if n_items else [None]
    return sorted(cells, key=str) == sorted(
        [(i, r) for i in items for r in range(n_replications)], key=str
    )


def test_work_beyond_the_target_is_cut_into_jobs_within_it():
    # 1000 x longer runs: a size's 100 replications (10 instances x 10, 10 s or more each)
    # no longer fit 590 s
    config = config_with(
        **{"multiskill.simulation.horizon": 600000.0, "multiskill.simulation.warmup": 60000.0}
    )
    target = plan.target_seconds(config)
    for n in (10, 30):
        labels = plan.chunk_labels("multiskill_simulate", {"n_classes": n}, config)
        assert len(labels) > 1 and _covered(labels, 10, 10)
        for label in labels:
            w = {"n_classes": str(n), "chunk": label}
            assert plan.job_seconds("multiskill_simulate", w, config) <= target
    # a replication longer than the target is a job alone
    huge = config_with(**{"serverpools.covariance.horizon": 1e6})
    labels = plan.chunk_labels("serverpools_covariance", {}, huge)
    assert labels == [f"r{k}-{k}" for k in range(20)]


def test_ten_times_the_horizon_raises_the_requests_or_the_jobs_tenfold():
    """Two sizes of the default study, 150 instances each: ten times the horizon and warm-up
    is ten times the predicted work, so ten times the requested minutes, in more jobs."""
    base = config_with(
        **{
            "multiskill.sizes": {"first": 150, "last": 200, "step": 50},
            "multiskill.instances_per_size": 150,
        }
    )
    longer = copy.deepcopy(base)
    longer["multiskill"]["simulation"].update(horizon=6000.0, warmup=600.0)

    def part_a(config):
        jobs = plan.plan(config)["multiskill_simulate"]
        minutes = sum(
            cost.runtime_minutes(plan.job_seconds("multiskill_simulate", j, config)) for j in jobs
        )
        return len(jobs), minutes

    jobs_before, minutes_before = part_a(base)
    jobs_after, minutes_after = part_a(longer)
    assert jobs_before == 2 and jobs_after >= 8  # each size's job no longer fits 10 minutes
    assert 8 * minutes_before <= minutes_after <= 12 * minutes_before


# -- the plan ----------------------------------------------------------------------------------
def test_plan_lists_every_chunked_rules_jobs_in_the_rules_order():
    jobs = plan.plan(CONFIG)
    assert list(jobs) == list(plan.CHUNKED_RULES)
    for rule, names in plan.CHUNKED_RULES.items():
        for job in jobs[rule]:
            assert list(job) == [*names, "chunk"] and all(isinstance(v, str) for v in job.values())
    assert jobs["multiskill_simulate"] == [
        {"n_classes": n, "chunk": "i0-9_r0-9"} for n in ("10", "20", "30")
    ]
    assert jobs["deadlines_large"] == [{"n": "4", "chunk": "r0-9"}, {"n": "20", "chunk": "r0-9"}]
    assert [(j["example"], j["r"]) for j in jobs["serverpools_stochastic"]] == [
        ("stable", "100"),
        ("stable", "10000"),
        ("large_cycle", "100"),
        ("large_cycle", "10000"),
    ]
    assert jobs["serverpools_covariance"] == [{"chunk": "r0-19"}]


def test_unknown_rules_are_refused_naming_the_argument():
    for call in (
        lambda: plan.job_seconds("multiskill_fig7", {}, CONFIG),
        lambda: plan.job_mb("nonsense", {}, CONFIG),
        lambda: plan.chunk_labels("multiskill_solve", {"n_classes": 10}, CONFIG),
    ):
        with pytest.raises(ArgumentError, match=r"^rule must be") as error:
            call()
        assert error.value.argument == "rule"


# -- the shipped configs -------------------------------------------------------------------------
@pytest.mark.parametrize("overlays", [(), (SMOKE,)], ids=["default", "smoke"])
def test_shipped_small_scales_keep_one_chunk_per_job(overlays):
    """At the default and smoke scales every chunked rule's work fits one job (docs/running.md,
    "Scaling a study"): one chunk per size, example, scale or study."""
    config = merged_config(*overlays)
    for rule, jobs in plan.plan(config).items():
        groups = [tuple(v for k, v in job.items() if k != "chunk") for job in jobs]
        assert len(groups) == len(set(groups)), rule


def test_large_config_jobs_cover_the_work_once_within_the_target():
    config = merged_config(LARGE)
    target = plan.target_seconds(config)
    jobs = plan.plan(config)
    ms = config["multiskill"]
    sizes = range(ms["sizes"]["first"], ms["sizes"]["last"] + 1, ms["sizes"]["step"])
    assert len(jobs["multiskill_simulate"]) > 2 * len(sizes)  # the large sizes are cut
    for rule, rule_jobs in jobs.items():
        for job in rule_jobs:
            chunk = parse_chunk(job["chunk"])
            single = chunk.n_items == 1 and len(chunk.replications) == 1
            assert plan.job_seconds(rule, job, config) <= target or single, (rule, job)
    for n in sizes:
        labels = [j["chunk"] for j in jobs["multiskill_simulate"] if j["n_classes"] == str(n)]
        assert _covered(labels, ms["instances_per_size"], ms["simulation"]["replications"])
    st = config["serverpools"]["stochastic"]
    for example in st["examples"]:
        for r in st["r"]:
            labels = [
                j["chunk"]
                for j in jobs["serverpools_stochastic"]
                if (j["example"], j["r"]) == (example, str(int(r)))
            ]
            assert _covered(labels, None, st["replications"])


# -- a local run's cores -------------------------------------------------------------------------
def _chunked_seconds(config, cores):
    """(rule, job, predicted seconds, single unit) of every chunked job split for ``cores``."""
    out = []
    for rule, jobs in plan.plan(config, cores).items():
        for job in jobs:
            chunk = parse_chunk(job["chunk"])
            single = chunk.n_items == 1 and len(chunk.replications) == 1
            out.append((rule, job, plan.job_seconds(rule, job, config), single))
    return out


@pytest.mark.parametrize("cores", [None, 1, 2, 4, 16, 64])
@pytest.mark.parametrize("name", ["round", "default"])
def test_the_total_work_is_every_jobs_work_whatever_the_split(name, cores):
    config = CONFIG if name == "round" else merged_config()
    by_job = sum(
        plan.job_seconds(rule, job, config)
        for rule, jobs in plan.heavy_jobs(config, cores).items()
        for job in jobs
    )
    assert plan.total_seconds(config) == pytest.approx(by_job, rel=1e-12)


@pytest.mark.parametrize("cores", [1, 2, 3, 4, 8, 16, 64, 256])
@pytest.mark.parametrize("name", ["round", "default", "large"])
def test_on_n_cores_no_job_works_beyond_a_sixth_of_a_cores_share(name, cores):
    """No chunked job is predicted beyond total / (6 N) (nor beyond the cluster's target),
    unless that is below min_job_seconds or the job is one replication of one item; the
    chunks still cover every replication of every item once."""
    config = {"round": CONFIG, "default": merged_config(), "large": merged_config(LARGE)}[name]
    total = sum(
        plan.job_seconds(rule, job, config)
        for rule, jobs in plan.heavy_jobs(config).items()
        for job in jobs
    )
    floor = config["scaling"].get("min_job_seconds", plan.MIN_JOB_SECONDS)
    bound = min(max(total / (6 * cores), floor), 60.0 * config["scaling"]["target_minutes"] - 10.0)
    for rule, job, work, single in _chunked_seconds(config, cores):
        assert work <= bound * (1 + 1e-12) or single, (rule, job, work, bound)
    st = config["serverpools"]["stochastic"]
    for example in st["examples"]:
        for r in st["r"]:
            labels = [
                j["chunk"]
                for j in plan.plan(config, cores)["serverpools_stochastic"]
                if (j["example"], j["r"]) == (example, str(int(r)))
            ]
            assert _covered(labels, None, st["replications"])
    search = config["serverpools"]["search"]
    labels = [j["chunk"] for j in plan.plan(config, cores)["serverpools_search"]]
    sizes = search["max_classes"] * search["max_pools"]
    assert _covered(labels, sizes, search["samples_per_size"])


def test_more_cores_never_make_fewer_jobs_and_a_cluster_ignores_them():
    config = merged_config()
    counts = [len(_chunked_seconds(config, n)) for n in (1, 2, 4, 8, 16, 64)]
    assert counts == sorted(counts)
    assert plan.plan(config, None) == plan.plan(config, 1)  # one core: the work fits 10 min
    assert plan.target_seconds(config, None) == plan.slurm_target_seconds(config)


def test_the_default_run_splits_the_search_and_the_largest_stationary_runs():
    """On 2 cores and more the instability search and the stationary run at r = 10^6 of the
    stable example (one job each on a cluster) are cut into several jobs."""
    config = merged_config()
    for cores in (2, 16):
        jobs = plan.plan(config, cores)
        assert len(jobs["serverpools_search"]) > 1
        top = [j for j in jobs["serverpools_stochastic"] if j["r"] == "1000000"]
        assert len(top) > len(config["serverpools"]["stochastic"]["examples"])
    assert len(plan.plan(config, None)["serverpools_search"]) == 1


def test_scaling_cores_fixes_the_split_whatever_the_run_has():
    config = merged_config({"scaling": {"cores": 4}})
    assert plan.local_cores(config, 16) == 4 and plan.local_cores(config, None) == 4
    assert plan.plan(config, 16) == plan.plan(config, None) == plan.plan(merged_config(), 4)
    with pytest.raises(ArgumentError, match=r"^cores must be") as error:
        plan.target_seconds(merged_config(), 0)
    assert error.value.argument == "cores"


def test_min_job_seconds_bounds_the_cut_from_below():
    config = merged_config({"scaling": {"min_job_seconds": 100.0}})
    assert plan.target_seconds(config, 64) == 100.0
    assert plan.target_seconds(merged_config({"scaling": {"min_job_seconds": 1e4}}), 64) == (
        plan.slurm_target_seconds(config)
    )
