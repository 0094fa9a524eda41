-- First releases with the indicator's theme and unit attached (analyst convenience view).
select
    r.indicator_id,
    c.theme,
    c.unit,
    r.reference_period,
    r.release_at,
    r.actual,
    r.consensus,
    r.surprise,
    r.consensus_source,
    r.available_at
from {{ source('leaf_live', 'releases') }} as r
join {{ source('leaf_live', 'indicator_catalog') }} as c using (indicator_id)
