"""The analysis assets through Dagster on a small constructed store: each analysed model owns its slice of
every analysis table, a rerun replaces it (no duplicates), a model that left the store has its slices emptied,
an LLM agent's rationale text reaches the audit, and a bad path case fails with the field named, keeping
rows."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import polars as pl
from dagster import DagsterInstance, materialize

from assets.macro_analyses import MACRO_ANALYSIS_ASSETS, MACRO_ANALYSIS_CHECKS
from leaf_live.core import storage
from leaf_live.macro.nowcasts import build_nowcasts
from resources import default_resources

REF = date(2026, 3, 1)
REL = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)
H = timedelta(hours=1)
A, B = "openai/gpt-5@single", "anthropic/claude-sonnet-4-5@team"
TABLES = (
    "post_release_recovery",
    "copying_convergence",
    "rationale_audit",
    "cross_model_errors",
    "revision_attributions",
)


def _nowcasts(model: str, values: list[float], rationale: str | None = None) -> pl.DataFrame:
    # hourly from 120 h before the release to 5 h after it
    times = [REL - 120 * H + k * H for k in range(len(values))]
    return build_nowcasts(
        pl.DataFrame(
            {
                "partition_key": [f"{t:%Y-%m-%d-%H:%M}" for t in times],
                "model_id": model,
                "indicator_id": "cpi",
                "reference_period": REF,
                "issued_at": times,
                "value": values,
                "rationale": rationale,
                "citations": json.dumps(
                    ["https://www.bls.gov/cpi/", "https://tradingeconomics.com/united-states"]
                ),
            },
            schema_overrides={"issued_at": pl.Datetime("us", "UTC"), "rationale": pl.Utf8},
        )
    ).with_columns(pl.lit("llm_nowcasts").alias("producer"))


def _store(db, models: dict[str, pl.DataFrame]) -> None:
    with storage.open_db(db) as con:
        rel = storage.conform(
            "releases",
            pl.DataFrame(
                {
                    "partition_key": ["2026-04"],
                    "indicator_id": ["cpi"],
                    "reference_period": [REF],
                    "period_label": ["2026-03"],
                    "period_source": ["event_text"],
                    "release_at": [REL],
                    "actual": [3.3],
                    "consensus": [3.4],
                    "consensus_source": ["investing"],
                    "surprise": [-0.1],
                    "source": ["test"],
                    "available_at": [REL],
                }
            ),
        )
        storage.replace_partition(con, "releases", rel, {"partition_key": "2026-04"})
        sc = storage.conform(
            "surprise_scales",
            pl.DataFrame(
                {
                    "indicator_id": ["cpi"],
                    "n_releases": [162],
                    "mean_surprise": [0.0],
                    "sigma": [0.2],
                    "window_start": [date(2012, 5, 15)],
                    "window_end": [date(2025, 10, 24)],
                    "available_at": [datetime(2025, 10, 24, 12, 30, tzinfo=UTC)],
                }
            ),
        )
        storage.replace_partition(con, "surprise_scales", sc)
        con.execute("DELETE FROM nowcasts")
        cons = build_nowcasts(
            pl.DataFrame(
                {
                    "partition_key": ["consensus/investing"],
                    "model_id": ["consensus/investing"],
                    "indicator_id": ["cpi"],
                    "reference_period": [REF],
                    "issued_at": [REL - timedelta(minutes=1)],
                    "value": [3.4],
                },
                schema_overrides={"issued_at": pl.Datetime("us", "UTC")},
            )
        ).with_columns(pl.lit("comparator_nowcasts").alias("producer"))
        # an hourly partition holds every model's nowcasts of that hour (as llm_nowcasts writes them)
        for (prod, key), g in pl.concat([cons, *models.values()]).group_by("producer", "partition_key"):
            storage.replace_partition(con, "nowcasts", g, {"producer": prod, "partition_key": key})


def _run(db, run_config=None, raise_on_error=True):
    return materialize(
        [*MACRO_ANALYSIS_ASSETS, *MACRO_ANALYSIS_CHECKS],
        resources=default_resources(db=db),
        instance=DagsterInstance.ephemeral(),
        run_config=run_config,
        raise_on_error=raise_on_error,
    )


def _slices(db) -> dict[str, dict[str, int]]:
    con = storage.connect_read_only(db)
    try:
        return {
            t: dict(con.execute(f'SELECT partition_key, count(*) FROM "{t}" GROUP BY 1').fetchall())
            for t in TABLES
        }
    finally:
        con.close()


def test_models_own_their_slices_and_reruns_replace_them(tmp_path):
    db = tmp_path / "a.duckdb"
    path = [2.6 + 0.01 * (k % 7) for k in range(120)] + [3.3] * 5  # 120 h before the release, 5 h after
    _store(
        db,
        {
            A: _nowcasts(A, path, "Per BLS, 0.3 + 3.0 = 3.3; I estimate 3.3 (advance estimate)."),
            B: _nowcasts(B, [v + 0.1 for v in path]),
        },
    )
    res = _run(db)
    assert res.success and all(e.passed for e in res.get_asset_check_evaluations())
    first = _slices(db)
    assert first["post_release_recovery"] == {A: 1, B: 1} and first["cross_model_errors"] == {A: 1, B: 1}
    assert first["copying_convergence"] == {A: 1, B: 1}  # against the consensus (no Fed nowcast stored)
    assert first["rationale_audit"] == {A: 125}  # only A wrote rationales
    assert _run(db).success and _slices(db) == first  # a rerun replaces, never duplicates
    con = storage.connect_read_only(db)
    try:
        audit = con.execute(
            "SELECT bool_and(names_agency), bool_and(states_vintage), sum(n_calculations_matched) "
            "FROM rationale_audit"
        ).fetchall()[0]
        shares = dict(
            con.execute("SELECT domain, share FROM citation_domains WHERE model_id = ?", [A]).fetchall()
        )
    finally:
        con.close()
    assert audit == (True, True, 125) and shares == {"bls.gov": 0.5, "tradingeconomics.com": 0.5}
    # B leaves the store: its slices are emptied, A's stay
    _store(db, {A: _nowcasts(A, path, "Per BLS, 0.3 + 3.0 = 3.3; I estimate 3.3 (advance estimate).")})
    assert _run(db).success
    after = _slices(db)
    assert all(B not in v for v in after.values()) and after["post_release_recovery"] == {A: 1}


def test_a_bad_path_case_fails_naming_the_field_and_keeps_rows(tmp_path):
    db = tmp_path / "b.duckdb"
    _store(db, {A: _nowcasts(A, [2.6] * 120 + [3.3] * 5)})
    assert _run(db).success
    before = _slices(db)
    bad = {
        "ops": {
            "cross_model_analysis": {
                "config": {
                    "path_cases": [
                        {
                            "label": "x",
                            "indicator_id": "cpi",
                            "reference_period": "2026-03-01",
                            "first_day": "April 2",
                            "last_day": "2026-04-07",
                        }
                    ]
                }
            }
        }
    }
    res = _run(db, run_config=bad, raise_on_error=False)
    assert not res.success
    failures = [e for e in res.all_events if e.is_step_failure]
    assert any("first_day='April 2'" in str(e.step_failure_data.error) for e in failures)
    assert _slices(db) == before


def test_report_command_writes_the_report_and_answers_bad_paths_in_one_line(tmp_path):
    import pytest

    from leaf_live.cli import main

    db = tmp_path / "c.duckdb"
    _store(db, {A: _nowcasts(A, [2.6] * 120 + [3.3] * 5)})
    assert _run(db).success
    out = tmp_path / "r" / "report.md"
    assert main(["report", "--db", str(db), "--out", str(out)]) == 0
    text = out.read_text()
    assert "## App. E" in text and f"| {A} | hourly | cpi | 2026-03-01 | 3.30 |" in text
    with pytest.raises(SystemExit, match=r"^leaf-live report: --db .*missing\.duckdb: no database file"):
        main(["report", "--db", str(tmp_path / "missing.duckdb")])
    (tmp_path / "f").write_text("a file, not a folder")
    with pytest.raises(SystemExit, match=r"^leaf-live report: --out .*f/report\.md: "):
        main(["report", "--db", str(db), "--out", str(tmp_path / "f" / "report.md")])
