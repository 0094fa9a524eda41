"""LEAF's LLM agents (pure Python, no Dagster), all through the one call path (:mod:`leaf_live.core.llm`):

* :mod:`.prompts` — retrieval, fact-check, forecast and predictability prompts (App. C.3 in spirit);
* :mod:`.parsing` — strict parsing; every failure becomes an invalid row with its reason;
* :mod:`.retrieval` — multi-round time-restricted retrieval (web search or the offline document store);
* :mod:`.factcheck` — two independent checkers and the keep rule;
* :mod:`.forecasters` — LLM forecasters through the forecaster contract, with and without events.
"""
