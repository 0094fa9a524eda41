"""leaf_live: living, contamination-resistant forecasting benchmark (LiveMacroEval + LEAF).

Importing the package sets litellm's switch to its bundled model-cost map (it otherwise downloads the
map at import) and ``DO_NOT_TRACK`` for dbt (child processes inherit it; the dbt project also sets
``send_anonymous_usage_stats: false``), and installs the secret redaction on every Python log record of
the process (:func:`leaf_live.core.redaction.install_log_redaction`: Dagster run logs, litellm, httpx,
Celery). Dagster telemetry is off through ``dagster_home/dagster.yaml``, the instance ``leaf-live run``
records its runs in.

It also sets Dagster's ``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``: a single-run backfill of the
release months then plans each asset with one event naming the partition range, instead of one event per month
(about 1,200 planning events, a minute of SQLite writes, before a main run starts). The materializations stay
one per month with its own row count. Trade-off (Dagster's): when such a run fails, its months are not marked
failed in the UI (they stay missing); the run itself is. And it sets ``DAGSTER_EVENT_BATCH_SIZE``: a step's
per-month materializations reach the event log as one batch, which the project's SQLite event log
(:mod:`resources.event_log`) writes in one transaction.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS", "1")
os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", "1000")  # > the 197 release months of one step

from leaf_live.core.redaction import install_log_redaction  # noqa: E402  (after the switches above)

install_log_redaction()
