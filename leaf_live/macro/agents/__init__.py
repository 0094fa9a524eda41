"""leaf_live.macro.agents: the LLM layer (pure Python, no Dagster).

* :mod:`~leaf_live.core.llm` — the one litellm call path (retries, RPM limit, fan-out, usage, cost,
  call records, ``llm_calls`` frame) and configuration parsed from the ``LEAF_LIVE_LLM_*`` settings;
* :mod:`~leaf_live.macro.agents.prompts` — LiveMacroEval App. D prompts (and team roles, App. S.1);
* :mod:`~leaf_live.macro.agents.parsing` — strict parsing into catalog units and guardrails -> ``nowcasts``
rows;
* :mod:`~leaf_live.macro.agents.nowcast_agent` — ``single`` and ``team`` designs, :class:`LLMNowcaster`
  (the forecaster contract), :func:`run_nowcast_hour`.
"""

from leaf_live.core.llm import (
    NO_MODELS_MESSAGE,
    CallRecord,
    LLMClient,
    LLMConfig,
    ModelSpec,
    RateLimiter,
    RetryPolicy,
    llm_calls_frame,
    load_llm_config,
    no_models_message,
)
from leaf_live.macro.agents.nowcast_agent import (
    GroupTarget,
    LLMNowcaster,
    hour_targets,
    run_nowcast_hour,
    run_nowcast_hour_sync,
    window_targets,
)
from leaf_live.macro.agents.parsing import parse_nowcast_answer

__all__ = [
    "NO_MODELS_MESSAGE",
    "CallRecord",
    "GroupTarget",
    "LLMClient",
    "LLMConfig",
    "LLMNowcaster",
    "ModelSpec",
    "RateLimiter",
    "RetryPolicy",
    "hour_targets",
    "llm_calls_frame",
    "load_llm_config",
    "no_models_message",
    "parse_nowcast_answer",
    "run_nowcast_hour",
    "run_nowcast_hour_sync",
    "window_targets",
]
