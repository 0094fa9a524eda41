"""Table schemas of the macro track (LiveMacroEval), registered in the one schema registry
(:mod:`leaf_live.core.storage`) at import. One definition per table; the README's table docs are generated
from these (``leaf-live tables``)."""

from __future__ import annotations

from leaf_live.core.llm import LLM_CALLS  # shared by both tracks; defined once in core
from leaf_live.core.storage import AVAILABLE_AT, PARTITION_KEY, Table, register
from leaf_live.core.storage import col as _c
from leaf_live.macro.catalog import INDICATOR_IDS

INDICATOR_CATALOG = Table(
    name="indicator_catalog",
    doc=(
        "The 16 LiveMacroEval indicators (Table 2, App. C, App. I transform codes, Table 9 reference"
        " beta/SE)."
    ),
    grain="one row per indicator_id",
    columns=(
        _c("indicator_id", "VARCHAR", "catalog id (matches the released LiveMacroEval field_id)", False),
        _c("title", "VARCHAR", "Table 2 title with transformation and seasonal adjustment", False),
        _c("unit", "VARCHAR", "reporting unit", False),
        _c("transformation", "VARCHAR", "qoq_saar_pct | mom_pct | yoy_pct | level | mom_change", False),
        _c("seasonal_adjustment", "VARCHAR", "SA | SAAR | NSA", False),
        _c("guardrail_lo", "DOUBLE", "lowest plausible value, reporting unit", False),
        _c("guardrail_hi", "DOUBLE", "highest plausible value, reporting unit", False),
        _c("guardrail_text", "VARCHAR", "Table 2 scale guardrail wording", False),
        _c("source_label", "VARCHAR", "Table 2 source label", False),
        _c("theme", "VARCHAR", "supply_production | demand_inflation | labor_market | housing (§3.3)", False),
        _c("prompt_group", "VARCHAR", "output_core | demand_sectoral (App. D)", False),
        _c("frequency", "VARCHAR", "monthly | quarterly", False),
        _c("release_time_et", "VARCHAR", "usual release slot, America/New_York HH:MM", False),
        _c("agency", "VARCHAR", "issuing agency (App. C)", False),
        _c("fred_series", "VARCHAR", "FRED series ids, comma-separated", False),
        _c("fred_md_column", "VARCHAR", "FRED-MD/QD column (NULL if not in the database)"),
        _c("fred_md_tcode", "INTEGER", "McCracken-Ng transform code (NULL for ISM indices)"),
        _c("beta_table9", "DOUBLE", "paper Table 9 beta, x1e-4 log return per standardized surprise", False),
        _c("se_table9", "DOUBLE", "paper Table 9 HC1 SE, x1e-4", False),
    ),
    primary_key=("indicator_id",),
)

# ---------------------------------------------------------------------------------------------
# Macro track: releases, announcement windows, surprises (issue: foundation)
# ---------------------------------------------------------------------------------------------

RELEASE_CALENDAR = Table(
    name="release_calendar",
    doc=(
        "Every scheduled release row as each calendar source reported it (actual, consensus, time), before "
        "the first-release rule. Values are converted to the indicator's reporting unit (catalog)."
    ),
    grain="one row per (source, indicator_id, release_at, period_label)",
    columns=(
        PARTITION_KEY,
        _c(
            "source",
            "VARCHAR",
            "calendar source: livemacroeval_panel | livemacroeval_live | forexfactory | fred",
            False,
        ),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("release_at", "TIMESTAMPTZ", "release timestamp, UTC (converted from the source's zone)", False),
        _c("release_time_et", "VARCHAR", "release clock time in America/New_York, HH:MM", False),
        _c(
            "period_label",
            "VARCHAR",
            "reference period as labelled by the source (YYYY-MM or YYYY-Qn)",
            False,
        ),
        _c(
            "period_source",
            "VARCHAR",
            "event_text (label parsed from the source) | release_lag (inferred from release date)",
            False,
        ),
        _c(
            "reference_period",
            "DATE",
            "first day of the reference period (quarter start for quarterly indicators)",
            False,
        ),
        _c("actual", "DOUBLE", "first-release actual A, reporting unit"),
        _c("consensus", "DOUBLE", "consensus C at release, reporting unit (NULL when the source had none)"),
        _c("consensus_source", "VARCHAR", "who produced C: investing | forexfactory | NULL"),
        _c("event", "VARCHAR", "source event text"),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row in source_file", False),
        _c(
            "marked_revision",
            "BOOLEAN",
            "the source itself lists the row as a later estimate (LiveMacroEval "
            "dropped_revisions.csv); the first-release rule never keeps it, even when the earlier release it "
            "revises is missing from the files",
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

RELEASES = Table(
    name="releases",
    doc=(
        "Canonical first releases: actual and consensus per indicator and reference period (universal "
        "first-release rule of the LiveMacroEval panel; GDP = advance estimate)."
    ),
    grain="one row per (indicator_id, release_at); at most one per (indicator_id, period_label)",
    columns=(
        PARTITION_KEY,
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the reference period", False),
        _c("period_label", "VARCHAR", "source period label used by the first-release rule", False),
        _c("period_source", "VARCHAR", "event_text | release_lag", False),
        _c("release_at", "TIMESTAMPTZ", "release timestamp, UTC", False),
        _c("actual", "DOUBLE", "first-release actual A, reporting unit", False),
        _c("consensus", "DOUBLE", "consensus C, reporting unit (NULL if none was published)"),
        _c("consensus_source", "VARCHAR", "investing | forexfactory"),
        _c("surprise", "DOUBLE", "A - C, reporting unit (NULL without consensus)"),
        _c("source", "VARCHAR", "calendar source of the row", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("indicator_id", "release_at"),
)

ANNOUNCEMENT_RETURNS = Table(
    name="announcement_returns",
    doc=(
        "E-mini S&P 500 front-month announcement-window log returns r_g = log P(T+30m) - log P(T-5m) "
        "(LiveMacroEval App. K Eq. 4), one per release timestamp."
    ),
    grain="one row per release_at",
    columns=(
        PARTITION_KEY,
        _c("release_at", "TIMESTAMPTZ", "release timestamp T_g, UTC", False),
        _c("contract_code", "VARCHAR", "front-month ES contract (e.g. H10 = Mar 2010)"),
        _c("price_before", "DOUBLE", "ES 1-minute bar close at T-5m, index points"),
        _c("price_after", "DOUBLE", "ES 1-minute bar close at T+30m, index points"),
        _c("r_g", "DOUBLE", "log return over the window, log points (NULL if the window is unusable)"),
        _c("window_status", "VARCHAR", "usable | no_prices (e.g. market closed on Good Friday)", False),
        _c("source", "VARCHAR", "price provider (livemacroeval_panel | provider name)", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("release_at",),
)

SURPRISE_SCALES = Table(
    name="surprise_scales",
    doc=(
        "sigma_i = sample sd (ddof 1) of A - C over the frozen historical window (App. K.1 Eq. 3), in "
        "reporting units; includes releases whose futures window is unusable."
    ),
    grain="one row per indicator_id",
    columns=(
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("n_releases", "INTEGER", "releases with A and C inside the window", False),
        _c("mean_surprise", "DOUBLE", "mean of A - C, reporting unit", False),
        _c("sigma", "DOUBLE", "sd of A - C (ddof 1), reporting unit", False),
        _c("window_start", "DATE", "first release date counted", False),
        _c("window_end", "DATE", "last release date counted (inclusive)", False),
        AVAILABLE_AT,
    ),
    primary_key=("indicator_id",),
)

SURPRISE_EVENTS = Table(
    name="surprise_events",
    doc=(
        "Timestamp-group events (App. K.1): all releases sharing a timestamp, with the window return r_g "
        "and the 16 standardized surprises S = (A - C)/sigma_i, structural zeros for fields not released."
    ),
    grain="one row per release timestamp (timestamp-group event)",
    columns=(
        PARTITION_KEY,
        _c("release_at", "TIMESTAMPTZ", "event timestamp T_g, UTC", False),
        _c("release_time_et", "VARCHAR", "release clock time in America/New_York (cohort)", False),
        _c("contract_code", "VARCHAR", "ES contract of the window"),
        _c("r_g", "DOUBLE", "announcement-window log return (NULL where no usable window)"),
        _c("window_status", "VARCHAR", "usable | no_prices", False),
        _c("n_fields", "INTEGER", "number of indicators released with a surprise in the event", False),
        *(
            _c(f"s_{i}", "DOUBLE", f"standardized surprise of {i} (0 if not released)", False)
            for i in INDICATOR_IDS
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("release_at",),
)

# ---------------------------------------------------------------------------------------------
# Macro track: nowcasts (one table for every forecaster; each producing asset owns its slice)
# ---------------------------------------------------------------------------------------------

NOWCASTS = Table(
    name="nowcasts",
    doc=(
        "Every macro forecaster's nowcasts (LLM agents, recorded runs, auto-ARIMA, Fed nowcasts, consensus)"
        " in the indicator's reporting unit. Rows issued at or after the release are kept, flagged, never"
        " scored. Invalid answers are kept with their reason."
    ),
    grain="one row per (producer, model_id, indicator_id, reference_period, issued_at[, variable])",
    columns=(
        _c(
            "producer",
            "VARCHAR",
            "asset that wrote the row (llm_nowcasts | recorded_nowcasts | arima_nowcasts |"
            " comparator_nowcasts)",
            False,
        ),
        PARTITION_KEY,
        _c(
            "model_id",
            "VARCHAR",
            "provider/model@design, baseline/auto-arima, consensus/investing, fed/gdpnow, ...",
            False,
        ),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the target reference period", False),
        _c("issued_at", "TIMESTAMPTZ", "when the nowcast was issued, UTC", False),
        _c(
            "answered_at",
            "TIMESTAMPTZ",
            "when the answer existed, UTC: LLM rows = the final call's completion (llm_calls.completed_at);"
            " recorded runs, which record no completion, = issued_at + the run interval (1 h, conservative);"
            " others = issued_at. LiveBetting bets on an answer only from this time",
        ),
        _c("value", "DOUBLE", "nowcast in the reporting unit (NULL when invalid)"),
        _c("valid", "BOOLEAN", "passed parsing, unit and guardrail checks", False),
        _c("invalid_reason", "VARCHAR", "why the row is invalid (NULL when valid)"),
        _c("after_release", "BOOLEAN", "issued at or after the release timestamp: kept, never scored", False),
        _c("source_variable", "VARCHAR", "variable name in the producer's own output (e.g. cpi_yoy)"),
        _c("rationale", "VARCHAR", "model rationale text, if any"),
        _c("citations", "VARCHAR", "JSON list of cited URLs, if any"),
        _c("prompt_hash", "VARCHAR", "sha256 of the prompt (LLM rows)"),
        _c("raw_response_id", "VARCHAR", "llm_calls.call_id or recorded job id"),
        _c("prompt_tokens", "INTEGER", "tokens in (LLM rows, per call)"),
        _c("completion_tokens", "INTEGER", "tokens out (LLM rows, per call)"),
        _c("cost_usd", "DOUBLE", "cost of the call in USD (LLM rows, per call)"),
        AVAILABLE_AT,
    ),
    partition_by=("producer", "partition_key"),
)

NOWCAST_WINDOWS = Table(
    name="nowcast_windows",
    doc=(
        "Prediction window of each (indicator, reference period) (LiveMacroEval Sec. 3.4): opens 00:00"
        " America/New_York on the 25th of the reference month (of the quarter's last month for quarterly GDP)"
        " and closes at the scheduled release timestamp. Hourly nowcasts are issued at every full hour in"
        " [opens_at, closes_at); a nowcast issued at or after closes_at is after_release."
    ),
    grain="one row per (indicator_id, reference_period)",
    columns=(
        _c("partition_key", "VARCHAR", "release month in America/New_York, YYYY-MM", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the reference period (quarter start for GDP)", False),
        _c(
            "target_month",
            "DATE",
            "month whose 25th opens the window (the quarter's last month for GDP)",
            False,
        ),
        _c("opens_at", "TIMESTAMPTZ", "window opens (first hourly nowcast), UTC", False),
        _c(
            "closes_at",
            "TIMESTAMPTZ",
            "scheduled release timestamp, UTC (no nowcast at or after it is scored)",
            False,
        ),
        _c("release_time_et", "VARCHAR", "release clock time in America/New_York, HH:MM", False),
        _c("prompt_group", "VARCHAR", "output_core | demand_sectoral (App. D)", False),
        _c("n_issue_hours", "INTEGER", "number of full hours in [opens_at, closes_at)", False),
        _c(
            "available_at",
            "TIMESTAMPTZ",
            "= opens_at: the window is declared when it opens (release calendars are public well before)",
            False,
        ),
    ),
    partition_by=("partition_key",),
)

PREDICTION_MARKET_PRICES = Table(
    name="prediction_market_prices",
    doc=(
        "Prediction-market bucket prices (Polymarket YES price, 0-1) for the macro markets used by the "
        "LiveBetting score (App. L), long format; bucket labels kept verbatim as the market titles them "
        "(parsing them is the scorer's job)."
    ),
    grain="one row per (source, market_id, bucket_label, ts)",
    columns=(
        _c("partition_key", "VARCHAR", "market_id the row belongs to", False),
        _c(
            "source",
            "VARCHAR",
            "polymarket_grid (hourly CSV grid) | polymarket_clob (CLOB /prices-history)",
            False,
        ),
        _c("market_id", "VARCHAR", "market (event) id: grid file stem or Gamma event slug", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id the market resolves on", False),
        _c("reference_period", "DATE", "first day of the reference period the market resolves on", False),
        _c("bucket_label", "VARCHAR", "bucket title verbatim (e.g. '2.0–2.5%', '≥2.8%')", False),
        _c("token_id", "VARCHAR", "CLOB YES token id (NULL for grid files)"),
        _c("ts", "TIMESTAMPTZ", "price time, UTC", False),
        _c("price", "DOUBLE", "YES price in [0, 1] (pool-implied probability of the bucket)", False),
        _c("source_file", "VARCHAR", "file or URL the row came from", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

# ---------------------------------------------------------------------------------------------
# Macro track: scoring (issue 3; science in leaf_live/scoring/)
# ---------------------------------------------------------------------------------------------

MARKET_BETAS = Table(
    name="market_betas",
    doc=(
        "Frozen Huber-ridge market betas (LiveMacroEval App. K.2, Eq. 5, 9-11): beta, HC1 SE and the full"
        " V_beta per fit. A fit is identified by fit_id (hash of the events used and every setting); a refit"
        " on other data or settings gets a new fit_id and never overwrites the rows scores used."
    ),
    grain="one row per (fit_id, indicator_id)",
    columns=(
        _c("fit_id", "VARCHAR", "fit identifier: hash of the event design and settings", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c(
            "position",
            "INTEGER",
            "0-based index of the indicator in beta / V_beta (catalog INDICATOR_IDS order)",
            False,
        ),
        _c("beta", "DOUBLE", "announcement-window log return per standardized surprise", False),
        _c("se", "DOUBLE", "HC1 robust standard error of beta (Eq. 11)", False),
        _c(
            "cov_row", "DOUBLE[]", "row `position` of V_beta (log return^2), entries in position order", False
        ),
        _c("lambda", "DOUBLE", "ridge penalty in the normal equations X'WX + lambda I", False),
        _c("lambda_source", "VARCHAR", "cv (chosen by blocked chronological CV) | fixed (given)", False),
        _c("cv_loss", "VARCHAR", "held-out fold loss of the CV: huber | mse (NULL when lambda was fixed)"),
        _c("cv_grid", "DOUBLE[]", "lambda grid of the CV (NULL when fixed)"),
        _c("cv_scores", "DOUBLE[]", "mean held-out loss per grid value (NULL when fixed)"),
        _c("huber_c", "DOUBLE", "Huber tuning constant c (1.345)", False),
        _c("delta", "DOUBLE", "converged Huber threshold c * scale, log-return units", False),
        _c(
            "scale",
            "DOUBLE",
            "converged robust scale 1.4826 * MAD of working residuals, log-return units",
            False,
        ),
        _c("iterations", "INTEGER", "IRLS weighted solves after the ridge initialisation", False),
        _c("df_eff", "DOUBLE", "effective degrees of freedom tr(X A^-1 X' W)", False),
        _c("n_events", "INTEGER", "timestamp-group events in the fit", False),
        _c("window_start", "TIMESTAMPTZ", "first event used, UTC", False),
        _c("window_end", "TIMESTAMPTZ", "last event used, UTC", False),
        _c(
            "covid_excluded",
            "BOOLEAN",
            "events released 2020-03-01..2020-12-31 (ET) were dropped (K.3)",
            False,
        ),
        _c("n_covid_dropped", "INTEGER", "events dropped by the COVID exclusion", False),
        _c(
            "sigma",
            "DOUBLE",
            "surprise scale sigma_i the fit's S = (A - C)/sigma_i were standardized by, reporting "
            "unit (scores standardize with the same sigma); NULL on fits stored before it was recorded",
        ),
        _c(
            "sigma_rule",
            "VARCHAR",
            "where sigma comes from: surprise_scales (the frozen 2010-01..2025-10 window, the "
            "paper) | fit_window (estimated on the fit's own window: point in time)",
        ),
        _c("settings", "JSON", "every estimator setting (tolerance, MAD constant, grid, folds, ...)", False),
        AVAILABLE_AT,
    ),
    partition_by=("fit_id",),
    primary_key=("fit_id", "indicator_id"),
)

LIVEMACRO_SCORES = Table(
    name="livemacro_scores",
    doc=(
        "LiveMacro Score family per model (LiveMacroEval §3.6, App. K, N, P, S): score (target r_g) or"
        " consensus-relative score (target Q_g), kappa/phi, directional score and intervals, by scope"
        " (overall or theme) and horizon, computed on the model's OWN events (those where it has its own"
        " pre-release nowcast for a released field of the scope; a release of such an event it does not"
        " nowcast takes the consensus, S_hat = 0). The common_* columns rank the compared models on the"
        " events they all cover (the board's common event set). Three intervals, each saying what it carries:"
        " boot_* = beta only (parametric, Eq. 12), event_* = sampling of events (beta fixed), combined_* ="
        " both. The consensus scores exactly 0."
    ),
    grain="one row per (model_id, fit_id, horizon, scope, target)",
    columns=(
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "model scored (nowcasts.model_id)", False),
        _c("fit_id", "VARCHAR", "market_betas fit used", False),
        _c(
            "fit_name",
            "VARCHAR",
            "market_beta_fits name of that fit in the evaluation mode (full | no_covid | "
            "backtest | ...): filter on it to get one row per model",
        ),
        _c(
            "horizon",
            "VARCHAR",
            "terminal | median_1d | median_3d | median_7d (the forecast standing then, carried forward)",
            False,
        ),
        _c(
            "scope",
            "VARCHAR",
            "overall | supply_production | demand_inflation | labor_market | housing",
            False,
        ),
        _c(
            "target",
            "VARCHAR",
            "return (LiveMacro Score, Y = r_g) | shock (consensus-relative, Y = Q_g)",
            False,
        ),
        _c(
            "n_events",
            "INTEGER",
            "scoring events of the scope in the span with a usable return (the events the "
            "model could be scored on)",
            False,
        ),
        _c("n_releases", "INTEGER", "field releases of the scope in the scored (own) events", False),
        _c(
            "n_events_dropped",
            "INTEGER",
            "span events dropped for no usable announcement-window return",
            False,
        ),
        _c(
            "n_events_own",
            "INTEGER",
            "events of the scope where the model has its own pre-release nowcast for a "
            "released field: the events every score, interval and LMD of the row is computed on",
        ),
        _c(
            "n_releases_own",
            "INTEGER",
            "releases of the scope with the model's own nowcast in those events (the "
            "others take the consensus, S_hat = 0); the themes' counts add up to the overall one",
        ),
        _c(
            "score",
            "DOUBLE",
            "(SS_cons - SS_model)/(SS_cons + SS_model) on the own events, in [-1, 1] (Eq. 8/17)",
        ),
        _c("ss_model", "DOUBLE", "sum (Y - Q_hat)^2"),
        _c("ss_cons", "DOUBLE", "sum Y^2 (consensus predicts 0)"),
        _c("kappa", "DOUBLE", "position size sqrt(sum Q_hat^2 / sum Y^2) (Eq. 18)"),
        _c("phi", "DOUBLE", "directional alignment, uncentered corr(Q_hat, Y) (Eq. 18; NULL when Q_hat = 0)"),
        _c(
            "lmd",
            "DOUBLE",
            "directional score: |Y|-weighted sign hit rate (Eq. 14) on the 0.5 coin-flip scale (a "
            "zero predicted return, no view, counts half)",
        ),
        _c("boot_draws", "INTEGER", "bootstrap draws B (Eq. 12; NULL if not run)"),
        _c("boot_seed", "BIGINT", "seed of the standard-normal draws and the event resamples"),
        _c(
            "boot_ci90_lo",
            "DOUBLE",
            "beta-only (parametric) interval: 5th percentile of the scores over beta draws",
        ),
        _c("boot_ci90_hi", "DOUBLE", "beta-only: 95th percentile"),
        _c("boot_ci95_lo", "DOUBLE", "beta-only: 2.5th percentile"),
        _c("boot_ci95_hi", "DOUBLE", "beta-only: 97.5th percentile"),
        _c(
            "p_le_zero",
            "DOUBLE",
            "share of beta draws with score <= 0 (one-sided p of beating the consensus)",
        ),
        _c(
            "p_ge_zero",
            "DOUBLE",
            "share of beta draws with score >= 0 (one-sided p of trailing the consensus)",
        ),
        _c("lmd_ci90_lo", "DOUBLE", "5th percentile of the directional score over beta draws"),
        _c("lmd_ci90_hi", "DOUBLE", "95th percentile of the directional score over beta draws"),
        _c(
            "event_ci90_lo",
            "DOUBLE",
            "event-bootstrap interval (own events resampled, beta fixed): 5th percentile "
            "(NULL below the minimum event count)",
        ),
        _c("event_ci90_hi", "DOUBLE", "event bootstrap: 95th percentile"),
        _c("event_ci95_lo", "DOUBLE", "event bootstrap: 2.5th percentile"),
        _c("event_ci95_hi", "DOUBLE", "event bootstrap: 97.5th percentile"),
        _c(
            "combined_ci90_lo",
            "DOUBLE",
            "combined interval (beta draw b on event resample b): 5th percentile "
            "(NULL below the minimum event count)",
        ),
        _c("combined_ci90_hi", "DOUBLE", "combined: 95th percentile"),
        _c("combined_ci95_lo", "DOUBLE", "combined: 2.5th percentile"),
        _c("combined_ci95_hi", "DOUBLE", "combined: 97.5th percentile"),
        _c(
            "min_events",
            "INTEGER",
            "fewest events an event-resampling interval (event, combined, paired) is given for",
        ),
        _c(
            "sampling_k",
            "INTEGER",
            "K.3 samples per release: the forecast standing 0..k-1 hours before it (NULL if not run)",
        ),
        _c("sampling_mean", "DOUBLE", "mean score over the k samples (same own events)"),
        _c("sampling_ci95_lo", "DOUBLE", "Student-t 95% interval, lower"),
        _c("sampling_ci95_hi", "DOUBLE", "Student-t 95% interval, upper"),
        _c(
            "n_events_common",
            "INTEGER",
            "size of the board's common event set: events where every compared model "
            "has its own nowcast (NULL: the model is not compared on this board)",
        ),
        _c("n_models_common", "INTEGER", "models compared on the common event set (the consensus included)"),
        _c(
            "common_rank",
            "INTEGER",
            "rank by common_score among the compared models (1 = best; ties share a rank)",
        ),
        _c("common_score", "DOUBLE", "score on the common event set"),
        _c("common_lmd", "DOUBLE", "directional score on the common event set (0.5 = coin flip)"),
        _c(
            "common_ci90_lo",
            "DOUBLE",
            "combined 90% interval (beta draws x event resampling) on the common set, "
            "lower (NULL below the minimum event count)",
        ),
        _c("common_ci90_hi", "DOUBLE", "combined 90% interval on the common set, upper"),
        _c("window_start", "TIMESTAMPTZ", "first scored (own) event, UTC"),
        _c("window_end", "TIMESTAMPTZ", "last scored (own) event, UTC"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "model_id", "fit_id", "horizon", "scope", "target"),
)

LIVEMACRO_EVENT_LOSSES = Table(
    name="livemacro_event_losses",
    doc=(
        "Per-event losses behind every LiveMacro Score: one row per model and OWN scored event of a board"
        " (mode, fit, horizon, scope, target), with the realized target Y, the model's prediction Q_hat, its"
        " loss (Y - Q_hat)^2, the consensus's loss Y^2 on the same event and the event's weight in the score."
        " Every score of livemacro_scores is (sum w loss_consensus - sum w loss)/(sum w loss_consensus + sum"
        " w loss) over a model's rows (own events) or over a set of events (a common set), so any board can"
        " be recomputed from this table in SQL."
    ),
    grain="one row per (partition_key, model_id, fit_id, horizon, scope, target, event_at)",
    columns=(
        PARTITION_KEY,
        _c(
            "model_id",
            "VARCHAR",
            "model scored (the consensus included: its loss equals loss_consensus)",
            False,
        ),
        _c("fit_id", "VARCHAR", "market_betas fit used", False),
        _c("fit_name", "VARCHAR", "market_beta_fits name of the fit in the evaluation mode"),
        _c("horizon", "VARCHAR", "terminal | median_<k>d", False),
        _c("scope", "VARCHAR", "overall | a theme", False),
        _c("target", "VARCHAR", "return (Y = r_g) | shock (Y = Q_g)", False),
        _c("event_at", "TIMESTAMPTZ", "the scoring event (timestamp group), UTC", False),
        _c("y", "DOUBLE", "realized target: announcement-window log return r_g or shock Q_g = S beta", False),
        _c("y_hat", "DOUBLE", "the model's predicted target S_hat beta (0 = the consensus)", False),
        _c("loss", "DOUBLE", "(y - y_hat)^2, squared log-return units; lower is better", False),
        _c("loss_consensus", "DOUBLE", "y^2: the consensus's loss on the same event", False),
        _c("weight", "DOUBLE", "the event's weight in the score's sums (1: every event counts once)", False),
        _c(
            "covid",
            "BOOLEAN",
            "event released 2020-03-01..2020-12-31 (America/New_York, the paper's no-COVID window, K.3)",
            False,
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "model_id", "fit_id", "horizon", "scope", "target", "event_at"),
)

LIVEMACRO_RANKINGS = Table(
    name="livemacro_rankings",
    doc=(
        "Coverage-robust LiveMacro ranking (leaf_live.core.ranking; ForecastBench's difficulty adjustment):"
        " two-way fixed effects of the per-event loss (livemacro_event_losses) on event and model, each model"
        " on its own events, mapped onto the LiveMacro Score scale against the consensus, with a bootstrap"
        " over events that re-estimates the effects in every replicate (percentile interval, P(rank = 1),"
        " paired interval against the consensus). Models with fewer than min_events events are listed"
        " (n_events) but not ranked. event_window = full | ex_covid (the paper's no-COVID window dropped)."
    ),
    grain="one row per (partition_key, fit_id, horizon, scope, target, event_window, estimator, model_id)",
    columns=(
        PARTITION_KEY,
        _c("fit_id", "VARCHAR", "market_betas fit used", False),
        _c("fit_name", "VARCHAR", "market_beta_fits name of the fit in the evaluation mode"),
        _c("horizon", "VARCHAR", "terminal | median_<k>d", False),
        _c("scope", "VARCHAR", "overall | a theme", False),
        _c("target", "VARCHAR", "return (LiveMacro Score) | shock (consensus-relative score)", False),
        _c("event_window", "VARCHAR", "full | ex_covid (events of 2020-03..2020-12 dropped)", False),
        _c(
            "estimator",
            "VARCHAR",
            "reference (event effect = the consensus's loss; the headline) | all (ForecastBench: every"
            " ranked model informs the event effects)",
            False,
        ),
        _c("model_id", "VARCHAR", "model", False),
        _c("reference_model_id", "VARCHAR", "the consensus model the scale is anchored on", False),
        _c("n_events", "INTEGER", "the model's own events on this board", False),
        _c("n_events_board", "INTEGER", "events of the board (any model)", False),
        _c("min_events", "INTEGER", "fewest own events a model needs to be ranked", False),
        _c("ranked", "BOOLEAN", "the model has min_events events and is ranked", False),
        _c("rank", "INTEGER", "rank by score among the ranked models (1 = best; ties share a rank)"),
        _c(
            "score",
            "DOUBLE",
            "difficulty-adjusted LiveMacro Score (L_cons - L)/(L_cons + L) in [-1, 1], higher is better; L ="
            " the model's difficulty-adjusted mean loss on every event of the board",
        ),
        _c("ci90_lo", "DOUBLE", "5th percentile of the score over the bootstrap replicates"),
        _c("ci90_hi", "DOUBLE", "95th percentile"),
        _c("p_rank1", "DOUBLE", "share of replicates in which the model is the best ranked model"),
        _c(
            "diff_ci90_lo",
            "DOUBLE",
            "paired interval of score - consensus score (the consensus's is 0), 5th pct",
        ),
        _c("diff_ci90_hi", "DOUBLE", "paired interval, 95th percentile"),
        _c("p_better", "DOUBLE", "share of replicates with a score above the consensus's"),
        _c(
            "effect", "DOUBLE", "model fixed effect minus the consensus's, squared log-return units per event"
        ),
        _c("level", "DOUBLE", "difficulty-adjusted mean loss per event (squared log-return units)"),
        _c("max_event_share", "DOUBLE", "largest single-event share of the model's total loss on the board"),
        _c("max_event_at", "TIMESTAMPTZ", "that event, UTC"),
        _c("n_boot", "INTEGER", "bootstrap replicates", False),
        _c("boot_seed", "BIGINT", "seed of the replicates", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=(
        "partition_key",
        "fit_id",
        "horizon",
        "scope",
        "target",
        "event_window",
        "estimator",
        "model_id",
    ),
)

SCORE_DECOMPOSITIONS = Table(
    name="score_decompositions",
    doc=(
        "Decompositions and diagnostics of the LiveMacro Score, long format: exact Shapley contributions per"
        " indicator (App. M, sum = the model's own-coverage score), sizing discipline (S.4), aggregator"
        " shares (K.4 / Table 11), paired event-bootstrap differences between two models on the events both"
        " nowcast themselves (S.2; no interval below min_events shared events), and each mode's event"
        " coverage."
    ),
    grain=(
        "one row per (model_id, comparator_model_id, fit_id, horizon, scope, target, decomposition,"
        " indicator_id, metric)"
    ),
    columns=(
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "model (or 'pooled' for cross-model aggregates)", False),
        _c("comparator_model_id", "VARCHAR", "second model of a paired comparison (NULL otherwise)"),
        _c("fit_id", "VARCHAR", "market_betas fit used"),
        _c(
            "fit_name",
            "VARCHAR",
            "market_beta_fits name of that fit in the evaluation mode (NULL where no fit is used)",
        ),
        _c("horizon", "VARCHAR", "terminal | median_<k>d", False),
        _c("scope", "VARCHAR", "overall | theme", False),
        _c("target", "VARCHAR", "return | shock (NULL where not score-based)"),
        _c(
            "decomposition",
            "VARCHAR",
            "shapley | sizing_discipline | aggregator_share | paired_bootstrap | relative_error (App. J,"
            " Table 16) | event_coverage (model_id 'pooled': the span's releases and events) |"
            " arima_provenance (the auto-ARIMA's scored releases against App. I: n_releases,"
            " n_older_vintage, n_h_4plus, min_h, max_h)",
            False,
        ),
        _c("indicator_id", "VARCHAR", "indicator the value belongs to (NULL for model-level metrics)"),
        _c(
            "metric",
            "VARCHAR",
            "contribution | mean_abs_s_hat | corr_abs_s_hat_abs_error | sign_accuracy | mean_abs_s |"
            " n_field_events | raw_error_share | relative_error_share | economic_weight | delta | ci95_lo |"
            " ci95_hi (paired: absent with fewer shared events than min_events) | n_events | min_events |"
            " mean_abs_rel_error (own releases) | mean_abs_rel_error_common, n_field_events_common (the"
            " field-events every common-set model nowcasts) | n_release_timestamps | n_releases |"
            " n_releases_no_consensus |"
            " n_timestamps_no_consensus | n_timestamps_merged (joined an overlapping window's event) |"
            " n_events | n_events_no_usable_window | n_events_scored",
            False,
        ),
        _c("value", "DOUBLE", "the number (score points, shares in %, counts)"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

RELATIVE_ERRORS = Table(
    name="relative_errors",
    doc=(
        "Real-time squared relative nowcast error (LiveMacroEval App. J): ((nowcast - actual)/s_i)^2 averaged"
        " per model, indicator, reference period and day before the release; s_i = mean |actual| over the"
        " evaluated target months."
    ),
    grain="one row per (model_id, indicator_id, reference_period, days_to_release)",
    columns=(
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "model", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the reference period", False),
        _c("release_at", "TIMESTAMPTZ", "release timestamp, UTC", False),
        _c("days_to_release", "INTEGER", "floor((release_at - issued_at) / 24 h): 0 = last 24 hours", False),
        _c("n_nowcasts", "INTEGER", "valid pre-release nowcasts in that day", False),
        _c("mean_sq_rel_error", "DOUBLE", "mean of ((nowcast - actual)/s_i)^2", False),
        _c(
            "s_i",
            "DOUBLE",
            "scale: mean |actual| of the indicator over the evaluated months, reporting unit",
            False,
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "model_id", "indicator_id", "reference_period", "days_to_release"),
)

LIVEBETTING_SCORES = Table(
    name="livebetting_scores",
    doc=(
        "LiveBetting Score (LiveMacroEval App. L Eq. 13, Table 13): $1 hourly bets on the bucket holding the"
        " model's latest nowcast whose answer existed by the hour, inside the prediction window (from its"
        " opening to the release), per market and segment, with the profit decomposition and every excluded"
        " hour counted by reason. hours = 'window': every price hour of the window; 'common': only the hours"
        " on which every compared model of the market bets (like with like)."
    ),
    grain="one row per (model_id, market_id, hours, segment); segment 'total' = the whole window",
    columns=(
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "model", False),
        _c("market_id", "VARCHAR", "prediction market (prediction_market_prices.market_id)", False),
        _c(
            "hours",
            "VARCHAR",
            "window (every price hour in [window_opens_at, release_at)) | common (the hours every "
            "compared model bets on)",
            False,
        ),
        _c(
            "window_opens_at",
            "TIMESTAMPTZ",
            "betting window opening, UTC: the first target-month window that nowcasts the market (App. O:"
            " 2026Q1 GDP from the February window, 2026-02-25; a monthly market"
            " nowcast_windows.opens_at); no bet before it",
        ),
        _c("n_models_common", "INTEGER", "models compared on the common hours (NULL on window rows)"),
        _c("indicator_id", "VARCHAR", "catalog indicator id the market resolves on", False),
        _c("reference_period", "DATE", "reference period the market resolves on", False),
        _c("release_at", "TIMESTAMPTZ", "release timestamp, UTC (bets strictly before it)", False),
        _c("winning_bucket", "VARCHAR", "bucket label holding the released value", False),
        _c(
            "segment",
            "VARCHAR",
            "target window ('2026-02 window': the hours from that target month's window opening to the next"
            " one's or the release; Table 13's February / March segments) or 'total'",
            False,
        ),
        _c(
            "n_hours",
            "INTEGER",
            "price hours of the segment inside the window (common rows: common hours)",
            False,
        ),
        _c("n_bets", "INTEGER", "$1 bets placed", False),
        _c("n_wins", "INTEGER", "bets on the winning bucket", False),
        _c("win_rate", "DOUBLE", "n_wins / n_bets"),
        _c("profit", "DOUBLE", "sum of (1{win}/p - 1), dollars", False),
        _c("segment_return", "DOUBLE", "profit / n_bets of the segment"),
        _c("final_return", "DOUBLE", "Eq. 13 over the whole window: total profit / all bets"),
        _c(
            "return_if_segment_zero",
            "DOUBLE",
            "final return had this segment made zero profit (NULL for total)",
        ),
        _c(
            "n_no_nowcast",
            "INTEGER",
            "hours excluded: no answer known yet (none issued, or not yet answered)",
            False,
        ),
        _c("n_no_bucket", "INTEGER", "hours excluded: nowcast in no bucket", False),
        _c("n_missing_price", "INTEGER", "hours excluded: bucket price missing", False),
        _c("n_zero_price", "INTEGER", "hours excluded: bucket price 0 (would divide by zero)", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "model_id", "market_id", "hours", "segment"),
)

LIVEBETTING_BETS = Table(
    name="livebetting_bets",
    doc=(
        "The hour-by-hour bet stream behind livebetting_scores (App. L): one row per price hour of the"
        " prediction window (opening to release), the bet placed or the reason none was, and the cumulative"
        " return curve."
    ),
    grain="one row per (model_id, market_id, bet_at)",
    columns=(
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "model", False),
        _c("market_id", "VARCHAR", "prediction market", False),
        _c(
            "bet_at",
            "TIMESTAMPTZ",
            "price hour, UTC (at or after the window opens, strictly before the release)",
            False,
        ),
        _c("segment", "VARCHAR", "segment label", False),
        _c(
            "nowcast",
            "DOUBLE",
            "latest valid pre-release nowcast whose answer was known at bet_at, reporting unit",
        ),
        _c("nowcast_issued_at", "TIMESTAMPTZ", "when that nowcast was issued, UTC"),
        _c(
            "nowcast_known_at",
            "TIMESTAMPTZ",
            "when its answer existed (nowcasts.answered_at; the consensus: its known "
            "time, see livebetting_scores), UTC; <= bet_at",
        ),
        _c("bucket", "VARCHAR", "bucket label holding the nowcast"),
        _c("price", "DOUBLE", "that bucket's YES price at bet_at"),
        _c("status", "VARCHAR", "bet | no_nowcast | no_bucket | missing_price | zero_price", False),
        _c("won", "BOOLEAN", "the bucket was the winning one (NULL when no bet)"),
        _c("payout", "DOUBLE", "1/p if won else 0, dollars per $1", False),
        _c("profit", "DOUBLE", "payout - 1 for a bet, 0 otherwise", False),
        _c("cum_bets", "INTEGER", "bets placed up to and including bet_at", False),
        _c("cum_profit", "DOUBLE", "cumulative profit, dollars", False),
        _c("cum_return", "DOUBLE", "cum_profit / cum_bets (Eq. 13 so far; NULL before the first bet)"),
        _c(
            "common_hour",
            "BOOLEAN",
            "every compared model of the market bets this hour (the common-hours board)",
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "model_id", "market_id", "bet_at"),
)

MARKET_BETA_FITS = Table(
    name="market_beta_fits",
    doc=(
        "Named market-beta fits (the fit windows of the market_betas asset's config: 'full' = Table 9,"
        " 'no_covid' = K.3 refit, 'backtest' = events up to the fit cutoff). A name points at the fit_id its"
        " window produced; when the data under a window change, a new fit_id is added under the same name and"
        " the old rows stay. Scores use the fit a name confirmed most recently."
    ),
    grain="one row per (fit_name, fit_id)",
    columns=(
        _c("fit_name", "VARCHAR", "fit window name (full | no_covid | backtest | user-defined)", False),
        _c("fit_id", "VARCHAR", "market_betas.fit_id the window produced", False),
        _c("first_month", "VARCHAR", "first release month of the window, YYYY-MM (America/New_York)", False),
        _c("last_month", "VARCHAR", "last release month of the window (inclusive)", False),
        _c("exclude_covid", "BOOLEAN", "events released 2020-03-01..2020-12-31 (ET) dropped (K.3)", False),
        _c(
            "lambda_rule",
            "VARCHAR",
            "cv | fixed:<value> | from:<fit_name> (that fit's lambda, as K.3)",
            False,
        ),
        _c(
            "registered_at",
            "TIMESTAMPTZ",
            "first materialization that produced this (fit_name, fit_id), UTC",
            False,
        ),
        _c(
            "confirmed_at",
            "TIMESTAMPTZ",
            "latest materialization that produced it, UTC (the current fit of a "
            "name has the latest confirmed_at)",
            False,
        ),
        _c(
            "available_at",
            "TIMESTAMPTZ",
            "the fit's events are all known: latest available_at of the events used, UTC",
            False,
        ),
    ),
    partition_by=("fit_name",),
    primary_key=("fit_name", "fit_id"),
)

# ---------------------------------------------------------------------------------------------
# Macro track: the paper's remaining analyses (App. E, F, G, Q, R; science in leaf_live/macro/analyses/).
# partition_key = the analysed model_id: each analysis asset replaces one model's slice per run.
# ---------------------------------------------------------------------------------------------

_MODEL = _c("model_id", "VARCHAR", "model analysed (nowcasts.model_id)", False)
_IND = _c("indicator_id", "VARCHAR", "catalog indicator id", False)
_REF = _c("reference_period", "DATE", "first day of the reference period", False)
_REL_AT = _c("release_at", "TIMESTAMPTZ", "first release of the period, UTC", False)
_COMP = _c("comparator_model_id", "VARCHAR", "public forecast compared against (consensus/*, fed/*)", False)
_RUN = _c(
    "run_id",
    "VARCHAR",
    "run of the series: a recorded file's nowcasts.partition_key (one target month's job, "
    "the paper's series) or 'hourly' for a model's single stream",
    False,
)

POST_RELEASE_RECOVERY = Table(
    name="post_release_recovery",
    doc=(
        "Post-release recovery (LiveMacroEval App. E, Fig. 7): nowcasts issued at or after the release"
        " against the released value. A nowcast has reached the release when it lies strictly within half the"
        " release's printed resolution of it (0.1 for percent and index series, 1 thousand for payrolls and"
        " housing counts, 10 thousand for existing home sales), i.e. it prints as the released number. Hours"
        " are measured from the release."
    ),
    grain=(
        "one row per series (model_id, indicator_id, reference_period, run_id) with a valid nowcast at or"
        " after the release"
    ),
    columns=(
        PARTITION_KEY,
        _MODEL,
        _IND,
        _REF,
        _RUN,
        _REL_AT,
        _c("actual", "DOUBLE", "released value, reporting unit", False),
        _c(
            "tolerance",
            "DOUBLE",
            "distance below which a nowcast has reached the release, reporting unit",
            False,
        ),
        _c("n_pre", "INTEGER", "valid pre-release nowcast hours", False),
        _c(
            "n_pre_window",
            "INTEGER",
            "of those, in the last 24 h before the release (the pre-release cluster)",
            False,
        ),
        _c("pre_median", "DOUBLE", "median of the pre-release cluster, reporting unit"),
        _c("pre_iqr", "DOUBLE", "interquartile range of the pre-release cluster (numpy linear quantiles)"),
        _c("pre_gap", "DOUBLE", "|pre_median - actual|: the release-versus-prior-cluster gap"),
        _c("n_post", "INTEGER", "valid nowcast hours at or after the release", False),
        _c("first_post_hours", "DOUBLE", "hours from the release to the first post-release nowcast", False),
        _c("last_post_hours", "DOUBLE", "hours from the release to the last post-release nowcast", False),
        _c(
            "hours_to_first_hit",
            "DOUBLE",
            "hours from the release to the first nowcast that reached it (NULL: none did)",
        ),
        _c(
            "hours_to_settle",
            "DOUBLE",
            "hours from the release after which every nowcast reached it (NULL: the last one did not)",
        ),
        _c("share_post_reached", "DOUBLE", "share of post-release nowcasts that reached the release", False),
        _c("post_median", "DOUBLE", "median of the post-release nowcasts", False),
        _c(
            "post_iqr",
            "DOUBLE",
            "interquartile range of the post-release nowcasts (residual dispersion)",
            False,
        ),
        _c("post_median_abs_dev", "DOUBLE", "median |nowcast - actual| after the release", False),
        _c(
            "spline_points",
            "INTEGER",
            "hours the smoothing spline was fit on (from 5 days before the release on)",
            False,
        ),
        _c(
            "spline_lambda",
            "DOUBLE",
            "GCV-chosen penalty of the cubic smoothing spline, x in days (scipy "
            "make_smoothing_spline; NULL when fewer than 5 points)",
        ),
        _c("spline_lambda_at_bound", "BOOLEAN", "GCV stopped at the end of even the widened search range"),
        _c(
            "spline_gap_24h",
            "DOUBLE",
            "|spline(24 h after the release) - actual| (NULL if no nowcast that late)",
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "indicator_id", "reference_period", "run_id"),
)

POST_RELEASE_PATHS = Table(
    name="post_release_paths",
    doc=(
        "The hourly nowcast path around the release and the GCV cubic smoothing spline through it (App. E"
        " Fig. 7), from 5 days before the release to the last post-release nowcast. available_at: the whole"
        " path's latest (the spline uses every point)."
    ),
    grain="one row per (model_id, indicator_id, reference_period, run_id, issued_at)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _IND,
        _REF,
        _RUN,
        _c("issued_at", "TIMESTAMPTZ", "nowcast hour, UTC", False),
        _c(
            "hours_from_release",
            "DOUBLE",
            "(issued_at - release_at) in hours, negative before the release",
            False,
        ),
        _c("value", "DOUBLE", "the hour's nowcast, reporting unit", False),
        _c(
            "n_runs",
            "INTEGER",
            "valid nowcasts of the run in this hour (averaged; 1 in the stored data)",
            False,
        ),
        _c("spline", "DOUBLE", "smoothing-spline value at this hour"),
        _c("after_release", "BOOLEAN", "issued at or after the release", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "indicator_id", "reference_period", "run_id", "issued_at"),
)

COPYING_CONVERGENCE = Table(
    name="copying_convergence",
    doc=(
        "Copying test 1, level convergence (App. F, Table 3): gap G_t = |nowcast - comparator| / sigma_i at"
        " every pre-release hour; the terminal gap and the within-series Spearman rho of G_t with hours to"
        " release (> 0: the gap closes toward the release). Comparator value as of each hour (Fed) or the"
        " final stored consensus (consensus/*: only its final value, stamped 1 min before the release,"
        " exists)."
    ),
    grain="one row per (model_id, comparator_model_id, indicator_id, reference_period, run_id)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _COMP,
        _c(
            "comparator_rule",
            "VARCHAR",
            "as_of (value published by each hour) | terminal (final consensus)",
            False,
        ),
        _IND,
        _REF,
        _RUN,
        _REL_AT,
        _c(
            "sigma",
            "DOUBLE",
            "release-surprise scale sigma_i (surprise_scales, as known at the release)",
            False,
        ),
        _c("n_nowcasts", "INTEGER", "pre-release nowcast hours with a comparator value", False),
        _c("n_without_comparator", "INTEGER", "pre-release hours before the comparator's first value", False),
        _c("first_issued_at", "TIMESTAMPTZ", "first hour compared, UTC", False),
        _c("terminal_issued_at", "TIMESTAMPTZ", "last pre-release nowcast hour, UTC", False),
        _c("terminal_value", "DOUBLE", "last pre-release nowcast, reporting unit", False),
        _c("terminal_comparator_value", "DOUBLE", "comparator value at that hour", False),
        _c("terminal_gap_sigma", "DOUBLE", "terminal gap in sigma units (a copier shows 0)", False),
        _c("spearman_rho", "DOUBLE", "Spearman rho(G_t, hours to release) (NULL: < 3 hours or no variation)"),
        _c("spearman_p", "DOUBLE", "its two-sided p-value (scipy.stats.spearmanr)"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "comparator_model_id", "indicator_id", "reference_period", "run_id"),
)

COPYING_GAP_BINS = Table(
    name="copying_gap_bins",
    doc=(
        "Copying test 1 by time to release (App. F, Table 4): each series' median gap G_t (sigma units)"
        " within hours-before-release bins [hours_lo, hours_hi); the table's median over series weights"
        " series equally."
    ),
    grain="one row per (model_id, comparator_model_id, indicator_id, reference_period, run_id, bin)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _COMP,
        _IND,
        _REF,
        _RUN,
        _c(
            "bin",
            "VARCHAR",
            "336+ | 168-336 | 96-168 | 48-96 | 24-48 | 12-24 | 6-12 | 0-6 (hours before release)",
            False,
        ),
        _c("hours_lo", "DOUBLE", "bin start, hours before the release (inclusive)", False),
        _c("hours_hi", "DOUBLE", "bin end (exclusive; NULL = open)"),
        _c("n_nowcasts", "INTEGER", "nowcast hours in the bin", False),
        _c("median_gap_sigma", "DOUBLE", "median G_t in the bin, sigma units", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "comparator_model_id", "indicator_id", "reference_period", "run_id", "bin"),
)

COPYING_COMOVEMENT = Table(
    name="copying_comovement",
    doc=(
        "Copying test 2, first-difference co-movement (App. F, Table 5): Pearson r between the model's and"
        " the comparator's day-over-day changes (each day's value = the latest strictly before the day's end"
        " in New York, or before the release on release day), pooled across reference periods."
    ),
    grain="one row per (model_id, comparator_model_id, indicator_id)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _COMP,
        _c("comparator_rule", "VARCHAR", "as_of | terminal", False),
        _IND,
        _c("n_series", "INTEGER", "series pooled (reference periods x runs)", False),
        _c("n_day_pairs", "INTEGER", "pairs of day-over-day changes", False),
        _c("r_delta", "DOUBLE", "Pearson r of the changes (NULL unless status = ok)"),
        _c("p_value", "DOUBLE", "two-sided p-value (scipy.stats.pearsonr)"),
        _c("status", "VARCHAR", "ok | too_few_days | comparator_constant | agent_constant", False),
        _c("first_day_end", "TIMESTAMPTZ", "first day end used, UTC", False),
        _c("last_day_end", "TIMESTAMPTZ", "last day end used (the release), UTC", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "comparator_model_id", "indicator_id"),
)

COPYING_EVENT_TIME = Table(
    name="copying_event_time",
    doc=(
        "Copying test 3, event-time concentration (App. F, Table 6): do the model's large revisions (|Delta|"
        " at or above its series' 90th percentile, not 0) cluster within +-window_hours of a Fed publication?"
        " Delta share = share of large revisions inside minus share of all revisions inside (> 0: the copying"
        " pattern); publications within 48 h after a kept one are dropped; perm p from reassigning magnitudes"
        " across each series' revision times, KS p from |Delta| inside vs outside."
    ),
    grain="one row per (model_id, comparator_model_id, indicator_id)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _COMP,
        _IND,
        _c("n_series", "INTEGER", "series pooled (reference periods x runs)", False),
        _c(
            "n_fed_updates",
            "INTEGER",
            "distinct comparator publications before the releases of the pooled series",
            False,
        ),
        _c(
            "n_fed_updates_kept",
            "INTEGER",
            "publications left after dropping those < 48 h after a kept one",
            False,
        ),
        _c("n_revisions", "INTEGER", "revisions between consecutive pre-release nowcast hours", False),
        _c("n_large", "INTEGER", "large revisions", False),
        _c("n_inside", "INTEGER", "revisions inside a publication window", False),
        _c("share_large_inside", "DOUBLE", "share of large revisions inside (NULL without large revisions)"),
        _c("share_all_inside", "DOUBLE", "share of all revisions inside"),
        _c("delta_share", "DOUBLE", "share_large_inside - share_all_inside"),
        _c("perm_p", "DOUBLE", "two-sided permutation p, (1 + #{|stat_b| >= |stat|}) / (B + 1)"),
        _c("ks_stat", "DOUBLE", "two-sample KS statistic of |Delta| inside vs outside"),
        _c("ks_p", "DOUBLE", "two-sided KS p (scipy.stats.ks_2samp)"),
        _c(
            "status", "VARCHAR", "ok | no_large_revisions | no_revisions_inside | no_revisions_outside", False
        ),
        _c("perm_draws", "INTEGER", "permutations B", False),
        _c("perm_seed", "BIGINT", "seed of the permutations", False),
        _c("window_hours", "DOUBLE", "half-width of a publication window, hours", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "comparator_model_id", "indicator_id"),
)

_BLOCK_KEY = (
    PARTITION_KEY,
    _MODEL,
    _IND,
    _REF,
    _c("issued_at", "TIMESTAMPTZ", "when the nowcast was issued, UTC", False),
)

RATIONALE_AUDIT = Table(
    name="rationale_audit",
    doc=(
        "What the nowcast rationales contain (App. G, Table 7), one row per rationale block"
        " (nowcasts.rationale). Keyword rules in leaf_live/macro/analyses/rationales.py (the paper does not"
        " publish its lists)."
    ),
    grain="one row per nowcasts row with a non-empty rationale",
    columns=(
        *_BLOCK_KEY,
        _c("valid", "BOOLEAN", "the nowcast passed parsing and guardrails", False),
        _c("value", "DOUBLE", "the nowcast, reporting unit"),
        _c("n_chars", "INTEGER", "characters in the block", False),
        _c("names_agency", "BOOLEAN", "names the BLS, the BEA, the Census Bureau or the ISM", False),
        _c(
            "judges_own_figure",
            "BOOLEAN",
            "exercises explicit judgement over its figure (adjust, shave, nudge, ...)",
            False,
        ),
        _c(
            "states_vintage",
            "BOOLEAN",
            "states the data vintage (advance estimate, revised, preliminary, ...)",
            False,
        ),
        _c("performs_arithmetic", "BOOLEAN", "holds at least one explicit calculation", False),
        _c("n_calculations", "INTEGER", "explicit calculations found", False),
        _c("n_calculations_matched", "INTEGER", "of those, recomputed within 2% of the stated result", False),
        _c("n_citations", "INTEGER", "URLs in nowcasts.citations", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

RATIONALE_CALCULATIONS = Table(
    name="rationale_calculations",
    doc=(
        "Every explicit calculation '<expression> (= | ≈ | ~ | →) <number>' in a rationale, recomputed (App."
        " G): matched when |computed - stated| <= 2% |stated| (a result written with % may also be the"
        " fraction)."
    ),
    grain="one row per (rationale block, calc_index)",
    columns=(
        *_BLOCK_KEY,
        _c("calc_index", "INTEGER", "0-based order of the calculation in the block", False),
        _c("expression", "VARCHAR", "the expression as written", False),
        _c("n_operands", "INTEGER", "numbers combined", False),
        _c("stated", "DOUBLE", "result the agent wrote (without applying %)", False),
        _c("stated_is_percent", "BOOLEAN", "the result carried a % sign", False),
        _c("computed", "DOUBLE", "our value of the expression", False),
        _c("rel_error", "DOUBLE", "|computed - stated| / |stated| (the closer reading)", False),
        _c("matched", "BOOLEAN", "rel_error <= 2%", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

CITATION_DOMAINS = Table(
    name="citation_domains",
    doc=(
        "Citation composition of the rationales (App. G): cited hosts per model, with their share of the"
        " model's citations; official = .gov, ISM or a Federal Reserve bank; aggregator = consensus/forecast"
        " aggregators."
    ),
    grain="one row per (model_id, domain)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _c("domain", "VARCHAR", "host without www.", False),
        _c("category", "VARCHAR", "official | aggregator | other", False),
        _c("n_citations", "INTEGER", "citations of the host", False),
        _c("n_blocks", "INTEGER", "rationale blocks citing it", False),
        _c("share", "DOUBLE", "n_citations / all the model's citations", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "domain"),
)

CROSS_MODEL_ERRORS = Table(
    name="cross_model_errors",
    doc=(
        "Cross-model error analysis (App. Q, Table 14): each model's final pre-release nowcast against the"
        " release and the consensus, in reporting and sigma units, with the shared-failure flags (all models"
        " erring in the same direction, wrong sign of a growth rate) and the release's change from the"
        " previous release."
    ),
    grain=(
        "one row per series (model_id, indicator_id, reference_period, run_id) with a pre-release nowcast and"
        " a release"
    ),
    columns=(
        PARTITION_KEY,
        _MODEL,
        _IND,
        _REF,
        _RUN,
        _REL_AT,
        _c(
            "final_issued_at",
            "TIMESTAMPTZ",
            "hour of the last valid nowcast strictly before the release, UTC",
            False,
        ),
        _c("final_value", "DOUBLE", "that nowcast, reporting unit", False),
        _c(
            "n_runs",
            "INTEGER",
            "valid nowcasts of the run in that hour (averaged; 1 in the stored data)",
            False,
        ),
        _c("actual", "DOUBLE", "released value", False),
        _c("consensus", "DOUBLE", "consensus C at release (NULL if none)"),
        _c("sigma", "DOUBLE", "sigma_i as known at the release", False),
        _c("error", "DOUBLE", "final_value - actual", False),
        _c("error_sigma", "DOUBLE", "error / sigma", False),
        _c("consensus_error", "DOUBLE", "consensus - actual"),
        _c("consensus_error_sigma", "DOUBLE", "consensus_error / sigma"),
        _c("beats_consensus", "BOOLEAN", "|error| < |consensus_error| (NULL without consensus)"),
        _c(
            "sign_wrong",
            "BOOLEAN",
            "growth-rate indicators: sign(final) != sign(actual) (NULL for levels or actual 0)",
        ),
        _c("prior_period", "DATE", "previous reference period released before this release"),
        _c("prior_actual", "DOUBLE", "its released value"),
        _c("change_vs_prior", "DOUBLE", "actual - prior_actual"),
        _c("change_vs_prior_sigma", "DOUBLE", "change_vs_prior / sigma"),
        _c("n_models", "INTEGER", "models with a final nowcast of this release", False),
        _c(
            "n_same_direction", "INTEGER", "of those, models with a run erring in this row's direction", False
        ),
        _c(
            "shared_miss", "BOOLEAN", "at least two models and all err in the same (nonzero) direction", False
        ),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "indicator_id", "reference_period", "run_id"),
)

NOWCAST_PATH_SUMMARIES = Table(
    name="nowcast_path_summaries",
    doc=(
        "Nowcast paths over a stated span before the release (App. Q, Table 15; default March 2026 CPI over"
        " April 2-7, 2026 in New York): median and IQR of the hourly nowcasts, the final pre-release nowcast"
        " and its deviation from the release."
    ),
    grain="one row per (model_id, run_id, case_label)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _RUN,
        _c("case_label", "VARCHAR", "name of the span", False),
        _IND,
        _REF,
        _c("span_start", "TIMESTAMPTZ", "first instant of the span, UTC (00:00 New York)", False),
        _c("span_end", "TIMESTAMPTZ", "end of the span (exclusive; never after the release), UTC", False),
        _c("n_nowcasts", "INTEGER", "nowcast hours in the span", False),
        _c("median", "DOUBLE", "median (numpy linear quantile)", False),
        _c("q25", "DOUBLE", "25th percentile", False),
        _c("q75", "DOUBLE", "75th percentile", False),
        _c("iqr", "DOUBLE", "q75 - q25", False),
        _c("final_issued_at", "TIMESTAMPTZ", "last pre-release nowcast hour, UTC", False),
        _c("final_value", "DOUBLE", "last pre-release nowcast", False),
        _c("actual", "DOUBLE", "released value", False),
        _c("deviation", "DOUBLE", "final_value - actual", False),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "run_id", "case_label"),
)

REVISION_ATTRIBUTIONS = Table(
    name="revision_attributions",
    doc=(
        "Information shocks and nowcast revisions (App. R): the headline nowcast's revision R^H over an event"
        " window (median of the hours after it minus median of the hours before it) and Eq. 16's implied"
        " revision of the component forecast R^H / s_g (default: March 2026 CPI, April 8 2026 10:30-14:00 New"
        " York, gasoline share 2.89%, realized gasoline 18.9% YoY)."
    ),
    grain="one row per (model_id, run_id, event_label)",
    columns=(
        PARTITION_KEY,
        _MODEL,
        _RUN,
        _c("event_label", "VARCHAR", "name of the event window", False),
        _IND,
        _REF,
        _c("event_start", "TIMESTAMPTZ", "window start, UTC", False),
        _c("event_end", "TIMESTAMPTZ", "window end, UTC", False),
        _REL_AT,
        _c("n_pre", "INTEGER", "nowcast hours in the 24 h before the window", False),
        _c("n_inside", "INTEGER", "nowcast hours inside the window", False),
        _c("n_post", "INTEGER", "nowcast hours in the 24 h after it (before the release)", False),
        _c("pre_median", "DOUBLE", "median before", False),
        _c("post_median", "DOUBLE", "median after", False),
        _c("revision", "DOUBLE", "R^H = post_median - pre_median, reporting unit", False),
        _c("last_pre", "DOUBLE", "last nowcast before the window", False),
        _c("first_post", "DOUBLE", "first nowcast after it", False),
        _c("step", "DOUBLE", "first_post - last_pre", False),
        _c("component", "VARCHAR", "component the revision is read through", False),
        _c("component_share", "DOUBLE", "its expenditure share s_g (fraction)", False),
        _c("implied_component_revision", "DOUBLE", "Eq. 16: revision / component_share", False),
        _c("component_realized", "DOUBLE", "realized component rate (NULL if not given)"),
        _c("component_ratio", "DOUBLE", "implied / realized"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("partition_key", "run_id", "event_label"),
)

ANALYSIS_TABLES = (
    POST_RELEASE_RECOVERY,
    POST_RELEASE_PATHS,
    COPYING_CONVERGENCE,
    COPYING_GAP_BINS,
    COPYING_COMOVEMENT,
    COPYING_EVENT_TIME,
    RATIONALE_AUDIT,
    RATIONALE_CALCULATIONS,
    CITATION_DOMAINS,
    CROSS_MODEL_ERRORS,
    NOWCAST_PATH_SUMMARIES,
    REVISION_ATTRIBUTIONS,
)


SERIES_VINTAGES = Table(
    name="series_vintages",
    doc=(
        "Real-time vintages the auto-ARIMA baseline (App. I) fits on, one row per observation of a vintage:"
        " the catalog's FRED-MD/FRED-QD columns (source fred-md / fred-qd; available_at = the end of the"
        " vintage's month) and real GDP from the Philadelphia Fed's Real-Time Data Set (philly-rtdsm,"
        " ROUTPUT; quarterly vintages labelled with the quarter's middle month, available_at = the end of its"
        " 15th day, New York), extended after the last recorded vintage by approximate vintages chained from"
        " first/second/third releases (gdp-releases; available_at = the release, 08:30 ET). Values are levels"
        " in the publisher's units; empty cells are not stored."
    ),
    grain="one row per (source, series_id, vintage, reference_period)",
    columns=(
        _c(
            "partition_key",
            "VARCHAR",
            "release month holding the vintage: its own month (the first release month "
            "also holds the 3 months before it)",
            False,
        ),
        _c("source", "VARCHAR", "fred-md | fred-qd | philly-rtdsm | gdp-releases", False),
        _c(
            "series_id",
            "VARCHAR",
            "column as published (FRED-MD/QD mnemonic, e.g. CPIAUCSL, PPIFGS; ROUTPUT)",
            False,
        ),
        _c(
            "vintage",
            "VARCHAR",
            "vintage label YYYY-MM (FRED-MD/QD file month; RTDSM: the quarter's middle month; "
            "gdp-releases: the release month)",
            False,
        ),
        _REF,
        _c(
            "value",
            "DOUBLE",
            "observed level in the publisher's units (billions of chained dollars SAAR for GDP)",
            False,
        ),
        _c(
            "tcode",
            "INTEGER",
            "McCracken-Ng transform code of the series in that vintage (ROUTPUT: 5, as GDPC1)",
            False,
        ),
        _c(
            "available_at",
            "TIMESTAMPTZ",
            "when the vintage was published, UTC (rule per source, see doc)",
            False,
        ),
    ),
    partition_by=("partition_key",),
    primary_key=("source", "series_id", "vintage", "reference_period"),
    index_primary_key=False,  # a vintage lives in one partition: replace_partition enforces the key
)

ARIMA_FITS = Table(
    name="arima_fits",
    doc=(
        "Fit cache of the auto-ARIMA baseline (App. I): every (p, q) of each distinct history's AIC grid,"
        " keyed by the series, the exact content of the history and the estimator version, so reruns,"
        " backfills and wider spans refit only what changed, and an estimator change invalidates every row"
        " (new version, new keys). Coefficients are in the modelled space (log levels for log transform"
        " codes)."
    ),
    grain="one row per (series_id, content_hash, p, q, estimator_version)",
    columns=(
        _c(
            "series_id",
            "VARCHAR",
            "modelled series: <indicator_id>:<FRED-MD/QD column or indicator id>",
            False,
        ),
        _c(
            "content_hash",
            "VARCHAR",
            "sha256 (32 hex) of the history's float64 values with d and trend",
            False,
        ),
        _c(
            "estimator_version",
            "VARCHAR",
            "estimator + engine version (changes with their code or settings)",
            False,
        ),
        _c("p", "INTEGER", "AR order", False),
        _c("d", "INTEGER", "differencing order (transform code)", False),
        _c("q", "INTEGER", "MA order", False),
        _c("trend", "VARCHAR", "n | c | t (none, constant, linear time trend; App. I rule)", False),
        _c("ar", "DOUBLE[]", "AR coefficients phi_1..phi_p", False),
        _c("ma", "DOUBLE[]", "MA coefficients theta_1..theta_q", False),
        _c("trend_coef", "DOUBLE", "mean (c) or slope per period (t), modelled units; NULL for n"),
        _c("loglik", "DOUBLE", "burned log-likelihood at the coefficients (-inf if the order failed)", False),
        _c("aic", "DOUBLE", "-2 loglik + 2 (p + q + k_trend + 1) (inf if the order failed)", False),
        _c("nobs", "INTEGER", "observations in the likelihood, n - d - max(p, q+1)", False),
        _c("n", "INTEGER", "observations in the history", False),
        _c(
            "method",
            "VARCHAR",
            "closed_form | cold | warm | screened | failed (how the coefficients were found)",
            False,
        ),
        _c("converged", "BOOLEAN", "the optimizer's convergence flag (True for closed form)", False),
        _c("cold_grid", "BOOLEAN", "the whole grid of this history was also fitted from cold starts", False),
        _c(
            "vintage",
            "VARCHAR",
            "vintage of the first window that fitted this history (YYYY-MM; NULL for first releases)",
        ),
        _c("fitted_at", "TIMESTAMPTZ", "when the row was computed, UTC", False),
        _c(
            "available_at",
            "TIMESTAMPTZ",
            "when the history was known: the first window open that used it, UTC",
            False,
        ),
    ),
    partition_by=("series_id",),
    primary_key=("series_id", "content_hash", "p", "q", "estimator_version"),
)

# Later stages register their tables here too (one schema definition per table).

# Registration order = the order of the README's table docs.
for _t in (
    INDICATOR_CATALOG,
    RELEASE_CALENDAR,
    RELEASES,
    ANNOUNCEMENT_RETURNS,
    SURPRISE_SCALES,
    SURPRISE_EVENTS,
    NOWCASTS,
    SERIES_VINTAGES,
    ARIMA_FITS,
    LLM_CALLS,
    NOWCAST_WINDOWS,
    PREDICTION_MARKET_PRICES,
    MARKET_BETAS,
    MARKET_BETA_FITS,
    LIVEMACRO_SCORES,
    LIVEMACRO_EVENT_LOSSES,
    LIVEMACRO_RANKINGS,
    SCORE_DECOMPOSITIONS,
    RELATIVE_ERRORS,
    LIVEBETTING_SCORES,
    LIVEBETTING_BETS,
    *ANALYSIS_TABLES,
):
    register(_t)
