"""Reporting a finished in-process Dagster run the same way in every command (``leaf-live run``'s macro and
event jobs, ``leaf-live rescore``): each failed asset check with its metadata, then each failed step with the
asset's own exception (Dagster wraps it), all on stderr."""

from __future__ import annotations

import sys

__all__ = ["report_failures"]


def report_failures(result) -> bool:
    """Print ``result``'s failed asset checks (``asset check FAILED: <asset>:<check> {metadata}``) and, when
    the run failed, each failed step's innermost error (``<step key>: <message>``; a blocking check's own
    failure is not repeated). ``result`` is an ``ExecuteInProcessResult``. True if the run failed."""
    for e in result.get_asset_check_evaluations():
        if not e.passed:
            meta = {k: getattr(v, "value", v) for k, v in e.metadata.items()}
            print(
                f"asset check FAILED: {e.asset_key.to_user_string()}:{e.check_name} {meta}", file=sys.stderr
            )
    if result.success:
        return False
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data.error:
            err = ev.step_failure_data.error
            if err.cls_name == "DagsterAssetCheckFailedError":
                continue  # a blocking check, named above
            while err.cause is not None:  # Dagster wraps the asset's own exception
                err = err.cause
            print(f"{ev.step_key}: {err.message.strip()}", file=sys.stderr)
    return True
