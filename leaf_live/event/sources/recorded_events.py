"""Recorded event transcripts: the SEER case ``Stock-Basket50-2026-03-25`` (snapshot
``leaf/events/seer/``, PROVENANCE.md there) read into ``retrieved_events`` / ``fact_checked_events`` rows
(retriever ``recorded/seer``) and checked against our prices and labels.

The file is the full prompt of one forecasting day (cutoff 2026-03-25) of SEER's selective stock task: 50
stock blocks, each with 15 closes (the NYSE sessions 2026-03-05..03-25, oldest first, the last = the cutoff
close) and its events ``N. YYYY-MM-DD: text`` that passed LEAF's multi-agent fact-check (assets/cases/README
of BennyTMT/SEER), then the realised next-day 5-class labels. Parsing follows PROVENANCE.md: block headers
``^(\\d+)\\. Stock: (\\S+)$`` before the event pattern ``^(\\d+)\\. (\\d{4}-\\d\\d-\\d\\d): (.*)$``; citation
markers such as ``[2, 7]`` or ``[3], [6]`` are removed with the tested pattern :data:`CITATION_MARKERS`;
weekend dates are kept and flagged. A structural defect (block numbering, event numbering, dates out of
order, a missing label) raises :class:`~leaf_live.core.sources.SourceError` naming the line.

Point in time: the events were the context of a forecast issued at the cutoff, so their ``available_at`` is
the cutoff session close (16:00 New York, 2026-03-25 = 20:00 UTC); their dates are all on or before the
cutoff day (checked on import). The SEER verdicts themselves are not in the file, so the rows are
``check_mode = 'recorded'`` (kept as the source kept them) and no ``fact_checks`` rows are made; our own
dual checkers can be run on them like on any retrieved event (:mod:`leaf_live.event.agents.factcheck`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core.sources import SourceError, display_path
from leaf_live.core.storage import conform, empty_frame
from leaf_live.event import catalog
from leaf_live.event.tasks import market_tasks

SEER_FILE = "leaf/events/seer/Stock-Basket50-2026-03-25.txt"
CASE_NAME = "seer/Stock-Basket50-2026-03-25"
RETRIEVER = "recorded/seer"
CITATION_MARKERS = re.compile(r"\s*\[\d+(?:,\s*\d+)*\](?:,?\s*\[\d+(?:,\s*\d+)*\])*")
_BLOCK = re.compile(r"^(\d+)\. Stock: (\S+)$")
_EVENT = re.compile(r"^(\d+)\. (\d{4}-\d\d-\d\d): (.*)$")
_COMPANY = re.compile(r"^Company: (.*) \((\S+)\)$")
_WINDOW = re.compile(r"^History Window: (\d{4}-\d\d-\d\d) -> (\d{4}-\d\d-\d\d) \(cutoff (\d{4}-\d\d-\d\d)\)$")
_CLOSES = re.compile(r"^Recent Close Prices \((\d+) trading days\): (.*)$")
_LABEL_PAIR = re.compile(r"^(\S+) (Strong Up|Up|Neutral|Down|Strong Down)$")
NY = ZoneInfo("America/New_York")


@dataclass
class StockBlock:
    ticker: str
    company: str
    window: tuple[date, date]
    closes: list[float]
    events: list[tuple[int, date, str, int]] = field(default_factory=list)  # (n, date, raw text, file line)


@dataclass
class SeerCase:
    """A parsed SEER case: cutoff day, the stock blocks in file order and the realised labels."""

    file: str
    cutoff: date
    blocks: list[StockBlock]
    labels: dict[str, str]
    picks: list[dict] = field(default_factory=list)  # the model's answer: {"ticker", "prediction", "reason"}
    picks_line: int = 0  # 1-based line of the answer's <predictions> tag

    @property
    def cutoff_at(self) -> datetime:
        """The forecast instant: the cutoff day's session close, 16:00 New York, in UTC."""
        return datetime.combine(self.cutoff, time(16), tzinfo=NY).astimezone(ZoneInfo("UTC"))

    @property
    def tickers(self) -> list[str]:
        return [b.ticker for b in self.blocks]


def strip_citation_markers(text: str) -> str:
    """Remove source-number markers (``[9]``, ``[2, 7, 9]``, ``[3], [6]``, ``[2][22]``) and the space before
    them."""
    return CITATION_MARKERS.sub("", text).strip()


def parse_seer_case(text: str, *, file: str = SEER_FILE) -> SeerCase:
    """Parse the SEER transcript (module doc). Raises :class:`SourceError` naming the line on a structural
    defect."""
    lines = text.split("\n")

    def err(msg: str, i: int, fld: str, value: object) -> SourceError:
        return SourceError(msg, file=file, row=i, field=fld, value=value)  # row = 1-based line number

    cutoff = None
    for ln in lines:
        m = re.match(r"^\*\*Cutoff Date:\*\* (\d{4}-\d\d-\d\d)$", ln.strip())
        if m:
            cutoff = date.fromisoformat(m.group(1))
            break
    if cutoff is None:
        raise err("no '**Cutoff Date:** YYYY-MM-DD' line", 0, "cutoff", None)
    blocks: list[StockBlock] = []
    cur: StockBlock | None = None
    in_events = False
    label_line = None
    for i, ln in enumerate(lines, 1):
        if ln.startswith("**DIRECTIVE:**"):
            cur, in_events = None, False
            continue
        m = _BLOCK.match(ln)
        if m:
            if int(m.group(1)) != len(blocks) + 1:
                raise err(f"stock block numbered {m.group(1)}, expected {len(blocks) + 1}", i, "block", ln)
            cur = StockBlock(m.group(2), m.group(2), (cutoff, cutoff), [])
            blocks.append(cur)
            in_events = False
            continue
        if cur is not None:
            if mc := _COMPANY.match(ln):
                cur.company = mc.group(1)
            elif mw := _WINDOW.match(ln):
                cur.window = (date.fromisoformat(mw.group(1)), date.fromisoformat(mw.group(2)))
            elif mp := _CLOSES.match(ln):
                try:
                    cur.closes = [float(x) for x in mp.group(2).split(", ")]
                except ValueError:
                    raise err(
                        "close prices are not comma-separated numbers", i, "closes", mp.group(2)[:60]
                    ) from None
            elif ln == "Key Events:":
                in_events = True
            elif in_events and (me := _EVENT.match(ln)):
                n, d = int(me.group(1)), date.fromisoformat(me.group(2))
                if n != len(cur.events) + 1:
                    raise err(
                        f"{cur.ticker} event numbered {n}, expected {len(cur.events) + 1}",
                        i,
                        "event",
                        ln[:60],
                    )
                if cur.events and d < cur.events[-1][1]:
                    raise err(f"{cur.ticker} event dates out of order", i, "date", me.group(2))
                cur.events.append((n, d, me.group(3), i))
            elif in_events and ln.strip():
                raise err(
                    f"{cur.ticker}: line in the event list is not 'N. YYYY-MM-DD: text'", i, "event", ln[:60]
                )
        pairs = ln.split(", ")
        if len(pairs) >= 10 and all(_LABEL_PAIR.match(p) for p in pairs):
            label_line = (i, pairs)
    if not blocks:
        raise err("no stock blocks", 0, "block", None)
    if label_line is None:
        raise err("no line of 'TICKER Label' pairs (section [4])", 0, "labels", None)
    labels = {}
    for p in label_line[1]:
        t, lab = _LABEL_PAIR.match(p).groups()  # type: ignore[union-attr]
        labels[t] = lab
    missing = [b.ticker for b in blocks if b.ticker not in labels]
    if missing:
        raise err(f"tickers without a realised label: {missing[:5]}", label_line[0], "labels", missing[0])
    for b in blocks:
        if not b.closes:
            raise err(f"{b.ticker} has no close prices", 0, "closes", None)
    picks, picks_line = _parse_picks(lines, [b.ticker for b in blocks], err)
    return SeerCase(file, cutoff, blocks, labels, picks, picks_line)


def _parse_picks(lines: list[str], tickers: list[str], err) -> tuple[list[dict], int]:
    """The recorded answer: the JSON list between the LAST ``<predictions>`` / ``</predictions>`` pair (the
    system prompt's output template is an earlier pair) of section [3]. Each pick names a basket ticker and a
    3-way label (Up / Neutral / Down); a malformed answer raises naming the line."""
    opens = [i for i, ln in enumerate(lines) if ln.strip() == "<predictions>"]
    if not opens:
        return [], 0
    i0 = opens[-1]
    try:
        i1 = next(i for i in range(i0 + 1, len(lines)) if lines[i].strip() == "</predictions>")
    except StopIteration:
        raise err("<predictions> without </predictions>", i0 + 1, "predictions", None) from None
    try:
        got = json.loads("\n".join(lines[i0 + 1 : i1]))
    except json.JSONDecodeError as exc:
        raise err(
            f"the recorded answer is not JSON ({exc.msg})", i0 + 2 + exc.lineno - 1, "predictions", None
        ) from None
    if not isinstance(got, list):
        raise err("the recorded answer is not a JSON list", i0 + 2, "predictions", type(got).__name__)
    picks = []
    for k, p in enumerate(got):
        if (
            not isinstance(p, dict)
            or p.get("ticker") not in tickers
            or p.get("prediction") not in catalog.CLASSES_3
        ):
            raise err(
                "a pick needs a basket ticker and a prediction Up / Neutral / Down",
                i0 + 3 + k,
                "pick",
                str(p)[:60],
            )
        picks.append(
            {"ticker": p["ticker"], "prediction": p["prediction"], "reason": str(p.get("reason", ""))}
        )
    return picks, i0 + 1


def read_seer_case(snapshot_dir: str | Path) -> SeerCase:
    """Read and parse the transcript from the snapshot directory (``leaf/events/seer/...``)."""
    path = Path(snapshot_dir) / SEER_FILE
    if not path.is_file():
        raise SourceError("recorded SEER transcript not found", file=str(path))
    return parse_seer_case(path.read_text(encoding="utf-8"), file=display_path(path, Path(snapshot_dir)))


def event_id(retriever: str, target: str, event_date: date | None, description: str) -> str:
    """Stable id of an event: sha256 of retriever, target, date and whitespace-normalised lower-case text, 16
    hex."""
    norm = " ".join(description.lower().split())
    key = f"{retriever}|{target}|{event_date.isoformat() if event_date else ''}|{norm}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def partition_key(interval_start: date, target_id: str) -> str:
    """Partition of an event slice: ``<interval start day>|<target>`` (day or week x target)."""
    return f"{interval_start.isoformat()}|{target_id}"


def seer_events(case: SeerCase) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``retrieved_events`` and ``fact_checked_events`` rows of the case (module doc): one per event line, the
    interval = the block's history window, domain ``large_cap`` (all 50 are large caps; 30 are App. C.2.1's).

    Raises :class:`SourceError` when an event is dated after the cutoff day. Two events with the same id (an
    exact repeat within a stock, PROVENANCE: 2) keep the first occurrence."""
    rows, checked = [], []
    seen: set[str] = set()
    at = case.cutoff_at
    for b in case.blocks:
        pk = partition_key(b.window[0], b.ticker)
        for n, d, raw, line in b.events:
            if d > case.cutoff:
                raise SourceError(
                    f"{b.ticker} event dated after the cutoff {case.cutoff}",
                    file=case.file,
                    row=line,
                    field="date",
                    value=d.isoformat(),
                )
            text = strip_citation_markers(raw)
            eid = event_id(RETRIEVER, b.ticker, d, text)
            if eid in seen:
                continue
            seen.add(eid)
            wk = d.weekday() >= 5
            rows.append(
                {
                    "partition_key": pk,
                    "event_id": eid,
                    "retriever": RETRIEVER,
                    "backend": "recorded",
                    "domain": "large_cap",
                    "target_id": b.ticker,
                    "interval_start": b.window[0],
                    "interval_end": b.window[1],
                    "round": 1,
                    "item": n,
                    "event_date": d,
                    "description": text,
                    "causality": None,
                    "sentiment": None,
                    "impact_type": None,
                    "sources": json.dumps([f"{case.file}#L{line}"]),
                    "citations": "[]",
                    "weekend": wk,
                    "call_id": None,
                    "valid": True,
                    "invalid_reason": None,
                    "available_at": at,
                }
            )
            checked.append(
                {
                    "partition_key": pk,
                    "event_id": eid,
                    "retriever": RETRIEVER,
                    "domain": "large_cap",
                    "target_id": b.ticker,
                    "event_date": d,
                    "claimed_date": d,
                    "description": text,
                    "sentiment": None,
                    "impact_type": None,
                    "weekend": wk,
                    "check_mode": "recorded",
                    "checker_a": None,
                    "checker_b": None,
                    "cutoff": at,
                    "kept": True,
                    "drop_reason": None,
                    "available_at": at,
                }
            )
    re_ = pl.DataFrame(rows, schema=empty_frame("retrieved_events").schema)
    fc = pl.DataFrame(checked, schema=empty_frame("fact_checked_events").schema)
    return conform("retrieved_events", re_), conform("fact_checked_events", fc)


def seer_documents(case: SeerCase) -> pl.DataFrame:
    """The case's event lines as recorded documents for the offline search backend
    (:class:`leaf_live.event.docstore.DocumentStore` columns): ``doc_id`` = the recorded event id, ``text``
    without citation markers, ``title`` = company, ``target_id`` = ticker, ``url`` = ``<file>#L<line>``, and
    ``published_at`` = the end of the event's day (24:00 UTC), the earliest instant we may assume it public:
    the file itself only proves the events were known by the case's cutoff. Exact repeats keep the first
    line."""
    rows, seen = [], set()
    for b in case.blocks:
        for _, d, raw, line in b.events:
            text = strip_citation_markers(raw)
            eid = event_id(RETRIEVER, b.ticker, d, text)
            if eid in seen:
                continue
            seen.add(eid)
            rows.append(
                {
                    "doc_id": eid,
                    "text": text,
                    "title": b.company,
                    "target_id": b.ticker,
                    "url": f"{case.file}#L{line}",
                    "published_at": datetime.combine(d + timedelta(days=1), time(0), tzinfo=ZoneInfo("UTC")),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "doc_id": pl.Utf8,
            "text": pl.Utf8,
            "title": pl.Utf8,
            "target_id": pl.Utf8,
            "url": pl.Utf8,
            "published_at": pl.Datetime("us", "UTC"),
        },
    )


def case_checks(case: SeerCase, prices: pl.DataFrame, *, rel_tol: float = 0.02) -> pl.DataFrame:
    """``recorded_case_checks`` rows: each stock's file closes against ``market_prices`` (the sessions of its
    history window) and the file's realised label against the label our tasks compute: the ``trend5`` task at
    1 session from :func:`leaf_live.event.tasks.market_tasks` at the case's cutoff day (App. C.1 large-cap
    thresholds +/-0.5% / +/-2% on the next-session rate of change).

    A differing label is explained in ``note`` (distance of our ROC from the nearest class threshold, or no
    task because our data lacks the sessions). Raises ``ValueError`` when ``prices`` lacks the needed columns.
    """
    for c in ("symbol", "session_date", "close", "available_at"):
        if c not in prices.columns:
            raise ValueError(f"market_prices frame lacks column {c!r}")
    th = catalog.TREND_THRESHOLDS["large_cap"]
    # cutoffs every CUTOFF_STEP_DAYS from the span start: start 20 days before so the case's day is a cutoff
    # with the 14-session look-back inside the span
    start = case.cutoff - timedelta(days=10 * catalog.CUTOFF_STEP_DAYS)
    ts = market_tasks(
        prices,
        "large_cap",
        case.tickers,
        start,
        case.cutoff + timedelta(days=10),
        series_horizons=(),
        trend_horizons=(1,),
    )
    lab = (
        ts.tasks.filter(
            pl.col("task_kind") == "trend5",
            pl.col("horizon") == "1d",
            pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date() == case.cutoff,
        )
        .select("task_id", "target_id")
        .join(ts.outcomes.select("task_id", "label", "change"), on="task_id")
    )
    ours = {r["target_id"]: r for r in lab.iter_rows(named=True)}
    out = []
    for b in case.blocks:
        win = prices.filter(pl.col("symbol") == b.ticker, pl.col("session_date").is_between(*b.window)).sort(
            "session_date"
        )
        closes = win["close"].to_list()
        our_close = float(closes[-1]) if win.height and win["session_date"][-1] == case.cutoff else None
        max_rel = (
            max(abs(f / o - 1) for f, o in zip(b.closes, closes)) if len(closes) == len(b.closes) else None
        )
        o = ours.get(b.ticker)
        our_label, our_roc = (o["label"], o["change"]) if o else (None, None)
        file_label = case.labels[b.ticker]
        agree = None if our_label is None else our_label == file_label
        note = None
        if our_label is None:
            note = "no 1-session trend task at the cutoff (our prices lack the look-back or the next session)"
        elif not agree:
            near = min(abs(abs(our_roc) - th.neutral), abs(abs(our_roc) - th.strong))
            note = f"our ROC {our_roc:+.4%} lies {near:.4%} from a class threshold"
        if max_rel is not None and max_rel > rel_tol:
            note = (note + "; " if note else "") + f"closes differ by up to {max_rel:.2%} (price basis)"
        out.append(
            {
                "partition_key": CASE_NAME,
                "case_name": CASE_NAME,
                "target_id": b.ticker,
                "cutoff_day": case.cutoff,
                "n_events": len(b.events),
                "file_close": b.closes[-1],
                "our_close": our_close,
                "close_rel_diff": (b.closes[-1] / our_close - 1) if our_close else None,
                "max_rel_diff": max_rel,
                "file_label": file_label,
                "our_label": our_label,
                "our_roc": our_roc,
                "agree": agree,
                "note": note,
                "available_at": case.cutoff_at,
            }
        )
    return conform(
        "recorded_case_checks", pl.DataFrame(out, schema=empty_frame("recorded_case_checks").schema)
    )


def selective_predictions(case: SeerCase, outcomes: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """``selective_predictions`` rows: one per pick of the recorded answer (model ``recorded/seer``), scored
    against OUR realised label of the stock's 1-session ``trend5`` task at the case's cutoff (a 3-way call is
    correct when it is a substring of the 5-class label, the file's own rule: "Down" matches "Strong Down"),
    with the task it answers. ``candidates`` = the basket's stocks with such a task (coverage = picks /
    candidates). ``tasks`` / ``outcomes``: ``forecast_tasks`` / ``task_outcomes`` rows; a pick whose stock has
    no task gets a null label (not counted correct)."""
    on_day = pl.col("cutoff").dt.convert_time_zone("America/New_York").dt.date() == case.cutoff
    t = tasks.filter(
        pl.col("domain") == "large_cap", pl.col("task_kind") == "trend5", pl.col("horizon") == "1d", on_day
    ).filter(pl.col("target_id").is_in(case.tickers))
    lab = dict(
        t.select("task_id", "target_id")
        .join(outcomes.select("task_id", "label"), on="task_id")
        .select("target_id", "label")
        .iter_rows()
    )
    ids = dict(t.select("target_id", "task_id").iter_rows())
    rows = []
    for p in case.picks:
        label = lab.get(p["ticker"])
        rows.append(
            {
                "partition_key": CASE_NAME,
                "case_name": CASE_NAME,
                "model_id": RETRIEVER,
                "cutoff_day": case.cutoff,
                "target_id": p["ticker"],
                "task_id": ids.get(p["ticker"]),
                "prediction": p["prediction"],
                "reason": p["reason"],
                "our_label": label,
                "file_label": case.labels.get(p["ticker"]),
                "correct": None if label is None else p["prediction"] in label,
                "candidates": len(lab),
                "source": f"{case.file}#L{case.picks_line}",
                "available_at": case.cutoff_at,
            }
        )
    return conform(
        "selective_predictions", pl.DataFrame(rows, schema=empty_frame("selective_predictions").schema)
    )


def selective_board(picks: pl.DataFrame) -> pl.DataFrame:
    """The selective-prediction board from ``selective_predictions`` rows: per model and case, picks,
    candidates, correct picks, precision (correct / picks, with the 95% Wilson interval), coverage (picks /
    candidates). A model that picked nothing has precision null and coverage 0."""
    out = []
    for (model, case), g in picks.group_by(["model_id", "case_name"], maintain_order=True):
        n, c = g.height, int(g["correct"].fill_null(False).sum())
        cand = int(g["candidates"].max())
        lo, hi = wilson_interval(c, n)
        out.append(
            {
                "model_id": model,
                "case_name": case,
                "picks": n,
                "candidates": cand,
                "correct": c,
                "precision": c / n if n else None,
                "precision_lo": lo,
                "precision_hi": hi,
                "coverage": n / cand if cand else None,
            }
        )
    return pl.DataFrame(out)


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> tuple[float | None, float | None]:
    """95% Wilson score interval of a proportion k/n (None, None when n = 0)."""
    if n == 0:
        return None, None
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / d
    return max(0.0, mid - half), min(1.0, mid + half)


__all__ = [
    "CASE_NAME",
    "CITATION_MARKERS",
    "RETRIEVER",
    "SEER_FILE",
    "SeerCase",
    "StockBlock",
    "case_checks",
    "event_id",
    "parse_seer_case",
    "partition_key",
    "read_seer_case",
    "seer_documents",
    "seer_events",
    "selective_board",
    "selective_predictions",
    "strip_citation_markers",
    "wilson_interval",
]
