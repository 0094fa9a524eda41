"""Sample counts at the paper's scale (issue 18 item 2): the 40 mid caps from the 40-ticker closes reach LEAF
§4.1's 480 / 360 trend samples at 3 / 6 months; the count report prints every domain beside §4.1's with the
reason a count differs; the curated prediction-market subset follows its stated rule."""

from datetime import UTC, date, datetime

import polars as pl

from leaf_live.event import catalog, pipeline, tasks
from leaf_live.event.sources.markets import SnapshotDailyPrices, to_market_prices


def test_the_40_mid_caps_reach_480_and_360_samples(snapshot_dir):
    spans = pipeline.Spans()
    syms = [t.symbol for t in catalog.MID_CAPS]
    bars = SnapshotDailyPrices(snapshot_dir).daily_bars(syms, *pipeline.source_days(spans)["market_prices"])
    ts = tasks.midcap_tasks(to_market_prices(bars), syms, *spans.mid_cap_months)
    t5 = ts.tasks.filter(pl.col("task_kind") == "trend5")
    assert dict(t5.group_by("horizon").len().iter_rows()) == {"3mo": 480, "6mo": 360}
    # 40 stocks x 12 cutoff months (2025-01 .. 2025-12) and x 9 (2025-01 .. 2025-09)
    assert t5["target_id"].n_unique() == 40
    # the stocks whose older files end 2025-04 come from the 40-ticker closes folder
    src = dict(bars.filter(pl.col("symbol") == "SNOW").group_by("source").len().iter_rows())
    assert set(src) == {"yfinance_close_midcaps40_to_2026-08"}


def _rows(domain: str, horizon: str, per: dict[str, int], case: bool = False) -> list[tuple]:
    return [(domain, horizon, t, case) for t, n in per.items() for _ in range(n)]


def test_the_count_report_says_why_a_count_differs():
    coms = {t.target_id: 34 for t in catalog.COMMODITIES if t.target_id not in ("KC=F", "ZS=F")}
    rows = _rows("commodity", "3d", {**coms, "ZS=F": 28})
    rows += _rows("mid_cap", "3mo", {t.target_id: 12 for t in catalog.MID_CAPS})
    rows += _rows("large_cap", "1d", {"IBM": 1, "META": 1}, case=True)
    counts = pl.DataFrame(
        rows,
        schema={"domain": pl.Utf8, "horizon": pl.Utf8, "target_id": pl.Utf8, "case": pl.Boolean},
        orient="row",
    )
    lines = pipeline.sample_count_report(counts, questions=417, curated=30, event_tasks=2502)
    text = "\n".join(lines)
    assert "  commodity: 3d 300 [340]   7d 0 [320]" in text
    assert "why 3d: no tasks for KC=F (1 of 10 targets); short series: ZS=F 28/34" in text
    assert "  mid_cap: 3mo 480 [480]   6mo 0 [360]" in text
    assert "recorded case days 2026-03-25 (not in §4.1): 1d 2 (2 stocks)" in text
    assert "event: 417 resolved questions" in text and "curated subset 30 [30]" in text
    # every §4.1 domain has its line
    for d in ("commodity", "large_cap", "electricity", "weather", "mid_cap"):
        assert any(ln.startswith(f"  {d}: ") for ln in lines), d


def test_the_curated_questions_are_the_most_traded_resolved_per_category():
    q = pl.DataFrame(
        {
            "question_id": ["a", "b", "c", "d", "e"],
            "category": ["tech_ai", "tech_ai", "tech_ai", "other", "politics_world"],
        }
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    path = pl.DataFrame(
        {
            "question_id": ["a", "a", "b", "b", "b", "c", "d", "d", "d", "e"],
            "kind": [
                "trade",
                "resolution",
                "trade",
                "trade",
                "resolution",
                "trade",
                "trade",
                "trade",
                "resolution",
                "trade",
            ],
            "ts": [at] * 10,
        }
    )
    got = pipeline.curated_questions(q, path, per_category=1)
    # c never resolved, d is not a LEAF category, e never resolved: one tech_ai pick, b (2 prices) over a (1)
    assert got.rows() == [("tech_ai", "b", 2)]
    assert date(2026, 3, 25) in pipeline.Spans().case_days
