"""The ranked macro board's labelled columns (issue 16): the beta-only and combined own-event intervals, and
the live auto-ARIMA labelled against App. I from its stored rationale."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from leaf_live.macro.forecasters.arima.nowcasts import provenance_counts, rationale_provenance
from leaf_live.macro.scoring.board import render_macro_board

# rationale lines as arima_nowcasts writes them (copied from a default run)
OLD = (
    "ARIMA(2,2,1) trend=n on log level, AIC=-7323.19; FRED-MD CPIAUCSL, vintage 2025-03 (wanted 2025-08,"
    " not stored: 5 months older); obs 1959-01..2025-02 (n=794); h=7 months; yoy_pct = 3.40727"
)
FIRST = (
    "AR(1)+const on log level; first releases of ism_manufacturing; obs 2009-12..2025-07 (n=188); h=2 months;"
    " level = 48.8983"
)
GDP = "ARIMA(1,1,0) trend=c, AIC=-1.00; FRED-QD GDPC1, vintage 2025-09; obs x (n=9); h=1 quarters; x"


def test_provenance_is_read_from_the_rationale_the_fit_writes():
    assert rationale_provenance(OLD) == (5, 7)
    assert rationale_provenance(FIRST) == (0, 2)
    assert rationale_provenance(GDP) == (0, 1)
    assert rationale_provenance(None) == (0, None)
    assert rationale_provenance("fewer than 60 observations") == (0, None)
    got = provenance_counts([OLD, FIRST, OLD, GDP, None])
    assert got == {"n_releases": 5, "n_older_vintage": 2, "n_h_4plus": 2, "min_h": 1, "max_h": 7}


def _row(model: str, rank: int | None, **kw) -> dict:
    base = {
        "leaderboard": "live",
        "fit_name": "full",
        "horizon": "terminal",
        "scope": "overall",
        "target": "return",
        "event_window": "full",
        "model_id": model,
        "reference_model_id": "consensus/investing",
        "rank": rank,
        "ranked": rank is not None,
        "score": None,
        "ci90_lo": None,
        "ci90_hi": None,
        "p_rank1": None,
        "diff_ci90_lo": None,
        "diff_ci90_hi": None,
        "n_events": 5,
        "n_events_board": 62,
        "min_events": 10,
        "n_boot": 1000,
        "own_score": None,
        "own_ci90_lo": None,
        "own_ci90_hi": None,
        "own_beta_ci90_lo": None,
        "own_beta_ci90_hi": None,
        "max_event_share": 0.2,
        "max_event_flag": False,
        "max_event_at": datetime(2026, 1, 9, 13, 30, tzinfo=UTC),
        "common_view_ok": False,
        "common_view_note": "no common set",
        "common_rank": None,
        "n_events_common": None,
        "common_score": None,
        "forecast_provenance": None,
    }
    return base | kw


def test_ranked_board_shows_both_own_intervals_and_labels_the_arima():
    b = pl.DataFrame(
        [
            _row("consensus/investing", 1, score=0.0, own_score=0.0, n_events=62),
            _row(
                "openai/gpt-5",
                2,
                score=-0.0627,
                n_events=16,
                own_score=-0.0508,
                own_ci90_lo=-0.273,
                own_ci90_hi=-0.00314,
                own_beta_ci90_lo=-0.0887,
                own_beta_ci90_hi=-0.0298,
            ),
            _row(
                "baseline/auto-arima",
                None,
                n_events=6,
                own_score=0.0151,
                own_beta_ci90_lo=0.00456,
                own_beta_ci90_hi=0.0241,
                forecast_provenance="5/8 older vintage, h 2-7 (5 at 4+)",
            ),
        ],
        infer_schema_length=None,
    )
    text = render_macro_board(b, width=260)
    head = next(line for line in text.splitlines() if line.startswith("#"))
    assert "own 90% β+events" in head and "own 90% β only" in head and "vs App. I" in head
    gpt = next(line for line in text.splitlines() if "openai/gpt-5" in line and "[" in line)
    assert "[-0.273, -0.00314]" in gpt and "[-0.0887, -0.0298]" in gpt
    arima = next(line for line in text.splitlines() if line.startswith("–  baseline/auto-arima"))
    assert arima.rstrip().endswith("5/8 older vintage, h 2-7 (5 at 4+)")
    flat = " ".join(text.split())
    assert "baseline/auto-arima is not App. I's baseline as specified: 5/8 older vintage" in flat
    assert "β only = parametric over V_β (Eq. 12" in flat
    # no provenance row, no such note; a narrow terminal drops the label column, never the note
    assert "is not App. I's" not in " ".join(render_macro_board(b.head(2), width=260).split())
    narrow = render_macro_board(b, width=100)
    assert "vs App. I" in narrow.splitlines()[-2] + narrow.splitlines()[-1]  # named as hidden
    assert "is not App. I's baseline" in " ".join(narrow.split())
