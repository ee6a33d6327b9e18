"""queue-routing: routing and load balancing in multi-server queueing systems.

One subpackage per reproduced paper, each built from the same layers -- a validated model
(frozen dataclasses), solvers and evaluators that take the model and return a result object,
a compiled simulator, the pipeline's experiments as tidy tables, and its figures:

- :mod:`queue_routing.multiskill` (Part A) -- Miguelez, Doncel, Prabhu (2022), multi-skilled
  servers with Bernoulli routing: :func:`~queue_routing.multiskill.solve` (exact solver, the
  paper's fixed-point Algorithm 1, generic solvers, C = 2 closed forms), the comparison models,
  and simulations of dynamic routing policies;
- :mod:`queue_routing.deadlines` (Part B) -- Niño-Mora (2012), admission and routing of soft
  real-time jobs to multiclusters: deadline-miss probabilities, optimal Bernoulli splitting,
  the IO / PI / RB index policies and the optimal policy, all evaluated by
  :func:`~queue_routing.deadlines.evaluate` (exactly, or by simulation);
- :mod:`queue_routing.serverpools` (Part C) -- Stolyar & Yudovina (2013), large flexible server
  pools under LQFS-LB: the static planning LP, the linearised fluid model and its stability
  (:func:`~queue_routing.serverpools.analyze`), the fluid model and many-server simulation.

One vocabulary across the parts: a result's long-run cost per unit time is ``cost``; a
simulation result carries ``ci95`` (95% t half-width over replications) and
``standard_error``; ``seed`` is the root seed and ``keys`` the stream of one job
(:mod:`queue_routing.seeding`); ``horizon`` is the measured time after a ``warmup``, while
Part C's runs, started at t = 0, end at ``t_end`` (warm-up included); the truncated Markov
chain of a part lives in its ``markov`` module.

Shared floor: :mod:`.seeding` (random streams), :mod:`.stats` (confidence intervals),
:mod:`.paired` (paired comparisons), :mod:`.checks` and :mod:`.errors` (arguments and
errors), :mod:`.io` (atomic output), :mod:`.plotting` (figures), :mod:`.cli` (the
``queue-routing`` command). The pipeline's own support (config validation, chunks, the jobs'
cost model, the scripts' glue, provenance, the README's numbers) is the subpackage
:mod:`.workflow`, which no part imports.
"""

__version__ = "0.1.0"
