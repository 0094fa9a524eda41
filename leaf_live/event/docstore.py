"""Offline document store: BM25 search (the ``bm25s`` library) over recorded documents, queried at a cutoff so
no document published after it can be returned.

The retrieval agent's second search backend (LEAF §3.2 uses Gemini grounded search; offline and in tests the
agent reads recorded documents instead). Each document has an id, a text, a ``published_at`` (tz-aware UTC:
when it became public) and optional title, url and target. :meth:`DocumentStore.search` ranks with BM25
(bm25s defaults: k1 1.5, b 0.75, English stop words) under a weight mask that zeroes every document with
``published_at > cutoff`` (and, with ``since``, before the interval), then drops zero scores, so a document
from after the cutoff is never returned however well it matches; the result is re-checked against the cutoff
before it is handed out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import bm25s
import numpy as np
import polars as pl

from leaf_live.core import pit


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    published_at: datetime
    title: str | None = None
    url: str | None = None
    target_id: str | None = None


class DocumentStore:
    """BM25 index over documents (module doc). Build once; search many times at different cutoffs.

    ``documents``: a frame with ``doc_id``, ``text``, ``published_at`` (tz-aware) and optionally ``title``,
    ``url``, ``target_id``. Raises ``ValueError`` for missing columns, duplicate ids, naive or null times."""

    def __init__(self, documents: pl.DataFrame) -> None:
        pit.require_columns(documents, ["doc_id", "text", "published_at"], "documents")
        dt = documents.schema["published_at"]
        if not isinstance(dt, pl.Datetime) or dt.time_zone is None:
            raise ValueError(f"documents.published_at must be a tz-aware timestamp, got {dt}")
        if documents["published_at"].null_count() or documents["text"].null_count():
            raise ValueError("documents: published_at and text must not be null")
        if documents["doc_id"].n_unique() != documents.height:
            dup = documents.group_by("doc_id").len().filter(pl.col("len") > 1)["doc_id"][0]
            raise ValueError(f"documents: doc_id {dup!r} appears more than once")
        for c in ("title", "url", "target_id"):
            if c not in documents.columns:
                documents = documents.with_columns(pl.lit(None, dtype=pl.Utf8).alias(c))
        self.docs = documents.with_columns(pl.col("published_at").dt.convert_time_zone("UTC"))
        self._times = self.docs["published_at"].to_list()
        self._targets = self.docs["target_id"].to_list()
        self._index = bm25s.BM25()
        corpus = [f"{t or ''} {x}" for t, x in zip(self.docs["title"], self.docs["text"])]
        self._index.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    def __len__(self) -> int:
        return self.docs.height

    def mask(
        self, cutoff: datetime, since: datetime | None = None, target_id: str | None = None
    ) -> np.ndarray:
        """1.0 for documents published in ``[since, cutoff]`` (and of ``target_id`` or untargeted), else
        0.0."""
        at = pit.to_utc(cutoff)
        lo = pit.to_utc(since) if since is not None else None
        return np.array(
            [
                float(t <= at and (lo is None or t >= lo) and (target_id is None or g in (None, target_id)))
                for t, g in zip(self._times, self._targets)
            ]
        )

    def search(
        self,
        query: str,
        cutoff: datetime,
        *,
        k: int = 5,
        since: datetime | None = None,
        target_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The ``k`` best documents for ``query`` published at or before ``cutoff`` (and at or after
        ``since``), best first: dicts with doc_id, title, url, text, published_at, score. Raises
        ``ValueError`` for a naive time; returns [] when nothing published by the cutoff matches."""
        m = self.mask(cutoff, since, target_id)
        if not m.any() or not query.strip():
            return []
        q = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not q.ids or not q.ids[0]:
            return []
        idx, scores = self._index.retrieve(q, k=min(k, len(self)), weight_mask=m, show_progress=False)
        out = []
        at = pit.to_utc(cutoff)
        for i, s in zip(idx[0], scores[0]):
            if s <= 0 or m[int(i)] == 0:
                continue
            row = self.docs.row(int(i), named=True)
            if row["published_at"] > at:  # the mask already excludes it; never hand out a later document
                raise AssertionError(f"document {row['doc_id']} published after the cutoff escaped the mask")
            out.append(
                {
                    **{c: row[c] for c in ("doc_id", "title", "url", "text", "published_at", "target_id")},
                    "score": float(s),
                }
            )
        return out


__all__ = ["Document", "DocumentStore"]
