"""Variance of the PI/Bernoulli ratio estimator: independent streams, CRN, CRN + control.

Usage::

    python benchmarks/variance_reduction.py [--quick] [--seed SEED]

Method: ``docs/multiskill.md#paired-policy-comparisons``. The quantity is ``E[cost_PI] / B``,
``B`` the exact optimal Bernoulli cost; every replication starts from the stationary law of
optimal Bernoulli routing and runs a warm-up of 10% of the horizon. One *study* spends the
same budget on each estimator, ``2 R`` replications of ``horizon`` time units (the same number
of uniformised steps, ``2 R round(Lambda horizon)`` plus warm-ups; real events differ only by
the idle servers' self-loops):

``independent``  ``ybar_PI / xbar_Bern``, PI and Bernoulli on independent streams (R each);
``crn``          the same ratio of means, both on common random numbers (R each);
``crn+cv``       ``theta / B``, ``theta`` the control-variate estimate of ``E[cost_PI]`` with
                 the CRN Bernoulli run as control (``compare_policies``'s ratio);
``plain``        ``ybar_PI / B`` over ``2 R`` PI replications, no Bernoulli run: the
                 estimator the pipeline used before paired comparisons;
``plain-R``      ``ybar_PI / B`` over the ``R`` CRN PI replications (half the budget): the
                 plain estimator when Bernoulli routing is simulated anyway, as in a
                 comparison of every policy, where the control costs nothing extra.

Each estimator's variance is the sample variance over ``M`` independent studies (independent
keys); the studies of ``independent`` and ``crn+cv`` use disjoint streams, so their variance
ratio has an F-distribution 95% interval (normal studies). Instances: the paper's Table 1
and a sample of the paper's random instances (``random_instance(10, seed, k)``). The last
line reads ``variance_reduction: <factor>x vs independent streams (...)``: the Table 1 factor
of ``crn+cv`` over ``independent``. Target: >= 3x.

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
from queue_routing.multiskill.simulation import simulate
from queue_routing.paired import control_variate_estimate

ESTIMATORS = ("independent", "crn", "crn+cv", "plain", "plain-R")


def study(inst: Instance, base: float, horizon: float, reps: int, seed: int, key) -> dict:
    """One study: every estimator of the PI/Bernoulli ratio at the same budget."""

    def run(policy, *keys):
        return simulate(
            inst, policy, horizon=horizon, replications=reps, seed=seed,
            keys=("variance-reduction", inst.name, key, *keys), start="bernoulli",
        ).replication_costs  # fmt: skip

    pi_c, bern_c = run("pi", "crn"), run("bernoulli", "crn")  # common streams
    pi_i, bern_i = run("pi", "ind", "pi"), run("bernoulli", "ind", "bernoulli")
    return {
        "independent": pi_i.mean() / bern_i.mean(),
        "crn": pi_c.mean() / bern_c.mean(),
        "crn+cv": control_variate_estimate(pi_c, bern_c, base).estimate / base,
        "plain": np.concatenate([pi_c, pi_i]).mean() / base,  # 2R independent PI replications
        "plain-R": pi_c.mean() / base,
    }


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
    n_studies, horizon, reps, n_random = (40, 100.0, 10, 2) if args.quick else (150, 300.0, 10, 5)
    if args.part in ("b", "all"):
        part_b(args, 15 if args.quick else 60, reps)
        if args.part == "b":
            return 0
    print(
        f"\nPart A, mode: {'quick' if args.quick else 'full'}; seed {args.seed}; {n_studies} "
        f"studies per instance; each estimator: 2 x {reps} replications of horizon {horizon:g} "
        "(+10% warm-up)"
    )
    sys.stdout.flush()
    simulate(table1(), "pi", horizon=1.0, replications=2)  # compile / load the cache

    cases = [table1()] + [random_instance(10, args.seed, k) for k in range(n_random)]
    factors = {}
    for inst in cases:
        t0 = time.perf_counter()
        base = float(solve_exact(inst).cost)
        rows = [study(inst, base, horizon, reps, args.seed, m) for m in range(n_studies)]
        est = {e: np.array([r[e] for r in rows]) for e in ESTIMATORS}
        lam = inst.eta.sum() + inst.mu.sum()
        steps = 2 * reps * round(lam * horizon)
        print(
            f"\ninstance {inst.name}: C = {inst.n_classes}, B = {base:.6g}, "
            f"{steps:,} measured steps per estimator per study, "
            f"{time.perf_counter() - t0:.1f} s"
        )
        for e in ESTIMATORS:
            v = est[e]
            half = 1.96 * v.std(ddof=1) / np.sqrt(v.size)
            print(
                f"  {e:12s} mean ratio {v.mean():.5f} +- {half:.5f}  variance {v.var(ddof=1):.3e}"
            )
        f, lo, hi = variance_ratio_ci(est["independent"], est["crn+cv"])
        f_crn = est["independent"].var(ddof=1) / est["crn"].var(ddof=1)
        f_plain = est["plain"].var(ddof=1) / est["crn+cv"].var(ddof=1)
        f_plain_r = est["plain-R"].var(ddof=1) / est["crn+cv"].var(ddof=1)
        print(
            f"  variance factor vs independent: crn {f_crn:.2f}x, crn+cv {f:.2f}x "
            f"(95% CI {lo:.2f}-{hi:.2f}); crn+cv vs plain {f_plain:.2f}x (equal steps), "
            f"vs plain-R {f_plain_r:.2f}x (Bernoulli run shared)"
        )
        factors[inst.name] = (f, lo, hi, f_plain)
        sys.stdout.flush()

    f, lo, hi, f_plain = factors[cases[0].name]
    others = [factors[i.name][0] for i in cases[1:]]
    print(
        f"\ntarget >= 3x on Table 1: {'met' if f >= 3 else 'NOT met'}; "
        f"random instances: {', '.join(f'{x:.1f}x' for x in others)}"
    )
    print(
        f"variance_reduction: {f:.1f}x vs independent streams (Table 1, PI/Bernoulli ratio, "
        f"CRN + control variate, equal steps; 95% CI {lo:.1f}-{hi:.1f}x; {f_plain:.1f}x vs "
        f"the plain exact-baseline estimator; median {np.median(others):.1f}x over "
        f"{len(others)} random instances)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
