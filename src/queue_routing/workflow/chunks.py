"""Bounded jobs: a study's work split into chunks of items and replication blocks.

A simulation study is ``n_items`` independent items (instances, load factors, sizes of a
search) times ``n_replications`` replications (or samples) of each. Every replication draws
its own random streams, keyed by the item and the replication index and by nothing else
(``docs/README.md#random-numbers``), so the work can be cut into rectangles -- a block of
consecutive items times a block of consecutive replications -- and each rectangle run as a
job of its own: it computes exactly the replications it is given, with the keys and
indices the whole study would use. The aggregation step reassembles the per-replication
values in (item, replication) order and computes every statistic from them, so the final
tables are byte-identical whatever the split (tested: ``tests/test_chunks.py`` and
``tests/test_split_pipeline.py``).

A :class:`Chunk` is named in file names by its :meth:`~Chunk.label`, e.g. ``i0-9_r0-24``
(items 0..9, replications 0..24, both inclusive) or ``r0-24`` for a study of one item; the
Snakemake rules carry it as the ``{chunk}`` wildcard and the job reads its work from the
label alone (:func:`parse_chunk`), not from the config's chunk sizes.

:func:`plan_chunks` makes the split: explicit block sizes from the config, or, where a size
is 0, the largest blocks whose predicted wall time (:mod:`queue_routing.workflow.resources`) stays
within a target.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "LABEL_PATTERN",
    "Chunk",
    "balanced_blocks",
    "chunk_labels",
    "parse_chunk",
    "plan_chunks",
]

#: The regular expression of a chunk label (the rules' ``chunk`` wildcard constraint).
LABEL_PATTERN = r"(i\d+-\d+_)?r\d+-\d+"
_LABEL = re.compile(r"(?:i(\d+)-(\d+)_)?r(\d+)-(\d+)")


@dataclass(frozen=True)
class Chunk:
    """One job's share of a study: ``items`` (``None`` for a study of one item) times
    ``replications``, both ranges of consecutive indices (step 1, non-empty).

    >>> c = Chunk(range(0, 10), range(25, 50))
    >>> c.label(), c.size
    ('i0-9_r25-49', 250)
    >>> parse_chunk(c.label()) == c
    True
    >>> Chunk(None, range(0, 3)).label()
    'r0-2'
    """

    items: range | None
    replications: range

    def __post_init__(self) -> None:
        for name, block in (("items", self.items), ("replications", self.replications)):
            if block is None and name == "items":
                continue
            if not isinstance(block, range) or block.step != 1 or len(block) == 0:
                raise ValueError(f"{name} must be a non-empty range of step 1, got {block!r}")
            if block.start < 0:
                raise ValueError(f"{name} must start at an index >= 0, got {block!r}")

    @property
    def n_items(self) -> int:
        """Items in the chunk (1 for a study of one item)."""
        return 1 if self.items is None else len(self.items)

    @property
    def size(self) -> int:
        """Units of work in the chunk: items times replications."""
        return self.n_items * len(self.replications)

    def label(self) -> str:
        """The chunk's name in file names and wildcards (inclusive index ranges)."""
        reps = f"r{self.replications.start}-{self.replications.stop - 1}"
        if self.items is None:
            return reps
        return f"i{self.items.start}-{self.items.stop - 1}_{reps}"


def parse_chunk(label: str) -> Chunk:
    """The :class:`Chunk` named ``label`` (the inverse of :meth:`Chunk.label`).

    >>> parse_chunk("i2-3_r0-9").items, parse_chunk("r5-7").replications
    (range(2, 4), range(5, 8))
    >>> parse_chunk("r3-1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: chunk label 'r3-1' is not of the form [i<first>-<last>_]r<first>-<last> ...
    """
    match = _LABEL.fullmatch(str(label))
    bad = ValueError(
        f"chunk label {label!r} is not of the form [i<first>-<last>_]r<first>-<last> "
        "with first <= last"
    )
    if match is None:
        raise bad
    i0, i1, r0, r1 = (None if g is None else int(g) for g in match.groups())
    if r1 < r0 or (i0 is not None and i1 < i0):
        raise bad
    items = None if i0 is None else range(i0, i1 + 1)
    return Chunk(items, range(r0, r1 + 1))


def balanced_blocks(n: int, max_size: int) -> list[range]:
    """``range(n)`` cut into the fewest consecutive blocks of at most ``max_size``, their
    sizes differing by at most one (the larger first).

    >>> balanced_blocks(50, 21)
    [range(0, 17), range(17, 34), range(34, 50)]
    >>> balanced_blocks(3, 10)
    [range(0, 3)]
    """
    if n < 1 or max_size < 1:
        raise ValueError(f"need n >= 1 and max_size >= 1, got n={n}, max_size={max_size}")
    count = math.ceil(n / max_size)
    base, extra = divmod(n, count)
    blocks, start = [], 0
    for k in range(count):
        stop = start + base + (k < extra)
        blocks.append(range(start, stop))
        start = stop
    return blocks


def _derived(target_units: float, total: int) -> int:
    """The block size that a budget of ``target_units`` units of work allows (1 .. total)."""
    if not math.isfinite(target_units):
        return total
    return max(1, min(total, math.floor(target_units)))


def plan_chunks(
    n_items: int | None,
    n_replications: int,
    *,
    unit_seconds: float | Sequence[float],
    target_seconds: float,
    items_per_job: int = 0,
    replications_per_job: int = 0,
) -> list[Chunk]:
    """Split ``n_items`` (``None``: one item, labels without items) times ``n_replications``
    into chunks, ordered by items then replications.

    ``items_per_job`` and ``replications_per_job`` are the block sizes; where one is 0 it is
    derived from ``target_seconds`` (the predicted wall time a job should not exceed, s) and
    ``unit_seconds`` (the predicted time of one replication of one item, s; a sequence gives
    one value per item, and the largest is used): among the blocks that fit the target, the
    split into the fewest jobs, and of those the one that cuts the replications least (an
    item keeps all its replications in one job while they fit). Blocks are balanced
    (:func:`balanced_blocks`). A single replication longer than the target is a job alone.

    >>> [c.label() for c in plan_chunks(4, 10, unit_seconds=1.0, target_seconds=25.0)]
    ['i0-1_r0-9', 'i2-3_r0-9']
    >>> [c.label() for c in plan_chunks(None, 10, unit_seconds=1.0, target_seconds=4.0)]
    ['r0-3', 'r4-6', 'r7-9']
    >>> len(plan_chunks(3, 5, unit_seconds=1.0, target_seconds=1e9, items_per_job=1))
    3

    With 1.5 items' worth of work per job, cutting the replications in three fills the jobs
    better than one item per job (75 jobs instead of 100):

    >>> len(plan_chunks(100, 50, unit_seconds=12.0, target_seconds=890.0))
    75
    """
    if n_items is not None and n_items < 1:
        raise ValueError(f"n_items must be >= 1 or None, got {n_items}")
    if n_replications < 1:
        raise ValueError(f"n_replications must be >= 1, got {n_replications}")
    if items_per_job < 0 or replications_per_job < 0:
        raise ValueError("items_per_job and replications_per_job must be >= 0 (0: derived)")
    units = [float(unit_seconds)] if isinstance(unit_seconds, int | float) else unit_seconds
    unit = max(float(u) for u in units) if len(units) else 0.0
    if not unit >= 0.0 or not target_seconds > 0.0:
        raise ValueError(
            f"need unit_seconds >= 0 and target_seconds > 0, got {unit}, {target_seconds}"
        )
    items = 1 if n_items is None else int(n_items)
    budget = math.inf if unit == 0.0 else target_seconds / unit  # units of work per job

    def jobs(blocks: int) -> tuple[int, int]:
        """(jobs, items per job) with the replications in ``blocks`` balanced blocks."""
        per_block = math.ceil(n_replications / blocks)
        per_item = items_per_job or _derived(budget / per_block, items)
        return math.ceil(items / per_item) * blocks, per_item

    if replications_per_job:
        blocks = math.ceil(n_replications / replications_per_job)
    else:
        # The fewest jobs over the numbers of replication blocks whose blocks fit the target,
        # fewer blocks first among equals; a split into b blocks has at least b jobs.
        fitting = _derived(budget, n_replications)
        best = None
        for b in range(1, n_replications + 1):
            if best is not None and b > best[0]:
                break
            if math.ceil(n_replications / b) > fitting:
                continue
            if best is None or jobs(b)[0] < best[0]:
                best = (jobs(b)[0], b)
        blocks = best[1]
    reps = math.ceil(n_replications / blocks)
    per_item = jobs(blocks)[1]
    rep_blocks = balanced_blocks(n_replications, reps)
    item_blocks = [None] if n_items is None else balanced_blocks(items, per_item)
    return [Chunk(i, r) for i in item_blocks for r in rep_blocks]


def chunk_labels(chunks: Iterable[Chunk]) -> list[str]:
    """The labels of ``chunks``, in order."""
    return [c.label() for c in chunks]
