"""leaf_live: living, contamination-resistant forecasting benchmark (LiveMacroEval + LEAF).

Importing the package sets the two switches that otherwise make libraries try the network at start:
litellm's remote model-cost map and Dagster telemetry. Users may override them in their environment.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
