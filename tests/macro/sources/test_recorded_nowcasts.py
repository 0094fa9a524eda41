"""Recorded LiveMacroEval GPT-5 nowcasts: real snapshot files, values checked by hand against the CSVs."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from livemacro_helpers import live_releases

from leaf_live.core.settings import get_settings
from leaf_live.core.sources import SourceError
from leaf_live.core.storage import conform, open_db, read_table, replace_partition
from leaf_live.macro.nowcasts import WRITER_COLUMNS
from leaf_live.macro.sources.recorded_nowcasts import (
    NON_REPORTING_VARIABLES,
    REPORTING_VARIABLES,
    RecordedNowcastsSnapshot,
    read_recorded_csv,
    unit_slip_reason,
)
from leaf_live.macro.windows import nowcast_windows

GPT5 = "openai/gpt-5-search-api@single"
HEADER = "timestamp_local,target_month,release_month,job_id,model,variable,value,parsed_ok,parsed_notes\n"


@pytest.fixture(scope="module")
def windows() -> pl.DataFrame:
    return nowcast_windows(live_releases())


@pytest.fixture(scope="module")
def recorded(windows):
    return RecordedNowcastsSnapshot(get_settings().require_snapshot()).load(windows)


def test_counts_per_file_and_variable(recorded):
    frame, summaries = recorded
    conform("nowcasts", frame, deferred=WRITER_COLUMNS)
    by_file = {Path(s.file).name: (s.rows, s.imported, s.valid, s.skipped_non_reporting) for s in summaries}
    assert by_file == {
        "2026-02_core_macroeconomic_conditions.csv": (5651, 5651, 5651, 0),
        "2026-03_core_macroeconomic_conditions.csv": (5025, 5025, 5023, 0),
        "2026-04_core_macroeconomic_conditions.csv": (211, 211, 211, 0),
        "2026-04_demand_sectoral_activity.csv": (266, 266, 266, 0),
    }
    counts = {
        (p.split("/")[-1][:7], v): (n, k)
        for p, v, n, k in (
            frame.group_by("partition_key", "source_variable")
            .agg(pl.len(), pl.col("valid").sum())
            .iter_rows()
        )
    }
    # hand counts from the files (csv module): rows per variable and valid ones
    assert counts == {
        ("2026-02", "cpi_yoy"): (369, 369),
        ("2026-02", "durable_goods_mom"): (1014, 1014),
        ("2026-02", "industrial_production_mom"): (493, 493),
        ("2026-02", "ism_manufacturing_index"): (160, 160),
        ("2026-02", "nonfarm_payrolls_change"): (193, 193),
        ("2026-02", "pce_price_index_mom"): (1064, 1064),
        ("2026-02", "ppi_mom"): (538, 538),
        ("2026-02", "real_gdp_qoq"): (1568, 1568),
        ("2026-02", "unemployment_rate"): (252, 252),
        ("2026-03", "cpi_yoy"): (439, 439),
        ("2026-03", "durable_goods_mom"): (884, 884),
        ("2026-03", "industrial_production_mom"): (553, 553),
        ("2026-03", "ism_manufacturing_index"): (230, 230),
        ("2026-03", "nonfarm_payrolls_change"): (262, 260),
        ("2026-03", "pce_price_index_mom"): (919, 919),
        ("2026-03", "ppi_mom"): (539, 539),
        ("2026-03", "real_gdp_qoq"): (923, 923),
        ("2026-03", "unemployment_rate"): (276, 276),
        ("2026-04", "ism_manufacturing_index"): (211, 211),
        ("2026-04", "ism_services_index"): (266, 266),
    }
    assert set(frame.get_column("model_id").unique()) == {GPT5}
    assert frame.get_column("producer").null_count() == frame.height  # the writing asset stamps its producer
    assert (frame.get_column("available_at") == frame.get_column("issued_at")).all()


def test_eastern_timestamps_become_utc(recorded):
    frame, _ = recorded
    mar = frame.filter(pl.col("partition_key") == f"{GPT5}/2026-03_core_macroeconomic_conditions")
    # first row of the file: "2026-03-25
    # 19:00:00,2026-03,2026-04,2026-03_macro_conditions_serverB,...,cpi_yoy,2.4"
    first = mar.filter(pl.col("source_variable") == "cpi_yoy").sort("issued_at").row(0, named=True)
    assert first["issued_at"] == datetime(2026, 3, 25, 23, 0, tzinfo=UTC)  # 19:00 EDT = UTC-4
    assert first["value"] == 2.4 and first["indicator_id"] == "cpi"
    assert first["reference_period"] == date(2026, 3, 1)
    assert first["raw_response_id"] == "2026-03_macro_conditions_serverB"
    feb = frame.filter(pl.col("partition_key").str.ends_with("2026-02_core_macroeconomic_conditions"))
    f0 = feb.filter(pl.col("source_variable") == "cpi_yoy").sort("issued_at").row(0, named=True)
    assert (f0["issued_at"], f0["value"]) == (
        datetime(2026, 2, 27, 0, 0, tzinfo=UTC),
        2.5,
    )  # 19:00 EST = UTC-5


def test_dst_gap_in_local_time_is_an_unbroken_utc_hour_sequence(recorded):
    frame, _ = recorded
    gdp = frame.filter(
        pl.col("partition_key").str.ends_with("2026-02_core_macroeconomic_conditions")
        & (pl.col("source_variable") == "real_gdp_qoq")
        & pl.col("issued_at").is_between(
            datetime(2026, 3, 8, 4, tzinfo=UTC), datetime(2026, 3, 8, 9, tzinfo=UTC)
        )
    ).sort("issued_at")
    # local 23:00, 00:00, 01:00 EST then 03:00, 04:00 EDT (no 02:00) -> 04:00..08:00Z, one hour apart
    assert gdp.get_column("issued_at").to_list() == [
        datetime(2026, 3, 8, h, tzinfo=UTC) for h in range(4, 10)
    ]
    assert gdp.get_column("value").to_list() == [1.5, 2.5, 2.1, 2.8, 1.4, 1.7]


def test_quarterly_gdp_maps_both_target_months_to_q1(recorded):
    frame, _ = recorded
    gdp = frame.filter(pl.col("indicator_id") == "real_gdp_advance")
    assert set(gdp.get_column("reference_period").unique()) == {date(2026, 1, 1)}
    assert gdp.height == 1568 + 923


def test_after_release_flag_for_march_cpi_and_april_ism(recorded):
    frame, _ = recorded
    cpi = frame.filter(
        pl.col("partition_key").str.ends_with("2026-03_core_macroeconomic_conditions")
        & (pl.col("indicator_id") == "cpi")
    ).sort("issued_at")
    pre = cpi.filter(~pl.col("after_release"))
    assert pre.height == 371 and cpi.height == 439  # release 2026-04-10 08:30 EDT = 12:30Z
    last = pre.row(-1, named=True)
    assert (last["issued_at"], last["value"]) == (datetime(2026, 4, 10, 12, 0, tzinfo=UTC), 3.3)
    assert pre.get_column("value").mean() == pytest.approx(2.707654986522908)  # the ~2.7% cluster of Fig. 5
    ism = frame.filter(
        pl.col("source_variable") == "ism_manufacturing_index", pl.col("reference_period") == date(2026, 4, 1)
    ).sort("issued_at")
    # 2026-05-01 10:00 EDT run is at the 10:00 ET release: flagged (>=); it already reads the released 52.7
    at_release = ism.filter(pl.col("issued_at") == datetime(2026, 5, 1, 14, tzinfo=UTC)).row(0, named=True)
    assert at_release["after_release"] and at_release["value"] == 52.7
    assert ism.filter(~pl.col("after_release")).height == 139


def test_payroll_unit_slip_is_invalid_with_reason(recorded):
    frame, _ = recorded
    bad = frame.filter(~pl.col("valid")).sort("issued_at")
    # the two -500 (thousand) payroll answers of the March run, 10x the run's frequent -50 answers
    assert bad.get_column("issued_at").to_list() == [
        datetime(2026, 3, 29, 18, tzinfo=UTC),  # 2026-03-29 14:00 EDT
        datetime(2026, 4, 1, 2, tzinfo=UTC),  # 2026-03-31 22:00 EDT
    ]
    assert bad.get_column("value").null_count() == 2
    reason = bad.get_column("invalid_reason")[0]
    assert reason.startswith("unit_slip: -500 thousand persons")
    assert "fences [-294, 532] (n=262)" in reason and "-500/10 = -50" in reason and "x10" in reason


def test_unit_slip_rule_by_hand():
    import numpy as np

    run = np.array([100.0] * 10 + [150.0] * 10 + [200.0] * 5)  # Q1 = 100, Q3 = 150, IQR = 50
    assert unit_slip_reason(1500.0, run, "thousand persons").endswith("suspected x10 unit error")
    # far fences [-50, 300], inner [25, 225]: 2300 is far out but 230 (/10) and 2.3 (/1000) are not inside
    assert unit_slip_reason(2300.0, run, "thousand persons") is None
    assert "340/10 = 34 lies inside its 1.5xIQR range [25, 225]" in unit_slip_reason(
        340.0, run, "thousand persons"
    )
    assert unit_slip_reason(290.0, run, "thousand persons") is None  # inside the far fences
    assert unit_slip_reason(150000.0, run, "thousand persons").endswith("x1000 unit error")
    assert unit_slip_reason(1500.0, run[:19], "thousand persons") is None  # too short a run


def write(tmp_path: Path, body: str, name: str = "2026-03_core_macroeconomic_conditions.csv") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + body, encoding="utf-8")
    return p


def test_invalid_rows_keep_their_reason(tmp_path):
    job = "2026-03_macro_conditions_serverA"
    rows = [
        f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,cpi_yoy,,False,found=0 pairs",
        (
            f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,unemployment_rate,four,True,found=26"
            " pairs"
        ),
        f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,ppi_mom,250,True,found=26 pairs",
        f"2026-03-26 10:00:00,2026-02,2026-04,{job},gpt-5-search-api,ppi_mom,0.3,True,found=26 pairs",
        f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,cpi_mom,0.3,True,found=26 pairs",
        (
            "2026-03-26"
            f" 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,nonfarm_payrolls_level,159000,True,found=26"
            " pairs"
        ),
        (
            f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,unemployment_rate,4.4,True,found=26"
            " pairs"
        ),
        f"2026-03-26 10:00:00,2026-03,2026-04,{job},gpt-5-search-api,real_gdp_qoq,nan,True,found=26 pairs",
    ]
    out, summary = read_recorded_csv(write(tmp_path, "\n".join(rows) + "\n"), windows=None)
    assert (summary.rows, summary.imported, summary.valid, summary.skipped_non_reporting) == (8, 6, 1, 2)
    reasons = dict(
        zip(
            out.get_column("source_variable") + "|" + out.get_column("value").cast(pl.Utf8).fill_null("-"),
            out.get_column("invalid_reason"),
        )
    )
    assert reasons["cpi_yoy|-"] == "parse_failed: found=0 pairs"
    assert reasons["real_gdp_qoq|-"] == "non_numeric: value 'nan' is not finite"
    assert reasons["unemployment_rate|4.4"] is None
    got = sorted(r for r in out.get_column("invalid_reason").to_list() if r)
    assert "non_numeric: value 'four' is not a number" in got
    assert "guardrail: 250 outside [-20, 20] percent (scale guardrail: percent)" in got
    assert any(
        r.startswith("wrong_target: target_month 2026-02 differs from the job's target month 2026-03")
        for r in got
    )
    assert out.filter(pl.col("valid")).get_column("issued_at").to_list() == [
        datetime(2026, 3, 26, 14, tzinfo=UTC)
    ]


def test_raw_housing_count_fails_the_catalog_guardrail(tmp_path):
    # housing starts as a raw count (1,356,000) instead of thousands: off by x1000, caught by 100..9999
    body = (
        "2026-03-26 10:00:00,2026-03,2026-04,2026-03_demand_vars_serverA,gpt-5-search-api,"
        "housing_starts_level,1356000,True,found=25 pairs\n"
    )
    out, _ = read_recorded_csv(write(tmp_path, body, "2026-03_demand_sectoral_activity.csv"), windows=None)
    assert (
        out.row(0, named=True)["invalid_reason"]
        == "guardrail: 1.356e+06 outside [100, 9999] thousand units, SAAR (scale guardrail: 4-digit, O(10^3"
        " to 10^4))"
    )


def test_structural_errors_name_file_row_and_field(tmp_path):
    ok = "2026-03-26 10:00:00,2026-03,2026-04,j,gpt-5-search-api,cpi_yoy,2.5,True,x\n"
    with pytest.raises(SourceError, match=r"row 2 \(line 3\), field variable='cpi_yoyy'"):
        read_recorded_csv(write(tmp_path, ok + ok.replace("cpi_yoy", "cpi_yoyy")), windows=None)
    with pytest.raises(
        SourceError, match=r"row 1 \(line 2\), field model='claude-sonnet-4.5-api'.*no model_id"
    ):
        read_recorded_csv(
            write(tmp_path, ok.replace("gpt-5-search-api", "claude-sonnet-4.5-api")), windows=None
        )
    # 2026-03-08 02:30 does not exist in New York (clocks jump 02:00 -> 03:00)
    with pytest.raises(
        SourceError, match=r"row 1 \(line 2\), field timestamp_local='2026-03-08 02:30:00'.*gap"
    ):
        read_recorded_csv(
            write(tmp_path, ok.replace("2026-03-26 10:00:00", "2026-03-08 02:30:00")), windows=None
        )
    with pytest.raises(SourceError, match=r"field target_month='2026-13'"):
        read_recorded_csv(write(tmp_path, ok.replace(",2026-03,", ",2026-13,", 1)), windows=None)
    with pytest.raises(SourceError, match=r"field parsed_ok='yes'"):
        read_recorded_csv(write(tmp_path, ok.replace(",True,", ",yes,")), windows=None)
    p = tmp_path / "2026-03_x.csv"
    p.write_text("timestamp_local,variable,value\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"2026-03_x.csv, row 0 .*missing column"):
        read_recorded_csv(p, windows=None)


def test_other_models_fall_back_hour_and_citations(tmp_path):
    # US fall-back 2025-11-02: 01:00 happens twice (EDT then EST); file order decides
    body = (
        "2025-11-02 00:00:00,2025-11,2025-12,2025-11_x_serverA,claude-sonnet-4.5-api,cpi_yoy,3.0,True,n\n"
        "2025-11-02 01:00:00,2025-11,2025-12,2025-11_x_serverB,claude-sonnet-4.5-api,cpi_yoy,3.1,True,n\n"
        "2025-11-02 01:00:00,2025-11,2025-12,2025-11_x_serverB,claude-sonnet-4.5-api,cpi_yoy,3.2,True,n\n"
        "2025-11-02 02:00:00,2025-11,2025-12,2025-11_x_serverA,claude-sonnet-4.5-api,cpi_yoy,3.3,True,n\n"
    )
    p = tmp_path / "2025-11_core_macroeconomic_conditions.csv"
    p.write_text(
        HEADER.strip()
        + ",raw_model_output,citations\n"
        + "".join(
            line + f',"cpi_yoy=3.{i}","[\'https://www.bls.gov/cpi/\']"\n'
            for i, line in enumerate(body.splitlines())
        ),
        encoding="utf-8",
    )
    out, _ = read_recorded_csv(
        p, windows=None, model_ids={"claude-sonnet-4.5-api": "anthropic/claude-sonnet-4-5@single"}
    )
    assert out.get_column("issued_at").to_list() == [
        datetime(2025, 11, 2, h, tzinfo=UTC) for h in (4, 5, 6, 7)
    ]
    assert set(out.get_column("model_id")) == {"anthropic/claude-sonnet-4-5@single"}
    assert json.loads(out.get_column("citations")[0]) == ["https://www.bls.gov/cpi/"]
    assert out.get_column("rationale")[1] == "cpi_yoy=3.1"
    assert (
        out.get_column("partition_key")[0]
        == "anthropic/claude-sonnet-4-5@single/2025-11_core_macroeconomic_conditions"
    )


def test_variable_tables_cover_the_47_runner_variables_once():
    ranges = (
        get_settings().require_snapshot()
        / "livemacroeval/Results/data_from_serverA_serverB/final_analysis_data/variable_prediction_ranges.csv"
    )
    names = set(pl.read_csv(ranges).get_column("variable"))
    assert names == set(REPORTING_VARIABLES) | NON_REPORTING_VARIABLES
    assert not set(REPORTING_VARIABLES) & NON_REPORTING_VARIABLES
    assert len(set(REPORTING_VARIABLES.values())) == 16


def test_partitions_round_trip_through_duckdb(tmp_path, recorded):
    frame, _ = recorded
    with open_db(tmp_path / "t.duckdb") as con:
        for pk in frame.get_column("partition_key").unique().sort():
            part = frame.filter(pl.col("partition_key") == pk).with_columns(
                pl.lit("recorded_nowcasts").alias("producer")
            )
            replace_partition(con, "nowcasts", part, {"producer": "recorded_nowcasts", "partition_key": pk})
        back = read_table(con, "nowcasts")
    assert back.height == frame.height == 5651 + 5025 + 211 + 266
    assert back.filter(~pl.col("valid")).height == 2
