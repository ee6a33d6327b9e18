# Jobs of the heavy rules (README, "Scaling a study"): how each rule's work is split into
# chunks (the `chunk` wildcard, queue_routing.workflow.chunks) and what each job requests, from the
# cost model queue_routing.workflow.resources. Functions only (the rules are in the parts' files).
import math

from queue_routing.workflow import resources as cost
from queue_routing.workflow.chunks import parse_chunk, plan_chunks

SCALING = config["scaling"]
RETRIES = SCALING["retries"]


def chunk_labels(
    rule_name,
    n_items,
    n_replications,
    unit_seconds,
    items_key=None,
    reps_key="replications",
):
    """Labels of the chunks of ``rule_name``'s work: ``n_items`` (None: one item) times
    ``n_replications``, each unit (one replication of one item) predicted to take
    ``unit_seconds``; block sizes from ``scaling.jobs.<rule_name>`` (0: derived from
    ``scaling.target_minutes``, start-up excluded)."""
    sizes = SCALING["jobs"][rule_name]
    target = max(60.0 * SCALING["target_minutes"] - cost.JOB_OVERHEAD_SECONDS, 1.0)
    chunks = plan_chunks(
        n_items,
        n_replications,
        unit_seconds=unit_seconds,
        target_seconds=target,
        items_per_job=sizes[items_key] if items_key else 0,
        replications_per_job=sizes[reps_key],
    )
    return [c.label() for c in chunks]


def job_resources(seconds, data_mb=lambda wildcards: 0.0):
    """``runtime`` (minutes) and ``mem_mb`` of a heavy rule whose job is predicted to work
    ``seconds(wildcards)`` s and hold ``data_mb(wildcards)`` MB, scaled by the attempt.
    """
    safety = SCALING["safety_factor"]
    return {
        "runtime": lambda wildcards, attempt: cost.runtime_minutes(
            seconds(wildcards), attempt=attempt, safety_factor=safety
        ),
        "mem_mb": lambda wildcards, attempt: cost.memory_mb(
            data_mb(wildcards), attempt=attempt, safety_factor=safety
        ),
    }


def small_job_resources():
    """Requests of a heavy rule whose work the config hardly changes (cost.small_job_seconds)."""
    return job_resources(lambda wildcards: cost.small_job_seconds())


# -- Part A --------------------------------------------------------------------------------
_MS = config["multiskill"]
_MS_SIM = _MS["simulation"]
_MS_FP = _MS["fixed_point"]
#: Algorithm 1 runs per instance (every update rule from every initial partition).
_MS_RUNS = len(_MS_FP["update_rules"]) * (
    len(_MS_FP["initial_partitions"])
    - ("random" in _MS_FP["initial_partitions"])
    + ("random" in _MS_FP["initial_partitions"]) * _MS_FP["random_initial_partitions"]
)


def ms_unit_seconds(event_rate, horizon):
    """Predicted time (s) of one replication of every policy on one instance."""
    return cost.multiskill_simulation_seconds(
        event_rate,
        policies=_MS_SIM["policies"],
        replications=1,
        horizon=horizon,
        warmup=_MS_SIM["warmup"],
    )


def ms_chunks(n_classes):
    """Chunk labels of the simulations of the C = n_classes instances."""
    unit = ms_unit_seconds(cost.multiskill_event_rate(n_classes), _MS_SIM["horizon"])
    return chunk_labels(
        "multiskill_simulate",
        _MS["instances_per_size"],
        _MS_SIM["replications"],
        unit,
        items_key="instances",
    )


def ms_table1_rates():
    return [cost.table1_event_rate(f) for f in _MS_SIM["table1_load_factors"]]


def ms_table1_chunks():
    """Chunk labels of the simulations of Table 1's load sweep (items: load factors)."""
    units = [
        ms_unit_seconds(rate, _MS_SIM["table1_horizon"]) for rate in ms_table1_rates()
    ]
    return chunk_labels(
        "multiskill_simulate_table1",
        len(_MS_SIM["table1_load_factors"]),
        _MS_SIM["replications"],
        units,
        items_key="load_factors",
    )


def ms_simulate_seconds(wildcards):
    chunk = parse_chunk(wildcards.chunk)
    rate = cost.multiskill_event_rate(int(wildcards.n_classes))
    return chunk.size * ms_unit_seconds(rate, _MS_SIM["horizon"])


def ms_table1_seconds(wildcards):
    chunk = parse_chunk(wildcards.chunk)
    rates = ms_table1_rates()
    horizon = _MS_SIM["table1_horizon"]
    per_item = [ms_unit_seconds(rates[k], horizon) for k in chunk.items]
    return len(chunk.replications) * sum(per_item)


def ms_solve_seconds(wildcards):
    n = int(wildcards.n_classes)
    return cost.multiskill_solve_seconds(_MS["instances_per_size"], n, _MS_RUNS)


def ms_compare_seconds(wildcards):
    n = int(wildcards.n_classes)
    return cost.multiskill_compare_seconds(_MS["instances_per_size"], n)


#: Wall time per simulated event of the job-size study (s; measured on the development
#: machine at ~1.1e-7 for the event-driven simulator on Table 1, rounded up).
_MS_JS_SECONDS_PER_EVENT = 1.5e-7


def ms_job_sizes_seconds(wildcards):
    """Predicted time (s) of one sample's job-size study: events = 2 sum(eta) per unit time."""
    js = _MS["job_sizes"]
    if wildcards.sample == "table1":
        rate, horizon, count = 2 * 117.0, js["table1_horizon"], 1
    else:
        rate = 2 * 10.5 * js["random_n_classes"]
        horizon, count = js["random_horizon"], js["random_instances"]
    simulated = len(set(js["policies"]) | {"bernoulli"})
    events = rate * (horizon + js["warmup"]) * count * simulated * js["replications"]
    return len(js["laws"]) * events * _MS_JS_SECONDS_PER_EVENT


# -- Part B --------------------------------------------------------------------------------
_DL = config["deadlines"]
_DL_LARGE = _DL["large"]


def dl_large_seconds_per_replication(n):
    """Predicted time (s) of one replication of the policies (PI and the configured ones,
    four by default) on n clusters."""
    rate = cost.deadlines_expected_arrival_rate(
        n, _DL_LARGE["servers_range"], _DL_LARGE["rate_range"], _DL_LARGE["load"]
    )
    return cost.deadlines_large_seconds(
        rate,
        n,
        replications=1,
        horizon=_DL_LARGE["horizon"],
        warmup=_DL_LARGE["warmup"],
        policies=len(set(_DL_LARGE["policies"]) | {"pi"}),
    )


def dl_large_chunks(n):
    """Chunk labels (replication blocks) of the large system with n clusters."""
    unit = dl_large_seconds_per_replication(n)
    return chunk_labels("deadlines_large", None, _DL_LARGE["replications"], unit)


def dl_large_seconds(wildcards):
    chunk = parse_chunk(wildcards.chunk)
    return len(chunk.replications) * dl_large_seconds_per_replication(int(wildcards.n))


def dl_two_cluster_seconds(wildcards):
    # the sweep's values (distribution is crossed with the arrival rates)
    points = math.prod(len(v) for v in deadlines_sweep_values(wildcards).values())
    return cost.deadlines_two_cluster_seconds(points, _DL["exact"]["truncation"])


# -- Part C --------------------------------------------------------------------------------
_SP = config["serverpools"]
_SP_STOCHASTIC = _SP["stochastic"]
_SP_COVARIANCE = _SP["covariance"]
_SP_SEARCH = _SP["search"]
#: The search's sizes (I, J): every I <= max_classes, J <= max_pools (their order is
#: queue_routing.serverpools.experiments.search_sizes; a chunk's items index it).
_SP_LARGEST = (_SP_SEARCH["max_classes"], _SP_SEARCH["max_pools"])
_SP_N_SIZES = _SP_LARGEST[0] * _SP_LARGEST[1]
#: One process per search job: a job of two threads waits until both cores are free, which
#: on a 2-core machine is the end of the run (measured: it always ran last, priority
#: notwithstanding); a larger search is cut into more chunks instead.
SP_SEARCH_THREADS = 1
#: Total arrival rate sum(lambda) of each example per unit r (its events per unit time are
#: about 2 r sum(lambda), queue_routing.workflow.resources.serverpools_events).
_SP_ARRIVAL_RATE = cost.SERVERPOOLS_TOTAL_ARRIVAL_RATES


def sp_stochastic_length(example, r):
    """One stationary run's length: the derived burn-in plus the window (time units)."""
    return cost.serverpools_run_length(
        example,
        r,
        window=_SP_STOCHASTIC["window"],
        margin=_SP_STOCHASTIC["burn_in_margin"],
    )


def sp_stochastic_unit(example, r):
    """Predicted time (s) of one replication of an example at scale r."""
    return cost.serverpools_simulation_seconds(
        r, _SP_ARRIVAL_RATE[example], sp_stochastic_length(example, r), 1
    )


def sp_stochastic_chunks(example, r):
    """Chunk labels (replication blocks) of one example at one scale r."""
    unit = sp_stochastic_unit(example, r)
    return chunk_labels(
        "serverpools_stochastic", None, _SP_STOCHASTIC["replications"], unit
    )


def sp_stochastic_outputs(kind):
    """Every chunk's trace or summary, by example, r, then replication block."""
    return [
        f"results/serverpools/serverpools_stochastic/{ex}_r{r}/{label}_{kind}.csv"
        for ex in _SP_STOCHASTIC["examples"]
        for r in [int(r) for r in _SP_STOCHASTIC["r"]]
        for label in sp_stochastic_chunks(ex, r)
    ]


def sp_stochastic_seconds(wildcards):
    chunk = parse_chunk(wildcards.chunk)
    return len(chunk.replications) * sp_stochastic_unit(
        wildcards.example, int(wildcards.r)
    )


def sp_stochastic_mb(wildcards):
    # the recorded trace: (length / record_every) points of about 100 bytes per replication
    length = sp_stochastic_length(wildcards.example, int(wildcards.r))
    points = length / _SP_STOCHASTIC["record_every"]
    return len(parse_chunk(wildcards.chunk).replications) * points * 1e-4


def sp_covariance_unit():
    c = _SP_COVARIANCE
    return cost.serverpools_simulation_seconds(
        c["r"], _SP_ARRIVAL_RATE["stable"], c["t_end"], 1
    )


def sp_covariance_chunks():
    unit = sp_covariance_unit()
    return chunk_labels(
        "serverpools_covariance", None, _SP_COVARIANCE["replications"], unit
    )


def sp_covariance_seconds(wildcards):
    return len(parse_chunk(wildcards.chunk).replications) * sp_covariance_unit()


def sp_search_chunks():
    """Chunk labels of the search: blocks of sizes (items) times blocks of samples."""
    unit = cost.serverpools_search_seconds(1, _SP_LARGEST, 1) / SP_SEARCH_THREADS
    return chunk_labels(
        "serverpools_search",
        _SP_N_SIZES,
        _SP_SEARCH["samples_per_size"],
        unit,
        items_key="sizes",
        reps_key="samples",
    )


def sp_search_seconds(wildcards):
    chunk = parse_chunk(wildcards.chunk)
    samples = len(chunk.replications)
    return cost.serverpools_search_seconds(
        chunk.n_items, _SP_LARGEST, samples, workers=SP_SEARCH_THREADS
    )


def sp_search_mb(wildcards):
    # one Python process per worker, each about the size of the job's own
    return SP_SEARCH_THREADS * cost.BASE_MEMORY_MB / 2


def sp_fluid_limit_seconds(wildcards):
    """One example at one r: its replications on [0, t_end] (the settled start's queues
    add little: the run starts on the fluid scale)."""
    f = _SP["fluid_limit"]
    return cost.serverpools_simulation_seconds(
        int(wildcards.r),
        _SP_ARRIVAL_RATE[wildcards.example],
        f["t_end"],
        f["replications"],
    )


def sp_fluid_limit_mb(wildcards):
    # the recorded grids, the run's and the finer fluid solution's (a few MB)
    f = _SP["fluid_limit"]
    return f["replications"] * (f["t_end"] / f["record_every"]) * 1e-3
