"""The one rule of what counts (issue 21 item 3; DESIGN.md principle 8) on hand-made rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from leaf_live.core.participation import board_of, content_hash, label_boards, live_verified

DUE = datetime(2026, 4, 10, 12, 30, tzinfo=UTC)  # March CPI release, 08:30 ET


def test_live_verified_is_strictly_before_the_due_time():
    assert live_verified(DUE - timedelta(microseconds=1), DUE)
    assert not live_verified(DUE, DUE)  # at the release: never live (LiveMacroEval Sec. 3.4)
    assert not live_verified(DUE + timedelta(hours=1), DUE)
    assert not live_verified(None, DUE) and not live_verified(DUE, None)  # a CLI file has no service time
    assert board_of(DUE - timedelta(hours=1), DUE) == "live" and board_of(None, DUE) == "retrospective"
    with pytest.raises(ValueError, match="received_at=.*naive"):
        live_verified(datetime(2026, 4, 10), DUE)


def test_label_boards_marks_only_external_rows_without_a_live_receipt():
    rows = pl.DataFrame(
        {
            "producer": ["submission_service", "submission_service", "external_submissions", "llm_nowcasts"],
            "partition_key": ["external/a/m#r1", "external/a/m#r2", "external/b", "2026-04"],
            "model_id": ["external/a/m", "external/a/m", "external/b", "openai/gpt-5@single"],
            "value": [1.0, 2.0, 3.0, 4.0],
        }
    )
    receipts = pl.DataFrame(
        {
            "producer": ["submission_service", "submission_service", "external_submissions"],
            "slice_key": ["external/a/m#r1", "external/a/m#r2", "external/b"],
            "board": ["live", "retrospective", "retrospective"],
        }
    )
    out = label_boards(rows, receipts)
    assert out.columns == rows.columns and out["value"].to_list() == [1.0, 2.0, 3.0, 4.0]
    assert out["model_id"].to_list() == [
        "external/a/m",
        "external/a/m@retrospective",
        "external/b@retrospective",
        "openai/gpt-5@single",
    ]
    # no receipts stored: every external row is retrospective, the others unchanged
    assert label_boards(rows, None)["model_id"].to_list()[0] == "external/a/m@retrospective"
    assert label_boards(rows, None)["model_id"].to_list()[3] == "openai/gpt-5@single"


def test_content_hash_is_canonical():
    a = content_hash("r", "external/a/m", [{"x": 1, "y": "2"}])
    assert a == content_hash("r", "external/a/m", [{"y": "2", "x": 1}])  # key order does not matter
    assert a != content_hash("r", "external/a/m", [{"x": 1, "y": "3"}])
    # sha256 of the canonical text, worked by hand
    import hashlib

    text = '{"model_id":"external/a/m","round_id":"r","rows":[{"x":1,"y":"2"}]}'
    assert a == hashlib.sha256(text.encode()).hexdigest()
