"""The App. E/F/G/Q/R analyses on the real recorded GPT-5 runs, through `leaf-live run` (the shared main run):
identities against independent SQL over the stored nowcasts, the paper's GPT-5 figures the released data
reproduce (Table 15, Table 14, App. R, Table 6's Fed update count), and the report the run writes."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from leaf_live.core import storage
from leaf_live.macro.analyses import rationales as G

GPT5 = "openai/gpt-5-search-api@single"
MAR = f"{GPT5}/2026-03_core_macroeconomic_conditions"
FEB = f"{GPT5}/2026-02_core_macroeconomic_conditions"


@pytest.fixture(scope="module")
def con(main_run):
    c = storage.connect_read_only(main_run["db"])
    yield c
    c.close()


def _one(con, sql: str, params=()):
    return con.execute(sql, list(params)).fetchall()


def test_recovery_counts_equal_the_stored_nowcasts(con):
    rows = _one(
        con,
        "SELECT indicator_id, reference_period, run_id, n_pre, n_post, release_at FROM post_release_recovery "
        "WHERE model_id = ?",
        [GPT5],
    )
    # every recorded GPT-5 series has post-release nowcasts: 9 Feb-core + 9 Mar-core (GDP 2026Q1 in both runs)
    # + Apr ISM manufacturing + Apr ISM services
    assert len(rows) == 20
    for ind, ref, run, n_pre, n_post, rel in rows:
        pre, post = _one(
            con,
            "SELECT count(DISTINCT issued_at) FILTER (WHERE issued_at < ?), count(DISTINCT issued_at) "
            "FILTER (WHERE issued_at >= ?) FROM nowcasts WHERE valid AND model_id = ? AND indicator_id = ? "
            "AND reference_period = ? AND partition_key = ?",
            [rel, rel, GPT5, ind, ref, run],
        )[0]
        assert (n_pre, n_post) == (pre, post), (ind, ref, run)
    cpi = _one(
        con,
        "SELECT n_post, hours_to_first_hit, actual, spline_lambda FROM post_release_recovery "
        "WHERE indicator_id = 'cpi' AND reference_period = '2026-03-01'",
    )[0]
    # March CPI: 68 hourly nowcasts in the 3 days after the 08:30 ET release; the first 3.3 comes 6.5 h after
    # it
    assert cpi[:3] == (68, 6.5, 3.3) and cpi[3] > 0
    # every path row of a series carries a spline value and the series' last available_at
    bad = _one(
        con,
        "SELECT count(*) FROM post_release_paths p JOIN post_release_recovery r USING (partition_key, "
        "indicator_id, reference_period, run_id) WHERE p.spline IS NULL OR p.available_at <> r.available_at",
    )
    assert bad[0][0] == 0


def test_convergence_against_the_consensus_by_independent_sql(con):
    rows = _one(
        con,
        "SELECT indicator_id, reference_period, run_id, n_nowcasts, terminal_issued_at, terminal_gap_sigma, "
        "release_at, available_at FROM copying_convergence WHERE model_id = ? AND comparator_model_id = "
        "'consensus/investing'",
        [GPT5],
    )
    assert len(rows) == 20
    for ind, ref, run, n, term, gap, rel, avail in rows:
        cnt, last = _one(
            con,
            "SELECT count(DISTINCT issued_at), max(issued_at) FROM nowcasts WHERE valid AND model_id = ? "
            "AND indicator_id = ? AND reference_period = ? AND partition_key = ? AND issued_at < ?",
            [GPT5, ind, ref, run, rel],
        )[0]
        want = _one(
            con,
            "SELECT abs(n.value - r.consensus) / s.sigma FROM nowcasts n, releases r, surprise_scales s "
            "WHERE n.valid AND n.model_id = ? AND n.partition_key = ? AND n.indicator_id = ? AND "
            "n.reference_period = ? AND n.issued_at = ? AND r.indicator_id = n.indicator_id AND "
            "r.reference_period = n.reference_period AND s.indicator_id = n.indicator_id",
            [GPT5, run, ind, ref, last],
        )[0][0]
        assert (n, term) == (cnt, last) and gap == pytest.approx(want, abs=1e-12), (ind, ref, run)
        # point in time: nothing at or after the release; known once the final consensus was (1 min before)
        assert term < rel and avail <= rel


def test_fed_comparators_and_table_6_update_count(con):
    got = {
        r[0]: r[1:]
        for r in _one(
            con,
            "SELECT comparator_model_id, n_fed_updates, n_series, n_revisions, status "
            "FROM copying_event_time WHERE model_id = ?",
            [GPT5],
        )
    }
    assert set(got) == {"fed/cleveland-cpi", "fed/gdpnow", "fed/nyfed-staff", "fed/chicago-churn"}
    # Table 6: 29 Cleveland Fed updates of the March 2026 CPI nowcast, as the paper counts
    assert got["fed/cleveland-cpi"][0] == 29
    # both GDP runs (February and March targets) are series of the 2026Q1 test
    assert got["fed/gdpnow"][1] == 2 and got["fed/gdpnow"][3] == got["fed/nyfed-staff"][3]
    # revisions = consecutive pre-release hours of each run, minus one per series
    (n_rev,) = _one(
        con,
        "SELECT sum(n) - count(*) FROM (SELECT partition_key, count(DISTINCT issued_at) n FROM nowcasts "
        "WHERE valid AND model_id = ? AND indicator_id = 'real_gdp_advance' AND reference_period = "
        "'2026-01-01' AND issued_at < TIMESTAMPTZ '2026-04-30 12:30:00+00' GROUP BY partition_key)",
        [GPT5],
    )[0]
    assert got["fed/gdpnow"][2] == n_rev
    comov = dict(
        _one(
            con,
            "SELECT comparator_model_id, status FROM copying_comovement WHERE model_id = ? AND "
            "indicator_id = 'cpi'",
            [GPT5],
        )
    )
    assert comov == {"consensus/investing": "comparator_constant", "fed/cleveland-cpi": "ok"}


def test_table_14_15_and_app_r_reproduce_the_paper(con):
    # Table 14, GPT-5 row: February durable goods -0.50, March industrial production +0.30 (the paper's
    # values)
    finals = dict(
        _one(
            con,
            "SELECT indicator_id || ' ' || reference_period, final_value FROM cross_model_errors WHERE "
            "model_id = ? AND ((indicator_id = 'durable_goods' AND reference_period = '2026-02-01') OR "
            "(indicator_id = 'industrial_production' AND reference_period = '2026-03-01'))",
            [GPT5],
        )
    )
    assert finals == {"durable_goods 2026-02-01": -0.5, "industrial_production 2026-03-01": 0.3}
    ip = _one(
        con,
        "SELECT sign_wrong, error, actual, prior_actual FROM cross_model_errors WHERE model_id = ? AND "
        "indicator_id = 'industrial_production' AND reference_period = '2026-03-01'",
        [GPT5],
    )[0]
    assert (
        ip[0] is True and ip[1] == pytest.approx(0.8) and (ip[2], ip[3]) == (-0.5, 0.2)
    )  # growth into a contraction
    # Table 15, GPT-5: median 2.50, IQR 0.40 over April 2-7, final 3.30, deviation 0.00
    t15 = _one(
        con,
        "SELECT run_id, n_nowcasts, median, iqr, final_value, deviation FROM nowcast_path_summaries "
        "WHERE model_id = ?",
        [GPT5],
    )
    assert len(t15) == 1 and t15[0][0] == MAR
    assert t15[0][2:] == pytest.approx((2.50, 0.40, 3.30, 0.0), abs=1e-9)
    (n_span,) = _one(
        con,
        "SELECT count(*) FROM nowcasts WHERE valid AND partition_key = ? AND indicator_id = 'cpi' AND "
        "issued_at >= TIMESTAMPTZ '2026-04-02 00:00:00-04' AND issued_at < TIMESTAMPTZ "
        "'2026-04-08 00:00:00-04'",
        [MAR],
    )[0]
    assert t15[0][1] == n_span
    # App. R: about +0.3 pp over April 8 10:30-14:00 ET; 0.3 / 0.0289 = 10.4 pp against 18.9% realized
    # gasoline
    r = _one(
        con,
        "SELECT revision, implied_component_revision, component_ratio FROM revision_attributions "
        "WHERE model_id = ?",
        [GPT5],
    )[0]
    assert (
        r[0] == pytest.approx(0.3, abs=1e-9)
        and round(r[1], 1) == 10.4
        and r[2] == pytest.approx(10.38 / 18.9, abs=1e-3)
    )


def test_rationale_audit_is_empty_for_gpt5_and_works_on_real_agent_text(con, snapshot_dir):
    # the released GPT-5 files carry no rationale text: nothing to audit, and the report says so
    assert (
        _one(con, "SELECT count(*) FROM nowcasts WHERE model_id = ? AND rationale IS NOT NULL", [GPT5])[0][0]
        == 0
    )
    assert _one(con, "SELECT count(*) FROM rationale_audit")[0][0] == 0
    # real agent prose (Claude Code agent, LiveMacroEval fork Zukahi): its one explicit calculation recomputes
    f = (
        snapshot_dir
        / "livemacroeval/_fork_Zukahi/LiveMacro/data_evidence/model_claude-code-agent-pit"
        / "2026-05_ism_manufacturing_index_forecast.csv"
    )
    (row,) = list(csv.DictReader(f.open(encoding="utf-8")))
    (calc,) = G.extract_calculations(row["raw_model_output"])
    assert (calc.expression, calc.stated, calc.matched) == ("54.5 - 52.7", 1.8, True)
    # hosts of the fork's cited sources agree with urllib's own parse
    args = snapshot_dir / "livemacroeval/_fork_Zukahi/LiveMacro/data_evidence/model_claude-code-agent-pit"
    urls = [
        r["source_url"]
        for p in sorted(args.glob("*_arguments.csv"))
        for r in csv.DictReader(p.open(encoding="utf-8"))
    ]
    assert len(urls) == 80
    for u in urls:
        assert G.host(u) == re.sub(r"^www\.", "", urlsplit(u).netloc.lower())
    assert {G.host_category(G.host(u)) for u in urls if "kansascityfed.org" in u} == {"official"}


def test_run_writes_the_report_it_names(main_run):
    out = main_run["out"]
    m = re.search(r"App\. E, F, G, Q, R\) and the LEAF analyses .* beside the papers' figures: (\S+)", out)
    assert m, out[-2000:]
    path = Path(m.group(1))
    assert path == Path(main_run["db"]).parent / "macro_analyses.md"
    text = path.read_text()
    for head in (
        "## App. E",
        "### Table 3",
        "### Table 4",
        "### Table 5",
        "### Table 6",
        "## App. G",
        "### Table 14",
        "### Table 15",
        "## App. R",
    ):
        assert head in text
    # Table 15's GPT-5 row beside the paper's
    assert re.search(
        r"\| table15_cpi_2026_03 \| openai/gpt-5-search-api@single \(2026-03 core\) \| \d+ \| 2\.50 \|"
        r" 0\.40 \| "
        r"3\.30 \| \+0\.00 \| 2\.50 / 0\.40 / 3\.30 / \+0\.00 \|",
        text,
    )
    assert "No rationale text is stored for openai/gpt-5-search-api@single" in text
