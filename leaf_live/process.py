"""Process setup for the entry points that start a leaf_live process: the ``leaf-live`` CLI
(:func:`leaf_live.cli.main`), the Dagster code location (:mod:`leaf_live.definitions`, loaded by
``dagster dev``, the code server and the Celery workers) and the test suite (``tests/conftest.py``).
Importing ``leaf_live`` or any of its modules changes nothing; :func:`prepare_process` does, once.

It sets, only where unset (a user's own value wins):

- ``LITELLM_LOCAL_MODEL_COST_MAP=True``: litellm's bundled model-cost map (it otherwise downloads the map
  at import); :mod:`leaf_live.core.llm` sets it too right before its lazy ``import litellm``.
- ``DO_NOT_TRACK=1`` for dbt (child processes inherit it; the dbt project also sets
  ``send_anonymous_usage_stats: false``).
- ``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS=1``: a single-run backfill of the release months plans
  each asset with one event naming the partition range, instead of one event per month (about 1,200
  planning events, a minute of SQLite writes, before a main run starts). The materializations stay one per
  month with its own row count. Trade-off (Dagster's): when such a run fails, its months are not marked
  failed in the UI (they stay missing); the run itself is.
- ``DAGSTER_EVENT_BATCH_SIZE=1000``: a step's per-month materializations (197 release months) reach the
  event log as one batch, which the project's SQLite event log (:mod:`resources.event_log`) writes in one
  transaction.

and installs the secret redaction on every Python log record of the process
(:func:`leaf_live.core.redaction.install_log_redaction`: Dagster run logs, litellm, httpx, Celery).
Dagster telemetry is off through ``dagster_home/dagster.yaml``.
"""

from __future__ import annotations

import os

from leaf_live.core.redaction import install_log_redaction

ENV_DEFAULTS: dict[str, str] = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DO_NOT_TRACK": "1",
    "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "1",
    "DAGSTER_EVENT_BATCH_SIZE": "1000",  # > the 197 release months of one step
}


def prepare_process() -> None:
    """Set :data:`ENV_DEFAULTS` where unset and install the log redaction; idempotent. Call it first in an
    entry point, before Dagster creates an instance or litellm is imported."""
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    install_log_redaction()


__all__ = ["ENV_DEFAULTS", "prepare_process"]
