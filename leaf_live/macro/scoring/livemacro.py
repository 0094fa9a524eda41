"""The LiveMacro Score family (LiveMacroEval §3.6, App. K, M, N, P, S.1-S.4).

Everything here works on a :class:`LiveDesign`: the live timestamp-group events (one row per release
timestamp ``T_g``) with the realized return ``r_g``, the realized standardized surprises ``S`` (n, 16) and
the model-implied ones ``S_hat`` (n, 16), structural zeros for fields not released in an event.

* score (Eq. 2/8/17): ``(SS_cons - SS_model) / (SS_cons + SS_model)``, target ``Y = r`` (LiveMacro) or
  ``Y = Q = S beta`` (consensus-relative score, S.1); the consensus has ``Q_hat = 0`` so it scores 0;
* scope: ``"overall"`` or a theme (§4.4 / App. P): events with at least one release of the theme, and
  only the theme's fields in ``Q_hat`` (and in ``Q`` for the shock target);
* position size kappa and directional alignment phi (Eq. 18) with Eq. 19 as an identity;
* directional score LMD (Eq. 14); parametric bootstrap (Eq. 12); sampling CI (K.3); exact Shapley
  allocation over indicators (App. M); paired event bootstrap (S.2); sizing discipline (S.4).

Nowcast selection (:func:`implied_surprises`) turns releases + ``nowcasts`` rows into per-release
``S`` and ``S_hat`` at a horizon. A model's forecast is a step function of time: at any instant it is its
latest valid nowcast issued before then, carried forward (:func:`leaf_live.core.pit.as_of_join`). ``terminal``
= the forecast standing just before the release (latest valid nowcast strictly before it), scored against the
final consensus; ``median_{k}d`` = the median of the forecast standing at the end of each hour of the
calendar day k days before the release day (America/New_York), against the consensus standing at the end of
that day. A forecaster that issues one nowcast per window is therefore horizon-invariant once that nowcast
exists (K.3); the K.3 sampling replicates are the forecast standing 0, 1, ..., k-1 hours before the release.

Coverage: every score is computed on a model's *own* events (:func:`own_subset`): the timestamp-group events
where it has its own pre-release nowcast for at least one released field of the scope. Inside such an event a
release it does not nowcast takes the consensus (``S_hat = 0``): ``r_g`` responds to every release of the
event, so the model's predicted return is built from the fields it does forecast.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats

from leaf_live.core.pit import ET, as_of_join, as_utc_column, require_columns
from leaf_live.macro.catalog import INDICATOR_IDS, THEMES, get_indicator

Target = Literal["return", "shock"]
MissingPolicy = Literal["drop_event", "consensus", "error"]
DEFAULT_BOOT_DRAWS = 10_000
DEFAULT_SEED = 20260427  # the released code's seed (PROVENANCE, SCORE_CALCULATION.md summary)
SAMPLING_K = 5
HORIZONS = ("terminal", "median_1d", "median_3d", "median_7d")
_MEDIAN_RE = re.compile(r"^median_(\d+)d$")


class ScoringError(ValueError):
    """Scoring inputs are unusable; the message names the field and offending value."""


# ---------------------------------------------------------------------------------------------
# Per-release implied surprises from the nowcasts table
# ---------------------------------------------------------------------------------------------


def _sigma_frame(sigma: Mapping[str, float] | pl.DataFrame) -> pl.DataFrame:
    if isinstance(sigma, pl.DataFrame):
        if not {"indicator_id", "sigma"} <= set(sigma.columns):
            raise ScoringError(f"sigma frame needs columns indicator_id, sigma; got {sigma.columns}")
        out = sigma.select("indicator_id", pl.col("sigma").cast(pl.Float64))
    else:
        out = pl.DataFrame({"indicator_id": list(sigma), "sigma": [float(v) for v in sigma.values()]})
    bad = out.filter(pl.col("sigma").is_null() | ~(pl.col("sigma") > 0) | pl.col("sigma").is_infinite())
    if bad.height:
        raise ScoringError(
            f"sigma must be finite and > 0; indicator_id={bad['indicator_id'][0]} has {bad['sigma'][0]}"
        )
    return out


def _utc_col(frame: pl.DataFrame, name: str, col: str) -> pl.DataFrame:
    """``frame`` with ``col`` as Datetime(us, UTC); naive timestamps are refused, not guessed."""
    return as_utc_column(frame, col, name, ScoringError)


def realized_surprises(events: pl.DataFrame, indicator_ids: Sequence[str] = INDICATOR_IDS) -> pl.DataFrame:
    """The stored standardized surprises ``S_i,g = (A - C)/sigma_i`` (App. K Eq. 3) of ``surprise_events``
    rows, long: one row per (``release_at`` UTC, ``indicator_id``) with ``s`` (0.0 where the field is a
    structural zero of the event). Scoring reads these instead of recomputing them from ``releases``.
    Raises :class:`ScoringError` for a missing ``s_<indicator_id>`` column or a naive ``release_at``."""
    cols = [f"s_{i}" for i in indicator_ids]
    require_columns(events, ["release_at", *cols], "events", ScoringError)
    ev = _utc_col(events, "events", "release_at")
    return (
        ev.select("release_at", *cols)
        .unpivot(index="release_at", variable_name="indicator_id", value_name="s")
        .with_columns(pl.col("indicator_id").str.strip_prefix("s_"), pl.col("s").cast(pl.Float64))
    )


def _one_model(nowcasts: pl.DataFrame, name: str) -> None:
    if "model_id" in nowcasts.columns and nowcasts["model_id"].n_unique() > 1:
        raise ScoringError(
            f"{name} mixes models {sorted(nowcasts['model_id'].unique().to_list())}; pass one model's rows"
        )


def _horizon_days(horizon: str) -> int | None:
    if horizon == "terminal":
        return None
    m = _MEDIAN_RE.match(horizon)
    if not m:
        raise ScoringError(f"horizon must be 'terminal' or 'median_<k>d' (e.g. median_1d), got {horizon!r}")
    return int(m.group(1))


def _valid_before_release(releases: pl.DataFrame, nowcasts: pl.DataFrame) -> pl.DataFrame:
    nc = nowcasts
    if "valid" in nc.columns:
        nc = nc.filter(pl.col("valid"))
    nc = nc.filter(pl.col("value").is_not_null() & pl.col("value").is_finite())
    j = releases.select("indicator_id", "reference_period", "release_at").join(
        nc.select("indicator_id", "reference_period", "issued_at", "value"),
        on=["indicator_id", "reference_period"],
        how="inner",
    )
    # strictly before the release: a nowcast issued at or after T is never scored (DESIGN principle 1)
    j = j.filter(pl.col("issued_at") < pl.col("release_at"))
    # rows tied at one instant are one forecast: their mean (e.g. two runs landing in the same second)
    keys = ["indicator_id", "reference_period", "release_at", "issued_at"]
    return j.group_by(keys).agg(pl.col("value").mean(), pl.len().cast(pl.Int32).alias("_n_tied")).sort(keys)


_KEYS = ["indicator_id", "reference_period", "release_at"]


def standing_forecast(pre: pl.DataFrame, at: pl.DataFrame, *, time_col: str = "_at") -> pl.DataFrame:
    """The forecast standing at each row of ``at``: the latest row of ``pre`` (output of the selection above:
    one row per release key and ``issued_at``) issued strictly before ``at[time_col]``, carried forward
    (:func:`leaf_live.core.pit.as_of_join`, strict). Returns ``at`` with ``value`` and ``issued_at`` (NULL
    where nothing was issued yet) and ``_n_tied``."""
    out = as_of_join(
        at,
        pre.select(*_KEYS, "issued_at", "value", "_n_tied"),
        left_time=time_col,
        by=_KEYS,
        time_col="issued_at",
        strict=True,
    )
    return out.rename({"issued_at_asof": "issued_at"})


def day_hour_ends(release_at: pl.Expr, days_before: int) -> pl.Expr:
    """List of the ends of every hour (UTC instants) of the America/New_York calendar day ``days_before`` days
    before the release day: 01:00, 02:00, ..., 24:00 local (23 or 25 hours on daylight-saving days)."""
    start = (
        (release_at.dt.convert_time_zone(ET.key).dt.date() - pl.duration(days=days_before))
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone(ET.key)
        .dt.convert_time_zone("UTC")
    )
    end = (
        (release_at.dt.convert_time_zone(ET.key).dt.date() - pl.duration(days=days_before - 1))
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone(ET.key)
        .dt.convert_time_zone("UTC")
    )
    return pl.datetime_ranges(start + pl.duration(hours=1), end, "1h", time_unit="us", time_zone="UTC")


def implied_surprises(
    releases: pl.DataFrame,
    sigma: Mapping[str, float] | pl.DataFrame,
    nowcasts: pl.DataFrame,
    *,
    events: pl.DataFrame,
    horizon: str = "terminal",
    consensus_path: pl.DataFrame | None = None,
    event_sigma: Mapping[str, float] | pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per-release realized and model-implied standardized surprises (App. K Eq. 3) at a horizon.

    ``releases``: one row per release with ``indicator_id``, ``reference_period`` (date), ``release_at``
    (UTC), ``actual`` and ``consensus`` (reporting unit). ``sigma``: sigma_i per indicator (reporting
    unit; mapping or a ``surprise_scales`` frame) that standardizes both surprises. ``events``: the
    ``surprise_events`` rows holding these releases: the realized ``s`` is read from them
    (:func:`realized_surprises`), never recomputed from A and C; ``event_sigma`` is the sigma_i the stored
    ``s`` were standardized by (default: ``sigma``): when it differs, ``s`` is rescaled by
    ``event_sigma_i / sigma_i`` (a fit estimated with its own window's sigma, the point-in-time backtest).
    ``nowcasts``: rows of ONE model from the ``nowcasts`` table (``indicator_id``, ``reference_period``,
    ``issued_at``, ``value``, optional ``valid``); invalid rows and rows issued at or after the release are
    ignored; rows tied at one instant are averaged.

    The model's forecast is a step function (module notes). ``horizon``: ``"terminal"`` = the latest nowcast
    strictly before ``release_at``, scored against the final consensus; ``"median_<k>d"`` = the median, over
    the ends of the hours of the America/New_York calendar day k days before the release day
    (:func:`day_hour_ends`), of the forecast standing at each (:func:`standing_forecast`: latest nowcast
    issued strictly before the hour's end, carried forward), scored against the consensus standing at the end
    of that day: the latest ``consensus_path`` value (nowcast-shaped rows of the consensus, issued by then) if
    given, else the final consensus. Hours before the model's first nowcast carry nothing.

    Returns one row per release: the release columns plus ``sigma``, ``consensus_used``, ``nowcast``,
    ``nowcast_issued_at`` (latest issue time used), ``n_nowcasts`` (terminal: rows tied at that instant;
    median: hours with a standing forecast), ``s`` and ``s_hat = (nowcast - consensus_used)/sigma`` (NULL when
    the model has no forecast at that horizon). Raises :class:`ScoringError` for missing columns, missing
    sigma, NULL actual/consensus, duplicate releases or a release with no stored event.
    """
    require_columns(
        releases,
        ["indicator_id", "reference_period", "release_at", "actual", "consensus"],
        "releases",
        ScoringError,
    )
    require_columns(
        nowcasts, ["indicator_id", "reference_period", "issued_at", "value"], "nowcasts", ScoringError
    )
    _one_model(nowcasts, "nowcasts")
    k = _horizon_days(horizon)
    sig = _sigma_frame(sigma)
    releases = _utc_col(releases, "releases", "release_at")
    nowcasts = _utc_col(nowcasts, "nowcasts", "issued_at")
    rel = _checked_releases(releases, sig)
    pre = _valid_before_release(rel, nowcasts)
    rel = _terminal_forecast(rel, pre) if k is None else _median_forecast(rel, pre, k, consensus_path)
    rel = _with_realized(rel, events, event_sigma)
    return (
        rel.with_columns(
            ((pl.col("nowcast") - pl.col("consensus_used")) / pl.col("sigma")).alias("s_hat"),
            pl.col("n_nowcasts").fill_null(0),
        )
        .select(*[c for c in rel.columns if c != "s"], "s", "s_hat")
        .sort("release_at", "indicator_id")
    )


def _checked_releases(releases: pl.DataFrame, sig: pl.DataFrame) -> pl.DataFrame:
    """The release columns :func:`implied_surprises` scores (actual and consensus as floats) with each
    indicator's ``sigma``. Raises :class:`ScoringError` for a NULL actual/consensus, a duplicate release or
    an indicator without sigma."""
    rel = releases.select(
        "indicator_id",
        "reference_period",
        "release_at",
        pl.col("actual").cast(pl.Float64),
        pl.col("consensus").cast(pl.Float64),
    )
    for c in ("actual", "consensus"):
        bad = rel.filter(pl.col(c).is_null())
        if bad.height:
            raise ScoringError(f"release {bad['indicator_id'][0]} at {bad['release_at'][0]} has NULL {c}")
    dup = rel.filter(pl.struct("indicator_id", "release_at").is_duplicated())
    if dup.height:
        raise ScoringError(
            f"duplicate release indicator_id={dup['indicator_id'][0]} release_at={dup['release_at'][0]}"
        )
    rel = rel.join(sig, on="indicator_id", how="left")
    nos = rel.filter(pl.col("sigma").is_null())
    if nos.height:
        raise ScoringError(f"no sigma for indicator_id={nos['indicator_id'][0]}")
    return rel


def _terminal_forecast(rel: pl.DataFrame, pre: pl.DataFrame) -> pl.DataFrame:
    """The terminal horizon: the latest nowcast strictly before each release (``pre``: the model's valid
    pre-release rows), scored against the final consensus."""
    keys = _KEYS
    at = rel.select(*keys, pl.col("release_at").alias("_at"))
    st = standing_forecast(pre, at).select(
        *keys,
        pl.col("value").alias("nowcast"),
        pl.col("issued_at").alias("nowcast_issued_at"),
        pl.col("_n_tied").alias("n_nowcasts"),
    )
    return rel.join(st, on=keys, how="left").with_columns(pl.col("consensus").alias("consensus_used"))


def _median_forecast(
    rel: pl.DataFrame, pre: pl.DataFrame, k: int, consensus_path: pl.DataFrame | None
) -> pl.DataFrame:
    """The ``median_<k>d`` horizon (K.3): the median of the forecast standing at the ends of the hours of the
    New York day ``k`` days before each release, against the consensus standing at the end of that day
    (``consensus_path``; the final consensus without it)."""
    keys = _KEYS
    grid = rel.select(*keys, day_hour_ends(pl.col("release_at"), k).alias("_at")).explode("_at")
    st = standing_forecast(pre, grid).filter(pl.col("value").is_not_null())
    agg = st.group_by(keys).agg(
        pl.col("value").median().alias("nowcast"),
        pl.col("issued_at").max().alias("nowcast_issued_at"),
        pl.len().cast(pl.Int32).alias("n_nowcasts"),
    )
    rel = rel.join(agg, on=keys, how="left")
    cons = rel.select(pl.col("consensus").alias("consensus_used"))
    if consensus_path is not None:
        require_columns(
            consensus_path,
            ["indicator_id", "reference_period", "issued_at", "value"],
            "consensus_path",
            ScoringError,
        )
        consensus_path = _utc_col(consensus_path, "consensus_path", "issued_at")
        end = (
            (pl.col("release_at").dt.convert_time_zone(ET.key).dt.date() - pl.duration(days=k - 1))
            .cast(pl.Datetime("us"))
            .dt.replace_time_zone(ET.key)
            .dt.convert_time_zone("UTC")
        )
        cp = _valid_before_release(rel.select(*keys), consensus_path)
        latest = standing_forecast(cp, rel.select(*keys, end.alias("_at")))
        rel = rel.join(latest.select(*keys, pl.col("value").alias("_cons_h")), on=keys, how="left")
        cons = rel.select(pl.coalesce("_cons_h", "consensus").alias("consensus_used"))
        rel = rel.drop("_cons_h")
    return rel.with_columns(cons["consensus_used"])


def _with_realized(
    rel: pl.DataFrame, events: pl.DataFrame, event_sigma: Mapping[str, float] | pl.DataFrame | None
) -> pl.DataFrame:
    """Each release's realized ``s`` read from its stored event (:func:`realized_surprises`), restandardized
    from ``event_sigma`` to the release's ``sigma`` when given. Raises :class:`ScoringError` for a release
    without a stored event or an indicator ``event_sigma`` lacks."""
    realized = realized_surprises(events)
    rel = rel.join(realized, on=["release_at", "indicator_id"], how="left")
    nos = rel.filter(pl.col("s").is_null())
    if nos.height:
        raise ScoringError(
            f"no stored surprise event for {nos['indicator_id'][0]} released at {nos['release_at'][0]}; "
            "materialize surprise_events for that release month"
        )
    if event_sigma is not None:
        ev_sig = _sigma_frame(event_sigma).rename({"sigma": "_ev_sigma"})
        rel = rel.join(ev_sig, on="indicator_id", how="left")
        nos = rel.filter(pl.col("_ev_sigma").is_null())
        if nos.height:
            raise ScoringError(f"event_sigma has no sigma for indicator_id={nos['indicator_id'][0]}")
        # the stored S = (A - C)/event_sigma; restandardize by the fit's sigma
        rel = rel.with_columns((pl.col("s") * pl.col("_ev_sigma") / pl.col("sigma")).alias("s")).drop(
            "_ev_sigma"
        )
    return rel


def sampling_surprises(
    releases: pl.DataFrame,
    sigma: Mapping[str, float] | pl.DataFrame,
    nowcasts: pl.DataFrame,
    *,
    events: pl.DataFrame,
    k: int = SAMPLING_K,
    event_sigma: Mapping[str, float] | pl.DataFrame | None = None,
) -> list[pl.DataFrame]:
    """The k sampling replicates of :func:`implied_surprises` (K.3 sampling CI), as step functions.

    Replicate j (0-based) uses, per release, the forecast standing j hours before the release: the latest
    valid nowcast issued strictly before ``release_at - j h``, carried forward, scored against the final
    consensus. For an hourly forecaster this is its (j+1)-th most recent pre-release nowcast (the paper's
    "nearest pre-release nowcasts"); a forecaster with one nowcast per window gives k identical replicates. A
    release with no forecast standing at that time gets NULL ``s_hat`` in that replicate. Returns a list of k
    per-release frames with the columns of :func:`implied_surprises`.
    """
    if k < 2:
        raise ScoringError(f"sampling CI needs k >= 2 nowcasts per release, got k={k}")
    require_columns(
        nowcasts, ["indicator_id", "reference_period", "issued_at", "value"], "nowcasts", ScoringError
    )
    _one_model(nowcasts, "nowcasts")
    nowcasts = _utc_col(nowcasts, "nowcasts", "issued_at")
    keys = _KEYS
    base = implied_surprises(
        releases, sigma, nowcasts.head(0), events=events, horizon="terminal", event_sigma=event_sigma
    )
    pre = _valid_before_release(base.select(*keys), nowcasts)
    out = []
    for j in range(k):
        at = base.select(*keys, (pl.col("release_at") - pl.duration(hours=j)).alias("_at"))
        pick = standing_forecast(pre, at).select(
            *keys,
            pl.col("value").alias("nowcast"),
            pl.col("issued_at").alias("nowcast_issued_at"),
            pl.col("_n_tied").fill_null(0).alias("n_nowcasts"),
        )
        rep = base.drop("nowcast", "nowcast_issued_at", "n_nowcasts", "s_hat").join(pick, on=keys, how="left")
        out.append(
            rep.with_columns(
                ((pl.col("nowcast") - pl.col("consensus_used")) / pl.col("sigma")).alias("s_hat"),
                pl.col("n_nowcasts").fill_null(0),
            ).select(base.columns)
        )
    return out


# ---------------------------------------------------------------------------------------------
# Event design
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveDesign:
    """Live timestamp-group events: ``r`` (n,), ``S``/``S_hat``/``released``/``own`` (n, p), ``release_at``
    (n,).

    ``own[g, i]``: the model has its own pre-release nowcast for field i in event g (else its ``S_hat`` is the
    consensus's 0); None = every released field is the model's own."""

    release_at: np.ndarray  # datetime64[us] UTC
    r: np.ndarray
    S: np.ndarray
    S_hat: np.ndarray
    released: np.ndarray  # bool: field i released in event g
    indicator_ids: tuple[str, ...] = INDICATOR_IDS
    counts: dict = field(default_factory=dict)  # events/releases dropped and why
    own: np.ndarray | None = None

    @property
    def n_events(self) -> int:
        return int(self.r.shape[0])

    @property
    def own_fields(self) -> np.ndarray:
        """(n, p) bool: fields released in the event with the model's own nowcast."""
        return self.released if self.own is None else self.own & self.released

    def subset(self, rows: np.ndarray) -> LiveDesign:
        """The design restricted to event rows ``rows`` (bool mask or indices)."""
        return LiveDesign(
            self.release_at[rows],
            self.r[rows],
            self.S[rows],
            self.S_hat[rows],
            self.released[rows],
            self.indicator_ids,
            dict(self.counts),
            None if self.own is None else self.own[rows],
        )

    def at_times(self, times: np.ndarray) -> LiveDesign:
        """The design restricted to the events at ``times`` (datetime64[us] UTC), in time order; raises
        :class:`ScoringError` for a time that is not an event of the design."""
        t = np.unique(np.asarray(times, dtype="datetime64[us]"))
        keep = np.isin(self.release_at, t)
        if int(keep.sum()) != t.size:
            raise ScoringError(
                f"event times {np.setdiff1d(t, self.release_at)[:3]} are not events of this design"
            )
        return self.subset(keep)


def own_rows(design: LiveDesign, scope: str = "overall") -> np.ndarray:
    """(n,) bool: events where the model has its own nowcast for at least one released field of ``scope``."""
    return design.own_fields[:, scope_indices(scope, design.indicator_ids)].any(axis=1)


def own_subset(design: LiveDesign, scope: str = "overall") -> LiveDesign:
    """The model's own events of ``scope`` (:func:`own_rows`): its own-coverage score is computed on these.
    Inside an own event, a released field the model does not nowcast keeps ``S_hat = 0`` (the consensus)."""
    return design.subset(own_rows(design, scope))


def common_event_set(
    own_times: Mapping[str, np.ndarray],
    *,
    min_events: int,
    models: Sequence[str] | None = None,
    always: Sequence[str] = (),
) -> tuple[list[str], np.ndarray]:
    """The models a common-events board ranks, and their common event set (the intersection of their own
    events).

    ``own_times``: model -> its own event times (datetime64[us]). ``models`` fixes the compared set (the
    intersection of those models' own events, whatever its size); otherwise the set is built greedily: models
    in order of most own events (ties by model_id) join when the intersection with them keeps at least
    ``min_events`` events. ``always``: models compared whenever they cover the common set (the consensus
    covers every event). Returns ``(models, times)``, ``([], empty)`` when no model reaches ``min_events``.
    Raises :class:`ScoringError` for a named model without own events.
    """
    if models:
        missing = [m for m in models if m not in own_times]
        if missing:
            raise ScoringError(f"common event set: model(s) {missing} have no own events to compare")
        common = own_times[models[0]]
        for m in models[1:]:
            common = np.intersect1d(common, own_times[m])
        chosen = list(models)
    else:
        order = sorted((m for m in own_times if m not in always), key=lambda m: (-own_times[m].size, m))
        common, chosen = None, []
        for m in order:
            cand = own_times[m] if common is None else np.intersect1d(common, own_times[m])
            if cand.size >= max(min_events, 1):
                common, chosen = cand, chosen + [m]
        if common is None:
            return [], np.array([], dtype="datetime64[us]")
    for m in always:
        if m in own_times and m not in chosen and np.isin(common, own_times[m]).all():
            chosen.append(m)
    return chosen, np.asarray(common, dtype="datetime64[us]")


def live_design(
    per_release: pl.DataFrame,
    returns: pl.DataFrame,
    *,
    indicator_ids: Sequence[str] = INDICATOR_IDS,
    missing: MissingPolicy = "drop_event",
    event_map: pl.DataFrame | None = None,
) -> LiveDesign:
    """Group per-release surprises into timestamp-group events with their announcement-window return.

    ``per_release``: output of :func:`implied_surprises` (``release_at``, ``indicator_id``, ``s``,
    ``s_hat``). ``returns``: ``release_at`` (the event time), ``r_g`` (NULL/NaN = unusable window: the event
    is dropped and counted). ``event_map`` (``release_at``, ``event_at``; from
    :func:`leaf_live.macro.scoring.surprises.overlapping_event_groups`) puts releases whose announcement
    windows overlap into one event at ``event_at`` (``returns`` is then keyed by ``event_at``); two releases
    of one indicator in such an event add their surprises (r_g = sum beta_i S_i is linear in each), and the
    field is the model's own when either release is. Without it, events are the release timestamps (App. K.1).

    A release whose model nowcast is missing (NULL ``s_hat``) is handled by ``missing``: ``"drop_event"``
    drops its whole event (counted), ``"consensus"`` sets ``s_hat = 0`` (counted; ``own`` marks the fields
    the model does nowcast), ``"error"`` raises. Raises :class:`ScoringError` for unknown indicators, an event
    with no return row, or duplicate fields within an event (without ``event_map``).
    """
    require_columns(per_release, ["release_at", "indicator_id", "s", "s_hat"], "per_release", ScoringError)
    require_columns(returns, ["release_at", "r_g"], "returns", ScoringError)
    if missing not in ("drop_event", "consensus", "error"):
        raise ScoringError(f"missing must be drop_event | consensus | error, got {missing!r}")
    per_release = _utc_col(per_release, "per_release", "release_at")
    returns = _utc_col(returns, "returns", "release_at")
    ids = list(indicator_ids)
    pos = {i: k for k, i in enumerate(ids)}
    unknown = per_release.filter(~pl.col("indicator_id").is_in(ids))
    if unknown.height:
        raise ScoringError(
            f"per_release has indicator_id={unknown['indicator_id'][0]!r} outside the scored set"
        )
    counts = {"releases_without_nowcast": 0, "events_dropped_no_nowcast": 0, "events_dropped_no_return": 0}
    pr = per_release.select("release_at", "indicator_id", "s", pl.col("s_hat").fill_nan(None))
    if event_map is not None:
        require_columns(event_map, ["release_at", "event_at"], "event_map", ScoringError)
        em = _utc_col(_utc_col(event_map, "event_map", "release_at"), "event_map", "event_at")
        pr = pr.join(em.select("release_at", "event_at"), on="release_at", how="left")
        nomap = pr.filter(pl.col("event_at").is_null())
        if nomap.height:
            raise ScoringError(f"event_map has no event for the release at {nomap['release_at'][0]}")
        pr = pr.group_by(pl.col("event_at").alias("release_at"), "indicator_id").agg(
            pl.col("s").sum(),
            pl.when(pl.col("s_hat").is_not_null().any()).then(pl.col("s_hat").sum()).alias("s_hat"),
            pl.col("s_hat").is_null().sum().alias("_n_missing"),
        )
        counts["releases_without_nowcast"] = int(pr["_n_missing"].sum())
        pr = pr.drop("_n_missing")
    else:
        dup = pr.filter(pl.struct("release_at", "indicator_id").is_duplicated())
        if dup.height:
            raise ScoringError(f"two releases of {dup['indicator_id'][0]} at {dup['release_at'][0]}")
        counts["releases_without_nowcast"] = pr.filter(pl.col("s_hat").is_null()).height
    no_nc = pr.filter(pl.col("s_hat").is_null())
    pr = pr.with_columns(pl.col("s_hat").is_not_null().alias("_own"))
    if no_nc.height:
        if missing == "error":
            raise ScoringError(
                f"no nowcast for {no_nc['indicator_id'][0]} released at {no_nc['release_at'][0]}"
            )
        if missing == "drop_event":
            bad_t = no_nc["release_at"].unique()
            counts["events_dropped_no_nowcast"] = bad_t.len()
            pr = pr.filter(~pl.col("release_at").is_in(bad_t.implode()))
        else:
            pr = pr.with_columns(pl.col("s_hat").fill_null(0.0))
    ret = returns.select("release_at", pl.col("r_g").cast(pl.Float64))
    dup_r = ret.filter(pl.col("release_at").is_duplicated())
    if dup_r.height:
        raise ScoringError(f"returns has two rows for release_at={dup_r['release_at'][0]}")
    events = pr.select("release_at").unique().join(ret, on="release_at", how="left", coalesce=True)
    absent = pr.select("release_at").unique().join(ret, on="release_at", how="anti")
    if absent.height:
        raise ScoringError(f"no announcement return row for event release_at={absent['release_at'][0]}")
    usable = pl.col("r_g").is_not_null() & pl.col("r_g").is_not_nan()
    counts["events_dropped_no_return"] = events.filter(~usable).height
    events = events.filter(usable).sort("release_at")
    n, p = events.height, len(ids)
    row = {t: g for g, t in enumerate(events["release_at"].to_list())}
    S = np.zeros((n, p))
    S_hat = np.zeros((n, p))
    rel = np.zeros((n, p), dtype=bool)
    own = np.zeros((n, p), dtype=bool)
    keep = pr.filter(pl.col("release_at").is_in(events["release_at"].implode()))
    for t, i, s, sh, o in keep.select("release_at", "indicator_id", "s", "s_hat", "_own").iter_rows():
        g, k = row[t], pos[i]
        S[g, k], S_hat[g, k], rel[g, k], own[g, k] = s, sh, True, o
    t_np = events["release_at"].dt.convert_time_zone("UTC").dt.replace_time_zone(None).cast(pl.Datetime("us"))
    return LiveDesign(
        t_np.to_numpy(), events["r_g"].to_numpy().astype(float), S, S_hat, rel, tuple(ids), counts, own
    )


def scope_indices(scope: str, indicator_ids: Sequence[str] = INDICATOR_IDS) -> np.ndarray:
    """Column indices of a scope: ``"overall"`` (all) or a theme of §3.3
    (``leaf_live.macro.catalog.THEMES``)."""
    if scope == "overall":
        return np.arange(len(indicator_ids))
    if scope not in THEMES:
        raise ScoringError(f"scope must be 'overall' or one of {THEMES}, got {scope!r}")
    return np.array([k for k, i in enumerate(indicator_ids) if get_indicator(i).theme == scope], dtype=int)


def scoped_design(design: LiveDesign, beta: np.ndarray, scope: str) -> tuple[LiveDesign, np.ndarray]:
    """The scope's events (those releasing at least one of its fields) and its column indices."""
    beta = np.asarray(beta, dtype=float)
    if beta.shape != (len(design.indicator_ids),):
        raise ScoringError(f"beta must have shape ({len(design.indicator_ids)},), got {beta.shape}")
    idx = scope_indices(scope, design.indicator_ids)
    rows = design.released[:, idx].any(axis=1)  # theme score: only events releasing a theme field
    return design.subset(rows), idx


# ---------------------------------------------------------------------------------------------
# Point scores
# ---------------------------------------------------------------------------------------------


def skill_score(y: np.ndarray, y_hat: np.ndarray) -> float:
    """Eq. 2/8/17: ``(sum y^2 - sum (y - y_hat)^2) / (sum y^2 + sum (y - y_hat)^2)`` in [-1, 1].

    ``y`` (n,) realized target (return r_g or shock Q_g), ``y_hat`` (n,) model prediction; the consensus
    prediction is 0, so ``sum y^2`` is SS_cons. NaN when both sums are 0 (nothing to score).
    """
    y = np.asarray(y, dtype=float)
    y_hat = np.asarray(y_hat, dtype=float)
    ss_c = float(y @ y)
    e = y - y_hat
    ss_m = float(e @ e)
    den = ss_c + ss_m
    return (ss_c - ss_m) / den if den > 0 else float("nan")


def kappa_phi(y: np.ndarray, y_hat: np.ndarray) -> tuple[float, float]:
    """Position size kappa and directional alignment phi (Eq. 18). phi is NaN when ``y_hat`` is all 0."""
    y = np.asarray(y, dtype=float)
    y_hat = np.asarray(y_hat, dtype=float)
    yy, hh = float(y @ y), float(y_hat @ y_hat)
    if yy <= 0:
        raise ScoringError("kappa/phi undefined: the realized target is identically 0")
    kappa = math.sqrt(hh / yy)
    phi = float(y_hat @ y) / math.sqrt(hh * yy) if hh > 0 else float("nan")
    return kappa, phi


def score_from_kappa_phi(kappa: float, phi: float) -> float:
    """Eq. 19: ``(2 kappa phi - kappa^2) / (2 + kappa^2 - 2 kappa phi)`` (0 when kappa = 0)."""
    if kappa == 0:
        return 0.0
    return (2 * kappa * phi - kappa**2) / (2 + kappa**2 - 2 * kappa * phi)


def sign_hits(y: np.ndarray, y_hat: np.ndarray) -> np.ndarray:
    """Per-event credit of the directional score: 1 where sgn(y_hat) = sgn(y) != 0, 0 where the signs differ,
    0.5 where ``y_hat`` is exactly 0 (no directional view: the coin flip's expected credit). Shape of
    ``y_hat`` (``y`` broadcasts)."""
    sh = np.sign(y_hat)
    return np.where(sh == 0, 0.5, (sh == np.sign(y)).astype(float))


def directional_score(r: np.ndarray, r_hat: np.ndarray) -> float:
    """LiveMacro directional score (Eq. 14): |r|-weighted share of events with sgn(r_hat) = sgn(r), on the
    0.5 coin-flip scale.

    A zero prediction (no directional view, e.g. the consensus, or a nowcast equal to the consensus on every
    field of an event) counts as half a hit (:func:`sign_hits`), so a forecaster without a view scores exactly
    0.5, the coin-flip reference of App. N; where no prediction is 0 this is Eq. 14 as printed. NaN when every
    ``r`` is 0.
    """
    r = np.asarray(r, dtype=float)
    w = np.abs(r)
    tot = float(w.sum())
    # np.sum on both sides: halving is exact, so a forecaster with no view lands on 0.5 exactly
    return float((w * sign_hits(r, np.asarray(r_hat, dtype=float))).sum()) / tot if tot > 0 else float("nan")


def targets(
    design: LiveDesign, beta: np.ndarray, target: Target, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(Y, Q_hat)`` for the scope columns ``idx``: Y = r (``"return"``) or Q = S beta (``"shock"``, S.1)."""
    b = np.asarray(beta, dtype=float)[idx]
    q_hat = design.S_hat[:, idx] @ b
    if target == "return":
        return design.r, q_hat
    if target == "shock":
        return design.S[:, idx] @ b, q_hat
    raise ScoringError(f"target must be 'return' or 'shock', got {target!r}")


@dataclass(frozen=True)
class PointScore:
    score: float
    ss_model: float
    ss_cons: float
    kappa: float
    phi: float
    lmd: float
    n_events: int
    n_releases: int


def point_score(
    design: LiveDesign, beta: np.ndarray, *, scope: str = "overall", target: Target = "return"
) -> PointScore:
    """Score, SS terms, kappa/phi and LMD of one model on one scope (Eq. 8/17, 18, 14; §4.4).

    ``beta`` (p,) frozen market betas in log return per standardized surprise. The LMD is computed
    against the scored target's sign (Eq. 14 for ``target="return"``).
    """
    d, idx = scoped_design(design, beta, scope)
    y, q = targets(d, beta, target, idx)
    ss_c = float(y @ y)
    ss_m = float((y - q) @ (y - q))
    kap, ph = kappa_phi(y, q) if ss_c > 0 else (float("nan"), float("nan"))
    return PointScore(
        score=skill_score(y, q),
        ss_model=ss_m,
        ss_cons=ss_c,
        kappa=kap,
        phi=ph,
        lmd=directional_score(y, q),
        n_events=d.n_events,
        n_releases=int(d.released[:, idx].sum()),
    )


# ---------------------------------------------------------------------------------------------
# Parametric bootstrap (Eq. 12)
# ---------------------------------------------------------------------------------------------


def standard_normal_draws(
    n_draws: int = DEFAULT_BOOT_DRAWS, p: int = len(INDICATOR_IDS), seed: int = DEFAULT_SEED
) -> np.ndarray:
    """The (B, p) matrix of z draws shared by every model and scope (theme intervals slice its columns)."""
    return np.random.default_rng(seed).standard_normal((n_draws, p))


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile intervals of the bootstrap distribution of the score (and of the LMD)."""

    scores: np.ndarray  # (B,)
    lmd: np.ndarray  # (B,)
    ci90: tuple[float, float]
    ci95: tuple[float, float]
    p_le_zero: float  # share of draws with score <= 0: one-sided p for "beats the consensus"
    p_ge_zero: float  # share of draws with score >= 0: one-sided p for "worse than the consensus"
    lmd_ci90: tuple[float, float]
    n_draws: int


def _pct(x: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    a, b = np.nanpercentile(x, [lo, hi])
    return float(a), float(b)


def _quad(Bm: np.ndarray, G: np.ndarray) -> np.ndarray:
    return np.einsum("bi,ij,bj->b", Bm, G, Bm, optimize=True)


def _lmd_draws(
    Sh: np.ndarray, Bm: np.ndarray, r: np.ndarray | None, S: np.ndarray, chunk: int = 1000
) -> np.ndarray:
    """LMD of every beta draw (rows of ``Bm``, (B, q)): weighted sign hits of Q_hat = ``Sh`` beta^(b) against
    y = ``r`` (target return, fixed) or y = ``S`` beta^(b) (target shock), weights |y|, a zero prediction
    counting half (:func:`sign_hits`); NaN when every weight is 0. Draws in chunks laid out (draw, event), and
    for a fixed y the hits are three matrix-vector products, so no (events x draws) float temporaries."""
    out = np.empty(Bm.shape[0])
    if r is not None:
        w = np.abs(r)
        w_pos, w_neg, total = w * (r > 0), w * (r < 0), w.sum()
    for a in range(0, Bm.shape[0], chunk):
        Q = Bm[a : a + chunk] @ Sh.T  # (b, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            if r is not None:
                out[a : a + chunk] = ((Q > 0) @ w_pos + (Q < 0) @ w_neg + 0.5 * ((Q == 0) @ w)) / total
            else:
                Y = Bm[a : a + chunk] @ S.T
                wy = np.abs(Y)
                hits = np.where(Q == 0, 0.5, np.sign(Q) == np.sign(Y))
                out[a : a + chunk] = (wy * hits).sum(axis=1) / wy.sum(axis=1)
    return out


def beta_draws(beta: np.ndarray, cov: np.ndarray, idx: np.ndarray, z: np.ndarray) -> np.ndarray:
    """beta^(b) = beta_idx + L z_idx^(b) with L the Cholesky factor of V restricted to idx (Eq. 12, K.3).

    A column with zero variance (an indicator never released with a surprise in the fit window: its beta is
    the ridge's exact 0 and its V row is 0) is held at beta in every draw; the others are drawn from the
    Cholesky factor of their block, so a full-rank V gives exactly the plain formula.
    """
    V = np.asarray(cov, dtype=float)[np.ix_(idx, idx)]
    pos = np.diag(V) > 0
    out = np.broadcast_to(np.asarray(beta, dtype=float)[idx], (z.shape[0], idx.size)).copy()
    if not pos.any():
        return out
    try:
        L = np.linalg.cholesky(V[np.ix_(pos, pos)])
    except np.linalg.LinAlgError as exc:
        raise ScoringError(
            f"V_beta restricted to columns {idx[pos].tolist()} is not positive definite"
        ) from exc
    out[:, pos] += z[:, idx[pos]] @ L.T
    return out


def bootstrap_scores(
    design: LiveDesign,
    beta: np.ndarray,
    cov: np.ndarray,
    *,
    scope: str = "overall",
    target: Target = "return",
    z: np.ndarray | None = None,
    n_draws: int = DEFAULT_BOOT_DRAWS,
    seed: int = DEFAULT_SEED,
) -> BootstrapResult:
    """Parametric bootstrap of the score over beta ~ N(beta_hat, V_beta) (Eq. 12), S, S_hat, r fixed.

    ``cov`` (p, p) is V_beta; a theme uses V restricted to its block and re-factored, with the same z
    draws sliced to its columns. ``z`` (B, p) defaults to :func:`standard_normal_draws` (n_draws, seed).
    Vectorized: every draw's sums of squares are quadratic forms in beta with 16x16 Gram matrices,
    so the cost does not grow with the number of events (the LMD needs one (n x B) sign matrix).
    """
    d, idx = scoped_design(design, beta, scope)
    if z is None:
        z = standard_normal_draws(n_draws, len(design.indicator_ids), seed)
    Bm = beta_draws(beta, cov, idx, z)  # (B, q)
    Sh, S, r = d.S_hat[:, idx], d.S[:, idx], d.r
    if target == "return":
        ss_c = np.full(Bm.shape[0], float(r @ r))
        ss_m = ss_c - 2.0 * Bm @ (Sh.T @ r) + _quad(Bm, Sh.T @ Sh)
    elif target == "shock":
        D = S - Sh
        ss_c = _quad(Bm, S.T @ S)
        ss_m = _quad(Bm, D.T @ D)
    else:
        raise ScoringError(f"target must be 'return' or 'shock', got {target!r}")
    ss_m = np.maximum(ss_m, 0.0)  # the expansion can dip below 0 by rounding only
    den = ss_c + ss_m
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(den > 0, (ss_c - ss_m) / den, np.nan)
    lmd = _lmd_draws(Sh, Bm, r if target == "return" else None, S)
    return BootstrapResult(
        scores=scores,
        lmd=np.asarray(lmd, dtype=float),
        ci90=_pct(scores, 5, 95),
        ci95=_pct(scores, 2.5, 97.5),
        p_le_zero=float(np.mean(scores <= 0)),
        p_ge_zero=float(np.mean(scores >= 0)),
        lmd_ci90=_pct(lmd, 5, 95),
        n_draws=int(Bm.shape[0]),
    )


def event_resamples(n_events: int, n_draws: int = DEFAULT_BOOT_DRAWS, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(B, n) multinomial event counts of B bootstrap resamples of n events (each row sums to n); the same
    ``seed`` gives the same resamples to every model and to the paired bootstrap (S.2). Read-only (cached)."""
    if n_events < 1:
        raise ScoringError("event bootstrap needs at least one event")
    return _event_resamples(int(n_events), int(n_draws), int(seed))


@functools.lru_cache(maxsize=32)
def _event_resamples(n: int, n_draws: int, seed: int) -> np.ndarray:
    K = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=n_draws).astype(float)
    K.setflags(write=False)  # shared by every model and scope of a run
    return K


@dataclass(frozen=True)
class EventBootstrapResult:
    """Percentile intervals that carry the sampling of events (``event``: beta fixed at beta_hat) and both
    sources at once (``combined``: draw b uses beta^(b) of Eq. 12 and event resample b)."""

    event_scores: np.ndarray  # (B,)
    combined_scores: np.ndarray  # (B,)
    event_ci90: tuple[float, float]
    event_ci95: tuple[float, float]
    combined_ci90: tuple[float, float]
    combined_ci95: tuple[float, float]
    n_events: int
    n_draws: int


def event_bootstrap_scores(
    design: LiveDesign,
    beta: np.ndarray,
    cov: np.ndarray,
    *,
    scope: str = "overall",
    target: Target = "return",
    z: np.ndarray | None = None,
    n_draws: int = DEFAULT_BOOT_DRAWS,
    seed: int = DEFAULT_SEED,
    chunk: int = 1000,
) -> EventBootstrapResult:
    """Event-bootstrap and combined intervals of the score (K.3 carries beta uncertainty only).

    Event bootstrap: the scope's events are resampled with replacement (:func:`event_resamples`, ``seed``) and
    the score recomputed at beta_hat on each resample, so the interval carries the sampling of events (which
    releases happened to fall in the window). Combined: draw b uses the parametric beta draw b of Eq. 12
    (``z`` row b, as :func:`bootstrap_scores`) on event resample b, so it carries both. Percentile intervals;
    draws whose resample has a zero target (SS_cons = SS_model = 0) are NaN and ignored. Vectorized in chunks
    of ``chunk`` draws: each draw's sums are a count-weighted sum over events. Raises :class:`ScoringError`
    when the scope has no event.
    """
    d, idx = scoped_design(design, beta, scope)
    n = d.n_events
    K = event_resamples(n, n_draws, seed)
    if z is None:
        z = standard_normal_draws(n_draws, len(design.indicator_ids), seed)
    if z.shape[0] != K.shape[0]:
        raise ScoringError(f"z has {z.shape[0]} draws, the event resamples {K.shape[0]}")
    y, q = targets(d, beta, target, idx)
    with np.errstate(invalid="ignore", divide="ignore"):
        c, m = K @ (y * y), K @ ((y - q) ** 2)
        ev = np.where(c + m > 0, (c - m) / (c + m), np.nan)
    Sh, S, r = d.S_hat[:, idx], d.S[:, idx], d.r
    comb = np.empty(K.shape[0])
    # y^2 laid out as the (draw, event) products below, so that a zero prediction gives m == c exactly (the
    # consensus scores exactly 0 in every draw, not +-1e-17 from a differently summed product)
    rr = (
        np.ascontiguousarray(np.broadcast_to(r * r, (min(chunk, K.shape[0]), n)))
        if target == "return"
        else None
    )
    for a in range(0, K.shape[0], chunk):
        Bm = beta_draws(beta, cov, idx, z[a : a + chunk])  # (b, q)
        Kc = K[a : a + chunk]
        Qh = Bm @ Sh.T  # (b, n): laid out as Kc
        if target == "return":
            c = np.einsum("bn,bn->b", Kc, rr[: Kc.shape[0]])
            D = r[None, :] - Qh
        else:
            Y = Bm @ S.T
            c = np.einsum("bn,bn->b", Kc, Y * Y)
            D = Y - Qh
        m = np.einsum("bn,bn->b", Kc, D * D)
        with np.errstate(invalid="ignore", divide="ignore"):
            comb[a : a + chunk] = np.where(c + m > 0, (c - m) / (c + m), np.nan)
    return EventBootstrapResult(
        event_scores=ev,
        combined_scores=comb,
        event_ci90=_pct(ev, 5, 95),
        event_ci95=_pct(ev, 2.5, 97.5),
        combined_ci90=_pct(comb, 5, 95),
        combined_ci95=_pct(comb, 2.5, 97.5),
        n_events=n,
        n_draws=int(K.shape[0]),
    )


# ---------------------------------------------------------------------------------------------
# Sampling CI (K.3), Shapley (App. M), paired bootstrap (S.2), sizing discipline (S.4)
# ---------------------------------------------------------------------------------------------


def sampling_interval(scores: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval of the k sampling replicate scores (K.3): ``(mean, lo, hi)``."""
    x = np.asarray(scores, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < 2:
        raise ScoringError(f"sampling interval needs >= 2 finite replicate scores, got {x.size}")
    m = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def _coalition_values(y: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Score of every coalition T (bitmask over the q players): players in T use the model, others 0."""
    q = C.shape[1]
    masks = ((np.arange(1 << q)[:, None] >> np.arange(q)) & 1).astype(float)
    ss_c = float(y @ y)
    ss = ss_c - 2.0 * masks @ (C.T @ y) + _quad(masks, C.T @ C)
    ss = np.maximum(ss, 0.0)
    return (ss_c - ss) / (ss_c + ss)


def shapley_values(values: np.ndarray) -> np.ndarray:
    """Exact Shapley values from a value function given on all 2^q coalitions (index = bitmask)."""
    m = values.shape[0]
    q = m.bit_length() - 1
    if 1 << q != m:
        raise ScoringError(f"value function needs 2^q entries, got {m}")
    ar = np.arange(m)
    pop = np.zeros(m, dtype=int)
    for i in range(q):
        pop += (ar >> i) & 1
    wts = np.array([math.factorial(s) * math.factorial(q - s - 1) / math.factorial(q) for s in range(q)])
    out = np.empty(q)
    for i in range(q):
        without = ar[((ar >> i) & 1) == 0]
        out[i] = wts[pop[without]] @ (values[without | (1 << i)] - values[without])
    return out


def shapley_allocation(
    design: LiveDesign, beta: np.ndarray, *, scope: str = "overall", target: Target = "return"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Shapley allocation of the score to the scope's indicators (App. M).

    Player i's presence means its implied surprise is the model's, absence means the consensus's (0); the
    empty coalition scores 0, the full one the model's score, so the contributions sum to the score
    exactly, including events where several indicators release together. Returns ``(idx, phi)``: the
    scope's column indices and their contributions, in score points. 2^q coalition values come from
    precomputed Gram sums (O(2^q q^2)), so q = 16 is one pass.
    """
    d, idx = scoped_design(design, beta, scope)
    y, _ = targets(d, beta, target, idx)
    if float(y @ y) <= 0:
        raise ScoringError("Shapley allocation undefined: the realized target is identically 0 on this scope")
    C = d.S_hat[:, idx] * np.asarray(beta, dtype=float)[idx]
    return idx, shapley_values(_coalition_values(y, C))


@dataclass(frozen=True)
class PairedBootstrap:
    delta: float  # score(model a) - score(model b) on the shared events
    ci95: tuple[float, float] | None  # None: fewer shared events than the minimum, no interval
    draws: np.ndarray  # (B,), empty without an interval
    n_events: int

    @property
    def has_interval(self) -> bool:
        return self.ci95 is not None


def paired_event_bootstrap(
    design_a: LiveDesign,
    design_b: LiveDesign,
    beta: np.ndarray,
    *,
    scope: str = "overall",
    target: Target = "return",
    n_draws: int = DEFAULT_BOOT_DRAWS,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    min_events: int = 1,
) -> PairedBootstrap:
    """Paired event bootstrap of a score difference (S.2, Table 17).

    Keeps the events both designs score (same ``release_at``), resamples those event indices with
    replacement ``n_draws`` times (:func:`event_resamples`) and recomputes both scores on each identical
    resample. Percentile interval. With fewer than ``min_events`` shared events there is no interval
    (``ci95`` None, no draws): a resample of a handful of events cannot say how the difference varies (one
    event gives a zero-width interval). Raises :class:`ScoringError` when the designs share no event.
    """
    da, ia = scoped_design(design_a, beta, scope)
    db, _ = scoped_design(design_b, beta, scope)
    common, ka, kb = np.intersect1d(da.release_at, db.release_at, return_indices=True)
    if common.size == 0:
        raise ScoringError("paired bootstrap: the two models share no scored event")
    da, db = da.subset(ka), db.subset(kb)
    ya, qa = targets(da, beta, target, ia)
    yb, qb = targets(db, beta, target, ia)
    if target == "return" and not np.array_equal(ya, yb):
        raise ScoringError("paired bootstrap: the two designs disagree on r_g for a shared event")
    n = common.size
    delta = skill_score(ya, qa) - skill_score(yb, qb)
    if n < min_events:
        return PairedBootstrap(delta=delta, ci95=None, draws=np.empty(0), n_events=n)
    K = event_resamples(n, n_draws, seed)
    c = K @ (ya * ya)
    ma = K @ ((ya - qa) ** 2)
    mb = K @ ((yb - qb) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (c - ma) / (c + ma) - ((K @ (yb * yb)) - mb) / ((K @ (yb * yb)) + mb)
    a = (1 - level) / 2 * 100
    return PairedBootstrap(delta=delta, ci95=_pct(draws, a, 100 - a), draws=draws, n_events=n)


@dataclass(frozen=True)
class SizingDiscipline:
    mean_abs_s_hat: float
    corr_abs_s_hat_abs_error: float  # corr(|S_hat|, |S_hat - S|) over field-events
    sign_accuracy: float  # share of field-events with sgn(S_hat) = sgn(S)
    mean_abs_s: float
    n_field_events: int


def sizing_discipline(per_release: pl.DataFrame) -> SizingDiscipline:
    """Sizing-discipline row of Table 19 (S.4) over field-events with a nowcast.

    mean |S_hat|; Pearson correlation of |S_hat| with the absolute error |S_hat - S| (standardized units,
    i.e. |nowcast - actual| / sigma); sign accuracy = share with sgn(S_hat) = sgn(S) (0 counts as a sign).
    """
    require_columns(per_release, ["s", "s_hat"], "per_release", ScoringError)
    d = per_release.filter(pl.col("s_hat").is_not_null() & pl.col("s").is_not_null())
    if d.height < 2:
        raise ScoringError(f"sizing discipline needs >= 2 field-events with a nowcast, got {d.height}")
    s, sh = d["s"].to_numpy(), d["s_hat"].to_numpy()
    a, e = np.abs(sh), np.abs(sh - s)
    corr = float(np.corrcoef(a, e)[0, 1]) if a.std() > 0 and e.std() > 0 else float("nan")
    return SizingDiscipline(
        float(a.mean()), corr, float(np.mean(np.sign(sh) == np.sign(s))), float(np.abs(s).mean()), d.height
    )
