"""Point-in-time and calendar rules, in one place (DESIGN.md principle 1).

Every stored fact carries ``available_at`` (UTC); a forecast issued at ``t`` sees only rows with
``available_at <= t``. This module owns the time-zone placement of source wall-clock times (release times
are defined in America/New_York), month arithmetic and the reference-period convention (the ``DATE`` of a
period's first day).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core.sources import SourceError

ET = ZoneInfo("America/New_York")

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTH_NUMBER = {m: i + 1 for i, m in enumerate(_MONTHS)}


# ------------------------------------------------------------------------------------------------
# time
# ------------------------------------------------------------------------------------------------


def localize(local: datetime, tz: ZoneInfo, *, file: str, row: int, field: str, value: object) -> datetime:
    """Place a naive wall-clock time in ``tz`` and return it in UTC.

    Raises :class:`SourceError` when the wall-clock time does not exist (spring-forward gap, e.g.
    2021-03-14 02:30 in New York) or is ambiguous (fall-back hour): no single UTC instant is implied.
    """
    first = local.replace(tzinfo=tz, fold=0)
    second = local.replace(tzinfo=tz, fold=1)
    if first.utcoffset() != second.utcoffset():
        back = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
        kind = (
            "does not exist (daylight-saving gap)"
            if back != local
            else "is ambiguous (daylight-saving overlap)"
        )
        raise SourceError(
            f"local time {local:%Y-%m-%d %H:%M:%S} {kind} in time zone {tz.key}; cannot place it in UTC",
            file=file,
            row=row,
            field=field,
            value=value,
        )
    return first.astimezone(UTC)


def parse_naive_datetime(text: str, *, file: str, row: int, field: str) -> datetime:
    """Parse ``YYYY-MM-DD HH:MM[:SS]`` (naive wall clock). Raises :class:`SourceError`."""
    s = (text or "").strip()
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"):
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    raise SourceError(
        "not a timestamp of the form YYYY-MM-DD HH:MM[:SS]", file=file, row=row, field=field, value=text
    )


def shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    """``(year, month)`` moved by ``delta`` months (negative = back): (2025, 11, 3) -> (2026, 2)."""
    k = year * 12 + (month - 1) + delta
    return k // 12, k % 12 + 1


def label_for_month(year: int, month: int) -> str:
    """``YYYY-MM`` of a month (the release-month partition key and period label format)."""
    return f"{year:04d}-{month:02d}"


_MONTH_KEY = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


def check_month(value: object, field: str = "month", error: type[Exception] = ValueError) -> str:
    """Return ``value`` when it is a month ``YYYY-MM`` (month 01-12); else raise ``error`` naming ``field``
    and the value. The one YYYY-MM check (CLI flags, config, source files, vintage labels)."""
    if not isinstance(value, str) or not _MONTH_KEY.fullmatch(value):
        raise error(f"{field}={value!r}: expected a month YYYY-MM (e.g. 2024-03)")
    return value


def month_index(month: str | date) -> int:
    """Months since year 0 of a ``YYYY-MM`` key or a date's month: ``year * 12 + month - 1`` (differences of
    two indices count months). Raises :class:`ValueError` for a malformed key."""
    if isinstance(month, date):
        return month.year * 12 + month.month - 1
    y, m = check_month(month).split("-")
    return int(y) * 12 + int(m) - 1


def month_of_index(k: int) -> str:
    """The ``YYYY-MM`` key of a :func:`month_index`."""
    return label_for_month(k // 12, k % 12 + 1)


def month_start_of_index(k: int) -> date:
    """The first day of the month of a :func:`month_index`."""
    return date(k // 12, k % 12 + 1, 1)


def shift_month_key(month: str, delta: int) -> str:
    """A ``YYYY-MM`` key moved by ``delta`` months: ('2026-01', -1) -> '2025-12'."""
    return month_of_index(month_index(month) + delta)


def month_keys(first: str, last: str) -> list[str]:
    """Every ``YYYY-MM`` key from ``first`` through ``last`` inclusive (empty when ``last < first``)."""
    return [month_of_index(k) for k in range(month_index(first), month_index(last) + 1)]


def month_start(d: date) -> date:
    """First day of ``d``'s month."""
    return date(d.year, d.month, 1)


def et_month_start(ts: datetime) -> date:
    """First day of the America/New_York calendar month holding the instant ``ts`` (tz-aware)."""
    et = to_utc(ts).astimezone(ET)
    return date(et.year, et.month, 1)


def et_month_key(ts: datetime) -> str:
    """``YYYY-MM`` of the America/New_York month holding the instant ``ts`` (the release-month partition
    key)."""
    et = to_utc(ts).astimezone(ET)
    return label_for_month(et.year, et.month)


def et_month_expr(col: str = "release_at") -> pl.Expr:
    """Polars expression: ``YYYY-MM`` of the America/New_York month of a tz-aware timestamp column."""
    return pl.col(col).dt.convert_time_zone(ET.key).dt.strftime("%Y-%m")


def quarter_start(d: date) -> date:
    """First day of the quarter holding ``d`` (2026-02-14 -> 2026-01-01)."""
    return date(d.year, 3 * ((d.month - 1) // 3) + 1, 1)


def period_index(d: date, quarterly: bool) -> int:
    """Index of the month (or quarter, when ``quarterly``) holding ``d``; differences count periods."""
    k = month_index(d)
    return k // 3 if quarterly else k


def period_start(k: int, quarterly: bool) -> date:
    """First day of the period with :func:`period_index` ``k``."""
    return month_start_of_index(k * 3 if quarterly else k)


def parse_period_label(label: str) -> tuple[int, int, bool]:
    """'YYYY-MM' -> (year, month, False); 'YYYY-Qn' -> (year, first month of quarter, True)."""
    m = re.fullmatch(r"(\d{4})-(\d{2})", label)
    if m:
        return int(m.group(1)), int(m.group(2)), False
    m = re.fullmatch(r"(\d{4})-Q([1-4])", label)
    if m:
        return int(m.group(1)), 3 * int(m.group(2)) - 2, True
    raise ValueError(f"period label {label!r} is neither YYYY-MM nor YYYY-Qn")


def reference_period(label: str, frequency: str) -> date:
    """First day of the period a label names.

    A quarterly indicator with a month label (the release-lag fallback, release month - 1) refers to the
    latest quarter complete by the end of that month: 2010-03 -> 2010Q1, but 2010-01 (a release in
    February 2010, the second estimate) -> 2009Q4.
    """
    year, month, is_quarter = parse_period_label(label)
    if frequency == "quarterly":
        if not is_quarter and month % 3 != 0:
            year, month = (year - 1, 12) if month < 3 else (year, month - month % 3)
        month = 3 * ((month - 1) // 3) + 1
    return date(year, month, 1)


def to_utc(dt: datetime) -> datetime:
    """``dt`` in UTC; raises :class:`ValueError` for a naive datetime (never guessed)."""
    if dt.tzinfo is None:
        raise ValueError(f"timestamp {dt!r} has no time zone; pass tz-aware UTC times")
    return dt.astimezone(UTC)


# ------------------------------------------------------------------------------------------------
# as-of selection and cutoff flags (DESIGN.md principle 1)
# ------------------------------------------------------------------------------------------------


def require_columns(
    frame: pl.DataFrame, cols: Sequence[str], what: str, error: type[Exception] = ValueError
) -> None:
    """Raise ``error`` naming ``what`` and the missing columns when ``frame`` lacks any of ``cols``.

    The one required-columns check of the project (every stage validates its input frames with it)."""
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise error(f"{what} frame lacks column(s) {missing}; has {frame.columns}")


def require_tz_aware(frame: pl.DataFrame, col: str, what: str, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` unless ``frame[col]`` is a tz-aware datetime column (naive times are refused, not
    guessed)."""
    require_columns(frame, [col], what, error)
    dtype = frame.schema[col]
    if not isinstance(dtype, pl.Datetime) or dtype.time_zone is None:
        raise error(f"{what}.{col} must be a tz-aware datetime, got {dtype}")


def as_utc_column(
    frame: pl.DataFrame, col: str, what: str, error: type[Exception] = ValueError
) -> pl.DataFrame:
    """``frame`` with the tz-aware column ``col`` as ``Datetime(us, UTC)`` (:func:`require_tz_aware`
    first)."""
    require_tz_aware(frame, col, what, error)
    return frame.with_columns(pl.col(col).dt.convert_time_zone("UTC").cast(pl.Datetime("us", "UTC")))


def _utc_instant(at: datetime, name: str = "at") -> datetime:
    if not isinstance(at, datetime) or at.tzinfo is None:
        raise ValueError(f"{name}={at!r}: pass a tz-aware time")
    return at.astimezone(UTC)


def known_by(
    frame: pl.DataFrame, at: datetime, *, time_col: str = "available_at", strict: bool = False
) -> pl.DataFrame:
    """Rows of ``frame`` knowable at ``at``: ``time_col <= at`` (``< at`` when ``strict``).

    ``at`` must be tz-aware (raises :class:`ValueError` otherwise); ``time_col`` a tz-aware timestamp column.
    This is the point-in-time filter every forecast input goes through (DESIGN.md principle 1)."""
    at_utc = _utc_instant(at)
    require_columns(frame, [time_col], "point-in-time")
    cond = pl.col(time_col) < at_utc if strict else pl.col(time_col) <= at_utc
    return frame.filter(cond)


def as_of(
    frame: pl.DataFrame,
    at: datetime,
    keys: Sequence[str],
    *,
    time_col: str = "available_at",
    strict: bool = False,
    where: pl.Expr | None = None,
) -> pl.DataFrame:
    """The latest row per ``keys`` knowable at ``at`` (a step function of ``time_col``).

    Rows pass ``where`` (e.g. ``pl.col("valid")``) and ``time_col <= at`` (``< at`` when ``strict``); of
    those, each key keeps the row with the greatest ``time_col``; ties keep the row that comes last in
    ``frame``. Returns the selected rows with ``frame``'s columns, sorted by ``keys``; a key with no row by
    ``at`` is absent. Raises :class:`ValueError` for a naive ``at`` or missing columns."""
    require_columns(frame, [*keys, time_col], "as-of")
    sel = known_by(frame, at, time_col=time_col, strict=strict)
    if where is not None:
        sel = sel.filter(where)
    return (
        sel.with_row_index("_row")
        .sort(time_col, "_row")
        .group_by(list(keys), maintain_order=True)
        .last()
        .sort(list(keys))
        .select(frame.columns)
    )


def flag_at_or_after(issued: pl.Expr, cutoff: pl.Expr) -> pl.Expr:
    """``issued >= cutoff``: the after-release / after-cutoff flag. A forecast issued at or after the
    release (macro) or the task cutoff (event) is kept, flagged, and never scored."""
    return issued >= cutoff


def as_of_join(
    left: pl.DataFrame,
    frame: pl.DataFrame,
    *,
    left_time: str,
    by: Sequence[str] = (),
    time_col: str = "available_at",
    strict: bool = False,
    where: pl.Expr | None = None,
    suffix: str = "_asof",
) -> pl.DataFrame:
    """:func:`as_of` evaluated at every row of ``left``: for each row, the latest row of ``frame`` with the
    same ``by`` values and ``time_col <= left[left_time]`` (``<`` when ``strict``), after ``where``.

    Same tie rule as :func:`as_of` (equal ``time_col``: the row that comes last in ``frame``). Returns
    ``left`` in its own row order with ``frame``'s other columns appended (named ``<col><suffix>`` where they
    clash with ``left``'s; ``time_col`` always comes back as ``<time_col><suffix>``); rows with no match get
    NULLs. Both time columns must be tz-aware. Raises :class:`ValueError` for missing columns or naive times.
    Vectorised with polars ``join_asof`` (a backward search), so a few thousand evaluation times cost one join
    rather than one filter each."""
    require_columns(left, [left_time, *by], "as-of join (left)")
    require_columns(frame, [time_col, *by], "as-of join (right)")
    for f, c in ((left, left_time), (frame, time_col)):
        dt = f.schema[c]
        if not isinstance(dt, pl.Datetime) or dt.time_zone is None:
            raise ValueError(f"as-of join: column {c!r} must be a tz-aware timestamp, got {dt}")
    right = frame if where is None else frame.filter(where)
    t_out = f"{time_col}{suffix}"
    rename = {
        c: f"{c}{suffix}" if c in left.columns or c == time_col else c for c in right.columns if c not in by
    }
    right = (
        right.with_row_index("_asof_row")
        .sort(time_col, "_asof_row")
        .unique([*by, time_col], keep="last", maintain_order=True)
        .drop("_asof_row")
        .rename(rename)
        .with_columns(pl.col(t_out).dt.convert_time_zone("UTC").alias("_asof_key"))
    )
    out = (
        left.with_row_index("_asof_left")
        .with_columns(pl.col(left_time).dt.convert_time_zone("UTC").alias("_asof_key"))
        .sort("_asof_key")
        # both sides are sorted on the key just above (polars cannot verify it within ``by`` groups)
        .join_asof(
            right,
            on="_asof_key",
            by=list(by) or None,
            strategy="backward",
            allow_exact_matches=not strict,
            check_sortedness=False,
        )
        .sort("_asof_left")
    )
    return out.drop("_asof_left", "_asof_key")


def first_per_period(
    frame: pl.DataFrame,
    keys: Sequence[str] = ("indicator_id", "reference_period"),
    *,
    time_col: str = "release_at",
) -> pl.DataFrame:
    """The earliest row per ``keys`` by ``time_col`` (the first release of each indicator and reference
    period: GDP keeps its advance estimate). Rows come back in ``time_col`` order; rows of one key must not
    tie in ``time_col`` (one release per instant), else which one is kept is unspecified. Raises
    :class:`ValueError` for missing columns."""
    require_columns(frame, [*keys, time_col], "first-per-period")
    return frame.sort(time_col).unique(list(keys), keep="first", maintain_order=True)


def is_first_per_period(
    keys: Sequence[str] = ("indicator_id", "reference_period"), time_col: str = "release_at"
) -> pl.Expr:
    """Polars expression: the row is the earliest of its ``keys`` group by ``time_col`` (a later estimate of
    the same period is False)."""
    return pl.col(time_col) == pl.col(time_col).min().over(list(keys))


def days_complete(at: datetime, lag: timedelta, first: date, last: date | None = None) -> list[date]:
    """UTC days ``first`` .. ``last`` (default: any) whose data a source has published by the instant ``at``
    (tz-aware): the day's end (next day 00:00 UTC) plus the source's publication ``lag`` is at or before
    ``at``. Empty when none. Raises :class:`ValueError` for a naive ``at`` or a negative ``lag``."""
    if at.tzinfo is None:
        raise ValueError(f"at={at!r}: give a time zone (UTC)")
    if lag < timedelta(0):
        raise ValueError(f"lag={lag}: a publication lag cannot be negative")
    newest = (to_utc(at) - lag).date() - timedelta(days=1)  # the last day whose end + lag has passed
    if last is not None:
        newest = min(newest, last)
    return [first + timedelta(days=i) for i in range((newest - first).days + 1)]
