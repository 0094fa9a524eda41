"""Information shocks and nowcast revisions (LiveMacroEval App. R, Section 4.5).

The case study: on April 8, 2026 between 10:30 (EIA Petroleum Status Report) and 14:00 ET (FOMC minutes)
GPT-5's March CPI nowcast cluster steps up by about 0.3 pp. Two equations:

* Eq. 15, the inventory accounting identity Delta I_t = Q_t + M_t - X_t - C_t (end-of-week gasoline
  inventories, refinery output, imports, exports, consumption): :func:`inventory_change`,
  :func:`implied_consumption` (the identity solved for the flow the report does not show) and
  :func:`surprises` (realized minus consensus, the paper's reading of the EIA report);
* Eq. 16, the component-contribution calculation R^H ~ s_g (pi_g,post - pi_g,pre): the revision of the
  headline nowcast over the event window divided by the component's expenditure share backs out the
  revision of the agent's latent component forecast (0.3 / 0.0289 = 10.4 pp in the paper, against a
  realized gasoline rate of 18.9% year over year).

:func:`revision_attribution` measures R^H on stored nowcasts: the median of the hourly nowcasts in the
``pre_hours`` before the window opens against the median of those in the ``post_hours`` after it closes
(never at or after the release), plus the last nowcast before and the first after the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.macro.analyses.series import (
    AnalysisError,
    hourly_series,
    is_comparator,
    models,
    table_frame,
    with_release,
)


def inventory_change(production: float, imports: float, exports: float, consumption: float) -> float:
    """Eq. 15: Delta I = Q + M - X - C (same unit and period for every flow, e.g. Mbbl per week)."""
    return production + imports - exports - consumption


def implied_consumption(delta_inventory: float, production: float, imports: float, exports: float) -> float:
    """Eq. 15 solved for consumption: C = Q + M - X - Delta I (the flow a weekly report leaves implicit)."""
    return production + imports - exports - delta_inventory


def surprises(realized: Mapping[str, float], consensus: Mapping[str, float]) -> dict[str, float]:
    """Realized minus consensus for every series in both mappings (App. R: gasoline stocks -1.589 against
    -1.400 Mbbl -> -0.189). Raises :class:`AnalysisError` when the keys differ."""
    if set(realized) != set(consensus):
        raise AnalysisError(
            f"surprises: realized series {sorted(realized)} != consensus series {sorted(consensus)}"
        )
    return {k: realized[k] - consensus[k] for k in realized}


def implied_component_revision(headline_revision: float, component_share: float) -> float:
    """Eq. 16 solved for the component: (pi_g,post - pi_g,pre) ~ R^H / s_g. ``component_share`` is a
    fraction in (0, 1] (gasoline in CPI: 0.0289). Raises :class:`AnalysisError` otherwise."""
    if not 0 < component_share <= 1:
        raise AnalysisError(f"component_share={component_share!r}: expected a fraction in (0, 1]")
    return headline_revision / component_share


@dataclass(frozen=True)
class RevisionEvent:
    """An event window [start, end) (UTC) and the component it is read through (Eq. 16)."""

    label: str
    indicator_id: str
    reference_period: date
    start: datetime
    end: datetime
    component: str
    component_share: float  # fraction of the headline index
    component_realized: float | None = None  # realized component rate, same unit as the nowcast
    pre_hours: float = 24.0
    post_hours: float = 24.0


# App. R: March 2026 CPI, April 8, 2026, 10:30-14:00 America/New_York; gasoline share 2.89%, realized 18.9%
# YoY
APP_R_EVENT = RevisionEvent(
    "app_r_cpi_2026_04_08",
    "cpi",
    date(2026, 3, 1),
    datetime(2026, 4, 8, 10, 30, tzinfo=pit.ET).astimezone(pit.UTC),
    datetime(2026, 4, 8, 14, 0, tzinfo=pit.ET).astimezone(pit.UTC),
    "gasoline",
    0.0289,
    18.9,
)


def revision_attribution(
    nowcasts: pl.DataFrame,
    releases: pl.DataFrame,
    events: Sequence[RevisionEvent] = (APP_R_EVENT,),
    *,
    model_ids: Sequence[str] | None = None,
) -> pl.DataFrame:
    """R^H and the Eq. 16 component revision per model (default every non-comparator model with nowcasts in
    both spans) and event.

    ``pre`` span [start - pre_hours, start), ``post`` span [end, end + post_hours) cut at the release, both
    of valid pre-release hourly nowcasts (:func:`.series.hourly_series`). ``revision`` = post median - pre
    median; ``step`` = first post nowcast - last pre nowcast; ``implied_component_revision`` = revision /
    component_share; ``component_ratio`` = that over the realized component rate. Returns the
    ``revision_attributions`` frame. Raises :class:`AnalysisError` for a window that ends before it starts,
    reaches the release, or has no release."""
    keep = (lambda m: m in set(model_ids)) if model_ids is not None else (lambda m: not is_comparator(m))
    hs = with_release(hourly_series(nowcasts), releases).filter(~pl.col("after_release"))
    hs = hs.filter(pl.col("model_id").is_in(models(hs, keep)))
    rows = []
    for ev in events:
        for t, name in ((ev.start, "start"), (ev.end, "end")):
            if t.tzinfo is None:
                raise AnalysisError(f"event {ev.label!r}: {name}={t!r} has no time zone")
        if ev.end < ev.start:
            raise AnalysisError(
                f"event {ev.label!r}: end {ev.end.isoformat()} is before start {ev.start.isoformat()}"
            )
        implied_component_revision(0.0, ev.component_share)  # validates the share
        g_all = hs.filter(
            (pl.col("indicator_id") == ev.indicator_id) & (pl.col("reference_period") == ev.reference_period)
        )
        if g_all.height == 0:
            continue
        release_at = g_all["release_at"][0]
        if ev.end >= release_at:
            raise AnalysisError(
                f"event {ev.label!r}: window ends at or after the release {release_at.isoformat()}"
            )
        pre_lo = ev.start - timedelta(hours=ev.pre_hours)
        post_hi = min(ev.end + timedelta(hours=ev.post_hours), release_at)
        for (m, run), g in g_all.group_by(["model_id", "run_id"], maintain_order=True):
            g = g.sort("issued_at")
            pre = g.filter((pl.col("issued_at") >= pre_lo) & (pl.col("issued_at") < ev.start))
            post = g.filter((pl.col("issued_at") >= ev.end) & (pl.col("issued_at") < post_hi))
            if pre.height == 0 or post.height == 0:
                continue
            inside = g.filter((pl.col("issued_at") >= ev.start) & (pl.col("issued_at") < ev.end))
            rev = float(np.median(post["value"].to_numpy()) - np.median(pre["value"].to_numpy()))
            comp = implied_component_revision(rev, ev.component_share)
            rows.append(
                {
                    "partition_key": m,
                    "model_id": m,
                    "run_id": run,
                    "event_label": ev.label,
                    "indicator_id": ev.indicator_id,
                    "reference_period": ev.reference_period,
                    "event_start": ev.start,
                    "event_end": ev.end,
                    "release_at": release_at,
                    "n_pre": pre.height,
                    "n_inside": inside.height,
                    "n_post": post.height,
                    "pre_median": float(np.median(pre["value"].to_numpy())),
                    "post_median": float(np.median(post["value"].to_numpy())),
                    "revision": rev,
                    "last_pre": pre["value"][-1],
                    "first_post": post["value"][0],
                    "step": post["value"][0] - pre["value"][-1],
                    "component": ev.component,
                    "component_share": ev.component_share,
                    "implied_component_revision": comp,
                    "component_realized": ev.component_realized,
                    "component_ratio": None if not ev.component_realized else comp / ev.component_realized,
                    "available_at": post["available_at"].max(),
                }
            )
    return table_frame("revision_attributions", rows)
