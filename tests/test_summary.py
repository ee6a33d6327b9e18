"""The numbers README.md and the part guides quote come from the pipeline
(``figures/summary.md``, ``queue_routing.workflow.summary``).

The pages of :data:`PAGES` mark every result number of their results sections with the key of
its value in the committed ``figures/summary.md``, which the rule ``summary`` writes from the
pipeline's tables: ``145.24838<!--A.table1.cost-->`` (HTML comments render neither on GitHub
nor in the documentation site). Checked here:

1. every marker names a key of the committed summary, and the text right before the marker is
   that key's value, character for character;
2. in the results sections, every decimal number, percentage and thousands-separated number
   outside code carries a marker (is part of a marked value) or belongs to one of the listed
   parameters of the setup (:data:`PARAMETERS`), so a new hand-typed number fails;
3. the summary functions on small hand-made tables (expected values worked out by hand), and
   the smoke pipeline writes ``figures/summary.md`` with every key the pages use.
"""

import re

import numpy as np
import pandas as pd
import pytest

from _workflow import ROOT
from queue_routing.workflow import summary

SUMMARY = ROOT / "figures" / "summary.md"
#: The pages that quote the pipeline's results (paths relative to the repository root).
PAGES = [
    "README.md",
    "docs/guide-multiskill.md",
    "docs/guide-deadlines.md",
    "docs/guide-serverpools.md",
]

#: ``<!--key-->`` right after a quoted number.
MARKER = re.compile(r"<!--([\w.]+)-->")

#: The results sections: (page, first words, the text that ends the section).
RESULTS_SECTIONS = [
    ("README.md", "## Beyond the papers", "## The library and the command"),
    ("docs/guide-multiskill.md", "## Results in brief (default config)", "## The command"),
    ("docs/guide-multiskill.md", "What they show (default config", "## Deviations from the paper"),
    ("docs/guide-deadlines.md", "Results in brief (default config; base instance", "```console"),
    ("docs/guide-serverpools.md", "Results in brief (default config): the stable", "```console"),
]

#: Parameters of the setup quoted in the results sections: not results, so no marker.
PARAMETERS = [
    "95% interval",  # the confidence level (Parts A and B)
    "at s = 0.5",  # load factors of the Table 1 sweep (Part A)
    "at s = 1.3",
    "μ = (1, 0.8)",  # Part B's base instance
    "λ = 3.5",
    "constant deadline 1.5",
    "λ = 0.9 of capacity",  # Part B's large systems
    "95% half-width",  # the confidence level of Part A's budget comparison
    # Part A's median ratio half-width of the previous pipeline (independent streams, plain
    # means), the "before" of the budget comparison: not computable from the current tables
    "pairs was 0.0081",
    # the hyperexponential law of SCV 16 (balanced means): a property of the law, not a result
    "3% of its jobs are long, mean 16.5",
]

#: Numbers that need a marker: thousands-separated, decimal, percentage.
NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+\s?%)")

#: Characters that must not precede a marked value (it would be part of a longer number,
#: or of a negative one).
NOT_BEFORE = set("0123456789.,-−")


def committed_summary():
    assert SUMMARY.is_file(), f"{SUMMARY.relative_to(ROOT)} is missing: run the pipeline"
    values = summary.parse_markdown(SUMMARY.read_text(encoding="utf-8"))
    assert values, f"{SUMMARY.relative_to(ROOT)} has no values"
    return values


def page_texts():
    """``{page: text}`` of every page of :data:`PAGES`."""
    return {page: (ROOT / page).read_text(encoding="utf-8") for page in PAGES}


def _blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))


def mask_code(text):
    """``text`` with fenced code blocks, inline code and the markers themselves replaced by
    spaces (same offsets), so that only the prose's numbers remain."""
    text = re.sub(r"^```.*?^```", _blank, text, flags=re.DOTALL | re.MULTILINE)
    text = re.sub(r"`[^`\n]+`", _blank, text)
    return MARKER.sub(_blank, text)


def section_span(page, text, start_text, end_text):
    """``(start, end)`` offsets of the results section of ``page`` that begins with
    ``start_text`` and ends before ``end_text``."""
    assert text.count(start_text) == 1, f"{page}: results section {start_text!r} not found once"
    start = text.index(start_text)
    end = text.find(end_text, start)
    assert end > start, f"{page}: end of results section {start_text!r} ({end_text!r}) not found"
    return start, end


def section_spans(page, text):
    return [section_span(page, text, a, b) for name, a, b in RESULTS_SECTIONS if name == page]


def markers(text):
    """``(key, offset of the marker)`` of every marker in ``text``."""
    return [(m.group(1), m.start()) for m in MARKER.finditer(text)]


def page_keys():
    """Every key a page of :data:`PAGES` quotes."""
    return {key for text in page_texts().values() for key, _ in markers(text)}


# -- 1. markers name the committed values ----------------------------------------------------
def test_pages_have_markers_in_every_results_section():
    texts = page_texts()
    for page, start_text, end_text in RESULTS_SECTIONS:
        start, end = section_span(page, texts[page], start_text, end_text)
        assert MARKER.search(texts[page], start, end), f"{page}: no marker in {start_text!r}"


def test_every_marker_quotes_the_committed_value():
    values = committed_summary()
    problems = []
    for page, text in page_texts().items():
        for key, offset in markers(text):
            line = text.count("\n", 0, offset) + 1
            if key not in values:
                problems.append(f"{page}:{line}: {key} is not a key of figures/summary.md")
                continue
            value, before = values[key], text[:offset]
            start = offset - len(value)
            if not before.endswith(value) or (start > 0 and text[start - 1] in NOT_BEFORE):
                quoted = before[-len(value) - 8 :].split("\n")[-1]
                problems.append(
                    f"{page}:{line}: {key}: the page has ...{quoted!r}, summary {value!r}"
                )
    assert problems == [], "\n".join(problems)


# -- 2. no hand-typed number in the results sections ---------------------------------------
def test_every_number_in_the_results_sections_carries_a_marker():
    values, texts = committed_summary(), page_texts()
    for phrase in PARAMETERS:
        assert any(phrase in text for text in texts.values()), (
            f"parameter {phrase!r} is on no page any more: remove it from PARAMETERS"
        )
    unmarked = []
    for page, text in texts.items():
        masked = mask_code(text)
        covered = [(offset - len(values.get(key, "")), offset) for key, offset in markers(text)]
        for phrase in PARAMETERS:
            covered += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
        for start, end in section_spans(page, text):
            for m in NUMBER.finditer(masked, start, end):
                if not any(a <= m.start() and m.end() <= b for a, b in covered):
                    line = text.count("\n", 0, m.start()) + 1
                    unmarked.append(f"{page}:{line}: {m.group(0)!r} has no <!--key--> marker")
    assert unmarked == [], "\n".join(unmarked)


def test_number_check_catches_a_hand_typed_number():
    """The checks of this module see a number typed without a marker, or a wrong value."""
    text = "Results: 1.25<!--X.t.a--> and 3.5 and 12% and 1,600.\n"
    masked = mask_code(text + "`9.9` and\n```\n7.7\n```\n")
    found = [m.group(0) for m in NUMBER.finditer(masked)]
    assert found == ["1.25", "3.5", "12%", "1,600"]
    assert markers(text) == [("X.t.a", text.index("<!--"))]
    assert text[: text.index("<!--")].endswith("1.25")


# -- 3. the summary functions on hand-made tables ------------------------------------------
def test_formatters():
    assert summary.fixed(0.77123, 2) == "0.77"
    assert summary.fixed(-0.0012, 3) == "−0.001"
    assert summary.fixed(-0.0001, 3) == "0.000"
    assert summary.integer(1600) == "1,600"
    assert summary.integer(6.0) == "6"
    with pytest.raises(ValueError, match="not an integer"):
        summary.integer(6.5)
    with pytest.raises(ValueError, match="finite"):
        summary.fixed(float("nan"), 2)
    assert summary.significant(0.01553, 3) == "0.0155"
    assert summary.significant(0.96, 1) == "1"
    assert summary.scientific(0.000599, 3) == "5.99·10⁻⁴"
    assert summary.scientific(31400.0, 2) == "3.1·10⁴"
    assert summary.plain(1.3) == "1.3"
    assert summary.plain(1.0) == "1"
    # the error's first significant digit sets the decimals of both
    assert summary.with_error(0.8234, 0.0031) == ("0.823", "0.003")
    assert summary.with_error(1.3349, 0.012) == ("1.33", "0.01")
    assert summary.with_error(0.1512, 0.0297) == ("0.15", "0.03")
    assert summary.with_error(6.94, 0.96) == ("7", "1")  # 0.96 rounds to 1: no decimals
    assert summary.class_set([5, 1]) == "{1, 5}"
    assert summary.words(["10", "20"]) == "10 and 20"


def _table1():
    exact = {"solver": "exact", "cost": 20.0}
    rounded = {"solver": "fixed-point single (paper rounding)", "cost": 20.05}
    rows = [
        {**exact, "server": 0, "load": 0.4, "set": ""},
        {**exact, "server": 1, "load": 0.123456, "set": "C_d"},
        {**exact, "server": 2, "load": 0.0031, "set": "C_b"},
        {**exact, "server": 3, "load": 0.25, "set": "C_b"},
        {**rounded, "server": 0, "load": 0.41, "set": ""},
        {**rounded, "server": 1, "load": 0.12, "set": "C_d"},
        {**rounded, "server": 2, "load": 0.0, "set": "C_0"},
        {**rounded, "server": 3, "load": 0.25, "set": "C_b"},
    ]
    return pd.DataFrame(rows)


def _fig6():
    return pd.DataFrame(
        {
            "init": ["all C_d", "C_d={1,3}, C_b={2}"],
            "update": ["single", "single"],
            "paper_rounding": [True, True],
            "iterations": [17, 2],
        }
    )


def _iterations():
    return pd.DataFrame(
        {
            "n_classes": [10, 20, 10, 20],
            "update": ["jacobi", "jacobi", "single", "single"],
            "runs": [800, 800, 800, 800],
            "min": [1, 2, 3, 5],
            "median": [2.0, 3.5, 8.0, 15.0],
            "max": [6, 5, 11, 18],
            "mean": [2.1, 3.4, 8.2, 15.1],
            "not_converged": [4, 0, 0, 0],
        }
    )


def _simulation():
    # two sizes, two instances each; policies bernoulli, jsq, pi
    rows = []
    relative = {
        (10, 0): {"bernoulli": 1.02, "jsq": 0.90, "pi": 0.80},
        (10, 1): {"bernoulli": 0.70, "jsq": 0.70, "pi": 0.75},
        (20, 0): {"bernoulli": 1.00, "jsq": 0.95, "pi": 0.66},
        (20, 1): {"bernoulli": 1.10, "jsq": 1.20, "pi": 0.60},
    }
    ci = {"bernoulli": 0.05, "jsq": 0.03, "pi": 0.02}
    # the instance's verdict (Holm-separated best or not), as policy_comparison_rows writes it
    best = {(10, 0): "pi", (10, 1): "not separated", (20, 0): "pi", (20, 1): "pi"}
    exact = 10.0  # the exact Bernoulli cost of every instance
    for (n, i), by_policy in relative.items():
        for policy, rel in by_policy.items():
            half = 0.5 if (n, i, policy) == (20, 1, "jsq") else ci[policy]
            rows.append(
                {
                    "n_classes": n,
                    "instance": i,
                    "policy": policy,
                    # plain simulated cost and its half-width (the Bernoulli coverage check)
                    "cost": rel * exact,
                    "ci95": half * exact,
                    "bernoulli_exact": exact,
                    "ratio": rel,
                    "ratio_ci95": half,
                    "best": best[n, i],
                    "max_load_bernoulli": 0.9 + 0.01 * i + 0.001 * n,
                }
            )
    return pd.DataFrame(rows)


def _load_sweep():
    s = [0.5, 0.9, 1.0, 1.3]
    return pd.DataFrame(
        {
            "load_factor": s * 3,
            "policy": ["bernoulli"] * 4 + ["led"] * 4 + ["pi"] * 4,
            "ratio": [1.0, 1.0, 1.0, 1.0, 1.2, 1.01, 0.99, 1.05, 0.8234, 0.75, 0.7, 0.4471],
            "ratio_ci95": [0.0] * 4 + [0.02] * 4 + [0.0031, 0.004, 0.003, 0.0049],
            "best": ["pi", "pi", "not separated", "pi"] * 3,
        }
    )


def _job_sizes():
    """Table 1 under two laws, and two random instances under one (hand-made numbers)."""
    cols = ["sample", "job_sizes", "policy", "instances", "gain", "gain_ci95", "gain_ci95_max",
            "better", "separated_best"]  # fmt: skip
    rows = [
        ("table1", "deterministic", "pi", 1, 0.27486, 0.00145, 0.00145, 1, 1),
        ("table1", "deterministic", "jsq", 1, -0.32943, 0.00399, 0.00399, 0, 0),
        ("table1", "lognormal:16", "pi", 1, 0.26512, 0.00813, 0.00813, 1, 1),
        ("random", "lognormal:16", "pi", 2, 0.18690, 0.00989, 0.10884, 2, 1),
        ("random", "lognormal:16", "io", 2, 0.17869, 0.00969, 0.09278, 2, 0),
    ]
    return pd.DataFrame(rows, columns=cols)


def _multiskill_tables():
    return {
        "table1": _table1(),
        "fig6": _fig6(),
        "iterations": _iterations(),
        "simulation": _simulation(),
        "load_sweep": _load_sweep(),
        "job_sizes": _job_sizes(),
    }


def test_multiskill_summary_job_sizes():
    v = summary.multiskill_summary(_multiskill_tables())
    t = "A.job_sizes.table1"
    assert (v[f"{t}.deterministic.pi"], v[f"{t}.deterministic.pi.ci95"]) == ("27.5", "0.1")
    assert v[f"{t}.deterministic.jsq"] == "−32.9"  # U+2212, as the README writes it
    assert v[f"{t}.lognormal_16.pi"] == "26.5"
    r = "A.job_sizes.random"
    assert v[f"{r}.instances"] == "2"
    assert (v[f"{r}.lognormal_16.pi.median"], v[f"{r}.lognormal_16.pi.ci95_max"]) == (
        "18.7",
        "10.9",
    )
    assert v[f"{r}.lognormal_16.pi.better"] == "2"
    assert v[f"{r}.lognormal_16.not_separated"] == "1"  # 2 instances, one separated best


def test_multiskill_summary_table1_and_fig6():
    v = summary.multiskill_summary(_multiskill_tables())
    assert v["A.table1.cost"] == "20.00000"
    assert [v[f"A.table1.rho.{j}"] for j in range(4)] == [
        "0.40000",
        "0.12346",
        "0.00310",
        "0.25000",
    ]
    assert v["A.table1.rho.2.scientific"] == "3.10·10⁻³"
    assert "A.table1.rho.1.scientific" not in v  # 0.12 is not a tiny load
    assert (v["A.table1.C_d"], v["A.table1.C_b"], v["A.table1.C_0"]) == ("{1}", "{2, 3}", "∅")
    assert v["A.table1.rounded.rho.2"] == "0"
    assert v["A.table1.rounded.cost_excess_pct"] == "0.25"  # 20.05 / 20 - 1 = 0.25%
    assert v["A.fig6.single.paper_rounding.all_C_d.iterations"] == "17"
    assert v["A.fig6.single.paper_rounding.C_d_1_3_C_b_2.iterations"] == "2"


def test_multiskill_summary_iterations():
    v = summary.multiskill_summary(_multiskill_tables())
    assert (v["A.iterations.jacobi.min"], v["A.iterations.jacobi.max"]) == ("1", "6")
    assert (v["A.iterations.jacobi.median_min"], v["A.iterations.jacobi.median_max"]) == (
        "2",
        "3.5",
    )
    assert v["A.iterations.jacobi.runs"] == "1,600"
    assert v["A.iterations.jacobi.not_converged"] == "4"
    assert v["A.iterations.jacobi.not_converged_C"] == "10"
    assert v["A.iterations.single.not_converged_C"] == "none"
    # max changes per class: 11/10 = 1.1 at C = 10 and 18/20 = 0.9 at C = 20 (the largest)
    assert v["A.iterations.single.max_per_class"] == "1.1"
    assert v["A.iterations.single.max_per_class_C"] == "10"
    assert v["A.iterations.single.max_per_class_largest"] == "0.9"


def test_multiskill_summary_simulation():
    v = summary.multiskill_summary(_multiskill_tables())
    # C = 10: best dynamic policy pi (0.80) on instance 0, jsq (0.70) on instance 1
    assert v["A.simulation.C10.best.median"] == "0.75"
    assert (v["A.simulation.C10.best.min"], v["A.simulation.C10.best.max"]) == ("0.70", "0.80")
    assert v["A.simulation.C10.best.ci95_max"] == "0.03"
    assert v["A.simulation.C10.best.saving_pct"] == "25"
    # ... but only instance 0 has a separated best (pi); instance 1 is not separated
    assert (v["A.simulation.C10.best_count.pi"], v["A.simulation.C10.best_count.jsq"]) == (
        "1",
        "0",
    )
    assert v["A.simulation.C10.not_separated"] == "1"
    # C = 20: pi on both (0.66, 0.60)
    assert v["A.simulation.C20.best.median"] == "0.63"
    assert v["A.simulation.C20.best.saving_pct"] == "37"
    assert v["A.simulation.C20.best_count.pi"] == "2"
    assert v["A.simulation.C20.not_separated"] == "0"
    assert v["A.simulation.C20.instances"] == "2"
    assert v["A.simulation.instances"] == "4"
    # Bernoulli within its CI of 1: 1.02 ± 0.05 yes, 0.70 no, 1.00 yes, 1.10 no
    assert v["A.simulation.bernoulli.covered"] == "2"
    assert v["A.simulation.bernoulli.covered_pct"] == "50"
    assert v["A.simulation.max_load"] == "0.930"  # 0.9 + 0.01 + 0.020
    # median over the dynamic rows: ci 0.03, 0.03, 0.03, 0.5 (jsq) and 0.02 x 4 (pi) -> 0.025
    assert v["A.simulation.ratio_ci95_median"] == "0.025"
    assert v["A.simulation.widest_ci.ci95"] == "0.5"
    assert v["A.simulation.widest_ci.policy"] == "JSQ"
    assert v["A.simulation.widest_ci.C"] == "20"


def test_summary_knows_part_a_policies():
    # summary.py names them without importing the (compiled) simulator
    from queue_routing.multiskill.simulation import POLICIES

    assert summary.POLICIES_A == POLICIES


def test_multiskill_summary_load_sweep():
    v = summary.multiskill_summary(_multiskill_tables())
    assert (v["A.load_sweep.pi.s0.5.relative"], v["A.load_sweep.pi.s0.5.ci95"]) == (
        "0.823",
        "0.003",
    )
    assert (v["A.load_sweep.pi.s1.3.relative"], v["A.load_sweep.pi.s1.3.ci95"]) == (
        "0.447",
        "0.005",
    )
    assert v["A.load_sweep.pi.s1.relative"] == "0.700"
    assert "A.load_sweep.bernoulli.s1.relative" not in v
    # led: worse at 0.5 and 0.9, not at 1.0 (worse again at 1.3 does not count)
    assert v["A.load_sweep.led.worse_up_to"] == "0.9"
    assert v["A.load_sweep.pi.worse_up_to"] == "none"
    assert v["A.load_sweep.jsq.worse_up_to"] == "not simulated"
    assert v["A.load_sweep.loads"] == "4"
    assert (v["A.load_sweep.pi.separated_best"], v["A.load_sweep.led.separated_best"]) == (
        "3",
        "0",
    )


def test_multiskill_summary_names_a_missing_table():
    tables = _multiskill_tables()
    del tables["fig6"]
    with pytest.raises(KeyError, match="fig6"):
        summary.multiskill_summary(tables)


def _deadlines_tables():
    gap = pd.DataFrame(
        {
            "sweep": ["arrival_rate", "arrival_rate", "mean_deadline", "mean_deadline"],
            "policy": ["BS", "PI", "BS", "PI"],
            "mean_gap_pct": [23.66, 1.74, 44.54, 3.75],
            "max_gap_pct": [38.64, 4.26, 93.6, 9.34],
        }
    )
    large = pd.DataFrame(
        {
            "clusters": [4, 4, 4, 8, 8, 8],
            "policy": ["BS", "IO", "PI", "BS", "IO", "PI"],
            "ratio": [2.14, 1.134, 1.0, 2.66, 1.355, 1.0],
            "ratio_ci95": [0.2, 0.2, 0.0, 0.3, 0.1, 0.0],
            "best": ["not separated"] * 3 + ["PI"] * 3,
            "table_bound": [0, 0, 0, 0, 0, 12],
        }
    )
    pure = pd.DataFrame({"arrival_rate": [2.0, 4.0, 3.0], "load": [0.43, 0.8696, 0.65]})
    three = pd.DataFrame(
        {
            "sweep": ["all", "all", "load"],
            "policy": ["PI", "IO", "PI"],
            "mean_gap_2_pct": [1.858, float("nan"), 2.004],
            "max_gap_2_pct": [4.996, float("nan"), 4.0],
            "mean_gap_3_pct": [2.1099, 7.5, 1.996],
            "max_gap_3_pct": [4.7224, 9.0, 3.7],
        }
    )
    return {"gap": gap, "large": large, "pure_routing": pure, "three": three}


def test_deadlines_summary_three_clusters():
    v = summary.deadlines_summary(_deadlines_tables())
    assert (v["B.three.all.pi.mean2"], v["B.three.all.pi.max2"]) == ("1.86", "5.00")
    assert (v["B.three.all.pi.mean3"], v["B.three.all.pi.max3"]) == ("2.11", "4.72")
    assert v["B.three.load.pi.mean3"] == "2.00"
    assert "B.three.all.io.mean2" not in v and v["B.three.all.io.mean3"] == "7.50"  # NaN: none


def test_deadlines_summary():
    v = summary.deadlines_summary(_deadlines_tables())
    assert (v["B.gap.arrival_rate.bs.mean"], v["B.gap.arrival_rate.bs.max"]) == ("23.7", "38.6")
    assert (v["B.gap.arrival_rate.pi.mean"], v["B.gap.arrival_rate.pi.max"]) == ("1.7", "4.3")
    assert (v["B.gap.mean_deadline.pi.mean"], v["B.gap.mean_deadline.pi.max"]) == ("3.8", "9.3")
    assert (v["B.large.bs.ratio_min"], v["B.large.bs.ratio_max"]) == ("2.14", "2.66")
    assert (v["B.large.io.ratio_min"], v["B.large.io.ratio_max"]) == ("1.13", "1.35")
    # 95% intervals above 1: BS 2.14 - 0.2 and 2.66 - 0.3; IO only 1.355 - 0.1
    assert (v["B.large.bs.excludes_one"], v["B.large.io.excludes_one"]) == ("2", "1")
    assert v["B.large.sizes"] == "2"
    assert "B.large.pi.ratio_min" not in v
    assert (v["B.large.pi.separated_best"], v["B.large.bs.separated_best"]) == ("1", "0")
    assert v["B.large.truncated"] == "PI at n = 8"
    assert v["B.pure_routing.max_arrival_rate"] == "4.0"
    assert v["B.pure_routing.max_load"] == "0.87"


def test_serverpools_summary():
    averages = pd.DataFrame(
        {
            "example": ["stable", "stable", "large_cycle", "large_cycle"],
            "r": [100.0, 1e6, 100.0, 1e6],
            "mean_norm": [1.4249, 1.3671, 6.94, 23.61],
            # the median SE of each example sets its decimals: 0.025 -> two, 1.0 -> none
            "mean_norm_se": [0.01, 0.04, 0.8, 1.2],
            "stationary": [True, True, False, True],
        }
    )
    verdicts = pd.DataFrame(
        {
            "example": ["stable", "large_cycle"],
            "slope": [-0.0012, 0.5112],
            "slope_se": [0.0049, 0.0297],
            "slope_low": [-0.0223, 0.3834],
            "slope_high": [0.0199, 0.639],
            "verdict": ["tight", "escaping"],
        }
    )
    covariance = pd.DataFrame({"z": [0.3, -1.27, 1.1]})
    # tail_fraction 0.5 of [0, 4]: times 2, 3, 4 -> mean of 0.015, 0.016, 0.0155
    fluid = pd.DataFrame(
        {
            "example": ["large_cycle"] * 5,
            "time": [0.0, 1.0, 2.0, 3.0, 4.0],
            "norm_fluid": [0.001, 0.1, 0.015, 0.016, 0.0155],
        }
    )
    limit = pd.DataFrame(
        {
            "example": ["stable"],
            "slope": [-0.4871],
            "slope_se": [0.0132],
            "slope_low": [-0.5291],
            "slope_high": [-0.4451],
        }
    )
    tables = {
        "time_average": averages,
        "slope": verdicts,
        "covariance": covariance,
        "fluid": fluid,
        "fluid_limit": limit,
    }
    v = summary.serverpools_summary(tables, tail_fraction=0.5)
    assert v["C.time_average.stable.r100"] == "1.42"
    assert v["C.time_average.stable.r1000000"] == "1.37"
    assert v["C.time_average.large_cycle.r100"] == "7"
    assert v["C.time_average.large_cycle.r1000000"] == "24"
    assert (v["C.slope.stable"], v["C.slope.stable.se"]) == ("−0.001", "0.005")
    assert (v["C.slope.stable.low"], v["C.slope.stable.high"]) == ("−0.022", "0.020")
    assert (v["C.slope.large_cycle"], v["C.slope.large_cycle.se"]) == ("0.51", "0.03")
    assert (v["C.slope.large_cycle.low"], v["C.slope.large_cycle.high"]) == ("0.38", "0.64")
    assert v["C.slope.large_cycle.verdict"] == "escaping"
    assert (v["C.time_average.flagged"], v["C.time_average.windows"]) == ("1", "4")
    assert v["C.covariance.max_abs_z"] == "1.3"
    assert v["C.fluid.large_cycle.level"] == "0.0155"
    # a sqrt(r) for the growing (unstable) example, at its time averages' decimals (none)
    assert (v["C.fluid.large_cycle.r100.sqrt_r"], v["C.fluid.large_cycle.r1000000.sqrt_r"]) == (
        "0",
        "16",
    )  # 0.0155 x 10 and 0.0155 x 1000
    assert "C.fluid.stable.r100.sqrt_r" not in v
    # fewer than two stationary scales in the top decade: no slope, the keys say so
    flat = verdicts.assign(slope=[np.nan, 0.5112], slope_se=[np.nan, 0.0297])
    v = summary.serverpools_summary({**tables, "slope": flat}, tail_fraction=0.5)
    assert [v[f"C.slope.stable{k}"] for k in ("", ".se", ".low", ".high")] == ["n/a"] * 4
    assert v["C.slope.stable.verdict"] == "tight"
    assert v["C.fluid_limit.stable.slope"] == "−0.49"
    assert (v["C.fluid_limit.stable.low"], v["C.fluid_limit.stable.high"]) == ("−0.53", "−0.45")


def test_render_markdown_is_sorted_deterministic_and_parses_back():
    values = {"B.t.x": "1,600", "A.t.z": "5.99·10⁻⁴", "A.t.a": "−0.001", "A.u.b": "{1, 2}"}
    sources = {"A.t": "results/a.csv", "A.u": "results/u.csv", "B.t": "results/b.csv"}
    text = summary.render_markdown(values, sources)
    assert text == summary.render_markdown(dict(reversed(values.items())), sources)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `A.t.a` | −0.001 | `results/a.csv` |",
        "| `A.t.z` | 5.99·10⁻⁴ | `results/a.csv` |",
        "| `A.u.b` | {1, 2} | `results/u.csv` |",
        "| `B.t.x` | 1,600 | `results/b.csv` |",
    ]
    assert text.endswith("\n") and "| key | value | source table |\n|---|---|---|\n" in text
    assert summary.parse_markdown(text) == values
    with pytest.raises(KeyError, match=r"B\.t"):
        summary.render_markdown(values, {"A.t": "a", "A.u": "u"})
    with pytest.raises(ValueError, match="Markdown table"):
        summary.render_markdown({"A.t.x": "1 | 2"}, sources)


def test_committed_summary_is_in_render_order():
    text = SUMMARY.read_text(encoding="utf-8")
    keys = list(summary.parse_markdown(text))
    assert keys == sorted(keys)
    assert text.startswith("# Numbers quoted in README.md and the part guides\n")


# -- 3b. the smoke pipeline writes every key the pages use ------------------------------
#: Indices of a grid in a key: the size C<n>, the scale r<n>, the load factor s<x>. The smoke
#: config runs other grids than the default one, so keys are compared with these replaced.
GRID_INDEX = re.compile(r"(?<=\.)(?:[Cr]\d+|s\d+(?:\.\d+)?)(?=\.[A-Za-z]|$)")


def grid_free(key):
    """``key`` with its grid indices replaced by ``<letter>*``: ``A.x.C100.y`` -> ``A.x.C*.y``."""
    return GRID_INDEX.sub(lambda m: m.group(0)[0] + "*", key)


def test_grid_free():
    assert grid_free("A.simulation.C100.best.median") == "A.simulation.C*.best.median"
    assert grid_free("A.load_sweep.pi.s0.5.relative") == "A.load_sweep.pi.s*.relative"
    assert grid_free("A.load_sweep.pi.s1.ci95") == "A.load_sweep.pi.s*.ci95"
    assert grid_free("C.time_average.unstable.r1000000") == "C.time_average.unstable.r*"
    assert grid_free("A.simulation.widest_ci.C") == "A.simulation.widest_ci.C"
    assert grid_free("A.table1.rho.4.scientific") == "A.table1.rho.4.scientific"


def test_smoke_run_writes_every_key_the_pages_use(smoke_run):
    path = smoke_run / "figures" / "summary.md"
    assert path.is_file(), "the pipeline did not write figures/summary.md"
    smoke = {grid_free(key) for key in summary.parse_markdown(path.read_text(encoding="utf-8"))}
    missing = sorted({grid_free(key) for key in page_keys()} - smoke)
    assert missing == [], f"keys quoted by {PAGES} that the smoke run does not write: {missing}"
