"""Macro track (LiveMacroEval): catalog, sources, agents, forecasters, scoring and its table schemas.

Importing the package registers the macro tables in the one schema registry (:mod:`.schemas`)."""

from leaf_live.macro import schemas as _schemas  # noqa: F401  (registers the macro tables)
