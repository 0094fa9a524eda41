"""``leaf-live run`` prints the event-track board after the macro boards, with the numbers of the stored
scores: the large caps' last-value MAPE beside LEAF Table 7 on §4.1's sample count, and the Brier of the
market price, the base rate and always-0.5 per cutoff with the difficulty-adjusted index (the session's one
main run)."""

from __future__ import annotations

import polars as pl
import pytest

from leaf_live.cli import main as cli_main
from leaf_live.core import storage
from leaf_live.core.boards import sig


def test_event_board_follows_the_macro_boards_with_the_stored_numbers(main_run):
    out, db = main_run["out"], main_run["db"]
    assert out.index("Event track (LEAF) leaderboard") > out.index("== ")  # after the macro boards
    con = storage.connect_read_only(db)
    try:
        ranks = storage.read_table(con, "event_rankings")
        want, n = con.execute(
            "SELECT avg(value), count(*) FROM leaf_scores WHERE model_id = 'baseline/last-value' "
            "AND domain = 'large_cap' AND task_kind = 'series' AND horizon = '3d' AND metric = 'mape' "
            "AND task_id NOT LIKE '%/2026-03-25%'"  # the SEER case day's 50 large caps: a board apart
        ).fetchall()[0]
        mkt, mkt_n = con.execute(
            "SELECT avg(value), count(*) FROM leaf_scores WHERE model_id = 'market/polymarket' AND horizon ="
            " '10%' AND metric = 'brier'"
        ).fetchall()[0]
    finally:
        con.close()
    # the stored board (issue 16): last value at 3 days on all 1,020 tasks (LEAF §4.1: 1,020), its own MAPE
    # beside LEAF Table 7; every series model on the large-cap 3d MAPE board
    b = ranks.filter(
        pl.col("domain") == "large_cap",
        pl.col("task_kind") == "series",
        pl.col("horizon") == "3d",
        pl.col("metric") == "mape",
    )
    lv = b.filter(pl.col("model_id") == "baseline/last-value").row(0, named=True)
    assert lv["n_tasks"] == n == 1020 and lv["own_value"] == pytest.approx(want, rel=1e-12)
    assert lv["own_value"] == pytest.approx(1.948, abs=0.05)  # LEAF Table 7, last value at 3 days
    assert set(b["model_id"]) == {
        "baseline/last-value",
        "baseline/hist-mean",
        "baseline/auto-ets",
        "baseline/auto-theta",
    }
    # the printed headline board of the large caps shows the stored rank, n and score (3 significant digits)
    text = out.split("Event track (LEAF) leaderboard")[1]
    block = text.split("Event track | large_cap | series all horizons | MAPE (headline)")[1].split("\n\n")[0]
    head = ranks.filter(pl.col("headline"), pl.col("domain") == "large_cap")
    for r in head.filter(pl.col("ranked")).iter_rows(named=True):
        line = next(ln for ln in block.splitlines() if ln.split()[1:2] == [r["model_id"]])
        assert line.split()[0] == str(r["rank"]) and sig(int(r["n_tasks"])) in line
        assert sig(r["score"], signed=True) in line
    # the Brier table: market price at the 10% cutoff, on the questions with a price
    row = next(ln.split() for ln in out.splitlines() if ln.split()[:2] == ["10%", "market/polymarket"])
    assert float(row[2]) == pytest.approx(mkt, abs=5e-5) and int(row[5]) == mkt_n
    half = next(ln.split() for ln in out.splitlines() if ln.split()[:2] == ["avg", "baseline/always-0.5"])
    assert half[2] == "0.2500" and half[6] == "0.2500" and half[9] == "50.0"  # the index's reference point
    assert (
        "event asset checks:" in out and ", 0 failed" in out.split("event asset checks:")[1].splitlines()[0]
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--event-from", "2025-10-32"], "--event-from '2025-10-32': expected a day YYYY-MM-DD"),
        (
            ["--event-from", "2026-01-01", "--event-to", "2025-12-01"],
            "--event-to 2025-12-01 is before --event-from 2026-01-01",
        ),
        (["--midcap-to", "2026-3"], "--midcap-to '2026-3': expected a month YYYY-MM"),
        (
            ["--load-from", "2019-03-20"],
            "span electricity=(2019-03-20, 2019-03-31): shorter than the 14-day look-back",
        ),
        (["--tsfm", "prophet:x"], "--tsfm 'prophet:x': expected chronos:<path or hub name>"),
        (["--event-boot-draws", "0"], "--event-boot-draws 0: expected a positive integer"),
    ],
)
def test_bad_event_flags_end_in_one_line_before_anything_runs(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["run", "--db", str(tmp_path / "x.duckdb"), *flags])
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "x.duckdb").exists()  # refused before the database is touched
