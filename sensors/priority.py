"""Run priorities of the living service's jobs (Dagster's ``dagster/priority`` run tag): the run queue
(``run_queue`` / ``concurrency.runs`` in ``dagster.yaml``) starts the queued run with the highest priority
first, so a release landing waiting behind a backlog of event catch-up runs starts next instead of last.

Order, highest first: a landed release (its scores are what the benchmark publishes, minutes after the
release); the hourly LLM nowcasts (a nowcast is only worth its hour) and the stores/rescores of accepted
submissions; the month's windows ahead of its releases; the daily LLM forecasts; the daily source days,
questions, retrieval and recorded imports (catch-up work, default 0); the analyses (read-only summaries).
"""

from __future__ import annotations

PRIORITY_TAG = "dagster/priority"

PRIORITIES: dict[str, int] = {
    "macro_release_landed": 10,
    "llm_nowcasts_hourly": 5,
    "leaf_live_store_submission": 5,
    "leaf_live_macro_scores": 5,
    "leaf_live_event_rescore": 5,
    "macro_windows_ahead": 3,
    "leaf_live_event_llm_forecasts": 1,
    "leaf_live_event_scores": 1,
    "leaf_live_event_days": 0,
    "leaf_live_event_questions": 0,
    "leaf_live_event_recorded": 0,
    "leaf_live_event_retrieval": 0,
    "leaf_live_event_question_retrieval": 0,
    "leaf_live_event_analyses": -1,
}


def priority_tags(job_name: str) -> dict[str, str]:
    """The ``dagster/priority`` tag of ``job_name`` (:data:`PRIORITIES`). Raises ``KeyError`` naming a job
    without a stated priority, so a new job cannot silently join the queue at the default."""
    if job_name not in PRIORITIES:
        raise KeyError(f"job {job_name!r}: no run priority in sensors/priority.py PRIORITIES")
    return {PRIORITY_TAG: str(PRIORITIES[job_name])}
