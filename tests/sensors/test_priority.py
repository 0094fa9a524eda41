"""Run priorities (issue 20 item 3: landings get priority over catch-up runs): every job of the code location
carries a ``dagster/priority`` tag, and a landed release outranks every catch-up job."""

from __future__ import annotations

import pytest

from leaf_live.definitions import build_definitions
from resources import default_resources
from sensors.priority import PRIORITIES, PRIORITY_TAG, priority_tags

DEFS = build_definitions(default_resources(db=":memory:"))


def test_every_job_of_the_code_location_states_its_priority():
    jobs = {j.name: j for j in DEFS.get_repository_def().get_all_jobs() if not j.name.startswith("__")}
    living = {name for name in jobs if name in PRIORITIES}
    assert living == set(PRIORITIES)  # no stated priority for a job that does not exist
    for name in living:
        assert jobs[name].tags[PRIORITY_TAG] == str(PRIORITIES[name]), name


def test_a_landing_outranks_every_catch_up_run_and_an_unknown_job_is_refused():
    landing = PRIORITIES["macro_release_landed"]
    assert landing == max(PRIORITIES.values())
    assert all(p < landing for job, p in PRIORITIES.items() if job != "macro_release_landed")
    assert PRIORITIES["leaf_live_event_days"] < PRIORITIES["llm_nowcasts_hourly"] < landing
    with pytest.raises(KeyError, match="job 'new_job': no run priority"):
        priority_tags("new_job")
