# Helpers shared by every part's rules.
from queue_routing.workflow.chunks import LABEL_PATTERN

FIGURES = config["figures_dir"]

# The heavy rules split their work into chunks, one job each, named by the `chunk` wildcard
# (queue_routing.workflow.chunks; queue_routing.workflow.plan plans them and predicts their
# requests, rules/jobs.smk is the glue).


wildcard_constraints:
    chunk=LABEL_PATTERN,


#: Report category of each part (the figure names start with the part's name).
REPORT_CATEGORIES = {
    "multiskill": "Part A: multi-skilled servers (Miguelez, Doncel & Prabhu 2022)",
    "deadlines": "Part B: soft real-time jobs on multiclusters (Nino-Mora 2012)",
    "serverpools": "Part C: large flexible server pools (Stolyar & Yudovina 2013)",
}


def figure(name):
    """Named outputs of one figure: vector PDF, PNG (shown in the Snakemake report) and the
    caption drawn under the figure as reStructuredText (included in the report's caption).
    """
    part = name.split("_", 1)[0]
    return {
        "pdf": f"{FIGURES}/{name}.pdf",
        "png": report(
            f"{FIGURES}/{name}.png",
            caption="../report/figure.rst",
            category=REPORT_CATEGORIES[part],
            subcategory="Figures",
            labels={"figure": name.split("_", 1)[1]},
        ),
        "caption": f"{FIGURES}/captions/{name}.rst",
    }


def report_table(path, name, label):
    """``path`` marked for the Snakemake report, under its part's "Tables", with the caption
    ``workflow/report/tables/<name>.rst`` (``name`` starts with the part's name)."""
    return report(
        path,
        caption=f"../report/tables/{name}.rst",
        category=REPORT_CATEGORIES[name.split("_", 1)[0]],
        subcategory="Tables",
        labels={"table": label},
    )
