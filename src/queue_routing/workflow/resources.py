"""Cost model of the pipeline's jobs: predicted wall time (s) and memory (MB) from their work.

Every heavy rule's ``runtime`` (minutes) and ``mem_mb`` requests, and the chunking of its
work (:mod:`queue_routing.workflow.plan`, :func:`queue_routing.workflow.chunks.plan_chunks`),
follow from the functions here: each turns the work a job is given -- uniformised steps or
events to simulate, samples to search, states of a chain -- into a predicted wall time on one
core, with constants calibrated by ``benchmarks/resources.py`` (which prints the measured
values next to these). The calibrated constants below were measured on the machine of the
docs/benchmarks.md section: 2 cores shared with other work (load average about 2), Python 3.11,
numpy 2.4, numba 0.68. The requests are the prediction times a **safety factor** (config
``scaling.safety_factor``, 2 by default: it covers the measured spread between runs on the
shared machine, about +-30%, and a slower cluster core), times the **attempt** number, so a
job that still runs out of time is resubmitted by Snakemake's ``retries`` with twice, then
three times, the limit (docs/running.md, "Scaling a study").

Predictions are for the job's own work plus :data:`JOB_OVERHEAD_SECONDS` (start-up: the job's
Snakemake process reads the workflow, then the script imports the library); they are
expectations, not bounds: where the work depends on random instances (Part A's uniformisation
rates, Part B's drawn clusters) the expected value over the generator is used, or the instance
itself when it is cheap to draw.

Calibration (``python benchmarks/resources.py`` and whole jobs; "loaded": other work kept its
load average at 2-5 on the 2 cores; the constant used is at the upper end of what was
measured, the safety factor on top):

======================================  ==================================  =================
quantity                                measured                            constant
======================================  ==================================  =================
job start-up (Snakemake job + imports)  3.1-3.6 s (dry run of the smoke     10 s
                                        DAG + imports)
Part A uniformised step, P policies    22 ns at P = 1, 33-41 ns at P = 5   20 ns + 4 ns P
in lockstep                             (C = 20..200; loaded, 2 cores
                                        shared by 4 processes)
Part A uniformisation rate Lambda(C)    36.4 C + 15 (20 instances per       36.4 C + 15 per
                                        C = 10, 50, 100, 200; every         unit time
                                        instance within 10%)
Part A solver run (Algorithm 1)         0.85-4.8 ms at C = 10-200           1 ms + 0.02 ms C
Part A event of the job-size study      about 110 ns (event-driven          150 ns
(general job sizes)                     simulator, Table 1)
Part B arrival, per policy              loaded 230-290 ns at n = 4-20,      200 ns + 8 ns n
                                        520 ns at n = 50 (whole runs 0.4-
                                        0.9 of the model)
Part B index tables (3 policies)        0.05-0.6 s at n = 4-50              0.05 s + 0.01 s n
Part B two-cluster point                0.1-0.9 s at L = 45, 3.2 s at       1.5e-3 s (L/10)^3.3
                                        L = 102, 47 s at L = 230
Part B three-cluster sweep job          the four together 40 s (default     30 s each
                                        config)
Part C event (LQFS-LB kernel + trace)   49-60 ns; loaded 100-160 ns         110 ns
Part C events per unit time             1.99-2.00 r sum(lambda)             2 r sum(lambda)
Part C search sample                    0.33-0.62 ms at I + J = 2-10,       0.4 ms + 0.02 ms
                                        loaded                              (I + J)
memory of a job (Snakemake + script)    138 MB + 190-218 MB                 400 MB
Part C data (traces, fluid grids)       not measured (heuristics: well      100 bytes, 1 kB
                                        below the job's 400 MB)             per point
======================================  ==================================  =================

A whole job of the large config (``multiskill_simulate`` C = 200, chunk ``i0-3_r0-16``) was
predicted at 13.6 min of work and took 15.6 min loaded (load average 4): 1.15 times the
prediction, well within the request of twice it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..checks import integer, positive

__all__ = [
    "BASE_MEMORY_MB",
    "DEADLINES_INDEX_SECONDS",
    "DEADLINES_SECONDS_PER_ARRIVAL",
    "DEADLINES_THREE_CLUSTER_SECONDS",
    "DEADLINES_TWO_CLUSTER_POINT",
    "JOB_OVERHEAD_SECONDS",
    "MIN_RUNTIME_MINUTES",
    "MULTISKILL_EVENT_RATE",
    "MULTISKILL_JOB_SIZES_SECONDS_PER_EVENT",
    "MULTISKILL_MEAN_ETA",
    "MULTISKILL_SECONDS_PER_RUN",
    "MULTISKILL_SECONDS_PER_STEP",
    "SERVERPOOLS_FLUID_LIMIT_MB_PER_POINT",
    "SERVERPOOLS_GROWTH_RATES",
    "SERVERPOOLS_POLICY_GROWTH_RATES",
    "SERVERPOOLS_SECONDS_PER_EVENT",
    "SERVERPOOLS_SECONDS_PER_SAMPLE",
    "SERVERPOOLS_TOTAL_ARRIVAL_RATES",
    "SERVERPOOLS_TRACE_MB_PER_POINT",
    "SMALL_JOB_SECONDS",
    "TABLE1_ETA",
    "TABLE1_MU",
    "deadlines_expected_arrival_rate",
    "deadlines_large_seconds",
    "deadlines_two_cluster_seconds",
    "memory_mb",
    "multiskill_compare_seconds",
    "multiskill_event_rate",
    "multiskill_job_sizes_event_rate",
    "multiskill_job_sizes_seconds",
    "multiskill_optimal_mb",
    "multiskill_optimal_seconds",
    "multiskill_simulation_seconds",
    "multiskill_solve_seconds",
    "runtime_minutes",
    "serverpools_events",
    "serverpools_fluid_limit_mb",
    "serverpools_policy_run_length",
    "serverpools_run_length",
    "serverpools_search_mb",
    "serverpools_search_seconds",
    "serverpools_simulation_seconds",
    "serverpools_trace_mb",
    "small_job_seconds",
    "table1_event_rate",
]

#: Start-up of one job (s): its Snakemake process reading the workflow (3.6 s for the smoke
#: DAG, more for a large one) and the script importing the library (1.1 s).
JOB_OVERHEAD_SECONDS = 10.0
#: Memory of a job without its data (MB): the job's Snakemake process (138 MB peak) and the
#: script's Python with numpy, pandas, scipy, numba and the library (190-210 MB peak).
BASE_MEMORY_MB = 400.0
#: Smallest runtime request (minutes): SLURM's granularity is a minute, and a limit of a few
#: minutes keeps a job with a slow start (busy file system, cold numba cache) alive.
MIN_RUNTIME_MINUTES = 5
#: Predicted work (s) of a rule whose work the config hardly changes (Table 1 by every solver,
#: the C = 2 maps, the examples, the boundary scan, the fluid runs, the index functions):
#: above each of them in the default config (at most 20 s measured).
SMALL_JOB_SECONDS = 60.0

#: Part A: wall time (s) of one uniformised step of the compiled kernel that simulates P
#: policies in lockstep (the event drawn once, every policy's state updated) = a + b P
#: (measured 22 ns at P = 1 and 36 ns at P = 5, C = 20..200, benchmarks/resources.py).
MULTISKILL_SECONDS_PER_STEP = (20e-9, 4e-9)
#: Part A: expected uniformisation rate (steps per unit time) of a random instance with C
#: classes = a + b C (fitted on 20 instances per C at C = 10, 50, 100, 200; every instance
#: drawn there within 10%: :func:`multiskill_event_rate`).
MULTISKILL_EVENT_RATE = (15.0, 36.4)
#: Part A: mean intensity ``eta_i`` of a class of a random instance: the generator
#: (:func:`queue_routing.multiskill.instances.random_instance`) draws ``round(U(1, 20))``, whose
#: mean is 10.5.
MULTISKILL_MEAN_ETA = 10.5
#: Part A: wall time (s) of one run of Algorithm 1 on C classes = a + b C (measured 0.85 ms at
#: C = 10, 4.8 ms at C = 200).
MULTISKILL_SECONDS_PER_RUN = (1e-3, 2e-5)
#: Part A: wall time (s) of one event of the event-driven simulator of general job sizes
#: (docs/multiskill.md#general-job-sizes): measured about 1.1e-7 s on Table 1, rounded up.
MULTISKILL_JOB_SIZES_SECONDS_PER_EVENT = 1.5e-7
#: Part A: one case of the optimal-routing study (s): the optimum by relative value
#: iteration and six policies evaluated on the truncated chain, every cost certified at rtol
#: 1e-4, one thread; by number of classes C, ``(a, b, k)`` in
#: ``a + b ((1 - 0.5) / (1 - load)) ** k`` (:func:`multiskill_optimal_seconds`): the levels
#: of the box grow like ``1 / (1 - load)`` in each of the C + 1 counts and value iteration's
#: steps like the chain's mixing time, ``1 / (1 - load) ** 2``, and the steps slow down once
#: the box outgrows the caches. Measured on boxes with redirection, one process, the machine
#: shared: C = 2, 0.2-0.4 s at load 0.5, 0.9-4.7 s at 0.7, 3-15 s at 0.8, 340-400 s at 0.9
#: (Table 1's first two classes, the heaviest template); C = 3, 7.5-12.4 s at 0.5, 25-35 s at
#: 0.7. At 0.95 see docs/multiskill.md (the optimal dynamic policy).
MULTISKILL_OPTIMAL_SECONDS = {2: (0.3, 400.0 / 5.0**6, 6.0), 3: (0.0, 12.0, 4.0)}
#: The optimal-routing chain's bytes a state (the solver's ``optimal.BYTES_PER_STATE``).
MULTISKILL_OPTIMAL_BYTES_PER_STATE = 40
#: Part A: Table 1's sum of capacities ``sum mu_j`` and sum of intensities ``sum eta_i``
#: (Sec. 6.3 of the paper; work per unit time; docs/multiskill.md).
TABLE1_MU, TABLE1_ETA = 176.0, 117.0
#: Part B: wall time of one arrival of one policy (s) = a + b n (n clusters).
DEADLINES_SECONDS_PER_ARRIVAL = (200e-9, 8e-9)
#: Part B: building the index tables of IO, PI, RB (s) = a + b n.
DEADLINES_INDEX_SECONDS = (0.05, 0.01)
#: Part B: one exact evaluation on two clusters (s) = ``a (L / 10) ** b`` at the truncation
#: level ``L = c * truncation`` that the default sweeps mostly settle at: the check starts
#: at ``truncation`` and raises the level by 1.5 twice, so c = 1.5 ** 2 = 2.25 (measured
#: 0.1-0.9 s at L = 45 and 68, 3.2 s at L = 102, 47 s at L = 230): (a, b, c).
DEADLINES_TWO_CLUSTER_POINT = (1.5e-3, 3.3, 2.25)
#: Part B: one sweep job of the three-cluster study (s): the four jobs of the default config
#: together measured 40 core-seconds.
DEADLINES_THREE_CLUSTER_SECONDS = 30.0
#: Part C: wall time of one event of the LQFS-LB kernel, trace recording included (s).
SERVERPOOLS_SECONDS_PER_EVENT = 110e-9
#: Part C: one sample of the instability search (s) = a + b (I + J).
SERVERPOOLS_SECONDS_PER_SAMPLE = (0.4e-3, 0.02e-3)
#: Part C: total arrival rate ``sum(lambda)`` per unit r of each example system
#: (:func:`queue_routing.serverpools.instances.example_system`; tests/test_resources.py checks
#: them), here so that the workflow can plan without importing the simulators (1.2 s).
SERVERPOOLS_TOTAL_ARRIVAL_RATES = {"stable": 2.7, "unstable": 1.0098, "large_cycle": 1.009599}
#: Part C: the leading real part gamma of the spectrum of A_u of each example (per unit time;
#: :func:`queue_routing.serverpools.linear.stability_verdict`, tests/test_resources.py checks
#: them), which sets a stationary run's derived warm-up (:func:`serverpools_run_length`).
SERVERPOOLS_GROWTH_RATES = {
    "stable": -1.0000000000000002,
    "unstable": 0.23574485302162584,
    "large_cycle": 0.4192559077406969,
}
#: Part C: the leading real part of the linearised fluid drift of Leaf Activity Priority (at
#: its default root) and of static routing (-min mu_ij on the basic tree) of each example,
#: per unit time (:func:`queue_routing.serverpools.experiments.policy_warmup`; tests/test_lap.py
#: checks them): they set the derived warm-up of those runs.
SERVERPOOLS_POLICY_GROWTH_RATES = {
    ("stable", "lap"): -1.0,
    ("stable", "static"): -0.5,
    ("unstable", "lap"): -6.0,
    ("unstable", "static"): -0.12,
    ("large_cycle", "lap"): -3.8,
    ("large_cycle", "static"): -0.087,
}
#: Part C: memory (MB) of one recorded point of one replication's trace (a heuristic, not a
#: measurement): a row of the trace table (example, r, replication, time, norm and the
#: classes' deviations) is about 100 characters of CSV, 100 bytes.
SERVERPOOLS_TRACE_MB_PER_POINT = 1e-4
#: Part C: memory (MB) of one recorded time point of one fluid-limit replication (a heuristic,
#: not a measurement): the run's recorded state and the fluid solution on its finer grid,
#: about 1 kB per recorded point (under 1 MB in all in the default config).
SERVERPOOLS_FLUID_LIMIT_MB_PER_POINT = 1e-3


def runtime_minutes(seconds: float, *, attempt: int = 1, safety_factor: float = 2.0) -> int:
    """The ``runtime`` request (whole minutes) of a job predicted to work ``seconds``:
    ``attempt`` times ``ceil(safety_factor * (seconds + JOB_OVERHEAD_SECONDS) / 60)``, the
    latter at least :data:`MIN_RUNTIME_MINUTES`.

    >>> runtime_minutes(600.0), runtime_minutes(600.0, attempt=2), runtime_minutes(1.0)
    (21, 42, 5)
    """
    attempt = integer("attempt", attempt, 1)
    if not seconds >= 0 or not math.isfinite(seconds):
        raise ValueError(f"seconds must be finite and >= 0, got {seconds}")
    factor = positive("safety_factor", safety_factor)
    minutes = math.ceil(factor * (seconds + JOB_OVERHEAD_SECONDS) / 60.0)
    return attempt * max(minutes, MIN_RUNTIME_MINUTES)


def memory_mb(data_mb: float = 0.0, *, attempt: int = 1, safety_factor: float = 2.0) -> int:
    """The ``mem_mb`` request of a job holding ``data_mb`` MB of its own data:
    ``attempt`` times ``ceil(safety_factor * (BASE_MEMORY_MB + data_mb))``.

    >>> memory_mb(), memory_mb(100.0, attempt=2)
    (800, 2000)
    """
    attempt = integer("attempt", attempt, 1)
    if not data_mb >= 0 or not math.isfinite(data_mb):
        raise ValueError(f"data_mb must be finite and >= 0, got {data_mb}")
    factor = positive("safety_factor", safety_factor)
    return attempt * math.ceil(factor * (BASE_MEMORY_MB + data_mb))


def small_job_seconds() -> float:
    """The predicted work (s) of a rule whose work the config hardly changes:
    :data:`SMALL_JOB_SECONDS`."""
    return SMALL_JOB_SECONDS


# -- Part A ---------------------------------------------------------------------------------
def multiskill_event_rate(n_classes: int) -> float:
    """Expected uniformisation rate ``Lambda = sum_i eta_i + sum_j mu_j`` (steps per unit
    time) of a random instance with ``n_classes`` classes
    (:func:`queue_routing.multiskill.instances.random_instance`): ``36.4 C + 15``
    (:data:`MULTISKILL_EVENT_RATE`).

    The generator draws ``eta_i`` from ``round(U(1, 20))`` (mean 10.5) and the dedicated
    ``mu_i`` from ``ceil(U(10, 40))`` (mean 25.5), so ``Lambda / C`` tends to 36 plus the
    multi-skilled server's share; the constants are fitted on 20 instances per C at C = 10,
    50, 100, 200 (``benchmarks/resources.py`` checks them), and every instance drawn there is
    within 10% of the fit.

    >>> round(multiskill_event_rate(200))
    7295
    """
    a, b = MULTISKILL_EVENT_RATE
    return b * integer("n_classes", n_classes, 1) + a


def table1_event_rate(load_factor: float) -> float:
    """Uniformisation rate (steps per unit time) of Table 1 with intensities scaled by
    ``load_factor``: ``sum_j mu_j + load_factor * sum_i eta_i`` (176 + 117 s).

    >>> table1_event_rate(1.0)
    293.0
    """
    return TABLE1_MU + positive("load_factor", load_factor) * TABLE1_ETA


def multiskill_simulation_seconds(
    event_rate: float,
    *,
    policies: Sequence[str],
    replications: int,
    horizon: float,
    warmup: float,
) -> float:
    """Predicted wall time (s) of ``replications`` replications of every policy on one
    instance of uniformisation rate ``event_rate`` (steps per unit time), as a paired
    comparison simulates them: Bernoulli routing (the control) and each other policy in
    lockstep, each replication ``round(event_rate * (warmup + horizon))`` steps of
    :data:`MULTISKILL_SECONDS_PER_STEP` for that many policies.

    >>> round(multiskill_simulation_seconds(7295.0, policies=["bernoulli", "jsq", "led",
    ...     "io", "pi"], replications=10, horizon=1000.0, warmup=100.0), 1)
    3.2
    """
    simulated = len(set(policies) | {"bernoulli"})
    steps = positive("event_rate", event_rate) * (float(horizon) + float(warmup))
    a, b = MULTISKILL_SECONDS_PER_STEP
    return int(replications) * steps * (a + b * simulated)


def multiskill_solve_seconds(n_instances: int, n_classes: int, runs_per_instance: int) -> float:
    """Predicted wall time (s) of the exact solver and ``runs_per_instance`` runs of
    Algorithm 1 on each of ``n_instances`` instances with ``n_classes`` classes: ``(1 ms +
    0.02 ms C)`` per run (:data:`MULTISKILL_SECONDS_PER_RUN`).

    >>> round(multiskill_solve_seconds(10, 200, 16), 2)
    0.8
    """
    a, b = MULTISKILL_SECONDS_PER_RUN
    return n_instances * runs_per_instance * (a + b * n_classes)


def multiskill_compare_seconds(n_instances: int, n_classes: int) -> float:
    """Predicted wall time (s) of the three comparison systems on ``n_instances`` instances:
    a few exact solves each, bounded by one Algorithm 1 run per instance."""
    return multiskill_solve_seconds(n_instances, n_classes, 1)


def multiskill_optimal_seconds(n_classes: int, loads: Sequence[float], kinds: int) -> float:
    """Predicted wall time (s) of the optimal-routing study for ``n_classes`` classes:
    ``kinds`` templates at each of ``loads``, each case ``a + b ((1 - 0.5) / (1 - load)) ** k``
    with ``(a, b, k) = MULTISKILL_OPTIMAL_SECONDS[C]`` (C beyond 3 costs as C = 3 times 10
    per extra class).

    >>> round(multiskill_optimal_seconds(3, [0.5, 0.75], 2), 3)
    408.0
    """
    c = integer("n_classes", n_classes, 1)
    a, b, k = MULTISKILL_OPTIMAL_SECONDS[min(max(c, 2), 3)]
    if c > 3:
        a, b = a * 10.0 ** (c - 3), b * 10.0 ** (c - 3)
    return int(kinds) * sum(a + b * ((1 - 0.5) / (1 - float(r))) ** k for r in loads)


def multiskill_optimal_mb(n_classes: int, load: float, rtol: float) -> float:
    """Predicted data (MB) of one case of the optimal-routing study, an upper bound: the
    arrays of a cube (:data:`MULTISKILL_OPTIMAL_BYTES_PER_STATE` bytes a state) whose level
    is 1.5 times the count ``L`` at which a geometric tail of ratio ``load`` falls below the
    face threshold ``1e-2 rtol`` (``load ** L = 1e-2 rtol``: the levels grow until no face
    holds more, then once more by 1.5), at most 8 GiB (the solver's own bound).

    >>> round(multiskill_optimal_mb(2, 0.5, 1e-4), 1)  # level 30: 31 ** 3 states
    1.1
    """
    c = integer("n_classes", n_classes, 1)
    level = math.ceil(1.5 * math.log(1e-2 * float(rtol)) / math.log(float(load)))
    states = float(level + 1) ** (c + 1)
    return min(states * MULTISKILL_OPTIMAL_BYTES_PER_STATE, 8 * 2.0**30) / 2.0**20


def multiskill_job_sizes_event_rate(n_classes: int | None = None) -> float:
    """Expected events (arrivals and departures) per unit time of the job-size study's
    event-driven simulator: ``2 sum(eta)``, every arrival departing. ``n_classes=None``:
    Table 1 (``2 x 117``, :data:`TABLE1_ETA`); else a random instance with ``n_classes``
    classes (``2 x 10.5 C``, :data:`MULTISKILL_MEAN_ETA`).

    >>> multiskill_job_sizes_event_rate(), multiskill_job_sizes_event_rate(10)
    (234.0, 210.0)
    """
    if n_classes is None:
        return 2 * TABLE1_ETA
    return 2 * MULTISKILL_MEAN_ETA * integer("n_classes", n_classes, 1)


def multiskill_job_sizes_seconds(
    event_rate: float,
    *,
    horizon: float,
    warmup: float,
    instances: int,
    policies: Sequence[str],
    replications: int,
    laws: int,
) -> float:
    """Predicted wall time (s) of the job-size study on ``instances`` instances of
    ``event_rate`` events per unit time (:func:`multiskill_job_sizes_event_rate`):
    ``replications`` replications of ``warmup + horizon`` of every policy (Bernoulli routing,
    the control, always simulated) under each of ``laws`` job-size laws, each event
    :data:`MULTISKILL_JOB_SIZES_SECONDS_PER_EVENT`.

    >>> round(multiskill_job_sizes_seconds(234.0, horizon=4000.0, warmup=50.0, instances=1,
    ...     policies=["jsq", "pi"], replications=10, laws=6), 2)
    25.59
    """
    simulated = len(set(policies) | {"bernoulli"})
    events = event_rate * (horizon + warmup) * instances * simulated * replications
    return int(laws) * events * MULTISKILL_JOB_SIZES_SECONDS_PER_EVENT


# -- Part B ---------------------------------------------------------------------------------
def deadlines_expected_arrival_rate(
    n_clusters: int, servers_range: Sequence[int], rate_range: Sequence[float], load: float
) -> float:
    """Expected arrival rate (jobs per unit time) of the large system with ``n_clusters``
    clusters (:func:`queue_routing.deadlines.experiments.large_instance`): ``load`` times the
    expected capacity ``n E[m] E[mu]``, ``m`` uniform on the integers of ``servers_range`` and
    ``mu`` uniform on ``rate_range``. (A drawn instance of 4 clusters was 45% above it, of 20
    clusters within 5%.)

    >>> deadlines_expected_arrival_rate(20, [1, 4], [0.5, 1.5], 0.9)
    45.0
    """
    mean_m = (int(servers_range[0]) + int(servers_range[1])) / 2.0
    mean_mu = (float(rate_range[0]) + float(rate_range[1])) / 2.0
    return float(load) * int(n_clusters) * mean_m * mean_mu


def deadlines_large_seconds(
    arrival_rate: float,
    n_clusters: int,
    *,
    replications: int,
    horizon: float,
    warmup: float,
    policies: int = 4,
) -> float:
    """Predicted wall time (s) of ``replications`` replications of ``policies`` policies on
    ``n_clusters`` clusters fed at ``arrival_rate`` (jobs per unit time): each replication
    ``arrival_rate * (warmup + horizon)`` arrivals at :data:`DEADLINES_SECONDS_PER_ARRIVAL`
    (``200 ns + 8 ns n``: the index decision scans the clusters), plus the index tables
    (:data:`DEADLINES_INDEX_SECONDS`, built once per job).

    >>> round(deadlines_large_seconds(43.1, 20, replications=10, horizon=2000.0,
    ...     warmup=200.0), 1)
    1.6
    """
    a, b = DEADLINES_SECONDS_PER_ARRIVAL
    arrivals = positive("arrival_rate", arrival_rate) * (float(horizon) + float(warmup))
    tables = DEADLINES_INDEX_SECONDS[0] + DEADLINES_INDEX_SECONDS[1] * n_clusters
    return policies * int(replications) * arrivals * (a + b * n_clusters) + tables


def deadlines_two_cluster_seconds(points: int, truncation: int) -> float:
    """Predicted wall time (s) of ``points`` exact evaluations on two clusters whose
    truncation check starts at level ``truncation``: ``1.5 ms (L/10)^3.3`` per point at the
    level ``L = 1.5^2 truncation`` that the default sweeps mostly settle at
    (:data:`DEADLINES_TWO_CLUSTER_POINT`).

    A point near capacity can need a much higher level (up to 499): its job then outruns
    the prediction and is resubmitted with a longer limit (``retries``).

    >>> round(deadlines_two_cluster_seconds(8, 30), 1)
    6.5
    """
    seconds, exponent, raised = DEADLINES_TWO_CLUSTER_POINT
    level = raised * positive("truncation", truncation)
    return int(points) * seconds * (level / 10.0) ** exponent


# -- Part C ---------------------------------------------------------------------------------
def serverpools_events(r: float, total_arrival_rate: float, length: float) -> float:
    """Expected events (arrivals and departures) of one replication of the r-th system over
    ``length`` time units (the whole simulated time, warm-up included): ``2 r sum(lambda)
    length`` (every arrival departs; measured 1.99-2.00 on both examples).

    >>> serverpools_events(1e4, 2.7, 150.0)
    8100000.0
    """
    return 2.0 * positive("r", r) * positive("total_arrival_rate", total_arrival_rate) * length


def serverpools_run_length(
    example: str, r: float, *, horizon: float, warmup_margin: float
) -> float:
    """Length (time units of 1/mu) of one stationary run of an example at scale r: its derived
    warm-up, ``m / (2 |gamma|)`` (stable) or ``(ln(r) / 2 + m) / gamma`` (unstable), ``m`` =
    ``warmup_margin``, plus the averaging ``horizon`` -- the formula of
    :func:`queue_routing.serverpools.stationarity.derived_warmup` with gamma from
    :data:`SERVERPOOLS_GROWTH_RATES` (tests/test_resources.py checks that they agree).

    >>> round(serverpools_run_length("stable", 1e4, horizon=60.0,
    ...     warmup_margin=math.log(1000)), 3)
    63.454
    """
    gamma = SERVERPOOLS_GROWTH_RATES[example]
    if gamma < 0:
        warmup = warmup_margin / (2.0 * -gamma)
    else:
        warmup = (max(math.log(positive("r", r)), 0.0) / 2.0 + warmup_margin) / gamma
    return warmup + float(horizon)


def serverpools_policy_run_length(
    example: str, policy: str, r: float, *, horizon: float, warmup_margin: float
) -> float:
    """:func:`serverpools_run_length` of a run under ``policy`` (``lqfs-lb``: that function;
    ``lap``, ``static``: gamma from :data:`SERVERPOOLS_POLICY_GROWTH_RATES`, all negative, so
    the warm-up is ``m / (2 |gamma|)``).

    >>> round(serverpools_policy_run_length("large_cycle", "lap", 1e6, horizon=20.0,
    ...     warmup_margin=math.log(1000)), 3)
    20.909
    """
    if policy == "lqfs-lb":
        return serverpools_run_length(example, r, horizon=horizon, warmup_margin=warmup_margin)
    gamma = SERVERPOOLS_POLICY_GROWTH_RATES[example, policy]
    return warmup_margin / (2.0 * -gamma) + float(horizon)


def serverpools_simulation_seconds(
    r: float, total_arrival_rate: float, length: float, replications: int
) -> float:
    """Predicted wall time (s) of ``replications`` replications of the r-th system, each
    ``length`` time units long: :func:`serverpools_events` each at
    :data:`SERVERPOOLS_SECONDS_PER_EVENT`.

    >>> round(serverpools_simulation_seconds(1e6, 2.7, 150.0, 3))
    267
    """
    events = serverpools_events(r, total_arrival_rate, length)
    return int(replications) * events * SERVERPOOLS_SECONDS_PER_EVENT


def serverpools_trace_mb(length: float, record_every: float, replications: int) -> float:
    """Data (MB) of ``replications`` recorded traces of ``length`` time units, a point every
    ``record_every``: :data:`SERVERPOOLS_TRACE_MB_PER_POINT` per point.

    >>> serverpools_trace_mb(80.0, 0.5, 3)
    0.048
    """
    points = length / record_every
    return int(replications) * points * SERVERPOOLS_TRACE_MB_PER_POINT


def serverpools_fluid_limit_mb(t_end: float, record_every: float, replications: int) -> float:
    """Data (MB) of ``replications`` fluid-limit runs on ``[0, t_end]`` recorded every
    ``record_every``: :data:`SERVERPOOLS_FLUID_LIMIT_MB_PER_POINT` per recorded point.

    >>> serverpools_fluid_limit_mb(6.0, 0.05, 4)
    0.48
    """
    return int(replications) * (t_end / record_every) * SERVERPOOLS_FLUID_LIMIT_MB_PER_POINT


def serverpools_search_seconds(
    n_sizes: int, largest: tuple[int, int], samples: int, workers: int = 1
) -> float:
    """Predicted wall time (s) of ``samples`` samples of each of ``n_sizes`` sizes (I, J), none
    larger than ``largest`` = (max I, max J), on ``workers`` processes: at most ``0.4 ms +
    0.02 ms (I + J)`` per sample (:data:`SERVERPOOLS_SECONDS_PER_SAMPLE`: a tree, its A_u and
    two spectra, of sizes I + J - 1 and I), the sizes shared among the workers (one size's
    share is the floor).

    >>> round(serverpools_search_seconds(25, (5, 5), 10000, workers=2))
    75
    """
    a, b = SERVERPOOLS_SECONDS_PER_SAMPLE
    per_size = int(samples) * (a + b * (int(largest[0]) + int(largest[1])))
    n_sizes = int(n_sizes)
    if n_sizes < 1:
        return 0.0
    return per_size * max(n_sizes / max(1, min(int(workers), n_sizes)), 1.0)


def serverpools_search_mb(workers: int) -> float:
    """Data (MB) of a search job on ``workers`` processes: each worker's Python process holds
    about half of :data:`BASE_MEMORY_MB` (the job's own process is in the base).

    >>> serverpools_search_mb(1)
    200.0
    """
    return int(workers) * BASE_MEMORY_MB / 2
