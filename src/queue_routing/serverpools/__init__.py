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
- :mod:`.fluid` -- the full LQFS-LB fluid model and its time-stepping integrator (also LAP's) *;
- :mod:`.lap` -- Leaf Activity Priority: priorities from the tree and a root pool, its
  equilibrium, linearisation and analysis beside LQFS-LB *;
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

from queue_routing._lazy import ALL, lazy_exports

# Each public name and the submodule that defines it, imported on first use: a script that
# needs one figure function does not pay for the compiled simulators (PEP 562).
_EXPORTS = {
    ".crp": ALL,
    ".diffusion": ALL,
    ".errors": ALL,
    ".fluid": ALL,
    ".instances": ALL,
    ".lap": ALL,
    ".linear": ALL,
    ".model": ALL,
    ".search": ALL,
    ".simulation": ALL,
    ".spp": ALL,
    ".stationarity": ALL,
    ".timeaverage": ALL,
    ".tree": ALL,
    ".tree_simplex": ALL,
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
