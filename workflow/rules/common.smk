# Helpers shared by every part's rules.
from pathlib import Path

FIGURES = config["figures_dir"]


def figure(name):
    """Named PDF and PNG outputs of one figure under the configured figures directory."""
    return {
        "pdf": f"{FIGURES}/{name}.pdf",
        "png": f"{FIGURES}/{name}.png",
    }
