# Jobs of the heavy rules (docs/running.md, "Scaling a study"): the names the parts' rules call, glue to
# the planning library queue_routing.workflow.plan (the chunks of each rule, each job's
# predicted seconds and MB, tested in tests/test_plan.py) and to the requests of the cost
# model queue_routing.workflow.resources.
import json

from queue_routing.workflow import plan
from queue_routing.workflow import resources as cost

# parse_chunk: the rules read their chunk's items from its label
from queue_routing.workflow.chunks import parse_chunk

SCALING = config["scaling"]
RETRIES = SCALING["retries"]
SP_SEARCH_THREADS = plan.SERVERPOOLS_SEARCH_THREADS
# The cores the chunks are cut for (queue_routing.workflow.plan.target_seconds): a local run's
# --cores in the main Snakemake process; None on a cluster (the time limit alone splits) and
# in a cluster job's own process, which must see its run's split. scaling.cores > 0 wins.
LOCAL_CORES = (
    workflow.resource_settings.cores
    if workflow.is_main_process and workflow.local_exec
    else None
)
JOBS = plan.plan(config, LOCAL_CORES)  # every chunked rule's jobs (their wildcards)


def job_resources(seconds, data_mb=lambda wildcards: 0.0):
    """``runtime`` (minutes) and ``mem_mb`` of a heavy rule whose job is predicted to work
    ``seconds(wildcards)`` s and hold ``data_mb(wildcards)`` MB, scaled by the attempt;
    ``seconds`` may be the rule's name instead: the plan's predictions of its jobs."""
    if isinstance(seconds, str):
        data_mb = predicted(plan.job_mb, seconds)
        seconds = predicted(plan.job_seconds, seconds)
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
    """Requests of a heavy rule whose work the config hardly changes."""
    return job_resources(lambda wildcards: cost.small_job_seconds())


def predicted(function, rule):
    """``function`` (plan.job_seconds or plan.job_mb) of ``rule``'s job, given its wildcards."""
    return lambda wildcards: function(rule, dict(wildcards.items()), config)


def chunks(rule, **wildcards):
    """Chunk labels of ``rule`` for the values of its other wildcards."""
    return plan.chunk_labels(rule, wildcards, config, LOCAL_CORES)


ms_solve_seconds = predicted(plan.job_seconds, "multiskill_solve")
ms_compare_seconds = predicted(plan.job_seconds, "multiskill_compare")
ms_simulate_seconds = predicted(plan.job_seconds, "multiskill_simulate")
ms_table1_seconds = predicted(plan.job_seconds, "multiskill_simulate_table1")
ms_job_sizes_seconds = predicted(plan.job_seconds, "multiskill_job_sizes")
dl_two_cluster_seconds = predicted(plan.job_seconds, "deadlines_two_cluster")
dl_large_seconds = predicted(plan.job_seconds, "deadlines_large")
dl_three_cluster_seconds = predicted(plan.job_seconds, "deadlines_three_cluster")
sp_search_seconds = predicted(plan.job_seconds, "serverpools_search")
sp_search_mb = predicted(plan.job_mb, "serverpools_search")
sp_stochastic_seconds = predicted(plan.job_seconds, "serverpools_stochastic")
sp_stochastic_mb = predicted(plan.job_mb, "serverpools_stochastic")
sp_covariance_seconds = predicted(plan.job_seconds, "serverpools_covariance")
sp_fluid_limit_seconds = predicted(plan.job_seconds, "serverpools_fluid_limit")
sp_fluid_limit_mb = predicted(plan.job_mb, "serverpools_fluid_limit")


def ms_chunks(n_classes):
    return chunks("multiskill_simulate", n_classes=n_classes)


def ms_table1_chunks():
    return chunks("multiskill_simulate_table1")


def ms_optimal_chunks(n_classes):
    return chunks("multiskill_optimal", n_classes=n_classes)


def ms_optimal_cases(n_classes, chunk):
    """The cases [kind, load] of the optimal-routing study's chunk ``chunk`` at C = n_classes."""
    cases = plan.multiskill_optimal_cases(config, n_classes)
    return [list(cases[k]) for k in parse_chunk(chunk).items]


def ms_optimal_round_files(n_classes, chunk, round):
    """The search and evaluations a round of a long case of the optimal study writes."""
    base = (
        f"results/multiskill/multiskill_optimal_round/C{n_classes}/{chunk}/round{round}"
    )
    return {"search": f"{base}.npz", "evaluations": f"{base}.json"}


def ms_optimal_previous_round(wildcards):
    """A round's input: the round before it (none for the first)."""
    r = int(wildcards.round)
    if r == 0:
        return {}
    return ms_optimal_round_files(wildcards.n_classes, wildcards.chunk, r - 1)


def ms_optimal_last_round(wildcards):
    """A chunk's input: none for a chunk of cases that fit its job; for a long case, its
    rounds one after the other (checkpoints: how many is known only as they end) up to the
    one that says the case is done."""
    if plan.multiskill_optimal_rounds(config, dict(wildcards.items())) == 0:
        return {}
    r = 0
    while True:
        out = checkpoints.multiskill_optimal_round.get(
            **dict(wildcards.items()), round=str(r)
        ).output
        with open(out.evaluations) as f:
            if json.load(f)["done"]:
                return ms_optimal_round_files(wildcards.n_classes, wildcards.chunk, r)
        r += 1


def dl_large_chunks(n):
    return chunks("deadlines_large", n=n)


def sp_covariance_chunks():
    return chunks("serverpools_covariance")


def sp_search_chunks():
    return chunks("serverpools_search")


def sp_stochastic_outputs(kind):
    """Every chunk's trace or summary, by example, r, then replication block."""
    return [
        f"results/serverpools/serverpools_stochastic/{j['example']}_r{j['r']}/{j['chunk']}_{kind}.csv"
        for j in JOBS["serverpools_stochastic"]
    ]
