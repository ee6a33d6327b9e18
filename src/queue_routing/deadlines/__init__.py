"""Part B: admission and routing of soft real-time jobs to multiclusters.

Niño-Mora, "Admission and routing of soft real-time jobs to multiclusters: design and
comparison of index policies", Computers & Operations Research 39 (2012) 3431-3444
(see ``shared/spec/deadlines.md``).
"""

from .kernels import (
    erlang_c,
    f,
    f_prime,
    miss_probability,
    sojourn_tail,
    stationary_distribution,
    steady_state_miss,
    waiting_tail,
)
from .model import (
    DEADLINE_KINDS,
    DEADLINE_TARGETS,
    Cluster,
    Deadline,
    Instance,
    InstanceError,
    UnstableInstanceError,
)
from .splitting import BernoulliSplit, ConvexityWarning, optimal_split

__all__ = [
    "DEADLINE_KINDS",
    "DEADLINE_TARGETS",
    "BernoulliSplit",
    "Cluster",
    "ConvexityWarning",
    "Deadline",
    "Instance",
    "InstanceError",
    "UnstableInstanceError",
    "erlang_c",
    "f",
    "f_prime",
    "miss_probability",
    "optimal_split",
    "sojourn_tail",
    "stationary_distribution",
    "steady_state_miss",
    "waiting_tail",
]
