# Part B -- Nino-Mora (2012), admission and routing of soft real-time jobs to multiclusters.
# The paper's numerical study (Sec. 6) is missing from our source: the study is ours
# (docs/deadlines.md#numerical-study).
# Outputs under results/deadlines/<rule>/, figures under config["figures_dir"].

# Rules pass what their job reads, one config value at a time (lookup), and a sweep's job only
# its own lists (sweep_values), so that editing a key no job reads reruns nothing.

from queue_routing.deadlines.instances import sweep_values

DL = config["deadlines"]
DL_SWEEPS = [
    "arrival_rate",
    "rejection_cost",
    "mean_deadline",
    "distribution",
    "pure_routing",
]
DL_FIG_SWEEPS = ["distribution", "rejection_cost", "mean_deadline", "pure_routing"]
DL_SIZES = [int(n) for n in DL["large"]["clusters"]]
# Files of user policies (path/to/file.py:name) among the large systems' policies: inputs of
# their simulations, so editing one reruns them (docs/your-own-policy.md).
DL_POLICY_FILES = sorted(
    {p.rpartition(":")[0] for p in DL["large"]["policies"] if ":" in p}
)


wildcard_constraints:
    sweep=r"arrival_rate|rejection_cost|mean_deadline|distribution|pure_routing",
    n=r"\d+",


# Cheap aggregation, instance drawing and plotting run on the submitting host even under
# a cluster executor; every other rule declares threads and requests the runtime (min) and
# mem_mb that the cost model predicts for its job's work (common.smk: job_resources).
localrules:
    deadlines_gap_table,
    deadlines_large_instances,
    deadlines_large_table,
    deadlines_fig_gap,
    deadlines_fig_indices,
    deadlines_fig_large,
    deadlines_all,


rule deadlines_two_cluster:
    output:
        table="results/deadlines/deadlines_two_cluster/{sweep}.csv",
    log:
        "logs/deadlines/deadlines_two_cluster/{sweep}.log",
    # long jobs first: the short ones fill the cores around them (a shorter run)
    priority: 2
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(dl_two_cluster_seconds),
    params:
        servers=lookup(dpath="deadlines/base/servers", within=config),
        service_rates=lookup(dpath="deadlines/base/service_rates", within=config),
        arrival_rate=lookup(dpath="deadlines/base/arrival_rate", within=config),
        rejection_cost=lookup(dpath="deadlines/base/rejection_cost", within=config),
        deadline=lookup(dpath="deadlines/base/deadline", within=config),
        mean_deadline=lookup(dpath="deadlines/base/mean_deadline", within=config),
        uniform_spread=lookup(dpath="deadlines/base/uniform_spread", within=config),
        # only the lists its sweep reads (distribution is crossed with the arrival rates)
        sweeps=lambda wildcards: sweep_values(
            DL["sweeps"], wildcards.sweep, rate="arrival_rate"
        ),
        truncation=lookup(dpath="deadlines/exact/truncation", within=config),
        tol=lookup(dpath="deadlines/exact/tol", within=config),
    message:
        "Part B: exact costs of BS, IO, PI, RB and the optimal cost along the {wildcards.sweep} sweep ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/deadlines_two_cluster.py"


rule deadlines_gap_table:
    input:
        sweeps=expand(rules.deadlines_two_cluster.output.table, sweep=DL_SWEEPS),
    output:
        table=report_table(
            "results/deadlines/deadlines_gap_table/gaps.csv",
            "deadlines_gap_table",
            "gaps to the optimal policy",
        ),
        markdown="results/deadlines/deadlines_gap_table/gaps.md",
    log:
        "logs/deadlines/deadlines_gap_table.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part B: mean and max suboptimality gap per policy and sweep"
    script:
        "../scripts/deadlines_gap_table.py"


rule deadlines_indices:
    output:
        table="results/deadlines/deadlines_indices/indices.csv",
    log:
        "logs/deadlines/deadlines_indices.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        servers=lookup(dpath="deadlines/base/servers", within=config),
        service_rates=lookup(dpath="deadlines/base/service_rates", within=config),
        arrival_rate=lookup(dpath="deadlines/base/arrival_rate", within=config),
        rejection_cost=lookup(dpath="deadlines/base/rejection_cost", within=config),
        deadline=lookup(dpath="deadlines/base/deadline", within=config),
        mean_deadline=lookup(dpath="deadlines/base/mean_deadline", within=config),
        uniform_spread=lookup(dpath="deadlines/base/uniform_spread", within=config),
        upto=lookup(dpath="deadlines/indices/upto", within=config),
    message:
        "Part B: index functions IO, PI, RB of the base two-cluster instance ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/deadlines_indices.py"


rule deadlines_large_instances:
    output:
        instance="results/deadlines/deadlines_large_instances/n{n}.json",
    log:
        "logs/deadlines/deadlines_large_instances/n{n}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        seed=config["seed"],
        servers_range=lookup(dpath="deadlines/large/servers_range", within=config),
        rate_range=lookup(dpath="deadlines/large/rate_range", within=config),
        load=lookup(dpath="deadlines/large/load", within=config),
        rejection_cost=lookup(dpath="deadlines/base/rejection_cost", within=config),
        deadline=lookup(dpath="deadlines/base/deadline", within=config),
        mean_deadline=lookup(dpath="deadlines/base/mean_deadline", within=config),
        uniform_spread=lookup(dpath="deadlines/base/uniform_spread", within=config),
    message:
        "Part B: drawing the {wildcards.n} random clusters of the large-system study"
    script:
        "../scripts/deadlines_large_instances.py"


rule deadlines_large:
    input:
        instance=rules.deadlines_large_instances.output.instance,
        policy_files=DL_POLICY_FILES,
    output:
        replications="results/deadlines/deadlines_large/n{n}/{chunk}.csv",
    log:
        "logs/deadlines/deadlines_large/n{n}/{chunk}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(dl_large_seconds),
    # not the number of replications: a chunk's label gives its replications, so that more
    # replications add jobs, not rerun them
    params:
        seed=config["seed"],
        table_size=lookup(dpath="deadlines/large/table_size", within=config),
        horizon=lookup(dpath="deadlines/large/horizon", within=config),
        warmup=lookup(dpath="deadlines/large/warmup", within=config),
        policies=lookup(dpath="deadlines/large/policies", within=config),
    message:
        "Part B: simulating the policies on {wildcards.n} random clusters, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/deadlines_large.py"


rule deadlines_large_table:
    input:
        replications=[
            f"results/deadlines/deadlines_large/n{n}/{label}.csv"
            for n in DL_SIZES
            for label in dl_large_chunks(n)
        ],
        instances=expand(rules.deadlines_large_instances.output.instance, n=DL_SIZES),
    output:
        table=report_table(
            "results/deadlines/deadlines_large_table/large.csv",
            "deadlines_large_table",
            "large systems by simulation",
        ),
        markdown="results/deadlines/deadlines_large_table/large.md",
    log:
        "logs/deadlines/deadlines_large_table.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        seed=config["seed"],
        table_size=lookup(dpath="deadlines/large/table_size", within=config),
        horizon=lookup(dpath="deadlines/large/horizon", within=config),
        warmup=lookup(dpath="deadlines/large/warmup", within=config),
        policies=lookup(dpath="deadlines/large/policies", within=config),
    message:
        "Part B: paired comparisons, relative to PI, for every number of clusters"
    script:
        "../scripts/deadlines_large_table.py"


rule deadlines_fig_gap:
    input:
        table=rules.deadlines_two_cluster.output.table,
    output:
        **figure("deadlines_gap_{sweep}"),
    log:
        "logs/deadlines/deadlines_fig_gap_{sweep}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="gap_figure",
        sweep=lambda wildcards: wildcards.sweep,
    message:
        "Part B: suboptimality gap along the {wildcards.sweep} sweep"
    script:
        "../scripts/deadlines_figures.py"


rule deadlines_fig_indices:
    input:
        table=rules.deadlines_indices.output.table,
    output:
        **figure("deadlines_indices"),
    log:
        "logs/deadlines/deadlines_fig_indices.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="index_figure",
    message:
        "Part B: index functions against the number of jobs"
    script:
        "../scripts/deadlines_figures.py"


rule deadlines_fig_large:
    input:
        table=rules.deadlines_large_table.output.table,
    output:
        **figure("deadlines_large"),
    log:
        "logs/deadlines/deadlines_fig_large.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="large_figure",
    message:
        "Part B: simulated cost relative to PI against the number of clusters"
    script:
        "../scripts/deadlines_figures.py"


# -- three clusters: the exact optimum against the heuristics, side by side with two --------
DL3 = DL["three_cluster"]
DL3_SWEEPS = ["load", "rejection_cost", "distribution", "pure_routing"]


localrules:
    deadlines_three_cluster_table,
    deadlines_fig_three_cluster,


rule deadlines_three_cluster:
    output:
        table="results/deadlines/deadlines_three_cluster/{tcsweep}.csv",
    log:
        "logs/deadlines/deadlines_three_cluster/{tcsweep}.log",
    wildcard_constraints:
        tcsweep=r"load|rejection_cost|distribution|pure_routing",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(dl_three_cluster_seconds),
    params:
        servers=lookup(dpath="deadlines/three_cluster/servers", within=config),
        service_rates=lookup(
            dpath="deadlines/three_cluster/service_rates", within=config
        ),
        load=lookup(dpath="deadlines/three_cluster/load", within=config),
        rejection_cost=lookup(
            dpath="deadlines/three_cluster/rejection_cost", within=config
        ),
        deadline=lookup(dpath="deadlines/three_cluster/deadline", within=config),
        mean_deadline=lookup(
            dpath="deadlines/three_cluster/mean_deadline", within=config
        ),
        uniform_spread=lookup(
            dpath="deadlines/three_cluster/uniform_spread", within=config
        ),
        sweeps=lambda wildcards: sweep_values(
            DL3["sweeps"], wildcards.tcsweep, rate="load"
        ),
        truncation=lookup(dpath="deadlines/three_cluster/truncation", within=config),
        tol=lookup(dpath="deadlines/three_cluster/tol", within=config),
        clusters=[2, 3],
    message:
        "Part B: exact optimum of three clusters and of the matched two, against BS, IO, PI, RB, along the {wildcards.tcsweep} sweep ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/deadlines_three_cluster.py"


rule deadlines_three_cluster_table:
    input:
        sweeps=expand(rules.deadlines_three_cluster.output.table, tcsweep=DL3_SWEEPS),
    output:
        table=report_table(
            "results/deadlines/deadlines_three_cluster_table/gaps.csv",
            "deadlines_three_cluster_table",
            "three clusters: gaps to the optimum",
        ),
        markdown="results/deadlines/deadlines_three_cluster_table/gaps.md",
    log:
        "logs/deadlines/deadlines_three_cluster_table.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        clusters=[2, 3],
    message:
        "Part B: mean and max gap per policy and sweep, two and three clusters side by side"
    script:
        "../scripts/deadlines_three_cluster_table.py"


rule deadlines_fig_three_cluster:
    input:
        sweeps=expand(rules.deadlines_three_cluster.output.table, tcsweep=DL3_SWEEPS),
    output:
        **figure("deadlines_three_cluster"),
    log:
        "logs/deadlines/deadlines_fig_three_cluster.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="three_cluster_figure",
    message:
        "Part B: gaps to the optimum of two and three clusters along every sweep"
    script:
        "../scripts/deadlines_figures.py"


rule deadlines_all:
    input:
        rules.deadlines_gap_table.output,
        rules.deadlines_indices.output,
        rules.deadlines_large_table.output,
        expand(rules.deadlines_fig_gap.output, sweep=DL_FIG_SWEEPS),
        rules.deadlines_fig_indices.output,
        rules.deadlines_fig_large.output,
        rules.deadlines_three_cluster_table.output,
        rules.deadlines_fig_three_cluster.output,
