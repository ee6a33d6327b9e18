"""The numbers README.md and the part guides (``docs/guide-*.md``) quote, computed from the
pipeline's tables (``figures/summary.md``).

One pure function per part turns the part's key tables (pandas DataFrames, as the pipeline
writes them) into ``key -> value``, each value a string formatted exactly as the pages print
it; :func:`render_markdown` writes them as one Markdown table (``key | value |
source table``), the file ``figures/summary.md`` that the rule ``summary`` writes and the
repository commits. The pages mark every result number they quote with the key of its value,
``145.24838<!--A.table1.cost-->`` (HTML comments do not render), and ``tests/test_summary.py``
checks each marked number against the committed summary, so no result is typed by hand.

Keys are ``<part>.<table>.<what>``: the part (``A`` multi-skilled servers, ``B`` deadlines,
``C`` server pools), the table the value comes from (:data:`TABLES`; :func:`render_markdown`
names its file in the ``source table`` column) and the quantity, with the size ``C<n>``, the
scale ``r<n>`` or the load factor ``s<x>`` it belongs to where a table has several.

Formatters (one per style of the README): :func:`fixed` (``145.24838``, ``0.77``),
:func:`integer` (``6``, ``1,600``), :func:`significant` (``0.0155``), :func:`scientific`
(``5.99·10⁻⁴``), :func:`plain` (exact values: ``0``, ``0.5``), :func:`with_error` (a value and
its error, both at the error's first significant digit: ``0.823`` ± ``0.003``),
:func:`class_set` (``{1, 2, 4, 5}``) and :func:`words` (``10 and 20``). Negative numbers
carry the minus sign U+2212, as the README prints them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..labels import POLICY_LABELS

__all__ = [
    "PARTS",
    "TABLES",
    "class_set",
    "deadlines_summary",
    "deadlines_three_cluster_summary",
    "fixed",
    "integer",
    "multiskill_summary",
    "parse_markdown",
    "plain",
    "render_markdown",
    "scientific",
    "serverpools_lap_summary",
    "serverpools_summary",
    "significant",
    "with_error",
    "words",
]

#: The name of each part in the pipeline (its rules, tables and figures start with it).
PARTS = {"A": "multiskill", "B": "deadlines", "C": "serverpools"}

#: The tables each part's summary reads, by the name it takes them under (the second segment
#: of their keys: ``A.table1.cost`` comes from Part A's ``table1``). The rule ``summary``
#: (``workflow/rules/summary.smk``) names its inputs ``<part name>_<table>`` (:data:`PARTS`).
TABLES: dict[str, dict[str, str]] = {
    "A": {
        "table1": "Table 1 by every solver (multiskill_table1: solutions.csv)",
        "fig6": "Algorithm 1 on Table 1 from the three partitions (multiskill_table1: runs.csv)",
        "iterations": "Algorithm 1's statistics per C (multiskill_iteration_table)",
        "simulation": "policy simulations, random instances (multiskill_simulation_table)",
        "load_sweep": "policy simulations, Table 1 at s·η (multiskill_simulation_table)",
        "job_sizes": "policies under general job sizes (multiskill_job_sizes_table)",
        "optimal": "exact gaps to the optimal dynamic routing (multiskill_optimal_table: "
        "summary.csv)",
    },
    "B": {
        "gap": "mean / max gap to the optimum per sweep (deadlines_gap_table)",
        "large": "large systems by simulation (deadlines_large_table)",
        "pure_routing": "the pure-routing sweep (deadlines_two_cluster)",
        "three": "gaps to the optimum, two vs three clusters (deadlines_three_cluster_table)",
    },
    "C": {
        "time_average": "stationary time averages per r (serverpools_stochastic_summary)",
        "slope": "slopes of log time average vs log r (serverpools_stochastic_summary)",
        "covariance": "simulated covariance vs Lyapunov (serverpools_covariance)",
        "fluid": "fluid trajectories (serverpools_fluid)",
        "fluid_limit": "slopes of log fluid-limit distance vs log r "
        "(serverpools_fluid_limit_summary)",
        "lap_slope": "LQFS-LB, LAP, static routing: slopes vs r (serverpools_lap_summary)",
        "lap_ou": "LAP's level vs its OU limit (serverpools_lap_summary)",
        "lap_price": "price of stability (serverpools_lap_summary)",
    },
}
#: Part C's tables of the what-to-do-instead study, read by :func:`serverpools_summary` when
#: all are given (:func:`serverpools_lap_summary`).
LAP_TABLES = ("lap_slope", "lap_ou", "lap_price")
#: Part A's table of the optimal-routing study, read by :func:`multiskill_summary` when given
#: (:func:`_multiskill_optimal`).
OPTIMAL_TABLES = ("optimal",)

MINUS = "\u2212"
_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


# -- formatters ----------------------------------------------------------------------------
def _sign(text: str) -> str:
    """``text`` with U+2212 for a leading ``-``, and no sign at all on a rounded zero."""
    if text.startswith("-"):
        text = text[1:]
        return text if set(text) <= set("0.,") else MINUS + text
    return text


def _finite(x: float, what: str) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"cannot format {what} {x!r}: the README quotes finite numbers")
    return x


def fixed(x: float, decimals: int) -> str:
    """``x`` rounded to ``decimals`` places.

    >>> fixed(145.2483820017757, 5), fixed(0.0005988, 5), fixed(-0.0014, 3), fixed(-0.0004, 3)
    ('145.24838', '0.00060', '−0.001', '0.000')
    """
    return _sign(f"{_finite(x, 'value'):.{int(decimals)}f}")


def integer(n: float) -> str:
    """An integral count with thousands separators.

    >>> integer(6), integer(1600.0), integer(-12000)
    ('6', '1,600', '−12,000')
    """
    x = _finite(n, "count")
    if x != round(x):
        raise ValueError(f"{x!r} is not an integer")
    return _sign(f"{round(x):,}")


def _decimals_for(x: float, digits: int) -> int:
    """Decimal places that show ``digits`` significant digits of ``x`` (after rounding)."""
    if x == 0:
        return digits - 1
    d = digits - 1 - math.floor(math.log10(abs(x)))
    if abs(round(x, d)) >= 10 ** (digits - d):  # rounding carried into a new digit
        d -= 1
    return max(d, 0)


def significant(x: float, digits: int) -> str:
    """``x`` with ``digits`` significant digits, in fixed notation.

    >>> significant(0.015531, 3), significant(0.4996, 1), significant(23.64, 3)
    ('0.0155', '0.5', '23.6')
    >>> significant(0.0996, 2), significant(2000.0, 2)
    ('0.10', '2000')
    """
    x = _finite(x, "value")
    return fixed(x, _decimals_for(x, int(digits)))


def scientific(x: float, digits: int) -> str:
    """``x`` as ``m·10ᵉ`` with ``digits`` significant digits (superscript exponent).

    >>> scientific(0.0005988370778684526, 3), scientific(-1234.5, 2)
    ('5.99·10⁻⁴', '−1.2·10³')
    """
    x = _finite(x, "value")
    mantissa, exponent = f"{x:.{int(digits) - 1}e}".split("e")
    return f"{_sign(mantissa)}·10{str(int(exponent)).translate(_SUPERSCRIPTS)}"


def plain(x: float) -> str:
    """A number that is exact as it stands (a load factor, a zero load): shortest form.

    >>> plain(0.0), plain(0.5), plain(1.0), plain(3.5), plain(-2.0)
    ('0', '0.5', '1', '3.5', '−2')
    """
    return _sign(f"{_finite(x, 'value'):g}")


def with_error(x: float, error: float) -> tuple[str, str]:
    """``x`` and its error (a CI half-width or a standard error), both rounded at the error's
    first significant digit: the README's ``0.823 ± 0.003``.

    >>> with_error(0.82345, 0.0031), with_error(2.1416, 0.0096), with_error(-0.00123, 0.0049)
    (('0.823', '0.003'), ('2.14', '0.01'), ('−0.001', '0.005'))
    """
    error = _finite(error, "error")
    if error <= 0:
        raise ValueError(f"an error must be positive, got {error!r}")
    d = _decimals_for(error, 1)
    return fixed(x, d), fixed(error, d)


def class_set(classes: Iterable[int]) -> str:
    """A set of class numbers, in braces, increasing (``∅`` when empty).

    >>> class_set([4, 1, 2, 5]), class_set([3]), class_set([])
    ('{1, 2, 4, 5}', '{3}', '∅')
    """
    items = sorted(int(c) for c in classes)
    return "{" + ", ".join(map(str, items)) + "}" if items else "∅"


def words(items: Sequence[str]) -> str:
    """A list as prose: ``a``, ``a and b``, ``a, b and c`` (``none`` when empty).

    >>> words([]), words(["10"]), words(["10", "20"]), words(["10", "20", "30"])
    ('none', '10', '10 and 20', '10, 20 and 30')
    """
    items = [str(i) for i in items]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _slug(label: str) -> str:
    """A key segment from a free-text label: ``C_d={1,3,4}, C_b={2,5}`` -> ``C_d_1_3_4_C_b_2_5``."""
    return re.sub(r"[^0-9A-Za-z]+", "_", label).strip("_")


def _require(df: pd.DataFrame, columns: Sequence[str], table: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(f"table {table!r} lacks the column(s) {', '.join(missing)}")


def _tables(tables: Mapping[str, pd.DataFrame], part: str) -> None:
    optional = LAP_TABLES + OPTIMAL_TABLES
    missing = [name for name in TABLES[part] if name not in tables and name not in optional]
    if missing:
        raise KeyError(f"Part {part} summary needs the table(s) {', '.join(missing)}")


def _require_tables(
    tables: Mapping[str, pd.DataFrame], part: str, columns: Mapping[str, Sequence[str]]
) -> None:
    """Part ``part``'s tables are all in ``tables`` and each table named in ``columns`` has
    the columns listed for it (else the ``KeyError`` of :func:`_tables`, :func:`_require`)."""
    _tables(tables, part)
    for name, required in columns.items():
        _require(tables[name], required, name)


# -- Part A ----------------------------------------------------------------------------------
def _multiskill_table1(solutions: pd.DataFrame) -> dict[str, str]:
    """Table 1 (solutions.csv): the exact optimum and the authors' rounding (``single``).

    Loads below 0.01 are also given in scientific notation (``rho.<j>.scientific``)."""
    _require(solutions, ["solver", "server", "load", "set", "cost"], "table1")
    out = {}
    exact = solutions[solutions["solver"] == "exact"].sort_values("server")
    cost = float(exact["cost"].iloc[0])
    out["A.table1.cost"] = fixed(cost, 5)
    for row in exact.itertuples():
        out[f"A.table1.rho.{row.server}"] = fixed(row.load, 5)
        if 0 < row.load < 1e-2:  # fewer than 3 significant digits at 5 decimals
            out[f"A.table1.rho.{row.server}.scientific"] = scientific(row.load, 3)
    classes = exact[exact["server"] > 0]
    for name in ("C_d", "C_b", "C_0"):
        out[f"A.table1.{name}"] = class_set(classes.loc[classes["set"] == name, "server"])
    rounded = solutions[solutions["solver"] == "fixed-point single (paper rounding)"]
    if len(rounded):
        rounded = rounded.sort_values("server")
        for row in rounded.itertuples():
            out[f"A.table1.rounded.rho.{row.server}"] = plain(row.load)
        excess = 100.0 * (float(rounded["cost"].iloc[0]) / cost - 1.0)
        out["A.table1.rounded.cost_excess_pct"] = fixed(excess, 2)
    return out


def _multiskill_fig6(runs: pd.DataFrame) -> dict[str, str]:
    """Fig. 6 (runs.csv): partition changes of Algorithm 1 from each initial partition."""
    _require(runs, ["init", "update", "paper_rounding", "iterations"], "fig6")
    out = {}
    for row in runs.itertuples():
        rounding = "paper_rounding" if bool(row.paper_rounding) else "no_rounding"
        key = f"A.fig6.{row.update}.{rounding}.{_slug(row.init)}.iterations"
        out[key] = integer(row.iterations)
    return out


def _multiskill_iterations(stats: pd.DataFrame) -> dict[str, str]:
    """Algorithm 1 on the random instances (iterations.csv), per update rule, over every C:
    least and largest number of partition changes of a converged run, least and largest
    median, runs, runs that did not converge and the sizes C where that happened, and the
    largest number of changes per class, max / C: over every C (``max_per_class``, at the
    sizes ``max_per_class_C``) and at the largest C (``max_per_class_largest``)."""
    _require(
        stats,
        ["n_classes", "update", "runs", "min", "median", "max", "not_converged"],
        "iterations",
    )
    out = {}
    for update, g in stats.groupby("update", sort=True):
        p = f"A.iterations.{update}"
        out[f"{p}.min"] = integer(g["min"].min())
        out[f"{p}.max"] = integer(g["max"].max())
        out[f"{p}.median_min"] = plain(g["median"].min())
        out[f"{p}.median_max"] = plain(g["median"].max())
        per_class = (g["max"] / g["n_classes"]).round(1)  # compared as printed
        worst = g.loc[per_class == per_class.max(), "n_classes"]
        out[f"{p}.max_per_class"] = fixed(per_class.max(), 1)
        out[f"{p}.max_per_class_C"] = words([str(int(n)) for n in sorted(worst)])
        largest = g.loc[g["n_classes"].idxmax()]
        out[f"{p}.max_per_class_largest"] = fixed(largest["max"] / largest["n_classes"], 1)
        out[f"{p}.runs"] = integer(g["runs"].sum())
        out[f"{p}.not_converged"] = integer(g["not_converged"].sum())
        sizes = sorted(int(n) for n in g.loc[g["not_converged"] > 0, "n_classes"])
        out[f"{p}.not_converged_C"] = words([str(n) for n in sizes])
    return out


#: Part A's routing policies, ``queue_routing.multiskill.policies.POLICIES`` (restated, and
#: checked equal by the tests: importing that module would load numba into the summary job).
POLICIES_A = ("bernoulli", "jsq", "led", "io", "pi")


def _multiskill_simulation(rows: pd.DataFrame) -> dict[str, str]:
    """Paired policy comparisons on the random instances (policies.csv): ratios to the exact
    optimal Bernoulli cost (control-variate estimates with 95% half-widths).

    Per C: the leading dynamic policy of each instance (smallest ratio among the policies
    other than ``bernoulli``): median, range and largest CI half-width of its ratio, the
    median saving 1 − median (%); how often each policy of :data:`POLICIES_A` is the
    Holm-separated best (``best_count.<policy>``; ``not simulated`` for a policy absent from
    the rows) and how many instances are not separated. Over all instances:
    how often the simulated (plain) Bernoulli cost lies within its 95% interval of the exact
    one (count and %), the largest load of optimal Bernoulli routing, the median and the
    widest CI half-width of a dynamic policy's ratio (the widest with its policy and C).
    """
    _require(
        rows,
        [
            "n_classes",
            "instance",
            "policy",
            "cost",
            "ci95",
            "bernoulli_exact",
            "ratio",
            "ratio_ci95",
            "best",
            "max_load_bernoulli",
        ],
        "simulation",
    )
    out = {}
    dynamic = rows[rows["policy"] != "bernoulli"]
    leader = dynamic.loc[dynamic.groupby(["n_classes", "instance"])["ratio"].idxmin()]
    verdicts = rows.drop_duplicates(["n_classes", "instance"])
    for n, g in leader.groupby("n_classes", sort=True):
        p = f"A.simulation.C{int(n)}"
        median = float(g["ratio"].median())
        out[f"{p}.instances"] = integer(len(g))
        out[f"{p}.best.median"] = fixed(median, 2)
        out[f"{p}.best.min"] = fixed(g["ratio"].min(), 2)
        out[f"{p}.best.max"] = fixed(g["ratio"].max(), 2)
        out[f"{p}.best.ci95_max"] = fixed(g["ratio_ci95"].max(), 2)
        out[f"{p}.best.saving_pct"] = fixed(100.0 * (1.0 - median), 0)
        best = verdicts.loc[verdicts["n_classes"] == n, "best"]
        simulated = set(rows["policy"])
        for policy in POLICIES_A:
            count = integer((best == policy).sum())
            out[f"{p}.best_count.{policy}"] = count if policy in simulated else "not simulated"
        out[f"{p}.not_separated"] = integer((~best.isin(simulated)).sum())
    out["A.simulation.instances"] = integer(len(verdicts))
    bern = rows[rows["policy"] == "bernoulli"]
    if len(bern):
        covered = int(((bern["cost"] - bern["bernoulli_exact"]).abs() <= bern["ci95"]).sum())
        out["A.simulation.bernoulli.covered"] = integer(covered)
        out["A.simulation.bernoulli.covered_pct"] = fixed(100.0 * covered / len(bern), 0)
    out["A.simulation.max_load"] = fixed(verdicts["max_load_bernoulli"].max(), 3)
    out["A.simulation.ratio_ci95_median"] = significant(dynamic["ratio_ci95"].median(), 2)
    widest = dynamic.loc[dynamic["ratio_ci95"].idxmax()]
    out["A.simulation.widest_ci.ci95"] = significant(widest["ratio_ci95"], 1)
    out["A.simulation.widest_ci.policy"] = POLICY_LABELS.get(widest["policy"], widest["policy"])
    out["A.simulation.widest_ci.C"] = integer(widest["n_classes"])
    return out


def _multiskill_load_sweep(rows: pd.DataFrame) -> dict[str, str]:
    """Table 1 with intensities s·η (load_sweep.csv): each policy's paired ratio to the exact
    optimal Bernoulli cost at each s, with its 95% half-width; per policy, the largest s up
    to which its ratio exceeds 1 at every s (``none`` if it is not above 1 at the smallest s;
    ``not simulated`` for a policy of the README absent here) and at how many of the
    ``A.load_sweep.loads`` loads it is the Holm-separated best (``separated_best``)."""
    _require(rows, ["load_factor", "policy", "ratio", "ratio_ci95", "best"], "load_sweep")
    out = {}
    for row in rows.itertuples():
        if row.policy == "bernoulli":
            continue
        value, error = with_error(row.ratio, row.ratio_ci95)
        p = f"A.load_sweep.{row.policy}.s{plain(row.load_factor)}"
        out[f"{p}.relative"], out[f"{p}.ci95"] = value, error
    loads = rows.drop_duplicates("load_factor")
    out["A.load_sweep.loads"] = integer(len(loads))
    for policy in ("jsq", "led", "io", "pi"):
        g = rows[rows["policy"] == policy].sort_values("load_factor")
        worse = (g["ratio"] > 1.0).to_numpy()
        if not len(g):
            text = "not simulated"
        elif not worse[0]:
            text = "none"
        else:
            last = len(worse) if worse.all() else int(np.argmin(worse))
            text = plain(g["load_factor"].iloc[last - 1])
        out[f"A.load_sweep.{policy}.worse_up_to"] = text
        out[f"A.load_sweep.{policy}.separated_best"] = integer((loads["best"] == policy).sum())
    return out


def _multiskill_job_sizes(rows: pd.DataFrame) -> dict[str, str]:
    """Policies under general job sizes (summary.csv of multiskill_job_sizes_table): gains
    ``1 - cost/B`` in % of the exact optimal Bernoulli cost B, by law (``<law>`` the spec with
    ``:`` as ``_``, e.g. ``hyperexponential_16``).

    * ``A.job_sizes.table1.<law>.<policy>`` and ``.ci95``: Table 1's gain and its 95%
      half-width (one decimal, as the study's table);
    * ``A.job_sizes.random.instances``; per law and policy ``A.job_sizes.random.<law>.<policy>``
      ``.median`` (median gain over the instances), ``.ci95_max`` (the widest half-width),
      ``.better`` (instances where it is Holm-separated below Bernoulli) and
      ``.separated_best``; per law ``A.job_sizes.random.<law>.not_separated`` (instances with
      no separated best).
    """
    _require(
        rows,
        ["sample", "job_sizes", "policy", "instances", "gain", "gain_ci95", "gain_ci95_max",
         "better", "separated_best"],
        "job_sizes",
    )  # fmt: skip
    out = {}
    for row in rows[rows["sample"] == "table1"].itertuples():
        p = f"A.job_sizes.table1.{_slug(row.job_sizes)}.{row.policy}"
        out[p] = fixed(100.0 * row.gain, 1)  # the decimals of the study's own table
        out[f"{p}.ci95"] = fixed(100.0 * row.gain_ci95, 1)
    random = rows[rows["sample"] == "random"]
    if len(random):
        out["A.job_sizes.random.instances"] = integer(random["instances"].max())
    for law, g in random.groupby("job_sizes", sort=False):
        p = f"A.job_sizes.random.{_slug(law)}"
        for row in g.itertuples():
            q = f"{p}.{row.policy}"
            out[f"{q}.median"] = fixed(100.0 * row.gain, 1)
            out[f"{q}.ci95_max"] = fixed(100.0 * row.gain_ci95_max, 1)
            out[f"{q}.better"] = integer(row.better)
            out[f"{q}.separated_best"] = integer(row.separated_best)
        out[f"{p}.not_separated"] = integer(g["instances"].max() - g["separated_best"].sum())
    return out


def _multiskill_optimal(summary: pd.DataFrame) -> dict[str, str]:
    """The optimal-routing study (``multiskill_optimal_table/summary.csv``): per policy its
    median, largest and smallest exact gap to the optimum (% of the optimal cost, 2 decimals)
    and on how many instances it is the best index policy (ties counted for each); the
    study's instances and its smallest and largest total load.

    >>> table = pd.DataFrame({"policy": ["pi", "pi2"], "instances": [10, 10],
    ...     "median_gap_pct": [1.234, 0.011], "max_gap_pct": [4.8, 0.05],
    ...     "min_gap_pct": [-0.001, -0.002], "best_index": [6, 0], "min_load": [0.5, 0.5],
    ...     "max_load": [0.7, 0.7]})
    >>> v = _multiskill_optimal(table)
    >>> v["A.optimal.instances"], v["A.optimal.pi.median_gap"], v["A.optimal.pi.best_index"]
    ('10', '1.23', '6')
    >>> v["A.optimal.pi2.max_gap"], v["A.optimal.pi2.min_gap"], v["A.optimal.max_load"]
    ('0.05', '0.00', '0.7')
    """
    _require(
        summary,
        ["policy", "instances", "median_gap_pct", "max_gap_pct", "min_gap_pct", "best_index",
         "min_load", "max_load"],
        "optimal",
    )  # fmt: skip
    out = {
        "A.optimal.instances": integer(summary["instances"].max()),
        "A.optimal.min_load": plain(summary["min_load"].min()),
        "A.optimal.max_load": plain(summary["max_load"].max()),
    }
    for row in summary.itertuples():
        p = f"A.optimal.{row.policy}"
        out[f"{p}.median_gap"] = fixed(row.median_gap_pct, 2)
        out[f"{p}.max_gap"] = fixed(row.max_gap_pct, 2)
        out[f"{p}.min_gap"] = fixed(max(row.min_gap_pct, 0.0), 2)  # ties within the tolerance
        out[f"{p}.best_index"] = integer(row.best_index)
    return out


def multiskill_summary(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Part A's README numbers from its tables (names and files in :data:`TABLES` ``["A"]``).

    * ``A.table1.*`` (Table 1, ``results/multiskill/multiskill_table1/solutions.csv``): the
      exact optimal cost (cost per unit time), the loads ρ_j (``rho.<j>``; below 0.01 also
      ``rho.<j>.scientific``), the sets C_d, C_b, C_0, and with the authors' rounding (Algorithm 1,
      ``single`` update, from all-dedicated) the loads and the cost above the optimum (%);
    * ``A.fig6.<update>.<paper_rounding|no_rounding>.<initial partition>.iterations``
      (``runs.csv``): partition changes of Algorithm 1 on Table 1;
    * ``A.iterations.<update>.*`` (``iterations.csv``): see :func:`_multiskill_iterations`;
    * ``A.simulation.*`` (``policies.csv``): see :func:`_multiskill_simulation`; relative
      costs are ratios (dimensionless), savings and coverage in %;
    * ``A.load_sweep.<policy>.s<s>.*`` (``load_sweep.csv``): see
      :func:`_multiskill_load_sweep`;
    * ``A.job_sizes.*`` (``multiskill_job_sizes_table/summary.csv``): see
      :func:`_multiskill_job_sizes`;
    * ``A.optimal.*`` (``multiskill_optimal_table/summary.csv``, when given): see
      :func:`_multiskill_optimal`.

    >>> solutions = pd.DataFrame({
    ...     "solver": ["exact"] * 3 + ["fixed-point single (paper rounding)"] * 3,
    ...     "server": [0, 1, 2] * 2, "load": [0.5, 0.25, 0.0004, 0.5, 0.3, 0.0],
    ...     "set": ["", "C_d", "C_b", "", "C_d", "C_0"], "cost": [10.0] * 3 + [10.1] * 3})
    >>> values = _multiskill_table1(solutions)
    >>> values["A.table1.cost"], values["A.table1.rho.2"], values["A.table1.rho.2.scientific"]
    ('10.00000', '0.00040', '4.00·10⁻⁴')
    >>> values["A.table1.C_b"], values["A.table1.rounded.rho.2"]
    ('{2}', '0')
    >>> values["A.table1.rounded.cost_excess_pct"]
    '1.00'
    """
    _tables(tables, "A")
    return {
        **_multiskill_table1(tables["table1"]),
        **_multiskill_fig6(tables["fig6"]),
        **_multiskill_iterations(tables["iterations"]),
        **_multiskill_simulation(tables["simulation"]),
        **_multiskill_load_sweep(tables["load_sweep"]),
        **_multiskill_job_sizes(tables["job_sizes"]),
        **(_multiskill_optimal(tables["optimal"]) if "optimal" in tables else {}),
    }


# -- Part B ----------------------------------------------------------------------------------
def deadlines_summary(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Part B's README numbers from its tables (names and files in :data:`TABLES` ``["B"]``).

    * ``B.gap.<sweep>.<policy>.mean|max`` (``results/deadlines/deadlines_gap_table/gaps.csv``):
      mean and largest gap to the optimal cost over the sweep's points (%, one decimal);
    * ``B.large.<policy>.ratio_min|ratio_max`` (``deadlines_large_table/large.csv``): the
      least and largest, over the numbers of clusters n, of the simulated cost relative to
      PI's (paired ratio of cost rates, two decimals), every policy but PI;
      ``B.large.<policy>.excludes_one`` counts the n at which its 95% interval lies above 1,
      of ``B.large.sizes``; ``B.large.<policy>.separated_best`` the n at which it is the
      Holm-separated best; ``B.large.truncated`` the policies and n whose index table's end
      may have decided arrivals (``none`` if none);
    * ``B.pure_routing.max_arrival_rate`` and ``.max_load``
      (``deadlines_two_cluster/pure_routing.csv``): the largest arrival rate of the
      pure-routing sweep (jobs per unit time) and its load λ / Σ m_k μ_k.

    >>> gap = pd.DataFrame({"sweep": ["arrival_rate"] * 2, "policy": ["PI", "RB"],
    ...                     "mean_gap_pct": [1.74, 1.85], "max_gap_pct": [4.25, 7.1]})
    >>> large = pd.DataFrame({"clusters": [4, 4, 8, 8], "policy": ["PI", "BS"] * 2,
    ...                       "ratio": [1.0, 2.14, 1.0, 2.66],
    ...                       "ratio_ci95": [0.0, 0.1, 0.0, 0.2], "best": ["PI"] * 4})
    >>> pure = pd.DataFrame({"arrival_rate": [2.0, 4.0], "load": [0.43, 0.8696]})
    >>> three = pd.DataFrame({"sweep": ["all"], "policy": ["PI"], "mean_gap_2_pct": [1.858],
    ...     "max_gap_2_pct": [4.996], "mean_gap_3_pct": [2.11], "max_gap_3_pct": [4.7224]})
    >>> values = deadlines_summary(
    ...     {"gap": gap, "large": large, "pure_routing": pure, "three": three})
    >>> values["B.gap.arrival_rate.pi.mean"], values["B.gap.arrival_rate.rb.max"]
    ('1.7', '7.1')
    >>> values["B.large.bs.ratio_min"], values["B.large.bs.ratio_max"]
    ('2.14', '2.66')
    >>> values["B.pure_routing.max_arrival_rate"], values["B.pure_routing.max_load"]
    ('4.0', '0.87')
    """
    _require_tables(
        tables,
        "B",
        {
            "gap": ["sweep", "policy", "mean_gap_pct", "max_gap_pct"],
            "large": ["clusters", "policy", "ratio", "ratio_ci95", "best"],
            "pure_routing": ["arrival_rate", "load"],
        },
    )
    gap, large, pure = tables["gap"], tables["large"], tables["pure_routing"]
    out = {}
    for row in gap.itertuples():
        p = f"B.gap.{row.sweep}.{row.policy.lower()}"
        out[f"{p}.mean"] = fixed(row.mean_gap_pct, 1)
        out[f"{p}.max"] = fixed(row.max_gap_pct, 1)
    out["B.large.sizes"] = integer(large["clusters"].nunique())
    for policy, g in large[large["policy"] != "PI"].groupby("policy", sort=True):
        p = f"B.large.{policy.lower()}"
        out[f"{p}.ratio_min"] = fixed(g["ratio"].min(), 2)
        out[f"{p}.ratio_max"] = fixed(g["ratio"].max(), 2)
        above = (g["ratio"] - g["ratio_ci95"]) > 1.0
        out[f"{p}.excludes_one"] = integer(above.sum())
    verdicts = large.drop_duplicates("clusters")
    for policy in sorted(large["policy"].unique()):
        wins = (verdicts["best"] == policy).sum()
        out[f"B.large.{policy.lower()}.separated_best"] = integer(wins)
    truncated = large[large["table_bound"] > 0] if "table_bound" in large else large.iloc[:0]
    out["B.large.truncated"] = words(
        [f"{r.policy} at n = {int(r.clusters)}" for r in truncated.itertuples()]
    )
    top = pure.loc[pure["arrival_rate"].idxmax()]
    out["B.pure_routing.max_arrival_rate"] = fixed(top["arrival_rate"], 1)
    out["B.pure_routing.max_load"] = fixed(top["load"], 2)
    out.update(deadlines_three_cluster_summary(tables["three"]))
    return out


def deadlines_three_cluster_summary(gaps: pd.DataFrame) -> dict[str, str]:
    """Part B's three-cluster numbers from ``deadlines_three_cluster_table/gaps.csv``
    (:func:`queue_routing.deadlines.experiments.gap_table` with ``clusters=(2, 3)``), part of
    :func:`deadlines_summary`'s output: ``B.three.<sweep>.<policy>.mean2|max2|mean3|max3``,
    the mean and largest gap (%, two decimals) over the matched points with two and with
    three clusters (``sweep`` ``all``: every point).

    >>> gaps = pd.DataFrame({"sweep": ["all"], "policy": ["PI"], "mean_gap_2_pct": [1.858],
    ...     "max_gap_2_pct": [4.996], "mean_gap_3_pct": [2.11], "max_gap_3_pct": [4.7224]})
    >>> v = deadlines_three_cluster_summary(gaps)
    >>> v["B.three.all.pi.mean2"], v["B.three.all.pi.max2"], v["B.three.all.pi.max3"]
    ('1.86', '5.00', '4.72')
    """
    columns = ["mean_gap_2_pct", "max_gap_2_pct", "mean_gap_3_pct", "max_gap_3_pct"]
    _require(gaps, ["sweep", "policy", *columns], "three")
    out = {}
    for row in gaps.itertuples():
        p = f"B.three.{row.sweep}.{row.policy.lower()}"
        for what, col in zip(("mean2", "max2", "mean3", "max3"), columns, strict=True):
            value = getattr(row, col)
            if math.isfinite(value):
                out[f"{p}.{what}"] = fixed(value, 2)
    return out


# -- Part C ----------------------------------------------------------------------------------
def _interval_text(low: float, high: float, se: float) -> tuple[str, str]:
    """An interval's ends at the decimals of its standard error's first significant digit."""
    d = _decimals_for(_finite(se, "error"), 1) if se > 0 else 3
    return fixed(low, d), fixed(high, d)


def serverpools_summary(
    tables: Mapping[str, pd.DataFrame], *, tail_fraction: float
) -> dict[str, str]:
    """Part C's README numbers from its tables (names and files in :data:`TABLES` ``["C"]``).

    * ``C.time_average.<example>.r<r>``
      (``results/serverpools/serverpools_stochastic_summary/time_averages.csv``): the
      stationary time-averaged |diffusion-scaled deviation| at scale r (mean of the
      replications), rounded at the first significant digit of the median standard error of
      its example (the same decimals for every r of an example);
    * ``C.time_average.flagged`` (the same table): how many (example, r) windows the
      stationarity test flags; ``C.time_average.windows``: how many were tested;
    * ``C.slope.<example>``, ``C.slope.<example>.se`` (``verdicts.csv``): the top-decade slope
      of log time average against log r and its standard error (:func:`with_error`);
      ``C.slope.<example>.low`` / ``.high``: its interval at the same decimals (all four
      ``n/a`` when fewer than two stationary scales are left to fit);
      ``C.slope.<example>.verdict``: the verdict read off it;
    * ``C.covariance.max_abs_z`` (``serverpools_covariance_table/covariance.csv``): the largest
      |simulated − Lyapunov| / SE over the covariance entries (standard errors);
    * ``C.fluid.<example>.level`` (``serverpools_fluid/<example>.csv``): the time average of
      the fluid |x − x*| over the last ``tail_fraction`` of time, the amplitude a of the
      persistent oscillation (the deviation grows like a·√r), 3 significant digits; and, for
      the examples whose fluid trajectory grows (unstable), ``C.fluid.<example>.r<r>.sqrt_r``:
      a·√r at every r of the time-average table, at that example's decimals;
    * ``C.fluid_limit.<example>.slope`` and ``.low`` / ``.high``
      (``serverpools_fluid_limit_summary/slopes.csv``): the slope of log sup-distance against
      log r and its interval.

    >>> averages = pd.DataFrame({"example": ["stable"] * 2, "r": [100.0, 1000.0],
    ...                          "mean_norm": [1.4249, 1.4312], "mean_norm_se": [0.012, 0.03],
    ...                          "stationary": [True, False]})
    >>> verdicts = pd.DataFrame({"example": ["stable"], "slope": [-0.0012],
    ...                          "slope_se": [0.0049], "slope_low": [-0.0223],
    ...                          "slope_high": [0.0199], "verdict": ["tight"]})
    >>> covariance = pd.DataFrame({"z": [0.4, -1.26, 0.9]})
    >>> fluid = pd.DataFrame({"example": ["unstable"] * 4, "time": [0.0, 1.0, 2.0, 3.0],
    ...                       "norm_fluid": [0.0, 0.01, 0.0150, 0.0160]})
    >>> limit = pd.DataFrame({"example": ["stable"], "slope": [-0.512], "slope_se": [0.021],
    ...                       "slope_low": [-0.579], "slope_high": [-0.445]})
    >>> values = serverpools_summary({"time_average": averages, "slope": verdicts,
    ...     "covariance": covariance, "fluid": fluid, "fluid_limit": limit}, tail_fraction=0.5)
    >>> values["C.time_average.stable.r100"], values["C.time_average.stable.r1000"]
    ('1.42', '1.43')
    >>> values["C.slope.stable"], values["C.slope.stable.se"], values["C.covariance.max_abs_z"]
    ('−0.001', '0.005', '1.3')
    >>> values["C.slope.stable.low"], values["C.slope.stable.high"]
    ('−0.022', '0.020')
    >>> values["C.time_average.flagged"], values["C.time_average.windows"]
    ('1', '2')
    >>> values["C.fluid.unstable.level"], values["C.fluid_limit.stable.slope"]
    ('0.0155', '−0.51')
    >>> values["C.fluid_limit.stable.low"], values["C.fluid_limit.stable.high"]
    ('−0.58', '−0.45')
    """
    from ..serverpools.experiments import fluid_limit_level, growing_examples

    _require_tables(
        tables,
        "C",
        {
            "time_average": ["example", "r", "mean_norm", "mean_norm_se", "stationary"],
            "slope": ["example", "slope", "slope_se", "slope_low", "slope_high", "verdict"],
            "covariance": ["z"],
            "fluid_limit": ["example", "slope", "slope_se", "slope_low", "slope_high"],
        },
    )
    averages, verdicts, limit = tables["time_average"], tables["slope"], tables["fluid_limit"]
    out = {}
    fluid = tables["fluid"]
    levels = fluid_limit_level(fluid, tail_fraction)
    growing = growing_examples(fluid)
    for example, g in averages.groupby("example", sort=True):
        se = g["mean_norm_se"].dropna()
        decimals = _decimals_for(float(se.median()), 1) if len(se) else 2
        for row in g.itertuples():
            out[f"C.time_average.{example}.r{int(row.r)}"] = fixed(row.mean_norm, decimals)
            if example in growing and example in levels:  # the fluid cycle's a sqrt(r)
                out[f"C.fluid.{example}.r{int(row.r)}.sqrt_r"] = fixed(
                    levels[example] * math.sqrt(row.r), decimals
                )
    flags = averages["stationary"].astype(bool)
    out["C.time_average.flagged"] = integer(int((~flags).sum()))
    out["C.time_average.windows"] = integer(len(flags))
    for row in verdicts.itertuples():
        key = f"C.slope.{row.example}"
        out[f"{key}.verdict"] = str(row.verdict)
        if not (np.isfinite(row.slope) and np.isfinite(row.slope_se) and row.slope_se > 0):
            for k in (key, f"{key}.se", f"{key}.low", f"{key}.high"):  # < 2 stationary scales
                out[k] = "n/a"
            continue
        out[key], out[f"{key}.se"] = with_error(row.slope, row.slope_se)
        out[f"{key}.low"], out[f"{key}.high"] = _interval_text(
            row.slope_low, row.slope_high, row.slope_se
        )
    out["C.covariance.max_abs_z"] = fixed(tables["covariance"]["z"].abs().max(), 1)
    for example, level in levels.items():
        out[f"C.fluid.{example}.level"] = significant(level, 3)
    for row in limit.itertuples():
        key = f"C.fluid_limit.{row.example}"
        out[f"{key}.slope"], _ = with_error(row.slope, row.slope_se)
        out[f"{key}.low"], out[f"{key}.high"] = _interval_text(
            row.slope_low, row.slope_high, row.slope_se
        )
    if all(name in tables for name in LAP_TABLES):
        out.update(serverpools_lap_summary(tables))
    return out


def serverpools_lap_summary(tables: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Part C's what-to-do-instead numbers (``results/serverpools/serverpools_lap_summary/``);
    ``<policy>`` is ``lqfs_lb``, ``lap`` or ``static``.

    * ``C.lap_slope.<example>.<policy>`` (``verdicts.csv``): the top-decade slope, rounded at
      its standard error, with ``.low`` / ``.high`` (its interval) and ``.verdict`` (``n/a``
      for the numbers when fewer than two stationary scales are left);
    * ``C.lap_ou.<example>.predicted`` (``ou.csv``): E|Y| under LAP's OU law, 3 significant
      digits; ``C.lap_ou.<example>.r<r>`` and ``.ci``: the simulated time average and its
      interval half-width at that r, rounded at the half-width;
    * ``C.lap_price.<example>.<policy>.customers`` / ``.customers_ci`` / ``.sojourn_time`` /
      ``.sojourn_time_ci`` (``price.csv``): customers per unit r and the mean sojourn time,
      rounded at their half-widths; ``.equilibrium``: the fluid value, 3 significant digits;
      ``.difference`` / ``.difference_ci`` (not for LQFS-LB): the paired difference of
      customers from LQFS-LB; ``C.lap_price.<example>.r``: the scale they were measured at.

    >>> slope = pd.DataFrame({"example": ["large_cycle"], "policy": ["lap"], "slope": [-0.0562],
    ...     "slope_se": [0.0235], "slope_low": [-0.157], "slope_high": [0.045],
    ...     "verdict": ["tight"]})
    >>> ou = pd.DataFrame({"example": ["large_cycle"], "r": [1e6], "quantity": ["mean_norm"],
    ...     "simulated": [0.40233], "ci": [0.0125], "predicted": [0.410036]})
    >>> price = pd.DataFrame({"example": ["large_cycle"], "policy": ["lap"], "r": [1e6],
    ...     "equilibrium": [1.930403], "customers": [1.930464], "customers_ci": [4.4e-5],
    ...     "sojourn_time": [1.912109], "sojourn_time_ci": [4.3e-5], "difference": [0.823058],
    ...     "difference_ci": [0.021931]})
    >>> v = serverpools_lap_summary({"lap_slope": slope, "lap_ou": ou, "lap_price": price})
    >>> v["C.lap_slope.large_cycle.lap"], v["C.lap_slope.large_cycle.lap.low"]
    ('−0.06', '−0.16')
    >>> v["C.lap_ou.large_cycle.predicted"], v["C.lap_ou.large_cycle.r1000000"]
    ('0.410', '0.40')
    >>> v["C.lap_price.large_cycle.lap.customers"], v["C.lap_price.large_cycle.lap.difference"]
    ('1.93046', '0.82')
    """
    _require(
        tables["lap_slope"],
        ["example", "policy", "slope", "slope_se", "slope_low", "slope_high", "verdict"],
        "lap_slope",
    )
    ou_columns = ["example", "r", "quantity", "simulated", "ci", "predicted"]
    _require(tables["lap_ou"], ou_columns, "lap_ou")
    _require(
        tables["lap_price"],
        ["example", "policy", "r", "equilibrium", "customers", "customers_ci", "sojourn_time"],
        "lap_price",
    )
    out = {}
    for row in tables["lap_slope"].itertuples():
        key = f"C.lap_slope.{row.example}.{str(row.policy).replace('-', '_')}"
        out[f"{key}.verdict"] = str(row.verdict)
        if not (np.isfinite(row.slope) and np.isfinite(row.slope_se) and row.slope_se > 0):
            for k in (key, f"{key}.low", f"{key}.high"):
                out[k] = "n/a"
            continue
        out[key], _ = with_error(row.slope, row.slope_se)
        out[f"{key}.low"], out[f"{key}.high"] = _interval_text(
            row.slope_low, row.slope_high, row.slope_se
        )
    ou = tables["lap_ou"]
    ou = ou[ou["quantity"] == "mean_norm"]
    for row in ou.itertuples():
        out[f"C.lap_ou.{row.example}.predicted"] = significant(row.predicted, 3)
        key = f"C.lap_ou.{row.example}.r{int(row.r)}"
        out[key], out[f"{key}.ci"] = with_error(row.simulated, row.ci)
    for row in tables["lap_price"].itertuples():
        key = f"C.lap_price.{row.example}.{str(row.policy).replace('-', '_')}"
        out[f"C.lap_price.{row.example}.r"] = integer(row.r)
        out[f"{key}.equilibrium"] = significant(row.equilibrium, 3)
        out[f"{key}.customers"], out[f"{key}.customers_ci"] = with_error(
            row.customers, row.customers_ci
        )
        if hasattr(row, "sojourn_time_ci"):
            out[f"{key}.sojourn_time"], out[f"{key}.sojourn_time_ci"] = with_error(
                row.sojourn_time, row.sojourn_time_ci
            )
        if hasattr(row, "difference") and np.isfinite(row.difference):
            out[f"{key}.difference"], out[f"{key}.difference_ci"] = with_error(
                row.difference, row.difference_ci
            )
    return out


# -- the summary file ------------------------------------------------------------------------
_HEADER = (
    "# Numbers quoted in README.md and the part guides\n"
    "\n"
    "Written by the pipeline (rule `summary`, `queue_routing.workflow.summary`) from the tables "
    "named in the last column; each value is formatted as README.md and the part guides "
    "(docs/guide-*.md) print it, where a marker `<!--key-->` follows the number (checked by "
    "`tests/test_summary.py`).\n"
    "\n"
    "| key | value | source table |\n"
    "|---|---|---|\n"
)


def render_markdown(values: Mapping[str, str], sources: Mapping[str, str]) -> str:
    """The summary as a Markdown table ``key | value | source table``, sorted by key.

    ``sources`` maps each table, by the first two segments of its keys (``"A.table1"``), to
    the file(s) it was read from. The text depends on nothing else (deterministic bytes).

    >>> text = render_markdown({"B.x.y": "1,600", "A.t.c": "5.99·10⁻⁴"},
    ...                        {"A.t": "results/t.csv", "B.x": "results/x.csv"})
    >>> print(text.split("\\n\\n")[-1], end="")
    | key | value | source table |
    |---|---|---|
    | `A.t.c` | 5.99·10⁻⁴ | `results/t.csv` |
    | `B.x.y` | 1,600 | `results/x.csv` |
    >>> parse_markdown(text)
    {'A.t.c': '5.99·10⁻⁴', 'B.x.y': '1,600'}
    """
    lines = []
    for key in sorted(values):
        value = str(values[key])
        if "|" in value or "`" in value or "\n" in value or value != value.strip() or not value:
            raise ValueError(f"value of {key!r} cannot stand in a Markdown table: {value!r}")
        table = ".".join(key.split(".")[:2])
        if table not in sources:
            raise KeyError(f"no source table for {key!r} (expected a source for {table!r})")
        lines.append(f"| `{key}` | {value} | `{sources[table]}` |\n")
    return _HEADER + "".join(lines)


def parse_markdown(text: str) -> dict[str, str]:
    """``key -> value`` of a summary written by :func:`render_markdown`."""
    out = {}
    for line in text.splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (.+?) \| `[^`]+` \|", line)
        if match:
            out[match.group(1)] = match.group(2)
    return out
