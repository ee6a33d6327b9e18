"""Bounded jobs: chunk plans, and any split of a study reassembling to the unsplit tables.

Each part's chunked computation is run here as the pipeline runs it -- every chunk on its own,
its rows written to CSV and read back, the chunks reassembled in some order -- for two
different splits, and compared byte for byte with the unsplit library function (the
pipeline-level checks are tests/test_split_pipeline.py and the SLURM test).
"""

import io
import json
import math

import pandas as pd
import pytest

from queue_routing.workflow.chunks import Chunk, balanced_blocks, parse_chunk, plan_chunks


def _round_trip(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` written as the pipeline writes a chunk and read back as its aggregation does."""
    buffer = io.StringIO()
    df.to_csv(buffer, index=False, lineterminator="\n")
    buffer.seek(0)
    return pd.read_csv(buffer)


def _csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, lineterminator="\n")


# -- plans ------------------------------------------------------------------------------------
def test_labels_round_trip_and_reject_malformed_ones():
    for chunk in (Chunk(range(3, 7), range(0, 50)), Chunk(None, range(10, 11))):
        assert parse_chunk(chunk.label()) == chunk
    for bad in ("r2-1", "i3-2_r0-1", "x0-1", "r0-1_", "i0-1r0-1", "r-1-2"):
        with pytest.raises(ValueError, match="chunk label"):
            parse_chunk(bad)
    with pytest.raises(ValueError, match="non-empty range"):
        Chunk(range(0, 0), range(1))


@pytest.mark.parametrize("n,size", [(1, 1), (7, 3), (50, 21), (100000, 33333), (10, 10)])
def test_balanced_blocks_cover_the_range_in_order(n, size):
    blocks = balanced_blocks(n, size)
    assert [i for b in blocks for i in b] == list(range(n))
    assert len(blocks) == math.ceil(n / size)
    assert max(map(len, blocks)) - min(map(len, blocks)) <= 1 and max(map(len, blocks)) <= size


PLANS = [
    (100, 50, 12.0, 890.0),
    (100, 50, 0.625, 890.0),
    (None, 30, 600.0, 890.0),
    (9, 50, 0.7, 890.0),
    (25, 100000, 1.1e-3, 890.0),
    (3, 10, 1000.0, 890.0),
    (2, 3, 0.0, 1.0),
]


@pytest.mark.parametrize("n_items,reps,unit,target", PLANS)
def test_derived_plans_cover_the_work_once_within_the_target(n_items, reps, unit, target):
    chunks = plan_chunks(n_items, reps, unit_seconds=unit, target_seconds=target)
    cells = [(i, r) for c in chunks for i in (c.items or [None]) for r in c.replications]
    assert sorted(cells, key=str) == sorted(
        [(i, r) for i in (range(n_items) if n_items else [None]) for r in range(reps)], key=str
    )
    assert len(set(cells)) == len(cells)
    for c in chunks:  # within the target, unless one replication alone exceeds it
        assert c.size * unit <= target or len(c.replications) == c.n_items == 1
    # not more jobs than work: at least half of the target used on average (when one unit
    # fits), and one job per unit when none does
    work = (n_items or 1) * reps * unit
    if unit <= target:
        assert len(chunks) <= max(1, math.ceil(2 * work / target)) + 1
    else:
        assert len(chunks) == (n_items or 1) * reps


def test_explicit_sizes_win_and_whole_replications_are_kept_when_they_fit():
    whole = {"unit_seconds": 1.0, "target_seconds": 1e9}
    by_item = plan_chunks(4, 3, **whole, items_per_job=1)
    assert [c.label() for c in by_item] == ["i0-0_r0-2", "i1-1_r0-2", "i2-2_r0-2", "i3-3_r0-2"]
    by_replication = plan_chunks(2, 3, **whole, replications_per_job=2)
    assert [c.label() for c in by_replication] == ["i0-1_r0-1", "i0-1_r2-2"]
    assert plan_chunks(10, 5, unit_seconds=1.0, target_seconds=60.0) == [Chunk(range(10), range(5))]


def test_ten_times_the_work_makes_about_ten_times_the_jobs():
    before = plan_chunks(100, 50, unit_seconds=1.2, target_seconds=890.0)
    after = plan_chunks(100, 50, unit_seconds=12.0, target_seconds=890.0)
    assert 7 * len(before) <= len(after) <= 13 * len(before)


# -- Part A ----------------------------------------------------------------------------------
ANY = {"unit_seconds": 1.0, "target_seconds": 1e9}
SPLITS_A = [
    plan_chunks(3, 5, **ANY),  # one chunk, as unsplit
    plan_chunks(3, 5, **ANY, items_per_job=2, replications_per_job=2),
    plan_chunks(3, 5, **ANY, items_per_job=1, replications_per_job=1),
]


@pytest.mark.parametrize("chunks", SPLITS_A, ids=["whole", "2x2", "1x1"])
def test_part_a_any_split_gives_the_unsplit_tables(chunks):
    from queue_routing.multiskill.experiments import (
        policy_comparison_from_costs,
        policy_comparison_rows,
        policy_replication_costs,
    )
    from queue_routing.multiskill.instances import random_instance

    instances = [(k, random_instance(10, 7, k)) for k in range(3)]
    run = {"policies": ["jsq", "pi"], "horizon": 30.0, "warmup": 3.0, "seed": 7}
    rows, diffs = policy_comparison_rows(instances, replications=5, **run)
    parts = [
        _round_trip(
            policy_replication_costs(
                [instances[k] for k in c.items], replications=c.replications, **run
            )
        )
        for c in chunks
    ]
    costs = pd.concat(parts[::-1], ignore_index=True)  # any order
    rows2, diffs2 = policy_comparison_from_costs(instances, costs, **run)
    assert _csv(rows2) == _csv(rows) and _csv(diffs2) == _csv(diffs)


def test_part_a_load_sweep_split_by_factor_and_replications():
    from queue_routing.multiskill.experiments import (
        TABLE1_TAG,
        policy_replication_costs,
        table1_instances,
        table1_load_sweep,
        table1_load_sweep_from_costs,
    )

    factors = [0.6, 3.0, 1.0]  # 3.0 is unstable: skipped in both
    run = {"policies": ["bernoulli", "led"], "horizon": 10.0, "warmup": 1.0, "seed": 3}
    rows, diffs = table1_load_sweep(factors, replications=4, **run)
    parts = []
    for c in plan_chunks(3, 4, **ANY, items_per_job=2, replications_per_job=3):
        share = [factors[k] for k in c.items]
        for k, inst in table1_instances(share, indices=c.items)[0]:
            extra = {"load_factor": factors[k]}
            costs = policy_replication_costs(
                [(k, inst)], tag=TABLE1_TAG, extra=extra, replications=c.replications, **run
            )
            parts.append(_round_trip(costs))
    rows2, diffs2 = table1_load_sweep_from_costs(factors, pd.concat(parts), **run)
    assert rows2.attrs["skipped"] == rows.attrs["skipped"] == [3.0]
    assert _csv(rows2) == _csv(rows) and _csv(diffs2) == _csv(diffs)


def test_part_a_missing_or_repeated_chunk_is_refused():
    from queue_routing.multiskill.experiments import (
        policy_comparison_from_costs,
        policy_replication_costs,
    )
    from queue_routing.multiskill.instances import random_instance

    instances = [(0, random_instance(5, 1, 0))]
    run = {"policies": ["jsq"], "horizon": 5.0, "warmup": 0.5, "seed": 1}
    first = policy_replication_costs(instances, replications=range(0, 3), **run)
    third = policy_replication_costs(instances, replications=range(4, 5), **run)
    for costs in (pd.concat([first, third]), pd.concat([first, first])):
        with pytest.raises(ValueError, match=r"not 0\.\.R-1"):
            policy_comparison_from_costs(instances, costs, **run)


# -- Part B ----------------------------------------------------------------------------------
def test_part_b_any_split_gives_the_unsplit_table():
    from queue_routing.deadlines.experiments import (
        deadline_dict,
        large_instance,
        large_system,
        large_system_from_replications,
        large_system_replications,
    )

    deadline = deadline_dict("constant", 1.5, 0.6)
    draw = {"servers_range": [1, 3], "rate_range": [0.5, 1.5], "load": 0.9}
    inst = large_instance(5, 4, **draw, rejection_cost=2.0, deadline=deadline)
    run = {"table_size": 40, "horizon": 60.0, "warmup": 6.0, "seed": 5, "keys": ("t", 4)}
    whole = large_system(inst, replications=4, **run)
    for reps in (1, 3):
        parts = [
            _round_trip(large_system_replications(inst, replications=c.replications, **run))
            for c in plan_chunks(None, 4, **ANY, replications_per_job=reps)
        ]
        split = large_system_from_replications(inst, pd.concat(parts[::-1]), **run)
        assert _csv(split) == _csv(whole)


# -- Part C ----------------------------------------------------------------------------------
def test_part_c_stochastic_and_covariance_splits_give_the_unsplit_tables():
    from queue_routing.serverpools import solve_spp
    from queue_routing.serverpools.experiments import (
        covariance_from_replications,
        covariance_replications,
        covariance_table,
        stochastic_runs,
    )
    from queue_routing.serverpools.instances import example_system

    sol = solve_spp(example_system("stable"))
    run = {"horizon": 15.0, "warmup": 5.0, "seed": 11}
    trace, summary = stochastic_runs("stable", sol, 100, record_every=1.0, replications=3, **run)
    blocks = [
        stochastic_runs("stable", sol, 100, record_every=1.0, replications=b, **run)
        for b in (range(0, 1), range(1, 3))
    ]
    assert _csv(pd.concat([_round_trip(t) for t, _ in blocks])) == _csv(_round_trip(trace))
    assert _csv(pd.concat([s for _, s in blocks], ignore_index=True)) == _csv(summary)

    whole = covariance_table("stable", sol, r=100, replications=3, **run)
    parts = [
        _round_trip(covariance_replications("stable", sol, r=100, replications=b, **run))
        for b in (range(2, 3), range(0, 2))
    ]
    assert _csv(covariance_from_replications("stable", sol, pd.concat(parts), r=100)) == _csv(whole)


def test_part_c_search_split_by_sizes_and_samples_gives_the_unsplit_search():
    from queue_routing.serverpools.experiments import (
        search_chunk,
        search_sizes,
        search_tables,
        search_tables_from_chunks,
    )

    sizes = search_sizes(3, 3)
    settings = {"mu_range": [1e-3, 1e3], "flow_range": [1e-3, 1.0], "rho": 0.9, "tol": 1e-9}
    summary, record = search_tables(4, sizes, 40, **settings)
    chunks = plan_chunks(len(sizes), 40, **ANY, items_per_job=4, replications_per_job=15)
    parts = [
        json.loads(
            json.dumps(search_chunk(4, [sizes[k] for k in c.items], c.replications, **settings))
        )
        for c in chunks
    ]
    summary2, record2 = search_tables_from_chunks(4, sizes, 40, parts[::-1], **settings)
    assert _csv(summary2) == _csv(summary)
    assert json.dumps(record2, sort_keys=True) == json.dumps(record, sort_keys=True)
    with pytest.raises(ValueError, match="chunk is missing"):
        search_tables_from_chunks(4, sizes, 40, parts[1:], **settings)
