"""Near-duplicate events: restatements of one fact merged into one representative, the merge recorded.

Retrieval rounds and overlapping intervals restate the same fact in new words (the SEER case has ~26 ADBE
items on one CEO change and 23 LIN items on one upgrade). LEAF §3.2 avoids duplication by showing each round
the events found so far; what still slips through is merged here, per target, before fact-checking:

* an event's content words are its lower-case word tokens of two or more characters minus English stop
  words (bm25s' list), with a crude plural fold (``upgrades`` -> ``upgrade``);
* similarity of two events = the overlap coefficient |A n B| / min(|A|, |B|) of their content-word sets
  (a short restatement inside a long one scores 1);
* events are visited in date order (then retrieval order); each is merged into the most similar earlier
  representative of the same target whose date is within ``max_days`` when that similarity is at least
  ``threshold``, else it becomes a representative itself. Merging only into representatives (not into
  merged events) keeps chains from drifting away from the first statement of the fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl
from bm25s.stopwords import STOPWORDS_EN

from leaf_live.core import pit
from leaf_live.core.storage import conform, empty_frame

DEFAULT_THRESHOLD = 0.6
DEFAULT_MAX_DAYS = 7
_WORD = re.compile(r"(?u)\b\w\w+\b")
_STOP = frozenset(STOPWORDS_EN)


def content_words(text: str) -> frozenset[str]:
    """Content-word set of an event text (module doc)."""
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """|A n B| / min(|A|, |B|); 0 when either set is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def find_merges(
    events: pl.DataFrame, *, threshold: float = DEFAULT_THRESHOLD, max_days: int = DEFAULT_MAX_DAYS
) -> pl.DataFrame:
    """``event_merges`` rows for the valid events of ``events`` (``retrieved_events`` rows; module doc rule).

    Returns one row per event merged away, with its representative, similarity and date gap. Raises
    ``ValueError`` for missing columns or thresholds outside (0, 1] / a negative ``max_days``."""
    pit.require_columns(
        events,
        ["partition_key", "event_id", "target_id", "event_date", "description", "valid", "available_at"],
        "retrieved_events",
    )
    if not (0 < threshold <= 1) or max_days < 0:
        raise ValueError(f"threshold={threshold} must be in (0, 1] and max_days={max_days} >= 0")
    rule = f"overlap>={threshold:g} within {max_days}d, into the earliest representative"
    ev = events.filter(
        pl.col("valid") & pl.col("event_date").is_not_null() & pl.col("description").is_not_null()
    )
    if "item" in ev.columns:
        ev = ev.sort("target_id", "event_date", "round", "item")
    else:
        ev = ev.sort("target_id", "event_date")
    rows = []
    for (_,), g in ev.group_by(["target_id"], maintain_order=True):
        reps: list[tuple[dict, frozenset[str]]] = []
        for r in g.iter_rows(named=True):
            words = content_words(r["description"])
            best, best_s = None, 0.0
            for rep, rw in reps:
                if abs((r["event_date"] - rep["event_date"]).days) > max_days:
                    continue
                s = overlap(words, rw)
                if s > best_s:
                    best, best_s = rep, s
            if best is not None and best_s >= threshold:
                rows.append(
                    {
                        "partition_key": r["partition_key"],
                        "event_id": r["event_id"],
                        "into_event_id": best["event_id"],
                        "target_id": r["target_id"],
                        "similarity": best_s,
                        "days_apart": abs((r["event_date"] - best["event_date"]).days),
                        "rule": rule,
                        "available_at": max(r["available_at"], best["available_at"]),
                    }
                )
            else:
                reps.append((r, words))
    return conform("event_merges", pl.DataFrame(rows, schema=empty_frame("event_merges").schema))


def representatives(events: pl.DataFrame, merges: pl.DataFrame) -> pl.DataFrame:
    """``events`` without the events merged away."""
    return events.join(merges.select("event_id"), on="event_id", how="anti")


def merge_counts(merges: pl.DataFrame, by: Sequence[str] = ("target_id",)) -> pl.DataFrame:
    """Merged-away events per group (default per target), most first."""
    return merges.group_by(list(by)).len().rename({"len": "n_merged"}).sort("n_merged", descending=True)


__all__ = [
    "DEFAULT_MAX_DAYS",
    "DEFAULT_THRESHOLD",
    "content_words",
    "find_merges",
    "merge_counts",
    "overlap",
    "representatives",
]
