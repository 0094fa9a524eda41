"""The ``leaf-live`` subcommands beyond ``run`` / ``report`` / ``tables``, one module each (wiring only: they
read the store, the settings and the Dagster instance and call the science; dagster is imported inside the
functions that need it). ``leaf_live.cli`` registers them."""
