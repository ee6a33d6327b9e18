"""Shared figure helpers: one matplotlib style and a byte-stable, atomic ``save_figure``.

Every figure of the project is built with :func:`new_figure` (a bare
:class:`matplotlib.figure.Figure`, so no pyplot state and no interactive backend: PNG output is
rendered by Agg, PDF output by the vector PDF backend) inside :func:`style_context`, and written
with :func:`save_figure`, which

* draws the caption as small wrapped text under the axes (the same caption is returned by the
  figure functions, so the README can show it next to the PNG);
* writes ``stem.pdf`` (vector) and ``stem.png`` (150 dpi) without timestamps or other
  metadata that varies between runs, so rerunning a plotting rule, or saving a figure twice,
  gives byte-identical files (given the same matplotlib, numpy and font versions);
* writes each file to a temporary file in the target directory and moves it into place with
  :func:`os.replace` only after both files rendered, so an error never leaves a partial or
  half-updated pair behind.

The palette is Okabe & Ito's colour-blind-safe set ("Color Universal Design", 2008).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import matplotlib as mpl
import matplotlib.colors as mcolors
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import ScaledTranslation

__all__ = [
    "CAPTION_FONTSIZE",
    "GREY",
    "PALETTE",
    "PNG_DPI",
    "STYLE",
    "caption_rst",
    "label_above",
    "lighten",
    "new_figure",
    "save_caption",
    "save_figure",
    "style_context",
    "styled",
    "wrap_caption",
]

#: Okabe-Ito colours, in the order used for successive series (black last).
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#E69F00",  # orange
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)

#: Neutral grey for "not applicable" regions (unstable parameter sets).
GREY = "#BBBBBB"

#: Resolution of the PNG files (the PDF files are vector; rasterised artists use PDF_DPI).
PNG_DPI = 150
PDF_DPI = 300

#: Font size of the caption drawn under the axes.
CAPTION_FONTSIZE = 8.0

#: The project's matplotlib style (applied with :func:`style_context`; never set globally).
STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",  # bundled with matplotlib: same glyphs on every machine
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 8.5,
    "legend.title_fontsize": 9,
    "legend.framealpha": 0.9,
    "legend.edgecolor": "0.8",
    "axes.prop_cycle": mpl.cycler(color=list(PALETTE)),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "0.85",
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.6,
    "lines.markersize": 5,
    "image.cmap": "cividis",
    "figure.dpi": 100,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "pdf.fonttype": 42,  # embed TrueType: text stays selectable and editable
    "svg.hashsalt": "queue-routing",
    "mathtext.fontset": "dejavusans",
}

_PDF_METADATA = {"CreationDate": None, "ModDate": None}
_PNG_METADATA = {"Software": None}

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def style_context() -> Iterator[None]:
    """Apply :data:`STYLE` for the duration of a ``with`` block (restored afterwards)."""
    with mpl.rc_context(STYLE):
        yield


def styled(func: F) -> F:
    """Decorator: run a figure-building function inside :func:`style_context`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with style_context():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def new_figure(
    nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] = (6.4, 4.2), **subplot_kw: Any
) -> tuple[Figure, Any]:
    """A bare :class:`Figure` with constrained layout and its axes (as ``Figure.subplots``).

    Call it inside :func:`style_context` (or a :func:`styled` function) so the style applies
    to the axes it creates. Extra keywords go to :meth:`Figure.subplots`.
    """
    fig = Figure(figsize=figsize, layout="constrained")
    subplot_kw.setdefault("squeeze", True)
    axes = fig.subplots(nrows, ncols, **subplot_kw)
    return fig, axes


def label_above(ax, xs: Sequence[float], texts: Sequence[str], *, fontsize: float = 8.0) -> None:
    """Write ``texts[k]`` just above the top of ``ax`` at the data abscissa ``xs[k]`` (one
    short label per x, e.g. the verdict of a comparison made there); give the title room with
    ``ax.set_title(..., pad=16)``."""
    for x, text in zip(xs, texts, strict=True):
        ax.annotate(
            text,
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=fontsize,
        )


def lighten(color: str, amount: float = 0.5) -> tuple[float, float, float]:
    """Blend ``color`` with white (``amount`` = 0: unchanged, 1: white)."""
    r, g, b = mcolors.to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def wrap_caption(caption: str, width_in: float, fontsize: float = CAPTION_FONTSIZE) -> str:
    """Wrap ``caption`` to lines that fit ``width_in`` inches of ``fontsize``-point text.

    Paragraph breaks (blank lines) are kept; the width estimate (0.53 em per character)
    is conservative for DejaVu Sans.
    """
    chars = max(20, int(width_in * 72.0 / (0.53 * fontsize)))
    paragraphs = [" ".join(p.split()) for p in caption.strip().split("\n\n")]
    return "\n".join(textwrap.fill(p, width=chars) for p in paragraphs if p)


def _targets(stem: str | os.PathLike[str]) -> tuple[Path, Path]:
    stem = Path(stem)
    # Append, do not replace, a suffix: "fig6.single" must give "fig6.single.pdf".
    return stem.with_name(stem.name + ".pdf"), stem.with_name(stem.name + ".png")


def _add_caption(fig: Figure, caption: str, fontsize: float) -> Text:
    """Draw ``caption``, wrapped to the figure width, just under the figure's bottom edge.

    ``savefig(bbox_inches="tight")`` then grows the saved canvas to include it.
    """
    offset = ScaledTranslation(0.06, -0.08, fig.dpi_scale_trans)
    return fig.text(
        0.0,
        0.0,
        wrap_caption(caption, fig.get_figwidth() - 0.1, fontsize),
        transform=fig.transFigure + offset,
        ha="left",
        va="top",
        fontsize=fontsize,
        color="0.2",
        linespacing=1.3,
    )


@contextlib.contextmanager
def _pristine(fig: Figure) -> Iterator[Figure]:
    """A throw-away copy of ``fig`` to draw on (or ``fig`` itself, cleaned up afterwards).

    Every draw runs the constrained-layout solver starting from the current axes positions,
    so drawing the same figure twice can move artists by ~1e-4 points, enough to change the
    PDF bytes. Drawing a fresh copy each time makes every save start from the state the
    figure function left, so saving twice, or rerunning, gives identical files, and ``fig``
    itself is never modified. A figure that cannot be pickled (e.g. a lambda formatter) is
    drawn directly and the texts added to it are removed afterwards.
    """
    try:
        copy = pickle.loads(pickle.dumps(fig))
    except Exception:
        copy = None
    if copy is not None:
        yield copy
        return
    n_texts = len(fig.texts)
    try:
        yield fig
    finally:
        for text in fig.texts[n_texts:]:
            text.remove()


def save_figure(
    fig: Figure,
    stem: str | os.PathLike[str],
    caption: str,
    *,
    caption_fontsize: float = CAPTION_FONTSIZE,
) -> list[Path]:
    """Write ``stem.pdf`` and ``stem.png`` with ``caption`` under the axes; return the paths.

    ``stem`` gets the suffixes appended (``fig.v1`` gives ``fig.v1.pdf``). The caption is
    drawn on a copy of ``fig`` (see :func:`_pristine`), so ``fig`` is left as it was and
    saving twice gives identical files. Parent directories are created. Both files are
    rendered to temporary files in the target directory first and moved into place only
    when both succeeded; on any error the temporary files are removed and existing figures
    at ``stem`` are left untouched.
    """
    pdf, png = _targets(stem)
    pdf.parent.mkdir(parents=True, exist_ok=True)
    temps: list[Path] = []
    try:
        with style_context():
            for target, fmt, extra in (
                (pdf, "pdf", {"metadata": _PDF_METADATA, "dpi": PDF_DPI}),
                (png, "png", {"metadata": _PNG_METADATA, "dpi": PNG_DPI}),
            ):
                fd, name = tempfile.mkstemp(
                    prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
                )
                temps.append(Path(name))
                with os.fdopen(fd, "wb") as fh, _pristine(fig) as draft:
                    if caption.strip():
                        _add_caption(draft, caption, caption_fontsize)
                    draft.savefig(fh, format=fmt, bbox_inches="tight", pad_inches=0.08, **extra)
        for tmp in temps:
            os.chmod(tmp, 0o644)  # mkstemp creates 0600 files
        for tmp, target in zip(temps, (pdf, png), strict=True):
            os.replace(tmp, target)
        temps.clear()
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
    return [pdf, png]


#: Characters with a meaning in reStructuredText inline markup (escaped by ``caption_rst``).
_RST_SPECIAL = "\\`*_|[]<>:"


def caption_rst(caption: str) -> str:
    """``caption`` as reStructuredText that renders to the same text.

    Paragraphs (separated by blank lines) are kept and their lines joined; every character
    with a meaning in inline markup (``*``, ``_``, ``|``, backquotes, ...) is backslash-escaped,
    so a caption such as "ρ_j = λ_j/μ_j, |x|" can never be read as markup.
    """
    paragraphs = [" ".join(p.split()) for p in caption.strip().split("\n\n")]
    escaped = [
        "".join("\\" + ch if ch in _RST_SPECIAL else ch for ch in p) for p in paragraphs if p
    ]
    return "\n\n".join(escaped) + "\n"


def save_caption(caption: str, path: str | os.PathLike[str]) -> Path:
    """Write ``caption`` as reStructuredText (:func:`caption_rst`) atomically to ``path``.

    The pipeline writes the caption drawn under each figure to a file too, and the
    Snakemake report includes it (``workflow/report/figure.rst``).
    """
    from .io import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(caption_rst(caption), encoding="utf-8")
    return path


def require_columns(df: Any, columns: Any, what: str, *, allow_empty: bool = True) -> None:
    """Raise ``ValueError`` naming the columns missing from the table ``df`` of a figure.

    ``what`` names the table in the message; with ``allow_empty=False`` an empty table is an
    error too. (``TypeError`` if ``df`` is not a pandas DataFrame.)
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing}; it has {list(df.columns)}")
    if not allow_empty and df.empty:
        raise ValueError(f"{what} is empty")
