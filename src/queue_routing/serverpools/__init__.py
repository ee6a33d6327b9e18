"""Part C: large flexible server pools under LQFS-LB load balancing.

Stolyar & Yudovina, "Systems with large flexible server pools: instability of 'natural' load
balancing", Annals of Applied Probability 23 (2013) 2099-2138 (arXiv 1012.4140).

Modules (the names marked * are exported here; the last two are imported on their own):

- :mod:`.errors` -- the exceptions (:class:`ServerPoolError`, the :class:`CRPError`
  family, :class:`UnstableEquilibriumError`) *;
- :mod:`.tree` -- the activity graph and its spanning tree: cycles, components, leaf
  peeling, preorder, edge lookup, random spanning trees *;
- :mod:`.model` -- the system, the static planning problem (SPP) and complete resource
  pooling *;
- :mod:`.tree_simplex` -- the SPP solved exactly on a spanning tree (log-domain duals,
  round-off bounds) and the dual simplex over spanning trees that certifies CRP *;
- :mod:`.linear` -- the linearised fluid model near equilibrium (A_u, A_c) and its spectrum *;
- :mod:`.fluid` -- the full LQFS-LB fluid model and its time-stepping integrator *;
- :mod:`.simulation` -- exact event-driven simulation of the r-th stochastic system *;
- :mod:`.diffusion` -- the stationary covariance of the diffusion limit (Lyapunov) *;
- :mod:`.stationarity` -- derived burn-in, the first-half / second-half stationarity test,
  t intervals of means and of log-log slopes, the tight / escaping verdict *;
- :mod:`.timeaverage` -- the stationary time average of one system at one scale (the
  ``serverpools simulate`` command) *;
- :mod:`.search` -- seeded search over random activity trees for unstable equilibria *;
- :mod:`.instances` -- the example instances (ours) and the heterogeneity family *;
- :mod:`.experiments` -- the pipeline's experiments as tidy tables (pandas);
- :mod:`.figures` -- the pipeline's figures (matplotlib).

Times are in units of 1/mu. A run of the fluid model or of the simulator covers
``[0, t_end]``; the simulator's time averages discard the initial ``[0, warmup)``.

>>> sol = solve_spp(example_system("stable"))
>>> round(sol.rho, 6), stability_verdict(sol).stable_underloaded
(0.7, True)
"""

from .diffusion import lyapunov_residual, noise_covariance, stationary_covariance
from .errors import (
    MAX_MESSAGE,
    CRPError,
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    NotUnderloadedError,
    ServerPoolError,
    UnstableEquilibriumError,
)
from .fluid import (
    FLUID_MAX_POINTS,
    FLUID_MAX_STEPS,
    FluidTrajectory,
    fluid_step,
    fluid_trajectory,
    fluid_units,
    fluid_velocity,
    linearised_deviation,
)
from .instances import (
    EXAMPLE_TREES,
    EXAMPLES,
    LARGE_CYCLE,
    STABLE,
    UNSTABLE,
    example_system,
    heterogeneity_family,
    tree_instance,
)
from .linear import (
    LinearStability,
    a_critical,
    a_underloaded,
    analyze,
    centering,
    critical_spectrum,
    critical_spectrum_of,
    critical_vector_field,
    flow_matrix,
    load_balancing_map,
    spectrum,
    stability_verdict,
    tree_a_underloaded,
    underloaded_vector_field,
)
from .model import (
    MAX_MAGNITUDE,
    MIN_MAGNITUDE,
    ServerPoolSystem,
    SPPSolution,
    check_crp,
    solve_spp,
    tree_spp,
)
from .search import (
    SEARCH_KEY,
    SearchResult,
    SizeSummary,
    alternating_path_system,
    instability_search,
    random_tree_system,
    sample_system,
    search_size,
)
from .simulation import (
    SIMULATE_KEY,
    STREAMS,
    SimulationRun,
    initial_state,
    invariant_violations,
    replication_states,
    simulate,
)
from .stationarity import (
    MeanInterval,
    SlopeInterval,
    StationarityCheck,
    derived_burn_in,
    halves_test,
    mean_interval,
    slope_interval,
    slope_verdict,
)
from .timeaverage import TimeAverageEstimate, time_average
from .tree import (
    RootedTree,
    adjacency,
    check_spanning_tree,
    components,
    components_text,
    cycle_text,
    edge_names,
    find_cycle,
    greedy_spanning_tree,
    grouped_edges,
    is_spanning_tree,
    node_names,
    peel_leaves,
    random_spanning_tree,
    rooted_tree,
)
from .tree_simplex import TreeEvaluation, certify_tree, crp_tree, exact_eval, tree_eval

__all__ = [
    "EXAMPLES",
    "EXAMPLE_TREES",
    "FLUID_MAX_POINTS",
    "FLUID_MAX_STEPS",
    "LARGE_CYCLE",
    "MAX_MAGNITUDE",
    "MAX_MESSAGE",
    "MIN_MAGNITUDE",
    "SEARCH_KEY",
    "SIMULATE_KEY",
    "STABLE",
    "STREAMS",
    "UNSTABLE",
    "CRPError",
    "DisconnectedError",
    "FluidTrajectory",
    "LinearStability",
    "MeanInterval",
    "NonBindingPoolError",
    "NonUniqueOptimumError",
    "NotATreeError",
    "NotUnderloadedError",
    "RootedTree",
    "SPPSolution",
    "SearchResult",
    "ServerPoolError",
    "ServerPoolSystem",
    "SimulationRun",
    "SizeSummary",
    "SlopeInterval",
    "StationarityCheck",
    "TimeAverageEstimate",
    "TreeEvaluation",
    "UnstableEquilibriumError",
    "a_critical",
    "a_underloaded",
    "adjacency",
    "alternating_path_system",
    "analyze",
    "centering",
    "certify_tree",
    "check_crp",
    "check_spanning_tree",
    "components",
    "components_text",
    "critical_spectrum",
    "critical_spectrum_of",
    "critical_vector_field",
    "crp_tree",
    "cycle_text",
    "derived_burn_in",
    "edge_names",
    "exact_eval",
    "example_system",
    "find_cycle",
    "flow_matrix",
    "fluid_step",
    "fluid_trajectory",
    "fluid_units",
    "fluid_velocity",
    "greedy_spanning_tree",
    "grouped_edges",
    "halves_test",
    "heterogeneity_family",
    "initial_state",
    "instability_search",
    "invariant_violations",
    "is_spanning_tree",
    "linearised_deviation",
    "load_balancing_map",
    "lyapunov_residual",
    "mean_interval",
    "node_names",
    "noise_covariance",
    "peel_leaves",
    "random_spanning_tree",
    "random_tree_system",
    "replication_states",
    "rooted_tree",
    "sample_system",
    "search_size",
    "simulate",
    "slope_interval",
    "slope_verdict",
    "solve_spp",
    "spectrum",
    "stability_verdict",
    "stationary_covariance",
    "time_average",
    "tree_a_underloaded",
    "tree_eval",
    "tree_instance",
    "tree_spp",
    "underloaded_vector_field",
]
