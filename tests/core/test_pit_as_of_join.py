"""core.pit.as_of_join: as_of evaluated at many times in one join, checked row by row against pit.as_of."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from leaf_live.core import pit

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_as_of_join_by_hand():
    f = pl.DataFrame(
        {
            "k": ["a", "a", "a", "b"],
            "available_at": [T0, T0 + timedelta(hours=2), T0 + timedelta(hours=2), T0 + timedelta(hours=1)],
            "v": [1, 2, 3, 4],
        }
    )
    left = pl.DataFrame(
        {
            "k": ["a", "a", "b", "a", "c"],
            "t": [T0 + timedelta(hours=2), T0 + timedelta(hours=1), T0, T0 - timedelta(hours=1), T0],
        }
    )
    j = pit.as_of_join(left, f, left_time="t", by=["k"])
    # a@+2h: tie of rows 2 and 3 at +2h keeps the last (3); a@+1h: only T0 (1); b@T0: b starts at +1h; c: no
    # rows
    assert j["v"].to_list() == [3, 1, None, None, None]
    assert j["t"].to_list() == left["t"].to_list()  # left order kept
    assert j["available_at_asof"].to_list()[:2] == [T0 + timedelta(hours=2), T0]
    assert pit.as_of_join(left, f, left_time="t", by=["k"], strict=True)["v"].to_list() == [
        1,
        1,
        None,
        None,
        None,
    ]


def test_as_of_join_equals_as_of_at_each_row():
    rnd = random.Random(7)
    n = 60
    f = pl.DataFrame(
        {
            "k": [rnd.choice("ab") for _ in range(n)],
            "available_at": [T0 + timedelta(hours=rnd.randint(0, 12)) for _ in range(n)],
            "valid": [rnd.random() < 0.75 for _ in range(n)],
            "v": list(range(n)),
        }
    )
    left = pl.DataFrame(
        {
            "k": [rnd.choice("abc") for _ in range(50)],
            "t": [T0 + timedelta(hours=rnd.randint(-1, 13)) for _ in range(50)],
        }
    )
    for strict in (False, True):
        j = pit.as_of_join(left, f, left_time="t", by=["k"], strict=strict, where=pl.col("valid"))
        for r in j.iter_rows(named=True):
            one = pit.as_of(
                f.filter(pl.col("k") == r["k"]), r["t"], ["k"], strict=strict, where=pl.col("valid")
            )
            assert r["v"] == (one["v"][0] if one.height else None)


def test_as_of_join_refuses_naive_times():
    f = pl.DataFrame({"available_at": [datetime(2026, 3, 1)], "v": [1]})
    with pytest.raises(ValueError, match="tz-aware"):
        pit.as_of_join(pl.DataFrame({"t": [T0]}), f, left_time="t")
