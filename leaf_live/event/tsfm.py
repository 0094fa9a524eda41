"""Time-series foundation models as event-track forecasters (LEAF §4.1 compares LLMs with TimesFM and
Chronos): the optional extra ``pip install -e ".[tsfm]"`` (torch 2.13.0 CPU, chronos-forecasting, timesfm).

Both go through the one forecaster contract (``model_id`` + ``forecast(tasks) -> leaf_forecasts rows``) and,
like the statistical baselines, forecast each distinct bundle series once (``baselines.series_inputs``) for
its longest horizon; trend tasks get the class implied by the point path (``baselines.path_forecasts``).

* :class:`ChronosForecaster` loads any Chronos family model (Chronos T5, Chronos-Bolt, Chronos-2) through
  ``chronos.BaseChronosPipeline.from_pretrained`` from a local directory or a Hugging Face hub name, asks
  ``predict_quantiles`` for the 0.025 / 0.1 / 0.5 / 0.9 / 0.975 quantiles and takes the median as the point
  forecast (Ansari et al. 2024, Chronos §5). Sampling models draw with a fixed torch seed, so a rerun gives
  the same rows.
* :class:`TimesFMForecaster` loads TimesFM 2.5 (``timesfm.TimesFM_2p5_200M_torch.from_pretrained``, a local
  checkpoint directory or a hub name), compiles it for the tasks' longest horizon and stores its point
  forecast with the 0.1 / 0.9 deciles (TimesFM's quantile head gives the mean and the nine deciles, so no
  95% interval and no CRPS for it).

Offline, a hub name cannot be fetched (this project's machines reach package registries only): pass a
local directory holding the model's ``config.json`` and weights. Raises :class:`TsfmError` with the model
name and the reason when a model cannot be loaded or the extra is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from leaf_live.event import baselines

LEVELS = (0.025, 0.1, 0.5, 0.9, 0.975)
KINDS = ("chronos", "timesfm")


class TsfmError(RuntimeError):
    """A foundation model cannot be loaded or run; the message names the model and the reason."""


def model_id_for(kind: str, model: str) -> str:
    """``tsfm/<name>`` from a path or hub name (its last component), prefixed with the family when the name
    does not start with it: ``amazon/chronos-t5-small`` -> ``tsfm/chronos-t5-small``, ``/m/tiny`` ->
    ``tsfm/chronos-tiny``.
    """
    name = Path(str(model).rstrip("/")).name or str(model)
    return f"tsfm/{name}" if name.lower().startswith(kind) else f"tsfm/{kind}-{name}"


def _groups(steps: dict[str, int], freq: dict[str, str]) -> dict[tuple[str, int], list[str]]:
    """Bundle hashes grouped by (frequency, horizon steps): one batched call per group."""
    out: dict[tuple[str, int], list[str]] = {}
    for h, n in steps.items():
        out.setdefault((freq[h], n), []).append(h)
    return out


class ChronosForecaster:
    """A Chronos model through the forecaster contract (module doc). ``pipeline`` is a loaded
    ``BaseChronosPipeline`` (else loaded from ``model``)."""

    def __init__(
        self,
        model: str,
        *,
        pipeline: Any = None,
        batch_size: int = 64,
        seed: int = 0,
        model_id: str | None = None,
    ) -> None:
        self.model = str(model)
        self.model_id = model_id or model_id_for("chronos", self.model)
        self.batch_size = batch_size
        self.seed = seed
        self.pipeline = pipeline if pipeline is not None else load_chronos(self.model)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        import torch

        values, steps, freq = baselines.series_inputs(tasks)
        paths: dict[str, np.ndarray] = {}
        quantiles: dict[str, dict[str, np.ndarray]] = {}
        torch.manual_seed(self.seed)
        for (_, horizon), hashes in sorted(_groups(steps, freq).items()):
            for i in range(0, len(hashes), self.batch_size):
                batch = hashes[i : i + self.batch_size]
                ctx = [torch.tensor(values[h], dtype=torch.float32) for h in batch]
                with torch.no_grad():
                    q, _mean = self.pipeline.predict_quantiles(
                        ctx, prediction_length=horizon, quantile_levels=list(LEVELS)
                    )
                q = q.detach().cpu().numpy()  # (batch, horizon, levels)
                for k, h in enumerate(batch):
                    paths[h] = q[k, :, LEVELS.index(0.5)]
                    quantiles[h] = {str(lv): q[k, :, j] for j, lv in enumerate(LEVELS) if lv != 0.5}
        return baselines.path_forecasts(self.model_id, tasks, paths, quantiles)


def load_chronos(model: str) -> Any:
    """``chronos.BaseChronosPipeline.from_pretrained(model)`` on the CPU. Raises :class:`TsfmError`."""
    try:
        from chronos import BaseChronosPipeline
    except ImportError as exc:
        raise TsfmError(
            f"chronos model {model!r}: the tsfm extra is not installed (pip install -e '.[tsfm]'): {exc}"
        ) from None
    try:
        return BaseChronosPipeline.from_pretrained(model, device_map="cpu")
    except Exception as exc:  # transformers raises OSError, ValueError, ... for a missing or foreign model
        raise TsfmError(
            f"chronos model {model!r}: cannot load ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            "offline runs need a local directory with the model's config.json and weights"
        ) from None


class TimesFMForecaster:
    """TimesFM 2.5 through the forecaster contract (module doc). ``model_obj`` is a loaded
    ``timesfm.TimesFM_2p5_200M_torch`` (else loaded from ``model``)."""

    def __init__(
        self,
        model: str,
        *,
        model_obj: Any = None,
        batch_size: int = 32,
        max_context: int = 1024,
        model_id: str | None = None,
    ) -> None:
        self.model = str(model)
        self.model_id = model_id or model_id_for("timesfm", self.model)
        self.batch_size = batch_size
        self.max_context = max_context
        self.tfm = model_obj if model_obj is not None else load_timesfm(self.model)

    def forecast(self, tasks: pl.DataFrame) -> pl.DataFrame:
        import timesfm

        values, steps, freq = baselines.series_inputs(tasks)
        if not values:
            return baselines.path_forecasts(self.model_id, tasks, {})
        horizon = max(steps.values())
        self.tfm.compile(
            timesfm.ForecastConfig(
                max_context=self.max_context,
                max_horizon=horizon,
                per_core_batch_size=self.batch_size,
                normalize_inputs=True,
                fix_quantile_crossing=True,
            )
        )
        hashes = list(values)
        point, quant = self.tfm.forecast(horizon=horizon, inputs=[values[h] for h in hashes])
        # the quantile head: index 0 the mean, 1..9 the deciles 0.1 .. 0.9
        paths = {h: np.asarray(point[k]) for k, h in enumerate(hashes)}
        qs = {
            h: {"0.1": np.asarray(quant[k][:, 1]), "0.9": np.asarray(quant[k][:, 9])}
            for k, h in enumerate(hashes)
        }
        return baselines.path_forecasts(self.model_id, tasks, paths, qs)


def load_timesfm(model: str) -> Any:
    """``timesfm.TimesFM_2p5_200M_torch.from_pretrained(model)`` (local directory or hub name). Raises
    :class:`TsfmError`."""
    try:
        import timesfm
    except ImportError as exc:
        raise TsfmError(
            f"timesfm model {model!r}: the tsfm extra is not installed (pip install -e '.[tsfm]'): {exc}"
        ) from None
    try:
        return timesfm.TimesFM_2p5_200M_torch.from_pretrained(model, torch_compile=False)
    except Exception as exc:
        raise TsfmError(
            f"timesfm model {model!r}: cannot load ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            "offline runs need a local checkpoint directory (config.json, model.safetensors)"
        ) from None


def load_forecaster(spec: str) -> ChronosForecaster | TimesFMForecaster:
    """A forecaster from ``chronos:<path or hub name>`` or ``timesfm:<path or hub name>``. Raises
    :class:`TsfmError` for another kind or a model that cannot be loaded."""
    kind, _, model = spec.partition(":")
    if kind not in KINDS or not model:
        raise TsfmError(
            f"tsfm model {spec!r}: expected chronos:<path or hub name> or timesfm:<path or hub name>"
        )
    return ChronosForecaster(model) if kind == "chronos" else TimesFMForecaster(model)
