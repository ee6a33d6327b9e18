"""Part B: admission and routing of soft real-time jobs to multiclusters.

Niño-Mora, "Admission and routing of soft real-time jobs to multiclusters: design and
comparison of index policies", Computers & Operations Research 39 (2012) 3431-3444.

Modules:

* :mod:`.model`: the model objects :class:`Deadline`, :class:`Cluster`, :class:`Instance`
  (validated at construction) and their errors;
* :mod:`.miss`: closed-form deadline-miss probabilities ``P^miss(x)`` and the M/M/m formulas
  of one cluster (Erlang C, stationary tails and distribution, ``P-bar``, ``f``, ``f'``);
* :mod:`.splitting`: the optimal Bernoulli splitting (BS) by the KKT search;
* :mod:`.indices`: the index formulas of one cluster (IO, PI, RB) and the indexability check;
* :mod:`.markov`: the truncated Markov chain: exact evaluation of a policy
  (:class:`ChainResult`) and the optimal policy of up to three clusters by relative value
  iteration, the level raised until the cost is stable (:func:`optimal_policy_converged`);
* :mod:`.simulation`: the compiled discrete-event simulator (:func:`simulate`);
* :mod:`.policies`: the policies on an :class:`Instance`: :data:`POLICIES`, the BS split
  probabilities, index tables, and the entry points :func:`evaluate` and
  :func:`index_function`;
* :mod:`.policy_comparison`: paired comparison of the policies on common random numbers,
  ratios to PI, the best when separated (:func:`compare_policies`);
* :mod:`.three_cluster`: three clusters compiled: exact evaluation by an iterative
  stationary solver (:func:`evaluate_3`) and the simulation of a decision table
  (:func:`simulate_actions`);
* :mod:`.instances`, :mod:`.experiments` and :mod:`.figures`: the pipeline's numerical
  study (its instances, tables and figures).

>>> from queue_routing.deadlines import Instance, evaluate
>>> inst = Instance.from_dict({"arrival_rate": 2.0, "servers": [2, 1],
...     "service_rates": [1.0, 0.8], "rejection_cost": 1.5,
...     "deadline": {"kind": "exponential", "mean": 2.0}})
>>> result = evaluate(inst, "rb", truncation=25)  # exact on the chain at level 25
>>> {"cost", "miss_rate", "rejection_rate", "truncation", "certified"} <= set(result.to_dict())
True
"""

from queue_routing._lazy import ALL, lazy_exports

# Each public name and the submodule that defines it, imported on first use: a script that
# needs one figure function does not pay for the compiled simulators (PEP 562).
_EXPORTS = {
    ".indices": (
        "IndexabilityCheck",
        "IndexabilityWarning",
        "check_indexable",
        "io_index",
        "pi_increments",
        "pi_index",
        "rb_index",
    ),
    ".markov": ALL,
    ".miss": ALL,
    ".model": (
        "DEADLINE_KINDS",
        "DEADLINE_TARGETS",
        "Cluster",
        "Deadline",
        "Instance",
        "InstanceError",
        "UnstableInstanceError",
    ),
    ".policies": (
        "INDEX_POLICIES",
        "METHODS",
        "POLICIES",
        "IndexTable",
        "PolicyError",
        "TableBoundWarning",
        "evaluate",
        "index_function",
        "index_table",
        "simulate_policy",
        "split_probabilities",
    ),
    ".policy_comparison": (
        "PolicyComparison",
        "PolicyEstimate",
        "compare_policies",
    ),
    ".simulation": (
        "SIMULATE_KEY",
        "SimulationResult",
        "simulate",
    ),
    ".splitting": ALL,
    ".three_cluster": ALL,
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
