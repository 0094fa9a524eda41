"""``leaf-live run`` prints the event-track board after the macro boards, with the numbers of the stored
scores: the large caps' last-value MAPE beside LEAF Table 7 on §4.1's sample count, and the Brier of the
market price, the base rate and always-0.5 per cutoff with the difficulty-adjusted index (the session's one
main run)."""

from __future__ import annotations

import re

import pytest

from leaf_live.cli import main as cli_main
from leaf_live.core import storage


def _block(out: str, header: str) -> list[str]:
    lines = out.splitlines()
    i = lines.index(header)
    block = []
    for ln in lines[i + 1 :]:
        if not ln.startswith("  "):
            break
        block.append(ln)
    return block


def _row(block: list[str], model: str) -> tuple[float, float, float, int]:
    line = next(ln for ln in block if ln.split()[0] == model)
    m = re.fullmatch(r"\s+\S+\s+([\d.]+)\s+\[([\d.]+), ([\d.]+)\]\s+n=(\d+)", line)
    assert m, line
    return float(m[1]), float(m[2]), float(m[3]), int(m[4])


def test_event_board_follows_the_macro_boards_with_the_stored_numbers(main_run):
    out, db = main_run["out"], main_run["db"]
    assert out.index("Event track (LEAF) leaderboard") > out.index("== ")  # after the macro boards
    con = storage.connect_read_only(db)
    try:
        want, n = con.execute(
            "SELECT avg(value), count(*) FROM leaf_scores WHERE model_id = 'baseline/last-value' "
            "AND domain = 'large_cap' AND task_kind = 'series' AND horizon = '3d' AND metric = 'mape'"
        ).fetchone()
        mkt, mkt_n = con.execute(
            "SELECT avg(value), count(*) FROM leaf_scores WHERE model_id = 'market/polymarket' AND horizon ="
            " '10%' AND metric = 'brier'"
        ).fetchone()
    finally:
        con.close()
    mean, lo, hi, count = _row(_block(out, "large_cap / series / 3d / mape"), "baseline/last-value")
    # every series model forecasts every task, so the like-with-like board keeps all 1,020 (LEAF §4.1: 1,020)
    assert count == n == 1020
    assert mean == pytest.approx(want, abs=5e-5) and lo < mean < hi
    assert mean == pytest.approx(1.948, abs=0.05)  # LEAF Table 7, last value at 3 days
    assert set(ln.split()[0] for ln in _block(out, "large_cap / series / 3d / mape")) == {
        "baseline/last-value",
        "baseline/hist-mean",
        "baseline/auto-ets",
        "baseline/auto-theta",
    }
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
