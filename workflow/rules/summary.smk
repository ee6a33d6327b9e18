# README numbers: every result README.md quotes, computed from the key tables of the three
# parts (queue_routing.workflow.summary) and written as figures/summary.md, committed with the PNGs.
# README.md marks each quoted number with its key (145.24838<!--A.table1.cost-->) and
# tests/test_summary.py checks the marked numbers against the committed file.
# Inputs are named <part name>_<table> (queue_routing.workflow.summary.PARTS and TABLES).


localrules:
    summary,


rule summary:
    input:
        multiskill_table1=rules.multiskill_table1.output.solutions,
        multiskill_fig6=rules.multiskill_table1.output.runs,
        multiskill_iterations=rules.multiskill_iteration_table.output.stats,
        multiskill_simulation=rules.multiskill_simulation_table.output.rows,
        multiskill_load_sweep=rules.multiskill_simulation_table.output.load_sweep,
        multiskill_job_sizes=rules.multiskill_job_sizes_table.output.summary,
        multiskill_optimal=rules.multiskill_optimal_table.output.summary,
        deadlines_gap=rules.deadlines_gap_table.output.table,
        deadlines_large=rules.deadlines_large_table.output.table,
        deadlines_three=rules.deadlines_three_cluster_table.output.table,
        deadlines_pure_routing=expand(
            rules.deadlines_two_cluster.output.table, sweep="pure_routing"
        ),
        serverpools_time_average=rules.serverpools_stochastic_summary.output.averages,
        serverpools_slope=rules.serverpools_stochastic_summary.output.verdicts,
        serverpools_covariance=rules.serverpools_covariance_table.output.table,
        serverpools_fluid=expand(
            rules.serverpools_fluid.output.trajectory, example=SP_EXAMPLES
        ),
        serverpools_fluid_limit=rules.serverpools_fluid_limit_summary.output.slopes,
        serverpools_lap_slope=rules.serverpools_lap_summary.output.verdicts,
        serverpools_lap_ou=rules.serverpools_lap_summary.output.ou,
        serverpools_lap_price=rules.serverpools_lap_summary.output.price,
    output:
        summary=f"{FIGURES}/summary.md",
    log:
        "logs/summary.log",
    conda:
        "../envs/queue-routing.yaml"
    params:
        tail_fraction=SP["fluid"]["tail_fraction"],
    message:
        "README numbers: every result README.md and the part guides quote, from the tables of Parts A, B and C"
    script:
        "../scripts/summary.py"
