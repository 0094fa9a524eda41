"""Importing leaf_live has no effects (issue 19 item 3): no environment variable changes and no log filter
is installed until an entry point calls :func:`leaf_live.process.prepare_process`."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def _run(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_LOCAL_MODEL_COST_MAP", "DO_NOT_TRACK")}
    env = {k: v for k, v in env.items() if not k.startswith("DAGSTER_E")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_package_and_its_modules_changes_no_environment_variable_or_log_hook():
    got = _run(
        "import json, logging, os\n"
        # the libraries first: polars sets its allocator's _RJEM_MALLOC_CONF at import, which is not ours
        "import dagster, duckdb, numpy, polars\n"
        "before = dict(os.environ); factory = logging.getLogRecordFactory()\n"
        "import leaf_live, leaf_live.cli, leaf_live.macro, leaf_live.event, leaf_live.core.llm\n"
        "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
        "print(json.dumps({'changed': changed, 'factory': logging.getLogRecordFactory() is factory}))\n"
    )
    assert got == {"changed": [], "factory": True}


def test_an_entry_point_sets_exactly_the_documented_defaults_and_keeps_a_users_value():
    got = _run(
        "import json, os\n"
        "os.environ['DAGSTER_EVENT_BATCH_SIZE'] = '7'\n"
        "before = dict(os.environ)\n"
        "from leaf_live.process import ENV_DEFAULTS, prepare_process\n"
        "prepare_process(); prepare_process()\n"
        "changed = {k: os.environ[k] for k in os.environ if before.get(k) != os.environ[k]}\n"
        "print(json.dumps({'changed': changed, 'batch': os.environ['DAGSTER_EVENT_BATCH_SIZE']}))\n"
    )
    assert got == {
        "changed": {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "DO_NOT_TRACK": "1",
            "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "1",
        },
        "batch": "7",  # the user's value wins
    }
