-- One row per model in the nowcasts table (every forecaster is a model, DESIGN.md principle 5): its kind
-- (the model_id prefix: openai, baseline, consensus, fed, ...), its family from the DESIGN.md model_id
-- conventions ('unknown' fails the accepted_values test), the assets that wrote it and its coverage.
select
    model_id,
    split_part(model_id, '/', 1) as model_kind,
    case
        when split_part(model_id, '/', 1) in ('baseline', 'consensus', 'fed', 'market', 'external')
            then split_part(model_id, '/', 1)
        when model_id similar to '[^/@]+/[^@]+@[^@]+' then 'llm'
        else 'unknown'
    end as model_family,
    string_agg(distinct producer, ', ' order by producer) as producers,
    count(*) as n_nowcasts,
    count(*) filter (where valid and not after_release) as n_scorable,
    count(distinct indicator_id) filter (where valid) as n_indicators,
    min(issued_at) as first_issued_at,
    max(issued_at) as last_issued_at
from {{ source('leaf_live', 'nowcasts') }}
group by model_id
