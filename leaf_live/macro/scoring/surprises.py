"""Surprises and timestamp-group events (LiveMacroEval §3.6 and App. K.1).

Pipeline (each step a pure function over polars frames in the ``storage`` table schemas):

1. :func:`first_releases` — ``release_calendar`` -> ``releases``: the universal first-release rule
   (earliest release per indicator and reference-period label; GDP counts only the advance estimate) and
   the consensus chosen by source priority (Investing.com first).
2. :func:`announcement_returns` — window prices -> ``announcement_returns``:
   ``r_g = log P(T_g + 30m) - log P(T_g - 5m)`` (App. K Eq. 4) for every release timestamp.
3. :func:`surprise_scales` — ``releases`` -> ``surprise_scales``: ``sigma_i = sd(A - C)`` (ddof 1) over
   the frozen historical window Jan 2010 - Oct 2025 (App. K.1, scale of Eq. 3), every release with A and C,
   including releases whose futures window is unusable.
4. :func:`timestamp_group_events` — ``releases`` x ``announcement_returns`` x ``surprise_scales`` ->
   ``surprise_events``: releases sharing a timestamp form one event g with the 16-vector
   ``S_i,g = (A - C) / sigma_i`` (Eq. 3) and structural zeros for fields not released in g (App. K.1).
   This is the replication of the released panel (2,163 events, Table 9's design) and stays so.
5. :func:`overlapping_event_groups` — the scoring rule on top: release timestamps whose announcement windows
   overlap are one scoring event (catch-up releases stamped a minute apart move one market window);
   :func:`restandardize_events` — the same events standardized by another sigma (point-in-time backtest).

Units: A, C and sigma_i in the indicator's reporting unit (catalog); S is unit-free; r_g in log points.
Times: ``release_at`` UTC; ``partition_key`` = release month in America/New_York.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta

import numpy as np
import polars as pl

from leaf_live.core import storage
from leaf_live.core.pit import ET, et_month_expr, require_columns
from leaf_live.macro.catalog import INDICATOR_IDS

WINDOW_BEFORE = timedelta(minutes=5)  # T - 5 min opens the announcement window (App. K Eq. 4)
WINDOW_AFTER = timedelta(minutes=30)  # T + 30 min closes the announcement window (App. K Eq. 4)

#: Calendar sources in consensus/actual priority order: Investing.com (LiveMacroEval files) first.
SOURCE_PRIORITY: tuple[str, ...] = ("livemacroeval_panel", "livemacroeval_live", "forexfactory", "fred")

#: The frozen historical window of sigma_i and the beta fit (App. K.1: Jan 2010 to Oct 2025).
HIST_START = date(2010, 1, 1)
HIST_END = date(2025, 10, 31)


class SurpriseError(ValueError):
    """Inputs that cannot produce surprises; the message names the indicator, timestamp or column."""


# ------------------------------------------------------------------------------------------------
# 1. first releases
# ------------------------------------------------------------------------------------------------


def first_releases(calendar: pl.DataFrame, *, priority: Sequence[str] = SOURCE_PRIORITY) -> pl.DataFrame:
    """Canonical first releases from a ``release_calendar`` frame (LiveMacroEval App. K.1, preprocessing).

    Rules, in order:

    1. Only rows with an actual count (a calendar row without A is scheduled, not released), and rows the
       source itself marks as revisions (``marked_revision``) never count.
    2. Sources are merged by priority (``priority``, Investing.com first): on each New York calendar day an
       indicator's releases come from the highest-priority source that has any that day; a lower-priority
       source only adds days the others miss (e.g. ForexFactory fills CPI before 2012-05).
    3. Missing consensus is filled from the next source by priority that has one for the same release: the
       same timestamp, else the same day when each source has exactly one release of the indicator that day.
       ``consensus_source`` says who produced C.
    4. Universal first-release rule: per (indicator_id, period_label) only the earliest release is kept, so
       GDP keeps the advance estimate and later estimates / revisions are dropped.

    Returns a frame with the columns of ``schemas.RELEASES`` (one row per (indicator_id, release_at)),
    ``surprise = actual - consensus`` (NULL without consensus), ``available_at = release_at``, sorted by
    release_at and indicator_id. On the LiveMacroEval panel (``field_releases.csv`` UNION
    ``dropped_revisions.csv``) it returns exactly the 2,733 rows of ``field_releases.csv``.

    Raises :class:`SurpriseError` when a column is missing or one source gives one indicator two different
    reference periods at the same timestamp (the rule could not keep both).
    """
    require_columns(
        calendar,
        [
            "source",
            "indicator_id",
            "release_at",
            "period_label",
            "period_source",
            "reference_period",
            "actual",
            "consensus",
            "consensus_source",
            "source_row",
        ],
        "first_releases",
        SurpriseError,
    )
    rank = {s: k for k, s in enumerate(priority)}
    unknown = sorted(set(calendar["source"].unique().to_list()) - set(rank))
    if unknown:
        raise SurpriseError(
            f"first_releases: source(s) {unknown} have no priority; priority={tuple(priority)}"
        )
    cal = calendar.filter(pl.col("actual").is_not_null())
    if "marked_revision" in cal.columns:
        cal = cal.filter(~pl.col("marked_revision").fill_null(False))
    cal = cal.with_columns(
        pl.col("source").replace_strict(rank, return_dtype=pl.Int32).alias("_rank"),
        pl.col("release_at").dt.convert_time_zone(ET.key).dt.date().alias("_day"),
    )

    # 2. the best source per (indicator, day) supplies the releases of that day
    best = cal.group_by(["indicator_id", "_day"]).agg(pl.col("_rank").min())
    primary = cal.join(best, on=["indicator_id", "_day", "_rank"], how="inner")

    # 3. consensus fill from lower-priority sources
    primary = _fill_consensus(primary, cal)

    # 4. first-release rule: earliest per (indicator, period label); ties at one instant -> with consensus,
    #    then the source row order
    primary = primary.sort(
        ["indicator_id", "period_label", "release_at", "_has_c", "_rank", "source_row"],
        descending=[False, False, False, True, False, False],
    )
    kept = primary.unique(subset=["indicator_id", "period_label"], keep="first", maintain_order=True)
    dup = (
        kept.group_by(["indicator_id", "release_at"])
        .agg(pl.col("period_label"))
        .filter(pl.col("period_label").list.len() > 1)
    )
    if dup.height:
        ind, at, labels = dup.row(0)
        raise SurpriseError(
            f"first_releases: {ind} has releases for periods {sorted(labels)} at the same timestamp {at};"
            " give each its own timestamp in the calendar (the LiveMacroEval files stamp the older one a"
            " minute early)"
        )
    out = kept.select(
        et_month_expr().alias("partition_key"),
        "indicator_id",
        "reference_period",
        "period_label",
        "period_source",
        "release_at",
        "actual",
        "consensus",
        "consensus_source",
        (pl.col("actual") - pl.col("consensus")).alias("surprise"),
        "source",
        pl.col("release_at").alias("available_at"),
    ).sort(["release_at", "indicator_id"])
    return storage.conform("releases", out)


def _fill_consensus(primary: pl.DataFrame, cal: pl.DataFrame) -> pl.DataFrame:
    """Fill NULL consensus of the primary rows from lower-priority sources (rule 3 of
    :func:`first_releases`)."""
    donors = cal.filter(pl.col("consensus").is_not_null())
    if donors.height == 0 or primary.filter(pl.col("consensus").is_null()).height == 0:
        return primary.with_columns(pl.col("consensus").is_not_null().alias("_has_c"))
    by_time: dict[tuple[str, datetime], list[tuple[int, float, str]]] = defaultdict(list)
    by_day_all: dict[tuple[str, date], list[tuple[int, datetime]]] = defaultdict(list)
    for r in cal.select("indicator_id", "_day", "_rank", "release_at").iter_rows():
        by_day_all[(r[0], r[1])].append((r[2], r[3]))
    by_day: dict[tuple[str, date, int], list[tuple[float, str]]] = defaultdict(list)
    for ind, day, rk, at, c, cs in donors.select(
        "indicator_id", "_day", "_rank", "release_at", "consensus", "consensus_source"
    ).iter_rows():
        by_time[(ind, at)].append((rk, c, cs))
        by_day[(ind, day, rk)].append((c, cs))
    cons, csrc = [], []
    for ind, day, rk, at, c, cs in primary.select(
        "indicator_id", "_day", "_rank", "release_at", "consensus", "consensus_source"
    ).iter_rows():
        if c is None:
            cands = sorted(x for x in by_time.get((ind, at), []) if x[0] > rk)
            if cands:
                c, cs = cands[0][1], cands[0][2]
            else:
                same_day = by_day_all[(ind, day)]
                mine = [t for k, t in same_day if k == rk]
                for k in sorted({k for k, _ in same_day if k > rk}):
                    theirs = [t for kk, t in same_day if kk == k]
                    got = by_day.get((ind, day, k), [])
                    if len(mine) == 1 and len(theirs) == 1 and len(got) == 1:
                        c, cs = got[0]
                        break
        cons.append(c)
        csrc.append(cs)
    return primary.with_columns(
        pl.Series("consensus", cons, dtype=pl.Float64),
        pl.Series("consensus_source", csrc, dtype=pl.Utf8),
    ).with_columns(pl.col("consensus").is_not_null().alias("_has_c"))


# ------------------------------------------------------------------------------------------------
# 2. announcement-window returns
# ------------------------------------------------------------------------------------------------


def announcement_returns(prices: pl.DataFrame, release_times: pl.DataFrame) -> pl.DataFrame:
    """Announcement-window log returns for every distinct release timestamp (LiveMacroEval App. K Eq. 4).

    Args:
        prices: ``WindowPricesClient.window_prices`` output: ``release_at`` (UTC), ``contract_code``,
        ``price_before``
            (ES close at T-5m), ``price_after`` (close at T+30m), ``source``, ``available_at``.
        release_times: any frame with a ``release_at`` column (e.g. the ``releases`` table); duplicates are
            collapsed.

    Returns the ``schemas.ANNOUNCEMENT_RETURNS`` columns, one row per distinct release timestamp:
    ``r_g = log(price_after) - log(price_before)`` in log points with ``window_status='usable'``; where a
    timestamp has no prices (market closed, e.g. Good Friday) ``r_g``, prices and contract are NULL,
    ``window_status='no_prices'``, ``source='none'``. ``available_at`` = T + 30 min (the window's close).
    Raises :class:`SurpriseError` on a missing column, duplicate price timestamps or non-positive prices.
    """
    require_columns(
        prices,
        ["release_at", "contract_code", "price_before", "price_after", "source"],
        "prices",
        SurpriseError,
    )
    require_columns(release_times, ["release_at"], "release_times", SurpriseError)
    dup = prices.group_by("release_at").len().filter(pl.col("len") > 1)
    if dup.height:
        raise SurpriseError(f"prices: two price rows for release_at {dup['release_at'][0]}")
    bad = prices.filter((pl.col("price_before") <= 0) | (pl.col("price_after") <= 0))
    if bad.height:
        raise SurpriseError(f"prices: non-positive price at release_at {bad['release_at'][0]}")
    times = release_times.select(pl.col("release_at").dt.convert_time_zone("UTC")).unique()
    px = prices.select(
        pl.col("release_at").dt.convert_time_zone("UTC"),
        "contract_code",
        "price_before",
        "price_after",
        "source",
    )
    j = times.join(px, on="release_at", how="left").sort("release_at")
    usable = j["price_before"].is_not_null() & j["price_after"].is_not_null()
    before = j["price_before"].to_numpy()
    after = j["price_after"].to_numpy()
    with np.errstate(invalid="ignore"):
        r = np.log(after) - np.log(before)  # same arithmetic as the released panel's hf_return
    out = j.with_columns(
        et_month_expr().alias("partition_key"),
        pl.Series("r_g", r, dtype=pl.Float64),
        pl.Series("_usable", usable),
    ).select(
        "partition_key",
        "release_at",
        pl.when("_usable").then("contract_code").alias("contract_code"),
        pl.when("_usable").then("price_before").alias("price_before"),
        pl.when("_usable").then("price_after").alias("price_after"),
        pl.when("_usable").then("r_g").alias("r_g"),
        pl.when("_usable").then(pl.lit("usable")).otherwise(pl.lit("no_prices")).alias("window_status"),
        pl.when("_usable").then("source").otherwise(pl.lit("none")).alias("source"),
        (pl.col("release_at") + WINDOW_AFTER).alias("available_at"),
    )
    return storage.conform("announcement_returns", out)


# ------------------------------------------------------------------------------------------------
# 3. surprise scales
# ------------------------------------------------------------------------------------------------


def surprise_scales(releases: pl.DataFrame, start: date = HIST_START, end: date = HIST_END) -> pl.DataFrame:
    """sigma_i = sample standard deviation (ddof 1) of A - C per indicator (LiveMacroEval App. K.1, Eq. 3).

    Counts every release with both A and C whose New York release date lies in ``[start, end]`` (inclusive),
    whether or not its futures window is usable. Returns the ``schemas.SURPRISE_SCALES`` columns, one row per
    indicator with at least two such releases (catalog order): ``n_releases``, ``mean_surprise`` and
    ``sigma`` in the reporting unit, ``window_start`` / ``window_end`` = first / last release date counted,
    ``available_at`` = the last counted release (the scale is knowable once its last input is).
    Raises :class:`SurpriseError` on a missing column or a zero scale.
    """
    require_columns(
        releases, ["indicator_id", "release_at", "actual", "consensus"], "releases", SurpriseError
    )
    day = pl.col("release_at").dt.convert_time_zone(ET.key).dt.date()
    sub = releases.filter(
        pl.col("actual").is_not_null() & pl.col("consensus").is_not_null() & (day >= start) & (day <= end)
    ).with_columns((pl.col("actual") - pl.col("consensus")).alias("_s"), day.alias("_day"))
    agg = (
        sub.group_by("indicator_id")
        .agg(
            pl.len().cast(pl.Int32).alias("n_releases"),
            pl.col("_s").mean().alias("mean_surprise"),
            pl.col("_s").std(ddof=1).alias("sigma"),
            pl.col("_day").min().alias("window_start"),
            pl.col("_day").max().alias("window_end"),
            pl.col("release_at").max().alias("available_at"),
        )
        .filter(pl.col("n_releases") >= 2)
    )
    zero = agg.filter(pl.col("sigma") <= 0)
    if zero.height:
        raise SurpriseError(f"surprise_scales: {zero['indicator_id'][0]} has zero surprise dispersion")
    order = {i: k for k, i in enumerate(INDICATOR_IDS)}
    agg = agg.with_columns(pl.col("indicator_id").replace_strict(order, default=len(order)).alias("_o")).sort(
        "_o"
    )
    return storage.conform("surprise_scales", agg.drop("_o"))


# ------------------------------------------------------------------------------------------------
# 4. timestamp-group events
# ------------------------------------------------------------------------------------------------


def timestamp_group_events(
    releases: pl.DataFrame, returns: pl.DataFrame, scales: pl.DataFrame
) -> pl.DataFrame:
    """Timestamp-group events (LiveMacroEval App. K.1).

    Every release with A and C contributes ``S = (A - C) / sigma_i``; releases sharing a ``release_at`` form
    one event g with the 16 columns ``s_<indicator_id>`` (0.0 = structural zero: not released in g) and
    ``n_fields`` = indicators with a surprise in g. ``r_g``, ``contract_code`` and ``window_status`` come from
    ``returns`` (an event without a returns row, or with an unusable window, gets ``r_g`` NULL and
    ``'no_prices'``: live-window events stay in the table). Timestamps whose releases all lack a consensus
    carry no surprise and form no event.

    ``available_at`` = the latest of: the window's close (T + 30 min) and the ``available_at`` of the
    scales used (sigma_i comes from the frozen 2010-2025 window, so a historical event's standardized
    surprise is knowable only once that window closed).

    Returns the ``schemas.SURPRISE_EVENTS`` columns sorted by release_at. Raises :class:`SurpriseError`
    when an indicator with a surprise has no scale, or a column is missing.
    """
    require_columns(
        releases, ["indicator_id", "release_at", "actual", "consensus"], "releases", SurpriseError
    )
    require_columns(
        returns, ["release_at", "contract_code", "r_g", "window_status"], "returns", SurpriseError
    )
    require_columns(scales, ["indicator_id", "sigma", "available_at"], "scales", SurpriseError)
    rel = releases.filter(pl.col("actual").is_not_null() & pl.col("consensus").is_not_null())
    missing = sorted(set(rel["indicator_id"].unique().to_list()) - set(scales["indicator_id"].to_list()))
    if missing:
        raise SurpriseError(f"timestamp_group_events: no surprise scale (sigma_i) for {missing}")
    sc = scales.select("indicator_id", "sigma", pl.col("available_at").alias("_sigma_at"))
    rel = rel.join(sc, on="indicator_id", how="left").with_columns(
        ((pl.col("actual") - pl.col("consensus")) / pl.col("sigma")).alias("_S"),
        pl.col("release_at").dt.convert_time_zone("UTC"),
    )
    unknown = sorted(set(rel["indicator_id"].unique().to_list()) - set(INDICATOR_IDS))
    if unknown:
        raise SurpriseError(f"timestamp_group_events: unknown indicator_id(s) {unknown}")
    wide = rel.group_by("release_at").agg(
        pl.len().cast(pl.Int32).alias("n_fields"),
        pl.col("_sigma_at").max().alias("_sigma_at"),
        *[
            pl.col("_S").filter(pl.col("indicator_id") == i).first().fill_null(0.0).alias(f"s_{i}")
            for i in INDICATOR_IDS
        ],
    )
    dup = rel.group_by(["release_at", "indicator_id"]).len().filter(pl.col("len") > 1)
    if dup.height:
        raise SurpriseError(
            f"timestamp_group_events: {dup['indicator_id'][0]} released twice at {dup['release_at'][0]}"
        )
    ret = returns.select(
        pl.col("release_at").dt.convert_time_zone("UTC"), "contract_code", "r_g", "window_status"
    )
    ev = wide.join(ret, on="release_at", how="left").with_columns(
        pl.when(pl.col("window_status") == "usable").then("r_g").alias("r_g"),
        pl.when(pl.col("window_status") == "usable")
        .then(pl.lit("usable"))
        .otherwise(pl.lit("no_prices"))
        .alias("window_status"),
    )
    close = pl.col("release_at") + WINDOW_AFTER
    out = ev.select(
        et_month_expr().alias("partition_key"),
        "release_at",
        pl.col("release_at").dt.convert_time_zone(ET.key).dt.strftime("%H:%M").alias("release_time_et"),
        "contract_code",
        "r_g",
        "window_status",
        "n_fields",
        *[f"s_{i}" for i in INDICATOR_IDS],
        pl.max_horizontal(close, pl.col("_sigma_at")).alias("available_at"),
    ).sort("release_at")
    return storage.conform("surprise_events", out)


# ------------------------------------------------------------------------------------------------
# 5. scoring events: releases whose announcement windows overlap
# ------------------------------------------------------------------------------------------------


def overlapping_event_groups(
    returns: pl.DataFrame, *, before: timedelta = WINDOW_BEFORE, after: timedelta = WINDOW_AFTER
) -> pl.DataFrame:
    """Scoring events: release timestamps whose announcement windows [T - 5 min, T + 30 min] overlap form one
    event (the rule for scoring; the historical panel of :func:`timestamp_group_events` and the beta fit keep
    one event per timestamp, as the paper's replication).

    Why: two releases stamped a minute apart (the 2026-01-09 catch-up releases, housing at 08:29 ET and
    payrolls at 08:30 ET) share one market move; scored as two events, the same return would be counted twice,
    each time against only part of the news. Rule: timestamps sorted; a timestamp joins the previous one's
    group when it comes less than ``before + after`` (35 min) after it, i.e. its window opens before the
    previous window closes (chains join). The group's time ``event_at`` is its first timestamp; its return is
    ``log P(T_last + 30 min) - log P(T_first - 5 min)`` (the union window, from the first timestamp's
    ``price_before`` and the last one's ``price_after``), NULL when either is missing; a single timestamp
    keeps its stored ``r_g``.

    ``returns``: ``announcement_returns`` rows (every release timestamp, with or without a consensus, so a
    catch-up release without a consensus still widens the window of the event it overlaps). Returns one row
    per timestamp: ``release_at``, ``event_at``, ``n_timestamps`` (of its group), ``event_r_g``,
    ``event_window_status`` (usable | no_prices). Raises :class:`SurpriseError` for a missing column or a
    duplicate timestamp.
    """
    require_columns(returns, ["release_at", "price_before", "price_after", "r_g"], "returns", SurpriseError)
    ret = returns.select(
        pl.col("release_at").dt.convert_time_zone("UTC"), "price_before", "price_after", "r_g"
    ).sort("release_at")
    dup = ret.filter(pl.col("release_at").is_duplicated())
    if dup.height:
        raise SurpriseError(f"returns: two rows for release_at {dup['release_at'][0]}")
    gap = pl.col("release_at") - pl.col("release_at").shift(1)
    ret = ret.with_columns((gap.is_null() | (gap >= (before + after))).cum_sum().alias("_g"))
    g = ret.group_by("_g").agg(
        pl.col("release_at").min().alias("event_at"),
        pl.len().cast(pl.Int32).alias("n_timestamps"),
        pl.col("price_before").sort_by("release_at").first().alias("_pb"),
        pl.col("price_after").sort_by("release_at").last().alias("_pa"),
        pl.col("r_g").first().alias("_r1"),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        merged = np.log(g["_pa"].to_numpy().astype(float)) - np.log(g["_pb"].to_numpy().astype(float))
    g = g.with_columns(pl.Series("_rm", merged, dtype=pl.Float64).fill_nan(None)).with_columns(
        pl.when(pl.col("n_timestamps") == 1).then(pl.col("_r1")).otherwise(pl.col("_rm")).alias("event_r_g")
    )
    out = ret.join(g.select("_g", "event_at", "n_timestamps", "event_r_g"), on="_g").select(
        "release_at",
        "event_at",
        "n_timestamps",
        "event_r_g",
        pl.when(pl.col("event_r_g").is_not_null())
        .then(pl.lit("usable"))
        .otherwise(pl.lit("no_prices"))
        .alias("event_window_status"),
    )
    return out.sort("release_at")


def restandardize_events(events: pl.DataFrame, stored: pl.DataFrame, target: pl.DataFrame) -> pl.DataFrame:
    """``surprise_events`` rows re-standardized by other scales: ``s_i * sigma_stored_i / sigma_target_i``
    (the stored ``s_i = (A - C)/sigma_stored_i``, so the result is ``(A - C)/sigma_target_i``; structural
    zeros stay 0).

    ``stored`` / ``target``: ``indicator_id``, ``sigma`` frames (``surprise_scales`` rows). Used by the
    point-in-time backtest fit, whose sigma is estimated on its own fit window. Raises :class:`SurpriseError`
    when an indicator with a nonzero surprise has no scale in either frame.
    """
    require_columns(stored, ["indicator_id", "sigma"], "stored scales", SurpriseError)
    require_columns(target, ["indicator_id", "sigma"], "target scales", SurpriseError)
    a = dict(zip(stored["indicator_id"], stored["sigma"]))
    b = dict(zip(target["indicator_id"], target["sigma"]))
    cols = []
    for i in INDICATOR_IDS:
        c = f"s_{i}"
        if c not in events.columns:
            continue
        if i in a and i in b:
            cols.append((pl.col(c) * (a[i] / b[i])).alias(c))
        elif events.filter(pl.col(c) != 0).height:
            raise SurpriseError(
                f"restandardize_events: no {'stored' if i not in a else 'target'} sigma for {i}, "
                "which has nonzero surprises"
            )
    return events.with_columns(cols)
