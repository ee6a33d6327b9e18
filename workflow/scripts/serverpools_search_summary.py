"""The instability search over every size, merged from its chunks (thin adapter)."""

from queue_routing.io import write_json, write_table
from queue_routing.serverpools.experiments import search_sizes, search_tables_from_chunks
from queue_routing.workflow.scripts import run_script
from queue_routing.workflow.tables import read_serverpools_search_chunk


def _size(size):
    return "none found" if size is None else f"(I, J) = ({size[0]}, {size[1]})"


def main(snakemake):
    p = snakemake.params
    sizes = search_sizes(p.max_classes, p.max_pools)
    summary, record = search_tables_from_chunks(
        p.seed,
        sizes,
        p.samples_per_size,
        [read_serverpools_search_chunk(snakemake.config, path) for path in snakemake.input.chunks],
        mu_range=p.mu_range,
        flow_range=p.flow_range,
        rho=p.rho,
        tol=p.tol,
    )
    u, c = record["smallest_unstable_underloaded"], record["smallest_unstable_critical"]
    print(f"smallest unstable A_u: {_size(u)}; A_c: {_size(c)}")
    write_table(
        summary,
        snakemake.output.summary,
        snakemake.output.markdown,
        title=(
            f"Instability search over {len(sizes)} sizes, {p.samples_per_size} random trees "
            f"each: smallest unstable A_u {_size(u)}; A_c {_size(c)}"
        ),
    )
    write_json(record, snakemake.output.search)


run_script(snakemake, main)  # noqa: F821
