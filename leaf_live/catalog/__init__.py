"""Catalogs: the 16 LiveMacroEval indicators (and, later, the LEAF targets)."""

from leaf_live.catalog.indicators import (
    INDICATOR_IDS,
    INDICATORS,
    PROMPT_GROUPS,
    THEMES,
    Guardrail,
    Indicator,
    UnknownIndicatorError,
    catalog_frame,
    get_indicator,
    indicators_in_group,
    indicators_in_theme,
)

__all__ = [
    "INDICATOR_IDS", "INDICATORS", "PROMPT_GROUPS", "THEMES", "Guardrail", "Indicator",
    "UnknownIndicatorError", "catalog_frame", "get_indicator", "indicators_in_group", "indicators_in_theme",
]
