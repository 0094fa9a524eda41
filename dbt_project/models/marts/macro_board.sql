-- The macro track's board (issue 16): one row per model x evaluation mode (leaderboard) x fit x horizon x
-- scope x target x event window (full | ex_covid). Headline = the coverage-robust ranking of
-- livemacro_rankings (two-way fixed effects of per-event loss, the consensus's loss as the event effect,
-- mapped onto the LiveMacro Score scale; higher is better, range [-1, 1], the consensus = 0), with its 90%
-- bootstrap interval, P(rank = 1) and the paired interval against the consensus; models below min_events
-- are listed with their n and no rank. own_score is each model's LiveMacro Score on its own events,
-- recomputed here from livemacro_event_losses (it equals livemacro_scores.score in the full window).
-- The greedy common event set is a second view: common_rank is given only when the set covers every ranked
-- model's themes and at least half of each ranked model's events (common_view_ok); common_view_note says why
-- not otherwise. max_event_share: the largest single-event share of the model's loss (flagged above 0.5).
-- own_ci90_* is the combined (beta + events) interval of own_score, own_beta_ci90_* the beta-only one (Eq. 12).
-- forecast_provenance labels the auto-ARIMA as what it is against App. I (score_decompositions rows
-- decomposition = 'arima_provenance'): its scored releases on an older vintage, and its horizons.
{{ config(materialized='table') }}
with losses as (
    select * from {{ source('leaf_live', 'livemacro_event_losses') }}
),
windowed as (
    select *, 'full' as event_window from losses
    union all
    select *, 'ex_covid' as event_window from losses where not covid
),
own as (
    select
        partition_key, fit_id, horizon, scope, target, event_window, model_id,
        count(*) as n_events_own,
        (sum(weight * loss_consensus) - sum(weight * loss))
            / nullif(sum(weight * loss_consensus) + sum(weight * loss), 0) as own_score
    from windowed
    group by all
),
scores as (
    select * from {{ source('leaf_live', 'livemacro_scores') }}
),
compared as (
    select partition_key, fit_id, horizon, scope, target, model_id, n_models_common, n_events_common
    from scores
    where n_events_common is not null
),
common_events as (
    -- the greedy common set: events on which every compared model of the board has its own loss row
    select l.partition_key, l.fit_id, l.horizon, l.scope, l.target, l.event_at
    from losses as l
    inner join compared as c using (partition_key, fit_id, horizon, scope, target, model_id)
    group by all
    having count(*) = max(c.n_models_common)
),
ranked as (
    select *
    from {{ source('leaf_live', 'livemacro_rankings') }}
    where estimator = 'reference' and event_window = 'full' and ranked
),
model_themes as (
    -- on an overall board: the themes a ranked model has own events in
    select distinct r.partition_key, r.fit_id, r.horizon, r.target, r.model_id, l.scope as theme
    from ranked as r
    inner join losses as l
        on l.partition_key = r.partition_key and l.fit_id = r.fit_id and l.horizon = r.horizon
        and l.target = r.target and l.model_id = r.model_id and l.scope <> 'overall'
    where r.scope = 'overall'
),
common_themes as (
    select distinct ce.partition_key, ce.fit_id, ce.horizon, ce.target, l.scope as theme
    from common_events as ce
    inner join losses as l
        on l.partition_key = ce.partition_key and l.fit_id = ce.fit_id and l.horizon = ce.horizon
        and l.target = ce.target and l.event_at = ce.event_at and l.scope <> 'overall'
    where ce.scope = 'overall'
),
failures as (
    select
        r.partition_key, r.fit_id, r.horizon, r.scope, r.target, r.model_id,
        case
            when c.model_id is null then r.model_id || ' is ranked but not on the common set'
            when c.n_events_common * 2 < r.n_events then
                'the common set holds ' || c.n_events_common || ' of ' || r.model_id || '''s '
                || r.n_events || ' events (under half)'
        end as reason
    from ranked as r
    left join compared as c using (partition_key, fit_id, horizon, scope, target, model_id)
    union all
    select
        mt.partition_key, mt.fit_id, mt.horizon, 'overall' as scope, mt.target, mt.model_id,
        'the common set has no ' || mt.theme || ' event (' || mt.model_id || ' has some)' as reason
    from model_themes as mt
    left join common_themes as ct using (partition_key, fit_id, horizon, target, theme)
    where ct.theme is null
),
provenance as (
    select
        partition_key, model_id,
        max(value) filter (where metric = 'n_releases') as n_rel,
        max(value) filter (where metric = 'n_older_vintage') as n_old,
        max(value) filter (where metric = 'n_h_4plus') as n_h4,
        max(value) filter (where metric = 'min_h') as min_h,
        max(value) filter (where metric = 'max_h') as max_h
    from {{ source('leaf_live', 'score_decompositions') }}
    where decomposition = 'arima_provenance'
    group by all
),
board_view as (
    select
        partition_key, fit_id, horizon, scope, target,
        count(reason) = 0 as common_view_ok,
        string_agg(reason, '; ' order by model_id, reason) as common_view_note
    from failures
    group by all
)
select
    r.partition_key as leaderboard,
    r.fit_name,
    r.fit_id,
    r.horizon,
    r.scope,
    r.target,
    r.event_window,
    r.model_id,
    split_part(r.model_id, '/', 1) as model_kind,
    r.reference_model_id,
    r.rank,
    r.ranked,
    r.score,
    r.ci90_lo,
    r.ci90_hi,
    r.p_rank1,
    r.diff_ci90_lo,
    r.diff_ci90_hi,
    r.p_better,
    r.n_events,
    r.n_events_board,
    r.min_events,
    o.own_score,
    case when r.event_window = 'full' then s.combined_ci90_lo end as own_ci90_lo,
    case when r.event_window = 'full' then s.combined_ci90_hi end as own_ci90_hi,
    case when r.event_window = 'full' then s.boot_ci90_lo end as own_beta_ci90_lo,
    case when r.event_window = 'full' then s.boot_ci90_hi end as own_beta_ci90_hi,
    case when r.event_window = 'full' then s.lmd end as own_lmd,
    r.max_event_share,
    coalesce(r.max_event_share > 0.5, false) as max_event_flag,
    r.max_event_at,
    case when r.event_window = 'full' then coalesce(v.common_view_ok, false) else false end as common_view_ok,
    case
        when r.event_window <> 'full' then 'common-set view: full window only'
        when v.partition_key is null then 'no ranked model on this board'
        else v.common_view_note
    end as common_view_note,
    case when r.event_window = 'full' then s.n_events_common end as n_events_common,
    case when r.event_window = 'full' then s.common_score end as common_score,
    case when r.event_window = 'full' and v.common_view_ok then s.common_rank end as common_rank,
    case when p.n_rel is not null then
        cast(p.n_old as integer) || '/' || cast(p.n_rel as integer) || ' older vintage, h '
        || cast(p.min_h as integer) || '-' || cast(p.max_h as integer) || ' (' || cast(p.n_h4 as integer)
        || ' at 4+)'
    end as forecast_provenance,
    r.n_boot,
    r.available_at
from {{ source('leaf_live', 'livemacro_rankings') }} as r
left join own as o using (partition_key, fit_id, horizon, scope, target, event_window, model_id)
left join scores as s using (partition_key, fit_id, horizon, scope, target, model_id)
left join board_view as v using (partition_key, fit_id, horizon, scope, target)
left join provenance as p using (partition_key, model_id)
where r.estimator = 'reference'
