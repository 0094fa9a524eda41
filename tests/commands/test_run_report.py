"""One failure report for every command's in-process run (leaf_live.commands.run_report): failed checks with
their metadata, failed steps with the asset's own exception, nothing for a clean run."""

from __future__ import annotations

from dagster import AssetCheckResult, asset, asset_check, materialize

from leaf_live.commands.run_report import report_failures


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
