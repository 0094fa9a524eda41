"""leaf_live: living, contamination-resistant forecasting benchmark (LiveMacroEval + LEAF).

Importing the package (or any module of it) has no effects: the environment defaults and the log
redaction a leaf_live process needs are set by its entry point (:func:`leaf_live.process.prepare_process`).
"""
