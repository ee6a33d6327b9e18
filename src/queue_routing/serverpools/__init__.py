"""Part C: large flexible server pools under LQFS-LB load balancing.

Stolyar & Yudovina, "Systems with large flexible server pools: instability of 'natural' load
balancing", Annals of Applied Probability 23 (2013) 2099-2138 (arXiv 1012.4140).

Modules (the public names of those marked * are exported here; the others are imported on
their own):

- :mod:`.errors` -- the exceptions (:class:`ServerPoolError`, the :class:`CRPError`
  family, :class:`UnstableEquilibriumError`) *;
- :mod:`.tree` -- the activity graph and its spanning tree: cycles, components, leaf
  peeling, preorder, edge lookup, random spanning trees *;
- :mod:`.model` -- the system (validated, with its JSON contract) and the type of an SPP
  solution *;
- :mod:`.spp` -- the static planning problem (SPP): :func:`solve_spp`, exact on a certified
  tree, else by HiGHS *;
- :mod:`.crp` -- complete resource pooling: the certified optimum on a spanning tree, and the
  diagnosis of why CRP fails (:func:`check_crp`) *;
- :mod:`.tree_simplex` -- the SPP solved exactly on a spanning tree (log-domain duals,
  round-off bounds) and the dual simplex over spanning trees that certifies CRP *;
- :mod:`.highs` -- the SPP in dimensionless form, solved by HiGHS (where CRP fails);
- :mod:`.linear` -- the linearised fluid model near equilibrium (A_u, A_c) and its spectrum *;
- :mod:`.fluid` -- the full LQFS-LB fluid model and its time-stepping integrator *;
- :mod:`.simulation` -- exact event-driven simulation of the r-th stochastic system *;
- :mod:`.diffusion` -- the stationary covariance of the diffusion limit (Lyapunov) *;
- :mod:`.stationarity` -- derived warm-up, the first-half / second-half stationarity test,
  t intervals of means and of log-log slopes, the tight / escaping verdict *;
- :mod:`.timeaverage` -- the stationary time average of one system at one scale (the
  ``serverpools simulate`` command) *;
- :mod:`.search` -- seeded search over random activity trees for unstable equilibria *;
- :mod:`.instances` -- the example instances (ours) and the heterogeneity family *;
- :mod:`.experiments` -- the pipeline's experiments as tidy tables (pandas);
- :mod:`.figures` -- the pipeline's figures (matplotlib).

Times are in units of 1/mu. A fluid trajectory covers ``[0, t_end]``. A simulated run measures
time averages over a window of length ``horizon`` after a discarded ``warmup``: it covers
``[0, warmup + horizon]``.

>>> sol = solve_spp(example_system("stable"))
>>> round(sol.rho, 6), stability_verdict(sol).stable_underloaded
(0.7, True)
"""

from queue_routing._lazy import lazy_exports

# Each public name and the submodule that defines it, imported on first use: a script that
# needs one figure function does not pay for the compiled simulators (PEP 562).
_EXPORTS = {
    ".crp": ("check_crp",),
    ".diffusion": (
        "lyapunov_residual",
        "noise_covariance",
        "stationary_covariance",
    ),
    ".errors": (
        "MAX_MESSAGE",
        "CRPError",
        "DisconnectedError",
        "NonBindingPoolError",
        "NonUniqueOptimumError",
        "NotATreeError",
        "NotUnderloadedError",
        "ServerPoolError",
        "UnstableEquilibriumError",
    ),
    ".fluid": (
        "FLUID_MAX_POINTS",
        "FLUID_MAX_STEPS",
        "FluidTrajectory",
        "fluid_step",
        "fluid_trajectory",
        "fluid_units",
        "fluid_velocity",
        "linearised_deviation",
    ),
    ".instances": (
        "EXAMPLE_TREES",
        "EXAMPLES",
        "LARGE_CYCLE",
        "STABLE",
        "UNSTABLE",
        "example_system",
        "heterogeneity_family",
        "tree_instance",
    ),
    ".linear": (
        "Analysis",
        "LinearStability",
        "a_critical",
        "a_underloaded",
        "analyze",
        "centering",
        "critical_spectrum",
        "critical_spectrum_of",
        "critical_vector_field",
        "eigenvalue_text",
        "flow_matrix",
        "load_balancing_map",
        "spectrum",
        "stability_verdict",
        "tree_a_underloaded",
        "underloaded_vector_field",
    ),
    ".model": (
        "MAX_MAGNITUDE",
        "MIN_MAGNITUDE",
        "ServerPoolSystem",
        "SPPSolution",
    ),
    ".search": (
        "SEARCH_KEY",
        "SearchResult",
        "SizeSummary",
        "alternating_path_system",
        "instability_search",
        "random_tree_system",
        "sample_system",
        "search_size",
    ),
    ".simulation": (
        "SIMULATE_KEY",
        "STREAMS",
        "SimulationRun",
        "initial_state",
        "invariant_violations",
        "replication_states",
        "simulate",
    ),
    ".spp": (
        "solve_spp",
        "tree_spp",
    ),
    ".stationarity": (
        "MeanInterval",
        "SlopeInterval",
        "StationarityCheck",
        "derived_warmup",
        "halves_test",
        "mean_interval",
        "slope_interval",
        "slope_verdict",
    ),
    ".timeaverage": (
        "TimeAverageEstimate",
        "time_average",
    ),
    ".tree": (
        "RootedTree",
        "adjacency",
        "check_spanning_tree",
        "components",
        "components_text",
        "cycle_text",
        "edge_names",
        "find_cycle",
        "greedy_spanning_tree",
        "grouped_edges",
        "is_spanning_tree",
        "node_names",
        "peel_leaves",
        "random_spanning_tree",
        "rooted_tree",
    ),
    ".tree_simplex": (
        "TreeEvaluation",
        "certify_tree",
        "crp_tree",
        "exact_eval",
        "tree_eval",
    ),
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
