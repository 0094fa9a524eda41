"""Coverage-robust event-track rankings (issue 16, leaf_live.event.rankings): constructed boards where the
right order is known and the former common-task board gets it wrong, the cluster bootstrap against task
resampling, and on the real snapshot's scores: a 120-row partial submission changes no other model's
headline score or n, and the stored scores are SQL aggregates of the per-task scores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np
import polars as pl
import pytest

from leaf_live.core import ranking as RK
from leaf_live.event import rankings as R
from leaf_live.event import scoring

T0 = datetime(2025, 11, 3, 21, tzinfo=UTC)
NOW = datetime(2026, 5, 1, tzinfo=UTC)
LV = "baseline/last-value"


def _rows(
    model: str, tasks: list[tuple[str, int]], values, *, metric="mape", kind="series", domain="large_cap"
):
    """leaf_scores-like rows of one model: ``tasks`` = [(task_id, cutoff day index)]."""
    return [
        {
            "partition_key": model,
            "model_id": model,
            "task_id": tid,
            "domain": domain,
            "task_kind": kind,
            "horizon": "3d",
            "target_id": tid.split("/")[1],
            "metric": metric,
            "value": float(v),
            "available_at": T0,
        }
        for (tid, _), v in zip(tasks, values)
    ]


def _tasks(tasks: list[tuple[str, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        {"task_id": [t for t, _ in tasks], "cutoff": [T0 + timedelta(days=d) for _, d in tasks]},
        schema={"task_id": pl.Utf8, "cutoff": pl.Datetime("us", "UTC")},
    )


def same_rows(a: pl.DataFrame, b: pl.DataFrame, keys: list[str], exact: list[str], floats: list[str]) -> bool:
    """``a`` and ``b`` hold the same keys, equal ``exact`` columns and ``floats`` equal to 1e-12 (relative):
    adding a model to a panel can move the last bit of a bootstrap percentile (the matrix products' column
    order), never more."""
    a, b = a.sort(keys), b.sort(keys)
    if a.select(keys + exact).rows() != b.select(keys + exact).rows():
        return False
    for c in floats:
        x, y = a[c].to_numpy().astype(float), b[c].to_numpy().astype(float)
        if not np.allclose(x, y, rtol=1e-12, atol=1e-15, equal_nan=True):
            return False
    return True


def _board(frame: pl.DataFrame, horizon: str = "3d", metric: str = "mape") -> dict[str, dict]:
    b = frame.filter(pl.col("horizon") == horizon, pl.col("metric") == metric)
    return {r["model_id"]: r for r in b.iter_rows(named=True)}


# 60 tasks on 30 cutoff days (2 stocks a day); difficulty d_t = the last value's MAPE
TASKS = [(f"large_cap/S{i % 2}/series/3d/{i:03d}", i // 2) for i in range(60)]
D = 1.0 + 2.0 * np.random.default_rng(7).random(60)


def test_sparse_model_cannot_reorder_the_board_and_the_old_common_set_gets_it_wrong():
    # A: -0.5 below the last value on tasks 25..59, +0.3 above it on 0..24 (mean excess -1/6 over all 60);
    # B: -0.1 everywhere; C (a sparse submission): only tasks 0..24, +0.05 (A's bad tasks)
    a = D + np.where(np.arange(60) < 25, 0.3, -0.5)
    rows = _rows(LV, TASKS, D) + _rows("m/A", TASKS, a) + _rows("m/B", TASKS, D - 0.1)
    rows += _rows("external/C", TASKS[:25], D[:25] + 0.05)
    scores = pl.DataFrame(rows)
    f = R.rankings_frame(scores, _tasks(TASKS), available_at=NOW, n_boot=200)
    b = _board(f)
    L_ref = D.mean()
    # hand-worked: score = 1 - (L_ref + mean excess on own tasks) / L_ref
    assert b["m/A"]["score"] == pytest.approx((10 / 60) / L_ref, rel=1e-12)
    assert b["m/B"]["score"] == pytest.approx(0.1 / L_ref, rel=1e-12)
    assert b["external/C"]["score"] == pytest.approx(-0.05 / L_ref, rel=1e-12)
    assert [b[m]["rank"] for m in ("m/A", "m/B", LV, "external/C")] == [1, 2, 3, 4]
    assert {m: b[m]["n_tasks"] for m in b} == {LV: 60, "m/A": 60, "m/B": 60, "external/C": 25}
    # own-task plain MAPE (a different set per model) and the difficulty-adjusted MAPE in % units
    assert b["external/C"]["own_value"] == pytest.approx(D[:25].mean() + 0.05)
    assert b["m/A"]["adj_value"] == pytest.approx(L_ref - 10 / 60)
    # the former board: every model on the tasks ALL of them scored (C's 25) ranks B above A, n = 25 each
    old = scoring.leaderboard(scores, n_draws=50)
    old = dict(zip(old["model_id"], zip(old["mean"], old["n"])))
    assert old["m/B"][0] < old["m/A"][0] and old["m/A"][1] == 25
    # the common-set view over the ranked models is C's 25 tasks: under half of A's 60, so not a ranking
    assert b["m/A"]["common_n"] == 25 and not b["m/A"]["common_view_ok"]
    assert b["m/A"]["common_rank"] is None and "under 50%" in b["m/A"]["common_view_note"]
    # paired interval vs the reference excludes 0 for A (its effect is -1/6 on every replicate's tasks)
    assert b["m/A"]["diff_ci90_lo"] > 0 and b[LV]["score"] == 0.0


def test_below_min_tasks_a_model_is_listed_not_ranked_and_the_common_view_is_shown():
    a = D + np.where(np.arange(60) < 25, 0.3, -0.5)
    rows = _rows(LV, TASKS, D) + _rows("m/A", TASKS, a) + _rows("m/B", TASKS, D - 0.1)
    rows += _rows("external/C", TASKS[:12], D[:12] - 1.0)  # 12 < MIN_EVENTS = 20: best MAPE, no rank
    f = R.rankings_frame(pl.DataFrame(rows), _tasks(TASKS), available_at=NOW, n_boot=100)
    b = _board(f)
    assert RK.MIN_EVENTS == 20
    c = b["external/C"]
    assert (c["n_tasks"], c["ranked"], c["rank"], c["score"], c["common_rank"]) == (
        12,
        False,
        None,
        None,
        None,
    )
    assert c["own_value"] == pytest.approx(D[:12].mean() - 1.0)
    # the ranked models all scored the 60 tasks: the common view is a ranking, and agrees with the headline
    assert b["m/A"]["common_view_ok"] and b["m/A"]["common_n"] == 60
    assert [b[m]["common_rank"] for m in ("m/A", "m/B", LV)] == [1, 2, 3]
    assert b["m/A"]["common_value"] == pytest.approx(a.mean())
    # the largest single-task share of A's loss, by hand
    la = a
    assert b["m/A"]["max_task_share"] == pytest.approx(la.max() / la.sum())
    assert b["m/A"]["max_task_flag"] is False


def test_accuracy_is_ranked_as_one_minus_accuracy_on_the_skill_scale():
    acc_lv = np.array([1, 0, 0, 1] * 15, dtype=float)  # last value right on half the tasks
    acc_m = np.array([1, 1, 0, 1] * 15, dtype=float)  # the model on three quarters
    rows = _rows(LV, TASKS, acc_lv, metric="accuracy", kind="trend3")
    rows += _rows("m/A", TASKS, acc_m, metric="accuracy", kind="trend3")
    f = R.rankings_frame(pl.DataFrame(rows), _tasks(TASKS), available_at=NOW, n_boot=100)
    b = _board(f, metric="accuracy")
    # losses 0.5 and 0.25: skill 1 - 0.25/0.5
    assert b["m/A"]["score"] == pytest.approx(0.5) and b["m/A"]["adj_value"] == pytest.approx(0.75)
    assert b["m/A"]["loss"] == "1 - accuracy" and b["m/A"]["rank"] == 1
    assert b["m/A"]["common_value"] == pytest.approx(0.75)  # plain accuracy, higher is better
    assert b["m/A"]["common_rank"] == 1


def test_cluster_bootstrap_over_cutoff_days_is_wider_than_task_resampling():
    # 30 cutoff days x 10 tasks; the model's excess loss shares a day shock (sd 0.5) plus task noise (0.1)
    rng = np.random.default_rng(3)
    tasks = [(f"large_cap/S{i % 10}/series/3d/{i:03d}", i // 10) for i in range(300)]
    d = 2.0 + rng.random(300)
    shock = np.repeat(rng.normal(0, 0.5, 30), 10) + rng.normal(0, 0.1, 300)
    rows = _rows(LV, tasks, d) + _rows("m/A", tasks, d + shock)
    g = R.with_clusters(pl.DataFrame(rows), _tasks(tasks))
    assert g["cluster"].n_unique() == 30
    by_day, _ = R.rank_board(g, "mape", LV, n_boot=500)
    by_task, _ = R.rank_board(g, "mape", LV, cluster="task_id", n_boot=500)
    w_day = {r["model_id"]: r["ci90_hi"] - r["ci90_lo"] for r in by_day}["m/A"]
    w_task = {r["model_id"]: r["ci90_hi"] - r["ci90_lo"] for r in by_task}["m/A"]
    # the point score is the same; the day-cluster interval about sqrt(10 * 0.25 / 0.26) ~ 3x wider
    assert {r["model_id"]: r["score"] for r in by_day} == {r["model_id"]: r["score"] for r in by_task}
    assert w_day > 2.5 * w_task


def test_event_questions_use_the_market_reference_and_question_clusters():
    qs = [f"q{i:02d}" for i in range(25)]
    rows = []
    for h, shift in (("100%", 0.0), ("10%", 0.05)):
        tids = [(f"event/{q}/{h}", 0) for q in qs]
        for model, base in ((R.MARKET, 0.2), ("baseline/always-0.5", 0.25)):
            for r in _rows(
                model, tids, np.full(25, base + shift), metric="brier", kind="event", domain="event"
            ):
                rows.append({**r, "horizon": h, "target_id": r["task_id"].split("/")[1]})
    f = R.rankings_frame(
        pl.DataFrame(rows),
        pl.DataFrame(schema={"task_id": pl.Utf8, "cutoff": pl.Datetime("us", "UTC")}),
        available_at=NOW,
        n_boot=50,
    )
    pooled = _board(f, horizon="all", metric="brier")
    assert pooled[R.MARKET]["reference_model_id"] == R.MARKET and pooled[R.MARKET]["headline"]
    assert pooled["baseline/always-0.5"]["n_clusters"] == 25  # questions, all cutoffs together
    assert pooled["baseline/always-0.5"]["n_tasks"] == 50
    # Brier skill vs the market: 1 - mean(0.25, 0.30) / mean(0.2, 0.25)
    assert pooled["baseline/always-0.5"]["score"] == pytest.approx(1 - 0.275 / 0.225)
    assert pooled["baseline/always-0.5"]["cluster_by"] == "question"


def test_unranked_metrics_and_a_missing_cutoff_are_refused():
    with pytest.raises(R.EventRankingError, match="metric='dlv' is not ranked"):
        R.task_loss("dlv", np.ones(2))
    s = pl.DataFrame(_rows(LV, TASKS[:2], D[:2]))
    with pytest.raises(R.EventRankingError, match="task_id='large_cap/S1/series/3d/001'"):
        R.with_clusters(s, _tasks(TASKS[:1]))


# ------------------------------------------------------------------------------------------------
# the real snapshot's scores (baselines)
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(snapshot_dir) -> dict:
    from leaf_live.event import pipeline

    t = pipeline.load_snapshot(snapshot_dir)
    ts = pipeline.build_tasks(t)
    t.forecast_tasks, t.task_outcomes = ts.tasks, ts.outcomes
    t.leaf_forecasts = pipeline.run_baselines(t, statistical=())
    scores = scoring.score_forecasts(t.forecast_tasks, t.task_outcomes, t.leaf_forecasts)
    tasks = t.forecast_tasks.select("task_id", "cutoff")
    return {
        "scores": scores,
        "tasks": tasks,
        "forecast_tasks": t.forecast_tasks,
        "board": R.rankings_frame(scores, tasks, available_at=NOW),
    }


def _partial_submission(scores: pl.DataFrame) -> pl.DataFrame:
    """120 leaf_scores rows of a partial external model: 40 large-cap trend3 1d tasks, 40 event questions at
    the 10% cutoff, 20 large-cap 3d price tasks (mape and rmse); every value the last value's, shifted."""
    lv = scoring.board_scores(scores)
    pick = []
    for dom, kind, h, metrics, n, model in (
        ("large_cap", "trend3", "1d", ("accuracy",), 40, LV),
        ("event", "event", "10%", ("brier",), 40, R.MARKET),
        ("large_cap", "series", "3d", ("mape", "rmse"), 20, LV),
    ):
        g = lv.filter(
            pl.col("model_id") == model,
            pl.col("domain") == dom,
            pl.col("task_kind") == kind,
            pl.col("horizon") == h,
        )
        ids = sorted(g["task_id"].unique().to_list())[:n]
        pick.append(g.filter(pl.col("task_id").is_in(ids), pl.col("metric").is_in(list(metrics))))
    p = pl.concat(pick).with_columns(
        pl.lit("external/drift").alias("model_id"),
        pl.lit("external/drift").alias("partition_key"),
        (pl.col("value") * 0.9).alias("value"),
    )
    assert p.height == 120
    return p


def test_a_120_row_partial_submission_changes_no_other_models_score_or_n(real):
    before = real["board"]
    after = R.rankings_frame(
        pl.concat([real["scores"], _partial_submission(real["scores"])]), real["tasks"], available_at=NOW
    )
    keys = ["domain", "task_kind", "horizon", "metric", "model_id"]
    cols = ["n_tasks", "score", "ci90_lo", "ci90_hi", "level", "own_value", "diff_ci90_lo", "diff_ci90_hi"]
    old = after.filter(pl.col("model_id") != "external/drift")
    assert same_rows(old, before, keys, ["n_tasks"], [c for c in cols if c != "n_tasks"])
    new = after.filter(pl.col("model_id") == "external/drift")
    # only its own rows appear, ranked where it has >= 20 tasks
    assert sorted(new.filter("ranked").select("horizon", "metric").rows()) == [
        ("10%", "brier"),
        ("1d", "accuracy"),
        ("3d", "mape"),
        ("3d", "rmse"),
        ("all", "brier"),  # the pooled headline boards of both domains
        ("all", "mape"),
    ]
    # the former common-task board shrinks everybody's large-cap trend3 1d n from 1,050 to 40
    s = pl.concat([real["scores"], _partial_submission(real["scores"])])
    lb = scoring.leaderboard(s.filter(pl.col("metric") == "accuracy"), n_draws=20)
    lb = lb.filter(
        pl.col("domain") == "large_cap", pl.col("task_kind") == "trend3", pl.col("horizon") == "1d"
    )
    assert set(lb["n"].to_list()) == {40}
    b = after.filter(
        pl.col("domain") == "large_cap", pl.col("task_kind") == "trend3", pl.col("horizon") == "1d"
    )
    assert dict(zip(b["model_id"], b["n_tasks"])) == {
        LV: 1050,
        "baseline/hist-mean": 1050,
        "external/drift": 40,
    }


def test_stored_scores_are_sql_aggregates_of_the_per_task_scores(real):
    """Identity: own-task values, skill scores (event effect = the reference's loss) and common-set values
    recomputed in DuckDB from the per-task scores equal the ranking rows."""
    con = duckdb.connect()
    s = scoring.board_scores(real["scores"]).filter(pl.col("metric").is_in(list(R.LOSSES)))
    con.register("s", s.to_arrow())
    boards = real["board"].filter(pl.col("horizon") != "all")
    con.register("b", boards.filter(pl.col("ranked_note").is_null()).to_arrow())
    q = """
    WITH l AS (
      SELECT *,
        CASE metric WHEN 'accuracy' THEN 1 - value WHEN 'rmse' THEN value * value ELSE value END AS loss
      FROM s),
    ref AS (
      SELECT l.domain, l.task_kind, l.horizon, l.metric, l.task_id, l.loss AS ref_loss FROM l
      JOIN (SELECT DISTINCT domain, task_kind, reference_model_id FROM b) r
        ON l.domain = r.domain AND l.task_kind = r.task_kind AND l.model_id = r.reference_model_id),
    refmean AS (
      SELECT domain, task_kind, horizon, metric, avg(ref_loss) AS L_ref FROM ref GROUP BY 1, 2, 3, 4),
    own AS (
      SELECT l.domain, l.task_kind, l.horizon, l.metric, l.model_id, count(*) AS n,
        CASE WHEN l.metric = 'rmse' THEN sqrt(avg(l.value * l.value)) ELSE avg(l.value) END AS own_value,
        avg(l.loss - ref.ref_loss) AS excess
      FROM l JOIN ref USING (domain, task_kind, horizon, metric, task_id) GROUP BY 1, 2, 3, 4, 5)
    SELECT b.domain, b.task_kind, b.horizon, b.metric, b.model_id, own.n, b.n_tasks, own.own_value,
      b.own_value AS stored_own, CASE WHEN b.ranked THEN -own.excess / refmean.L_ref END AS skill, b.score
    FROM b JOIN own USING (domain, task_kind, horizon, metric, model_id)
    JOIN refmean USING (domain, task_kind, horizon, metric)
    """
    t = pl.from_arrow(con.sql(q).to_arrow_table())
    assert t.height == boards.filter(pl.col("ranked_note").is_null()).height > 100
    # a board without a ranking (its reference has < 20 tasks) lists every model with all its tasks there
    keys = ["domain", "task_kind", "horizon", "metric", "model_id"]
    u = boards.filter(pl.col("ranked_note").is_not_null())
    n = s.group_by(keys).agg(pl.len().alias("n"), pl.col("value").mean().alias("v"))
    u = u.join(n, on=keys)
    assert u.height > 0 and (u["n"] == u["n_tasks"]).all() and np.allclose(u["v"], u["own_value"])
    assert (t["n"] == t["n_tasks"]).all()
    assert np.allclose(t["own_value"], t["stored_own"], rtol=1e-12, atol=1e-12)
    r = t.filter(pl.col("score").is_not_null())
    assert r.height > 50 and np.allclose(r["skill"], r["score"], rtol=1e-9, atol=1e-12)
    # the common-set values: the plain mean over the tasks every ranked model scored
    c = real["board"].filter(pl.col("common_view_ok"), pl.col("horizon") != "all")
    one = c.filter(
        pl.col("domain") == "large_cap", pl.col("task_kind") == "trend3", pl.col("horizon") == "3d"
    )
    for row in one.iter_rows(named=True):
        v = s.filter(
            pl.col("model_id") == row["model_id"],
            pl.col("domain") == "large_cap",
            pl.col("task_kind") == "trend3",
            pl.col("horizon") == "3d",
            pl.col("metric") == row["metric"],
        )["value"]
        assert row["common_n"] == v.len() and row["common_value"] == pytest.approx(v.mean(), rel=1e-12)


def test_real_large_cap_intervals_widen_with_cutoff_clusters(real):
    g = R.with_clusters(
        scoring.board_scores(real["scores"]).filter(
            pl.col("domain") == "large_cap",
            pl.col("task_kind") == "trend3",
            pl.col("horizon") == "3d",
            pl.col("metric") == "accuracy",
        ),
        real["tasks"],
    )
    by_day, info = R.rank_board(g, "accuracy", LV)
    by_task, _ = R.rank_board(g, "accuracy", LV, cluster="task_id")
    w = lambda rows: {r["model_id"]: r["ci90_hi"] - r["ci90_lo"] for r in rows}["baseline/hist-mean"]  # noqa: E731
    assert info["n_clusters"] == g["cluster"].n_unique() < g["task_id"].n_unique() / 10
    assert w(by_day) > 1.3 * w(by_task)  # 0.105 vs 0.078 wide on the snapshot


def test_the_asset_stores_the_board_and_a_rerun_replaces_it(real, tmp_path, snapshot_dir):
    """``event_rankings`` (assets/event_scoring.py) over a store holding the real snapshot's tasks and scores:
    the stored rows are the science's; a second run after a model's scores are removed drops its rows and
    keeps every other model's."""
    from dagster import materialize

    from assets.event_scoring import event_rankings
    from leaf_live.core import storage
    from resources import default_resources

    db = tmp_path / "rank.duckdb"
    with storage.open_db(db) as con:
        storage.replace_partition(
            con,
            "forecast_tasks",
            real["forecast_tasks"],
            {"partition_key": list(real["forecast_tasks"]["partition_key"].unique())},
        )
        storage.replace_partition(
            con,
            "leaf_scores",
            real["scores"],
            {"partition_key": list(real["scores"]["partition_key"].unique())},
        )
    res = default_resources(db=db, snapshot=snapshot_dir)
    assert materialize([event_rankings], resources=res).success
    keys = ["domain", "task_kind", "horizon", "metric", "model_id"]
    cols = [*keys, "n_tasks", "rank", "score", "ci90_lo", "ci90_hi", "p_rank1", "common_rank"]
    with storage.open_db(db) as con:
        stored = storage.read_table(con, "event_rankings")
        assert stored.select(cols).sort(keys).equals(real["board"].select(cols).sort(keys))
        assert set(stored["partition_key"]) == set(stored["domain"])
        con.execute("DELETE FROM leaf_scores WHERE model_id = 'baseline/hist-mean'")
    assert materialize([event_rankings], resources=res).success
    with storage.open_db(db) as con:
        again = storage.read_table(con, "event_rankings")
    assert "baseline/hist-mean" not in again["model_id"].to_list()
    keep = real["board"].filter(pl.col("model_id") != "baseline/hist-mean")
    c2 = [*keys, "n_tasks", "score", "ci90_lo", "ci90_hi"]
    assert again.select(c2).sort(keys).equals(keep.select(c2).sort(keys))


# ------------------------------------------------------------------------------------------------
# leaf-live scores --track event (the stored table)
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(real, tmp_path_factory) -> str:
    from dagster import DagsterInstance, materialize

    from assets.dbt_marts import dbt_event_marts
    from leaf_live.core import storage
    from resources import LeafLiveDB
    from resources.dbt import dbt_resource

    db = tmp_path_factory.mktemp("board") / "board.duckdb"
    with storage.open_db(db) as con:
        for name, frame in (("leaf_scores", real["scores"]), (R.TABLE, real["board"])):
            storage.replace_partition(
                con, name, frame, {"partition_key": frame["partition_key"].unique().to_list()}
            )
    # the CLI reads the stored board, the dbt model event_board over these two tables (its tests must pass)
    res = {"dbt": dbt_resource(), "db": LeafLiveDB(database=str(db))}
    assert materialize([dbt_event_marts], resources=res, instance=DagsterInstance.ephemeral()).success
    return str(db)


def _cli(capsys, db: str, *argv):
    from leaf_live.cli import main

    rc = main(["scores", "--db", db, "--track", "event", *argv])
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_cli_prints_the_headline_matrix_and_labelled_boards_from_the_stored_table(
    store, real, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "110")
    rc, out, err = _cli(capsys, store)
    assert (rc, err) == (0, "")
    assert max(len(line) for line in out.splitlines()) <= 110
    head = out.split("\n\n")[0].splitlines()
    assert head[0].startswith("Event track headline") and "higher is better" in head[1]
    b = real["board"].filter(pl.col("headline"), pl.col("domain") == "large_cap")
    hm = b.filter(pl.col("model_id") == "baseline/hist-mean").row(0, named=True)
    from leaf_live.core.boards import sig

    row = next(ln for ln in head if ln.startswith("baseline/hist-mean"))
    assert f"{sig(hm['score'], signed=True)} #{hm['rank']}" in row  # -0.661 #2 on the snapshot
    assert hm["score"] == pytest.approx(-0.661, abs=5e-4)
    # the headline boards only, each with its direction, n and P(rank 1); every board in drill-down
    assert out.count("Event track | ") == real["board"].filter("headline").select("domain").n_unique()
    assert "Event track | large_cap | series all horizons | MAPE (headline)" in out
    assert "P(rank 1)" in out and "1,980" in out
    rc, out, err = _cli(capsys, store, "--scope", "large_cap", "--horizon", "3d")
    assert rc == 0 and out.count("Event track | large_cap | ") == 4  # series mape, rmse; trend3, trend5
    block = out.split("Event track | large_cap | trend3 3d | trend accuracy")[1]
    assert "Second view, plain trend accuracy on the 1,020 tasks every ranked model scored" in block


def test_cli_csv_and_json_give_the_stored_rows(store, real, capsys):
    import io
    import json

    rc, out, err = _cli(capsys, store, "--format", "csv", "--metric", "brier")
    got = pl.read_csv(io.StringIO(out), infer_schema_length=None)
    want = real["board"].filter(pl.col("metric") == "brier")
    # the stored board (event_board): every event_rankings column but the partition key, and its own
    assert rc == 0 and got.height == want.height
    assert set(got.columns) >= set(want.columns) - {"partition_key"} and "ref_loss" in got.columns
    assert sorted(got["score"].drop_nulls().to_list()) == pytest.approx(
        sorted(want["score"].drop_nulls().to_list())
    )
    rc, out, err = _cli(capsys, store, "--format", "json", "--model", R.MARKET)
    rows = json.loads(out)
    assert rc == 0 and {r["model_id"] for r in rows} == {R.MARKET}
    # the market has a price at 13 questions' 100% cutoff: that board is listed, not ranked, and says why
    (u,) = [r for r in rows if not r["ranked"]]
    assert (u["horizon"], u["n_tasks"]) == ("100%", 13) and "fewer than 20" in u["ranked_note"]
    assert all(r["rank"] == 1 for r in rows if r["ranked"])


def test_cli_bad_filters_and_a_store_without_the_board_are_one_line(store, capsys, tmp_path):
    from leaf_live.core import storage

    rc, out, err = _cli(capsys, store, "--metric", "dlv")
    assert rc == 1 and err.startswith(
        "leaf-live scores: --metric dlv: not on the stored boards; stored: accuracy"
    )
    only_scores = tmp_path / "s.duckdb"
    with storage.open_db(only_scores) as con:
        storage.replace_partition(
            con, "leaf_scores", pl.DataFrame(_rows(LV, TASKS[:1], D[:1])), {"partition_key": [LV]}
        )
    rc, out, err = _cli(capsys, str(only_scores))
    assert (rc, out) == (1, "") and err == (
        "leaf-live scores: no event board stored yet: run `leaf-live rescore --track event`\n"
    )


def test_the_site_board_is_the_stored_table(real):
    """The event page's board tab reads the stored rows (no recomputation): the headline matrix and every
    board row with its stored score, n and rank; after a partial submission the other models' rows are
    unchanged there too."""
    from leaf_live.event.figures import event_statistics
    from leaf_live.event.site import event_page

    scores = real["scores"].head(0)
    stats = event_statistics(scores)
    extra = _partial_submission(real["scores"])
    after = R.rankings_frame(pl.concat([real["scores"], extra]), real["tasks"], available_at=NOW)
    pages = [
        event_page(real["scores"], real["forecast_tasks"], stats, {}, rankings=b, month_limit=1)
        for b in (real["board"], after)
    ]
    blocks = [{getattr(b, "id", ""): b for b in p.tabs[0].blocks} for p in pages]
    board = blocks[0]["event-board"]
    assert len(board.rows) == real["board"].height
    key = ("domain", "task_kind", "horizon", "metric", "model_id")
    want = {tuple(r[k] for k in key): r for r in real["board"].iter_rows(named=True)}
    for r in board.rows:
        w = want[tuple(r[k] for k in key)]
        assert (r["score"], r["n_tasks"], r["rank"]) == (w["score"], w["n_tasks"], w["rank"])
    head = {r["model_id"]: r for r in blocks[0]["event-headline"].rows}
    assert head["baseline/hist-mean"]["mid_cap"] == "+0.124 #1" and head[R.MARKET]["event"] == "0 #1"
    # the other models' rows on the site after the 120-row submission: the same
    old = pl.DataFrame(board.rows).select(*key, "n_tasks", "score", "ci90_lo")
    new = pl.DataFrame([r for r in blocks[1]["event-board"].rows if r["model_id"] != "external/drift"])
    assert same_rows(new.select(old.columns), old, list(key), ["n_tasks"], ["score", "ci90_lo"])


def test_cluster_interval_equals_a_hand_bootstrap_over_cutoff_days():
    """Independent computation of the day-cluster interval: the same multinomial cluster counts
    (ranking.cluster_resamples, seed) applied to per-day sums by hand reproduce the stored percentiles."""
    rng = np.random.default_rng(11)
    tasks = [(f"large_cap/S{i % 6}/series/3d/{i:03d}", i // 6) for i in range(120)]  # 20 days x 6
    d = 1.0 + rng.random(120)
    m = d + np.repeat(rng.normal(-0.2, 0.3, 20), 6)
    g = R.with_clusters(pl.DataFrame(_rows(LV, tasks, d) + _rows("m/A", tasks, m)), _tasks(tasks))
    rows, _ = R.rank_board(g, "mape", LV, n_boot=400, seed=5)
    a = {r["model_id"]: r for r in rows}["m/A"]
    days = np.repeat(np.arange(20), 6)  # cluster codes in sorted day order
    K = RK.cluster_resamples(20, 400, 5)
    s_ref = np.bincount(days, weights=d)
    s_exc = np.bincount(days, weights=m - d)
    n = np.bincount(days).astype(float)
    skill = -(K @ s_exc / (K @ n)) / (K @ s_ref / (K @ n))
    lo, hi = np.percentile(skill, [5, 95])
    assert a["score"] == pytest.approx(-(m - d).mean() / d.mean(), rel=1e-12)
    assert (a["ci90_lo"], a["ci90_hi"]) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
    assert a["p_better"] == pytest.approx(np.mean(skill > 0))


def test_interval_metrics_take_the_first_statsforecast_reference_and_a_submission_never_becomes_it():
    crps_ets = D * 0.5
    rows = _rows(LV, TASKS, D)  # the last value: MAPE only
    rows += _rows("baseline/auto-ets", TASKS, crps_ets, metric="crps")
    rows += _rows("external/q", TASKS, crps_ets * 0.8, metric="crps")
    f = R.rankings_frame(pl.DataFrame(rows), _tasks(TASKS), available_at=NOW, n_boot=50)
    b = _board(f, metric="crps")
    assert {r["reference_model_id"] for r in b.values()} == {"baseline/auto-ets"}
    assert b["external/q"]["score"] == pytest.approx(0.2) and b["external/q"]["rank"] == 1
    # without any statsforecast model the board keeps the last value as its reference and says why unranked
    only = R.rankings_frame(
        pl.DataFrame(rows[len(TASKS) * 2 :] + rows[: len(TASKS)]), _tasks(TASKS), available_at=NOW, n_boot=50
    )
    q = _board(only, metric="crps")["external/q"]
    assert q["reference_model_id"] == LV and not q["ranked"] and "has 0 task(s)" in q["ranked_note"]
    assert q["n_tasks"] == 60 and q["own_value"] == pytest.approx(
        (crps_ets * 0.8).mean()
    )  # listed with its n


def test_discarded_model_is_listed_with_its_invalid_share_not_ranked_and_stale_prices_are_counted():
    from leaf_live.event.agents.forecasters import discard_report

    qs = [f"q{i:02d}" for i in range(25)]
    tids = [(f"event/{q}/10%", 0) for q in qs]
    rng = np.random.default_rng(3)
    market = 0.15 + 0.1 * rng.random(25)
    rows = []
    for model, v in (
        (R.MARKET, market),
        ("llm/good", market - 0.05),
        ("llm/bad", market - 0.10),  # the best Brier, but 12 of 30 outputs invalid: discarded
        ("llm/edge", market + 0.02),  # exactly 1/3 invalid: kept (the rule is "more than a third")
    ):
        for r in _rows(model, tids, v, metric="brier", kind="event", domain="event"):
            rows.append({**r, "horizon": "10%", "target_id": r["task_id"].split("/")[1]})
    scores = pl.DataFrame(rows)
    trials = pl.DataFrame(
        {
            "model_id": ["llm/good"] * 30 + ["llm/bad"] * 30 + ["llm/edge"] * 30,
            "valid": [True] * 30 + [False] * 12 + [True] * 18 + [False] * 10 + [True] * 20,
        }
    )
    rep = discard_report(trials)
    # 10 of the 25 market prices older than a week at the cutoff
    tasks = pl.DataFrame(
        {
            "task_id": [t for t, _ in tids],
            "cutoff": [T0] * 25,
            "last_value_age_days": [30.0] * 10 + [7.0] * 5 + [0.5] * 10,
        },
        schema={"task_id": pl.Utf8, "cutoff": pl.Datetime("us", "UTC"), "last_value_age_days": pl.Float64},
    )
    f = R.rankings_frame(scores, tasks, available_at=NOW, n_boot=50, discards=rep)
    b = _board(f, horizon="10%", metric="brier")
    bad = b["llm/bad"]
    assert (bad["discarded"], bad["ranked"], bad["rank"], bad["score"]) == (True, False, None, None)
    assert bad["invalid_share"] == pytest.approx(0.4) and bad["n_tasks"] == 25
    assert bad["own_value"] == pytest.approx(float(np.mean(market - 0.10)))
    assert not b["llm/edge"]["discarded"] and b["llm/edge"]["ranked"]
    assert b["llm/edge"]["invalid_share"] == pytest.approx(1 / 3)
    assert b["llm/good"]["rank"] == 1 and b[R.MARKET]["invalid_share"] is None
    # Brier skill vs the market on every task: 1 - mean(good) / mean(market)
    assert b["llm/good"]["score"] == pytest.approx(1 - np.mean(market - 0.05) / np.mean(market))
    assert {r["reference_stale_n"] for r in b.values()} == {10}  # 7.0 days is not older than 7
    # taking the discarded model off changes no other row
    without = R.rankings_frame(
        scores.filter(pl.col("model_id") != "llm/bad"), tasks, available_at=NOW, n_boot=50, discards=rep
    )
    keep = f.filter(pl.col("model_id") != "llm/bad")
    assert same_rows(keep, without, ["horizon", "model_id"], ["rank", "n_tasks"], ["score", "ci90_lo"])
    text = R.render_event_board(f.filter(pl.col("horizon") == "10%"), width=200)
    assert "disc." in text and "llm/bad (40.0% invalid)" in text
    assert "10 of the 25 reference prices are older than 7 days" in text
    assert "question tasks without a market price" not in text  # every task has the market's price here
    h = R.render_headline(f, width=200)
    assert "disc. n=25" in h
