"""The pipeline's job planning: how each heavy rule's work is cut into jobs, and what each job
is predicted to need, as pure functions of the (validated) config.

Seven rules split their work into chunks, one job each (:data:`CHUNKED_RULES`; the ``chunk``
wildcard, :mod:`queue_routing.workflow.chunks`): :func:`chunk_labels` gives the labels of one
rule for one value of its other wildcards, :func:`plan` every chunked rule's jobs, both cut
so that no job works beyond :func:`target_seconds`: the cluster's time limit, and on a local
run of N cores a sixth of a core's share of the run's heavy work (:func:`total_seconds`), so
that the run's length follows its cores (docs/running.md, "Scaling a study"). Every
heavy job's predicted wall time (:func:`job_seconds`) and data (:func:`job_mb`) follow from
its rule, its wildcards and the config through the cost model
:mod:`queue_routing.workflow.resources`; the Snakemake rules request them through the glue
of ``workflow/rules/jobs.smk`` (docs/running.md, "Scaling a study").

Wildcards are given as a mapping of their names to their values (strings, as Snakemake gives
them, or numbers), the ``chunk`` label included where the rule has one. The covariance study
of 100 replications of 1000 time units at r = 2000 (1.19 s each), in jobs of at most a minute
(50 s of work after the start-up):

>>> config = {
...     "scaling": {"target_minutes": 1, "jobs": {"serverpools_covariance": {"replications": 0}}},
...     "serverpools": {
...         "covariance": {"r": 2000, "warmup": 20.0, "horizon": 980.0, "replications": 100}
...     },
... }
>>> chunk_labels("serverpools_covariance", {}, config)
['r0-33', 'r34-66', 'r67-99']
>>> round(job_seconds("serverpools_covariance", {"chunk": "r0-33"}, config), 3)
40.392
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ArgumentError
from . import resources as cost
from .chunks import parse_chunk, plan_chunks

__all__ = [
    "CHUNKED_RULES",
    "LOCAL_JOBS_PER_CORE",
    "MIN_JOB_SECONDS",
    "SERVERPOOLS_SEARCH_THREADS",
    "chunk_labels",
    "heavy_jobs",
    "job_mb",
    "job_seconds",
    "local_cores",
    "multiskill_optimal_cases",
    "multiskill_optimal_classes",
    "multiskill_optimal_round_seconds",
    "multiskill_optimal_round_threads",
    "multiskill_optimal_rounds",
    "plan",
    "slurm_target_seconds",
    "target_seconds",
    "total_seconds",
]

Config = Mapping[str, Any]
Wildcards = Mapping[str, Any]

#: The rules that cut their work into chunks, with their wildcards other than ``chunk`` (the
#: keys of :func:`chunk_labels`'s ``wildcards``).
CHUNKED_RULES = {
    "multiskill_simulate": ("n_classes",),
    "multiskill_simulate_table1": (),
    "multiskill_optimal": ("n_classes",),
    "deadlines_large": ("n",),
    "serverpools_stochastic": ("example", "r"),
    "serverpools_covariance": (),
    "serverpools_search": (),
}
#: Processes of one ``serverpools_search`` job: one, because a job of two threads waits until
#: both cores are free, which on a 2-core machine is the end of the run (measured: it always
#: ran last, priority notwithstanding); a larger search is cut into more chunks instead.
SERVERPOOLS_SEARCH_THREADS = 1
#: Jobs per core a local run's split aims at: no job is predicted to work more than the run's
#: heavy work divided by this times the cores (:func:`target_seconds`).
LOCAL_JOBS_PER_CORE = 6
#: The default of ``scaling.min_job_seconds``: the shortest predicted work (s) a split for the
#: cores cuts a job down to, one start-up (:data:`~.resources.JOB_OVERHEAD_SECONDS`), so that
#: a job spends at least half its time on its work.
MIN_JOB_SECONDS = cost.JOB_OVERHEAD_SECONDS


def slurm_target_seconds(config: Config) -> float:
    """The predicted work (s) one job of a derived split may be given on a cluster:
    ``scaling.target_minutes`` less the job's start-up
    (:data:`~.resources.JOB_OVERHEAD_SECONDS`), at least 1 s.

    >>> slurm_target_seconds({"scaling": {"target_minutes": 10}})
    590.0
    """
    minutes = config["scaling"]["target_minutes"]
    return max(60.0 * minutes - cost.JOB_OVERHEAD_SECONDS, 1.0)


def local_cores(config: Config, cores: int | None = None) -> int | None:
    """The cores the split is made for: ``scaling.cores`` when positive (a fixed split,
    whatever runs it), else ``cores`` (Snakemake's ``--cores`` of a local run; ``None`` on a
    cluster, where only the time limit splits).

    >>> local_cores({"scaling": {"cores": 0}}, 16), local_cores({"scaling": {"cores": 4}}, 16)
    (16, 4)
    >>> local_cores({"scaling": {}}) is None
    True
    """
    configured = int(config["scaling"].get("cores", 0))
    if configured > 0:
        return configured
    if cores is None:
        return None
    if int(cores) < 1:
        raise ArgumentError("cores", f"cores must be >= 1 or None, got {cores!r}")
    return int(cores)


def target_seconds(config: Config, cores: int | None = None) -> float:
    """The predicted work (s) one job of a derived split may be given: at most
    :func:`slurm_target_seconds`, and on N cores (:func:`local_cores`) at most the heavy work
    (:func:`total_seconds`) divided by :data:`LOCAL_JOBS_PER_CORE` N, but not below
    ``scaling.min_job_seconds`` (a shorter job would spend its time starting up).

    Why a sixth: list scheduling of independent jobs ends within one job's length of the
    ideal W / N (Graham 1969; :mod:`.schedule`), so jobs of at most W / (6 N) end the run at
    most a sixth beyond it, while the start-ups the cut adds stay few (docs/running.md,
    "Scaling a study").

    >>> target_seconds({"scaling": {"target_minutes": 10, "cores": 0}})  # on a cluster
    590.0
    """
    slurm = slurm_target_seconds(config)
    n = local_cores(config, cores)
    if n is None:
        return slurm
    floor = float(config["scaling"].get("min_job_seconds", MIN_JOB_SECONDS))
    local = max(total_seconds(config) / (LOCAL_JOBS_PER_CORE * n), floor)
    return min(slurm, local)


def _labels(
    config: Config,
    target: float | None,
    rule: str,
    n_items: int | None,
    n_replications: int,
    unit_seconds: float | list[float],
    items_key: str | None = None,
    reps_key: str = "replications",
) -> list[str]:
    """Labels of the chunks of ``rule``'s work: ``n_items`` (None: one item) times
    ``n_replications``, each unit (one replication of one item) predicted to take
    ``unit_seconds``; block sizes from ``scaling.jobs.<rule>`` (0: derived from ``target``,
    s). ``target`` None: the whole study as one chunk, whatever the sizes."""
    if target is None:
        whole = plan_chunks(n_items, n_replications, unit_seconds=0.0, target_seconds=1.0)
        return [c.label() for c in whole]
    sizes = config["scaling"]["jobs"][rule]
    chunks = plan_chunks(
        n_items,
        n_replications,
        unit_seconds=unit_seconds,
        target_seconds=target,
        items_per_job=sizes[items_key] if items_key else 0,
        replications_per_job=sizes.get(reps_key, 0),
    )
    return [c.label() for c in chunks]


# -- Part A --------------------------------------------------------------------------------
def _ms_sizes(config: Config) -> list[int]:
    """The numbers of classes C of the random instances (``multiskill.sizes``)."""
    sizes = config["multiskill"]["sizes"]
    return list(range(sizes["first"], sizes["last"] + 1, sizes["step"]))


def _ms_runs(config: Config) -> int:
    """Algorithm 1 runs per instance: every update rule from every initial partition, the
    random one ``random_initial_partitions`` times."""
    fp = config["multiskill"]["fixed_point"]
    partitions = fp["initial_partitions"]
    return len(fp["update_rules"]) * (
        len(partitions)
        - ("random" in partitions)
        + ("random" in partitions) * fp["random_initial_partitions"]
    )


def _ms_unit(config: Config, event_rate: float, horizon: float) -> float:
    """Predicted time (s) of one replication of every policy on one instance."""
    sim = config["multiskill"]["simulation"]
    return cost.multiskill_simulation_seconds(
        event_rate,
        policies=sim["policies"],
        replications=1,
        horizon=horizon,
        warmup=sim["warmup"],
    )


def _ms_simulate_unit(config: Config, n_classes: Any) -> float:
    rate = cost.multiskill_event_rate(int(n_classes))
    return _ms_unit(config, rate, config["multiskill"]["simulation"]["horizon"])


def _ms_table1_units(config: Config) -> list[float]:
    """Predicted time (s) of one replication on Table 1 at each load factor."""
    sim = config["multiskill"]["simulation"]
    rates = [cost.table1_event_rate(f) for f in sim["table1_load_factors"]]
    return [_ms_unit(config, rate, sim["table1_horizon"]) for rate in rates]


def _ms_simulate_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    ms = config["multiskill"]
    unit = _ms_simulate_unit(config, w["n_classes"])
    reps = ms["simulation"]["replications"]
    return _labels(
        config, target, "multiskill_simulate", ms["instances_per_size"], reps, unit, "instances"
    )


def _ms_table1_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    sim = config["multiskill"]["simulation"]
    return _labels(
        config,
        target,
        "multiskill_simulate_table1",
        len(sim["table1_load_factors"]),
        sim["replications"],
        _ms_table1_units(config),
        "load_factors",
    )


def _ms_simulate_seconds(config: Config, w: Wildcards) -> float:
    return parse_chunk(w["chunk"]).size * _ms_simulate_unit(config, w["n_classes"])


def _ms_table1_seconds(config: Config, w: Wildcards) -> float:
    chunk = parse_chunk(w["chunk"])
    units = _ms_table1_units(config)
    return len(chunk.replications) * sum([units[k] for k in chunk.items])


def _ms_solve_seconds(config: Config, w: Wildcards) -> float:
    n = int(w["n_classes"])
    instances = config["multiskill"]["instances_per_size"]
    return cost.multiskill_solve_seconds(instances, n, _ms_runs(config))


def _ms_compare_seconds(config: Config, w: Wildcards) -> float:
    n = int(w["n_classes"])
    return cost.multiskill_compare_seconds(config["multiskill"]["instances_per_size"], n)


def _ms_job_sizes_seconds(config: Config, w: Wildcards) -> float:
    """One sample of the job-size study: Table 1, or the random instances."""
    js = config["multiskill"]["job_sizes"]
    if w["sample"] == "table1":
        rate = cost.multiskill_job_sizes_event_rate()
        horizon, count = js["table1_horizon"], 1
    else:
        rate = cost.multiskill_job_sizes_event_rate(js["random_n_classes"])
        horizon, count = js["random_horizon"], js["random_instances"]
    return cost.multiskill_job_sizes_seconds(
        rate,
        horizon=horizon,
        warmup=js["warmup"],
        instances=count,
        policies=js["policies"],
        replications=js["replications"],
        laws=len(js["laws"]),
    )


def multiskill_optimal_cases(config: Config, n_classes: Any) -> list[tuple[str, float]]:
    """The cases ``(kind, load)`` of the optimal-routing study with ``n_classes`` classes, in
    the study's order (every template of ``c<C>_kinds`` at every load of ``c<C>_loads``): the
    items of the rule ``multiskill_optimal``'s chunks.

    >>> opt = {"c2_kinds": ["symmetric-2", "costs-2"], "c2_loads": [0.5, 0.9]}
    >>> multiskill_optimal_cases({"multiskill": {"optimal": opt}}, 2)
    [('symmetric-2', 0.5), ('symmetric-2', 0.9), ('costs-2', 0.5), ('costs-2', 0.9)]
    """
    opt = config["multiskill"]["optimal"]
    n = int(n_classes)
    return [(kind, float(load)) for kind in opt[f"c{n}_kinds"] for load in opt[f"c{n}_loads"]]


def _ms_optimal_units(config: Config, n_classes: Any) -> list[float]:
    """Predicted time (s) of each case of the optimal-routing study with ``n_classes``."""
    n = int(n_classes)
    return [
        cost.multiskill_optimal_seconds(n, [load], 1)
        for _, load in multiskill_optimal_cases(config, n)
    ]


def _ms_optimal_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    units = _ms_optimal_units(config, w["n_classes"])
    return _labels(config, target, "multiskill_optimal", len(units), 1, units, "cases")


def multiskill_optimal_rounds(config: Config, w: Wildcards) -> int:
    """The rounds (jobs of the checkpoint ``multiskill_optimal_round``) predicted for the
    optimal-routing study's chunk ``w["chunk"]`` (at C = ``w["n_classes"]``): none for a
    chunk whose predicted work fits a round (:func:`multiskill_optimal_round_seconds`, a
    cluster job's target), whose own job does it; for a single case beyond it, one round per
    round's worth of its predicted work. A round advances the case for its wall time and
    saves it (``multiskill.optimal_study.optimal_case_round``); the rounds go on, one more
    at a time, until one has done the case, so a case longer than predicted takes more
    rounds, none of them longer; the chunk's job then only writes its rows. Any cut gives
    the same rows.

    >>> opt = {"c2_kinds": ["table1-2"], "c2_loads": [0.5, 0.95]}
    >>> config = {"multiskill": {"optimal": opt}, "scaling": {"target_minutes": 15}}
    >>> [multiskill_optimal_rounds(config, {"n_classes": 2, "chunk": c})
    ...  for c in ("i0-0_r0-0", "i1-1_r0-0")]
    [0, 29]
    """
    work = _ms_optimal_work(config, w)
    per_round = multiskill_optimal_round_seconds(config)
    if len(parse_chunk(w["chunk"]).items) != 1 or work <= per_round:
        return 0
    return math.ceil(work / per_round)


def _ms_optimal_work(config: Config, w: Wildcards) -> float:
    """The predicted work (s) of the chunk's cases: its templates at their loads."""
    units = _ms_optimal_units(config, w["n_classes"])
    return sum(units[k] for k in parse_chunk(w["chunk"]).items)


def multiskill_optimal_round_seconds(config: Config) -> float:
    """The wall time (s) of one round of a long case of the optimal-routing study:
    ``scaling.jobs.multiskill_optimal.round_seconds``, or (0) :func:`slurm_target_seconds`.

    >>> multiskill_optimal_round_seconds({"scaling": {"target_minutes": 15, "jobs": {}}})
    890.0
    """
    jobs = config["scaling"].get("jobs", {}).get("multiskill_optimal", {})
    return float(jobs.get("round_seconds", 0)) or slurm_target_seconds(config)


def multiskill_optimal_round_threads(config: Config) -> int:
    """The threads of one round of a long case of the optimal-routing study:
    ``scaling.jobs.multiskill_optimal.round_threads`` (the value iteration's rows run in
    parallel, with the same result to the bit; Snakemake gives a job at most its cores).

    >>> multiskill_optimal_round_threads({"scaling": {"jobs": {}}})
    1
    """
    jobs = config["scaling"].get("jobs", {}).get("multiskill_optimal", {})
    return int(jobs.get("round_threads", 1))


def _ms_optimal_seconds(config: Config, w: Wildcards) -> float:
    """The optimal-routing study's cases of the chunk; none for a long case, whose rounds do
    the work (:func:`multiskill_optimal_rounds`)."""
    return 0.0 if multiskill_optimal_rounds(config, w) else _ms_optimal_work(config, w)


def _ms_optimal_round_seconds(config: Config, w: Wildcards) -> float:
    """A round of a long case of the optimal-routing study: its wall time, the rest of the
    predicted work for the last predicted round."""
    per_round = multiskill_optimal_round_seconds(config)
    r, n = int(w["round"]), multiskill_optimal_rounds(config, w)
    if r == n - 1:
        return _ms_optimal_work(config, w) - r * per_round
    return per_round


def _ms_optimal_mb(config: Config, w: Wildcards) -> float:
    """The largest case of the chunk (:func:`~.resources.multiskill_optimal_mb`)."""
    cases = multiskill_optimal_cases(config, w["n_classes"])
    rtol = config["multiskill"]["optimal"]["rtol"]
    n = int(w["n_classes"])
    loads = [cases[k][1] for k in parse_chunk(w["chunk"]).items]
    return max(cost.multiskill_optimal_mb(n, load, rtol) for load in loads)


def _ms_optimal_round_jobs(config: Config, chunks: list[dict[str, str]]) -> list[dict[str, str]]:
    """The predicted rounds of the optimal-routing study's chunks ``chunks`` (jobs of the rule
    ``multiskill_optimal``), in order: ``{n_classes, chunk, round}``."""
    return [
        {**job, "round": str(r)}
        for job in chunks
        for r in range(multiskill_optimal_rounds(config, job))
    ]


def _ms_optimal_switching_seconds(config: Config, w: Wildcards) -> float:
    """The switching curve: one C = 2 optimum at its load."""
    sw = config["multiskill"]["optimal"]["switching"]
    return cost.multiskill_optimal_seconds(2, [sw["load"]], 1)


# -- Part B --------------------------------------------------------------------------------
def _dl_large_unit(config: Config, n: Any) -> float:
    """Predicted time (s) of one replication of the policies (PI and the configured ones) on
    n clusters, the index tables included."""
    large = config["deadlines"]["large"]
    n = int(n)
    rate = cost.deadlines_expected_arrival_rate(
        n, large["servers_range"], large["rate_range"], large["load"]
    )
    return cost.deadlines_large_seconds(
        rate,
        n,
        replications=1,
        horizon=large["horizon"],
        warmup=large["warmup"],
        policies=len(set(large["policies"]) | {"pi"}),
    )


def _dl_large_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    unit = _dl_large_unit(config, w["n"])
    reps = config["deadlines"]["large"]["replications"]
    return _labels(config, target, "deadlines_large", None, reps, unit)


def _dl_large_seconds(config: Config, w: Wildcards) -> float:
    return len(parse_chunk(w["chunk"]).replications) * _dl_large_unit(config, w["n"])


def _dl_two_cluster_seconds(config: Config, w: Wildcards) -> float:
    """One two-cluster sweep: its points (``distribution`` is crossed with the arrival
    rates, docs/deadlines.md)."""
    sweeps = config["deadlines"]["sweeps"]
    crossed = ["distribution", "arrival_rate"] if w["sweep"] == "distribution" else [w["sweep"]]
    points = math.prod(len(sweeps[key]) for key in crossed)
    return cost.deadlines_two_cluster_seconds(points, config["deadlines"]["exact"]["truncation"])


def _dl_three_cluster_seconds(config: Config, w: Wildcards) -> float:
    return cost.DEADLINES_THREE_CLUSTER_SECONDS


# -- Part C --------------------------------------------------------------------------------
def _sp_length(config: Config, example: str, r: Any) -> float:
    """One stationary run's simulated time: the derived warm-up plus the horizon."""
    st = config["serverpools"]["stochastic"]
    return cost.serverpools_run_length(
        example, int(r), horizon=st["horizon"], warmup_margin=st["warmup_margin"]
    )


def _sp_stochastic_unit(config: Config, example: str, r: Any) -> float:
    """Predicted time (s) of one replication of an example at scale r."""
    rate = cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES[example]
    return cost.serverpools_simulation_seconds(int(r), rate, _sp_length(config, example, r), 1)


def _sp_stochastic_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    unit = _sp_stochastic_unit(config, w["example"], w["r"])
    reps = config["serverpools"]["stochastic"]["replications"]
    return _labels(config, target, "serverpools_stochastic", None, reps, unit)


def _sp_stochastic_seconds(config: Config, w: Wildcards) -> float:
    reps = len(parse_chunk(w["chunk"]).replications)
    return reps * _sp_stochastic_unit(config, w["example"], w["r"])


def _sp_stochastic_mb(config: Config, w: Wildcards) -> float:
    """The chunk's recorded traces."""
    length = _sp_length(config, w["example"], w["r"])
    record_every = config["serverpools"]["stochastic"]["record_every"]
    reps = len(parse_chunk(w["chunk"]).replications)
    return cost.serverpools_trace_mb(length, record_every, reps)


def _sp_lap_seconds(config: Config, w: Wildcards) -> float:
    """All replications of one discipline at one scale (the what-to-do-instead study)."""
    lap = config["serverpools"]["lap"]
    length = cost.serverpools_policy_run_length(
        w["example"],
        w["policy"],
        int(w["r"]),
        horizon=lap["horizon"][w["policy"]],
        warmup_margin=config["serverpools"]["stochastic"]["warmup_margin"],
    )
    rate = cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES[w["example"]]
    return cost.serverpools_simulation_seconds(int(w["r"]), rate, length, lap["replications"])


def _sp_covariance_unit(config: Config) -> float:
    """One replication of the stable example: warm-up plus horizon."""
    c = config["serverpools"]["covariance"]
    rate = cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES["stable"]
    return cost.serverpools_simulation_seconds(c["r"], rate, c["warmup"] + c["horizon"], 1)


def _sp_covariance_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    reps = config["serverpools"]["covariance"]["replications"]
    return _labels(
        config, target, "serverpools_covariance", None, reps, _sp_covariance_unit(config)
    )


def _sp_covariance_seconds(config: Config, w: Wildcards) -> float:
    return len(parse_chunk(w["chunk"]).replications) * _sp_covariance_unit(config)


def _sp_search_largest(config: Config) -> tuple[int, int]:
    """The largest size (I, J) of the search: every I <= max_classes, J <= max_pools (their
    order is :func:`queue_routing.serverpools.experiments.search_sizes`; a chunk's items index
    it)."""
    search = config["serverpools"]["search"]
    return search["max_classes"], search["max_pools"]


def _sp_search_chunks(config: Config, w: Wildcards, target: float | None) -> list[str]:
    largest = _sp_search_largest(config)
    unit = cost.serverpools_search_seconds(1, largest, 1) / SERVERPOOLS_SEARCH_THREADS
    return _labels(
        config,
        target,
        "serverpools_search",
        largest[0] * largest[1],
        config["serverpools"]["search"]["samples_per_size"],
        unit,
        items_key="sizes",
        reps_key="samples",
    )


def _sp_search_seconds(config: Config, w: Wildcards) -> float:
    chunk = parse_chunk(w["chunk"])
    return cost.serverpools_search_seconds(
        chunk.n_items,
        _sp_search_largest(config),
        len(chunk.replications),
        workers=SERVERPOOLS_SEARCH_THREADS,
    )


def _sp_search_mb(config: Config, w: Wildcards) -> float:
    return cost.serverpools_search_mb(SERVERPOOLS_SEARCH_THREADS)


def _sp_fluid_limit_seconds(config: Config, w: Wildcards) -> float:
    """One example at one r: its replications on [0, t_end] (the settled start's queues add
    little: the run starts on the fluid scale)."""
    f = config["serverpools"]["fluid_limit"]
    rate = cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES[w["example"]]
    return cost.serverpools_simulation_seconds(int(w["r"]), rate, f["t_end"], f["replications"])


def _sp_fluid_limit_mb(config: Config, w: Wildcards) -> float:
    """The recorded grids, the run's and the finer fluid solution's."""
    f = config["serverpools"]["fluid_limit"]
    return cost.serverpools_fluid_limit_mb(f["t_end"], f["record_every"], f["replications"])


# -- the tables of the public functions -------------------------------------------------------
_CHUNKS: dict[str, Callable[[Config, Wildcards, float | None], list[str]]] = {
    "multiskill_simulate": _ms_simulate_chunks,
    "multiskill_simulate_table1": _ms_table1_chunks,
    "multiskill_optimal": _ms_optimal_chunks,
    "deadlines_large": _dl_large_chunks,
    "serverpools_stochastic": _sp_stochastic_chunks,
    "serverpools_covariance": _sp_covariance_chunks,
    "serverpools_search": _sp_search_chunks,
}
_SECONDS: dict[str, Callable[[Config, Wildcards], float]] = {
    "multiskill_solve": _ms_solve_seconds,
    "multiskill_compare": _ms_compare_seconds,
    "multiskill_simulate": _ms_simulate_seconds,
    "multiskill_simulate_table1": _ms_table1_seconds,
    "multiskill_job_sizes": _ms_job_sizes_seconds,
    "multiskill_optimal": _ms_optimal_seconds,
    "multiskill_optimal_round": _ms_optimal_round_seconds,
    "multiskill_optimal_switching": _ms_optimal_switching_seconds,
    "deadlines_two_cluster": _dl_two_cluster_seconds,
    "deadlines_large": _dl_large_seconds,
    "deadlines_three_cluster": _dl_three_cluster_seconds,
    "serverpools_search": _sp_search_seconds,
    "serverpools_stochastic": _sp_stochastic_seconds,
    "serverpools_covariance": _sp_covariance_seconds,
    "serverpools_fluid_limit": _sp_fluid_limit_seconds,
    "serverpools_lap": _sp_lap_seconds,
}
_MB: dict[str, Callable[[Config, Wildcards], float]] = {
    "multiskill_optimal": _ms_optimal_mb,
    "multiskill_optimal_round": _ms_optimal_mb,
    "serverpools_search": _sp_search_mb,
    "serverpools_stochastic": _sp_stochastic_mb,
    "serverpools_fluid_limit": _sp_fluid_limit_mb,
}


def _rule(rule: str, table: Mapping[str, Any], what: str) -> Any:
    if rule not in table:
        raise ArgumentError("rule", f"rule must be {what} ({', '.join(table)}), got {rule!r}")
    return table[rule]


def chunk_labels(
    rule: str, wildcards: Wildcards, config: Config, cores: int | None = None
) -> list[str]:
    """The chunk labels of ``rule`` (one of :data:`CHUNKED_RULES`) for the values of its other
    wildcards in ``wildcards`` (e.g. ``{"n_classes": 200}``; ``{}`` for a rule without), in
    order: items, then replications.

    The split follows ``scaling.jobs.<rule>`` (block sizes; 0: the fewest jobs whose
    predicted time fits :func:`target_seconds` for ``cores``, :func:`~.chunks.plan_chunks`)
    and the predicted time of one replication of one item. Any split gives the same tables:
    a chunk computes its replications with the streams the whole study would use.
    """
    return _rule(rule, _CHUNKS, "a chunked rule")(config, wildcards, target_seconds(config, cores))


def multiskill_optimal_classes(config: Config) -> list[int]:
    """The numbers of classes of the optimal-routing study: those with templates and loads.

    >>> opt = {"c2_kinds": ["symmetric-2"], "c2_loads": [0.5], "c3_kinds": [], "c3_loads": [0.5]}
    >>> multiskill_optimal_classes({"multiskill": {"optimal": opt}})
    [2]
    """
    opt = config["multiskill"]["optimal"]
    return [n for n in (2, 3) if opt[f"c{n}_kinds"] and opt[f"c{n}_loads"]]


def _chunked_groups(config: Config) -> dict[str, list[dict[str, str]]]:
    """Each chunked rule's values of its wildcards other than ``chunk``, in the rules' order."""
    st = config["serverpools"]["stochastic"]
    return {
        "multiskill_simulate": [{"n_classes": str(n)} for n in _ms_sizes(config)],
        "multiskill_simulate_table1": [{}],
        "multiskill_optimal": [{"n_classes": str(n)} for n in multiskill_optimal_classes(config)],
        "deadlines_large": [{"n": str(int(n))} for n in config["deadlines"]["large"]["clusters"]],
        "serverpools_stochastic": [
            {"example": example, "r": str(int(r))} for example in st["examples"] for r in st["r"]
        ],
        "serverpools_covariance": [{}],
        "serverpools_search": [{}],
    }


def plan(config: Config, cores: int | None = None) -> dict[str, list[dict[str, str]]]:
    """Every job of every chunked rule, split for ``cores`` (:func:`target_seconds`): by rule
    (:data:`CHUNKED_RULES`), the wildcards of its jobs as strings, as Snakemake gives them
    (``chunk`` last), in the order the rules list them (Part A by C, Part B by n, Part C by
    example then r).
    """
    target = target_seconds(config, cores)
    return {
        rule: [
            {**group, "chunk": label}
            for group in groups
            for label in _CHUNKS[rule](config, group, target)
        ]
        for rule, groups in _chunked_groups(config).items()
    }


def _lap_jobs(config: Config) -> list[dict[str, str]]:
    """The what-to-do-instead study's jobs: LAP at every example and r, static routing up to
    ``static_r_max``, LQFS-LB where the stationary study has no run to reuse."""
    lap = config["serverpools"]["lap"]
    st = config["serverpools"]["stochastic"]
    reused = {(example, int(r)) for example in st["examples"] for r in st["r"]}
    return [
        {"example": example, "policy": policy, "r": str(int(r))}
        for example, scales in lap["r"].items()
        for r in scales
        for policy in ("lqfs-lb", "lap", "static")
        if policy == "lap"
        or (policy == "static" and int(r) <= lap["static_r_max"])
        or (policy == "lqfs-lb" and (example, int(r)) not in reused)
    ]


def _unchunked_jobs(config: Config) -> dict[str, list[dict[str, str]]]:
    """The jobs of the heavy rules that do not chunk their work, by rule: the rules' own
    lists in ``workflow/rules/*.smk`` (tests/test_plan.py compares them with a dry run's)."""
    ms, sp = config["multiskill"], config["serverpools"]
    sizes = [{"n_classes": str(n)} for n in _ms_sizes(config)]
    samples = ["table1"] + (["random"] if ms["job_sizes"]["random_instances"] > 0 else [])
    two = ["arrival_rate", "rejection_cost", "mean_deadline", "distribution", "pure_routing"]
    three = ["load", "rejection_cost", "distribution", "pure_routing"]
    examples = sp["stochastic"]["examples"]
    return {
        "multiskill_solve": sizes,
        "multiskill_compare": sizes,
        "multiskill_job_sizes": [{"sample": s} for s in samples],
        "multiskill_optimal_switching": [{}],
        "deadlines_two_cluster": [{"sweep": s} for s in two],
        "deadlines_three_cluster": [{"tcsweep": s} for s in three],
        "serverpools_fluid_limit": [
            {"example": e, "r": str(int(r))} for e in examples for r in sp["fluid_limit"]["r"]
        ],
        "serverpools_lap": _lap_jobs(config),
    }


def heavy_jobs(config: Config, cores: int | None = None) -> dict[str, list[dict[str, str]]]:
    """Every job of every heavy rule (the rules of :func:`job_seconds`), by rule in that
    order, the wildcards as strings; the chunked rules' jobs as :func:`plan` splits them for
    ``cores``.
    """
    planned = plan(config, cores)
    rounds = _ms_optimal_round_jobs(config, planned["multiskill_optimal"])
    jobs = {**_unchunked_jobs(config), **planned, "multiskill_optimal_round": rounds}
    return {rule: jobs[rule] for rule in _SECONDS}


def total_seconds(config: Config) -> float:
    """The predicted work (s) of every heavy job of a run, start-ups excluded: the same for
    every split (each chunked rule's study counted as one chunk). The small jobs (tables,
    figures, a few seconds each) are left out.
    """
    total = 0.0
    for rule, groups in _chunked_groups(config).items():
        for group in groups:
            (whole,) = _CHUNKS[rule](config, group, None)
            job = {**group, "chunk": whole}
            if rule == "multiskill_optimal":  # its cases, whether in rounds or not
                total += _ms_optimal_work(config, job)
            else:
                total += job_seconds(rule, job, config)
    for rule, jobs in _unchunked_jobs(config).items():
        total += sum(job_seconds(rule, job, config) for job in jobs)
    return total


def job_seconds(rule: str, wildcards: Wildcards, config: Config) -> float:
    """Predicted wall time (s) of the job of ``rule`` with ``wildcards``, start-up excluded
    (the cost model :mod:`queue_routing.workflow.resources`; the requests add the start-up,
    the safety factor and the attempt: :func:`~.resources.runtime_minutes`).

    A rule whose work the config hardly changes is not here: its jobs are predicted at
    :func:`~queue_routing.workflow.resources.small_job_seconds`.
    """
    return _rule(rule, _SECONDS, "a heavy rule")(config, wildcards)


def job_mb(rule: str, wildcards: Wildcards, config: Config) -> float:
    """Predicted data (MB) of the job of ``rule`` with ``wildcards`` beyond the job's base
    memory (:func:`~queue_routing.workflow.resources.memory_mb`): Part C's recorded traces,
    fluid grids and search workers; 0 for the other heavy rules."""
    _rule(rule, _SECONDS, "a heavy rule")
    return _MB[rule](config, wildcards) if rule in _MB else 0.0
