"""Macro track, the paper's remaining analyses (LiveMacroEval App. E, F, G, Q, R) on every model in the store.

Wiring only: each asset reads the stored ``nowcasts``, ``releases`` and ``surprise_scales`` through the
``LeafLiveDB`` resource, calls :mod:`leaf_live.macro.analyses` and replaces one slice per analysed model
(``partition_key`` = model_id; a model no longer present has its slice emptied). Options are Dagster
``Config`` with the paper's settings as defaults (permutations B = 1,000, +-24 h windows, the Table 15 span,
the App. R event window and gasoline share).
"""

from collections.abc import Iterator
from datetime import date, datetime

import polars as pl
from dagster import AssetCheckResult, AssetKey, AssetSpec, Config, MaterializeResult, asset_check, multi_asset
from pydantic import Field

from assets.common import DUCKDB_POOL, refuse_if_run_finished, table_metadata
from leaf_live.core import storage
from leaf_live.macro.analyses import copying as F
from leaf_live.macro.analyses import cross_model as Q
from leaf_live.macro.analyses import rationales as G
from leaf_live.macro.analyses import recovery as E
from leaf_live.macro.analyses import revisions as R
from resources import LeafLiveDB

GROUP = "macro_analyses"
# Asset keys, not imported objects: the analyses read whatever the nowcast producers and release stages wrote.
NOWCAST_PRODUCER_KEYS = [
    AssetKey(k) for k in ("recorded_nowcasts", "comparator_nowcasts", "arima_nowcasts", "llm_nowcasts")
]
DEPS = [*NOWCAST_PRODUCER_KEYS, AssetKey("releases"), AssetKey("surprise_scales")]


def _inputs(con, where: str = "valid") -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    return (
        storage.read_table(con, "nowcasts", where),
        storage.read_table(con, "releases"),
        storage.read_table(con, "surprise_scales"),
    )


def replace_models(con, frames: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Replace every model slice (``partition_key``) of each table in ``frames`` (table -> its rows) that
    the frame holds or the table held before, all tables in ONE transaction
    (``storage.replace_partitions``): an analysis writing several tables (a summary and its paths) is stored
    whole or not at all, also when killed midway (issue 17). Returns table -> rows written."""
    slices = []
    for table, frame in frames.items():
        old = {r[0] for r in con.execute(f'SELECT DISTINCT partition_key FROM "{table}"').fetchall()}
        keys = sorted(old | set(frame["partition_key"].unique().to_list()))
        slices.append(storage.Slice(table, frame, {"partition_key": keys}))
    refuse_if_run_finished()
    return dict(zip(frames, storage.replace_partitions(con, slices), strict=True))


def _result(table: str, frame: pl.DataFrame, written: int) -> MaterializeResult:
    models = sorted(frame["model_id"].unique().to_list()) if frame.height else []
    return MaterializeResult(
        asset_key=table, metadata={"rows": written, "models": ", ".join(models) or "none"}
    )


# ---------------------------------------------------------------------------------------------
# App. E
# ---------------------------------------------------------------------------------------------


@multi_asset(
    pool=DUCKDB_POOL,
    name="post_release_recovery_analysis",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "post_release_recovery",
            metadata=table_metadata("post_release_recovery"),
            deps=DEPS,
            description=(
                "App. E: nowcasts after the release against the "
                "released value (hours to reach it, residual dispersion, GCV spline lambda)."
            ),
        ),
        AssetSpec(
            "post_release_paths",
            metadata=table_metadata("post_release_paths"),
            deps=DEPS,
            description=(
                "App. E Fig. 7: the hourly path around the release with the GCV cubic smoothing spline."
            ),
        ),
    ],
)
def post_release_recovery_analysis(db: LeafLiveDB) -> Iterator[MaterializeResult]:
    with db.get_connection() as con:
        nc, rel, _ = _inputs(con)
        summary, paths = E.post_release_recovery(nc, rel)
        n = replace_models(con, {"post_release_recovery": summary, "post_release_paths": paths})
    yield _result("post_release_recovery", summary, n["post_release_recovery"])
    yield _result("post_release_paths", paths, n["post_release_paths"])


# ---------------------------------------------------------------------------------------------
# App. F
# ---------------------------------------------------------------------------------------------


class CopyingConfig(Config):
    perm_draws: int = Field(default=F.PERM_DRAWS, description="permutations B of Test 3 (paper: 1,000)")
    perm_seed: int = Field(default=F.PERM_SEED, description="seed of the permutations")
    window_hours: float = Field(
        default=F.WINDOW_HOURS, description="half-width of a Fed publication window, hours"
    )
    min_gap_hours: float = Field(
        default=F.MIN_GAP_HOURS, description="drop publications closer than this to a kept one"
    )
    large_quantile: float = Field(
        default=F.LARGE_QUANTILE, description="a revision is large at or above this quantile"
    )


@multi_asset(
    pool=DUCKDB_POOL,
    name="copying_tests",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "copying_convergence",
            metadata=table_metadata("copying_convergence"),
            deps=DEPS,
            description=(
                "App. F Test 1 (Table 3): terminal gap in sigma units "
                "and Spearman rho with hours to release, against the consensus and each Fed nowcast."
            ),
        ),
        AssetSpec(
            "copying_gap_bins",
            metadata=table_metadata("copying_gap_bins"),
            deps=DEPS,
            description="App. F Table 4: median gap by hours before release.",
        ),
        AssetSpec(
            "copying_comovement",
            metadata=table_metadata("copying_comovement"),
            deps=DEPS,
            description="App. F Test 2 (Table 5): correlation of day-over-day changes.",
        ),
        AssetSpec(
            "copying_event_time",
            metadata=table_metadata("copying_event_time"),
            deps=DEPS,
            description=(
                "App. F Test 3 (Table 6): concentration of large "
                "revisions around Fed publications, permutation and KS p-values."
            ),
        ),
    ],
)
def copying_tests(config: CopyingConfig, db: LeafLiveDB) -> Iterator[MaterializeResult]:
    with db.get_connection() as con:
        nc, rel, sc = _inputs(con)
        series, bins = F.convergence(nc, rel, sc)
        comov = F.comovement(nc, rel)
        event = F.event_time(
            nc,
            rel,
            window_hours=config.window_hours,
            min_gap_hours=config.min_gap_hours,
            quantile=config.large_quantile,
            draws=config.perm_draws,
            seed=config.perm_seed,
        )
        frames = {
            "copying_convergence": series,
            "copying_gap_bins": bins,
            "copying_comovement": comov,
            "copying_event_time": event,
        }
        written = replace_models(con, frames)
        out = {t: (f, written[t]) for t, f in frames.items()}
    for t, (f, n) in out.items():
        yield _result(t, f, n)


# ---------------------------------------------------------------------------------------------
# App. G
# ---------------------------------------------------------------------------------------------


class RationaleConfig(Config):
    tolerance: float = Field(
        default=G.TOLERANCE, description="relative tolerance of the arithmetic check (paper: 2%)"
    )


@multi_asset(
    pool=DUCKDB_POOL,
    name="rationale_audit_analysis",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "rationale_audit",
            metadata=table_metadata("rationale_audit"),
            deps=DEPS,
            description="App. G Table 7: what each rationale block contains.",
        ),
        AssetSpec(
            "rationale_calculations",
            metadata=table_metadata("rationale_calculations"),
            deps=DEPS,
            description="App. G: every explicit calculation, recomputed.",
        ),
        AssetSpec(
            "citation_domains",
            metadata=table_metadata("citation_domains"),
            deps=DEPS,
            description="App. G: citation composition by host.",
        ),
    ],
)
def rationale_audit_analysis(config: RationaleConfig, db: LeafLiveDB) -> Iterator[MaterializeResult]:
    with db.get_connection() as con:
        nc = storage.read_table(con, "nowcasts", "rationale IS NOT NULL")
        frames = dict(
            zip(
                ("rationale_audit", "rationale_calculations", "citation_domains"),
                G.audit_rationales(nc, tolerance=config.tolerance),
            )
        )
        written = replace_models(con, frames)
    for t, f in frames.items():
        yield _result(t, f, written[t])


# ---------------------------------------------------------------------------------------------
# App. Q and R
# ---------------------------------------------------------------------------------------------


class PathCaseConfig(Config):
    label: str = Field(description="name of the span")
    indicator_id: str = Field(description="catalog indicator id")
    reference_period: str = Field(description="first day of the reference period, YYYY-MM-DD")
    first_day: str = Field(description="first New York calendar day of the span, YYYY-MM-DD")
    last_day: str = Field(description="last day (inclusive), YYYY-MM-DD")


_T15 = Q.TABLE15_CASE


class CrossModelConfig(Config):
    path_cases: list[PathCaseConfig] = Field(
        default=[
            {
                "label": _T15.label,
                "indicator_id": _T15.indicator_id,
                "reference_period": _T15.reference_period.isoformat(),
                "first_day": _T15.first_day.isoformat(),
                "last_day": _T15.last_day.isoformat(),
            }
        ],
        description="spans summarised as in Table 15 (default: March 2026 CPI over April 2-7, 2026)",
    )


def _fields(c) -> dict:
    # a list-of-Config default can arrive as plain dicts
    return dict(c) if isinstance(c, dict) else c.model_dump()


def _day(text: str, field: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{field}={text!r}: expected YYYY-MM-DD") from None


@multi_asset(
    pool=DUCKDB_POOL,
    name="cross_model_analysis",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "cross_model_errors",
            metadata=table_metadata("cross_model_errors"),
            deps=DEPS,
            description=(
                "App. Q Table 14: final pre-release nowcast errors, "
                "shared misses and wrong signs across models."
            ),
        ),
        AssetSpec(
            "nowcast_path_summaries",
            metadata=table_metadata("nowcast_path_summaries"),
            deps=DEPS,
            description=(
                "App. Q Table 15: median/IQR of the nowcasts "
                "over a stated span, final nowcast and its deviation."
            ),
        ),
    ],
)
def cross_model_analysis(config: CrossModelConfig, db: LeafLiveDB) -> Iterator[MaterializeResult]:
    cases = [
        Q.PathCase(
            c["label"],
            c["indicator_id"],
            _day(c["reference_period"], "reference_period"),
            _day(c["first_day"], "first_day"),
            _day(c["last_day"], "last_day"),
        )
        for c in map(_fields, config.path_cases)
    ]
    with db.get_connection() as con:
        nc, rel, sc = _inputs(con)
        errors = Q.final_errors(nc, rel, sc)
        have = set(zip(rel["indicator_id"], rel["reference_period"]))
        paths = Q.path_summaries(nc, rel, [c for c in cases if (c.indicator_id, c.reference_period) in have])
        n = replace_models(con, {"cross_model_errors": errors, "nowcast_path_summaries": paths})
    yield _result("cross_model_errors", errors, n["cross_model_errors"])
    yield _result("nowcast_path_summaries", paths, n["nowcast_path_summaries"])


class EventConfig(Config):
    label: str = Field(description="name of the event window")
    indicator_id: str = Field(description="catalog indicator id of the headline nowcast")
    reference_period: str = Field(description="first day of the reference period, YYYY-MM-DD")
    start: str = Field(description="window start, ISO 8601 with offset (e.g. 2026-04-08T10:30:00-04:00)")
    end: str = Field(description="window end, ISO 8601 with offset")
    component: str = Field(description="component the revision is read through (Eq. 16)")
    component_share: float = Field(description="its expenditure share, a fraction (gasoline in CPI: 0.0289)")
    component_realized: float | None = Field(default=None, description="realized component rate, if known")
    pre_hours: float = Field(default=24.0, description="hours before the window summarised")
    post_hours: float = Field(default=24.0, description="hours after the window summarised")


_EV = R.APP_R_EVENT


class RevisionConfig(Config):
    events: list[EventConfig] = Field(
        default=[
            {
                "label": _EV.label,
                "indicator_id": _EV.indicator_id,
                "reference_period": _EV.reference_period.isoformat(),
                "start": _EV.start.isoformat(),
                "end": _EV.end.isoformat(),
                "component": _EV.component,
                "component_share": _EV.component_share,
                "component_realized": _EV.component_realized,
                "pre_hours": _EV.pre_hours,
                "post_hours": _EV.post_hours,
            }
        ],
        description="event windows (default App. R: April 8, 2026, 10:30-14:00 ET, March CPI via gasoline)",
    )


def _instant(text: str, field: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{field}={text!r}: not an ISO 8601 time") from None
    if t.tzinfo is None:
        raise ValueError(f"{field}={text!r}: give the UTC offset")
    return t


@multi_asset(
    pool=DUCKDB_POOL,
    name="revision_attribution_analysis",
    group_name=GROUP,
    specs=[
        AssetSpec(
            "revision_attributions",
            metadata=table_metadata("revision_attributions"),
            deps=DEPS,
            description=(
                "App. R: revision of the headline nowcast over "
                "an event window and Eq. 16's implied component revision."
            ),
        )
    ],
)
def revision_attribution_analysis(config: RevisionConfig, db: LeafLiveDB) -> Iterator[MaterializeResult]:
    events = [
        R.RevisionEvent(
            e["label"],
            e["indicator_id"],
            _day(e["reference_period"], "reference_period"),
            _instant(e["start"], "start"),
            _instant(e["end"], "end"),
            e["component"],
            e["component_share"],
            e.get("component_realized"),
            e.get("pre_hours", 24.0),
            e.get("post_hours", 24.0),
        )
        for e in map(_fields, config.events)
    ]
    with db.get_connection() as con:
        nc, rel, _ = _inputs(con)
        frame = R.revision_attribution(nc, rel, events)
        n = replace_models(con, {"revision_attributions": frame})["revision_attributions"]
    yield _result("revision_attributions", frame, n)


# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------


@asset_check(
    pool=DUCKDB_POOL,
    asset="copying_convergence",
    description=(
        "Point in time: every copying-test series stops strictly "
        "before its release and no row is known before the inputs it used (available_at <= release_at)."
    ),
    blocking=True,
)
def copying_before_release(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        n, bad = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE terminal_issued_at >= release_at OR available_at >"
            " release_at OR first_issued_at > terminal_issued_at) FROM copying_convergence"
        ).fetchall()[0]
    return AssetCheckResult(passed=bad == 0, metadata={"series": n, "violations": bad})


@asset_check(
    pool=DUCKDB_POOL,
    asset="cross_model_errors",
    description=(
        "Point in time: each final nowcast was issued strictly before "
        "its release, and is the stored nowcast of its run at that hour."
    ),
    blocking=True,
)
def final_nowcasts_before_release(db: LeafLiveDB) -> AssetCheckResult:
    with db.get_connection() as con:
        n, bad = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE e.final_issued_at >= e.release_at OR abs(e.final_value -"
            " (SELECT avg(n.value) FROM nowcasts n WHERE n.valid AND n.model_id = e.model_id AND"
            " n.indicator_id = e.indicator_id AND n.reference_period = e.reference_period AND n.issued_at ="
            " e.final_issued_at AND (e.run_id = 'hourly' OR n.partition_key = e.run_id))) > 1e-9 OR"
            " e.final_value IS NULL) FROM cross_model_errors e"
        ).fetchall()[0]
    return AssetCheckResult(passed=bad == 0, metadata={"finals": n, "violations": bad})


MACRO_ANALYSIS_ASSETS = [
    post_release_recovery_analysis,
    copying_tests,
    rationale_audit_analysis,
    cross_model_analysis,
    revision_attribution_analysis,
]
MACRO_ANALYSIS_CHECKS = [copying_before_release, final_nowcasts_before_release]
