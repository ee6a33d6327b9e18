"""Part A: load balancing for multi-skilled servers with Bernoulli routing.

Miguelez, Doncel, Prabhu, "Load-balancing for multi-skilled servers with Bernoulli
routing", Annals of Operations Research 312 (2022) 949-971.
"""

from .exact import solve_exact, solve_exact_batch
from .model import (
    BOTH,
    DEDICATED,
    SHARED,
    Instance,
    InstanceError,
    Partition,
    UnstableInstanceError,
    delta,
    holding_cost,
    partition_at,
    stability_margin,
)
from .result import Solution

__all__ = [
    "BOTH",
    "DEDICATED",
    "SHARED",
    "Instance",
    "InstanceError",
    "Partition",
    "Solution",
    "UnstableInstanceError",
    "delta",
    "holding_cost",
    "partition_at",
    "solve_exact",
    "solve_exact_batch",
    "stability_margin",
]
