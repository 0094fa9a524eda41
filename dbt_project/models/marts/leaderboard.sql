-- The LiveMacro leaderboards: one row per model x evaluation mode (leaderboard = livemacro_scores.partition_key:
-- 'backtest' | 'live') x fit x horizon x scope x target, with the fit's name, the model's kind and its rank
-- (1 = best score) among the models of the same board. target 'return' = LiveMacro Score (Eq. 8), 'shock' =
-- consensus-relative score (S.1). n_events_own = events where the model has its own nowcast (its other
-- releases take the consensus, S_hat = 0); the consensus scores 0 by construction.
with fits as (
    select fit_name, fit_id
    from {{ source('leaf_live', 'market_beta_fits') }}
    qualify row_number() over (partition by fit_name order by confirmed_at desc) = 1
)
select
    s.partition_key as leaderboard,
    f.fit_name,
    s.fit_id,
    s.model_id,
    m.model_kind,
    s.horizon,
    s.scope,
    s.target,
    s.score,
    s.boot_ci90_lo,
    s.boot_ci90_hi,
    s.boot_ci95_lo,
    s.boot_ci95_hi,
    s.p_le_zero,
    s.lmd,
    s.kappa,
    s.phi,
    s.n_events,
    s.n_events_own,
    s.n_releases,
    s.window_start,
    s.window_end,
    rank() over (
        partition by s.partition_key, s.fit_id, s.horizon, s.scope, s.target
        order by s.score desc nulls last
    ) as rank
from {{ source('leaf_live', 'livemacro_scores') }} as s
left join {{ ref('stg_models') }} as m using (model_id)
left join fits as f on f.fit_id = s.fit_id
