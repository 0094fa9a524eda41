"""Macro track, blocking asset checks on every table a score reads (DESIGN.md principle 1).

Each check is ``blocking=True``: when it fails, nothing downstream of its asset materializes in that run
(the scores, the dbt leaderboard), and ``leaf-live run`` names the failed check and stops. Four kinds:

* point in time: no nowcast the scorer accepts (valid, not flagged ``after_release``) is issued at or after
  its window's close, i.e. the release (LiveMacroEval §3.4); LiveBetting bets are in
  ``macro_scoring.bets_before_release``; events are knowable no earlier than their release
  (``macro_releases.surprise_events_point_in_time``);
* one row per key: the primary key (or, for tables without one, the grain) of every table a score reads;
* values within the catalog guardrails (Table 2 scale guardrails): valid nowcasts and released actual /
  consensus; prices are probabilities; surprise scales are positive;
* the fit a score uses exists: every named fit and every score's ``fit_id`` has its 16 rows in
  ``market_betas``.

Wiring only: each check is one SQL query over the DuckDB tables (``assets.common.sql_check``).
"""

from __future__ import annotations

from dagster import AssetChecksDefinition, AssetKey

from assets.common import sql_check, unique_key_check
from assets.macro_nowcasts import (
    arima_nowcasts,
    comparator_nowcasts,
    llm_nowcasts,
    nowcast_windows,
    recorded_nowcasts,
    series_vintages,
)
from assets.macro_releases import (
    announcement_returns,
    indicator_catalog,
    releases,
    surprise_events,
    surprise_scales,
)
from assets.macro_scoring import market_betas, prediction_market_prices
from leaf_live.core import storage
from leaf_live.macro.catalog import INDICATOR_IDS


def nowcast_checks(asset, producer: str) -> list[AssetChecksDefinition]:
    """The checks on ``producer``'s slice of ``nowcasts``: point in time, within guardrails, one row per
    key."""
    return [
        sql_check(
            asset,
            f"{producer}_before_release",
            f"Point in time: every {producer} nowcast the scorer accepts (valid, not after_release) was"
            " issued before its window closed at the release.",
            "SELECT n.model_id, n.indicator_id, n.reference_period, n.issued_at, w.closes_at FROM nowcasts n "
            "JOIN nowcast_windows w USING (indicator_id, reference_period) WHERE n.producer = ? AND n.valid "
            "AND NOT n.after_release AND n.issued_at >= w.closes_at",
            [producer],
        ),
        sql_check(
            asset,
            f"{producer}_within_guardrails",
            f"Every valid {producer} nowcast has a value within its catalog indicator's guardrail "
            "(LiveMacroEval Table 2) in the reporting unit.",
            "SELECT n.model_id, n.indicator_id, n.issued_at, n.value FROM nowcasts n LEFT JOIN"
            " indicator_catalog c USING (indicator_id) WHERE n.producer = ? AND n.valid AND (c.indicator_id"
            " IS NULL OR n.value IS NULL OR n.value < c.guardrail_lo OR n.value > c.guardrail_hi)",
            [producer],
        ),
        unique_key_check(
            asset,
            "nowcasts",
            ("partition_key", "model_id", "indicator_id", "reference_period", "issued_at"),
            producer=producer,
        ),
    ]


def fit_used_exists(key: str) -> AssetChecksDefinition:
    """Every ``fit_id`` of table/asset ``key`` has rows in ``market_betas``."""
    return sql_check(
        AssetKey(key),
        f"{key}_fit_exists",
        f"Every fit_id in {key} exists in market_betas.",
        f'SELECT DISTINCT fit_id FROM "{key}" WHERE fit_id IS NOT NULL '
        "AND fit_id NOT IN (SELECT fit_id FROM market_betas)",
    )


def _registry_key(table: str) -> tuple[str, ...]:
    key = storage.get_table(table).primary_key
    if not key:
        raise ValueError(f"table {table} has no primary key in the schema registry; give the key explicitly")
    return key


N = len(INDICATOR_IDS)
MACRO_CHECKS = [
    unique_key_check(indicator_catalog, "indicator_catalog", _registry_key("indicator_catalog")),
    unique_key_check(releases, "releases", _registry_key("releases")),
    sql_check(
        releases,
        "releases_within_guardrails",
        "Every first release's actual and consensus lie within its "
        "indicator's catalog guardrail (reporting unit), and the indicator is in the catalog.",
        "SELECT r.indicator_id, r.reference_period, r.actual, r.consensus FROM releases r LEFT JOIN "
        "indicator_catalog c USING (indicator_id) WHERE c.indicator_id IS NULL OR r.actual NOT BETWEEN "
        "c.guardrail_lo AND c.guardrail_hi OR r.consensus NOT BETWEEN c.guardrail_lo AND c.guardrail_hi",
    ),
    unique_key_check(announcement_returns, "announcement_returns", _registry_key("announcement_returns")),
    unique_key_check(surprise_scales, "surprise_scales", _registry_key("surprise_scales")),
    sql_check(
        surprise_scales,
        "surprise_scales_positive",
        "sigma_i > 0 for every indicator (S = (A - C)/sigma_i divides by it, App. K.1 Eq. 3).",
        "SELECT indicator_id, sigma FROM surprise_scales WHERE NOT (sigma > 0)",
    ),
    unique_key_check(surprise_events, "surprise_events", _registry_key("surprise_events")),
    unique_key_check(nowcast_windows, "nowcast_windows", ("indicator_id", "reference_period")),
    unique_key_check(series_vintages, "series_vintages", _registry_key("series_vintages")),
    sql_check(
        series_vintages,
        "series_vintages_published_after_their_data",
        "Point in time: every vintage is available only after the last period it observes has ended (a month,"
        " or a quarter for FRED-QD and real-time GDP).",
        "SELECT source, series_id, vintage, max(reference_period) AS last_period, min(available_at) AS"
        " first_seen FROM series_vintages GROUP BY ALL HAVING min(available_at) < max(reference_period) +"
        " CASE WHEN source = 'fred-md' THEN INTERVAL 1 MONTH ELSE INTERVAL 3 MONTH END",
    ),
    *nowcast_checks(recorded_nowcasts, "recorded_nowcasts"),
    *nowcast_checks(comparator_nowcasts, "comparator_nowcasts"),
    *nowcast_checks(arima_nowcasts, "arima_nowcasts"),
    *nowcast_checks(llm_nowcasts, "llm_nowcasts"),
    unique_key_check(
        prediction_market_prices, "prediction_market_prices", ("source", "market_id", "bucket_label", "ts")
    ),
    sql_check(
        prediction_market_prices,
        "prices_are_probabilities",
        "Every bucket price is a probability in [0, 1].",
        "SELECT market_id, bucket_label, ts, price FROM prediction_market_prices "
        "WHERE price IS NULL OR price < 0 OR price > 1",
    ),
    unique_key_check(market_betas, "market_betas", _registry_key("market_betas")),
    unique_key_check(market_betas, "market_beta_fits", _registry_key("market_beta_fits")),
    sql_check(
        market_betas,
        "named_fits_exist",
        f"Every named fit (market_beta_fits) points at a fit_id with its {N} "
        f"rows in market_betas, positions 0..{N - 1}.",
        "SELECT f.fit_name, f.fit_id, count(b.fit_id) AS n_rows FROM market_beta_fits f LEFT JOIN"
        f" market_betas b USING (fit_id) GROUP BY ALL HAVING n_rows <> {N} OR count(DISTINCT b.position)"
        f" <> {N}",
    ),
    fit_used_exists("livemacro_scores"),
    fit_used_exists("score_decompositions"),
    unique_key_check(AssetKey("livemacro_scores"), "livemacro_scores", _registry_key("livemacro_scores")),
]
