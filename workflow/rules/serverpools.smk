# Part C -- Stolyar & Yudovina (2013), large flexible server pools under LQFS-LB.
# The paper has no numerical examples or figures: the instances and figures are ours.
# Outputs under results/serverpools/<rule>/, figures under config["figures_dir"].

SP = config["serverpools"]
SP_EXAMPLES = ["stable", "unstable", "large_cycle"]
# The stochastic study (stationary time averages, fluid limit): the stable control and the
# unstable example chosen to show the sqrt(r) regime (docs/serverpools.md).
SP_STOCHASTIC = list(SP["stochastic"]["examples"])
SP_R = [int(r) for r in SP["stochastic"]["r"]]  # the schema allows 1.0e+3
SP_FLUID_LIMIT_R = [int(r) for r in SP["fluid_limit"]["r"]]


wildcard_constraints:
    example=r"stable|unstable|large_cycle",
    r=r"\d+",


# Cheap aggregation, instance drawing and plotting run on the submitting host even under
# a cluster executor; every other rule declares threads, runtime (min) and mem_mb, sized at
# about 10x the default config's wall time and 3x its peak memory (measured on 2 cores).
localrules:
    serverpools_stochastic_summary,
    serverpools_fluid_limit_summary,
    serverpools_table,
    serverpools_fig_tree,
    serverpools_fig_boundary,
    serverpools_fig_fluid,
    serverpools_fig_deviation,
    serverpools_fig_time_average,
    serverpools_fig_fluid_limit,
    serverpools_all,


rule serverpools_search:
    output:
        summary="results/serverpools/serverpools_search/summary.csv",
        markdown="results/serverpools/serverpools_search/summary.md",
        search="results/serverpools/serverpools_search/search.json",
    log:
        "logs/serverpools/serverpools_search.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 2
    resources:
        runtime=30,
        mem_mb=1000,
    params:
        seed=config["seed"],
        search=SP["search"],
    message:
        "Part C: seeded search over random activity trees for unstable equilibria"
    script:
        "../scripts/serverpools_search.py"


rule serverpools_examples:
    output:
        rows="results/serverpools/serverpools_examples/examples.csv",
        stable="results/serverpools/serverpools_examples/stable.json",
        unstable="results/serverpools/serverpools_examples/unstable.json",
        large_cycle="results/serverpools/serverpools_examples/large_cycle.json",
    log:
        "logs/serverpools/serverpools_examples.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=10,
        mem_mb=1000,
    message:
        "Part C: SPP solution, duals and spectra of A_u and A_c of the example instances"
    script:
        "../scripts/serverpools_examples.py"


rule serverpools_boundary:
    output:
        scan="results/serverpools/serverpools_boundary/scan.csv",
        crossings="results/serverpools/serverpools_boundary/crossings.csv",
    log:
        "logs/serverpools/serverpools_boundary.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=10,
        mem_mb=1000,
    params:
        boundary=SP["boundary"],
    message:
        "Part C: largest real part of the spectra over the heterogeneity family, and its zero"
    script:
        "../scripts/serverpools_boundary.py"


rule serverpools_fluid:
    output:
        trajectory="results/serverpools/serverpools_fluid/{example}.csv",
    log:
        "logs/serverpools/serverpools_fluid/{example}.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=10,
        mem_mb=1000,
    params:
        seed=config["seed"],
        fluid=lambda wildcards: SP["fluid"][wildcards.example],
    message:
        "Part C: fluid trajectory of the {wildcards.example} example from a perturbed equilibrium"
    script:
        "../scripts/serverpools_fluid.py"


rule serverpools_stochastic:
    output:
        trace="results/serverpools/serverpools_stochastic/{example}_r{r}_trace.csv",
        summary="results/serverpools/serverpools_stochastic/{example}_r{r}_summary.csv",
    log:
        "logs/serverpools/serverpools_stochastic/{example}_r{r}.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=30,
        mem_mb=2000,
    params:
        seed=config["seed"],
        window=SP["stochastic"]["window"],
        burn_in_margin=SP["stochastic"]["burn_in_margin"],
        batches=SP["stochastic"]["batches"],
        record_every=SP["stochastic"]["record_every"],
        replications=SP["stochastic"]["replications"],
    message:
        "Part C: simulating the {wildcards.example} example at r={wildcards.r} past its burn-in"
    script:
        "../scripts/serverpools_stochastic.py"


rule serverpools_stochastic_summary:
    input:
        traces=expand(
            rules.serverpools_stochastic.output.trace, example=SP_STOCHASTIC, r=SP_R
        ),
        summaries=expand(
            rules.serverpools_stochastic.output.summary, example=SP_STOCHASTIC, r=SP_R
        ),
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
        level=SP["stochastic"]["level"],
        confidence=SP["stochastic"]["confidence"],
        fit_decades=SP["stochastic"]["fit_decades"],
    message:
        "Part C: stationarity tests, time averages against r and the slope-interval verdicts"
    script:
        "../scripts/serverpools_stochastic_summary.py"


rule serverpools_fluid_limit:
    output:
        rows="results/serverpools/serverpools_fluid_limit/{example}_r{r}.csv",
    log:
        "logs/serverpools/serverpools_fluid_limit/{example}_r{r}.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=20,
        mem_mb=1000,
    params:
        seed=config["seed"],
        fluid_limit=SP["fluid_limit"],
    message:
        "Part C: fluid-limit distance of the {wildcards.example} example at r={wildcards.r}"
    script:
        "../scripts/serverpools_fluid_limit.py"


rule serverpools_fluid_limit_summary:
    input:
        rows=expand(
            rules.serverpools_fluid_limit.output.rows,
            example=SP_STOCHASTIC,
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
        confidence=SP["stochastic"]["confidence"],
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
        table=report_table(
            "results/serverpools/serverpools_covariance/covariance.csv",
            "serverpools_covariance",
            "covariance vs Lyapunov",
        ),
        markdown="results/serverpools/serverpools_covariance/covariance.md",
    log:
        "logs/serverpools/serverpools_covariance.log",
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        runtime=20,
        mem_mb=1000,
    params:
        seed=config["seed"],
        covariance=SP["covariance"],
    message:
        "Part C: simulated stationary covariance of the stable example vs the Lyapunov solution"
    script:
        "../scripts/serverpools_covariance.py"


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
    message:
        "Part C: diffusion-scaled deviation against time at several r"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_fig_time_average:
    input:
        averages=rules.serverpools_stochastic_summary.output.averages,
        verdicts=rules.serverpools_stochastic_summary.output.verdicts,
        trajectories=expand(
            rules.serverpools_fluid.output.trajectory, example=SP_STOCHASTIC
        ),
    output:
        **figure("serverpools_time_average"),
    log:
        "logs/serverpools/serverpools_fig_time_average.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
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
    message:
        "Part C: sup-distance of X^r/r from the fluid solution against r"
    script:
        "../scripts/serverpools_figures.py"


rule serverpools_all:
    input:
        rules.serverpools_search.output,
        rules.serverpools_examples.output,
        rules.serverpools_boundary.output,
        rules.serverpools_stochastic_summary.output,
        rules.serverpools_fluid_limit_summary.output,
        rules.serverpools_table.output,
        rules.serverpools_covariance.output,
        expand(rules.serverpools_fig_tree.output, example=SP_EXAMPLES),
        rules.serverpools_fig_boundary.output,
        rules.serverpools_fig_fluid.output,
        rules.serverpools_fig_deviation.output,
        rules.serverpools_fig_time_average.output,
        rules.serverpools_fig_fluid_limit.output,
