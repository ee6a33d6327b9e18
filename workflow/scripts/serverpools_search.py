"""One chunk of the seeded instability search: a block of samples of some sizes (thin adapter;
serverpools_search_summary merges the chunks)."""

from queue_routing.io import write_json
from queue_routing.serverpools.experiments import search_chunk, search_sizes
from queue_routing.workflow.chunks import parse_chunk
from queue_routing.workflow.scripts import run_script


def main(snakemake):
    p = snakemake.params
    chunk = parse_chunk(snakemake.wildcards.chunk)
    sizes = search_sizes(p.max_classes, p.max_pools)
    if chunk.items.stop > len(sizes):
        raise ValueError(f"chunk {chunk.label()}: there are only {len(sizes)} sizes")
    summaries = search_chunk(
        p.seed,
        [sizes[k] for k in chunk.items],
        chunk.replications,  # the samples
        mu_range=p.mu_range,
        flow_range=p.flow_range,
        rho=p.rho,
        tol=p.tol,
        workers=snakemake.threads,
    )
    write_json(summaries, snakemake.output.chunk)


run_script(snakemake, main)  # noqa: F821
