"""leaf_live: living, contamination-resistant forecasting benchmark (LiveMacroEval + LEAF).

Importing the package sets litellm's switch to its bundled model-cost map (it otherwise downloads the
map at import). Dagster telemetry is off through ``dagster_home/dagster.yaml`` (use it as DAGSTER_HOME)
and the CLI's ephemeral instance.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
