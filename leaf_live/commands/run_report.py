"""Running a job of the definitions in-process and reporting it the same way in every command (``leaf-live
run``'s macro and event jobs, ``leaf-live rescore``, ``leaf-live event-models``): :func:`execute_run` is the
one place a command executes a Dagster job (optionally timing each step on the run's stage clock);
:func:`report_failures` prints each failed asset check with its metadata, then each failed step with the
asset's own exception (Dagster wraps it), all on stderr."""

from __future__ import annotations

import contextlib
import io
import sys
import uuid

__all__ = ["execute_run", "report_failures"]


def execute_run(job, *, instance, clock=None, hide_stdout: bool = False, **kwargs):
    """Execute the Dagster job ``job`` in this process on ``instance`` (``DagsterInstance``), never raising
    for a failed step or blocking check: ``kwargs`` (``run_config``, ``tags``, ``partition_key``,
    ``asset_selection``) go to Dagster's in-process execution unchanged. With ``clock``
    (:class:`leaf_live.run_progress.RunProgress`) the run's progress shows on stderr and every step is timed
    on it: 'plan run' until the run starts, each asset step by name, asset-check steps together. stdout is
    hidden during the run with ``clock`` or ``hide_stdout`` (dagster-dbt echoes dbt's log there; it stays in
    the run's compute logs). Returns the ``ExecuteInProcessResult``; raises what Dagster raises for an
    invalid run config or selection."""
    from leaf_live.core import storage

    run_id = str(uuid.uuid4())  # known before the run starts, so the listener can follow it
    storage.record_writer_run(run_id)  # a reader told a run is in progress is told which
    with contextlib.ExitStack() as stack:
        if clock is not None:
            instance.add_event_listener(run_id, _progress_listener(clock))
            stack.enter_context(clock)
        if clock is not None or hide_stdout:
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        if clock is not None:
            clock.stage_started("plan run")
        return job.execute_in_process(run_id=run_id, instance=instance, raise_on_error=False, **kwargs)


def _progress_listener(clock):
    """An instance event listener that times the run's steps on ``clock`` (see :func:`execute_run`)."""
    from dagster import DagsterEventType

    materialized: set[str] = set()
    planned: set[str] = set()

    def on_event(entry) -> None:
        ev = entry.dagster_event
        if ev is None:
            return
        kind, step = ev.event_type, ev.step_key
        if kind in (
            DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
            DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED,
        ):
            planned.add(step)
        elif kind == DagsterEventType.RUN_START:
            clock.total_steps = len(planned)  # the steps this run executes
            clock.stage_finished("plan run")
        elif kind == DagsterEventType.STEP_START:
            clock.stage_started(step)
        elif kind == DagsterEventType.ASSET_MATERIALIZATION:
            materialized.add(step)
        elif kind in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            clock.stage_finished(
                step, failed=kind == DagsterEventType.STEP_FAILURE, check=step not in materialized, step=True
            )

    return on_event


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
