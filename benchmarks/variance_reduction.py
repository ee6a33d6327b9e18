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
"""

from __future__ import annotations

import argparse
import sys
import time

import _common  # noqa: F401  (first: pins the thread counts before numpy loads)
import numpy as np
from _common import machine
from scipy import stats

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter studies")
    parser.add_argument("--seed", type=int, default=2022, help="root seed")
    args = parser.parse_args(argv)

    for line in machine("scipy"):
        print(line)
    n_studies, horizon, reps, n_random = (40, 100.0, 10, 2) if args.quick else (150, 300.0, 10, 5)
    print(
        f"mode: {'quick' if args.quick else 'full'}; seed {args.seed}; {n_studies} studies per "
        f"instance; each estimator: 2 x {reps} replications of horizon {horizon:g} (+10% warm-up)"
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
