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
- :mod:`.policies` -- the routing policies (ours): their names, parameters and user
  policies, as the simulators and the chain take them;
- :mod:`.replications` -- the runs of replications and the simulation results both
  simulators share;
- :mod:`.simulation` -- the compiled simulator of those policies (uniformised chain), and
  :mod:`.general` -- the event-driven one for general job sizes (:mod:`.sizes`);
- :mod:`.markov` -- the same policies' exact cost on the truncated Markov chain;
- :mod:`.optimal` -- the optimal dynamic routing on that chain (relative value iteration,
  certified truncation; kernels in :mod:`.optimal_kernels`), every policy's exact gap to it
  and PI²; its study :mod:`.optimal_study`, figures :mod:`.figures_optimal`;
- :mod:`.policy_comparison` -- paired, variance-reduced comparisons of those policies;
- :mod:`.experiments` -- the pipeline's studies as tidy tables; :mod:`.figures` -- its figures.

>>> from queue_routing.multiskill import compare, table1
>>> costs = compare(table1())
>>> costs["multiskilled"] < costs["no_sharing"]
True
"""

from queue_routing._lazy import ALL, lazy_exports

# Each public name and the submodule that defines it, imported on first use: a script that
# needs one figure function does not pay for the compiled simulators (PEP 562).
_EXPORTS = {
    ".compare": (
        "AllSharingSolution",
        "all_sharing",
        "compare",
        "no_sharing_cost",
        "switching_curve",
        "switching_point",
    ),
    ".exact": ALL,
    ".fixed_point": (
        "INITIAL_PARTITIONS",
        "UPDATE_RULES",
        "FixedPointTrace",
        "fixed_point",
        "initial_partition",
    ),
    ".generic": (
        "GENERIC_METHODS",
        "solve_generic",
    ),
    ".instances": (
        "random_instance",
        "random_instances",
        "table1",
        "table1_initial_partitions",
    ),
    ".markov": (
        "ChainResult",
        "stationary_cost",
    ),
    ".model": ALL,
    ".optimal": (
        "ChainEvaluation",
        "OptimalComparison",
        "OptimalResult",
        "compare_with_optimum",
        "evaluate_policy",
        "optimal_policy",
    ),
    ".policies": (
        "POLICIES",
        "policy_weights",
    ),
    ".policy_comparison": (
        "PolicyComparison",
        "PolicyEstimate",
        "compare_policies",
    ),
    ".replications": ("SimulationResult",),
    ".result": ("Solution",),
    ".simulation": ("simulate",),
    ".solvers": ALL,
    ".two_class": (
        "TwoClassSolution",
        "solve_two_class",
    ),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
