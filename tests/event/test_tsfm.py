"""Time-series foundation models through the forecaster contract: a tiny Chronos (T5) model the test builds
and saves itself, loaded by the real loader (chronos.BaseChronosPipeline.from_pretrained) and forecasting
event tasks into leaf_forecasts rows. Published weights cannot be fetched offline, hence the self-built
model."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from event.test_event_scoring import _frame, _task

from leaf_live.core.forecaster import Forecaster, run_forecasters
from leaf_live.event import baselines as B
from leaf_live.event import tsfm

CONTEXT_LIMIT = 15.0  # the tokenizer's bin range, in units of the context's mean absolute value


@pytest.fixture(scope="module")
def tiny_chronos(tmp_path_factory, tsfm_extra) -> str:
    torch, transformers, _ = tsfm_extra
    cfg = transformers.T5Config(
        vocab_size=64,
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    cfg.chronos_config = {
        "tokenizer_class": "MeanScaleUniformBins",
        "tokenizer_kwargs": {"low_limit": -CONTEXT_LIMIT, "high_limit": CONTEXT_LIMIT},
        "n_tokens": 64,
        "n_special_tokens": 2,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "use_eos_token": True,
        "model_type": "seq2seq",
        "context_length": 64,
        "prediction_length": 8,
        "num_samples": 16,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
    }
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tsfm") / "tiny-t5"
    transformers.T5ForConditionalGeneration(cfg).save_pretrained(path)
    return str(path)


def _tasks() -> pl.DataFrame:
    rng = np.random.default_rng(5)
    closes = list(100 + np.cumsum(rng.normal(0, 1, 15)))
    hourly = list(10 + 5 * np.sin(np.arange(72) * 2 * np.pi / 24) + rng.normal(0, 0.3, 72))
    return _frame(
        [
            _task("large_cap/X/series/3d/t", "large_cap", "series", 3, "session", closes),
            _task("large_cap/X/trend5/7d/t", "large_cap", "trend5", 7, "session", closes, horizon="7d"),
            _task("weather/c/series/1d/t", "weather", "series", 24, "hour", hourly, horizon="1d"),
            _task("weather/c/trend3/1d/t", "weather", "trend3", 24, "hour", hourly, horizon="1d"),
            _task("event/q/event/10%/t", "event", "event", 1, "event", [0.3], horizon="10%"),
        ]
    )


def test_tiny_chronos_forecasts_tasks_through_the_contract(tiny_chronos, tsfm_extra):
    torch = tsfm_extra[0]
    f = tsfm.load_forecaster(f"chronos:{tiny_chronos}")
    assert isinstance(f, Forecaster) and f.model_id == "tsfm/chronos-tiny-t5"
    assert type(f.pipeline).__name__ == "ChronosPipeline"  # the real pipeline class from the saved config
    tk = _tasks()
    out = run_forecasters([f], tk, "leaf_forecasts", columns={"producer": "leaf_forecasts"})
    assert sorted(out["task_id"]) == sorted(
        tk.filter(pl.col("task_kind") != "event")["task_id"]
    )  # no event task
    by = {r["task_id"]: r for r in out.iter_rows(named=True)}
    task = {r["task_id"]: r for r in tk.iter_rows(named=True)}
    for tid, r in by.items():
        assert (
            r["bundle_hash"] == task[tid]["bundle_hash"]
            and r["issued_at"] == task[tid]["cutoff"]
            and r["valid"]
        )
    s = by["large_cap/X/series/3d/t"]
    q = json.loads(s["quantiles"])
    assert len(s["point"]) == 3 and set(q) == {"0.025", "0.1", "0.9", "0.975"}
    # quantiles of one predictive distribution are ordered, the point (median) between 0.1 and 0.9
    lo2, lo1, hi1, hi2 = (np.array(q[k]) for k in ("0.025", "0.1", "0.9", "0.975"))
    assert np.all(lo2 <= lo1) and np.all(lo1 <= np.array(s["point"])) and np.all(np.array(s["point"]) <= hi1)
    assert np.all(hi1 <= hi2)
    # mean scaling: every forecast lies inside the tokenizer's bins, +/-15 x the context's mean |value|
    closes = B.bundle_values(task["large_cap/X/series/3d/t"]["bundle"])
    assert np.all(np.abs(hi2) <= CONTEXT_LIMIT * np.abs(closes).mean() + 1e-6)
    # the 24-hour series and the trend tasks: the path's length and its implied App. C.1 class
    assert len(by["weather/c/series/1d/t"]["point"]) == 24
    # markets: the class of the 7th step's rate of change (the row keeps that step as its point)
    t5 = by["large_cap/X/trend5/7d/t"]
    assert t5["predicted_class"] == B.implied_class(
        task["large_cap/X/trend5/7d/t"], closes, np.array(t5["point"])
    )
    w = by["weather/c/trend3/1d/t"]
    path = np.array(by["weather/c/series/1d/t"]["point"])  # same bundle, same horizon: the same median path
    assert w["predicted_class"] == B.implied_class(
        task["weather/c/trend3/1d/t"], B.bundle_values(task["weather/c/trend3/1d/t"]["bundle"]), path
    )
    # the median is the pipeline's own 0.5 quantile, asked independently with the same seed
    torch.manual_seed(0)
    qq, _ = f.pipeline.predict_quantiles(
        [torch.tensor(closes, dtype=torch.float32)], prediction_length=3, quantile_levels=[0.5]
    )
    again = f.forecast(tk.filter(pl.col("task_id") == "large_cap/X/series/3d/t"))
    np.testing.assert_allclose(again["point"][0].to_list(), qq[0, :, 0].numpy(), rtol=1e-6)


def test_missing_or_foreign_models_name_the_model(tmp_path, tsfm_extra):
    with pytest.raises(tsfm.TsfmError, match=r"chronos model '.*nowhere'.*local directory"):
        tsfm.load_forecaster(f"chronos:{tmp_path / 'nowhere'}")
    with pytest.raises(tsfm.TsfmError, match="expected chronos:<path or hub name>"):
        tsfm.load_forecaster("prophet:x")
    assert tsfm.model_id_for("chronos", "amazon/chronos-bolt-small") == "tsfm/chronos-bolt-small"
    assert tsfm.model_id_for("timesfm", "google/timesfm-2.5-200m-pytorch") == "tsfm/timesfm-2.5-200m-pytorch"


def test_leaf_forecasts_config_adds_the_model(tiny_chronos):
    from assets.event_scoring import LeafForecastsConfig, event_forecasters

    empty = pl.DataFrame(
        {"question_id": [], "category": [], "outcome": [], "available_at": []},
        schema={
            "question_id": pl.Utf8,
            "category": pl.Utf8,
            "outcome": pl.Float64,
            "available_at": pl.Datetime("us", "UTC"),
        },
    )
    fs = event_forecasters(LeafForecastsConfig(statistical=[], tsfm=[f"chronos:{tiny_chronos}"]), empty)
    assert [f.model_id for f in fs] == [
        "baseline/last-value",
        "baseline/hist-mean",
        "market/polymarket",
        "baseline/base-rate",
        "baseline/always-0.5",
        "tsfm/chronos-tiny-t5",
    ]
