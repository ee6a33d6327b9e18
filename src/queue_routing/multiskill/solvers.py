"""One entry point for every solver of LOAD-OPT (Part A), as ``scipy.optimize.minimize`` is.

:func:`solve` dispatches on ``method`` and returns a :class:`~.result.Solution` whatever the
solver: the loads ``rho_0..rho_C``, the partition (C_d, C_b, C_0) of Proposition 2, the cost
``sum_j c_j rho_j/(1 - rho_j)`` (cost per unit time) and whether the method met its own
stopping rule (``converged``).

=================  ==========================================================================
``method``         solver
=================  ==========================================================================
``"exact"``        :func:`~.exact.solve_exact`: the optimum up to rounding (ours; the
                   reference every other solver is tested against)
``"fixed-point"``  :func:`~.fixed_point.fixed_point`: the paper's Algorithm 1 (options
                   ``update``, ``init``, ``seed``, ``rng``, ``paper_rounding``,
                   ``max_iterations``, ``p_shared``, ``p_both``)
``"generic"``      :func:`~.generic.solve_generic`: a general-purpose optimiser on the routing
                   probabilities (option ``solver``: ``"L-BFGS-B"`` (default), ``"SLSQP"``,
                   ``"cvxpy"``, and that solver's tolerances)
``"closed-form"``  :func:`~.two_class.solve_two_class`: the C = 2 closed forms of Sec. 4.1
=================  ==========================================================================
"""

from __future__ import annotations

from typing import Any

from .exact import solve_exact
from .model import Instance
from .result import Solution, check_precision

__all__ = ["METHODS", "solve"]

#: The values of :func:`solve`'s ``method``.
METHODS = ("exact", "fixed-point", "generic", "closed-form")


def solve(instance: Instance, method: str = "exact", **options: Any) -> Solution:
    """Optimal Bernoulli routing of ``instance`` by ``method`` (see the module docstring).

    Parameters
    ----------
    instance:
        The multi-skilled system (:class:`~.model.Instance`: ``mu`` and ``eta`` in work per
        unit time, ``cost`` per job per unit time).
    method:
        One of :data:`METHODS`.
    **options:
        Passed to the chosen solver; ``"exact"`` and ``"closed-form"`` take none.

    Raises
    ------
    ValueError
        For an unknown method, an option the method does not take, or ``"closed-form"`` on an
        instance with C != 2 (the message names the argument).

    Warns
    -----
    queue_routing.errors.PrecisionWarning
        When double precision limits the cost's accuracy (:func:`~.result.precision_limit`
        above 1e-9: a load within ~2e-7 of 1, or a total load below ~2e-7); above 0.1 it
        raises :class:`~queue_routing.errors.AccuracyError` instead.

    Examples
    --------
    Table 1 of the paper: the exact optimum and Algorithm 1 (single-class updates, started
    with every class in C_b) reach the same partition and cost.

    >>> from queue_routing.multiskill import solve, table1
    >>> exact = solve(table1())
    >>> round(exact.cost, 5), exact.partition.sets()["dedicated"]
    (145.24838, [3])
    >>> fp = solve(table1(), "fixed-point", update="single", init="both", seed=1)
    >>> fp.converged, fp.partition == exact.partition, round(fp.cost, 5)
    (True, True, 145.24838)

    On two classes the closed forms of Sec. 4.1 agree with the exact solver:

    >>> from queue_routing.multiskill import Instance
    >>> two = Instance(mu=[10, 10, 10], cost=[1, 2.25, 9], eta=[5, 5])
    >>> solve(two, "closed-form").loads.round(12).tolist()
    [0.6, 0.4, 0.0]
    >>> solve(two).loads.round(12).tolist()
    [0.6, 0.4, 0.0]
    """
    if method == "exact":
        _no_options(method, options)
        solution = solve_exact(instance)
    elif method == "fixed-point":
        from .fixed_point import fixed_point

        solution = _call(fixed_point, method, instance, options)
    elif method == "generic":
        from .generic import solve_generic

        options = dict(options)
        solver = options.pop("solver", "L-BFGS-B")
        solution = _call(solve_generic, method, instance, {"method": solver, **options})
    elif method == "closed-form":
        from .two_class import solve_two_class

        _no_options(method, options)
        solution = solve_two_class(instance).to_solution()
    else:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if solution.converged:  # a flagged non-converged answer already says it is not the optimum
        check_precision(solution)
    return solution


def _no_options(method: str, options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"method {method!r} takes no options; got {', '.join(sorted(options))}")


def _call(solver, method: str, instance: Instance, options: dict[str, Any]) -> Solution:
    try:
        return solver(instance, **options)
    except TypeError as exc:  # an option the solver does not take
        if "unexpected keyword argument" in str(exc):
            raise ValueError(f"method {method!r}: {exc}") from None
        raise
