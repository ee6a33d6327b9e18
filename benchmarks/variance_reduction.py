"""Variance of the PI/Bernoulli ratio estimator: the plain mean against controls of known mean.

Usage::

    python benchmarks/variance_reduction.py [--quick] [--seed SEED] [--part a|b|all]

Method: ``docs/multiskill.md#control-variates-with-known-means``. The quantity is
``E[cost_PI] / B``, ``B`` the exact optimal Bernoulli cost; every replication starts from the
stationary law of optimal Bernoulli routing and runs a warm-up of 10% of the horizon. One
*study* simulates ``R`` replications of PI and Bernoulli routing on common random numbers (in
lockstep, as a comparison does) and ``R`` more of PI alone on other streams, each of
``horizon`` time units, and computes from them:

``plain``        ``ybar_PI / B`` over the ``2 R`` PI replications: the estimator a user has
                 without any control (the exact baseline, no Bernoulli run);
``controls``     the regression estimate (``paired.regression_estimate``) over the same ``2 R``
                 PI replications on PI's own controls, ``martingale`` and ``initial_state``
                 (no Bernoulli run needed): equal simulated steps;
``plain-R``      ``ybar_PI / B`` over the ``R`` lockstep PI replications: the plain estimator
                 when Bernoulli routing is simulated anyway, as in a comparison;
``comparison``   ``compare_policies``'s estimator over those ``R``: its default controls
                 (``policy_comparison.default_controls``: ``martingale``, with
                 ``initial_state`` when the instance relaxes more slowly than the warm-up);
``cv-bernoulli`` the estimator before the controls of known mean: the Bernoulli cost alone.

and, to show what each control buys, the regression on each single control over the ``R``
lockstep replications (``bernoulli_cost``, ``martingale``, ``initial_state``, ``arrivals``,
``departures``, ``routed``, ``initial_cost``: ``policy_comparison.known_mean_controls``).
Each estimator's variance is the sample variance over ``M`` independent studies; a factor is
a ratio of two variances over the same studies, its 95% interval a bootstrap over the studies.
Instances: the paper's Table 1 and random instances (``random_instance(C, seed, k)``) at
``C = 10, 100, 200``. The last two lines: the comparison setting (``comparison`` vs
``plain-R``), then the headline ``variance_reduction: <factor>x vs the plain estimator ...``
(``controls`` vs ``plain`` on Table 1, equal steps; median over the random instances).
Target: >= 3x on Table 1, median >= 2x.

Part B (``docs/deadlines.md#paired-policy-comparisons``; ``--part b`` alone): the ratios
``E[cost_p] / E[cost_PI]``, ``p`` = BS, IO, RB, each study simulating ``R`` replications of
every policy either on independent streams (the policy in the keys) or on common random
numbers (``deadlines.compare_policies``), the same arrivals either way; both estimators are
the ratio of means ``ybar_p / xbar_PI``. Instances: the README's two-cluster instance and the
pipeline's ten-cluster large system (``large_instance(seed, 10, ...)`` of the default config).
One line per instance: ``variance_reduction (Part B, <instance>): <factor>x ...``.
"""

from __future__ import annotations

import argparse
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine
from scipy import stats

from queue_routing.deadlines import Instance as DeadlineInstance
from queue_routing.deadlines import compare_policies, index_table, optimal_split, simulate_policy
from queue_routing.deadlines.experiments import large_instance
from queue_routing.multiskill.exact import solve_exact
from queue_routing.multiskill.instances import random_instance, table1
from queue_routing.multiskill.model import Instance
from queue_routing.multiskill.policy_comparison import default_controls, known_mean_controls
from queue_routing.multiskill.simulation import simulate, simulate_policies
from queue_routing.paired import control_variate_estimate, regression_estimate

ESTIMATORS = ("plain", "controls", "plain-R", "comparison", "cv-bernoulli")
SINGLE = (
    "bernoulli_cost",
    "martingale",
    "initial_state",
    "arrivals",
    "departures",
    "routed",
    "initial_cost",
)


def study(inst: Instance, exact, horizon: float, reps: int, seed: int, key) -> dict:
    """One study: every estimator of the PI/Bernoulli ratio (see the module's docstring)."""
    base = float(exact.cost)
    run = {"horizon": horizon, "seed": seed, "start": "bernoulli"}
    keys = ("variance-reduction", inst.name, key)
    both = simulate_policies(inst, ["bernoulli", "pi"], range(reps), keys=(*keys, "crn"), **run)
    alone = simulate_policies(inst, ["pi"], range(reps), keys=(*keys, "alone"), **run)["pi"]
    pi, bern = both["pi"], both["bernoulli"]
    ctl = known_mean_controls(inst, pi, exact)
    ctl_b = known_mean_controls(inst, bern, exact)
    ctl_a = known_mean_controls(inst, alone, exact)
    y2 = np.concatenate([pi.costs, alone.costs])
    own2 = np.column_stack(
        [np.concatenate([ctl[k], ctl_a[k]]) for k in ("martingale", "initial_state")]
    )
    shared = bern.costs - base
    single = {
        "bernoulli_cost": shared,
        "routed": ctl_b["routed"],  # a known mean under Bernoulli's coins only
        **{k: ctl[k] for k in SINGLE if k not in ("bernoulli_cost", "routed")},
    }
    # compare_policies's default controls (warm-up 10% of the horizon, as simulated here)
    columns = {**ctl, "bernoulli_cost": shared}
    comparison = np.column_stack([columns[k] for k in default_controls(inst, 0.1 * horizon, exact)])
    out = {
        "plain": y2.mean() / base,
        "controls": regression_estimate(y2, own2).estimate / base,
        "plain-R": pi.costs.mean() / base,
        "comparison": regression_estimate(pi.costs, comparison).estimate / base,
        "cv-bernoulli": control_variate_estimate(pi.costs, bern.costs, base).estimate / base,
    }
    for name, values in single.items():
        out["single", name] = regression_estimate(pi.costs, values).estimate / base
    return out


def factor_ci(num: np.ndarray, den: np.ndarray, seed: int) -> tuple[float, float, float]:
    """``var(num) / var(den)`` over the same studies, with a 95% bootstrap interval (the
    studies resampled, 2000 times)."""
    rng = np.random.default_rng(seed)
    f = num.var(ddof=1) / den.var(ddof=1)
    idx = rng.integers(0, num.size, (2000, num.size))
    boot = num[idx].var(axis=1, ddof=1) / den[idx].var(axis=1, ddof=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(f), float(lo), float(hi)


def variance_ratio_ci(num: np.ndarray, den: np.ndarray) -> tuple[float, float, float]:
    """``var(num)/var(den)`` with its 95% F interval (independent normal samples)."""
    f = num.var(ddof=1) / den.var(ddof=1)
    d1, d2 = num.size - 1, den.size - 1
    return f, f / stats.f.ppf(0.975, d1, d2), f / stats.f.ppf(0.025, d1, d2)


PART_B_OTHERS = ("bs", "io", "rb")


def part_b_cases(seed: int) -> list[tuple[str, DeadlineInstance, float, int]]:
    """``(name, instance, horizon, table size)``: the README's two-cluster instance and the
    default config's ten-cluster large system."""
    readme = DeadlineInstance.from_dict(
        {"arrival_rate": 3.0, "servers": [3, 2], "service_rates": [1.0, 0.8],
         "rejection_cost": 2.0, "deadline": {"kind": "constant", "t": 1.5}}
    )  # fmt: skip
    large = large_instance(
        seed, 10, servers_range=[1, 4], rate_range=[0.5, 1.5], load=0.9, rejection_cost=2.0,
        deadline={"kind": "constant", "t": 1.5},
    )  # fmt: skip
    return [("two clusters (README)", readme, 2000.0, 60), ("10 clusters", large, 1000.0, 60)]


def part_b_study(inst, horizon: float, table: int, reps: int, seed: int, key, given) -> dict:
    """One study of Part B: the ratio of each policy to PI, independent streams and CRN."""
    run = dict(horizon=horizon, replications=reps, seed=seed, table_size=table)
    ind = {
        p: simulate_policy(
            inst, p, keys=("variance-reduction-b", key, "ind", p), **given[p], **run
        ).replication_costs
        for p in ("pi", *PART_B_OTHERS)
    }
    crn = compare_policies(inst, ("pi", *PART_B_OTHERS), keys=("variance-reduction-b", key), **run)
    out = {}
    for p in PART_B_OTHERS:
        out[p, "independent"] = ind[p].mean() / ind["pi"].mean()
        out[p, "crn"] = crn.policies[p].ratio
    return out


def part_b(args, n_studies: int, reps: int) -> None:
    for name, inst, horizon, table in part_b_cases(args.seed):
        t0 = time.perf_counter()
        split = optimal_split(inst)
        given = {"bs": {"split": split}}
        for p in ("io", "pi", "rb"):
            given[p] = {"table": index_table(inst, p, table, split=split)}
        rows = [
            part_b_study(inst, horizon, table, reps, args.seed, m, given) for m in range(n_studies)
        ]
        print(
            f"\nPart B, {name}: n = {inst.n_clusters}, lambda = {inst.arrival_rate:.4g}, "
            f"{n_studies} studies of {reps} replications x horizon {horizon:g} per policy, "
            f"{time.perf_counter() - t0:.1f} s"
        )
        factors = []
        for p in PART_B_OTHERS:
            ind = np.array([r[p, "independent"] for r in rows])
            crn = np.array([r[p, "crn"] for r in rows])
            f, lo, hi = variance_ratio_ci(ind, crn)
            factors.append((p, f, lo, hi))
            print(
                f"  {p}/pi  independent {ind.mean():.5f} (var {ind.var(ddof=1):.3e})  "
                f"crn {crn.mean():.5f} (var {crn.var(ddof=1):.3e})  "
                f"factor {f:.1f}x (95% CI {lo:.1f}-{hi:.1f})"
            )
        print(
            f"variance_reduction (Part B, {name}): "
            + ", ".join(f"{p.upper()}/PI {f:.1f}x ({lo:.1f}-{hi:.1f})" for p, f, lo, hi in factors)
            + " vs independent streams (paired ratio of means, equal arrivals)"
        )
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter studies")
    parser.add_argument("--seed", type=int, default=2022, help="root seed")
    parser.add_argument(
        "--part", choices=["a", "b", "all"], default="all", help="Part A, Part B or both"
    )
    args = parser.parse_args(argv)

    for line in machine("scipy"):
        print(line)
    n_studies, horizon, reps, n_random = (40, 100.0, 10, 1) if args.quick else (100, 300.0, 10, 3)
    if args.part in ("b", "all"):
        part_b(args, 15 if args.quick else 60, reps)
        if args.part == "b":
            return 0
    print(
        f"\nPart A, mode: {'quick' if args.quick else 'full'}; seed {args.seed}; {n_studies} "
        f"studies per instance; each: {reps} replications of PI and Bernoulli in lockstep + "
        f"{reps} of PI alone, horizon {horizon:g} (+10% warm-up)"
    )
    sys.stdout.flush()
    simulate(table1(), "pi", horizon=1.0, replications=2)  # compile / load the cache

    cases = [table1()] + [
        random_instance(c, args.seed, k) for c in (10, 100, 200) for k in range(n_random)
    ]
    factors = {}
    for inst in cases:
        t0 = time.perf_counter()
        exact = solve_exact(inst)
        rows = [study(inst, exact, horizon, reps, args.seed, m) for m in range(n_studies)]
        est = {e: np.array([r[e] for r in rows]) for e in rows[0]}
        lam = inst.eta.sum() + inst.mu.sum()
        print(
            f"\ninstance {inst.name}: C = {inst.n_classes}, B = {exact.cost:.6g}, "
            f"{2 * reps * round(lam * horizon):,} measured PI steps per study (plain, "
            f"controls), {time.perf_counter() - t0:.1f} s"
        )
        for e in ESTIMATORS:
            v = est[e]
            half = 1.96 * v.std(ddof=1) / np.sqrt(v.size)
            print(
                f"  {e:14s} mean ratio {v.mean():.5f} +- {half:.5f}  variance {v.var(ddof=1):.3e}"
            )
        alone = factor_ci(est["plain"], est["controls"], args.seed)
        shared = factor_ci(est["plain-R"], est["comparison"], args.seed)
        old = est["plain-R"].var(ddof=1) / est["cv-bernoulli"].var(ddof=1)
        each = {k: est["plain-R"].var(ddof=1) / est["single", k].var(ddof=1) for k in SINGLE}
        print(
            f"  variance factor: controls vs plain {alone[0]:.1f}x (95% CI {alone[1]:.1f}-"
            f"{alone[2]:.1f}, equal steps); comparison vs plain-R {shared[0]:.1f}x (95% CI "
            f"{shared[1]:.1f}-{shared[2]:.1f}); Bernoulli cost alone vs plain-R {old:.2f}x"
        )
        print(
            "  each control alone vs plain-R: "
            + ", ".join(f"{k} {v:.2f}x" for k, v in each.items())
        )
        factors[inst.name] = (alone, shared)
        sys.stdout.flush()

    (f, lo, hi), (g, glo, ghi) = factors[cases[0].name]
    others = [factors[i.name][0][0] for i in cases[1:]]
    others_shared = [factors[i.name][1][0] for i in cases[1:]]
    met = f >= 3 and np.median(others) >= 2
    print(
        f"\ntarget >= 3x on Table 1 and median >= 2x: {'met' if met else 'NOT met'}; random "
        "instances: "
        + ", ".join(f"{i.name} {x:.1f}x" for i, x in zip(cases[1:], others, strict=True))
    )
    print(
        f"variance_reduction (comparison setting, Bernoulli run shared): {g:.1f}x vs the plain "
        f"mean of the same replications (Table 1; 95% CI {glo:.1f}-{ghi:.1f}x; median "
        f"{np.median(others_shared):.1f}x over {len(others_shared)} random instances)"
    )
    print(
        f"variance_reduction: {f:.1f}x vs the plain estimator (Table 1, PI/B, controls of "
        f"known mean on PI's own replications, equal steps; 95% CI {lo:.1f}-{hi:.1f}x; median "
        f"{np.median(others):.1f}x over {len(others)} random instances at C = 10, 100, 200)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
