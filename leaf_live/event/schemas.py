"""Table schemas of the event track (LEAF), registered in the one schema registry
(:mod:`leaf_live.core.storage`) at import. One definition per table.

Partition conventions (the macro schemas' ``partition_key``): source tables by day (``YYYY-MM-DD``: the
session date of a daily bar, the UTC date of an hour's start), prediction markets by question id,
forecast tasks by cutoff day (series and trend tasks) or by question id (event tasks: their cutoffs are
fractions of the time to resolution, known once the question resolves), forecasts by ``(producer, model_id)``
like the macro ``nowcasts``, scores by ``model_id``. Every fact row carries ``available_at``
(UTC), the instant it became knowable; a task built at cutoff ``c`` reads only rows with
``available_at <= c``.
"""

from __future__ import annotations

from leaf_live.core.llm import LLM_CALLS
from leaf_live.core.storage import AVAILABLE_AT, PARTITION_KEY, Table, register
from leaf_live.core.storage import col as _c

LEAF_TARGETS = register(
    Table(
        name="leaf_targets",
        doc=(
            "LEAF forecasting targets (App. C.2): 30 large caps, 40 mid caps, 10 commodity futures, 10"
            " cities, 3 electricity load areas; and the 20 other large caps of the recorded SEER case."
        ),
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
            _c("source_ids", "JSON", 'provider ids, e.g. {"eia930": "NYIS-ZONJ"}', False),
        ),
        primary_key=("domain", "target_id"),
    )
)

MARKET_PRICES = register(
    Table(
        name="market_prices",
        doc=(
            "Daily OHLCV bars of stocks and commodity futures (yfinance). ``close`` is on the newest"
            " adjustment basis of the series (see sources.markets: folder precedence and back-adjustment)."
        ),
        grain="one row per (symbol, session_date)",
        columns=(
            PARTITION_KEY,  # session date YYYY-MM-DD
            _c("symbol", "VARCHAR", "Yahoo ticker", False),
            _c("session_date", "DATE", "US trading session date", False),
            _c("open", "DOUBLE", "open, quote currency"),
            _c("high", "DOUBLE", "high"),
            _c("low", "DOUBLE", "low"),
            _c("close", "DOUBLE", "close, adjusted to the series' newest basis", False),
            _c(
                "raw_close",
                "DOUBLE",
                "close as the source file gives it (Adj Close where the file has one)",
                False,
            ),
            _c("volume", "DOUBLE", "volume (shares / contracts)"),
            _c("source", "VARCHAR", "snapshot folder or 'yfinance'", False),
            _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
            _c("source_row", "INTEGER", "1-based data row in source_file (0 for live)", False),
            AVAILABLE_AT,  # session close: 16:00 New York (stocks), 17:00 New York (futures)
        ),
        partition_by=("partition_key",),
        primary_key=("symbol", "session_date"),
    )
)

WEATHER_HOURLY = register(
    Table(
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
    )
)

ELECTRICITY_LOAD = register(
    Table(
        name="electricity_load",
        doc=(
            "Hourly electricity load per area (MW): the mean of the hour's 5-minute readings (App. C.2.4) or"
            " the EIA-930 hourly demand (snapshot)."
        ),
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
    )
)

PREDICTION_MARKETS = register(
    Table(
        name="prediction_markets",
        doc=(
            "Binary prediction-market questions (Polymarket via ForecastBench question sets, Polymarket FOMC "
            "markets). The outcome is not here: it is the 'resolution' row of market_price_path."
        ),
        grain="one row per question_id",
        columns=(
            PARTITION_KEY,  # question_id
            _c(
                "question_id",
                "VARCHAR",
                "Polymarket condition id (ForecastBench id) or '<event_slug>/<market>'",
                False,
            ),
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
    )
)

MARKET_PRICE_PATH = register(
    Table(
        name="market_price_path",
        doc=(
            "YES-price path of each prediction-market question: trades, ForecastBench freeze values and the "
            "terminal resolution (price = outcome 0/1 at resolve time)."
        ),
        grain="one row per (question_id, observed_at, kind)",
        columns=(
            PARTITION_KEY,  # question_id
            _c("question_id", "VARCHAR", "prediction_markets.question_id", False),
            _c(
                "observed_at", "TIMESTAMPTZ", "when the price held on the market (trade / freeze time)", False
            ),
            _c("price", "DOUBLE", "YES probability in [0, 1]; the outcome for kind='resolution'", False),
            _c("kind", "VARCHAR", "trade | freeze | resolution", False),
            _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
            _c("source_row", "INTEGER", "1-based data row / question index", False),
            # trade: trade time; freeze: the question set's publication; resolution: resolve time
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("question_id", "observed_at", "kind"),
    )
)

FORECAST_TASKS = register(
    Table(
        name="forecast_tasks",
        doc=(
            "Forecast tasks (§3.1, §4.1): one per target x cutoff x horizon x task kind, with the frozen"
            " input bundle (exactly the rows with available_at <= cutoff the task may see) and its SHA-256."
        ),
        grain="one row per task_id",
        columns=(
            PARTITION_KEY,  # cutoff day YYYY-MM-DD (UTC); question_id for event tasks
            _c("task_id", "VARCHAR", "domain/target/kind/horizon/cutoff", False),
            _c("domain", "VARCHAR", "large_cap | mid_cap | commodity | weather | electricity | event", False),
            _c("target_id", "VARCHAR", "catalog target_id or question_id", False),
            _c("task_kind", "VARCHAR", "series | trend3 | trend5 | event", False),
            _c(
                "horizon",
                "VARCHAR",
                "1d 2d 3d 7d (days), 3mo 6mo (months), or the event cutoff label 100%..10%",
                False,
            ),
            _c(
                "horizon_steps",
                "INTEGER",
                "forecast steps: sessions (daily markets), hours (weather/load), 1 (events)",
                False,
            ),
            _c("frequency", "VARCHAR", "session | hour | event", False),
            _c("cutoff", "TIMESTAMPTZ", "forecast issue time: inputs have available_at <= cutoff", False),
            _c(
                "target_times",
                "TIMESTAMPTZ[]",
                "the instants (session closes / hour starts) the task forecasts",
                False,
            ),
            _c("last_value", "DOUBLE", "last observed value in the bundle (close, degC, MW, market price)"),
            _c(
                "last_value_age_days",
                "DOUBLE",
                "event tasks: days from the last market price's observation to the cutoff (older than"
                " tasks.PRICE_MAX_AGE_DAYS = 7: stale, not the price at the cutoff); NULL otherwise",
            ),
            _c("bundle", "JSON", "frozen input bundle: {series: [[time, value], ...], meta: {...}}", False),
            _c("bundle_hash", "VARCHAR", "sha256 of the bundle text", False),
            _c(
                "max_input_available_at",
                "TIMESTAMPTZ",
                "latest available_at among the bundle's rows (event tasks: the question's too)",
            ),
            AVAILABLE_AT,  # = cutoff
        ),
        partition_by=("partition_key",),
        primary_key=("task_id",),
    )
)

TASK_OUTCOMES = register(
    Table(
        name="task_outcomes",
        doc=(
            "Realised outcomes of forecast tasks, kept apart from the tasks (forecasters never see them): the"
            " target path, the trend change and class (App. C.1), the event outcome."
        ),
        grain="one row per task_id",
        columns=(
            PARTITION_KEY,  # same as the task
            _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
            _c(
                "actual",
                "DOUBLE[]",
                "realised values at target_times (series) or the compared values (trend)",
            ),
            _c("reference", "DOUBLE", "trend reference: x_T, previous-day min temperature or peak load"),
            _c("change", "DOUBLE", "trend change: rate of change (markets, fraction), dT (degC), dL (MW)"),
            _c("label", "VARCHAR", "trend class (3 or 5 classes by task_kind)"),
            _c("outcome", "DOUBLE", "event outcome 0/1"),
            AVAILABLE_AT,  # when the last needed value became knowable
        ),
        partition_by=("partition_key",),
        primary_key=("task_id",),
    )
)

LEAF_FORECASTS = register(
    Table(
        name="leaf_forecasts",
        doc=(
            "Forecasts of every model (baselines, statistical and foundation models, LLMs) for forecast"
            " tasks."
        ),
        grain="one row per (model_id, task_id)",
        columns=(
            _c(
                "producer",
                "VARCHAR",
                "asset that wrote the row (leaf_forecasts = the baselines; the LLM forecasters their own)",
                False,
            ),
            # model_id (baselines); llm:<cutoff day> (LLM rows, so a one-day backfill replaces one day)
            PARTITION_KEY,
            _c(
                "model_id",
                "VARCHAR",
                "baseline/last-value, baseline/auto-ets, market/polymarket,"
                " provider/model@design:<context> ...",
                False,
            ),
            _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
            _c("bundle_hash", "VARCHAR", "hash of the bundle the forecast was made from", False),
            _c(
                "issued_at",
                "TIMESTAMPTZ",
                "when the forecast was issued (the task cutoff for baselines)",
                False,
            ),
            _c("valid", "BOOLEAN", "the answer could be parsed and used", False),
            _c("invalid_reason", "VARCHAR", "why not (NULL when valid)"),
            _c("point", "DOUBLE[]", "series: point forecast per target time"),
            _c("quantiles", "JSON", 'series: {"0.025": [...], "0.1": [...], "0.9": [...], "0.975": [...]}'),
            _c("predicted_class", "VARCHAR", "trend: one of the task's classes"),
            _c("probability", "DOUBLE", "event: P(YES)"),
            _c(
                "context_kind",
                "VARCHAR",
                "LLM rows: ts (series only) | events | events_unfiltered | alpha=<a> | "
                "other_alpha=<a> (NULL for non-LLM models)",
            ),
            _c(
                "context",
                "JSON",
                "LLM rows: the frozen context besides the task bundle (bundle_hash): the events given "
                "[{event_id, date, description, sentiment}], their cutoff and source table",
            ),
            _c(
                "context_hash",
                "VARCHAR",
                "sha256 of the task bundle text + context text (what the prompt was built from)",
            ),
            _c("n_trials", "INTEGER", "LLM rows: trials run (§4.1: 3)"),
            _c("n_valid_trials", "INTEGER", "LLM rows: trials that parsed; the row averages them"),
            AVAILABLE_AT,  # = issued_at
        ),
        partition_by=("producer", "partition_key"),
        primary_key=("model_id", "task_id"),
    )
)

LEAF_SCORES = register(
    Table(
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
            _c(
                "metric",
                "VARCHAR",
                "accuracy | mape | se | dlv | mae_z | mse_z | brier | crps | qloss | cover80 | cover95",
                False,
            ),
            _c("value", "DOUBLE", "per-task value (mape and dlv in %, rmse = sqrt(mean(se)))", False),
            AVAILABLE_AT,  # when the outcome needed for the score became known
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "task_id", "metric"),
    )
)

EVENT_RANKINGS = register(
    Table(
        name="event_rankings",
        doc=(
            "Coverage-robust event-track boards (issue 16; leaf_live.event.rankings): per (domain, task kind,"
            " horizon, metric) of leaf_scores, and per domain one pooled headline board (horizon 'all'), the"
            " two-way fixed-effects ranking of leaf_live.core.ranking (ForecastBench's difficulty adjustment)"
            " of the per-task loss, each model on its own tasks, on the skill scale 1 - L/L_ref against the"
            " reference (baseline/last-value for series and trend tasks, the market price for event"
            " questions), with a cluster bootstrap (cutoff dates within the domain; questions for event"
            " questions) that re-estimates the effects in every replicate. Models with fewer than min_tasks"
            " tasks are listed (n_tasks) but not ranked. The common-set view (over the ranked models only) is"
            " a ranking only where common_view_ok."
        ),
        grain="one row per (domain, task_kind, horizon, metric, model_id)",
        columns=(
            PARTITION_KEY,  # domain
            _c(
                "domain",
                "VARCHAR",
                "task domain (the SEER case day's large caps: 'large_cap case <day>')",
                False,
            ),
            _c("task_kind", "VARCHAR", "series | trend3 | trend5 | event", False),
            _c("horizon", "VARCHAR", "task horizon label; 'all' = the domain's pooled headline board", False),
            _c("metric", "VARCHAR", "leaf_scores.metric the board ranks", False),
            _c(
                "headline",
                "BOOLEAN",
                "the domain's headline board (every horizon of its headline metric)",
                False,
            ),
            _c(
                "loss",
                "VARCHAR",
                "per-task loss ranked: 1 - accuracy | rmse^2 | the metric itself (lower is better)",
                False,
            ),
            _c("scale", "VARCHAR", "skill: 1 - L_m / L_ref (higher is better, 0 = the reference)", False),
            _c("cluster_by", "VARCHAR", "bootstrap clusters: cutoff date (UTC day) | question", False),
            _c("model_id", "VARCHAR", "model", False),
            _c("reference_model_id", "VARCHAR", "the reference model (score 0)", False),
            _c(
                "n_tasks", "INTEGER", "the model's own tasks on the board (tasks the reference scored)", False
            ),
            _c("n_tasks_board", "INTEGER", "tasks of the board (the reference's)", False),
            _c("n_clusters", "INTEGER", "bootstrap clusters of the board", False),
            _c(
                "n_dropped",
                "INTEGER",
                "score rows of the board on tasks the reference did not score (left out)",
                False,
            ),
            _c("ranked_note", "VARCHAR", "why the board is not ranked (NULL when it is)"),
            _c("min_tasks", "INTEGER", "fewest own tasks a model needs to be ranked", False),
            _c(
                "reference_stale_n",
                "INTEGER",
                "event questions: tasks of the board whose reference market price is older than"
                " tasks.PRICE_MAX_AGE_DAYS (7) at the cutoff (stale: not the price at the cutoff); NULL else",
            ),
            _c("ranked", "BOOLEAN", "the model has min_tasks tasks, is not discarded, and is ranked", False),
            _c(
                "discarded",
                "BOOLEAN",
                "over 1/3 of the model's LLM outputs invalid (forecasters.discard_report, §4.1): listed with"
                " its n and invalid share, never ranked",
                False,
            ),
            _c(
                "invalid_share",
                "DOUBLE",
                "share of the model's LLM outputs (trials) invalid; NULL without trials",
            ),
            _c("rank", "INTEGER", "rank by score among the ranked models (1 = best; ties share a rank)"),
            _c(
                "score",
                "DOUBLE",
                "difficulty-adjusted skill score 1 - L/L_ref, L = the model's difficulty-adjusted mean loss"
                " on every task of the board; higher is better, 0 = the reference, at most 1",
            ),
            _c("ci90_lo", "DOUBLE", "5th percentile of the score over the cluster-bootstrap replicates"),
            _c("ci90_hi", "DOUBLE", "95th percentile"),
            _c("p_rank1", "DOUBLE", "share of replicates in which the model is the best ranked model"),
            _c("diff_ci90_lo", "DOUBLE", "paired interval of score - reference score (0), 5th percentile"),
            _c("diff_ci90_hi", "DOUBLE", "paired interval, 95th percentile"),
            _c("p_better", "DOUBLE", "share of replicates with a score above the reference's"),
            _c("effect", "DOUBLE", "model fixed effect minus the reference's, loss units per task"),
            _c("level", "DOUBLE", "difficulty-adjusted mean loss per task (loss units)"),
            _c(
                "adj_value",
                "DOUBLE",
                "the level in the metric's units (accuracy: 1 - level; rmse: sqrt(level))",
            ),
            _c(
                "own_value",
                "DOUBLE",
                "plain metric on the model's own tasks (mean; rmse: sqrt(mean(rmse^2)))",
            ),
            _c(
                "max_task_share", "DOUBLE", "largest single-task share of the model's total loss on the board"
            ),
            _c("max_task_id", "VARCHAR", "that task"),
            _c("max_task_flag", "BOOLEAN", "max_task_share above 50%"),
            _c("common_n", "INTEGER", "tasks every ranked model of the board scored"),
            _c("common_value", "DOUBLE", "plain metric on those tasks (NULL when the view is not shown)"),
            _c("common_rank", "INTEGER", "rank on the common set by the plain metric (NULL when not shown)"),
            _c(
                "common_view_ok",
                "BOOLEAN",
                "the common set holds at least half of every ranked model's tasks: shown as a ranking",
                False,
            ),
            _c("common_view_note", "VARCHAR", "why the common-set view is not a ranking"),
            _c("n_boot", "INTEGER", "bootstrap replicates", False),
            _c("boot_seed", "BIGINT", "seed of the replicates", False),
            AVAILABLE_AT,  # when the ranking was computed
        ),
        partition_by=("partition_key",),
        primary_key=("domain", "task_kind", "horizon", "metric", "model_id"),
    )
)

# ------------------------------------------------------------------------------------------------
# Issue 11: retrieval agent, dual fact-check, LLM forecasts, analyses (LEAF §3.2, §4.2-4.5)
# ------------------------------------------------------------------------------------------------

# Every LLM call of the event track lands in the one call table (defined in core, shared with macro).
register(LLM_CALLS)

RETRIEVED_EVENTS = register(
    Table(
        name="retrieved_events",
        doc=(
            "Events a retrieval agent returned for a target and interval (LEAF §3.2, Fig. 7): one row per"
            " item of each search round, valid or invalid with its reason; an answer that failed as a whole"
            " is one invalid row (item 0). Recorded transcripts (retriever recorded/seer) are imported here"
            " too."
        ),
        grain="one row per event_id",
        columns=(
            PARTITION_KEY,  # "<interval_start>|<target_id>" (day or week x target)
            _c(
                "event_id",
                "VARCHAR",
                "sha256[:16] of retriever, target, claimed date and normalised description "
                "(invalid rows: of call and item)",
                False,
            ),
            _c(
                "retriever",
                "VARCHAR",
                "provider/model@design of the agent, offline/<model> (document store) or recorded/seer",
                False,
            ),
            _c("backend", "VARCHAR", "web_search | offline_store | recorded", False),
            _c("domain", "VARCHAR", "large_cap | mid_cap | commodity | weather | electricity | event", False),
            _c("target_id", "VARCHAR", "catalog target_id or question_id", False),
            _c("interval_start", "DATE", "first day searched", False),
            _c("interval_end", "DATE", "last day searched (the retrieval cutoff day)", False),
            _c("round", "INTEGER", "search round (1-based; later rounds saw the earlier events)", False),
            _c(
                "item",
                "INTEGER",
                "position in the round's answer (1-based; 0 = the whole answer failed)",
                False,
            ),
            _c("event_date", "DATE", "date the agent claims for the event"),
            _c("description", "VARCHAR", "event text (citation markers removed for recorded rows)"),
            _c("causality", "VARCHAR", "why the event moves the target (agent's rationale)"),
            _c("sentiment", "VARCHAR", "Positive | Negative | Neutral"),
            _c("impact_type", "VARCHAR", "Direct | Indirect | Neutral"),
            _c("sources", "JSON", "sources the agent named (URLs or document ids)"),
            _c("citations", "JSON", "provider citations of the call ([{url, title}])"),
            _c("weekend", "BOOLEAN", "event_date falls on a Saturday or Sunday (kept, flagged)"),
            _c("call_id", "VARCHAR", "llm_calls.call_id of the round (NULL for recorded rows)"),
            _c("valid", "BOOLEAN", "the item parsed into a complete event", False),
            _c("invalid_reason", "VARCHAR", "code: detail (NULL when valid)"),
            AVAILABLE_AT,  # the round's completion time (recorded: the forecast cutoff the transcript served)
        ),
        partition_by=("partition_key",),
        primary_key=("event_id",),
    )
)

EVENT_MERGES = register(
    Table(
        name="event_merges",
        doc=(
            "Near-duplicate events merged into one (restatements of one fact, e.g. SEER's ~26 ADBE items on"
            " one CEO change): the merged event, the event it was merged into, their similarity and the rule."
        ),
        grain="one row per merged event_id",
        columns=(
            PARTITION_KEY,  # as retrieved_events
            _c("event_id", "VARCHAR", "retrieved_events.event_id merged away", False),
            _c("into_event_id", "VARCHAR", "the representative kept (earliest of its group)", False),
            _c("target_id", "VARCHAR", "target of both events", False),
            _c(
                "similarity",
                "DOUBLE",
                "overlap coefficient of content-word sets, |A n B| / min(|A|, |B|)",
                False,
            ),
            _c("days_apart", "INTEGER", "event_date difference in days", False),
            _c("rule", "VARCHAR", "merge rule and thresholds", False),
            AVAILABLE_AT,  # the later of the two events' available_at
        ),
        partition_by=("partition_key",),
        primary_key=("event_id",),
    )
)

FACT_CHECKS = register(
    Table(
        name="fact_checks",
        doc=(
            "One fact-checking agent's verdict on one event (LEAF §3.2, Fig. 8/19): factual or not and the"
            " realisation date (when the latest detail became public), with reasoning and citations; invalid"
            " answers keep their reason."
        ),
        grain="one row per (event_id, checker_slot)",
        columns=(
            PARTITION_KEY,  # as the event's
            _c("event_id", "VARCHAR", "retrieved_events.event_id", False),
            _c("checker_slot", "VARCHAR", "a | b (two independent checkers on different models)", False),
            _c("checker", "VARCHAR", "provider/model@design of the checker", False),
            _c("factual", "BOOLEAN", "the checker's factual verdict (NULL when invalid)"),
            _c(
                "realization_date",
                "DATE",
                "date the latest detail became public (NULL when invalid or not factual)",
            ),
            _c("reasoning", "VARCHAR", "the checker's stated reasoning"),
            _c("citations", "JSON", "provider citations ([{url, title}])"),
            _c("call_id", "VARCHAR", "llm_calls.call_id"),
            _c("valid", "BOOLEAN", "the answer parsed", False),
            _c("invalid_reason", "VARCHAR", "code: detail (NULL when valid)"),
            AVAILABLE_AT,  # the check's completion time
        ),
        partition_by=("partition_key",),
        primary_key=("event_id", "checker_slot"),
    )
)

FACT_CHECKED_EVENTS = register(
    Table(
        name="fact_checked_events",
        doc=(
            "Every checked event with the dual-check decision (LEAF §3.2): kept only if both checkers say"
            " factual, their realisation dates agree and that date is not after the cutoff; otherwise the"
            " drop reason. Bundles read kept rows with event_date <= the task cutoff and available_at <= the"
            " cutoff."
        ),
        grain="one row per event_id",
        columns=(
            PARTITION_KEY,  # as retrieved_events
            _c("event_id", "VARCHAR", "retrieved_events.event_id", False),
            _c("retriever", "VARCHAR", "retrieved_events.retriever", False),
            _c("domain", "VARCHAR", "target domain", False),
            _c("target_id", "VARCHAR", "target", False),
            _c("event_date", "DATE", "the agreed realisation date (recorded: the file's date)"),
            _c("claimed_date", "DATE", "the date the retrieval agent claimed"),
            _c("description", "VARCHAR", "event text", False),
            _c("sentiment", "VARCHAR", "Positive | Negative | Neutral"),
            _c("impact_type", "VARCHAR", "Direct | Indirect | Neutral"),
            _c("weekend", "BOOLEAN", "event_date on a weekend"),
            _c(
                "check_mode",
                "VARCHAR",
                "dual (two checkers) | recorded (passed the source's own filter)",
                False,
            ),
            _c("checker_a", "VARCHAR", "model of checker a (NULL for recorded)"),
            _c("checker_b", "VARCHAR", "model of checker b (NULL for recorded)"),
            _c(
                "cutoff",
                "TIMESTAMPTZ",
                "the instant the date was checked against (end of the retrieval interval)",
                False,
            ),
            _c("kept", "BOOLEAN", "passes the keep rule", False),
            _c(
                "drop_reason",
                "VARCHAR",
                "not_factual_a | not_factual_b | date_mismatch | after_cutoff | invalid_a | "
                "invalid_b | merged (NULL when kept)",
            ),
            AVAILABLE_AT,  # the later of the two checks' completion (recorded: the transcript's cutoff)
        ),
        partition_by=("partition_key",),
        primary_key=("event_id",),
    )
)

LEAF_FORECAST_TRIALS = register(
    Table(
        name="leaf_forecast_trials",
        doc=(
            "Each trial of an LLM forecast (LEAF §4.1: three trials averaged; a model is discarded when more"
            " than a third of its outputs are invalid): the parsed answer or the invalid reason, the call it"
            " came from."
        ),
        grain="one row per (model_id, task_id, trial)",
        columns=(
            PARTITION_KEY,  # as leaf_forecasts (llm:<cutoff day>)
            _c("model_id", "VARCHAR", "leaf_forecasts.model_id", False),
            _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
            _c("trial", "INTEGER", "1..n", False),
            _c(
                "context_hash",
                "VARCHAR",
                "leaf_forecasts.context_hash (the exact context of the prompt)",
                False,
            ),
            _c("call_id", "VARCHAR", "llm_calls.call_id"),
            _c("valid", "BOOLEAN", "the answer parsed", False),
            _c("invalid_reason", "VARCHAR", "code: detail (NULL when valid)"),
            _c("predicted_class", "VARCHAR", "trend class"),
            _c("point", "DOUBLE[]", "series values"),
            _c("probability", "DOUBLE", "event P(YES)"),
            _c("prompt_tokens", "INTEGER", "tokens in"),
            _c("completion_tokens", "INTEGER", "tokens out"),
            _c("issued_at", "TIMESTAMPTZ", "completion time of the call", False),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "task_id", "trial"),
    )
)

PREDICTABILITY_RATINGS = register(
    Table(
        name="predictability_ratings",
        doc=(
            "The LLM's rating of each stock's predictability at a cutoff on 5 levels (LEAF §3.2, §4.4, Fig."
            " 20): 1 = signals priced in / noise .. 5 = strong unpriced signal."
        ),
        grain="one row per (model_id, context_kind, cutoff, target_id)",
        columns=(
            PARTITION_KEY,  # llm:<cutoff day>
            _c("model_id", "VARCHAR", "rating model provider/model@design", False),
            _c("context_kind", "VARCHAR", "ts | events", False),
            _c("domain", "VARCHAR", "large_cap | mid_cap", False),
            _c("cutoff", "TIMESTAMPTZ", "rating issue time (the tasks' cutoff)", False),
            _c("target_id", "VARCHAR", "ticker", False),
            _c("level", "INTEGER", "1..5 (NULL when invalid)"),
            _c("call_id", "VARCHAR", "llm_calls.call_id"),
            _c("valid", "BOOLEAN", "the rating parsed", False),
            _c("invalid_reason", "VARCHAR", "code: detail"),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "context_kind", "cutoff", "target_id"),
    )
)

RECORDED_CASE_CHECKS = register(
    Table(
        name="recorded_case_checks",
        doc=(
            "A recorded forecasting case (SEER Stock-Basket50) against our data: its last close vs our close"
            " at the cutoff and its realised next-day label vs the App. C.1 label our prices give."
        ),
        grain="one row per (case, target_id)",
        columns=(
            PARTITION_KEY,  # the case name
            _c("case_name", "VARCHAR", "e.g. seer/Stock-Basket50-2026-03-25", False),
            _c("target_id", "VARCHAR", "ticker", False),
            _c("cutoff_day", "DATE", "the case's cutoff day", False),
            _c("n_events", "INTEGER", "events the case gives the target", False),
            _c("file_close", "DOUBLE", "the case's last close (cutoff day)"),
            _c("our_close", "DOUBLE", "market_prices close on the cutoff day"),
            _c("close_rel_diff", "DOUBLE", "file_close / our_close - 1"),
            _c("max_rel_diff", "DOUBLE", "largest |file / ours - 1| over the case's 15 closes"),
            _c("file_label", "VARCHAR", "the case's realised next-day label"),
            _c(
                "our_label",
                "VARCHAR",
                "label of our trend5 task at 1 session (App. C.1 on our next-session rate of change)",
            ),
            _c("our_roc", "DOUBLE", "our next-session rate of change (fraction)"),
            _c("agree", "BOOLEAN", "file_label = our_label"),
            _c("note", "VARCHAR", "why a label differs (e.g. within rounding of a threshold)"),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("case_name", "target_id"),
    )
)


SELECTIVE_PREDICTIONS = register(
    Table(
        name="selective_predictions",
        doc=(
            "Selective predictions of a recorded model (SEER's answer to Stock-Basket50: the few stocks it"
            " chose, with its reasons), each scored against our realised label of the stock's 1-session"
            " trend5 task; the selective-prediction board (precision of picks, coverage) is built from it."
        ),
        grain="one row per (case, model_id, target_id)",
        columns=(
            PARTITION_KEY,  # the case name
            _c("case_name", "VARCHAR", "e.g. seer/Stock-Basket50-2026-03-25", False),
            _c("model_id", "VARCHAR", "recorded model, e.g. recorded/seer", False),
            _c("cutoff_day", "DATE", "the case's cutoff day", False),
            _c("target_id", "VARCHAR", "picked ticker", False),
            _c("task_id", "VARCHAR", "the 1-session trend5 task the pick answers (null: no such task)"),
            _c("prediction", "VARCHAR", "3-way call: Up | Neutral | Down", False),
            _c("reason", "VARCHAR", "the model's stated reason"),
            _c("our_label", "VARCHAR", "realised 5-class label from our prices (task_outcomes)"),
            _c("file_label", "VARCHAR", "realised label the case file gives"),
            _c("correct", "BOOLEAN", "prediction is a substring of our_label ('Down' matches 'Strong Down')"),
            _c(
                "candidates",
                "INTEGER",
                "stocks of the case with a 1-session trend5 task (coverage base)",
                False,
            ),
            _c("source", "VARCHAR", "file#line of the recorded answer", False),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("case_name", "model_id", "target_id"),
    )
)

EVENT_BUNDLES = register(
    Table(
        name="event_bundles",
        doc=(
            "The with-events bundle of every series and trend task: the fact-checked events a forecaster may"
            " see at the task's cutoff (kept, dated in the look-back and on or before the cutoff day, stored"
            " by the cutoff; the LLM forecasters' rule), frozen with a hash beside the task's own bundle. A"
            " task whose look-back no retrieval covers says so in note instead of silently having none."
        ),
        grain="one row per task_id",
        columns=(
            PARTITION_KEY,  # the task's partition (cutoff day or question id)
            _c("task_id", "VARCHAR", "forecast_tasks.task_id", False),
            _c("domain", "VARCHAR", "task domain", False),
            _c("target_id", "VARCHAR", "target", False),
            _c("cutoff", "TIMESTAMPTZ", "the task's cutoff", False),
            _c("lookback_start", "DATE", "first event day the task may see", False),
            _c("lookback_end", "DATE", "last event day the task may see (the cutoff day)", False),
            _c("n_events", "INTEGER", "events in the bundle", False),
            _c("retrievers", "JSON", "retrievers whose events are in the bundle", False),
            _c("events", "JSON", "[{event_id, date, description, sentiment, retriever}] oldest first", False),
            _c("bundle_hash", "VARCHAR", "the task's own bundle hash", False),
            _c("events_hash", "VARCHAR", "sha256 of bundle_hash + the events JSON", False),
            _c("note", "VARCHAR", "why the bundle has no events (no retrieval covers the look-back, ...)"),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("task_id",),
    )
)

# ------------------------------------------------------------------------------------------------
# analysis tables (partition_key = the analysed model, or "all")
# ------------------------------------------------------------------------------------------------

EVENT_FILTER_RATES = register(
    Table(
        name="event_filter_rates",
        doc=(
            "Retrieval and fact-check statistics per domain in the form of LEAF Table 2: entities, events"
            " before filtering, share dropped by the fact-check, days with kept events, temporal span."
        ),
        grain="one row per (retriever, domain)",
        columns=(
            PARTITION_KEY,
            _c("retriever", "VARCHAR", "retrieval agent (or recorded/seer)", False),
            _c("domain", "VARCHAR", "target domain", False),
            _c("n_entities", "INTEGER", "targets with at least one valid retrieved event", False),
            _c("n_events", "INTEGER", "valid retrieved events before filtering", False),
            _c(
                "n_checked",
                "INTEGER",
                "events with a dual-check decision of ours (recorded, already fact-checked rows excluded)",
                False,
            ),
            _c("n_kept", "INTEGER", "events kept", False),
            _c(
                "filter_rate",
                "DOUBLE",
                "1 - kept / n_checked of our decisions (Table 2 'Filter Rate'); null for recorded rows only",
            ),
            _c("n_merged", "INTEGER", "near-duplicates merged away before checking", False),
            _c(
                "n_days", "INTEGER", "distinct (target, day) pairs with a kept event (Table 2 '#Days')", False
            ),
            _c("first_date", "DATE", "earliest kept event date"),
            _c("last_date", "DATE", "latest kept event date"),
            _c(
                "drop_reasons",
                "JSON",
                "{reason: count}; recorded_already_fact_checked: recorded rows kept as given",
            ),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("retriever", "domain"),
    )
)

EVENT_RETRIEVAL_COSTS = register(
    Table(
        name="event_retrieval_costs",
        doc=(
            "Tokens and cost of retrieval plus fact-checking per kept event (LEAF App. D.1: about 3,864"
            " tokens per event including the fact-check)."
        ),
        grain="one row per (retriever, domain)",
        columns=(
            PARTITION_KEY,
            _c("retriever", "VARCHAR", "retrieval agent", False),
            _c("domain", "VARCHAR", "target domain", False),
            _c("n_calls", "INTEGER", "retrieval and fact-check calls", False),
            _c("total_tokens", "BIGINT", "tokens in + out over those calls", False),
            _c("cost_usd", "DOUBLE", "USD (NULL when a call has no price)"),
            _c("n_events", "INTEGER", "valid retrieved events", False),
            _c("n_kept", "INTEGER", "kept events", False),
            _c("tokens_per_event", "DOUBLE", "total_tokens / n_events"),
            _c("tokens_per_kept_event", "DOUBLE", "total_tokens / n_kept"),
            _c("cost_per_kept_event", "DOUBLE", "cost_usd / n_kept"),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("retriever", "domain"),
    )
)

PREDICTABILITY_ACCURACY = register(
    Table(
        name="predictability_accuracy",
        doc=(
            "Trend accuracy per predictability level (LEAF §4.4, Table 12 form) and the correlation of"
            " accuracy with the level across the five levels."
        ),
        grain="one row per (model_id, context_kind, domain, task_kind, horizon, level)",
        columns=(
            PARTITION_KEY,
            _c("model_id", "VARCHAR", "forecasting model (its leaf_forecasts model_id)", False),
            _c("rater", "VARCHAR", "model that rated the predictability", False),
            _c("context_kind", "VARCHAR", "ts | events", False),
            _c("domain", "VARCHAR", "large_cap | mid_cap", False),
            _c("task_kind", "VARCHAR", "trend3 | trend5", False),
            _c("horizon", "VARCHAR", "1d, 2d, 3mo, 6mo ...", False),
            _c("level", "INTEGER", "1..5", False),
            _c("n", "INTEGER", "scored forecasts at this level", False),
            _c(
                "accuracy", "DOUBLE", "mean accuracy (%), per-day accuracies averaged (§4.4 aggregates daily)"
            ),
            _c(
                "level_correlation",
                "DOUBLE",
                "Pearson correlation of accuracy with level over the levels present",
            ),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "rater", "context_kind", "domain", "task_kind", "horizon", "level"),
    )
)

ALPHA_CONSISTENCY = register(
    Table(
        name="alpha_consistency",
        doc=(
            "Forecast error against the share alpha of sentiment-consistent events in the context (LEAF §3.2,"
            " §4.4): events of the target itself, and the ablation with events of another target."
        ),
        grain="one row per (model_id, variant, metric, alpha)",
        columns=(
            PARTITION_KEY,
            _c("model_id", "VARCHAR", "forecasting model (base id, without the context suffix)", False),
            _c("variant", "VARCHAR", "target | other_target", False),
            _c("metric", "VARCHAR", "error metric (1 - accuracy for trends, mape for prices)", False),
            _c("alpha", "DOUBLE", "share of sentiment-consistent events, 0..1", False),
            _c("n", "INTEGER", "scored forecasts", False),
            _c("mean_error", "DOUBLE", "mean error at this alpha", False),
            _c(
                "correlation",
                "DOUBLE",
                "Pearson correlation of mean error with alpha over the alphas (paper -0.967 "
                "target, -0.537 other target)",
            ),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "variant", "metric", "alpha"),
    )
)

LIVING_DATA_ABLATION = register(
    Table(
        name="living_data_ablation",
        doc=(
            "The same tasks on a span before the models' training cutoff and on the live span (LEAF §4.5,"
            " Table 9): accuracy in each and the relative improvement of the old span."
        ),
        grain="one row per (model_id, domain, task_kind, horizon)",
        columns=(
            PARTITION_KEY,
            _c("model_id", "VARCHAR", "model", False),
            _c("domain", "VARCHAR", "large_cap | mid_cap ...", False),
            _c("task_kind", "VARCHAR", "trend3 | trend5", False),
            _c("horizon", "VARCHAR", "task horizon", False),
            _c("accuracy_before", "DOUBLE", "accuracy (%) on tasks with cutoff in the pre-training span"),
            _c("accuracy_after", "DOUBLE", "accuracy (%) on tasks with cutoff in the live span"),
            _c("n_before", "INTEGER", "tasks scored before", False),
            _c("n_after", "INTEGER", "tasks scored after", False),
            _c("relative_improvement_pct", "DOUBLE", "100 (before - after) / after (paper overall: 147%)"),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "domain", "task_kind", "horizon"),
    )
)

FACT_CHECK_ABLATION = register(
    Table(
        name="fact_check_ablation",
        doc=(
            "Forecasts with the unfiltered retrieved events vs the fact-checked events (LEAF §4.5, Fig. 6):"
            " the metric in each context, the inflation, and how many events in the unfiltered contexts the"
            " checkers dated after the cutoff (leaks)."
        ),
        grain="one row per (model_id, domain, task_kind, horizon, metric)",
        columns=(
            PARTITION_KEY,
            _c("model_id", "VARCHAR", "base model id", False),
            _c("domain", "VARCHAR", "task domain", False),
            _c("task_kind", "VARCHAR", "trend3 | trend5 | series | event", False),
            _c("horizon", "VARCHAR", "task horizon", False),
            _c("metric", "VARCHAR", "accuracy | brier | mape ...", False),
            _c("n", "INTEGER", "tasks scored in both contexts", False),
            _c("value_filtered", "DOUBLE", "mean metric with the fact-checked events"),
            _c("value_unfiltered", "DOUBLE", "mean metric with the unfiltered events"),
            _c(
                "inflation",
                "DOUBLE",
                "value_unfiltered - value_filtered (positive accuracy / negative Brier = the "
                "unfiltered context looks better)",
            ),
            _c(
                "n_leaked_events",
                "INTEGER",
                "events in the unfiltered contexts dropped by the checkers as after the cutoff",
                False,
            ),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("model_id", "domain", "task_kind", "horizon", "metric"),
    )
)

EVENT_ANALYSIS_STATUS = register(
    Table(
        name="event_analysis_status",
        doc=(
            "Whether each event analysis (Table 2 filter rates, Table 12 predictability, §3.2"
            " alpha-consistency, Table 9 living data, Fig. 6 fact-check ablation) ran on the stored inputs"
            " or refused, with the one-line reason (which inputs are missing); the report prints it instead"
            " of an empty section. Each analysis asset replaces its own row (partition = the analysis)."
        ),
        grain="one row per analysis",
        columns=(
            PARTITION_KEY,
            _c(
                "analysis",
                "VARCHAR",
                "the analysis table (event_filter_rates, living_data_ablation, ...)",
                False,
            ),
            _c("status", "VARCHAR", "ran | refused", False),
            _c(
                "reason",
                "VARCHAR",
                "one line: what the rows cover and which inputs are missing (ran), or why nothing was"
                " computed (refused)",
                False,
            ),
            _c("rows", "INTEGER", "rows the analysis wrote to its table", False),
            AVAILABLE_AT,
        ),
        partition_by=("partition_key",),
        primary_key=("analysis",),
    )
)
