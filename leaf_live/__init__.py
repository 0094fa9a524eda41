"""leaf_live: living, contamination-resistant forecasting benchmark (LiveMacroEval + LEAF).

Importing the package sets litellm's switch to its bundled model-cost map (it otherwise downloads the
map at import) and ``DO_NOT_TRACK`` for dbt (child processes inherit it; the dbt project also sets
``send_anonymous_usage_stats: false``), and installs the secret redaction on every Python log record of
the process (:func:`leaf_live.core.redaction.install_log_redaction`: Dagster run logs, litellm, httpx,
Celery). Dagster telemetry is off through ``dagster_home/dagster.yaml``, the instance ``leaf-live run``
records its runs in.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DO_NOT_TRACK", "1")

from leaf_live.core.redaction import install_log_redaction  # noqa: E402  (after the switches above)

install_log_redaction()
