"""Progress tasks (leaf_live.core.progress) and the run display / stage clock built on them
(leaf_live.run_progress): counts, ETA, listener events, plain-line output and the stage table."""

from __future__ import annotations

import io

import pytest

from leaf_live.core import progress
from leaf_live.run_progress import RunProgress, Stage, stage_table


def test_task_counts_eta_and_listener_events():
    seen = []
    unsubscribe = progress.subscribe(lambda t, e: seen.append((t.name, e, t.done, t.total)))

    def broken(t, e):  # a failing display never fails the work
        raise RuntimeError("display broke")

    unsubscribe_broken = progress.subscribe(broken)
    try:
        with progress.task("fits", 8, "histories") as t:
            assert t.eta() is None  # nothing done yet
            t.advance(2)
            t.started -= 10.0  # 2 of 8 in 10 s: 6 left at 5 s each
            assert t.eta() == pytest.approx(30.0, abs=0.1)
            t.set_total(4)
            t.advance()
            t.close()  # the work ended before the block: 'end' once, not again on exit
            ended = t.ended
            with pytest.raises(ValueError, match="n=-1"):
                t.advance(-1)
    finally:
        unsubscribe()
        unsubscribe_broken()
    assert seen == [
        ("fits", "start", 0, 8),
        ("fits", "advance", 2, 8),
        ("fits", "advance", 2, 4),
        ("fits", "advance", 3, 4),
        ("fits", "end", 3, 4),
    ]
    assert t.ended == ended and t.elapsed >= 10.0
    with progress.task("after", 1) as t2:  # unsubscribed: nothing more recorded
        t2.advance()
    assert len(seen) == 5
    with pytest.raises(ValueError, match="total=-1"):
        with progress.task("bad", -1):
            pass


def test_plain_display_prints_stages_and_task_quarters():
    out = io.StringIO()
    with RunProgress(total_steps=3, stream=out, live=False, min_line_s=0.0, min_task_s=0.0) as clock:
        clock.stage_started("releases")
        with progress.task("histories fitted", 8, "histories") as t:
            for _ in range(8):
                t.advance()
        clock.stage_finished("releases", step=True)
        for name in ("check_a", "check_b"):  # asset checks add up into one stage, no line each
            clock.stage_started(name)
            clock.stage_finished(name, check=True)
        assert clock.stage_finished("never started") is None
    lines = out.getvalue().splitlines()
    # quarters 1..3 on the way (8 items: at 2, 4, 6), then the end; then the step with its count
    assert [ln.split(",")[0] for ln in lines[:4]] == [
        "  histories fitted: 2/8 histories",
        "  histories fitted: 4/8 histories",
        "  histories fitted: 6/8 histories",
        "  histories fitted: 8/8 histories in 0.0 s",
    ]
    assert lines[4].startswith("[1/3] releases: ") and len(lines) == 5
    names = [(s.name, s.steps) for s in clock.stages]
    assert names == [("releases", 1), ("asset checks", 2)]
    # the process's peak memory so far, at each stage's end (this test process: tens of MiB at least)
    assert 10 < clock.stages[0].peak_mib <= clock.stages[1].peak_mib


def test_stage_table_shares_and_totals():
    stages = [
        Stage("series_vintages", 30.0, 20.0, peak_mib=900.4),
        Stage("arima_nowcasts", 60.0, 110.0, peak_mib=1500),
        Stage("asset checks", 10.0, 5.0, steps=12, failed=True),
    ]
    text = stage_table(stages, total_wall=120.0, total_cpu=150.0)
    rows = [ln.split() for ln in text.splitlines()]
    assert rows[0] == ["stage", "wall", "s", "CPU", "s", "share", "peak", "MiB"]
    assert rows[1] == ["series_vintages", "30.0", "20.0", "25.0%", "900"]
    assert rows[2] == ["arima_nowcasts", "60.0", "110.0", "50.0%", "1500"]
    assert rows[3] == ["asset", "checks", "(12)", "FAILED", "10.0", "5.0", "8.3%"]
    assert rows[4] == ["total", "120.0", "150.0"]
    # without totals: the sum of the stages
    assert stage_table(stages).splitlines()[-1].split() == ["total", "100.0", "135.0"]


def test_live_display_draws_bars_with_counts():
    out = io.StringIO()
    with RunProgress(total_steps=2, stream=out, live=True) as clock:
        clock.stage_started("arima_nowcasts")
        with progress.task("histories fitted", 40, "histories") as t:
            t.advance(30)
        clock.stage_finished("arima_nowcasts", step=True)
    text = out.getvalue()
    # rich renders the final state on stop: the overall bar at 1 of 2 steps (the task bar is removed when
    # done)
    assert "steps: arima_nowcasts" in text and "1/2 steps" in text
    assert [s.name for s in clock.stages] == ["arima_nowcasts"]
