# Part C -- Stolyar & Yudovina (2013), large flexible server pools under LQFS-LB.
# The paper has no numerical examples or figures: the instances and figures are ours.
# Outputs under results/serverpools/<rule>/, figures under config["figures_dir"].

SP = config["serverpools"]
SP_EXAMPLES = ["stable", "unstable", "large_cycle"]
# The stochastic study (stationary time averages, fluid limit): the stable control and the
# unstable example chosen to show the sqrt(r) regime (docs/serverpools.md).
SP_STOCHASTIC_EXAMPLES = list(SP["stochastic"]["examples"])
SP_R = [int(r) for r in SP["stochastic"]["r"]]  # the schema allows 1.0e+3
SP_STOCHASTIC = SP["stochastic"]
SP_COVARIANCE = SP["covariance"]
SP_SEARCH = SP["search"]
SP_FLUID_LIMIT_R = [int(r) for r in SP["fluid_limit"]["r"]]
# What to do instead: LAP and static routing at every example and r of SP["lap"]["r"], and
# LQFS-LB where the stochastic study has no run of that example and r (its runs are reused).
SP_LAP = SP["lap"]
SP_LAP_JOBS = [
    (example, policy, int(r))
    for example, scales in SP_LAP["r"].items()
    for r in scales
    for policy in ("lqfs-lb", "lap", "static")
    if (policy == "lap")
    or (policy == "static" and int(r) <= SP_LAP["static_r_max"])
    or (
        policy == "lqfs-lb"
        and not (example in SP_STOCHASTIC_EXAMPLES and int(r) in SP_R)
    )
]


wildcard_constraints:
    example=r"stable|unstable|large_cycle",
    r=r"\d+",


# Cheap aggregation, instance drawing and plotting run on the submitting host even under
# a cluster executor; every other rule declares threads and requests the runtime (min) and
# mem_mb that the cost model predicts for its job's work (common.smk: job_resources).
localrules:
    serverpools_search_summary,
    serverpools_covariance_table,
    serverpools_stochastic_summary,
    serverpools_fluid_limit_summary,
    serverpools_table,
    serverpools_fig_tree,
    serverpools_fig_boundary,
    serverpools_fig_fluid,
    serverpools_fig_deviation,
    serverpools_fig_time_average,
    serverpools_fig_fluid_limit,
    serverpools_lap_summary,
    serverpools_fig_lap,
    serverpools_all,


rule serverpools_search:
    output:
        chunk="results/serverpools/serverpools_search/{chunk}.json",
    log:
        "logs/serverpools/serverpools_search/{chunk}.log",
    # long jobs first: the short ones fill the cores around them (a shorter run)
    priority: 3
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: SP_SEARCH_THREADS
    resources:
        **job_resources(sp_search_seconds, sp_search_mb),
    # the search's settings, but not the number of samples (the chunk's label gives its sizes
    # and samples): a change of samples_per_size reruns only the chunks it changes
    params:
        seed=config["seed"],
        max_classes=SP_SEARCH["max_classes"],
        max_pools=SP_SEARCH["max_pools"],
        mu_range=SP_SEARCH["mu_range"],
        flow_range=SP_SEARCH["flow_range"],
        rho=SP_SEARCH["rho"],
        tol=SP_SEARCH["tol"],
    message:
        "Part C: seeded search over random activity trees for unstable equilibria, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_search.py"


rule serverpools_search_summary:
    input:
        chunks=expand(rules.serverpools_search.output.chunk, chunk=sp_search_chunks()),
    output:
        summary="results/serverpools/serverpools_search_summary/summary.csv",
        markdown="results/serverpools/serverpools_search_summary/summary.md",
        search="results/serverpools/serverpools_search_summary/search.json",
    log:
        "logs/serverpools/serverpools_search_summary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        seed=config["seed"],
        max_classes=SP_SEARCH["max_classes"],
        max_pools=SP_SEARCH["max_pools"],
        samples_per_size=SP_SEARCH["samples_per_size"],
        mu_range=SP_SEARCH["mu_range"],
        flow_range=SP_SEARCH["flow_range"],
        rho=SP_SEARCH["rho"],
        tol=SP_SEARCH["tol"],
    message:
        "Part C: instability search summary over every size, from its chunks"
    script:
        "../scripts/serverpools_search_summary.py"


rule serverpools_examples:
    output:
        rows="results/serverpools/serverpools_examples/examples.csv",
        stable="results/serverpools/serverpools_examples/stable.json",
        unstable="results/serverpools/serverpools_examples/unstable.json",
        large_cycle="results/serverpools/serverpools_examples/large_cycle.json",
    log:
        "logs/serverpools/serverpools_examples.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    message:
        "Part C: SPP solution, duals and spectra of A_u and A_c of the example instances ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_examples.py"


rule serverpools_boundary:
    output:
        scan="results/serverpools/serverpools_boundary/scan.csv",
        crossings="results/serverpools/serverpools_boundary/crossings.csv",
    log:
        "logs/serverpools/serverpools_boundary.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        base=SP["boundary"]["base"],
        theta_min=SP["boundary"]["theta_min"],
        theta_max=SP["boundary"]["theta_max"],
        points=SP["boundary"]["points"],
        xtol=SP["boundary"]["xtol"],
    message:
        "Part C: largest real part of the spectra over the heterogeneity family, and its zero ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_boundary.py"


rule serverpools_fluid:
    output:
        trajectory="results/serverpools/serverpools_fluid/{example}.csv",
    log:
        "logs/serverpools/serverpools_fluid/{example}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        seed=config["seed"],
        perturbation=lambda wildcards: SP["fluid"][wildcards.example]["perturbation"],
        t_end=lambda wildcards: SP["fluid"][wildcards.example]["t_end"],
        points=lambda wildcards: SP["fluid"][wildcards.example]["points"],
    message:
        "Part C: fluid trajectory of the {wildcards.example} example from a perturbed equilibrium ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_fluid.py"


rule serverpools_stochastic:
    output:
        trace="results/serverpools/serverpools_stochastic/{example}_r{r}/{chunk}_trace.csv",
        summary="results/serverpools/serverpools_stochastic/{example}_r{r}/{chunk}_summary.csv",
    log:
        "logs/serverpools/serverpools_stochastic/{example}_r{r}/{chunk}.log",
    # long jobs first: the short ones fill the cores around them (a shorter run)
    priority: 3
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(sp_stochastic_seconds, sp_stochastic_mb),
    params:
        seed=config["seed"],
        horizon=SP_STOCHASTIC["horizon"],
        warmup_margin=SP_STOCHASTIC["warmup_margin"],
        batches=SP_STOCHASTIC["batches"],
        record_every=SP_STOCHASTIC["record_every"],
    message:
        "Part C: simulating the {wildcards.example} example at scale r={wildcards.r}, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_stochastic.py"


rule serverpools_stochastic_summary:
    input:
        traces=sp_stochastic_outputs("trace"),
        summaries=sp_stochastic_outputs("summary"),
    output:
        traces="results/serverpools/serverpools_stochastic_summary/traces.csv",
        runs="results/serverpools/serverpools_stochastic_summary/runs.csv",
        averages=report_table(
            "results/serverpools/serverpools_stochastic_summary/time_averages.csv",
            "serverpools_time_averages",
            "time-averaged deviation vs r",
        ),
        verdicts="results/serverpools/serverpools_stochastic_summary/verdicts.csv",
        markdown="results/serverpools/serverpools_stochastic_summary/time_averages.md",
    log:
        "logs/serverpools/serverpools_stochastic_summary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        stationarity_confidence=SP_STOCHASTIC["stationarity_confidence"],
        confidence=SP_STOCHASTIC["confidence"],
        fit_decades=SP_STOCHASTIC["fit_decades"],
    message:
        "Part C: stationarity tests, time averages against r and the slope-interval verdicts"
    script:
        "../scripts/serverpools_stochastic_summary.py"


rule serverpools_fluid_limit:
    output:
        rows="results/serverpools/serverpools_fluid_limit/{example}_r{r}.csv",
    log:
        "logs/serverpools/serverpools_fluid_limit/{example}_r{r}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(sp_fluid_limit_seconds, sp_fluid_limit_mb),
    params:
        seed=config["seed"],
        t_end=SP["fluid_limit"]["t_end"],
        record_every=SP["fluid_limit"]["record_every"],
        replications=SP["fluid_limit"]["replications"],
        max_step=SP["fluid_limit"]["max_step"],
        perturbation=lambda wildcards: SP["fluid_limit"]["start"][wildcards.example][
            "perturbation"
        ],
        settle=lambda wildcards: SP["fluid_limit"]["start"][wildcards.example]["settle"],
    message:
        "Part C: fluid-limit distance of the {wildcards.example} example at r={wildcards.r} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_fluid_limit.py"


rule serverpools_fluid_limit_summary:
    input:
        rows=expand(
            rules.serverpools_fluid_limit.output.rows,
            example=SP_STOCHASTIC_EXAMPLES,
            r=SP_FLUID_LIMIT_R,
        ),
    output:
        runs="results/serverpools/serverpools_fluid_limit_summary/runs.csv",
        table=report_table(
            "results/serverpools/serverpools_fluid_limit_summary/distances.csv",
            "serverpools_fluid_limit",
            "fluid-limit distance vs r",
        ),
        slopes="results/serverpools/serverpools_fluid_limit_summary/slopes.csv",
        markdown="results/serverpools/serverpools_fluid_limit_summary/distances.md",
    log:
        "logs/serverpools/serverpools_fluid_limit_summary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        confidence=SP_STOCHASTIC["confidence"],
    message:
        "Part C: fluid-limit distances against r and their slopes"
    script:
        "../scripts/serverpools_fluid_limit_summary.py"


rule serverpools_table:
    input:
        rows=rules.serverpools_examples.output.rows,
        verdicts=rules.serverpools_stochastic_summary.output.verdicts,
    output:
        table=report_table(
            "results/serverpools/serverpools_table/examples.csv",
            "serverpools_table",
            "example instances",
        ),
        markdown="results/serverpools/serverpools_table/examples.md",
    log:
        "logs/serverpools/serverpools_table.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part C: table of the example instances with their simulation verdicts"
    script:
        "../scripts/serverpools_table.py"


rule serverpools_covariance:
    output:
        runs="results/serverpools/serverpools_covariance/{chunk}.csv",
    log:
        "logs/serverpools/serverpools_covariance/{chunk}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(sp_covariance_seconds),
    # not the number of replications (the chunk's label gives them)
    params:
        seed=config["seed"],
        r=SP_COVARIANCE["r"],
        horizon=SP_COVARIANCE["horizon"],
        warmup=SP_COVARIANCE["warmup"],
    message:
        "Part C: simulating the stable example's stationary covariance, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_covariance.py"


rule serverpools_covariance_table:
    input:
        runs=expand(
            rules.serverpools_covariance.output.runs, chunk=sp_covariance_chunks()
        ),
    output:
        table=report_table(
            "results/serverpools/serverpools_covariance_table/covariance.csv",
            "serverpools_covariance",
            "covariance vs Lyapunov",
        ),
        markdown="results/serverpools/serverpools_covariance_table/covariance.md",
    log:
        "logs/serverpools/serverpools_covariance_table.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        r=SP_COVARIANCE["r"],
        replications=SP_COVARIANCE["replications"],
    message:
        "Part C: simulated stationary covariance of the stable example vs the Lyapunov solution"
    script:
        "../scripts/serverpools_covariance_table.py"


rule serverpools_fig_tree:
    input:
        rows=rules.serverpools_examples.output.rows,
        instance=lambda wildcards: getattr(
            rules.serverpools_examples.output, wildcards.example
        ),
    output:
        **figure("serverpools_tree_{example}"),
    log:
        "logs/serverpools/serverpools_fig_tree_{example}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="tree",
    message:
        "Part C: activity tree of the {wildcards.example} example"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_boundary:
    input:
        scan=rules.serverpools_boundary.output.scan,
        crossings=rules.serverpools_boundary.output.crossings,
    output:
        **figure("serverpools_boundary"),
    log:
        "logs/serverpools/serverpools_fig_boundary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="boundary",
    message:
        "Part C: stability boundary of the linearised fluid model"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_fluid:
    input:
        trajectories=expand(
            rules.serverpools_fluid.output.trajectory, example=SP_EXAMPLES
        ),
    output:
        **figure("serverpools_fluid"),
    log:
        "logs/serverpools/serverpools_fig_fluid.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fluid",
    message:
        "Part C: fluid trajectories, stable vs unstable example"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_deviation:
    input:
        traces=rules.serverpools_stochastic_summary.output.traces,
        averages=rules.serverpools_stochastic_summary.output.averages,
    output:
        **figure("serverpools_deviation"),
    log:
        "logs/serverpools/serverpools_fig_deviation.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="deviation",
    message:
        "Part C: diffusion-scaled deviation against time at several r"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_time_average:
    input:
        averages=rules.serverpools_stochastic_summary.output.averages,
        verdicts=rules.serverpools_stochastic_summary.output.verdicts,
        trajectories=expand(
            rules.serverpools_fluid.output.trajectory, example=SP_STOCHASTIC_EXAMPLES
        ),
    output:
        **figure("serverpools_time_average"),
    log:
        "logs/serverpools/serverpools_fig_time_average.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="time_average",
        tail_fraction=SP["fluid"]["tail_fraction"],
    message:
        "Part C: stationary time-averaged deviation against r (tight vs escaping)"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_fluid_limit:
    input:
        table=rules.serverpools_fluid_limit_summary.output.table,
        slopes=rules.serverpools_fluid_limit_summary.output.slopes,
    output:
        **figure("serverpools_fluid_limit"),
    log:
        "logs/serverpools/serverpools_fig_fluid_limit.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fluid_limit",
    message:
        "Part C: sup-distance of X^r/r from the fluid solution against r"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_lap:
    output:
        runs="results/serverpools/serverpools_lap/{example}_{policy}_r{r}.csv",
    log:
        "logs/serverpools/serverpools_lap/{example}_{policy}_r{r}.log",
    wildcard_constraints:
        policy=r"lqfs-lb|lap|static",
    # long jobs first: the short ones fill the cores around them (a shorter run)
    priority: 3
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources("serverpools_lap"),
    params:
        seed=config["seed"],
        horizon=lambda wildcards: SP_LAP["horizon"][wildcards.policy],
        warmup_margin=SP_STOCHASTIC["warmup_margin"],
        replications=SP_LAP["replications"],
        batches=SP_LAP["batches"],
    message:
        "Part C: the {wildcards.example} example under {wildcards.policy} at scale r={wildcards.r} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/serverpools_lap.py"


rule serverpools_lap_summary:
    input:
        runs=[
            f"results/serverpools/serverpools_lap/{example}_{policy}_r{r}.csv"
            for example, policy, r in SP_LAP_JOBS
        ],
        stochastic=rules.serverpools_stochastic_summary.output.runs,
    output:
        runs="results/serverpools/serverpools_lap_summary/runs.csv",
        averages=report_table(
            "results/serverpools/serverpools_lap_summary/time_averages.csv",
            "serverpools_lap_time_averages",
            "LQFS-LB, LAP, static routing: time-averaged deviation vs r",
        ),
        averages_md="results/serverpools/serverpools_lap_summary/time_averages.md",
        verdicts="results/serverpools/serverpools_lap_summary/verdicts.csv",
        verdicts_md="results/serverpools/serverpools_lap_summary/verdicts.md",
        ou=report_table(
            "results/serverpools/serverpools_lap_summary/ou.csv",
            "serverpools_lap_ou",
            "LAP vs its OU limit",
        ),
        ou_md="results/serverpools/serverpools_lap_summary/ou.md",
        price=report_table(
            "results/serverpools/serverpools_lap_summary/price.csv",
            "serverpools_lap_price",
            "price of stability",
        ),
        price_md="results/serverpools/serverpools_lap_summary/price.md",
    log:
        "logs/serverpools/serverpools_lap_summary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        r=SP_LAP["r"],
        stationarity_confidence=SP_STOCHASTIC["stationarity_confidence"],
        confidence=SP_STOCHASTIC["confidence"],
        fit_decades=SP_STOCHASTIC["fit_decades"],
    message:
        "Part C: LQFS-LB, LAP and static routing side by side: slopes, OU level, price of stability"
    script:
        "../scripts/serverpools_lap_summary.py"


rule serverpools_fig_lap:
    input:
        averages=rules.serverpools_lap_summary.output.averages,
        verdicts=rules.serverpools_lap_summary.output.verdicts,
        ou=rules.serverpools_lap_summary.output.ou,
        price=rules.serverpools_lap_summary.output.price,
    output:
        **figure("serverpools_lap"),
    log:
        "logs/serverpools/serverpools_fig_lap.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part C: what to do instead, LQFS-LB vs LAP vs static routing"
    script:
        "../scripts/serverpools_lap_figure.py"


rule serverpools_all:
    input:
        rules.serverpools_search_summary.output,
        rules.serverpools_examples.output,
        rules.serverpools_boundary.output,
        rules.serverpools_stochastic_summary.output,
        rules.serverpools_fluid_limit_summary.output,
        rules.serverpools_table.output,
        rules.serverpools_covariance_table.output,
        expand(rules.serverpools_fig_tree.output, example=SP_EXAMPLES),
        rules.serverpools_fig_boundary.output,
        rules.serverpools_fig_fluid.output,
        rules.serverpools_fig_deviation.output,
        rules.serverpools_fig_time_average.output,
        rules.serverpools_fig_fluid_limit.output,
        rules.serverpools_lap_summary.output,
        rules.serverpools_fig_lap.output,
