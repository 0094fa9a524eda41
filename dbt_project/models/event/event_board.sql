-- The event track's board (issue 16): one row per (domain, task kind, horizon, metric, model) of the
-- coverage-robust ranking stored by the Dagster asset event_rankings (leaf_live/event/rankings.py: two-way
-- fixed effects of the per-task loss on task and model with the reference's loss as the task effect, on the
-- skill scale 1 - L/L_ref, higher is better, 0 = the reference; cluster-bootstrap 90% interval, P(rank 1) and
-- the paired interval against the reference; models under min_tasks listed with their n, unranked), plus the
-- plain metric on each model's own tasks and the own-task excess loss recomputed here from the per-task rows
-- of leaf_scores. Columns of event_rankings are taken by name, so columns added there do not change this one.
-- Legend: the score's direction is stated per row (score_higher_is_better); the metric's name, direction and
-- units are keyed by `metric` (leaf_live.event.rankings.METRIC_INFO), the scale's range by `scale`.
{{ config(materialized='table') }}
with rankings as (
    select
        domain, task_kind, horizon, metric, headline, loss, scale, cluster_by, model_id, reference_model_id,
        n_tasks, n_tasks_board, n_clusters, n_dropped, ranked_note, min_tasks, reference_stale_n, ranked,
        discarded, invalid_share, rank, score, ci90_lo,
        ci90_hi, p_rank1, diff_ci90_lo, diff_ci90_hi, p_better, effect, level, adj_value, own_value,
        max_task_share, max_task_id, max_task_flag, common_n, common_value, common_rank, common_view_ok,
        common_view_note, n_boot, boot_seed, available_at
    from {{ source('leaf_live', 'event_rankings') }}
),
boards as (
    select distinct domain, task_kind, horizon, metric, reference_model_id, ranked_note is null as rankable
    from rankings
),
case_domains as (
    -- a recorded case day's large caps are a board apart ('large_cap case <day>', event.scoring.board_scores)
    select distinct domain from rankings where domain like 'large_cap case %'
),
scores as (
    -- the per-task rows of the ranked metrics, with the board domain and the per-task loss ranked
    select
        case
            when s.domain = 'large_cap'
                and 'large_cap case ' || left(split_part(s.task_id, '/', -1), 10) in (select domain from case_domains)
                then 'large_cap case ' || left(split_part(s.task_id, '/', -1), 10)
            else s.domain
        end as domain,
        s.task_kind, s.horizon, s.metric, s.model_id, s.task_id, s.value,
        case s.metric when 'accuracy' then 1 - s.value when 'rmse' then s.value * s.value else s.value end
            as task_loss
    from {{ source('leaf_live', 'leaf_scores') }} as s
    where s.metric in (select distinct metric from rankings)
),
board_rows as (
    -- every board's rows; the pooled headline board (horizon 'all') takes every horizon of its domain
    select b.domain, b.task_kind, b.horizon, b.metric, b.reference_model_id, b.rankable,
           s.model_id, s.task_id, s.value, s.task_loss
    from boards as b
    inner join scores as s
        on s.domain = b.domain and s.task_kind = b.task_kind and s.metric = b.metric
        and (b.horizon = 'all' or s.horizon = b.horizon)
),
ref as (
    select domain, task_kind, horizon, metric, task_id, task_loss as ref_loss
    from board_rows
    where model_id = reference_model_id
),
ref_level as (
    select domain, task_kind, horizon, metric, avg(ref_loss) as ref_loss
    from ref
    group by all
),
own as (
    -- a model's own tasks: those the reference scored on a ranked board, every task of an unranked one
    select
        br.domain, br.task_kind, br.horizon, br.metric, br.model_id,
        count(*) as n_tasks_scored,
        case when br.metric = 'rmse' then sqrt(avg(br.value * br.value)) else avg(br.value) end as own_value,
        avg(br.task_loss - r.ref_loss) as excess_loss,
        avg(br.task_loss) filter (where r.task_id is not null) as own_loss,
        avg(r.ref_loss) as own_ref_loss
    from board_rows as br
    left join ref as r using (domain, task_kind, horizon, metric, task_id)
    where r.task_id is not null or not br.rankable
    group by br.domain, br.task_kind, br.horizon, br.metric, br.model_id
)
select
    r.domain,
    case when r.domain like 'large_cap case %' then 'large_cap' else r.domain end as task_domain,
    r.task_kind,
    r.horizon,
    r.metric,
    r.headline,
    r.loss,
    r.scale,
    r.scale = 'skill' as score_higher_is_better,
    r.cluster_by,
    r.model_id,
    split_part(r.model_id, '/', 1) as model_kind,
    r.reference_model_id,
    r.ranked,
    r.discarded,
    r.invalid_share,
    r.rank,
    r.score,
    r.ci90_lo,
    r.ci90_hi,
    r.p_rank1,
    r.diff_ci90_lo,
    r.diff_ci90_hi,
    r.p_better,
    r.n_tasks,
    r.n_tasks_board,
    r.n_clusters,
    r.n_dropped,
    r.min_tasks,
    r.ranked_note,
    r.reference_stale_n,
    r.effect,
    r.level,
    r.adj_value,
    l.ref_loss,
    o.excess_loss,
    cast(coalesce(o.n_tasks_scored, 0) as integer) as n_tasks_scored,
    o.own_value,
    case when o.own_ref_loss > 0 then 1 - o.own_loss / o.own_ref_loss end as own_skill,
    r.max_task_share,
    r.max_task_id,
    coalesce(r.max_task_flag, false) as max_task_flag,
    r.common_n,
    r.common_value,
    r.common_rank,
    r.common_view_ok,
    r.common_view_note,
    r.n_boot,
    r.boot_seed,
    r.available_at
from rankings as r
left join own as o using (domain, task_kind, horizon, metric, model_id)
left join ref_level as l using (domain, task_kind, horizon, metric)
