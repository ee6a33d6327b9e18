"""Part A: load balancing for multi-skilled servers with Bernoulli routing.

Miguelez, Doncel, Prabhu, "Load-balancing for multi-skilled servers with Bernoulli
routing", Annals of Operations Research 312 (2022) 949-971.

C classes of jobs; server j >= 1 is dedicated to class j and server 0 serves every class; all
servers are processor sharing. The problem LOAD-OPT chooses the fraction p_i of class i sent
to its dedicated server to minimise the mean holding cost rate sum_j c_j rho_j/(1 - rho_j).

Modules (each a layer; a reader of Part B or C finds the same layers there):

- :mod:`.model` -- :class:`Instance` (validated at construction), :class:`Partition`, delta,
  the holding cost, the stability condition (Proposition 1);
- :mod:`.solvers` -- :func:`solve`, the one entry point of every LOAD-OPT solver, returning a
  :class:`Solution` (:mod:`.result`); the solvers themselves: :mod:`.exact` (ours, exact up to
  rounding), :mod:`.fixed_point` (the paper's Algorithm 1), :mod:`.generic` (scipy / cvxpy on
  the routing probabilities), :mod:`.two_class` (the C = 2 closed forms);
- :mod:`.compare` -- the comparison models (no sharing, all sharing) and the switching curve;
- :mod:`.instances` -- Table 1 and the paper's random instance generator;
- :mod:`.simulation` -- the compiled simulator of dynamic routing policies (ours);
- :mod:`.markov` -- the same policies' exact cost on the truncated Markov chain;
- :mod:`.policy_comparison` -- paired, variance-reduced comparisons of those policies;
- :mod:`.experiments` -- the pipeline's studies as tidy tables; :mod:`.figures` -- its figures.

>>> from queue_routing.multiskill import compare, table1
>>> costs = compare(table1())
>>> costs["multiskilled"] < costs["no_sharing"]
True
"""

from .compare import (
    AllSharingSolution,
    all_sharing,
    compare,
    no_sharing_cost,
    switching_curve,
    switching_point,
)
from .exact import solve_exact, solve_exact_batch
from .fixed_point import (
    INITIAL_PARTITIONS,
    UPDATE_RULES,
    FixedPointTrace,
    fixed_point,
    initial_partition,
)
from .generic import GENERIC_METHODS, solve_generic
from .instances import random_instance, random_instances, table1, table1_initial_partitions
from .markov import ChainResult, stationary_cost
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
from .policy_comparison import PolicyComparison, PolicyEstimate, compare_policies
from .result import Solution
from .simulation import POLICIES, SimulationResult, policy_weights, simulate
from .solvers import METHODS, solve
from .two_class import TwoClassSolution, solve_two_class

__all__ = [
    "BOTH",
    "DEDICATED",
    "GENERIC_METHODS",
    "INITIAL_PARTITIONS",
    "METHODS",
    "POLICIES",
    "SHARED",
    "UPDATE_RULES",
    "AllSharingSolution",
    "ChainResult",
    "FixedPointTrace",
    "Instance",
    "InstanceError",
    "Partition",
    "PolicyComparison",
    "PolicyEstimate",
    "SimulationResult",
    "Solution",
    "TwoClassSolution",
    "UnstableInstanceError",
    "all_sharing",
    "compare",
    "compare_policies",
    "delta",
    "fixed_point",
    "holding_cost",
    "initial_partition",
    "no_sharing_cost",
    "partition_at",
    "policy_weights",
    "random_instance",
    "random_instances",
    "simulate",
    "solve",
    "solve_exact",
    "solve_exact_batch",
    "solve_generic",
    "solve_two_class",
    "stability_margin",
    "stationary_cost",
    "switching_curve",
    "switching_point",
    "table1",
    "table1_initial_partitions",
]
