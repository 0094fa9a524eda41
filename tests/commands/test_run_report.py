"""One failure report for every command's in-process run (leaf_live.commands.run_report): failed checks with
their metadata, failed steps with the asset's own exception, nothing for a clean run."""

from __future__ import annotations

import io

from dagster import (
    AssetCheckResult,
    DagsterInstance,
    Definitions,
    asset,
    asset_check,
    define_asset_job,
    materialize,
)

from leaf_live.commands.run_report import execute_run, report_failures
from leaf_live.run_progress import RunProgress


@asset
def good() -> int:
    return 1


@asset_check(asset=good)
def good_is_two() -> AssetCheckResult:
    return AssetCheckResult(passed=False, metadata={"violations": 3})


@asset
def broken() -> int:
    raise ValueError("month 2026-13: not a release month")


def test_clean_run_reports_nothing(capsys):
    clean = materialize([good])
    capsys.readouterr()  # the run's own log lines
    assert report_failures(clean) is False
    assert capsys.readouterr().err == ""


def test_failed_check_and_step_are_named_once(capsys):
    checked = materialize([good, good_is_two], raise_on_error=False)
    capsys.readouterr()
    assert report_failures(checked) is False  # a non-blocking failed check: the run itself succeeded
    assert capsys.readouterr().err == "asset check FAILED: good:good_is_two {'violations': 3}\n"
    failed = materialize([broken], raise_on_error=False)
    capsys.readouterr()
    assert report_failures(failed) is True
    assert capsys.readouterr().err == "broken: ValueError: month 2026-13: not a release month\n"


@asset
def chatty() -> int:
    print("dbt-style echo on stdout")
    return 2


@asset
def after_chatty(chatty: int) -> int:
    return chatty + 1


@asset_check(asset=after_chatty)
def after_is_three(after_chatty: int) -> AssetCheckResult:
    return AssetCheckResult(passed=after_chatty == 3)


def test_execute_run_times_each_step_and_hides_stdout(capsys):
    """The one execution path: each asset step is a stage of the clock, the check steps add up into one,
    stdout is hidden, a failed step is returned (not raised)."""
    defs = Definitions(
        assets=[chatty, after_chatty], asset_checks=[after_is_three], jobs=[define_asset_job("all")]
    )
    job = defs.resolve_job_def("all")
    instance = DagsterInstance.ephemeral()
    clock = RunProgress(stream=io.StringIO(), live=False)
    result = execute_run(job, instance=instance, clock=clock, run_config={})
    assert result.success
    assert [s.name for s in clock.stages] == ["plan run", "chatty", "after_chatty", "asset checks"]
    assert clock.total_steps == 3 and clock.stages[-1].steps == 1  # two asset steps + one check step
    assert "dbt-style echo" not in capsys.readouterr().out
    assert result.get_asset_check_evaluations()[0].passed
    broken_job = Definitions(assets=[broken], jobs=[define_asset_job("b")]).resolve_job_def("b")
    failed = execute_run(broken_job, instance=instance, hide_stdout=True)
    assert not failed.success and len(instance.get_runs()) == 2
