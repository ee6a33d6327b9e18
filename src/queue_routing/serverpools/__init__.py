"""Part C: large flexible server pools under LQFS-LB load balancing.

Stolyar & Yudovina, "Systems with large flexible server pools: instability of 'natural' load
balancing", Annals of Applied Probability 23 (2013) 2099-2138 (arXiv 1012.4140).

- :mod:`.model` -- the system, the static planning problem (SPP) and complete resource pooling;
- :mod:`.linear` -- the linearised fluid model near equilibrium (A_u, A_c) and its spectrum;
- :mod:`.search` -- seeded search over random activity trees for unstable equilibria.
"""

from .linear import (
    LinearStability,
    a_critical,
    a_underloaded,
    analyze,
    critical_spectrum,
    critical_vector_field,
    flow_matrix,
    load_balancing_map,
    spectrum,
    stability_verdict,
    underloaded_vector_field,
)
from .model import (
    CRPError,
    DisconnectedError,
    NonBindingPoolError,
    NonUniqueOptimumError,
    NotATreeError,
    ServerPoolError,
    ServerPoolSystem,
    SPPSolution,
    check_crp,
    solve_spp,
    tree_spp,
)
from .search import (
    SearchResult,
    SizeSummary,
    alternating_path_system,
    instability_search,
    random_spanning_tree,
    random_tree_system,
    sample_system,
)

__all__ = [
    "CRPError",
    "DisconnectedError",
    "LinearStability",
    "NonBindingPoolError",
    "NonUniqueOptimumError",
    "NotATreeError",
    "SPPSolution",
    "SearchResult",
    "ServerPoolError",
    "ServerPoolSystem",
    "SizeSummary",
    "a_critical",
    "a_underloaded",
    "alternating_path_system",
    "analyze",
    "check_crp",
    "critical_spectrum",
    "critical_vector_field",
    "flow_matrix",
    "instability_search",
    "load_balancing_map",
    "random_spanning_tree",
    "random_tree_system",
    "sample_system",
    "solve_spp",
    "spectrum",
    "stability_verdict",
    "tree_spp",
    "underloaded_vector_field",
]
