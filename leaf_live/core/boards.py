"""Readable leaderboards at terminal width, for both tracks (issue 16).

:func:`render_board` takes a board's rows (dicts, already in rank order), its columns (:class:`Col`) and
its metadata (:class:`BoardMeta`: metric, direction, range, units, notes) and prints a titled, labelled
text table: numbers to 3 significant digits (:func:`sig`), intervals as ``[lo, hi]``, shares as percents,
the direction / range / units stated once above the table, the notes below it. Columns that do not fit the
width are dropped lowest ``priority`` first and named in a footer (``--format csv|json`` gives every column).
No rounding hides a sign: ``-0.000412`` prints as ``-0.000412``.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_WIDTH = 110
SIG_DIGITS = 3


def sig(x: float | int | None, digits: int = SIG_DIGITS, *, signed: bool = False) -> str:
    """``x`` to ``digits`` significant digits in fixed notation ("-0.955", "0.0144", "1,110" for integers
    given as int), scientific below 1e-6; "–" for None/NaN. ``signed``: a leading "+" on positives."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    v = float(x)
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    if mag < -6:
        return f"{v:+.{digits - 1}e}" if signed else f"{v:.{digits - 1}e}"
    dec = max(0, digits - 1 - mag)
    s = f"{v:+,.{dec}f}" if signed else f"{v:,.{dec}f}"
    return s


def interval(lo: float | None, hi: float | None, digits: int = SIG_DIGITS) -> str:
    """``[lo, hi]`` with :func:`sig`; "–" when either end is missing."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "–"
    return f"[{sig(lo, digits)}, {sig(hi, digits)}]"


def pct(x: float | None) -> str:
    """A share in [0, 1] as a percent with 3 significant digits ("92.5%"); "–" when missing."""
    if x is None or not math.isfinite(x):
        return "–"
    return f"{sig(100 * x)}%"


@dataclass(frozen=True)
class Col:
    """One column: ``header``; ``value(row) -> str`` (or ``key``: the row's field through :func:`sig`);
    ``align`` "l" | "r"; ``priority``: higher stays longer when the width is short (the model and the score
    columns should carry the highest)."""

    header: str
    key: str | None = None
    value: Callable[[Mapping], str] | None = None
    align: str = "r"
    priority: int = 5

    def cell(self, row: Mapping) -> str:
        if self.value is not None:
            return self.value(row)
        return sig(row.get(self.key)) if self.key else ""


@dataclass(frozen=True)
class BoardMeta:
    """A board's title and how to read it: ``metric`` name, ``higher_is_better``, its ``range`` (e.g.
    "[-1, 1]"), ``units``; ``notes`` printed under the table (rules, intervals, why a view is missing)."""

    title: str
    metric: str
    higher_is_better: bool
    range: str
    units: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def legend(self) -> str:
        way = "higher is better" if self.higher_is_better else "lower is better"
        return f"{self.metric}: {way}; range {self.range}; units: {self.units}"


def terminal_width(default: int = DEFAULT_WIDTH) -> int:
    """The terminal's width (``COLUMNS`` or the tty), ``default`` when not a terminal."""
    return shutil.get_terminal_size((default, 24)).columns


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    words, lines, cur = text.split(), [], indent
    for w in words:
        if len(cur) + len(w) + (1 if cur.strip() else 0) > width and cur.strip():
            lines.append(cur)
            cur = indent + w
        else:
            cur = f"{cur} {w}" if cur.strip() else cur + w
    if cur.strip():
        lines.append(cur)
    return lines


def render_board(
    rows: Sequence[Mapping], columns: Sequence[Col], meta: BoardMeta, *, width: int | None = None
) -> str:
    """The board as text no wider than ``width`` (default: the terminal's): the title and the legend line
    (:meth:`BoardMeta.legend`), both wrapped, the table (header, rule, one line per row in the given order)
    and the notes, wrapped. Columns are dropped lowest priority first until the table fits, and the dropped
    ones are named in a footer. A board without rows prints the title, the legend, "(no rows)" and its
    notes."""
    width = width or terminal_width()
    cols = list(columns)
    cells = [[c.cell(r) for c in cols] for r in rows]

    def table_width(keep: list[int]) -> int:
        return sum(max([len(cols[i].header)] + [len(cl[i]) for cl in cells]) for i in keep) + 2 * (
            len(keep) - 1
        )

    keep = list(range(len(cols)))
    dropped: list[str] = []
    while len(keep) > 2 and table_width(keep) > width:
        worst = min(keep, key=lambda i: (cols[i].priority, -i))
        keep.remove(worst)
        dropped.append(cols[worst].header)
    out = [*_wrap(meta.title, width), *_wrap(meta.legend(), width)]
    if not rows:
        out.append("(no rows)")
    else:
        w = {i: max([len(cols[i].header)] + [len(cl[i]) for cl in cells]) for i in keep}

        def line(vals: Sequence[str]) -> str:
            parts = []
            for i, v in zip(keep, vals):
                parts.append(v.ljust(w[i]) if cols[i].align == "l" else v.rjust(w[i]))
            return "  ".join(parts).rstrip()

        out.append(line([cols[i].header for i in keep]))
        out.append("  ".join("-" * w[i] for i in keep))
        out.extend(line([cl[i] for i in keep]) for cl in cells)
    for n in meta.notes:
        out.extend(_wrap(n, width, "  "))
    if dropped:
        out.extend(
            _wrap(
                f"(hidden at width {width}: {', '.join(dropped)}; --format csv|json has every column)", width
            )
        )
    return "\n".join(out)
