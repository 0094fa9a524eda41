"""DuckDB storage: every table's schema (defined once, here), the partition-replace helper and
read-only connections for analysts.

Principles (DESIGN.md §Principles 1 and 3):

* every fact row carries ``available_at`` (TIMESTAMPTZ, UTC): when it became knowable, so a stage can
  ask "as of time t" with ``WHERE available_at <= t``;
* one asset owns one table (or one ``producer`` slice of a shared table); materializing a partition
  replaces exactly that partition's rows in one transaction, so reruns and backfills neither duplicate
  nor lose rows, and a partition that fails validation leaves the previous rows untouched.

Timestamps are stored as ``TIMESTAMPTZ`` and every connection runs with ``TimeZone='UTC'``.
Reference periods are ``DATE`` of the period's first day (2026-01-01 for 2026Q1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import duckdb
import polars as pl

from leaf_live.catalog import INDICATOR_IDS


class StorageError(ValueError):
    """A frame does not fit its table; the message names the table, column and offending value."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB type
    doc: str  # meaning and unit, shown in README / `leaf-live tables`
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    grain: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()  # columns that identify one replaceable slice
    primary_key: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    def ddl(self) -> str:
        cols = ",\n  ".join(
            f'"{c.name}" {c.type}' + ("" if c.nullable else " NOT NULL") for c in self.columns
        )
        pk = f",\n  PRIMARY KEY ({', '.join(self.primary_key)})" if self.primary_key else ""
        return f'CREATE TABLE IF NOT EXISTS "{self.name}" (\n  {cols}{pk}\n)'


def _c(name: str, type_: str, doc: str, nullable: bool = True) -> Column:
    return Column(name, type_, doc, nullable)


PARTITION_KEY = _c("partition_key", "VARCHAR", "Dagster partition that wrote the row (e.g. release month 2024-03)", False)
AVAILABLE_AT = _c("available_at", "TIMESTAMPTZ", "UTC time the fact became knowable (point-in-time filter)", False)

INDICATOR_CATALOG = Table(
    name="indicator_catalog",
    doc="The 16 LiveMacroEval indicators (Table 2, App. C, App. I transform codes, Table 9 reference beta/SE).",
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
    doc="Every scheduled release row as each calendar source reported it (actual, consensus, time), before "
    "the first-release rule. Values are converted to the indicator's reporting unit (catalog).",
    grain="one row per (source, indicator_id, release_at, period_label)",
    columns=(
        PARTITION_KEY,
        _c("source", "VARCHAR", "calendar source: livemacroeval_panel | livemacroeval_live | forexfactory | fred", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("release_at", "TIMESTAMPTZ", "release timestamp, UTC (converted from the source's zone)", False),
        _c("release_time_et", "VARCHAR", "release clock time in America/New_York, HH:MM", False),
        _c("period_label", "VARCHAR", "reference period as labelled by the source (YYYY-MM or YYYY-Qn)", False),
        _c("period_source", "VARCHAR", "event_text (label parsed from the source) | release_lag (inferred from release date)", False),
        _c("reference_period", "DATE", "first day of the reference period (quarter start for quarterly indicators)", False),
        _c("actual", "DOUBLE", "first-release actual A, reporting unit"),
        _c("consensus", "DOUBLE", "consensus C at release, reporting unit (NULL when the source had none)"),
        _c("consensus_source", "VARCHAR", "who produced C: investing | forexfactory | NULL"),
        _c("event", "VARCHAR", "source event text"),
        _c("source_file", "VARCHAR", "file (or URL) the row was read from", False),
        _c("source_row", "INTEGER", "1-based data row in source_file", False),
        _c("marked_revision", "BOOLEAN", "the source itself lists the row as a later estimate (LiveMacroEval "
           "dropped_revisions.csv); the first-release rule never keeps it, even when the earlier release it "
           "revises is missing from the files"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
)

RELEASES = Table(
    name="releases",
    doc="Canonical first releases: actual and consensus per indicator and reference period (universal "
    "first-release rule of the LiveMacroEval panel; GDP = advance estimate).",
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
    doc="E-mini S&P 500 front-month announcement-window log returns r_g = log P(T+30m) - log P(T-5m) "
    "(LiveMacroEval App. K Eq. 4), one per release timestamp.",
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
    doc="sigma_i = sample sd (ddof 1) of A - C over the frozen historical window (App. K.1 Eq. 3), in "
    "reporting units; includes releases whose futures window is unusable.",
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
    doc="Timestamp-group events (App. K.1): all releases sharing a timestamp, with the window return r_g "
    "and the 16 standardized surprises S = (A - C)/sigma_i, structural zeros for fields not released.",
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
    doc="Every macro forecaster's nowcasts (LLM agents, recorded runs, auto-ARIMA, Fed nowcasts, consensus) "
    "in the indicator's reporting unit. Rows issued at or after the release are kept, flagged, never scored. "
    "Invalid answers are kept with their reason.",
    grain="one row per (producer, model_id, indicator_id, reference_period, issued_at[, variable])",
    columns=(
        _c("producer", "VARCHAR", "asset that wrote the row (llm_nowcasts | recorded_nowcasts | arima_nowcasts | comparator_nowcasts)", False),
        PARTITION_KEY,
        _c("model_id", "VARCHAR", "provider/model@design, baseline/auto-arima, consensus/investing, fed/gdpnow, ...", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the target reference period", False),
        _c("issued_at", "TIMESTAMPTZ", "when the nowcast was issued, UTC", False),
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

LLM_CALLS = Table(
    name="llm_calls",
    doc="Every LLM call (success or final failure) with its exact request, raw response, usage and cost, so "
    "nowcasts can be re-parsed and re-scored without calling a model again (DESIGN.md principle 6). API keys "
    "are never stored. The raw response is litellm's OpenAI-format dump (Anthropic blocks under "
    "provider_specific_fields).",
    grain="one row per call_id",
    columns=(
        PARTITION_KEY,
        _c("call_id", "VARCHAR", "unique id of the call (nowcasts.raw_response_id)", False),
        _c("run_id", "VARCHAR", "id shared by the calls of one nowcast (model x prompt group x hour); team = 3 calls"),
        _c("model_id", "VARCHAR", "provider/model@design", False),
        _c("model", "VARCHAR", "litellm model string provider/model", False),
        _c("role", "VARCHAR", "single | researcher | verifier | orchestrator (App. S.1)", False),
        _c("prompt_group", "VARCHAR", "output_core | demand_sectoral (App. D)"),
        _c("requested_at", "TIMESTAMPTZ", "first attempt started, UTC", False),
        _c("completed_at", "TIMESTAMPTZ", "final answer or final failure, UTC", False),
        _c("prompt_hash", "VARCHAR", "sha256 of the canonical JSON of the request messages", False),
        _c("request_messages", "VARCHAR", "JSON list of the messages sent", False),
        _c("request_params", "VARCHAR", "JSON of model, max_tokens, timeout, web-search options (no secrets)", False),
        _c("response_json", "VARCHAR", "raw response JSON (NULL when the call failed)"),
        _c("response_model", "VARCHAR", "model name the provider reported"),
        _c("finish_reason", "VARCHAR", "stop | length | content_filter | tool_calls ..."),
        _c("status", "VARCHAR", "ok | failed (after the last attempt)", False),
        _c("error", "VARCHAR", "last error type, HTTP status and message (NULL when ok)"),
        _c("attempts", "INTEGER", "attempts made (1 = no retry)", False),
        _c("latency_s", "DOUBLE", "seconds from first attempt to final outcome, incl. backoff", False),
        _c("prompt_tokens", "INTEGER", "tokens in"),
        _c("completion_tokens", "INTEGER", "tokens out"),
        _c("total_tokens", "INTEGER", "tokens in + out as the provider reported"),
        _c("cost_usd", "DOUBLE", "USD from litellm's price map (NULL for unmapped models or failed calls)"),
        AVAILABLE_AT,
    ),
    partition_by=("partition_key",),
    primary_key=("call_id",),
)

NOWCAST_WINDOWS = Table(
    name="nowcast_windows",
    doc="Prediction window of each (indicator, reference period) (LiveMacroEval Sec. 3.4): opens 00:00 "
    "America/New_York on the 25th of the reference month (of the quarter's last month for quarterly GDP) and "
    "closes at the scheduled release timestamp. Hourly nowcasts are issued at every full hour in "
    "[opens_at, closes_at); a nowcast issued at or after closes_at is after_release.",
    grain="one row per (indicator_id, reference_period)",
    columns=(
        _c("partition_key", "VARCHAR", "release month in America/New_York, YYYY-MM", False),
        _c("indicator_id", "VARCHAR", "catalog indicator id", False),
        _c("reference_period", "DATE", "first day of the reference period (quarter start for GDP)", False),
        _c("target_month", "DATE", "month whose 25th opens the window (the quarter's last month for GDP)", False),
        _c("opens_at", "TIMESTAMPTZ", "window opens (first hourly nowcast), UTC", False),
        _c("closes_at", "TIMESTAMPTZ", "scheduled release timestamp, UTC (no nowcast at or after it is scored)", False),
        _c("release_time_et", "VARCHAR", "release clock time in America/New_York, HH:MM", False),
        _c("prompt_group", "VARCHAR", "output_core | demand_sectoral (App. D)", False),
        _c("n_issue_hours", "INTEGER", "number of full hours in [opens_at, closes_at)", False),
        _c("available_at", "TIMESTAMPTZ", "= opens_at: the window is declared when it opens (release "
           "calendars are public well before)", False),
    ),
    partition_by=("partition_key",),
)

PREDICTION_MARKET_PRICES = Table(
    name="prediction_market_prices",
    doc="Prediction-market bucket prices (Polymarket YES price, 0-1) for the macro markets used by the "
    "LiveBetting score (App. L), long format; bucket labels kept verbatim as the market titles them "
    "(parsing them is the scorer's job).",
    grain="one row per (source, market_id, bucket_label, ts)",
    columns=(
        _c("partition_key", "VARCHAR", "market_id the row belongs to", False),
        _c("source", "VARCHAR", "polymarket_grid (hourly CSV grid) | polymarket_clob (CLOB /prices-history)", False),
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

# Later stages register their tables here too (one schema definition per table).
TABLES: dict[str, Table] = {
    t.name: t
    for t in (INDICATOR_CATALOG, RELEASE_CALENDAR, RELEASES, ANNOUNCEMENT_RETURNS, SURPRISE_SCALES, SURPRISE_EVENTS, NOWCASTS,
              LLM_CALLS, NOWCAST_WINDOWS, PREDICTION_MARKET_PRICES)
}


def register(table: Table) -> Table:
    """Add a table to :data:`TABLES` (module-level, at import of the defining module)."""
    if table.name in TABLES and TABLES[table.name] != table:
        raise StorageError(f"table {table.name!r} is defined twice")
    TABLES[table.name] = table
    return table


def get_table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise StorageError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None


# ---------------------------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------------------------


def db_path(path: str | os.PathLike | None = None) -> Path:
    """The DuckDB file: ``path`` if given, else ``LEAF_LIVE_DB``, else ``data/leaf_live.duckdb``."""
    from leaf_live.settings import get_settings

    return Path(path) if path is not None else get_settings().db_path


def connect(path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """Open a read-write connection (creating the file and every registered table if needed).

    DuckDB allows one writing process at a time; Dagster runs use the in-process executor.
    """
    p = db_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(p))
    con.execute("SET TimeZone='UTC'")
    ensure_tables(con)
    return con


def connect_read_only(path: str | os.PathLike | None = None) -> duckdb.DuckDBPyConnection:
    """Open a read-only connection for analysts (works while no process holds the write lock)."""
    p = db_path(path)
    if not p.exists():
        raise StorageError(f"LEAF_LIVE_DB={p}: database file does not exist; run `leaf-live run` first")
    con = duckdb.connect(str(p), read_only=True)
    con.execute("SET TimeZone='UTC'")
    return con


@contextmanager
def open_db(path: str | os.PathLike | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect(path)
    try:
        yield con
    finally:
        con.close()


def ensure_tables(con: duckdb.DuckDBPyConnection, names: Sequence[str] | None = None) -> None:
    for name in names or list(TABLES):
        con.execute(get_table(name).ddl())


# ---------------------------------------------------------------------------------------------
# Validation and the one partition-replace helper
# ---------------------------------------------------------------------------------------------

_POLARS_TYPES: dict[str, pl.DataType] = {
    "VARCHAR": pl.Utf8,
    "DOUBLE": pl.Float64,
    "INTEGER": pl.Int32,
    "BIGINT": pl.Int64,
    "BOOLEAN": pl.Boolean,
    "DATE": pl.Date,
    "TIMESTAMPTZ": pl.Datetime("us", "UTC"),
    "JSON": pl.Utf8,
}


def polars_schema(name: str) -> dict[str, pl.DataType]:
    """The polars dtypes of a table's columns (DOUBLE[] -> List(Float64))."""
    out: dict[str, pl.DataType] = {}
    for c in get_table(name).columns:
        if c.type.endswith("[]"):
            out[c.name] = pl.List(_POLARS_TYPES[c.type[:-2]])
        else:
            out[c.name] = _POLARS_TYPES[c.type]
    return out


def empty_frame(name: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(name))


def conform(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Check and cast ``frame`` to table ``name``'s schema.

    Raises :class:`StorageError` naming the table and column when a column is missing or unknown,
    a value cannot be cast, or a NOT NULL column holds nulls (with the first offending row).
    Timestamps must be timezone-aware; naive datetimes are refused rather than guessed.
    """
    table = get_table(name)
    want = polars_schema(name)
    missing = [c for c in want if c not in frame.columns]
    extra = [c for c in frame.columns if c not in want]
    if missing or extra:
        raise StorageError(f"table {name}: missing columns {missing}, unknown columns {extra}")
    cols = []
    for c in table.columns:
        s = frame.get_column(c.name)
        target = want[c.name]
        if isinstance(target, pl.Datetime):
            if not isinstance(s.dtype, pl.Datetime) and s.dtype != pl.Null:
                raise StorageError(f"table {name}, column {c.name}: expected a timestamp, got {s.dtype}")
            if isinstance(s.dtype, pl.Datetime) and s.dtype.time_zone is None:
                raise StorageError(
                    f"table {name}, column {c.name}: timestamp without time zone; convert to UTC first"
                )
            s = s.cast(pl.Datetime("us", s.dtype.time_zone if isinstance(s.dtype, pl.Datetime) else "UTC"))
            s = s.dt.convert_time_zone("UTC")
        else:
            try:
                s = s.cast(target, strict=True)
            except Exception as exc:  # polars raises several error types
                raise StorageError(f"table {name}, column {c.name}: cannot cast {s.dtype} to {target}: {exc}") from exc
        if not c.nullable and s.null_count():
            row = int(s.is_null().arg_max())
            raise StorageError(f"table {name}, column {c.name}: NULL in NOT NULL column at frame row {row}")
        cols.append(s.alias(c.name))
    return pl.DataFrame(cols)


def replace_partition(
    con: duckdb.DuckDBPyConnection,
    name: str,
    frame: pl.DataFrame,
    where: Mapping[str, Any] | None = None,
) -> int:
    """Replace one partition's rows of table ``name`` with ``frame``, atomically.

    ``where`` maps the table's ``partition_by`` columns to the slice's values (e.g.
    ``{"partition_key": "2024-03"}``; ``None`` = the whole table, for unpartitioned tables). Every row of
    ``frame`` must belong to that slice. Validation runs before anything is deleted and the
    delete + insert run in one transaction, so a bad frame or a failed insert leaves the previous rows
    intact. Returns the number of rows written. Raises :class:`StorageError`.
    """
    table = get_table(name)
    where = dict(where or {})
    if set(where) != set(table.partition_by):
        raise StorageError(f"table {name}: partition keys {sorted(where)} != {sorted(table.partition_by)}")
    data = conform(name, frame)
    for col, val in where.items():
        bad = data.filter(pl.col(col) != val) if data.height else data
        if bad.height:
            raise StorageError(
                f"table {name}: row with {col}={bad.get_column(col)[0]!r} outside partition {col}={val!r}"
            )
    if table.primary_key and data.height:
        dup = data.group_by(list(table.primary_key)).len().filter(pl.col("len") > 1)
        if dup.height:
            raise StorageError(f"table {name}: duplicate primary key {dup.row(0)[:-1]} in partition {where}")
    con.execute(table.ddl())
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    cond = " AND ".join(f'"{k}" = ?' for k in where) or "TRUE"
    con.register("_incoming_partition", data.to_arrow())
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f'DELETE FROM "{name}" WHERE {cond}', list(where.values()))
            if data.height:
                con.execute(f'INSERT INTO "{name}" ({cols}) SELECT {cols} FROM _incoming_partition')
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        con.unregister("_incoming_partition")
    return data.height


def read_table(con: duckdb.DuckDBPyConnection, name: str, where: str = "", params: Sequence[Any] = ()) -> pl.DataFrame:
    """Read a table (optionally filtered by a SQL ``where`` clause) as a polars frame in schema order."""
    table = get_table(name)
    cols = ", ".join(f'"{c}"' for c in table.column_names)
    sql = f'SELECT {cols} FROM "{name}"' + (f" WHERE {where}" if where else "")
    rel = con.execute(sql, list(params))
    return pl.from_arrow(rel.to_arrow_table())


def table_summary(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """(table, row count) for every registered table present in the database."""
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    return [(n, con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in TABLES if n in present]
