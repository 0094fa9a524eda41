"""Generic figure helpers for both tracks' report figures (matplotlib, drawn on the Agg canvas; no pyplot, so
no display, no global figure state and no backend switch).

A track figure function takes frames read from the stored tables and returns a :class:`Plot`: the matplotlib
``Figure``, the rows it drew (``data``, one row per mark, what the site prints beside it and what the tests
compare with the tables), a title and a caption that says what the marks and intervals mean. :func:`save_png`
writes it. Nothing here reads the store, the environment or a track module.
"""

from __future__ import annotations

import base64
import io
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from PIL import Image
from PIL.PngImagePlugin import PngInfo

DPI = 100
_PNG_INFO = PngInfo()
_PNG_INFO.add_text("Software", "leaf_live")

# Model families (the model_id prefix, DESIGN.md conventions) have their own palettes, so a reader tells a Fed
# nowcast from a baseline from an LLM agent at a glance.
_PALETTES = {
    "consensus": ("#555555", "#999999"),
    "fed": ("#2ca02c", "#006d2c", "#74c476", "#31a354", "#a1d99b"),
    "baseline": ("#8c564b", "#d2a679", "#6b4226", "#c49c94", "#a0522d", "#e0c9a6"),
    "market": ("#9467bd", "#c5b0d5"),
    "external": ("#e377c2", "#f7b6d2"),
    "tsfm": ("#17becf", "#9edae5"),
    "agent": ("#1f77b4", "#ff7f0e", "#d62728", "#393b79", "#bcbd22", "#843c39", "#7f7f7f", "#e7ba52"),
}


@dataclass
class Plot:
    """One report figure: ``name`` (file stem), ``title``, ``caption`` (marks, intervals, source tables),
    ``figure`` (matplotlib, not yet saved), ``data`` (the rows drawn) and ``empty`` (True when the store held
    nothing to draw and the figure says so)."""

    name: str
    title: str
    caption: str
    figure: Figure
    data: pl.DataFrame = field(default_factory=pl.DataFrame)
    empty: bool = False


def new_figure(
    width: float, height: float, nrows: int = 1, ncols: int = 1, **subplots_kw
) -> tuple[Figure, np.ndarray]:
    """A figure of ``width`` x ``height`` inches on the Agg canvas and its axes as a 2-D array (nrows x
    ncols)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplots_kw)
    return fig, axes


def save_png(plot: Plot | Figure, path: str | Path, dpi: int = DPI) -> Path:
    """Write ``plot`` as PNG to ``path`` (parent directories created; written to a temporary file first and
    renamed, so a reader never sees half a file). The image is reduced to a 256-colour palette (Pillow, fast
    octree): about a third of the bytes of the RGBA file for these line and bar charts, which matters because
    each figure also travels base64-encoded in the Dagster event log. Returns the path."""
    fig = plot.figure if isinstance(plot, Plot) else plot
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    image = Image.open(buf).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".png", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            image.save(fh, format="PNG", optimize=True, pnginfo=_PNG_INFO)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a web server serving the figures must read them
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def png_base64(path: str | Path) -> str:
    """The file's bytes as base64 text (for a ``data:image/png;base64,`` URI)."""
    return base64.b64encode(Path(path).read_bytes()).decode("ascii")


def model_colors(model_ids: Sequence[str]) -> dict[str, str]:
    """A colour per model: the consensus grey; within each family (the model_id prefix: fed, baseline, market,
    external, tsfm, and everything else = agents) the family palette in sorted-id order, so the same set of
    models gets the same colours in every figure and two models of one figure never share one."""
    families: dict[str, list[str]] = {}
    for m in sorted(set(model_ids)):
        fam = m.split("/", 1)[0]
        families.setdefault(fam if fam in _PALETTES else "agent", []).append(m)
    out = {}
    for fam, ids in families.items():
        palette = _PALETTES[fam]
        for k, m in enumerate(ids):
            out[m] = palette[k % len(palette)]
    return out


def note(ax, text: str) -> None:
    """Write ``text`` in the middle of an axis with nothing else on it (nothing stored to draw)."""
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        wrap=True,
        fontsize=10,
        color="#444444",
        transform=ax.transAxes,
    )


def interval_barh(
    ax,
    labels: Sequence[str],
    values: Sequence[float | None],
    lo: Sequence[float | None] | None = None,
    hi: Sequence[float | None] | None = None,
    *,
    colors: Sequence[str] | None = None,
    hollow: Sequence[bool] | None = None,
    reference: float | None = 0.0,
    value_format: str = "{:+.4f}",
) -> BarContainer:
    """Horizontal bars, first label on top, with an interval whisker where ``lo``/``hi`` are given (a ``None``
    bound draws no whisker for that bar), a vertical reference line at ``reference`` and each value printed at
    the end of its bar. A ``None`` value draws an empty bar labelled "n/a"; a bar flagged in ``hollow`` is
    drawn as its hatched outline (a value of another kind than the filled bars). Returns the bars (their
    widths are the values; tests read them back)."""
    n = len(labels)
    y = np.arange(n)[::-1]
    vals = np.array([np.nan if v is None else float(v) for v in values])
    bars = ax.barh(y, np.nan_to_num(vals), color=list(colors) if colors is not None else None, height=0.65)
    for bar, flag in zip(bars, hollow or ()):
        if flag:
            bar.set_edgecolor(bar.get_facecolor())
            bar.set_facecolor("none")
            bar.set_hatch("///")
    if lo is not None and hi is not None:
        for yi, v, a, b in zip(y, vals, lo, hi):
            if a is None or b is None or np.isnan(v):
                continue
            ax.errorbar(
                v,
                yi,
                xerr=[[max(v - a, 0.0)], [max(b - v, 0.0)]],
                fmt="none",
                ecolor="black",
                elinewidth=1.1,
                capsize=3,
            )
    if reference is not None:
        ax.axvline(reference, color="#333333", lw=0.8, ls="--")
    ax.set_yticks(y, list(labels))
    # the value is printed beyond the bar's end or its whisker, whichever reaches further out
    ends = []
    for k, v in enumerate(vals):
        a = lo[k] if lo is not None and lo[k] is not None else v
        b = hi[k] if hi is not None and hi[k] is not None else v
        ends.append(0.0 if np.isnan(v) else (max(v, b) if v >= 0 else min(v, a)))
    for yi, v, end in zip(y, vals, ends):
        right = np.isnan(v) or v >= 0
        ax.annotate(
            "n/a" if np.isnan(v) else value_format.format(v),
            (end, yi),
            xytext=(5 if right else -5, 0),
            textcoords="offset points",
            ha="left" if right else "right",
            va="center",
            fontsize=7,
        )
    ax.use_sticky_edges = (
        False  # bars stick to 0, which would stop the margin that leaves room for the labels
    )
    ax.margins(x=0.25)
    return bars
