# Part A -- Miguelez, Doncel & Prabhu (2022), multi-skilled servers with Bernoulli routing.
# Outputs under results/multiskill/<rule>/, figures under config["figures_dir"].

MS = config["multiskill"]
MS_SIZES = list(
    range(MS["sizes"]["first"], MS["sizes"]["last"] + 1, MS["sizes"]["step"])
)
MS_FP = MS["fixed_point"]
MS_UPDATES = MS_FP["update_rules"]
MS_SIM = MS["simulation"]
MS_JS = MS["job_sizes"]
MS_OPT = MS["optimal"]
#: Numbers of classes of the optimal-routing study: those with templates and loads.
MS_OPT_CLASSES = plan.multiskill_optimal_classes(config)
#: Samples of the job-size study: Table 1, and the random instances unless none are asked.
MS_JS_SAMPLES = ["table1"] + (["random"] if MS_JS["random_instances"] > 0 else [])
# Files of user policies (path/to/file.py:name) in the policy list: inputs of the
# simulations, so editing one reruns them (docs/your-own-policy.md).
MS_POLICY_FILES = sorted({p.rpartition(":")[0] for p in MS_SIM["policies"] if ":" in p})


wildcard_constraints:
    n_classes=r"\d+",
    round=r"\d+",
    sample=r"table1|random",
    update_rule=r"jacobi|single",


# Cheap aggregation, instance drawing and plotting run on the submitting host even under
# a cluster executor; every other rule declares threads and requests the runtime (min) and
# mem_mb that the cost model predicts for its job's work (common.smk: job_resources).
localrules:
    multiskill_instances,
    multiskill_iteration_table,
    multiskill_comparison_table,
    multiskill_fig1,
    multiskill_fig2,
    multiskill_fig3,
    multiskill_fig4,
    multiskill_fig5,
    multiskill_fig6,
    multiskill_fig7,
    multiskill_simulation_table,
    multiskill_fig8,
    multiskill_fig9,
    multiskill_job_sizes_table,
    multiskill_fig_job_sizes,
    multiskill_optimal_table,
    multiskill_fig_optimal,
    multiskill_fig_optimal_switching,
    multiskill_all,


rule multiskill_instances:
    output:
        instances="results/multiskill/multiskill_instances/C{n_classes}.json",
    log:
        "logs/multiskill/multiskill_instances/C{n_classes}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        n_instances=MS["instances_per_size"],
        seed=config["seed"],
    message:
        "Part A: drawing {params.n_instances} random stable instances with C={wildcards.n_classes}"
    script:
        "../scripts/multiskill_instances.py"


rule multiskill_solve:
    input:
        instances=rules.multiskill_instances.output.instances,
    output:
        runs="results/multiskill/multiskill_solve/C{n_classes}.csv",
    log:
        "logs/multiskill/multiskill_solve/C{n_classes}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(ms_solve_seconds),
    params:
        seed=config["seed"],
        update_rules=MS_UPDATES,
        initial_partitions=MS_FP["initial_partitions"],
        random_initial_partitions=MS_FP["random_initial_partitions"],
        p_shared=MS_FP["random_partition"]["p_shared"],
        p_both=MS_FP["random_partition"]["p_both"],
        paper_rounding=MS_FP["paper_rounding"],
        max_iterations=MS_FP["max_iterations"],
    message:
        "Part A: exact solver and Algorithm 1 on the C={wildcards.n_classes} instances ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_solve.py"


rule multiskill_compare:
    input:
        instances=rules.multiskill_instances.output.instances,
    output:
        costs="results/multiskill/multiskill_compare/C{n_classes}.csv",
    log:
        "logs/multiskill/multiskill_compare/C{n_classes}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(ms_compare_seconds),
    message:
        "Part A: multi-skilled vs no-sharing vs all-sharing costs, C={wildcards.n_classes} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_compare.py"


rule multiskill_iteration_table:
    input:
        runs=expand(rules.multiskill_solve.output.runs, n_classes=MS_SIZES),
    output:
        stats=report_table(
            "results/multiskill/multiskill_iteration_table/iterations.csv",
            "multiskill_iteration_table",
            "iterations of Algorithm 1",
        ),
        by_init="results/multiskill/multiskill_iteration_table/iterations_by_init.csv",
        markdown="results/multiskill/multiskill_iteration_table/iterations.md",
    log:
        "logs/multiskill/multiskill_iteration_table.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part A: iteration statistics of Algorithm 1 per C and update rule"
    script:
        "../scripts/multiskill_iteration_table.py"


rule multiskill_comparison_table:
    input:
        costs=expand(rules.multiskill_compare.output.costs, n_classes=MS_SIZES),
    output:
        table="results/multiskill/multiskill_comparison_table/comparison.csv",
        summary=report_table(
            "results/multiskill/multiskill_comparison_table/summary.csv",
            "multiskill_comparison_table",
            "comparison with no / all sharing",
        ),
        markdown="results/multiskill/multiskill_comparison_table/comparison.md",
    log:
        "logs/multiskill/multiskill_comparison_table.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part A: comparison costs aggregated over all random instances"
    script:
        "../scripts/multiskill_comparison_table.py"


rule multiskill_table1:
    output:
        solutions=report_table(
            "results/multiskill/multiskill_table1/solutions.csv",
            "multiskill_table1",
            "Table 1 by every solver",
        ),
        trajectories="results/multiskill/multiskill_table1/trajectories.csv",
        runs="results/multiskill/multiskill_table1/runs.csv",
        markdown="results/multiskill/multiskill_table1/solutions.md",
    log:
        "logs/multiskill/multiskill_table1.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        seed=config["seed"],
        generic_methods=MS["generic"]["methods"],
        updates=MS_UPDATES,
    message:
        "Part A: Table 1 instance by every solver and Algorithm 1 trajectories (Fig. 6) ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_table1.py"


rule multiskill_two_class:
    output:
        case_map="results/multiskill/multiskill_two_class/case_map.csv",
        boundaries="results/multiskill/multiskill_two_class/boundaries.csv",
        loads="results/multiskill/multiskill_two_class/loads.csv",
    log:
        "logs/multiskill/multiskill_two_class.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        mu=MS["two_class"]["mu"],
        cost=MS["two_class"]["cost"],
        eta_max=MS["two_class"]["eta_max"],
        grid_points=MS["two_class"]["grid_points"],
        line_eta1=MS["two_class"]["line_eta1"],
        line_points=MS["two_class"]["line_points"],
    message:
        "Part A: C=2 optimal cases and loads by the closed forms and the exact solver ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_two_class.py"


rule multiskill_switching:
    output:
        costs="results/multiskill/multiskill_switching/costs.csv",
        switching_points="results/multiskill/multiskill_switching/switching_points.csv",
        switching_curve="results/multiskill/multiskill_switching/switching_curve.csv",
        region="results/multiskill/multiskill_switching/region.csv",
    log:
        "logs/multiskill/multiskill_switching.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **small_job_resources(),
    params:
        mu=MS["switching"]["mu"],
        cost=MS["switching"]["cost"],
        eta_max=MS["switching"]["eta_max"],
        grid_points=MS["switching"]["grid_points"],
        line_eta1=MS["switching"]["line_eta1"],
        line_points=MS["switching"]["line_points"],
    message:
        "Part A: C=2 costs of the three systems and the switching curve (root finding) ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_switching.py"


use rule multiskill_switching as multiskill_equal_capacities with:
    output:
        costs="results/multiskill/multiskill_equal_capacities/costs.csv",
        switching_points="results/multiskill/multiskill_equal_capacities/switching_points.csv",
        switching_curve="results/multiskill/multiskill_equal_capacities/switching_curve.csv",
        region="results/multiskill/multiskill_equal_capacities/region.csv",
    log:
        "logs/multiskill/multiskill_equal_capacities.log",
    params:
        mu=MS["equal_capacities"]["mu"],
        cost=MS["equal_capacities"]["cost"],
        eta_max=MS["equal_capacities"]["eta_max"],
        grid_points=MS["equal_capacities"]["grid_points"],
        line_eta1=MS["equal_capacities"]["line_eta1"],
        line_points=MS["equal_capacities"]["line_points"],
    message:
        "Part A: equal capacities, different costs: where multi-skilled beats all sharing ({resources.runtime} min, {resources.mem_mb} MB)"


rule multiskill_fig1:
    output:
        **figure("multiskill_fig1_model"),
    log:
        "logs/multiskill/multiskill_fig1.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig1",
    message:
        "Part A: Fig. 1, model schematic"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig2:
    input:
        case_map=rules.multiskill_two_class.output.case_map,
        boundaries=rules.multiskill_two_class.output.boundaries,
    output:
        **figure("multiskill_fig2_case_map"),
    log:
        "logs/multiskill/multiskill_fig2.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig2",
        mu=MS["two_class"]["mu"],
        cost=MS["two_class"]["cost"],
    message:
        "Part A: Fig. 2, optimal C=2 case over the (eta1, eta2) plane"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig3:
    input:
        loads=rules.multiskill_two_class.output.loads,
    output:
        **figure("multiskill_fig3_loads"),
    log:
        "logs/multiskill/multiskill_fig3.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig3",
        mu=MS["two_class"]["mu"],
        cost=MS["two_class"]["cost"],
        line_eta1=MS["two_class"]["line_eta1"],
    message:
        "Part A: Fig. 3, optimal C=2 loads against eta2"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig4:
    input:
        costs=rules.multiskill_switching.output.costs,
        switching_points=rules.multiskill_switching.output.switching_points,
        switching_curve=rules.multiskill_switching.output.switching_curve,
        region=rules.multiskill_switching.output.region,
    output:
        **figure("multiskill_fig4_switching"),
    log:
        "logs/multiskill/multiskill_fig4.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig4",
        mu=MS["switching"]["mu"],
        cost=MS["switching"]["cost"],
        line_eta1=MS["switching"]["line_eta1"],
    message:
        "Part A: Fig. 4, costs of the three systems and the switching curve"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig5:
    input:
        region=rules.multiskill_equal_capacities.output.region,
        switching_curve=rules.multiskill_equal_capacities.output.switching_curve,
    output:
        **figure("multiskill_fig5_equal_capacities"),
    log:
        "logs/multiskill/multiskill_fig5.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig5",
        mu=MS["equal_capacities"]["mu"],
        cost=MS["equal_capacities"]["cost"],
    message:
        "Part A: Fig. 5, equal capacities: region where multi-skilled beats all sharing"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig6:
    input:
        trajectories=rules.multiskill_table1.output.trajectories,
        runs=rules.multiskill_table1.output.runs,
    output:
        **figure("multiskill_fig6_convergence_{update_rule}"),
    log:
        "logs/multiskill/multiskill_fig6_{update_rule}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig6",
    message:
        "Part A: Fig. 6, Algorithm 1 ({wildcards.update_rule} update) on Table 1"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig7:
    input:
        stats=rules.multiskill_iteration_table.output.stats,
    output:
        **figure("multiskill_fig7_iterations_{update_rule}"),
    log:
        "logs/multiskill/multiskill_fig7_{update_rule}.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig7",
    message:
        "Part A: Fig. 7, iterations of Algorithm 1 ({wildcards.update_rule} update) against C"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_simulate:
    input:
        instances=rules.multiskill_instances.output.instances,
        policy_files=MS_POLICY_FILES,
    output:
        costs="results/multiskill/multiskill_simulate/C{n_classes}/{chunk}.csv",
    log:
        "logs/multiskill/multiskill_simulate/C{n_classes}/{chunk}.log",
    # long jobs first: the short ones fill the cores around them (a shorter run)
    priority: 2
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(ms_simulate_seconds),
    params:
        seed=config["seed"],
        policies=MS_SIM["policies"],
        horizon=MS_SIM["horizon"],
        warmup=MS_SIM["warmup"],
    message:
        "Part A: simulating the routing policies, C={wildcards.n_classes}, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_simulate.py"


rule multiskill_simulate_table1:
    input:
        policy_files=MS_POLICY_FILES,
    output:
        costs="results/multiskill/multiskill_simulate_table1/{chunk}.csv",
    log:
        "logs/multiskill/multiskill_simulate_table1/{chunk}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(ms_table1_seconds),
    params:
        seed=config["seed"],
        policies=MS_SIM["policies"],
        horizon=MS_SIM["table1_horizon"],
        warmup=MS_SIM["warmup"],
        # the factors of the chunk's items only (its label gives their indices)
        load_factors=lambda wildcards: [
            MS_SIM["table1_load_factors"][k]
            for k in parse_chunk(wildcards.chunk).items
        ],
    message:
        "Part A: simulating the routing policies on Table 1 with scaled loads, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_simulate.py"


rule multiskill_simulation_table:
    input:
        instances=expand(
            rules.multiskill_instances.output.instances, n_classes=MS_SIZES
        ),
        costs=[
            f"results/multiskill/multiskill_simulate/C{n}/{label}.csv"
            for n in MS_SIZES
            for label in ms_chunks(n)
        ],
        table1=expand(
            rules.multiskill_simulate_table1.output.costs, chunk=ms_table1_chunks()
        ),
    output:
        rows="results/multiskill/multiskill_simulation_table/policies.csv",
        differences="results/multiskill/multiskill_simulation_table/differences.csv",
        summary=report_table(
            "results/multiskill/multiskill_simulation_table/summary.csv",
            "multiskill_simulation_table",
            "routing policies vs Bernoulli",
        ),
        markdown="results/multiskill/multiskill_simulation_table/summary.md",
        load_sweep="results/multiskill/multiskill_simulation_table/load_sweep.csv",
        load_sweep_differences="results/multiskill/multiskill_simulation_table/load_sweep_differences.csv",
        table1="results/multiskill/multiskill_simulation_table/table1.md",
    log:
        "logs/multiskill/multiskill_simulation_table.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        seed=config["seed"],
        policies=MS_SIM["policies"],
        horizon=MS_SIM["horizon"],
        warmup=MS_SIM["warmup"],
        table1_horizon=MS_SIM["table1_horizon"],
        load_factors=MS_SIM["table1_load_factors"],
    message:
        "Part A: paired comparisons of the routing policies per C and on Table 1"
    script:
        "../scripts/multiskill_simulation_table.py"


rule multiskill_fig8:
    input:
        rows=rules.multiskill_simulation_table.output.rows,
    output:
        **figure("multiskill_fig8_policies_vs_size"),
    log:
        "logs/multiskill/multiskill_fig8.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig8",
    message:
        "Part A: routing policies relative to optimal Bernoulli, against C"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_fig9:
    input:
        rows=rules.multiskill_simulation_table.output.load_sweep,
    output:
        **figure("multiskill_fig9_policies_vs_load"),
    log:
        "logs/multiskill/multiskill_fig9.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        draw="fig9",
    message:
        "Part A: routing policies relative to optimal Bernoulli on Table 1, against load"
    script:
        "../scripts/multiskill_figures.py"


rule multiskill_job_sizes:
    input:
        # the random instances of Fig. 7's generator (Table 1 needs no input)
        instances=lambda wildcards: (
            []
            if wildcards.sample == "table1"
            else expand(
                rules.multiskill_instances.output.instances,
                n_classes=MS_JS["random_n_classes"],
            )
        ),
    output:
        rows="results/multiskill/multiskill_job_sizes/{sample}/policies.csv",
        differences="results/multiskill/multiskill_job_sizes/{sample}/differences.csv",
    log:
        "logs/multiskill/multiskill_job_sizes/{sample}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(ms_job_sizes_seconds),
    params:
        seed=config["seed"],
        laws=MS_JS["laws"],
        policies=MS_JS["policies"],
        replications=MS_JS["replications"],
        warmup=MS_JS["warmup"],
        horizon=lambda wildcards: MS_JS[f"{wildcards.sample}_horizon"],
        random_instances=lambda wildcards: (
            0 if wildcards.sample == "table1" else MS_JS["random_instances"]
        ),
    message:
        "Part A: routing policies under general job sizes, {wildcards.sample} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_job_sizes.py"


rule multiskill_job_sizes_table:
    input:
        rows=expand(rules.multiskill_job_sizes.output.rows, sample=MS_JS_SAMPLES),
        differences=expand(
            rules.multiskill_job_sizes.output.differences, sample=MS_JS_SAMPLES
        ),
    output:
        rows="results/multiskill/multiskill_job_sizes_table/policies.csv",
        differences="results/multiskill/multiskill_job_sizes_table/differences.csv",
        summary=report_table(
            "results/multiskill/multiskill_job_sizes_table/summary.csv",
            "multiskill_job_sizes_table",
            "routing policies vs job-size variability",
        ),
        markdown="results/multiskill/multiskill_job_sizes_table/summary.md",
    log:
        "logs/multiskill/multiskill_job_sizes_table.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part A: gains over optimal Bernoulli routing against the job-size SCV"
    script:
        "../scripts/multiskill_job_sizes_table.py"


rule multiskill_fig_job_sizes:
    input:
        summary=rules.multiskill_job_sizes_table.output.summary,
    output:
        **figure("multiskill_job_sizes"),
    log:
        "logs/multiskill/multiskill_fig_job_sizes.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part A: gains over optimal Bernoulli routing against the job-size SCV (figure)"
    script:
        "../scripts/multiskill_job_sizes_figure.py"


checkpoint multiskill_optimal_round:
    input:
        unpack(ms_optimal_previous_round),
    output:
        search="results/multiskill/multiskill_optimal_round/C{n_classes}/{chunk}/round{round}.npz",
        evaluations="results/multiskill/multiskill_optimal_round/C{n_classes}/{chunk}/round{round}.json",
    log:
        "logs/multiskill/multiskill_optimal_round/C{n_classes}/{chunk}/round{round}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: plan.multiskill_optimal_round_threads(config)
    resources:
        **job_resources("multiskill_optimal_round"),
    params:
        cases=lambda wildcards: ms_optimal_cases(wildcards.n_classes, wildcards.chunk),
        policies=MS_OPT["policies"],
        rtol=MS_OPT["rtol"],
        seconds=plan.multiskill_optimal_round_seconds(config),  # wall time of work a round
    message:
        "Part A: optimal dynamic routing, C={wildcards.n_classes}, chunk {wildcards.chunk}, round {wildcards.round} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_optimal_round.py"


rule multiskill_optimal:
    input:
        unpack(ms_optimal_last_round),
    output:
        rows="results/multiskill/multiskill_optimal/C{n_classes}/{chunk}.csv",
    log:
        "logs/multiskill/multiskill_optimal/C{n_classes}/{chunk}.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources("multiskill_optimal"),
    params:
        # the cases (kind, load) of the chunk only (its label gives their indices)
        cases=lambda wildcards: ms_optimal_cases(wildcards.n_classes, wildcards.chunk),
        policies=MS_OPT["policies"],
        rtol=MS_OPT["rtol"],
    message:
        "Part A: optimal dynamic routing and exact policy gaps, C={wildcards.n_classes}, chunk {wildcards.chunk} ({resources.runtime} min, {resources.mem_mb} MB)"
    script:
        "../scripts/multiskill_optimal.py"


rule multiskill_optimal_switching:
    output:
        rows="results/multiskill/multiskill_optimal_switching/switching.csv",
    log:
        "logs/multiskill/multiskill_optimal_switching.log",
    retries: RETRIES
    conda:
        "../envs/queue-routing.yaml"
    threads: 1
    resources:
        **job_resources(predicted(plan.job_seconds, "multiskill_optimal_switching")),
    params:
        kind=MS_OPT["switching"]["kind"],
        load=MS_OPT["switching"]["load"],
        others=MS_OPT["switching"]["others"],
        rtol=MS_OPT["rtol"],
    message:
        "Part A: the optimal switching curve of {params.kind} at load {params.load}"
    script:
        "../scripts/multiskill_optimal_switching.py"


rule multiskill_optimal_table:
    input:
        rows=[
            f"results/multiskill/multiskill_optimal/C{n}/{label}.csv"
            for n in MS_OPT_CLASSES
            for label in ms_optimal_chunks(n)
        ],
    output:
        rows="results/multiskill/multiskill_optimal_table/rows.csv",
        gaps=report_table(
            "results/multiskill/multiskill_optimal_table/gaps.csv",
            "multiskill_optimal_table",
            "exact gaps to the optimal dynamic routing",
        ),
        summary="results/multiskill/multiskill_optimal_table/summary.csv",
        markdown="results/multiskill/multiskill_optimal_table/gaps.md",
    log:
        "logs/multiskill/multiskill_optimal_table.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        # what the config determines of each input, in order: its C and its cases (kind, load)
        chunks=[
            {"n_classes": n, "cases": ms_optimal_cases(n, label)}
            for n in MS_OPT_CLASSES
            for label in ms_optimal_chunks(n)
        ],
        policies=MS_OPT["policies"],
    message:
        "Part A: the table of exact gaps to the optimal dynamic routing"
    script:
        "../scripts/multiskill_optimal_table.py"


rule multiskill_fig_optimal:
    input:
        rows=rules.multiskill_optimal_table.output.rows,
    output:
        **figure("multiskill_optimal_gaps"),
    log:
        "logs/multiskill/multiskill_fig_optimal.log",
    conda:
        "../envs/queue-routing.yaml"
    message:
        "Part A: how far from optimal, each policy's exact gap (figure)"
    script:
        "../scripts/multiskill_optimal_figure.py"


rule multiskill_fig_optimal_switching:
    input:
        rows=rules.multiskill_optimal_switching.output.rows,
    output:
        **figure("multiskill_optimal_switching"),
    log:
        "logs/multiskill/multiskill_fig_optimal_switching.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        kind=MS_OPT["switching"]["kind"],
        load=MS_OPT["switching"]["load"],
    message:
        "Part A: the optimal switching curve beside PI's line (figure)"
    script:
        "../scripts/multiskill_optimal_switching_figure.py"


rule multiskill_all:
    input:
        rules.multiskill_iteration_table.output,
        rules.multiskill_comparison_table.output,
        rules.multiskill_table1.output,
        rules.multiskill_fig1.output,
        rules.multiskill_fig2.output,
        rules.multiskill_fig3.output,
        rules.multiskill_fig4.output,
        rules.multiskill_fig5.output,
        expand(rules.multiskill_fig6.output, update_rule=MS_UPDATES),
        expand(rules.multiskill_fig7.output, update_rule=MS_UPDATES),
        rules.multiskill_simulation_table.output,
        rules.multiskill_fig8.output,
        rules.multiskill_fig9.output,
        rules.multiskill_job_sizes_table.output,
        rules.multiskill_fig_job_sizes.output,
        rules.multiskill_optimal_table.output,
        rules.multiskill_fig_optimal.output,
        rules.multiskill_fig_optimal_switching.output,
