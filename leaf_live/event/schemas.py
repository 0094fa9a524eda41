"""Table schemas of the event track (LEAF), registered in the one schema registry
(:mod:`leaf_live.core.storage`) at import. One definition per table.

Partition conventions (the macro schemas' ``partition_key``): source tables by day (``YYYY-MM-DD``: the
session date of a daily bar, the UTC date of an hour's start), prediction markets by question id,
forecast tasks by cutoff day, forecasts and scores by ``model_id``. Every fact row carries ``available_at``
(UTC), the instant it became knowable; a task built at cutoff ``c`` reads only rows with
``available_at <= c``.
"""

from __future__ import annotations

from leaf_live.core.storage import AVAILABLE_AT, PARTITION_KEY, Table, register
from leaf_live.core.storage import col as _c

LEAF_TARGETS = register(Table(
    name="leaf_targets",
    doc="LEAF forecasting targets (App. C.2): 30 large caps, 40 mid caps, 10 commodity futures, 10 cities, "
    "3 electricity load areas.",
    grain="one row per (domain, target_id)",
    columns=(
        _c("domain", "VARCHAR", "large_cap | mid_cap | commodity | weather | electricity", False),
        _c("target_id", "VARCHAR", "ticker for markets, snake-case city / area otherwise", False),
        _c("name", "VARCHAR", "display name", False),
        _c("group_name", "VARCHAR", "sector (markets), region (weather), ISO (electricity)", False),
        _c("symbol", "VARCHAR", "Yahoo ticker (markets)"),
        _c("latitude", "DOUBLE", "degrees north (weather, App. C.2.3)"),
        _c("longitude", "DOUBLE", "degrees east (weather, App. C.2.3)"),
        _c("timezone", "VARCHAR", "IANA zone of the local day (daily min/peak, session dates)", False),
        _c("unit", "VARCHAR", "unit of the forecast value", False),
        _c("source_ids", "JSON", "provider ids, e.g. {\"eia930\": \"NYIS-ZONJ\"}", False),
    ),
    primary_key=("domain", "target_id"),
))

MARKET_PRICES = register(Table(
    name="market_prices",
    doc="Daily OHLCV bars of stocks and commodity futures (yfinance). ``close`` is on the newest adjustment "
    "basis of the series (see sources.markets: folder precedence and back-adjustment).",
    grain="one row per (symbol, session_date)",
    columns=(
        PARTITION_KEY,  # session date YYYY-MM-DD
        _c("symbol", "VARCHAR", "Yahoo ticker", False),
        _c("session_date", "DATE", "US trading session date", False),
        _c("open", "DOUBLE", "open, quote currency"),
        _c("high", "DOUBLE", "high"),
        _c("low", "DOUBLE", "low"),
        _c("close", "DOUBLE", "close, adjusted to the series' newest basis", False),
        _c("raw_close", "DOUBLE", "close as the source file gives it (Adj Close where the file has one)", False),
        _c("volume", "DOUBLE", "volume (shares / contracts)"),
        _c("source", "VARCHAR", "snapshot folder or 'yfinance'", False),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row in source_file (0 for live)", False),
        AVAILABLE_AT,  # session close: 16:00 New York (stocks), 17:00 New York (futures)
    ),
    partition_by=("partition_key",),
    primary_key=("symbol", "session_date"),
))

WEATHER_HOURLY = register(Table(
    name="weather_hourly",
    doc="Hourly weather per city in degC and UTC (Open-Meteo snapshot; meteostat or Open-Meteo live).",
    grain="one row per (city, ts)",
    columns=(
        PARTITION_KEY,  # UTC date of ts
        _c("city", "VARCHAR", "catalog weather target_id", False),
        _c("ts", "TIMESTAMPTZ", "start of the hour, UTC", False),
        _c("temperature_c", "DOUBLE", "2 m air temperature, degC", False),
        _c("relative_humidity", "DOUBLE", "2 m relative humidity, %"),
        _c("wind_speed_kmh", "DOUBLE", "10 m wind speed, km/h"),
        _c("source", "VARCHAR", "provider / snapshot folder", False),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row (0 for live)", False),
        AVAILABLE_AT,  # end of the hour (ts + 1 h)
    ),
    partition_by=("partition_key",),
    primary_key=("city", "ts"),
))

ELECTRICITY_LOAD = register(Table(
    name="electricity_load",
    doc="Hourly electricity load per area (MW): the mean of the hour's 5-minute readings (App. C.2.4) or the "
    "EIA-930 hourly demand (snapshot).",
    grain="one row per (area, interval_start)",
    columns=(
        PARTITION_KEY,  # UTC date of interval_start
        _c("area", "VARCHAR", "catalog electricity target_id", False),
        _c("interval_start", "TIMESTAMPTZ", "hour start, UTC", False),
        _c("interval_end", "TIMESTAMPTZ", "hour end, UTC (EIA-930 labels hours by their end)", False),
        _c("load_mw", "DOUBLE", "mean load over the hour, MW (EIA-930: cleaned demand)", False),
        _c("raw_load_mw", "DOUBLE", "EIA-930 raw demand before anomaly screening, MW"),
        _c("quality", "VARCHAR", "EIA-930 screening category (OKAY or anomaly class); n=<readings> live"),
        _c("source", "VARCHAR", "eia930_cleaned | gridstatus", False),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row (0 for live)", False),
        AVAILABLE_AT,  # interval_end
    ),
    partition_by=("partition_key",),
    primary_key=("area", "interval_start"),
))

PREDICTION_MARKETS = register(Table(
    name="prediction_markets",
    doc="Binary prediction-market questions (Polymarket via ForecastBench question sets, Polymarket FOMC "
    "markets). The outcome is not here: it is the 'resolution' row of market_price_path.",
    grain="one row per question_id",
    columns=(
        PARTITION_KEY,  # question_id
        _c("question_id", "VARCHAR", "Polymarket condition id (ForecastBench id) or '<event_slug>/<market>'", False),
        _c("source", "VARCHAR", "forecastbench | polymarket_fomc | polymarket_gamma", False),
        _c("question", "VARCHAR", "question text", False),
        _c("category", "VARCHAR", "economy_business | politics_world | tech_ai | other (C.2.5)", False),
        _c("background", "VARCHAR", "resolution criteria / background text"),
        _c("url", "VARCHAR", "market URL"),
        _c("open_at", "TIMESTAMPTZ", "market start (the 100% cutoff of §4.1)"),
        _c("close_at", "TIMESTAMPTZ", "scheduled market close"),
        _c("resolve_at", "TIMESTAMPTZ", "resolution time (NULL while unresolved)"),
        _c("source_file", "VARCHAR", "first file the question was read from", False),
        AVAILABLE_AT,  # when the question became knowable (market open / first set publication)
    ),
    partition_by=("partition_key",),
    primary_key=("question_id",),
))

MARKET_PRICE_PATH = register(Table(
    name="market_price_path",
    doc="YES-price path of each prediction-market question: trades, ForecastBench freeze values and the "
    "terminal resolution (price = outcome 0/1 at resolve time).",
    grain="one row per (question_id, observed_at, kind)",
    columns=(
        PARTITION_KEY,  # question_id
        _c("question_id", "VARCHAR", "prediction_markets.question_id", False),
        _c("observed_at", "TIMESTAMPTZ", "when the price held on the market (trade / freeze time)", False),
        _c("price", "DOUBLE", "YES probability in [0, 1]; the outcome for kind='resolution'", False),
        _c("kind", "VARCHAR", "trade | freeze | resolution", False),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row / question index", False),
        AVAILABLE_AT,  # trade: trade time; freeze: the question set's publication; resolution: resolve time
    ),
    partition_by=("partition_key",),
    primary_key=("question_id", "observed_at", "kind"),
))

FORECAST_TASKS = register(Table(
    name="forecast_tasks",
    doc="Forecast tasks (§3.1, §4.1): one per target x cutoff x horizon x task kind, with the frozen input "
    "bundle (exactly the rows with available_at <= cutoff the task may see) and its SHA-256.",
    grain="one row per task_id",
    columns=(
        PARTITION_KEY,  # cutoff day YYYY-MM-DD (UTC)
        _c("task_id", "VARCHAR", "domain/target/kind/horizon/cutoff", False),
        _c("domain", "VARCHAR", "large_cap | mid_cap | commodity | weather | electricity | event", False),
        _c("target_id", "VARCHAR", "catalog target_id or question_id", False),
        _c("task_kind", "VARCHAR", "series | trend3 | trend5 | event", False),
        _c("horizon", "VARCHAR", "1d 2d 3d 7d (days), 3mo 6mo (months), or the event cutoff label 100%..10%", False),
        _c("horizon_steps", "INTEGER", "forecast steps: sessions (daily markets), hours (weather/load), 1 (events)", False),
        _c("frequency", "VARCHAR", "session | hour | event", False),
        _c("cutoff", "TIMESTAMPTZ", "forecast issue time: inputs have available_at <= cutoff", False),
        _c("target_times", "TIMESTAMPTZ[]", "the instants (session closes / hour starts) the task forecasts", False),
        _c("last_value", "DOUBLE", "last observed value in the bundle (close, degC, MW, market price)"),
        _c("bundle", "JSON", "frozen input bundle: {series: [[time, value], ...], meta: {...}}", False),
        _c("bundle_hash", "VARCHAR", "sha256 of the bundle text", False),
        _c("max_input_available_at", "TIMESTAMPTZ", "latest available_at among the bundle's rows"),
        AVAILABLE_AT,  # = cutoff
    ),
    partition_by=("partition_key",),
    primary_key=("task_id",),
))

TASK_OUTCOMES = register(Table(
    name="task_outcomes",
    doc="Realised outcomes of forecast tasks, kept apart from the tasks (forecasters never see them): the "
    "target path, the trend change and class (App. C.1), the event outcome.",
    grain="one row per task_id",
    columns=(
        PARTITION_KEY,  # cutoff day (same as the task)
        _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
        _c("actual", "DOUBLE[]", "realised values at target_times (series) or the compared values (trend)"),
        _c("reference", "DOUBLE", "trend reference: x_T, previous-day min temperature or peak load"),
        _c("change", "DOUBLE", "trend change: rate of change (markets, fraction), dT (degC), dL (MW)"),
        _c("label", "VARCHAR", "trend class (3 or 5 classes by task_kind)"),
        _c("outcome", "DOUBLE", "event outcome 0/1"),
        AVAILABLE_AT,  # when the last needed value became knowable
    ),
    partition_by=("partition_key",),
    primary_key=("task_id",),
))

LEAF_FORECASTS = register(Table(
    name="leaf_forecasts",
    doc="Forecasts of every model (baselines, statistical and foundation models, LLMs) for forecast tasks.",
    grain="one row per (model_id, task_id)",
    columns=(
        PARTITION_KEY,  # model_id
        _c("model_id", "VARCHAR", "baseline/last-value, baseline/auto-ets, market/polymarket, provider/model@design ...", False),
        _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
        _c("bundle_hash", "VARCHAR", "hash of the bundle the forecast was made from", False),
        _c("issued_at", "TIMESTAMPTZ", "when the forecast was issued (the task cutoff for baselines)", False),
        _c("valid", "BOOLEAN", "the answer could be parsed and used", False),
        _c("invalid_reason", "VARCHAR", "why not (NULL when valid)"),
        _c("point", "DOUBLE[]", "series: point forecast per target time"),
        _c("quantiles", "JSON", "series: {\"0.025\": [...], \"0.1\": [...], \"0.9\": [...], \"0.975\": [...]}"),
        _c("predicted_class", "VARCHAR", "trend: one of the task's classes"),
        _c("probability", "DOUBLE", "event: P(YES)"),
        AVAILABLE_AT,  # = issued_at
    ),
    partition_by=("partition_key",),
    primary_key=("model_id", "task_id"),
))

LEAF_SCORES = register(Table(
    name="leaf_scores",
    doc="Per-task scores of each forecast (§4.1 metrics plus CRPS / quantile loss / interval coverage).",
    grain="one row per (model_id, task_id, metric)",
    columns=(
        PARTITION_KEY,  # model_id
        _c("model_id", "VARCHAR", "leaf_forecasts.model_id", False),
        _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
        _c("domain", "VARCHAR", "task domain", False),
        _c("task_kind", "VARCHAR", "series | trend3 | trend5 | event", False),
        _c("horizon", "VARCHAR", "task horizon label", False),
        _c("target_id", "VARCHAR", "task target (question id for events)", False),
        _c("metric", "VARCHAR", "accuracy | mape | se | dlv | mae_z | mse_z | brier | crps | qloss | cover80 | cover95", False),
        _c("value", "DOUBLE", "per-task value (mape and dlv in %, rmse = sqrt(mean(se)))", False),
        AVAILABLE_AT,  # when the outcome needed for the score became known
    ),
    partition_by=("partition_key",),
    primary_key=("model_id", "task_id", "metric"),
))
