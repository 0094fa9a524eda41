-- event_board holds exactly the rows of event_rankings with the same stored ranking numbers, and its
-- own_value (recomputed from leaf_scores in SQL) equals the one event_rankings stored from Python.
{{ config(meta={'dagster': {'ref': {'name': 'event_board'}}}) }}
select
    coalesce(b.domain, r.domain) as domain, coalesce(b.task_kind, r.task_kind) as task_kind,
    coalesce(b.horizon, r.horizon) as horizon, coalesce(b.metric, r.metric) as metric,
    coalesce(b.model_id, r.model_id) as model_id,
    case
        when b.model_id is null then 'missing on event_board'
        when r.model_id is null then 'not in event_rankings'
        when b.own_value is distinct from r.own_value
            and not abs(b.own_value - r.own_value) <= 1e-9 * greatest(1, abs(r.own_value))
            then 'own_value ' || b.own_value || ' <> stored ' || r.own_value
        else 'stored ranking numbers differ'
    end as failure
from {{ ref('event_board') }} as b
full outer join {{ source('leaf_live', 'event_rankings') }} as r
    on b.domain = r.domain and b.task_kind = r.task_kind and b.horizon = r.horizon and b.metric = r.metric
    and b.model_id = r.model_id
where b.model_id is null or r.model_id is null
    or (b.own_value is distinct from r.own_value
        and not coalesce(abs(b.own_value - r.own_value) <= 1e-9 * greatest(1, abs(r.own_value)), false))
    or b.n_tasks is distinct from r.n_tasks or b.rank is distinct from r.rank
    or b.score is distinct from r.score or b.ci90_lo is distinct from r.ci90_lo
    or b.ci90_hi is distinct from r.ci90_hi or b.p_rank1 is distinct from r.p_rank1
