"""The LiveBetting Score (LiveMacroEval §3.6, App. L Eq. 13, App. O Table 13).

A Polymarket macro market is a set of numeric buckets, each its own binary contract paying $1 if the
released value falls in it (so bucket prices need not sum to 1). At every price hour tau inside the
prediction window (from the window's opening to strictly before the release), $1 is bet on the bucket
containing the model's most recent valid nowcast whose answer existed by tau (``known_at <= tau``: an LLM
answer exists when its call completed, not when it was requested), buying 1/p shares at that bucket's price
p(tau). With N bets,

    R = (1/N) sum_tau 1{bucket(tau) = winning bucket} / p(tau) - 1                      (Eq. 13)

i.e. the total profit divided by the dollars staked. Hours where no bet can be placed are excluded and
counted by reason: ``no_nowcast`` (none issued yet), ``no_bucket`` (the nowcast falls in no bucket),
``missing_price`` (NULL/NaN price), ``zero_price`` (price <= 0, which would be a division by zero).

Bucket labels are parsed from the market's column names. Labels refer to the *released* value, which is
published at a fixed precision (0.1 point for CPI, 1k for payrolls), so a nowcast is first rounded
(half up) to the release precision and then tested against the label: the point bucket ``2.1%`` covers
nowcasts in [2.05, 2.15), ``≤2.0%`` covers those below 2.05, ``≥2.8%`` those from 2.75. Ranges
(``1.0–1.5%``, ``-150k – -100k``, ``between 1 and 2``) are half-open [lo, hi) so adjacent ranges that
share an endpoint stay mutually exclusive. The release precision defaults to the finest precision
printed in the labels. ``k``/``m`` suffixes mean thousands/millions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl

from leaf_live.core.pit import as_of_join, require_tz_aware


class BucketLabelError(ValueError):
    """A market label cannot be parsed, or a market's buckets overlap; the message names the label."""


class BettingError(ValueError):
    """Betting inputs are unusable (bad price, unresolvable release, ...); the message names the field."""


_NUM = r"([-+]?\d+(?:\.\d+)?)(?:\s?([km])(?![a-z]))?"
_PATTERNS: tuple[tuple[str, str], ...] = (
    # (regex, kind); kinds: le, lt, ge, gt, range, point
    (rf"^(?:<=|=<)\s*{_NUM}$", "le"),
    (rf"^{_NUM}\s*(?:or|and)\s+(?:less|lower|below|fewer|under)$", "le"),
    (rf"^(?:at most|no more than|up to)\s+{_NUM}$", "le"),
    (rf"^<\s*{_NUM}$", "lt"),
    (rf"^(?:less than|below|under|fewer than|lower than)\s+{_NUM}$", "lt"),
    (rf"^(?:>=|=>)\s*{_NUM}$", "ge"),
    (rf"^{_NUM}\s*\+$", "ge"),
    (rf"^{_NUM}\s*(?:or|and)\s+(?:more|higher|above|greater|over|up)$", "ge"),
    (rf"^(?:at least|no less than)\s+{_NUM}$", "ge"),
    (rf"^>\s*{_NUM}$", "gt"),
    (rf"^(?:more than|above|over|greater than|higher than)\s+{_NUM}$", "gt"),
    (rf"^between\s+{_NUM}\s+and\s+{_NUM}$", "range"),
    (rf"^{_NUM}\s*(?:to|-)\s*{_NUM}$", "range"),
    (rf"^{_NUM}$", "point"),
)
_MULT = {"": 1.0, None: 1.0, "k": 1e3, "m": 1e6}


def _normalise(label: str) -> str:
    s = label.strip().lower()
    s = s.replace("\u2212", "-").replace("\u2264", "<=").replace("\u2265", ">=")
    s = re.sub(r"\s*[\u2013\u2014]\s*", " to ", s)  # en/em dash: always a range separator
    s = s.replace("%", "").replace("$", "")
    s = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", s)  # thousands separators
    return re.sub(r"\s+", " ", s).strip()


def _num(value: str, suffix: str | None) -> tuple[float, float | None]:
    """(value, printed precision) in market units; a bare ``0`` says nothing about precision (None)."""
    mult = _MULT[suffix]
    dec = len(value.split(".")[1]) if "." in value else 0
    if not suffix and dec == 0 and float(value) == 0.0:
        return 0.0, None
    return float(value) * mult, 10.0 ** (-dec) * mult


def _finest(*precisions: float | None) -> float | None:
    known = [p for p in precisions if p is not None]
    return min(known) if known else None


@dataclass(frozen=True)
class Bucket:
    """One binary contract. Interval bounds apply to the release-precision-rounded value."""

    label: str
    kind: str  # le | lt | ge | gt | range | point
    lo: float  # -inf for lower tails
    hi: float  # +inf for upper tails; == lo for a point bucket
    label_precision: float | None  # finest precision printed in the label (market units); None for a bare 0

    def contains(self, v: float, tol: float) -> bool:
        """Whether a value already rounded to the release precision is in this bucket."""
        k = self.kind
        if k == "point":
            return abs(v - self.lo) <= tol
        if k == "le":
            return v <= self.hi + tol
        if k == "lt":
            return v < self.hi - tol
        if k == "ge":
            return v >= self.lo - tol
        if k == "gt":
            return v > self.lo + tol
        return self.lo - tol <= v < self.hi - tol  # range, half-open


def parse_bucket_label(label: str) -> Bucket:
    """Parse one market label (``≤2.0%``, ``2.1%``, ``2.5–3.0%``, ``≥2.8%``, ``<1.0%``, ``100k+``,
    ``-150k – -100k``, ``3 or more``, ``between 1 and 2``, ...) into a :class:`Bucket` in market units.

    Raises :class:`BucketLabelError` naming the label when no pattern fits or a range is empty.
    """
    s = _normalise(label)
    for rx, kind in _PATTERNS:
        m = re.match(rx, s)
        if not m:
            continue
        g = m.groups()
        if kind == "range":
            lo, p1 = _num(g[0], g[1])
            hi, p2 = _num(g[2], g[3])
            if not lo < hi:
                raise BucketLabelError(
                    f"bucket label {label!r}: range lower bound {lo} is not below upper bound {hi}"
                )
            return Bucket(label, kind, lo, hi, _finest(p1, p2))
        v, p = _num(g[0], g[1])
        if kind in ("le", "lt"):
            return Bucket(label, kind, -math.inf, v, p)
        if kind in ("ge", "gt"):
            return Bucket(label, kind, v, math.inf, p)
        return Bucket(label, "point", v, v, p)
    raise BucketLabelError(f"cannot parse bucket label {label!r} (normalised {s!r})")


def round_to_precision(x: np.ndarray | float, precision: float) -> np.ndarray:
    """Round half up to a multiple of ``precision`` (the release's printed precision)."""
    q = np.asarray(x, dtype=float) / precision
    return np.floor(np.round(q, 9) + 0.5) * precision


@dataclass(frozen=True)
class Market:
    """A bucketed market: its buckets in column order and the release precision (market units)."""

    buckets: tuple[Bucket, ...]
    precision: float

    @property
    def labels(self) -> list[str]:
        return [b.label for b in self.buckets]

    def bucket_index(self, value: float) -> int | None:
        """Index of the bucket holding ``value`` (market units; rounded to the release precision first)."""
        if value is None or not np.isfinite(value):
            return None
        v = float(round_to_precision(value, self.precision))
        tol = self.precision * 1e-6
        hits = [k for k, b in enumerate(self.buckets) if b.contains(v, tol)]
        if len(hits) > 1:
            raise BucketLabelError(
                f"value {v} falls in overlapping buckets {[self.buckets[k].label for k in hits]}"
            )
        return hits[0] if hits else None


def parse_market(labels: Sequence[str], *, precision: float | None = None) -> Market:
    """Parse a market's bucket labels and check they are mutually exclusive at the release precision.

    ``precision`` defaults to the finest precision printed in any label. Raises :class:`BucketLabelError`
    for an unparsable label, duplicates or two buckets that share a value.
    """
    if len(labels) == 0:
        raise BucketLabelError("a market needs at least one bucket label")
    if len(set(labels)) != len(labels):
        raise BucketLabelError(f"duplicate bucket labels in {list(labels)}")
    buckets = tuple(parse_bucket_label(label) for label in labels)
    prec = (
        float(precision) if precision is not None else (_finest(*(b.label_precision for b in buckets)) or 1.0)
    )
    if not prec > 0:
        raise BucketLabelError(f"release precision must be > 0, got {precision!r}")
    market = Market(buckets, prec)
    ends = [e for b in buckets for e in (b.lo, b.hi) if np.isfinite(e)]
    lo, hi = min(ends) - 3 * prec, max(ends) + 3 * prec
    for v in round_to_precision(np.arange(lo, hi + prec / 2, prec), prec):
        market.bucket_index(float(v))  # raises on overlap
    return market


# ---------------------------------------------------------------------------------------------
# Hourly bets and the score
# ---------------------------------------------------------------------------------------------

STATUSES = ("bet", "no_nowcast", "no_bucket", "missing_price", "zero_price")


def price_grid_from_export(frame: pl.DataFrame) -> pl.DataFrame:
    """Polymarket price-history export (``Date (UTC)``, ``Timestamp (UTC)`` unix seconds, one column of
    YES prices in [0, 1] per bucket) -> ``bet_at`` (UTC) + one Float64 column per bucket label."""
    if "Timestamp (UTC)" not in frame.columns:
        raise BettingError(f"price export lacks 'Timestamp (UTC)'; columns {frame.columns}")
    labels = [c for c in frame.columns if c not in ("Date (UTC)", "Timestamp (UTC)")]
    return frame.select(
        pl.from_epoch(pl.col("Timestamp (UTC)").cast(pl.Int64), time_unit="s")
        .dt.replace_time_zone("UTC")
        .cast(pl.Datetime("us", "UTC"))
        .alias("bet_at"),
        *[pl.col(c).cast(pl.Float64, strict=False) for c in labels],
    ).sort("bet_at")


def price_grid_from_long(frame: pl.DataFrame) -> pl.DataFrame:
    """``prediction_market_prices`` rows of ONE market (``ts``, ``bucket_label``, ``price``) -> ``bet_at`` +
    one price column per bucket label, in first-appearance order (a bucket absent at an hour is NULL)."""
    need = {"ts", "bucket_label", "price"}
    if not need <= set(frame.columns):
        raise BettingError(f"price rows lack columns {sorted(need - set(frame.columns))}")
    if "market_id" in frame.columns and frame["market_id"].n_unique() > 1:
        raise BettingError(f"price rows mix markets {frame['market_id'].unique().to_list()}; pass one market")
    labels = list(dict.fromkeys(frame["bucket_label"].to_list()))
    dup = frame.filter(pl.struct("ts", "bucket_label").is_duplicated())
    if dup.height:
        raise BettingError(f"two prices for bucket {dup['bucket_label'][0]!r} at ts={dup['ts'][0]}")
    wide = frame.pivot(on="bucket_label", index="ts", values="price", aggregate_function=None)
    return wide.select(pl.col("ts").alias("bet_at"), *[pl.col(c).cast(pl.Float64) for c in labels]).sort(
        "bet_at"
    )


def hourly_bets(
    prices: pl.DataFrame,
    nowcasts: pl.DataFrame,
    *,
    release_at: datetime,
    actual: float,
    market: Market | None = None,
    value_scale: float = 1.0,
    segments: Sequence[tuple[str, datetime]] = (),
    opens_at: datetime | None = None,
) -> pl.DataFrame:
    """The $1-per-hour bet stream of one model on one market window (App. L).

    ``prices``: ``bet_at`` (tz-aware, one row per hour) plus one price column per bucket label (NULL =
    missing). ``nowcasts``: this model's rows for the market's indicator/reference period (``issued_at``,
    ``value`` in the reporting unit, optional ``valid``, optional ``known_at``: when the answer existed,
    default ``issued_at``). ``actual``: the released value (reporting unit); ``value_scale`` converts
    reporting units to market units (1000 for payrolls in thousands vs ``100k`` labels). ``segments``: (label,
    start) pairs; an hour belongs to the last segment started at or before it (default one segment
    ``"window"``). Only hours in ``[opens_at, release_at)`` are kept (the prediction window; ``opens_at`` None
    = every hour before the release). A nowcast issued at or after the release never backs a bet; one backs
    the bet at ``bet_at`` only when ``known_at <= bet_at``; answers tied at one (``known_at``, ``issued_at``)
    are averaged.

    Returns one row per hour: ``bet_at``, ``segment``, ``nowcast``, ``nowcast_issued_at``,
    ``nowcast_known_at``, ``bucket``, ``price``, ``status`` (one of :data:`STATUSES`), ``won``, ``payout``
    (1/p if won else 0), ``profit`` (payout - 1 for bets, 0 otherwise), ``cum_bets``, ``cum_profit``,
    ``cum_return`` (cumulative Eq. 13). Raises :class:`BettingError` for a price above 1, a naive timestamp,
    ``known_at`` before ``issued_at``, or an actual outside every bucket.
    """
    for name, frame, col in (("prices", prices, "bet_at"), ("nowcasts", nowcasts, "issued_at")):
        require_tz_aware(frame, col, name, BettingError)
    if "known_at" in nowcasts.columns:
        require_tz_aware(nowcasts, "known_at", "nowcasts", BettingError)
        early = nowcasts.filter(pl.col("known_at") < pl.col("issued_at"))
        if early.height:
            raise BettingError(
                f"nowcast issued at {early['issued_at'][0]} has known_at {early['known_at'][0]} before it"
            )
    if opens_at is not None and (not isinstance(opens_at, datetime) or opens_at.tzinfo is None):
        raise BettingError(f"opens_at must be a tz-aware datetime, got {opens_at!r}")
    labels = [c for c in prices.columns if c != "bet_at"]
    market = market or parse_market(labels)
    if market.labels != labels:
        raise BettingError(f"price columns {labels} do not match the market's buckets {market.labels}")
    win = market.bucket_index(actual * value_scale)
    if win is None:
        raise BettingError(f"released value {actual} (x{value_scale}) falls in no bucket of {labels}")
    if not isinstance(release_at, datetime) or release_at.tzinfo is None:
        raise BettingError(f"release_at must be a tz-aware datetime, got {release_at!r}")
    rel = pl.Series([release_at]).dt.convert_time_zone("UTC").cast(pl.Datetime("us", "UTC"))[0]
    # the latest answer known at each hour of the window
    joined = as_of_join(
        _window_hours(prices, rel, opens_at),
        _known_answers(nowcasts, rel).rename({"issued_at": "nowcast_issued_at"}),
        left_time="bet_at",
        time_col="known_at",
    )
    x = joined["value"].to_numpy().astype(float)  # NaN where no nowcast yet
    bidx, price, status = _hour_bets(joined, x, labels, market, value_scale)
    is_bet = status == "bet"
    won = is_bet & (bidx == win)
    with np.errstate(divide="ignore", invalid="ignore"):
        payout = np.where(won, 1.0 / np.where(is_bet, price, 1.0), 0.0)
    profit = np.where(is_bet, payout - 1.0, 0.0)
    cum_bets = np.cumsum(is_bet)
    cum_profit = np.cumsum(profit)
    with np.errstate(divide="ignore", invalid="ignore"):
        cum_return = np.where(cum_bets > 0, cum_profit / np.maximum(cum_bets, 1), np.nan)
    return pl.DataFrame(
        {
            "bet_at": joined["bet_at"],
            "segment": _hour_segments(joined["bet_at"], segments).tolist(),
            "nowcast": pl.Series(x).fill_nan(None),
            "nowcast_issued_at": joined["nowcast_issued_at"],
            "nowcast_known_at": joined["known_at_asof"],
            "bucket": [labels[k] if k >= 0 else None for k in bidx],
            "price": pl.Series(price).fill_nan(None),
            "status": status.tolist(),
            "won": pl.Series(np.where(is_bet, won, None).tolist(), dtype=pl.Boolean),
            "payout": payout,
            "profit": profit,
            "cum_bets": cum_bets.astype(np.int32),
            "cum_profit": cum_profit,
            "cum_return": pl.Series(cum_return).fill_nan(None),
        }
    ).with_columns(pl.lit(labels[win]).alias("winning_bucket"))


def _window_hours(prices: pl.DataFrame, rel: datetime, opens_at: datetime | None) -> pl.DataFrame:
    """The price hours of the prediction window ``[opens_at, rel)`` (UTC, by time)."""
    in_window = pl.col("bet_at") < rel
    if opens_at is not None:
        in_window = in_window & (
            pl.col("bet_at") >= pl.lit(opens_at).dt.convert_time_zone("UTC").cast(pl.Datetime("us", "UTC"))
        )
    return (
        prices.with_columns(pl.col("bet_at").dt.convert_time_zone("UTC").cast(pl.Datetime("us", "UTC")))
        .filter(in_window)
        .sort("bet_at")
    )


def _known_answers(nowcasts: pl.DataFrame, rel: datetime) -> pl.DataFrame:
    """The model's valid finite answers issued before the release ``rel``: ``issued_at``, ``known_at`` (UTC)
    and ``value``, answers tied at one (``known_at``, ``issued_at``) averaged, by ``known_at``."""
    nc = nowcasts.filter(pl.col("valid")) if "valid" in nowcasts.columns else nowcasts
    utc = pl.Datetime("us", "UTC")
    known = pl.col("known_at") if "known_at" in nc.columns else pl.col("issued_at")
    return (
        nc.select(
            pl.col("issued_at").dt.convert_time_zone("UTC").cast(utc),
            known.dt.convert_time_zone("UTC").cast(utc).alias("known_at"),
            pl.col("value").cast(pl.Float64),
        )
        .filter(pl.col("value").is_not_null() & pl.col("value").is_finite() & (pl.col("issued_at") < rel))
        # answers tied at one instant are one forecast, their mean (as the LiveMacro selection): two recorded
        # runs of one model (e.g. the February and the March job both nowcasting Q1 GDP) give one bet per hour
        .group_by("known_at", "issued_at")
        .agg(pl.col("value").mean())
        .sort("known_at", "issued_at")
    )


def _hour_bets(
    joined: pl.DataFrame, x: np.ndarray, labels: list[str], market: Market, value_scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hour of ``joined`` (price columns ``labels``; ``x`` the standing answer, NaN = none): the bucket
    the answer falls in (-1 = none), its price (NaN = none) and the hour's status (:data:`STATUSES`). Raises
    :class:`BettingError` for a price above 1 on a bucket that would be bet."""
    P = joined.select(labels).to_numpy().astype(float)
    H = joined.height
    bidx = np.full(H, -1)
    for h in range(H):
        if np.isfinite(x[h]):
            k = market.bucket_index(x[h] * value_scale)
            bidx[h] = -1 if k is None else k
    price = np.where(bidx >= 0, P[np.arange(H), np.maximum(bidx, 0)], np.nan)
    status = np.full(H, "bet", dtype=object)
    status[~np.isfinite(x)] = "no_nowcast"
    status[np.isfinite(x) & (bidx < 0)] = "no_bucket"
    has_b = bidx >= 0
    status[has_b & ~np.isfinite(price)] = "missing_price"
    status[has_b & np.isfinite(price) & (price <= 0)] = "zero_price"
    over = has_b & np.isfinite(price) & (price > 1)
    if over.any():
        h = int(np.flatnonzero(over)[0])
        raise BettingError(
            f"price {price[h]} > 1 for bucket {labels[bidx[h]]!r} at bet_at={joined['bet_at'][h]}"
        )
    return bidx, price, status


def _hour_segments(bet_at: pl.Series, segments: Sequence[tuple[str, datetime]]) -> np.ndarray:
    """Each hour's segment: the last of ``segments`` (label, start) started at or before it, else
    ``"window"``."""
    seg = np.full(bet_at.len(), "window", dtype=object)
    if segments:
        starts = sorted(segments, key=lambda s: s[1])
        t = bet_at.to_list()
        for label, start in starts:
            st = pl.Series([start]).dt.convert_time_zone("UTC")[0]
            seg[[i for i, ti in enumerate(t) if ti >= st]] = label
    return seg


def livebetting_return(bets: pl.DataFrame) -> float:
    """Eq. 13 over a bet stream: total profit / number of bets (NaN when no bet was placed)."""
    b = bets.filter(pl.col("status") == "bet")
    return float(b["profit"].sum() / b.height) if b.height else float("nan")


def betting_summary(bets: pl.DataFrame) -> pl.DataFrame:
    """Per-segment profit decomposition of a bet stream (Table 13) plus a ``"total"`` row.

    Columns: segment, n_hours, n_bets, n_wins, win_rate, profit ($ on the $1 stakes), segment_return
    (profit / n_bets of the segment), final_return (Eq. 13 over all bets), return_if_segment_zero (final
    return had this segment made zero profit: (total profit - segment profit) / all bets; NULL on
    ``"total"``), and one ``n_<status>`` count per exclusion reason.
    """
    need = {"segment", "status", "profit", "won"}
    if not need <= set(bets.columns):
        raise BettingError(f"bets frame lacks columns {sorted(need - set(bets.columns))}")
    order = list(dict.fromkeys(bets["segment"].to_list()))
    total_bets = int((bets["status"] == "bet").sum())
    total_profit = float(bets["profit"].sum())
    final = total_profit / total_bets if total_bets else None
    rows = []
    for seg in order + ["total"]:
        b = bets if seg == "total" else bets.filter(pl.col("segment") == seg)
        nb = int((b["status"] == "bet").sum())
        nw = int(b["won"].fill_null(False).sum())
        prof = float(b["profit"].sum())
        row = {
            "segment": seg,
            "n_hours": b.height,
            "n_bets": nb,
            "n_wins": nw,
            "win_rate": nw / nb if nb else None,
            "profit": prof,
            "segment_return": prof / nb if nb else None,
            "final_return": final,
            "return_if_segment_zero": (
                ((total_profit - prof) / total_bets if total_bets else None) if seg != "total" else None
            ),
        }
        for s in STATUSES[1:]:
            row[f"n_{s}"] = int((b["status"] == s).sum())
        rows.append(row)
    return pl.DataFrame(
        rows,
        schema_overrides={
            "win_rate": pl.Float64,
            "segment_return": pl.Float64,
            "final_return": pl.Float64,
            "return_if_segment_zero": pl.Float64,
        },
    )
