"""Event track (LEAF): catalog (targets), sources, forecast tasks at cutoffs, baselines and scoring, and
its table schemas. Pure science: no Dagster import, no environment reads.

Importing the package registers the event tables in the one schema registry (:mod:`.schemas`)."""

from leaf_live.event import schemas as _schemas  # noqa: F401  (registers the event tables)
