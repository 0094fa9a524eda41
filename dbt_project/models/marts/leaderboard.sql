-- The LiveMacro leaderboards: one row per model x evaluation mode (leaderboard = livemacro_scores.partition_key:
-- 'backtest' | 'live') x fit x horizon x scope x target. target 'return' = LiveMacro Score (Eq. 8), 'shock' =
-- consensus-relative score (S.1). score / lmd / intervals are on the model's own events (n_events_own of
-- n_events; its other releases in those events take the consensus, S_hat = 0); rank is its rank on the board's
-- common event set (n_events_common events every compared model nowcasts itself; NULL = not compared on that
-- board). Intervals: boot_* = beta only, combined_* = beta draws x event resamples. The consensus scores 0.
select
    s.partition_key as leaderboard,
    s.fit_name,
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
    s.combined_ci90_lo,
    s.combined_ci90_hi,
    s.p_le_zero,
    s.lmd,
    s.kappa,
    s.phi,
    s.n_events,
    s.n_events_own,
    s.n_releases,
    s.n_events_common,
    s.common_score,
    s.common_ci90_lo,
    s.common_ci90_hi,
    s.window_start,
    s.window_end,
    s.common_rank as rank
from {{ source('leaf_live', 'livemacro_scores') }} as s
left join {{ ref('stg_models') }} as m using (model_id)
