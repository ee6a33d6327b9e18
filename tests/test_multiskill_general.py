"""The general-size simulator (docs/multiskill.md#general-job-sizes) against exact references.

* insensitivity of processor sharing: under optimal Bernoulli routing every server is an
  M/G/1-PS queue, so for every size law of mean 1 the cost is the product form
  ``sum_j c_j rho_j/(1 - rho_j)`` of the exact solver;
* M/G/1-PS on one server: mean number ``rho/(1 - rho)`` and mean response time
  ``(1/mu)/(1 - rho)`` (jobs of mean work 1 at speed ``mu``), measured per job, for the
  dedicated server alone and for the shared server alone;
* the stationary start (geometric counts, equilibrium residual works): a short run from it
  is unbiased at once;
* exponential sizes: every policy agrees with the truncated CTMC of the same policy
  (``markov.stationary_cost``) and with the uniformised simulator (independent streams,
  combined intervals);
* the samplers: mean 1 and the target SCV by Monte Carlo (and the law of ``log S`` for the
  lognormal), the equilibrium sampler's mean ``(1 + SCV)/2``;
* the spec parser (hypothesis): round trip and one-line errors.

Tolerances: Bonferroni t tests at family-wise level 1% per test function (tests/_stats.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from _stats import assert_mean_agrees, bonferroni_t
from queue_routing.multiskill import Instance, compare_policies, simulate, solve_exact
from queue_routing.multiskill.general import (
    GeneralSimulationResult,
    simulate_general,
    simulate_general_replications,
)
from queue_routing.multiskill.instances import table1
from queue_routing.multiskill.markov import stationary_cost
from queue_routing.multiskill.policies import POLICIES
from queue_routing.multiskill.simulation import simulate_replications
from queue_routing.multiskill.sizes import (
    KINDS,
    JobSizeError,
    JobSizes,
    job_sizes,
    sample_residuals,
    sample_sizes,
)
from queue_routing.seeding import stream_states

SEED = 2022
LAWS = [
    "deterministic",
    "erlang:4",
    "exponential",
    "hyperexponential:4",
    "lognormal:4",
    "hyperexponential:16",
    "lognormal:16",
]
C1 = Instance(mu=[2.0, 1.5], cost=[1.0, 3.0], eta=[1.6], name="c1")
C2 = Instance(mu=[3.0, 2.0, 1.5], cost=[1.0, 2.0, 3.0], eta=[1.5, 1.0], name="c2")


# -- samplers ------------------------------------------------------------------------------
def _state(name: str) -> np.ndarray:
    return stream_states(SEED, "test-sizes", name, streams=("sizes",))[0]


@pytest.mark.parametrize("spec", LAWS)
def test_sampler_mean_and_scv(spec):
    """Mean 1 and E[S^2] = 1 + SCV, each within 4.4 SE of the sample (Bonferroni, 2 x 7)."""
    law = job_sizes(spec)
    s = sample_sizes(law, _state(spec), 400_000)
    q = bonferroni_t(2 * len(LAWS), s.size - 1)
    for values, target, what in ((s, 1.0, "mean"), (s * s, 1.0 + law.scv, "E[S^2]")):
        se = values.std(ddof=1) / math.sqrt(values.size)
        assert abs(values.mean() - target) <= q * se + 1e-12, (
            f"{spec}: {what} {values.mean():.5g} vs {target:g} (SE {se:.2g})"
        )
    assert np.all(s > 0)


@pytest.mark.parametrize("scv", [4.0, 16.0])
def test_lognormal_log_is_normal(scv):
    """log S ~ N(-s^2/2, s^2) with s^2 = ln(1 + SCV): KS test (the fourth moment of a
    lognormal of SCV 16 is too large for a sharp moment check)."""
    s2 = math.log1p(scv)
    logs = np.log(sample_sizes(f"lognormal:{scv:g}", _state(f"ln{scv}"), 100_000))
    p = stats.kstest(logs, stats.norm(loc=-s2 / 2, scale=math.sqrt(s2)).cdf).pvalue
    assert p > 0.005


@pytest.mark.parametrize("spec", LAWS)
def test_residual_sampler_mean(spec):
    """The equilibrium law has mean E[S^2] / (2 E[S]) = (1 + SCV)/2."""
    law = job_sizes(spec)
    r = sample_residuals(law, _state("res" + spec), 400_000)
    assert_mean_agrees(r, (1.0 + law.scv) / 2, len(LAWS), f"residual of {spec}")


def test_residual_of_deterministic_is_uniform():
    r = sample_residuals("deterministic", _state("resdet"), 50_000)
    assert stats.kstest(r, "uniform").pvalue > 0.01


# -- the parser ------------------------------------------------------------------------------
_laws = st.one_of(
    st.just(JobSizes("exponential")),
    st.just(JobSizes("deterministic")),
    st.integers(1, 1000).map(lambda k: JobSizes("erlang", k=k)),
    st.floats(1.0, 1e6).map(lambda v: JobSizes("hyperexponential", scv=float(f"{v:g}"))),
    st.floats(1e-6, 1e6).map(lambda v: JobSizes("lognormal", scv=float(f"{v:g}"))),
)


@given(_laws)
def test_spec_round_trip(law):
    assert job_sizes(law.spec) == law
    assert job_sizes(f"  {law.spec} ") == law


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=30), st.sampled_from(KINDS).map(lambda k: k + ":")))
def test_spec_parser_never_crashes(text):
    """Any string parses or raises JobSizeError (a ValueError) with one line naming it."""
    try:
        law = job_sizes(text)
    except JobSizeError as exc:
        msg = str(exc)
        assert msg.startswith("job sizes") and "\n" not in msg
    else:
        assert law.kind in KINDS and law.scv >= 0


@pytest.mark.parametrize(
    "text, needle",
    [
        ("gamma:2", "unknown law"),
        ("erlang", "needs an order K"),
        ("erlang:2.5", "integer order"),
        ("erlang:0", "1..1000"),
        ("hyperexponential:0.5", ">= 1"),
        ("lognormal:-1", "> 0"),
        ("lognormal:nan", "finite"),
        ("deterministic:2", "takes no parameter"),
    ],
)
def test_bad_specs(text, needle):
    with pytest.raises(JobSizeError, match=needle):
        job_sizes(text)


def test_bad_laws_at_construction():
    with pytest.raises(JobSizeError, match="SCV 1"):
        JobSizes("exponential", scv=2.0)
    with pytest.raises(JobSizeError, match="erlang only"):
        JobSizes("lognormal", scv=2.0, k=3)


# -- insensitivity ---------------------------------------------------------------------------
def test_bernoulli_cost_is_insensitive():
    """Simulated optimal Bernoulli cost vs the exact product form, every law, two instances."""
    cases = [
        (C1, 2.0e4),
        (Instance(mu=table1().mu, cost=table1().cost, eta=0.7 * table1().eta), 400.0),
    ]
    m = len(LAWS) * len(cases)
    for inst, horizon in cases:
        exact = solve_exact(inst).cost
        for spec in LAWS:
            res = simulate_general(
                inst, "bernoulli", job_sizes=spec, horizon=horizon, warmup=0.0,
                replications=20, seed=SEED, keys=("insensitive",), start="bernoulli",
            )  # fmt: skip
            assert_mean_agrees(res.replication_costs, exact, m, f"{inst.name} {spec}")


def test_stationary_start_is_unbiased_at_once():
    """From the stationary start (geometric counts, equilibrium residual works) a very short
    run of Bernoulli routing has the exact mean number of jobs: 4000 replications of 0.5
    time units, no warm-up. (Residual works drawn from the size law instead would leave the
    queue too fast for the hyperexponential, whose equilibrium mean is 8.5.)"""
    inst = C1
    rho = solve_exact(inst).loads
    exact = rho / (1 - rho)
    m = 2 * 2
    for spec in ("hyperexponential:16", "deterministic"):
        block = simulate_general_replications(
            inst, "bernoulli", range(4000), job_sizes=spec, horizon=0.5, warmup=0.0,
            seed=SEED, keys=("start",), start="bernoulli",
        )  # fmt: skip
        for j in range(2):
            assert_mean_agrees(block.means[:, j], exact[j], m, f"{spec} server {j}")


@pytest.mark.parametrize(
    "mu, cost, server",
    [([1.0, 2.0], [1000.0, 1.0], 1), ([2.0, 1.0], [1.0, 1000.0], 0)],
    ids=["dedicated", "shared"],
)
def test_mg1_ps_response_time(mu, cost, server):
    """One M/G/1-PS queue (the optimum sends every job to one server, load 0.6): mean number
    rho/(1 - rho) = 1.5 and mean response time per job (1/mu)/(1 - rho) = 1.25, every law."""
    inst = Instance(mu=mu, cost=cost, eta=[1.2])
    assert solve_exact(inst).loads[1 - server] == 0.0
    rho = 1.2 / mu[server]
    m = 2 * len(LAWS)
    for spec in LAWS:
        res = simulate_general(
            inst, "bernoulli", job_sizes=spec, horizon=2.0e4, warmup=200.0, replications=20,
            seed=SEED, keys=("mg1",), start="empty",
        )  # fmt: skip
        per_rep_t = []
        for r in range(20):
            b = simulate_general_replications(
                inst, "bernoulli", [r], job_sizes=spec, horizon=2.0e4, warmup=200.0,
                seed=SEED, keys=("mg1",),
            )  # fmt: skip
            assert b.departures[0, 1 - server] == 0
            per_rep_t.append(b.response_sums[0, server] / b.departures[0, server])
        assert_mean_agrees(res.replication_means[:, server], rho / (1 - rho), m, f"N {spec}")
        assert_mean_agrees(per_rep_t, (1 / mu[server]) / (1 - rho), m, f"T {spec}")
        assert res.per_server_mean_response[server] == pytest.approx(np.mean(per_rep_t))


# -- exponential sizes: agreement with the chain and with the uniformised simulator -----------
@pytest.mark.parametrize(
    "inst", [C1, pytest.param(C2, marks=pytest.mark.slow)], ids=lambda i: i.name
)
def test_exponential_general_vs_exact_chain(inst):
    """With exponential sizes the count process is the CTMC of markov.py: every policy's
    simulated cost agrees with the truncated chain (C = 1; C = 2 under -m slow)."""
    m = len(POLICIES)
    horizon = 2.0e4
    for policy in POLICIES:
        exact = stationary_cost(inst, policy).cost
        res = simulate_general(
            inst, policy, horizon=horizon, replications=20, seed=SEED, keys=("chain",),
            start="bernoulli",
        )  # fmt: skip
        assert_mean_agrees(res.replication_costs, exact, m, f"{inst.name} {policy}")


_T1 = table1()
_UNIFORMISED_CASES = [
    (C2, 5.0e3),
    (_T1, 300.0),
    pytest.param(Instance(mu=_T1.mu, cost=_T1.cost, eta=0.8 * _T1.eta), 400.0,
                 marks=pytest.mark.slow),
]  # fmt: skip


@pytest.mark.parametrize("inst, horizon", _UNIFORMISED_CASES, ids=["c2", "table1", "table1x0.8"])
def test_exponential_general_vs_uniformised(inst, horizon):
    """Every policy: event-driven and uniformised simulators (independent streams) agree
    within the combined interval (Welch t, Bonferroni over the policies)."""
    m = len(POLICIES)
    for policy in POLICIES:
        kw = dict(horizon=horizon, replications=20, seed=SEED, start="bernoulli")
        a = simulate_general(inst, policy, keys=("general",), **kw).replication_costs
        b = simulate(inst, policy, keys=("uniformised",), **kw).replication_costs
        se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        q = bonferroni_t(m, a.size + b.size - 2)
        assert abs(a.mean() - b.mean()) <= q * se, (
            f"{inst.name} {policy}: general {a.mean():.5g} vs uniformised {b.mean():.5g}"
            f" (+- {q * se:.2g})"
        )


# -- dispatch, reproducibility, common random numbers --------------------------------------
def test_exponential_keeps_the_uniformised_simulator():
    """job_sizes=None and "exponential" give today's uniformised results bit for bit."""
    kw = dict(horizon=200.0, replications=3, seed=5, start="bernoulli")
    base = simulate(C2, "pi", **kw)
    for law in ("exponential", JobSizes("exponential")):
        other = simulate(C2, "pi", job_sizes=law, **kw)
        assert type(other) is type(base) and other.to_dict() == base.to_dict()
        assert other.replication_costs.tolist() == base.replication_costs.tolist()
    block = simulate_replications(C2, "pi", [1, 2], horizon=200.0, seed=5, job_sizes=None)
    assert block.costs.tolist() == base.replication_costs[1:].tolist()
    a = compare_policies(C2, ["pi"], horizon=200.0, replications=3, seed=5)
    b = compare_policies(C2, ["pi"], horizon=200.0, replications=3, seed=5, job_sizes="exponential")
    assert a.to_dict() == b.to_dict()


def test_general_dispatch_and_reproducibility():
    kw = dict(horizon=300.0, replications=3, seed=5, start="bernoulli")
    a = simulate(C2, "led", job_sizes="lognormal:4", **kw)
    b = simulate_general(C2, "led", job_sizes=JobSizes("lognormal", scv=4.0), **kw)
    assert isinstance(a, GeneralSimulationResult)
    assert a.replication_costs.tolist() == b.replication_costs.tolist()
    assert a.to_dict()["job_sizes"] == "lognormal:4" and a.steps == a.events
    c = simulate(C2, "led", job_sizes="lognormal:4", **{**kw, "seed": 6})
    assert c.cost != a.cost


def test_common_random_numbers_across_policies():
    """Every policy sees the same arrival stream: from empty with no warm-up every departure
    is counted, so arrivals = events - departures is the same for every policy (the number of
    arrival epochs before the end, which the routing cannot change)."""
    kw = dict(job_sizes="hyperexponential:4", horizon=200.0, warmup=0.0, seed=9)
    arrivals = set()
    for p in POLICIES:
        b = simulate_general_replications(C2, p, [0], start="empty", **kw)
        arrivals.add(b.events_per_replication[0] - int(b.departures[0].sum()))
    assert len(arrivals) == 1


def test_compare_policies_general_sizes():
    """The paired comparison runs on general sizes; Bernoulli's ratio is 1 by construction and
    its plain simulated cost is unbiased for the exact cost (the control variate's premise)."""
    res = compare_policies(
        C1, ["bernoulli", "pi"], horizon=2000.0, replications=10, seed=1,
        job_sizes="deterministic",
    )  # fmt: skip
    assert res.policies["bernoulli"].ratio == 1.0
    sim = res.simulations["bernoulli"]
    assert isinstance(sim, GeneralSimulationResult)
    assert_mean_agrees(sim.replication_costs, res.baseline_cost, 1, "bernoulli")
    assert res.policies["pi"].ratio < 1.0


# -- the pipeline's study on the smoke config ------------------------------------------------
@pytest.mark.slow
def test_job_size_rules_on_the_smoke_config(tmp_path):
    """The study's rules alone on the smoke config: tables and figure written, a rerun in a
    fresh directory byte-identical (streams from the seed and the wildcards only)."""
    import pandas as pd

    from _workflow import SMOKE, run_snakemake

    target = "multiskill_fig_job_sizes"
    outputs = [
        "results/multiskill/multiskill_job_sizes_table/summary.csv",
        "results/multiskill/multiskill_job_sizes_table/summary.md",
        "results/multiskill/multiskill_job_sizes_table/differences.csv",
    ]
    runs = []
    for name in ("a", "b"):
        workdir = tmp_path / name
        workdir.mkdir()
        run_snakemake(workdir, target, "--configfile", str(SMOKE), cores="1")
        assert (workdir / "figures" / "multiskill_job_sizes.png").stat().st_size > 1000
        runs.append({rel: (workdir / rel).read_bytes() for rel in outputs})
    assert runs[0] == runs[1]
    summary = pd.read_csv(tmp_path / "a" / outputs[0])
    assert set(summary["sample"]) == {"table1", "random"}
    assert "bernoulli" not in set(summary["policy"])


def test_job_sizes_summary_verdicts_and_gains():
    """The summary's gains and verdict counts against a hand-made comparison table."""
    import pandas as pd

    from queue_routing.multiskill.experiments import NOT_SEPARATED, job_sizes_summary

    common = {"sample": "s", "job_sizes": "deterministic", "law": "deterministic", "scv": 0.0}
    budget = {"replications": 10, "horizon": 100.0, "warmup": 10.0}
    rows = pd.DataFrame(
        [
            {**common, **budget, "instance": k, "policy": p, "ratio": r, "ratio_ci95": 0.01,
             "best": b}
            for k, p, r, b in [
                (0, "bernoulli", 1.0, "pi"), (0, "pi", 0.8, "pi"), (0, "jsq", 1.2, "pi"),
                (1, "bernoulli", 1.0, NOT_SEPARATED), (1, "pi", 0.9, NOT_SEPARATED),
                (1, "jsq", 0.95, NOT_SEPARATED),
            ]
        ]
    )  # fmt: skip
    diffs = pd.DataFrame(
        [
            {**common, "instance": k, "policy_a": a, "policy_b": b, "verdict": v}
            for k, a, b, v in [
                (0, "bernoulli", "pi", "pi < bernoulli"),
                (0, "bernoulli", "jsq", "bernoulli < jsq"),
                (0, "pi", "jsq", "pi < jsq"), (1, "bernoulli", "pi", "pi < bernoulli"),
                (1, "bernoulli", "jsq", NOT_SEPARATED), (1, "pi", "jsq", NOT_SEPARATED),
            ]
        ]
    )  # fmt: skip
    out = job_sizes_summary(rows, diffs).set_index("policy")
    assert out.loc["pi", ["better", "worse", "not_separated", "separated_best"]].tolist() == [
        2, 0, 0, 1,
    ]  # fmt: skip
    assert out.loc["jsq", ["better", "worse", "not_separated"]].tolist() == [0, 1, 1]
    assert out.loc["pi", "gain"] == pytest.approx(0.15)
    assert out.loc["jsq", "gain_min"] == pytest.approx(-0.2)
    assert "bernoulli" not in out.index


def test_fig_job_sizes_draws_every_policy_panel():
    import pandas as pd

    from queue_routing.multiskill.figures import fig_job_sizes

    rows = []
    for sample, n in (("table1", 1), ("random", 3)):
        for spec, law, scv in (("deterministic", "deterministic", 0.0),
                               ("lognormal:16", "lognormal", 16.0)):  # fmt: skip
            for policy in ("jsq", "pi"):
                rows.append(
                    {"sample": sample, "job_sizes": spec, "law": law, "scv": scv,
                     "policy": policy, "instances": n, "gain": 0.2, "gain_ci95": 0.01,
                     "gain_min": 0.1, "gain_max": 0.3, "replications": 10, "horizon": 100.0,
                     "warmup": 10.0}
                )  # fmt: skip
    fig, caption = fig_job_sizes(pd.DataFrame(rows))
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2
    assert caption.startswith("Ours") and "3 random instances" in caption
