"""The LLM resource: the configured models and call-path limits (Dagster ``EnvVar``s of the
``LEAF_LIVE_LLM_*`` settings) and the ONE client and rate limiter of a run, shared by every model call of that
run. Provider API keys stay in the environment (litellm reads them at call time); nothing here stores them."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from pydantic import Field, PrivateAttr

from leaf_live.core import storage
from leaf_live.core.llm import LLMClient, LLMConfig, load_llm_config, records_from_frame
from leaf_live.core.settings import LLM_VARIABLES, Settings
from resources.secrets import register_environment_secrets

# resource field -> the setting it carries (the parser names the variable in its errors)
FIELD_VARIABLES = {name.removeprefix("LEAF_LIVE_LLM_").lower(): name for name in LLM_VARIABLES}


class LLMResource(ConfigurableResource):
    """``LEAF_LIVE_LLM_*`` as text (``None`` = the default), parsed by
    :func:`leaf_live.core.llm.load_llm_config`.
    :meth:`client` is the run's one :class:`~leaf_live.core.llm.LLMClient` (created at run start)."""

    models: str | None = Field(
        default=None, description="comma list of provider/model@design (LEAF_LIVE_LLM_MODELS)"
    )
    api_base: str | None = Field(default=None, description="base URL override (LEAF_LIVE_LLM_API_BASE)")
    rpm: str | None = Field(default=None, description="requests per minute per model (LEAF_LIVE_LLM_RPM, 60)")
    concurrency: str | None = Field(
        default=None, description="calls in flight (LEAF_LIVE_LLM_CONCURRENCY, 8)"
    )
    timeout_s: str | None = Field(
        default=None, description="per-attempt timeout, s (LEAF_LIVE_LLM_TIMEOUT_S, 300)"
    )
    max_attempts: str | None = Field(
        default=None, description="attempts per call (LEAF_LIVE_LLM_MAX_ATTEMPTS, 5)"
    )
    max_tokens: str | None = Field(
        default=None, description="output tokens per call (LEAF_LIVE_LLM_MAX_TOKENS, 8192)"
    )
    web_search: str | None = Field(
        default=None, description="1/0: provider web search (LEAF_LIVE_LLM_WEB_SEARCH, 1)"
    )

    replay_db: str = Field(
        default="",
        description=(
            "DuckDB file whose stored ok llm_calls answer identical requests again instead of a new call"
            " (a resumed costed run: leaf-live run --event-models); empty = every call is made"
        ),
    )
    budget_usd: str | None = Field(
        default=None,
        description="USD this run's new calls may spend (litellm's price map); None = no limit",
    )

    _client: Any = PrivateAttr(default=None)

    def config(self) -> LLMConfig:
        """The parsed configuration; raises :class:`~leaf_live.core.settings.SettingsError` naming the
        variable."""
        values = {var: getattr(self, f) for f, var in FIELD_VARIABLES.items() if getattr(self, f) is not None}
        return load_llm_config(values)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        register_environment_secrets()  # the provider keys litellm reads are hidden in records and logs
        self._client = None

    def client(self) -> LLMClient:
        """The run's call path (one per resource instance: every model call of the run shares its RPM limiters
        and concurrency bound)."""
        if self._client is None:
            register_environment_secrets()
            replay = []
            if self.replay_db:
                with storage.open_db(self.replay_db) as con:
                    replay = records_from_frame(
                        storage.read_table(con, "llm_calls", "status = 'ok' AND response_json IS NOT NULL")
                    )
            budget = float(self.budget_usd) if self.budget_usd not in (None, "") else None
            self._client = LLMClient(self.config(), replay=replay, budget_usd=budget)
        return self._client


def llm_resource(settings: Settings) -> LLMResource:
    """The resource with an ``EnvVar`` for every ``LEAF_LIVE_LLM_*`` variable that is set (the others take
    their defaults), so the values are read by Dagster at run time and shown as environment-sourced."""
    return LLMResource(**{f: EnvVar(var) for f, var in FIELD_VARIABLES.items() if var in settings.llm})
