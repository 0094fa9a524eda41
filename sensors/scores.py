"""Jobs that rescore every model of a track from the stored forecasts (wiring only): what ``leaf-live submit``
runs after storing an external submission, and what ``leaf-live rescore`` / the Dagster UI run after forecasts
change outside a full run. The scoring assets read whatever models the track's forecast table holds."""

from dagster import AssetSelection, define_asset_job

from assets.macro_scoring import livebetting, macro_scores

macro_scores_job = define_asset_job(
    "leaf_live_macro_scores", selection=AssetSelection.assets(macro_scores, livebetting),
    description="Macro track: the LiveMacro Score family, decompositions, relative errors and LiveBetting of every "
    "model in nowcasts, from the stored releases, events, fits and prices (with their blocking checks).")

# track -> the job that rescores it
SCORE_JOBS = {"macro": macro_scores_job}
