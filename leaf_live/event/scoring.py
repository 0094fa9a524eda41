"""Event-track metrics (LEAF §4.1) and leaderboard statistics.

Per task (:func:`score_forecasts`, rows of ``leaf_scores``):

* trend (3/5 class): ``accuracy`` = 1 when the predicted class equals the realised App. C.1 label.
* market series (daily closes): ``mape`` = 100/n sum |y - yhat| / |y| (%), ``rmse`` = sqrt(1/n sum (y -
yhat)^2),
  ``dlv`` = 100/n sum |yhat - x_T| / |x_T| (% distance to the last value, §4.3 / Table 7).
* weather / load series: ``mae_z`` and ``mse_z`` on z-scored values, the mean and standard deviation (ddof 0)
  taken from the task's look-back only (§4.1), applied to truth and forecast alike.
* interval forecasts (0.025/0.1/0.9/0.975 quantiles + the point as median): ``qloss`` = mean pinball loss
  over the five levels, ``crps`` = CRPS of the normal with the point as mean and sigma from the 80% interval
  (closed form, Gneiting & Raftery 2007), ``cover80`` / ``cover95`` = share of steps inside; all on the same
  scale as the point metric (z units for weather / load, % of x_T for markets).
* event: ``brier`` = (p - o)^2 per cutoff (the paper's average over the m cutoffs is :func:`brier_by_cutoff`).

Beyond the paper: :func:`difficulty_adjusted_brier` (ForecastBench: two-way fixed effects of Brier on
question and model, scores minus the question effect, shifted so ``baseline/always-0.5`` scores 0.25, Brier
Index (1 - sqrt(score)) x 100), :func:`reliability_table`, and percentile bootstrap intervals that resample
questions (events: all cutoffs of a question together) or tasks within a domain (:func:`leaderboard`).

The printed, stored boards are not :func:`leaderboard` (a common task set that the sparsest model sets):
they are :mod:`leaf_live.event.rankings` (table ``event_rankings``: each model on its own tasks, cluster
bootstrap over cutoff days), which every face reads. :func:`leaderboard` stays for the figures' statistics.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event.baselines import bundle_values
from leaf_live.event.tasks import case_day_of

QUANTILES = (0.025, 0.1, 0.5, 0.9, 0.975)
Z80 = 1.2815515655446004  # standard normal 0.9 quantile
REFERENCE_MODEL = "baseline/always-0.5"


class ScoringError(ValueError):
    """Inputs cannot be scored (missing columns, no overlap); the message names the input."""


# ------------------------------------------------------------------------------------------------
# elementary metrics (numpy, checked by hand in the tests)
# ------------------------------------------------------------------------------------------------


def mape(y: np.ndarray, yhat: np.ndarray) -> float:
    """100/n sum |y - yhat| / |y| (%)."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    return float(np.mean(np.abs(y - yhat) / np.abs(y)) * 100.0)


def rmse(y: np.ndarray, yhat: np.ndarray) -> float:
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    return float(np.sqrt(np.mean((y - yhat) ** 2)))


def dlv(yhat: np.ndarray, last: float) -> float:
    """Distance to the last value: 100/n sum |yhat - x_T| / |x_T| (%)."""
    return float(np.mean(np.abs(np.asarray(yhat, float) - last)) / abs(last) * 100.0)


def zscore_errors(history: np.ndarray, y: np.ndarray, yhat: np.ndarray) -> tuple[float, float]:
    """(MAE, MSE) of yhat vs y after z-scoring both with the look-back ``history`` mean and sd (ddof 0)."""
    h = np.asarray(history, float)
    sd = h.std()  # the mean cancels in the error difference
    if not sd > 0:
        raise ScoringError("look-back has zero variance; z-scores undefined")
    e = (np.asarray(yhat, float) - np.asarray(y, float)) / sd
    return float(np.mean(np.abs(e))), float(np.mean(e**2))


def brier(p: float | np.ndarray, o: float | np.ndarray) -> np.ndarray:
    """(p - o)^2 for binary outcomes o in {0, 1} (the paper's baseline 0.5 scores 0.25)."""
    return (np.asarray(p, float) - np.asarray(o, float)) ** 2


def pinball(y: np.ndarray, q: np.ndarray, tau: float) -> np.ndarray:
    """Quantile (pinball) loss of quantile forecast q at level tau: max(tau (y - q), (tau - 1)(y - q))."""
    d = np.asarray(y, float) - np.asarray(q, float)
    return np.maximum(tau * d, (tau - 1.0) * d)


def crps_normal(y: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """CRPS of N(mu, sigma^2) at y: sigma [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)], z = (y - mu) / sigma."""
    from scipy.stats import norm

    y, mu, sigma = (np.asarray(a, float) for a in (y, mu, sigma))
    z = (y - mu) / sigma
    return sigma * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / math.sqrt(math.pi))


# ------------------------------------------------------------------------------------------------
# per-task scores
# ------------------------------------------------------------------------------------------------


def score_forecasts(tasks: pl.DataFrame, outcomes: pl.DataFrame, forecasts: pl.DataFrame) -> pl.DataFrame:
    """``leaf_scores`` rows for every valid forecast whose task has an outcome (module doc for the metrics).

    A forecast whose ``bundle_hash`` differs from its task's is not scored (it saw other inputs). Raises
    :class:`ScoringError` for missing columns."""
    pit.require_columns(
        tasks,
        [
            "task_id",
            "domain",
            "task_kind",
            "horizon",
            "target_id",
            "frequency",
            "bundle",
            "bundle_hash",
            "last_value",
        ],
        "forecast_tasks",
        ScoringError,
    )
    pit.require_columns(
        outcomes, ["task_id", "actual", "label", "outcome", "available_at"], "task_outcomes", ScoringError
    )
    pit.require_columns(
        forecasts,
        [
            "model_id",
            "task_id",
            "bundle_hash",
            "valid",
            "point",
            "quantiles",
            "predicted_class",
            "probability",
        ],
        "leaf_forecasts",
        ScoringError,
    )
    j = (
        forecasts.filter(pl.col("valid"))
        .join(
            tasks.select(
                "task_id",
                "domain",
                "task_kind",
                "horizon",
                "target_id",
                "frequency",
                "bundle",
                pl.col("bundle_hash").alias("_task_hash"),
                "last_value",
            ),
            on="task_id",
        )
        .filter(pl.col("bundle_hash") == pl.col("_task_hash"))
        .join(
            outcomes.select("task_id", "actual", "label", "outcome", pl.col("available_at").alias("_oa")),
            on="task_id",
        )
    )
    rows: list[dict] = []
    hist: dict[str, np.ndarray] = {}
    for r in j.iter_rows(named=True):
        base = {
            "model_id": r["model_id"],
            "task_id": r["task_id"],
            "domain": r["domain"],
            "task_kind": r["task_kind"],
            "horizon": r["horizon"],
            "target_id": r["target_id"],
            "available_at": r["_oa"],
        }

        def put(metric: str, value: float) -> None:
            if value is not None and math.isfinite(value):
                rows.append({**base, "metric": metric, "value": float(value)})  # noqa: B023 (called in this iteration)

        kind = r["task_kind"]
        if kind in ("trend3", "trend5"):
            if r["predicted_class"] is not None and r["label"] is not None:
                put("accuracy", float(r["predicted_class"] == r["label"]))
        elif kind == "event":
            if r["probability"] is not None and r["outcome"] is not None:
                put("brier", float(brier(r["probability"], r["outcome"])))
        elif kind == "series" and r["point"] is not None and r["actual"] is not None:
            y, yhat = np.asarray(r["actual"], float), np.asarray(r["point"], float)
            if y.shape != yhat.shape:
                continue
            q = json.loads(r["quantiles"]) if r["quantiles"] else None
            if r["frequency"] == "hour":
                key = r["_task_hash"]
                if key not in hist:
                    hist[key] = bundle_values(r["bundle"])
                h = hist[key]
                mae, mse = zscore_errors(h, y, yhat)
                put("mae_z", mae)
                put("mse_z", mse)
                center, scale = h.mean(), h.std()
            else:
                last = float(r["last_value"])
                put("mape", mape(y, yhat))
                put("rmse", rmse(y, yhat))
                put("dlv", dlv(yhat, last))
                center, scale = 0.0, abs(last) / 100.0  # % of x_T
            if q:
                z = lambda a: (np.asarray(a, float) - center) / scale  # noqa: B023, E731
                yz, qs = z(y), {0.5: z(yhat), **{float(k): z(v) for k, v in q.items()}}
                if set(QUANTILES) <= set(qs):
                    put("qloss", float(np.mean([pinball(yz, qs[t], t).mean() for t in QUANTILES])))
                    sigma = np.maximum((qs[0.9] - qs[0.1]) / (2 * Z80), 1e-12)
                    put("crps", float(crps_normal(yz, qs[0.5], sigma).mean()))
                    put("cover80", float(np.mean((yz >= qs[0.1]) & (yz <= qs[0.9]))))
                    put("cover95", float(np.mean((yz >= qs[0.025]) & (yz <= qs[0.975]))))
    if not rows:
        return empty_frame("leaf_scores")
    f = pl.DataFrame(rows).with_columns(pl.col("model_id").alias("partition_key"))
    return conform("leaf_scores", f.select(empty_frame("leaf_scores").columns))


# ------------------------------------------------------------------------------------------------
# aggregation, bootstrap, leaderboard
# ------------------------------------------------------------------------------------------------


# Context kinds of analysis-only LLM variants (§3.2's alpha-consistency contexts are built from realised
# outcomes, so they are not forecasts: they never enter a leaderboard or shrink its common task set).
ANALYSIS_CONTEXTS = ("alpha=", "other_alpha=")


def board_scores(scores: pl.DataFrame) -> pl.DataFrame:
    """``scores`` without the analysis-only variants (``model_id`` ending ``:alpha=<a>`` or
    ``:other_alpha=<a>``,
    :data:`ANALYSIS_CONTEXTS`); every leaderboard of this module starts here. Same columns, fewer rows;
    large-cap tasks of a recorded case day (:func:`tasks.case_day_of`) get the domain
    ``large_cap case <day>``, a board apart from the §4.1 span's ``large_cap``."""
    if scores.is_empty() or "model_id" not in scores.columns:
        return scores
    context = pl.col("model_id").str.split(":").list.last()
    pattern = "^(" + "|".join(ANALYSIS_CONTEXTS) + ")"
    is_variant = pl.col("model_id").str.contains(":") & context.str.contains(pattern)
    out = scores.filter(~is_variant)
    if {"task_id", "domain"} <= set(out.columns):
        # a recorded case day's large caps are their own board, never mixed into the §4.1 span's
        case = case_day_of()
        out = out.with_columns(
            pl.when(case.is_not_null())
            .then(pl.lit("large_cap case ") + case)
            .otherwise(pl.col("domain"))
            .alias("domain")
        )
    return out


def common_tasks(scores: pl.DataFrame, models: Sequence[str] | None = None) -> pl.DataFrame:
    """Scores restricted, per (domain, task_kind, horizon, metric), to the tasks every model of ``models``
    (default: every model present in that group) has a score for: like is compared with like."""
    s = scores if models is None else scores.filter(pl.col("model_id").is_in(list(models)))
    keys = ["domain", "task_kind", "horizon", "metric"]
    n_models = s.group_by(keys).agg(pl.col("model_id").n_unique().alias("_m"))
    per_task = s.group_by([*keys, "task_id"]).agg(pl.col("model_id").n_unique().alias("_k"))
    keep = per_task.join(n_models, on=keys).filter(pl.col("_k") == pl.col("_m")).select([*keys, "task_id"])
    return s.join(keep, on=[*keys, "task_id"])


def bootstrap_mean(
    values: np.ndarray, groups: np.ndarray, *, n_draws: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``values`` and a percentile bootstrap interval that resamples the distinct ``groups`` (e.g.
    questions, whose cutoffs move together) with replacement. Returns (mean, lo, hi)."""
    v = np.asarray(values, float)
    g = np.asarray(groups)
    uniq, inv = np.unique(g, return_inverse=True)
    sums = np.bincount(inv, weights=v, minlength=uniq.size)
    cnts = np.bincount(inv, minlength=uniq.size).astype(float)
    rng = np.random.default_rng(seed)
    # each draw picks uniq.size groups with replacement (drawing indices is ~100x faster than multinomial
    # counts, which cost one binomial per group and draw; the resampling distribution is the same)
    pick = rng.integers(0, uniq.size, size=(n_draws, uniq.size))
    draws = sums[pick].sum(axis=1) / cnts[pick].sum(axis=1)
    a = (1 - level) / 2 * 100
    return float(v.mean()), float(np.percentile(draws, a)), float(np.percentile(draws, 100 - a))


def leaderboard(
    scores: pl.DataFrame, *, n_draws: int = 2000, seed: int = 0, like_with_like: bool = True
) -> pl.DataFrame:
    """Model x domain x task kind x horizon x metric: mean, 95% bootstrap interval (tasks resampled; events:
    questions resampled, all cutoffs together) and the sample count. With ``like_with_like`` only tasks every
    model of the group scored are used (:func:`common_tasks`); ``rmse`` is reported as sqrt(mean(rmse^2)).
    Analysis-only variants are left out (:func:`board_scores`)."""
    scores = board_scores(scores)
    s = common_tasks(scores) if like_with_like else scores
    out = []
    for key, g in s.group_by(["model_id", "domain", "task_kind", "horizon", "metric"], maintain_order=True):
        v = g["value"].to_numpy()
        groups = (g["target_id"] if key[2] == "event" else g["task_id"]).to_numpy()
        if key[4] == "rmse":
            m, lo, hi = bootstrap_mean(v**2, groups, n_draws=n_draws, seed=seed)
            m, lo, hi = math.sqrt(m), math.sqrt(lo), math.sqrt(hi)
        else:
            m, lo, hi = bootstrap_mean(v, groups, n_draws=n_draws, seed=seed)
        out.append(
            {
                "model_id": key[0],
                "domain": key[1],
                "task_kind": key[2],
                "horizon": key[3],
                "metric": key[4],
                "mean": m,
                "ci_lo": lo,
                "ci_hi": hi,
                "n": g.height,
            }
        )
    return (
        pl.DataFrame(out).sort("domain", "task_kind", "horizon", "metric", "mean") if out else pl.DataFrame()
    )


def brier_by_cutoff(scores: pl.DataFrame, *, n_draws: int = 2000, seed: int = 0) -> pl.DataFrame:
    """Mean Brier per model at each cutoff (100% .. 10%) and averaged over the cutoffs (``avg``: the mean over
    questions of each question's mean Brier across its cutoffs, §4.1), with question-bootstrap intervals.
    Analysis-only variants are left out (:func:`board_scores`)."""
    b = board_scores(scores).filter(pl.col("metric") == "brier")
    out = []
    for (model, cut), g in b.group_by(["model_id", "horizon"], maintain_order=True):
        m, lo, hi = bootstrap_mean(
            g["value"].to_numpy(), g["target_id"].to_numpy(), n_draws=n_draws, seed=seed
        )
        out.append({"model_id": model, "cutoff": cut, "brier": m, "ci_lo": lo, "ci_hi": hi, "n": g.height})
    for (model,), g in b.group_by(["model_id"], maintain_order=True):
        per_q = g.group_by("target_id").agg(pl.col("value").mean())
        m, lo, hi = bootstrap_mean(
            per_q["value"].to_numpy(), per_q["target_id"].to_numpy(), n_draws=n_draws, seed=seed
        )
        out.append(
            {"model_id": model, "cutoff": "avg", "brier": m, "ci_lo": lo, "ci_hi": hi, "n": per_q.height}
        )
    return pl.DataFrame(out).sort("model_id", "cutoff")


def two_way_fixed_effects(
    y: np.ndarray, question: np.ndarray, model: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares fit of y_ij = a_i (model) + b_j (question) + u_ij on an unbalanced panel. Returns (a per
    model code, b per question code) with the normalisation a_0 = 0 (the first model code), i.e. b_j absorbs
    the level, as in pyfixest with the question effect listed first. Codes are 0..k-1 integer arrays.

    Solved exactly by eliminating the question effects (b_j = mean over question j of y - a), which leaves the
    k x k system (diag(n) - P C^-1 P^T) a = N^T y - P (s / c) for the model effects (P: model x question
    counts, c and s: count and sum of y per question, n: count per model); a_0 = 0 fixes its one free level.
    The model count is small, so this costs a few bincounts instead of iterating projections."""
    y = np.asarray(y, float)
    q = np.asarray(question)
    m = np.asarray(model)
    nq, nm = int(q.max()) + 1, int(m.max()) + 1
    cq = np.bincount(q, minlength=nq).astype(float)
    sq = np.bincount(q, weights=y, minlength=nq)
    cm = np.bincount(m, minlength=nm).astype(float)
    pair = np.bincount(m * nq + q, minlength=nm * nq).astype(float).reshape(nm, nq)
    a_mat = np.diag(cm) - (pair / cq) @ pair.T
    rhs = np.bincount(m, weights=y, minlength=nm) - pair @ (sq / cq)
    a = np.zeros(nm)
    if nm > 1:
        a[1:] = np.linalg.lstsq(a_mat[1:, 1:], rhs[1:], rcond=None)[0]
    b = (sq - np.bincount(q, weights=a[m], minlength=nq)) / cq
    return a, b


def _dab(
    brier_vals: np.ndarray,
    qcodes: np.ndarray,
    mcodes: np.ndarray,
    fit_mask: np.ndarray,
    ref_code: int | None,
    n_models: int,
) -> np.ndarray:
    """Rescaled difficulty-adjusted Brier per model code (ForecastBench two_way_fixed_effects + rescale)."""
    # questions that only the reference forecasts get no effect from the fit; give them the reference's Brier
    fq = np.unique(qcodes[fit_mask])
    remap = -np.ones(int(qcodes.max()) + 1, dtype=int)
    remap[fq] = np.arange(fq.size)
    fm = np.unique(mcodes[fit_mask])
    mremap = -np.ones(n_models, dtype=int)
    mremap[fm] = np.arange(fm.size)
    _, b = two_way_fixed_effects(brier_vals[fit_mask], remap[qcodes[fit_mask]], mremap[mcodes[fit_mask]])
    qfe = np.where(remap[qcodes] >= 0, b[np.maximum(remap[qcodes], 0)], np.nan)
    adj = brier_vals - qfe
    ok = np.isfinite(adj)
    per_model = np.bincount(mcodes[ok], weights=adj[ok], minlength=n_models) / np.maximum(
        np.bincount(mcodes[ok], minlength=n_models), 1
    )
    if ref_code is not None:
        per_model = per_model + (0.25 - per_model[ref_code])
    return per_model


def difficulty_adjusted_brier(
    scores: pl.DataFrame,
    *,
    reference: str = REFERENCE_MODEL,
    n_draws: int = 500,
    seed: int = 0,
    by_cutoff: bool = True,
) -> pl.DataFrame:
    """ForecastBench difficulty adjustment of event Brier scores (module doc).

    Unit ("question") = one question at one cutoff; the fixed-effects fit excludes the ``reference`` model
    (as ForecastBench drops "Always 0.5"), whose mean adjusted score is then set to 0.25; the Brier Index is
    (1 - sqrt(score)) x 100. Intervals: questions resampled with replacement within category-free pools
    (each drawn copy a separate question, as ForecastBench does) and the fit redone. Rows per model and cutoff
    (``all`` pools every cutoff); analysis-only variants are left out (:func:`board_scores`). Raises
    :class:`ScoringError` when the reference model is absent."""
    b = board_scores(scores).filter(pl.col("metric") == "brier")
    if reference not in b["model_id"].unique().to_list():
        raise ScoringError(f"difficulty adjustment needs the reference model {reference!r} in the scores")
    groups = [("all", b)]
    if by_cutoff:
        groups += [(c, g) for (c,), g in b.group_by(["horizon"], maintain_order=True)]
    out = []
    rng = np.random.default_rng(seed)
    for cut, g in groups:
        models = sorted(g["model_id"].unique().to_list())
        mcode = {m: i for i, m in enumerate(models)}
        units = g.select(pl.concat_str(["target_id", "horizon"], separator="@").alias("u"))["u"].to_numpy()
        uq, ucode = np.unique(units, return_inverse=True)
        mc = np.array([mcode[m] for m in g["model_id"].to_list()])
        val = g["value"].to_numpy()
        ref = mcode[reference]
        fit = mc != ref
        point = _dab(val, ucode, mc, fit, ref, len(models))
        # question bootstrap: resample questions (all their cutoff units together)
        qid = np.array([u.split("@")[0] for u in units])
        qs, qinv = np.unique(qid, return_inverse=True)
        order = np.argsort(qinv, kind="stable")  # rows grouped by question
        lens = np.bincount(qinv, minlength=qs.size)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        draws = []
        for _ in range(n_draws):
            pick = rng.integers(0, qs.size, qs.size)
            n_rows = lens[pick]
            ends = np.cumsum(n_rows)
            offset = np.arange(ends[-1]) - np.repeat(
                ends - n_rows, n_rows
            )  # position within the drawn question
            idx = order[np.repeat(starts[pick], n_rows) + offset]
            copy = np.repeat(np.arange(qs.size), n_rows)  # each drawn copy is a separate question
            uc = np.unique(ucode[idx] * (qs.size + 1) + copy, return_inverse=True)[1]
            draws.append(_dab(val[idx], uc, mc[idx], mc[idx] != ref, ref, len(models)))
        d = np.array(draws)
        for m, i in mcode.items():
            s = float(point[i])
            lo, hi = np.nanpercentile(d[:, i], [2.5, 97.5])
            out.append(
                {
                    "model_id": m,
                    "cutoff": cut,
                    "adj_brier": s,
                    "adj_ci_lo": float(lo),
                    "adj_ci_hi": float(hi),
                    "brier_index": brier_index(s),
                    "index_ci_lo": brier_index(float(hi)),
                    "index_ci_hi": brier_index(float(lo)),
                    "n": int((mc == i).sum()),
                }
            )
    return pl.DataFrame(out).sort("cutoff", "model_id")


def brier_index(score: float) -> float:
    """ForecastBench Brier Index: (1 - sqrt(score)) x 100 (100 perfect, 50 always 0.5, 0 maximally wrong)."""
    return (1.0 - math.sqrt(max(score, 0.0))) * 100.0


def reliability_table(
    scores_or_forecasts: pl.DataFrame, outcomes: pl.DataFrame | None = None, *, bins: int = 10
) -> pl.DataFrame:
    """Calibration table per model: probability bins [0, 0.1), ..., [0.9, 1.0] with the count, mean forecast
    and observed YES frequency. Input: ``leaf_forecasts`` rows with ``probability`` plus ``outcomes``
    (``task_outcomes``), or a frame that already has ``model_id``, ``probability`` and ``outcome``."""
    f = scores_or_forecasts
    if outcomes is not None:
        f = f.filter(pl.col("probability").is_not_null()).join(
            outcomes.select("task_id", "outcome"), on="task_id"
        )
    f = f.filter(pl.col("outcome").is_not_null())
    f = f.with_columns(
        pl.min_horizontal((pl.col("probability") * bins).floor().cast(pl.Int32), pl.lit(bins - 1)).alias(
            "bin"
        )
    )
    return (
        f.group_by("model_id", "bin")
        .agg(
            pl.len().alias("n"),
            pl.col("probability").mean().alias("mean_forecast"),
            pl.col("outcome").mean().alias("observed_freq"),
        )
        .with_columns((pl.col("bin") / bins).alias("bin_lo"), ((pl.col("bin") + 1) / bins).alias("bin_hi"))
        .sort("model_id", "bin")
    )


def format_leaderboard(board: pl.DataFrame, metrics: Sequence[str] | None = None) -> str:
    """Plain-text event-track leaderboard from :func:`leaderboard` rows: one block per (domain, task kind,
    horizon, metric), models best first (accuracy, coverage: higher is better; errors: lower), each with its
    mean, 95% interval and sample count."""
    if board.height == 0:
        return "(no scores)"
    higher = {"accuracy"}
    b = board if metrics is None else board.filter(pl.col("metric").is_in(list(metrics)))
    lines = []
    for (d, k, h, m), g in b.group_by(["domain", "task_kind", "horizon", "metric"], maintain_order=True):
        g = g.sort("mean", descending=m in higher)
        lines.append(f"{d} / {k} / {h} / {m}")
        for r in g.iter_rows(named=True):
            lines.append(
                f"  {r['model_id']:28s} {r['mean']:10.4f}  [{r['ci_lo']:.4f}, {r['ci_hi']:.4f}]  n={r['n']}"
            )
    return "\n".join(lines)
