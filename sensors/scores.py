"""Jobs that rescore every model of a track from the stored forecasts (wiring only): what ``leaf-live submit``
runs after storing an external submission, and what ``leaf-live rescore`` / the Dagster UI run after forecasts
change outside a full run. The scoring assets read whatever models the track's forecast table holds; each job
also refreshes what is downstream of the scores (analyses, dbt marts, figures and the site), so no board is
left stale.
"""

from dagster import AssetSelection, define_asset_job

from assets.event_scoring import leaf_scores
from assets.macro_scoring import livebetting, macro_scores
from sensors.priority import priority_tags

macro_scores_job = define_asset_job(
    "leaf_live_macro_scores",
    tags=priority_tags("leaf_live_macro_scores"),
    selection=AssetSelection.assets(macro_scores, livebetting).downstream(),
    description=(
        "Macro track: the LiveMacro Score family, decompositions, relative errors and LiveBetting of every"
        " model in nowcasts, from the stored releases, events, fits and prices (with their blocking checks),"
        " then what reads them: analyses, dbt marts, figures and the site."
    ),
)
event_scores_rescore_job = define_asset_job(
    "leaf_live_event_rescore",
    tags=priority_tags("leaf_live_event_rescore"),
    selection=AssetSelection.assets(leaf_scores).downstream(),
    description=(
        "Event track: the scores of every model in leaf_forecasts from the stored tasks and outcomes (after"
        " the blocking checks on the forecasts' bundles), then what reads them: the stored boards"
        " (event_rankings, the dbt model event_board), analyses, figures and the site."
    ),
)

# track -> the job that rescores it
SCORE_JOBS = {"macro": macro_scores_job, "event": event_scores_rescore_job}
