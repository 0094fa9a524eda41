"""Auto-ARIMA nowcasts (LiveMacroEval App. I): one forecast per nowcast window, issued at the window open,
from the history the vintage preceding the target month holds (:mod:`.histories`), fitted by the AIC grid
(:mod:`.estimator`) with each series' histories as one chain over its vintages (:mod:`.engine`), converted to
the catalog's reporting transformation."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

import numpy as np
import polars as pl

from leaf_live.core.pit import (
    UTC,
    et_month_key,
    et_month_start,
    month_index,
    month_start_of_index,
    period_index,
    require_columns,
)
from leaf_live.core.progress import Advance, Task
from leaf_live.core.sources import SourceError
from leaf_live.core.storage import empty_frame, polars_schema
from leaf_live.macro.catalog import Indicator, get_indicator
from leaf_live.macro.forecasters.arima.engine import ORDERS_AR1, ChainItem, GridFit, SeriesChain, fit_chains
from leaf_live.macro.forecasters.arima.estimator import MIN_OBS, P_MAX, Q_MAX, ArimaError, trend_for_d
from leaf_live.macro.forecasters.arima.histories import (
    _LOG_TCODES,
    _TCODE_D,
    AR1_LOG_INDICATORS,
    SeriesHistory,
    fred_history,
    release_history,
    to_reporting,
)
from leaf_live.macro.nowcasts import build_nowcasts
from leaf_live.macro.series_vintages import VintageStore
from leaf_live.macro.sources.fred_md import wanted_vintage
from leaf_live.macro.windows import target_month, window_open

MODEL_ID = "baseline/auto-arima"

_GAP = re.compile(r"not stored: (\d+) months older")
_H = re.compile(r"; h=(\d+) (months|quarters);")


def rationale_provenance(rationale: str | None) -> tuple[int, int | None]:
    """(vintage gap in months, horizon h in periods) of one auto-ARIMA nowcast, read from the ``rationale``
    this module writes (``..., vintage V (wanted W, not stored: G months older); ...; h=H months; ...``).
    The gap is 0 when the fit used the vintage App. I prescribes (the one immediately preceding the target
    month) or first releases; h is None when the rationale states none (an invalid row)."""
    if not rationale:
        return 0, None
    g, h = _GAP.search(rationale), _H.search(rationale)
    return (int(g.group(1)) if g else 0), (int(h.group(1)) if h else None)


def provenance_counts(rationales: Sequence[str | None]) -> dict[str, int]:
    """How far the live auto-ARIMA is from App. I on its scored releases (issue 16): ``n_releases``,
    ``n_older_vintage`` (fitted on a vintage older than the one preceding the target month, which is not
    stored), ``n_h_4plus`` (forecast 4 or more periods past the last observation: the prescribed vintage
    gives 1-2), ``min_h``/``max_h`` (periods past the last observation; 0 when none is stated)."""
    prov = [rationale_provenance(r) for r in rationales]
    hs = [h for _, h in prov if h is not None]
    return {
        "n_releases": len(prov),
        "n_older_vintage": sum(g > 0 for g, _ in prov),
        "n_h_4plus": sum(h >= 4 for h in hs),
        "min_h": min(hs, default=0),
        "max_h": max(hs, default=0),
    }


# ------------------------------------------------------------------------------------------------
# one nowcast
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArimaNowcast:
    """One auto-ARIMA nowcast: ``value`` in the reporting unit (None when not issued), ``reason`` why not,
    ``source_variable`` (FRED column or indicator id), ``rationale`` (the fit, the vintage and the gap)."""

    indicator_id: str
    reference_period: date
    issued_at: datetime
    value: float | None
    reason: str | None
    source_variable: str | None
    rationale: str | None


def _spec(ind: Indicator) -> tuple[int, str, bool, bool]:
    """(d, trend, log, ar1_only) for an indicator (App. I)."""
    if ind.id in AR1_LOG_INDICATORS:
        return 0, "c", True, True
    tcode = ind.fred_md_tcode
    if tcode not in _TCODE_D:
        raise ArimaError(f"{ind.id}: transform code {tcode!r} is not supported (1-6)")
    d = _TCODE_D[tcode]
    return d, trend_for_d(d), tcode in _LOG_TCODES, False


@dataclass(frozen=True)
class PreparedTarget:
    """A target ready to fit: the modelled series ``y`` (log levels for log codes), its spec and horizon."""

    ind: Indicator
    reference_period: date
    issued_at: datetime
    history: SeriesHistory
    y: np.ndarray
    d: int
    trend: str
    log: bool
    ar1: bool
    h: int


def _prepare_target(
    indicator_id: str, reference_period: date, issued_at: datetime, history: SeriesHistory, min_obs: int
) -> PreparedTarget | ArimaNowcast:
    """App. I's data rules before any fit: at least ``min_obs`` observations, a horizon h >= 1, positive
    levels where logs are modelled. Returns the prepared target or the invalid :class:`ArimaNowcast`."""
    ind = get_indicator(indicator_id)
    quarterly = ind.frequency == "quarterly"
    d, trend, log, ar1 = _spec(ind)
    src = history.source
    var = history.variable or src

    def fail(reason: str) -> ArimaNowcast:
        return ArimaNowcast(indicator_id, reference_period, issued_at, None, reason, var, None)

    n = len(history.levels)
    if n < min_obs:
        return fail(
            f"only {n} observations in {src} (App. I requires at least {min_obs}); no forecast issued"
        )
    last = history.dates[-1]
    h = period_index(reference_period, quarterly) - period_index(last, quarterly)
    if h < 1:
        return fail(
            f"{src} already holds {reference_period:%Y-%m} (last observation {last:%Y-%m}); "
            "a nowcast from it would not be a forecast"
        )
    levels = history.levels
    if log and np.any(levels <= 0):
        k = int(np.argmax(levels <= 0))
        return fail(f"{src}: non-positive level {levels[k]} at {history.dates[k]:%Y-%m} cannot be logged")
    y = np.log(levels) if log else np.asarray(levels, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        k = int(np.argmax(~np.isfinite(y)))
        return fail(f"{src}: non-finite value {levels[k]} at {history.dates[k]:%Y-%m}")
    return PreparedTarget(ind, reference_period, issued_at, history, y, d, trend, log, ar1, int(h))


def _finish(t: PreparedTarget, grid: GridFit) -> ArimaNowcast:
    """Forecast ``t`` from its fitted grid (the chosen order), convert to the reporting transformation and
    check the scale guardrail. Never raises for data problems: they come back as invalid nowcasts."""
    ind, history = t.ind, t.history
    src = history.source
    var = history.variable or src
    quarterly = ind.frequency == "quarterly"

    def fail(reason: str) -> ArimaNowcast:
        return ArimaNowcast(ind.id, t.reference_period, t.issued_at, None, reason, var, None)

    try:
        fit = grid.model(t.y)
    except ArimaError as exc:
        if t.ar1:
            return fail(f"AR(1) on log {src} could not be fitted")
        return fail(f"ARIMA fit failed on {src}: {exc}")
    path = fit.forecast(t.h)
    levels = history.levels
    fc_levels = np.exp(path) if t.log else path
    full = np.concatenate([levels, fc_levels])
    try:
        value = to_reporting(ind.transformation, full, len(full) - 1, quarterly=quarterly)
    except ArimaError as exc:
        return fail(str(exc))
    vint = ""
    if history.vintage is not None:
        vint = f", vintage {history.vintage}"
        if history.vintage_gap_months:
            vint += (
                f" (wanted {history.wanted_vintage}, not stored: {history.vintage_gap_months} months older)"
            )
    model = (
        "AR(1)+const on log level"
        if t.ar1
        else (
            f"ARIMA({fit.p},{fit.d},{fit.q}) trend={fit.trend}{' on log level' if t.log else ''},"
            f" AIC={fit.aic:.2f}"
        )
    )
    unit = "quarters" if quarterly else "months"
    n, last = len(levels), history.dates[-1]
    rationale = (
        f"{model}; {src}{vint}; obs {history.dates[0]:%Y-%m}..{last:%Y-%m} (n={n}"
        f"{f', {history.filled} gaps interpolated' if history.filled else ''}); h={t.h} {unit}; "
        f"{ind.transformation} = {value:.6g}"
    )
    if not math.isfinite(value):
        return fail(f"forecast is not finite ({value}); {rationale}")
    if not ind.guardrail.check(value):
        return ArimaNowcast(
            ind.id,
            t.reference_period,
            t.issued_at,
            None,
            f"forecast {value:.6g} outside the scale guardrail [{ind.guardrail.lo}, {ind.guardrail.hi}]",
            var,
            rationale,
        )
    return ArimaNowcast(ind.id, t.reference_period, t.issued_at, float(value), None, var, rationale)


def _orders(t: PreparedTarget, p_max: int, q_max: int) -> tuple[tuple[int, int], ...]:
    if t.ar1:
        return ORDERS_AR1
    return tuple((p, q) for p in range(p_max + 1) for q in range(q_max + 1))


def series_id(ind: Indicator) -> str:
    """The chain / fit-cache identity of an indicator's modelled series: ``'<indicator>:<FRED column or
    indicator id>'`` (the catalog column, so PPI's pre-2016 name PPIFGS stays in one chain)."""
    column = ind.fred_md_column if ind.fred_md_column and ind.id not in AR1_LOG_INDICATORS else ind.id
    return f"{ind.id}:{column}"


def _history_period(history: SeriesHistory, issued_at: datetime) -> int:
    """Month index ordering a chain: the vintage's month, or the issue month for first-release histories."""
    if history.vintage is not None:
        return month_index(history.vintage)
    return month_index(et_month_start(issued_at))


def fit_prepared(
    prepared: Sequence[PreparedTarget],
    *,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
    workers: int = 1,
    known: Mapping[str, Mapping[str, GridFit]] | None = None,
    progress: Advance | None = None,
) -> list[GridFit]:
    """Fit the grids of prepared targets as one chain per series (:func:`.engine.fit_chains`, one process
    pool for the batch when ``workers > 1``; ``progress(n)`` as histories are done); returns the
    :class:`GridFit` of each target, in order."""
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(prepared):
        groups.setdefault((series_id(t.ind), t.d, t.trend, _orders(t, p_max, q_max)), []).append(i)
    chains, members = [], []
    for (sid, d, trend, orders), idx in groups.items():
        idx = sorted(
            idx,
            key=lambda i: (
                _history_period(prepared[i].history, prepared[i].issued_at),
                prepared[i].issued_at,
            ),
        )
        items = tuple(
            ChainItem(
                prepared[i].y,
                _history_period(prepared[i].history, prepared[i].issued_at),
                prepared[i].history.vintage,
                prepared[i].issued_at,
            )
            for i in idx
        )
        chains.append(SeriesChain(sid, d, trend, items, orders))
        members.append(idx)
    out: list[GridFit | None] = [None] * len(prepared)
    for idx, grids in zip(members, fit_chains(chains, known=known, workers=workers, progress=progress)):
        for i, g in zip(idx, grids):
            out[i] = g
    return [g for g in out if g is not None]


def nowcast_one(
    indicator_id: str,
    reference_period: date,
    issued_at: datetime,
    history: SeriesHistory,
    *,
    min_obs: int = MIN_OBS,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
) -> ArimaNowcast:
    """Fit App. I's model on ``history`` and forecast ``reference_period`` (h steps past the last
    observation), converted to the catalog's reporting transformation and checked against the scale guardrail.
    One history alone is a chain of one: the full cold grid (:mod:`.engine`). Never raises for data problems:
    they come back as ``value=None`` with ``reason``."""
    t = _prepare_target(indicator_id, reference_period, issued_at, history, min_obs)
    if isinstance(t, ArimaNowcast):
        return t
    try:
        grid = fit_prepared([t], p_max=p_max, q_max=q_max)[0]
    except ArimaError as exc:
        return ArimaNowcast(
            indicator_id,
            reference_period,
            issued_at,
            None,
            f"ARIMA fit failed on {history.source}: {exc}",
            history.variable or history.source,
            None,
        )
    return _finish(t, grid)


# ------------------------------------------------------------------------------------------------
# batch entry point (the arima_nowcasts asset)
# ------------------------------------------------------------------------------------------------


def prepare_targets(
    targets: Sequence[tuple[str, date]],
    *,
    vintages: VintageStore,
    releases: pl.DataFrame | None = None,
    window_opens_at: Mapping[tuple[str, date], datetime] | None = None,
    partition_key: str | Mapping[tuple[str, date], str] | None = None,
    min_obs: int = MIN_OBS,
    progress: Advance | None = None,
) -> list[tuple[str, PreparedTarget | ArimaNowcast]]:
    """Everything :func:`arima_nowcast_batch` does before fitting: per target ``(partition_key, prepared)``,
    the history (from the stored vintages) checked against App. I's data rules, or the invalid
    :class:`ArimaNowcast` saying why there is none; ``progress(1)`` after each target. Arguments and errors as
    :func:`arima_nowcast_batch`."""
    plan = []
    for indicator_id, ref in targets:
        ind = get_indicator(indicator_id)
        tm = target_month(indicator_id, ref)  # validates the period start
        opens = (window_opens_at or {}).get((indicator_id, ref)) if window_opens_at else None
        if opens is None:
            opens = window_open(indicator_id, ref)
        if not isinstance(opens, datetime) or opens.tzinfo is None:
            raise ValueError(
                f"window_opens_at[{indicator_id!r}, {ref}]={opens!r}: expected a tz-aware datetime"
            )
        opens = opens.astimezone(UTC)
        info_month = min(tm, et_month_start(opens))
        if isinstance(partition_key, str):
            pk = partition_key
        elif partition_key is not None and (indicator_id, ref) in partition_key:
            pk = partition_key[(indicator_id, ref)]
        else:
            pk = et_month_key(opens)
        plan.append((ind, ref, opens, info_month, pk))

    rel_error = None
    if releases is None and any(
        ind.fred_md_column is None or ind.id in AR1_LOG_INDICATORS for ind, *_ in plan
    ):
        rel_error = (
            "no first-release history for indicators outside FRED-MD: pass releases= (the releases table)"
        )

    # One history per target, checked against the data rules.
    results: list[PreparedTarget | ArimaNowcast] = []
    for ind, ref, opens, info_month, _pk in plan:
        try:
            if ind.fred_md_column is not None and ind.id not in AR1_LOG_INDICATORS:
                hist = fred_history(ind, info_month, vintages, known_by=opens)
            else:
                if rel_error is not None:
                    raise ArimaError(rel_error)
                # the last month the preceding vintage would hold: the month before the vintage's
                last = month_start_of_index(month_index(wanted_vintage(info_month)) - 1)
                hist = release_history(ind, releases, issued_at=opens, last_period=last)
            results.append(_prepare_target(ind.id, ref, opens, hist, min_obs))
        except (SourceError, ArimaError, ValueError) as exc:
            var = ind.fred_md_column if ind.id not in AR1_LOG_INDICATORS and ind.fred_md_column else ind.id
            results.append(ArimaNowcast(ind.id, ref, opens, None, f"no history: {exc}", var, None))
        if progress is not None:
            progress(1)
    return [(pk, r) for (_, _, _, _, pk), r in zip(plan, results)]


@dataclass(frozen=True)
class NowcastBatch:
    """What :func:`arima_nowcast_batch` computed: ``frame`` (the ``nowcasts`` rows), per target ``targets``
    (``(partition_key, PreparedTarget or the invalid ArimaNowcast)``) and ``grids`` (its :class:`GridFit`,
    None where nothing was fitted; ``reused`` grids came from ``known`` or an earlier identical history)."""

    frame: pl.DataFrame
    targets: list[tuple[str, PreparedTarget | ArimaNowcast]]
    grids: list[GridFit | None]

    def fitted_grids(self) -> list[GridFit]:
        """The grids fitted in this batch (not reused), each history once: the new rows of a fit cache."""
        out, seen = [], set()
        for g in self.grids:
            if g is not None and not g.reused and (g.series_id, g.content_hash) not in seen:
                seen.add((g.series_id, g.content_hash))
                out.append(g)
        return out


def arima_nowcasts(targets: Sequence[tuple[str, date]], **kwargs) -> pl.DataFrame:
    """:func:`arima_nowcast_batch`'s ``nowcasts`` frame (same arguments)."""
    return arima_nowcast_batch(targets, **kwargs).frame


def arima_nowcast_batch(
    targets: Sequence[tuple[str, date]],
    *,
    vintages: VintageStore,
    releases: pl.DataFrame | None = None,
    window_opens_at: Mapping[tuple[str, date], datetime] | None = None,
    partition_key: str | Mapping[tuple[str, date], str] | None = None,
    min_obs: int = MIN_OBS,
    p_max: int = P_MAX,
    q_max: int = Q_MAX,
    workers: int = 1,
    known: Mapping[str, Mapping[str, GridFit]] | None = None,
    progress: Mapping[str, Task] | None = None,
) -> NowcastBatch:
    """Auto-ARIMA nowcasts (LiveMacroEval App. I) for ``targets`` = ``[(indicator_id, reference_period),
    ...]``.

    For each target: ``issued_at`` = the window open (``window_opens_at[(id, period)]``, tz-aware; default
    :func:`leaf_live.macro.windows.window_open`, the 25th 00:00 New York of the target month); the
    information month is the target month (the quarter's last month for GDP), or the month of ``issued_at`` if
    that is earlier; the model is fitted on the vintage immediately preceding it among the stored vintages
    ``vintages`` (:class:`~leaf_live.macro.series_vintages.VintageStore` of the ``series_vintages`` table:
    FRED-MD, FRED-QD, real-time GDP), published by ``issued_at``; without it, the nearest earlier one, gap
    stated in ``rationale``.
    Indicators not in FRED-MD (ISM PMIs, existing and new home sales) use their first-release history
    (:func:`release_history`) from ``releases`` (the ``releases`` table) up to the same last month, released
    by ``issued_at``; without ``releases`` those targets get an invalid row saying so. The forecast reaches
    the target period ``h`` steps past the last observation and is converted to the reporting transformation.

    Returns a :class:`NowcastBatch` whose ``frame`` is a ``nowcasts`` frame (``schemas.NOWCASTS``), one row
    per target: ``model_id='baseline/auto-arima'``,
    ``value`` in the reporting unit, ``valid``; targets that get no forecast (fewer than ``min_obs``
    observations, no vintage, failed fit, guardrail) are rows with ``valid=False``, ``value`` NULL and
    ``invalid_reason``; ``source_variable`` = the FRED-MD/QD column (``CPIAUCSL``; ``PPIFGS`` in pre-2016
    vintages) or, for first-release histories, the indicator id; ``rationale`` = order, AIC, vintage, sample,
    horizon; ``available_at = issued_at``; ``partition_key`` = ``partition_key`` (one string, or per target)
    or the New York month of ``issued_at``. ``after_release`` is False (mark it with
    :func:`leaf_live.macro.windows.mark_after_release`).

    Fitting (:mod:`.engine`): the targets' histories are grouped into one chain per series in vintage
    order and fitted together, ``workers`` processes (one pool for the whole batch; 1 = in this process);
    ``known`` = ``{series_id: {content_hash: GridFit}}`` grids already fitted (a fit cache,
    :func:`.fit_cache.grids_from_frame`), reused. ``progress``: ``{'histories': task, 'fits': task}``
    (:class:`~leaf_live.core.progress.Task`), advanced per target prepared (closed when all are) and per
    history fitted (the fits task's total is set to the number of valid histories).

    Raises :class:`ValueError` (unknown indicator, bad period, naive timestamp); data problems never raise,
    they become invalid rows.
    """
    progress = progress or {}
    histories, fits = progress.get("histories"), progress.get("fits")
    prepared = prepare_targets(
        targets,
        vintages=vintages,
        releases=releases,
        window_opens_at=window_opens_at,
        partition_key=partition_key,
        min_obs=min_obs,
        progress=histories.advance if histories is not None else None,
    )
    results = [r for _, r in prepared]
    todo = [r for r in results if isinstance(r, PreparedTarget)]
    if histories is not None:
        histories.close()
    if fits is not None:
        fits.set_total(len(todo))
    fitted = dict(
        zip(
            map(id, todo),
            fit_prepared(
                todo,
                p_max=p_max,
                q_max=q_max,
                workers=workers,
                known=known,
                progress=fits.advance if fits is not None else None,
            ),
        )
    )
    grids = [fitted.get(id(r)) for r in results]
    rows = []
    for (pk, r), grid in zip(prepared, grids):
        nc = _finish(r, grid) if isinstance(r, PreparedTarget) and grid is not None else r
        rows.append(
            {
                "partition_key": pk,
                "model_id": MODEL_ID,
                "indicator_id": nc.indicator_id,
                "reference_period": nc.reference_period,
                "issued_at": nc.issued_at,
                "value": nc.value,
                "valid": nc.value is not None,
                "invalid_reason": nc.reason,
                "source_variable": nc.source_variable,
                "rationale": nc.rationale,
                "available_at": nc.issued_at,
            }
        )
    if not rows:
        return NowcastBatch(empty_frame("nowcasts"), prepared, grids)
    # The table's own types: inferring them from the first rows fails when those rows have no
    # invalid_reason (all NULL) and a later one has.
    table = polars_schema("nowcasts")
    frame = pl.DataFrame(rows, schema={c: table[c] for c in rows[0]})
    return NowcastBatch(build_nowcasts(frame), prepared, grids)


def window_targets(windows: pl.DataFrame) -> dict:
    """``targets``, ``window_opens_at`` and ``partition_key`` arguments of :func:`arima_nowcast_batch` for a
    ``nowcast_windows`` frame (``indicator_id, reference_period, opens_at, partition_key``): one nowcast per
    window, issued at ``opens_at``, in the window's partition. Raises :class:`ValueError` for missing columns.
    """
    need = ("indicator_id", "reference_period", "opens_at", "partition_key")
    require_columns(windows, need, "windows")
    targets, opens, pks = [], {}, {}
    for r in windows.select(need).iter_rows(named=True):
        key = (r["indicator_id"], r["reference_period"])
        targets.append(key)
        opens[key] = r["opens_at"]
        pks[key] = r["partition_key"]
    return {"targets": targets, "window_opens_at": opens, "partition_key": pks}


def arima_nowcasts_for_windows(windows: pl.DataFrame, **kwargs) -> pl.DataFrame:
    """:func:`arima_nowcasts` for a ``nowcast_windows`` frame (:func:`window_targets`)."""
    return arima_nowcasts(**window_targets(windows), **kwargs)


class AutoArima:
    """The App. I auto-ARIMA baseline under the forecaster contract (:mod:`leaf_live.core.forecaster`):
    ``forecast(windows)`` = :func:`arima_nowcasts_for_windows` on the stored vintages (``vintages``, a
    :class:`~leaf_live.macro.series_vintages.VintageStore` of the ``series_vintages`` table) and the
    ``releases`` table, all windows as one batch: each series fitted as one chain over its vintages, the
    chains spread over one pool of ``workers`` processes (:func:`.engine.fit_chains`; 1 = in this process);
    ``known`` is a fit cache (:mod:`.fit_cache`); ``progress`` maps ``'histories'`` / ``'fits'`` to progress
    tasks (:class:`~leaf_live.core.progress.Task`). Rows come back in partition order; ``last_batch`` keeps
    the batch's grids for writing the cache.
    """

    model_id = MODEL_ID

    def __init__(
        self,
        vintages: VintageStore,
        releases: pl.DataFrame | None,
        *,
        workers: int = 1,
        known: Mapping[str, Mapping[str, GridFit]] | None = None,
        progress: Mapping[str, Task] | None = None,
    ) -> None:
        self.vintages = vintages
        self.releases = releases
        self.workers = max(1, workers)
        self.known = known
        self.progress = progress
        self.last_batch: NowcastBatch | None = None

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        if tasks.height == 0:
            return empty_frame("nowcasts")
        require_columns(tasks, ("partition_key",), "windows")
        batch = arima_nowcast_batch(
            **window_targets(tasks.sort("partition_key")),
            vintages=self.vintages,
            releases=self.releases,
            workers=self.workers,
            known=self.known,
            progress=self.progress,
        )
        self.last_batch = batch
        return batch.frame
