"""Binary prediction-market questions with their YES-price paths and resolutions (LEAF §3.3, App. C.2.5:
Polymarket).

One interface, two transports (:class:`PredictionMarketSource`); both return :class:`MarketData`
(``prediction_markets`` rows and ``market_price_path`` rows):

* :class:`SnapshotPredictionMarkets` reads
  - ForecastBench question sets (``leaf/events/forecastbench/question_sets/<due>-{llm,human}.json.gz``,
    Polymarket questions only; combination questions are skipped): each set publishes the market price at
    its freeze time (``freeze_datetime_value``), so a question in several biweekly sets has a price at several
    dates (kind ``freeze``). ``available_at`` of such a price = the set's publication, 00:00 UTC on its
    forecast due date (ForecastBench releases sets then); ``observed_at`` = the freeze time.
  - ForecastBench resolution sets (``resolution_sets/<due>_resolution_set.json.gz``): a resolved 0/1 outcome
    becomes the terminal path row (kind ``resolution``) at the end of the resolution date (next day 00:00
    UTC), also its ``available_at``. Two sets giving different outcomes for one question is an error.
  - the Polymarket FOMC trade series (``leaf/polymarket/fomc_masterthesis``): ``fomc_tokens.csv`` maps each
  CLOB
    token to its market (up25 / noChange / ...) and side; a YES trade at p gives price p, a NO trade 1 - p
    (kind ``trade``, available at the trade time; the last trade of a second wins). The market opens at its
    first recorded trade (the ``markets/*.json`` start dates are placeholders such as 2021-01-01 for most
    events) or at the json start date where no trade is recorded; it resolves at 14:00 New York on the json
    end date (the FOMC statement). ``outcomeYes`` within 0.001 of 0 or 1 is the resolution; other values are
    prices seen while the market was open (unresolved).
* :class:`LivePolymarket` asks the Gamma API for markets (``GET /markets?slug=...`` / ``?id=...``) and the
  CLOB for the YES token's price history (``GET /prices-history?market=<token>&interval=max&fidelity=<min>``);
  base URLs are constructor arguments. :func:`parse_gamma_markets` also reads recorded Gamma ``/markets``
  objects.

Categories (C.2.5: economy & business, politics & world affairs, tech & AI) come from
:func:`categorize`, an ordered keyword rule on the question text; sports, entertainment and crypto-price
questions are ``other`` and get no LEAF task.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo

import polars as pl

from leaf_live.core.sources import SourceError, cached_parse, display_path, http_get_text, parse_number
from leaf_live.core.storage import conform, empty_frame

NY = ZoneInfo("America/New_York")
FB_DIR = "leaf/events/forecastbench"
FOMC_DIR = "leaf/polymarket/fomc_masterthesis"
GAMMA_URL = "https://gamma-api.polymarket.com"
CLOB_URL = "https://clob.polymarket.com"
FOMC_PLACEHOLDER_START = "2021-01-01T17:00:00Z"
FOMC_DECISION_TIME = time(14, 0)


@dataclass(frozen=True)
class MarketData:
    questions: pl.DataFrame  # prediction_markets rows
    path: pl.DataFrame  # market_price_path rows


class PredictionMarketSource(Protocol):
    """Questions and price paths as ``prediction_markets`` / ``market_price_path`` rows."""

    def load(self) -> MarketData: ...


# ------------------------------------------------------------------------------------------------
# categories (C.2.5)
# ------------------------------------------------------------------------------------------------

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "other",
        re.compile(
            r"\b(NBA|NFL|NHL|MLB|WNBA|FIFA|UEFA|Champions League|Premier League|La Liga|Serie"
            r" A|Bundesliga|Super Bowl|"
            r"World Cup|World Series|Stanley Cup|Grand Slam|French Open|Wimbledon|US Open|Australian"
            r" Open|Grand Prix|F1|"
            r"Formula 1|MVP|Heisman|Ballon d'Or|Olympics?|UFC|boxing|fight|Eurovision|Oscars?|Academy"
            r" Awards?|Best Picture|"
            r"Grammys?|Emmys?|Golden Globes?|Spotify|Billboard|album|song|box office|movie|film|Netflix"
            r" top|poker|chess|"
            r"Masters|PGA|golf|tennis|cricket|esports|Counter-Strike|League of Legends|Conference"
            r" Finals|Division|"
            r"Bitcoin|BTC|Ethereum|ETH|Solana|SOL|XRP|Dogecoin|crypto|memecoin|token|FDV|airdrop|Pump\.fun|"
            r"Taylor Swift|Drake|Kanye|MrBeast|YouTube|Time Person of the Year|Person of the Year)\b",
            re.I,
        ),
    ),
    (
        "economy_business",
        re.compile(
            r"\b(Fed|FOMC|Federal Reserve|interest rates?|bps|rate cut|rate"
            r" hike|inflation|CPI|GDP|recession|unemployment|"
            r"jobs report|payrolls|tariffs?|Treasury|yields?|S&P|Nasdaq|Dow|stocks?|IPO|market"
            r" cap|earnings|revenue|"
            r"acquire|acquisition|merger|bankrupt\w*|layoffs?|Kalshi|Polymarket|prediction"
            r" market|oil|gold|price of|"
            r"Powell|ECB|Bank of England|BoJ|central bank|debt ceiling|budget|shutdown|DOGE|stimulus|trade"
            r" deal)\b",
            re.I,
        ),
    ),
    (
        "tech_ai",
        re.compile(
            r"\b(AI|A\.I\.|artificial"
            r" intelligence|OpenAI|GPT[-\w.]*|ChatGPT|Gemini|Claude|Anthropic|xAI|Grok|DeepSeek|"
            r"Llama|Mistral|LLM|AGI|model|chatbot|Apple|iPhone|Google|Alphabet|Microsoft|Nvidia|Tesla|robotaxi|"
            r"Optimus|SpaceX|Starship|Neuralink|TikTok|Meta|Amazon|chip|semiconductor|quantum|GTA VI|"
            r"tweet|X post|app store)\b",
            re.I,
        ),
    ),
    (
        "politics_world",
        re.compile(
            r"\b(elections?|elected|nominee|nomination|primary|president\w*|prime"
            r" minister|PM|parliament|congress|senate|"
            r"house|governor|mayor|vote|referendum|impeach\w*|resign\w*|out"
            r" as|cabinet|minister|chancellor|pope|leader|"
            r"leadership|coup|war|ceasefire|invade|invasion|strike|military|nuclear|sanctions?|NATO|UN|treaty|peace|"
            r"Ukraine|Russia|Putin|Zelensky\w*|Israel|Gaza|Hamas|Hezbollah|Iran|China|Taiwan|Xi|North"
            r" Korea|Venezuela|"
            r"Maduro|Trump|Biden|Harris|Vance|Newsom|Supreme"
            r" Court|dissolved|government|Hormuz|regime|deport\w*)\b",
            re.I,
        ),
    ),
)


def categorize(question: str) -> str:
    """LEAF event category of a question (C.2.5): the first rule of :data:`_RULES` whose keywords occur in
    the text (sports / entertainment / crypto first, as ``other``), else ``other``."""
    for cat, pat in _RULES:
        if pat.search(question or ""):
            return cat
    return "other"


# ------------------------------------------------------------------------------------------------
# ForecastBench
# ------------------------------------------------------------------------------------------------


def _json_file(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _utc_instant(text: str | None, *, file: str, row: int, field: str) -> datetime | None:
    """ISO date or datetime (UTC when no offset is given); ``N/A``/empty -> None."""
    s = (text or "").strip()
    if not s or s.upper() == "N/A":
        return None
    try:
        d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(
            "expected an ISO date or datetime", file=file, row=row, field=field, value=text
        ) from None
    return (d if d.tzinfo else d.replace(tzinfo=UTC)).astimezone(UTC)


def _due_instant(due: str, file: str) -> datetime:
    try:
        return datetime.combine(date.fromisoformat(due), time(0), tzinfo=UTC)
    except (TypeError, ValueError):
        raise SourceError(
            "expected forecast_due_date YYYY-MM-DD", file=file, row=0, field="forecast_due_date", value=due
        ) from None


def parse_question_set(doc: Any, *, file: str) -> tuple[list[dict], list[dict]]:
    """Polymarket questions and freeze prices of one ForecastBench question set (a parsed JSON document).

    Returns ``(questions, prices)`` as lists of row dicts. Raises :class:`SourceError` naming the file, the
    1-based question index and the field for a missing key, a bad date, or a freeze value outside [0, 1]."""
    if not isinstance(doc, dict) or "questions" not in doc:
        raise SourceError(
            "not a ForecastBench question set (no 'questions')", file=file, row=0, field="questions"
        )
    published = _due_instant(doc.get("forecast_due_date"), file)
    questions, prices = [], []
    for i, q in enumerate(doc["questions"], start=1):
        if q.get("source") != "polymarket" or not isinstance(q.get("id"), str):
            continue
        for key in ("id", "question", "freeze_datetime", "freeze_datetime_value"):
            if key not in q:
                raise SourceError("missing key", file=file, row=i, field=key)
        qid = q["id"]
        questions.append(
            {
                "question_id": qid,
                "source": "forecastbench",
                "question": q["question"],
                "background": q.get("background"),
                "url": q.get("url"),
                "open_at": _utc_instant(
                    q.get("market_info_open_datetime"), file=file, row=i, field="market_info_open_datetime"
                ),
                "close_at": _utc_instant(
                    q.get("market_info_close_datetime"), file=file, row=i, field="market_info_close_datetime"
                ),
                "source_file": file,
                "available_at": published,
            }
        )
        p = parse_number(
            str(q["freeze_datetime_value"]), file=file, row=i, field="freeze_datetime_value", required=True
        )
        if not 0.0 <= p <= 1.0:
            raise SourceError(
                "market price outside [0, 1]",
                file=file,
                row=i,
                field="freeze_datetime_value",
                value=q["freeze_datetime_value"],
            )
        prices.append(
            {
                "question_id": qid,
                "observed_at": _utc_instant(q["freeze_datetime"], file=file, row=i, field="freeze_datetime"),
                "price": p,
                "kind": "freeze",
                "source_file": file,
                "source_row": i,
                "available_at": published,
            }
        )
    return questions, prices


def parse_resolution_set(doc: Any, *, file: str) -> list[dict]:
    """Resolved 0/1 Polymarket outcomes of one ForecastBench resolution set, as ``resolution`` path rows at
    the end of the resolution date. Raises :class:`SourceError` (file, row, field) for a bad date."""
    if not isinstance(doc, dict) or "resolutions" not in doc:
        raise SourceError(
            "not a ForecastBench resolution set (no 'resolutions')", file=file, row=0, field="resolutions"
        )
    out = []
    for i, r in enumerate(doc["resolutions"], start=1):
        if r.get("source") != "polymarket" or not isinstance(r.get("id"), str) or not r.get("resolved"):
            continue
        v = r.get("resolved_to")
        if v not in (0, 1, 0.0, 1.0):
            continue  # a resolved market question carries 0/1; anything else is not a binary outcome
        try:
            d = date.fromisoformat(str(r.get("resolution_date")))
        except ValueError:
            raise SourceError(
                "expected resolution_date YYYY-MM-DD",
                file=file,
                row=i,
                field="resolution_date",
                value=r.get("resolution_date"),
            ) from None
        at = datetime.combine(d + timedelta(days=1), time(0), tzinfo=UTC)
        out.append(
            {
                "question_id": r["id"],
                "observed_at": at,
                "price": float(v),
                "kind": "resolution",
                "source_file": file,
                "source_row": i,
                "available_at": at,
            }
        )
    return out


# ------------------------------------------------------------------------------------------------
# FOMC trade series
# ------------------------------------------------------------------------------------------------


def parse_fomc(
    tokens_text: str,
    markets: dict[str, Any],
    trades: dict[str, str],
    *,
    tokens_file: str,
    market_files: dict[str, str],
) -> tuple[list[dict], list[dict]]:
    """Questions and path rows of the FOMC markets: ``tokens_text`` is fomc_tokens.csv, ``markets`` maps event
    slug -> parsed markets/*.json, ``trades`` maps trade file name -> CSV text. Raises :class:`SourceError`
    (file, row, field, value) for a bad token row, trade row or price."""
    token_map: dict[str, tuple[str, bool]] = {}
    questions: dict[str, dict] = {}
    outcomes: dict[str, float] = {}
    reader = csv.DictReader(io.StringIO(tokens_text))
    for col in ("event_slug", "slug", "marketTitle", "Yes", "No", "outcomeYes"):
        if col not in (reader.fieldnames or []):
            raise SourceError(
                "missing column", file=tokens_file, row=0, field=col, value=",".join(reader.fieldnames or [])
            )
    for i, r in enumerate(reader, start=1):
        qid = f"{r['event_slug']}/{r['marketTitle']}"
        if not r["Yes"].strip().isdigit() or not r["No"].strip().isdigit():
            raise SourceError(
                "token id must be a decimal integer",
                file=tokens_file,
                row=i,
                field="Yes/No",
                value=f"{r['Yes']}/{r['No']}",
            )
        token_map[r["Yes"].strip()] = (qid, True)
        token_map[r["No"].strip()] = (qid, False)
        y = parse_number(r["outcomeYes"], file=tokens_file, row=i, field="outcomeYes", required=True)
        if not 0.0 <= y <= 1.0:
            raise SourceError(
                "outcome price outside [0, 1]",
                file=tokens_file,
                row=i,
                field="outcomeYes",
                value=r["outcomeYes"],
            )
        if min(abs(y), abs(1 - y)) < 1e-3:
            outcomes[qid] = float(round(y))
        questions[qid] = {
            "question_id": qid,
            "source": "polymarket_fomc",
            "question": r["slug"].replace("-", " ").strip().capitalize() + "?",
            "background": f"Polymarket event {r['event_slug']}, market {r['marketTitle']}",
            "url": f"https://polymarket.com/event/{r['event_slug']}",
            "event_slug": r["event_slug"],
            "source_file": tokens_file,
        }
    path: list[dict] = []
    first_trade: dict[str, datetime] = {}
    for name, text in sorted(trades.items()):
        rd = csv.DictReader(io.StringIO(text))
        for col in ("timestamp", "asset", "price"):
            if col not in (rd.fieldnames or []):
                raise SourceError(
                    "missing column", file=name, row=0, field=col, value=",".join(rd.fieldnames or [])
                )
        for i, r in enumerate(rd, start=1):
            tok = token_map.get(r["asset"].strip())
            if tok is None:
                continue  # a token of a market outside the token map
            try:
                ts = datetime.fromtimestamp(int(r["timestamp"]), tz=UTC)
            except (ValueError, OverflowError, OSError):
                raise SourceError(
                    "expected unix seconds", file=name, row=i, field="timestamp", value=r["timestamp"]
                ) from None
            p = parse_number(r["price"], file=name, row=i, field="price", required=True)
            if not 0.0 <= p <= 1.0:
                raise SourceError("price outside [0, 1]", file=name, row=i, field="price", value=r["price"])
            qid, yes = tok
            ev = questions[qid]["event_slug"]
            first_trade[ev] = min(first_trade.get(ev, ts), ts)
            path.append(
                {
                    "question_id": qid,
                    "observed_at": ts,
                    "price": p if yes else 1.0 - p,
                    "kind": "trade",
                    "source_file": name,
                    "source_row": i,
                    "available_at": ts,
                }
            )
    out_q = []
    for qid, q in questions.items():
        ev = q.pop("event_slug")
        m = markets.get(ev) or {}
        mfile = market_files.get(ev, q["source_file"])
        start = m.get("startDate")
        open_at = first_trade.get(ev) or (
            None
            if not start or start == FOMC_PLACEHOLDER_START
            else _utc_instant(start, file=mfile, row=0, field="startDate")
        )
        end = _utc_instant(m.get("endDate"), file=mfile, row=0, field="endDate") if m.get("endDate") else None
        resolve_at = (
            datetime.combine(end.date(), FOMC_DECISION_TIME, tzinfo=NY).astimezone(UTC)
            if end is not None
            else None
        )
        title = m.get("title")
        if title:
            q["background"] = f"{title}: {q['background']}"
        out_q.append(
            {
                **q,
                "open_at": open_at,
                "close_at": end,
                "resolve_at": resolve_at if qid in outcomes else None,
                "available_at": open_at or resolve_at,
            }
        )
        if qid in outcomes and resolve_at is not None:
            path.append(
                {
                    "question_id": qid,
                    "observed_at": resolve_at,
                    "price": outcomes[qid],
                    "kind": "resolution",
                    "source_file": q["source_file"],
                    "source_row": 0,
                    "available_at": resolve_at,
                }
            )
    return out_q, path


# ------------------------------------------------------------------------------------------------
# frames
# ------------------------------------------------------------------------------------------------


def _path_frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return empty_frame("market_price_path")
    f = pl.DataFrame(
        rows,
        schema={
            "question_id": pl.Utf8,
            "observed_at": pl.Datetime("us", "UTC"),
            "price": pl.Float64,
            "kind": pl.Utf8,
            "source_file": pl.Utf8,
            "source_row": pl.Int32,
            "available_at": pl.Datetime("us", "UTC"),
        },
    )
    # one price per (question, instant, kind): the last row in source order (trades within one second)
    f = f.unique(["question_id", "observed_at", "kind"], keep="last", maintain_order=True)
    f = f.with_columns(pl.col("question_id").alias("partition_key")).sort(
        "question_id", "observed_at", "kind"
    )
    return conform("market_price_path", f.select(empty_frame("market_price_path").columns))


def _question_frame(rows: list[dict], path: pl.DataFrame) -> pl.DataFrame:
    if not rows:
        return empty_frame("prediction_markets")
    f = pl.DataFrame(
        rows,
        schema={
            "question_id": pl.Utf8,
            "source": pl.Utf8,
            "question": pl.Utf8,
            "background": pl.Utf8,
            "url": pl.Utf8,
            "open_at": pl.Datetime("us", "UTC"),
            "close_at": pl.Datetime("us", "UTC"),
            "resolve_at": pl.Datetime("us", "UTC"),
            "source_file": pl.Utf8,
            "available_at": pl.Datetime("us", "UTC"),
        },
        strict=False,
    )
    res = path.filter(pl.col("kind") == "resolution").select(
        "question_id", pl.col("observed_at").alias("_res")
    )
    f = f.join(res, on="question_id", how="left").with_columns(
        pl.coalesce("resolve_at", "_res").alias("resolve_at")
    )
    f = f.with_columns(
        pl.col("question").map_elements(categorize, return_dtype=pl.Utf8).alias("category"),
        pl.col("question_id").alias("partition_key"),
        pl.coalesce("available_at", "open_at", "resolve_at").alias("available_at"),
    )
    return conform(
        "prediction_markets", f.select(empty_frame("prediction_markets").columns).sort("question_id")
    )


def market_data_known_at(data: MarketData, at: datetime) -> MarketData:
    """``data`` as the source showed it at ``at`` (tz-aware): questions and path rows with ``available_at <=
    at``; a question whose resolution row is later shows ``resolve_at`` NULL (unresolved). Same columns.
    Raises
    :class:`ValueError` for a naive ``at``."""
    if at.tzinfo is None:
        raise ValueError(f"known_at={at!r}: give a time zone (UTC)")
    at = at.astimezone(UTC)
    path = data.path.filter(pl.col("available_at") <= at)
    resolved = path.filter(pl.col("kind") == "resolution")["question_id"].to_list()
    questions = data.questions.filter(pl.col("available_at") <= at).with_columns(
        pl.when(pl.col("question_id").is_in(resolved))
        .then(pl.col("resolve_at"))
        .otherwise(None)
        .alias("resolve_at")
    )
    return MarketData(questions, path)


def resolutions_landed(
    data: MarketData, stored: pl.DataFrame, requested: Sequence[str], at: datetime
) -> pl.DataFrame:
    """Questions whose resolution is known at ``at`` (a ``resolution`` path row with ``available_at <= at``)
    but not stored: ``stored`` holds the stored ``prediction_markets`` rows (``question_id``, ``resolve_at``;
    a stored question with NULL ``resolve_at`` is unresolved in the store) and ``requested`` the question ids
    already requested. Returns ``question_id``, ``resolved_at`` sorted by time. Raises :class:`ValueError` for
    a naive ``at``."""
    if at.tzinfo is None:
        raise ValueError(f"at={at!r}: give a time zone (UTC)")
    done = stored.filter(pl.col("resolve_at").is_not_null())["question_id"].to_list()
    return (
        data.path.filter((pl.col("kind") == "resolution") & (pl.col("available_at") <= at.astimezone(UTC)))
        .select("question_id", pl.col("available_at").alias("resolved_at"))
        .unique("question_id")
        .filter(~pl.col("question_id").is_in([*done, *requested]))
        .sort("resolved_at", "question_id")
    )


class SnapshotPredictionMarkets:
    """ForecastBench question / resolution sets and the Polymarket FOMC trades (rules in the module doc).
    ``known_at`` (tz-aware) replays the recording at that instant (:func:`market_data_known_at`)."""

    def __init__(self, snapshot_dir: str | Path, known_at: datetime | None = None) -> None:
        self.root = Path(snapshot_dir)
        self.known_at = known_at

    def _parsed(self, path: Path, parse: Any) -> Any:
        return cached_parse(
            "leaf_pm_" + parse.__name__, path, lambda p: parse(_json_file(p), file=display_path(p, self.root))
        )

    def forecastbench(self) -> tuple[list[dict], list[dict]]:
        qdir, rdir = self.root / FB_DIR / "question_sets", self.root / FB_DIR / "resolution_sets"
        first: dict[str, dict] = {}
        prices: list[dict] = []
        for p in sorted(qdir.glob("*.json*")):
            qs, ps = self._parsed(p, parse_question_set)
            for q in qs:  # metadata of a question's first set (earliest publication)
                if (
                    q["question_id"] not in first
                    or q["available_at"] < first[q["question_id"]]["available_at"]
                ):
                    first[q["question_id"]] = q
            prices.extend(ps)
        resolved: dict[str, dict] = {}
        for p in sorted(rdir.glob("*.json*")):
            for r in self._parsed(p, parse_resolution_set):
                if r["question_id"] not in first:
                    continue
                prev = resolved.get(r["question_id"])
                if prev is not None and (prev["price"], prev["observed_at"]) != (
                    r["price"],
                    r["observed_at"],
                ):
                    raise SourceError(
                        f"resolution differs from {prev['source_file']} ({prev['price']} at "
                        f"{prev['observed_at']:%Y-%m-%d})",
                        file=r["source_file"],
                        row=r["source_row"],
                        field="resolved_to",
                        value=r["price"],
                    )
                resolved.setdefault(r["question_id"], r)
        return list(first.values()), prices + list(resolved.values())

    def fomc(self) -> tuple[list[dict], list[dict]]:
        d = self.root / FOMC_DIR
        tokens = d / "fomc_tokens.csv"
        markets, mfiles = {}, {}
        for p in sorted((d / "markets").glob("*.json")):
            doc = json.loads(p.read_text(encoding="utf-8"))
            markets[doc.get("slug", p.stem)] = doc
            mfiles[doc.get("slug", p.stem)] = display_path(p, self.root)
        trades = {
            display_path(p, self.root): gzip.decompress(p.read_bytes()).decode("utf-8-sig")
            for p in sorted((d / "trades_timeseries").glob("*.csv.gz"))
        }
        return parse_fomc(
            tokens.read_text(encoding="utf-8-sig"),
            markets,
            trades,
            tokens_file=display_path(tokens, self.root),
            market_files=mfiles,
        )

    def load(self) -> MarketData:
        q1, p1 = self.forecastbench()
        q2, p2 = self.fomc()
        path = _path_frame(p1 + p2)
        data = MarketData(_question_frame(q1 + q2, path), path)
        return data if self.known_at is None else market_data_known_at(data, self.known_at)


# ------------------------------------------------------------------------------------------------
# live: Gamma + CLOB
# ------------------------------------------------------------------------------------------------


def _json_list(v: Any) -> list:
    if isinstance(v, list):
        return v
    try:
        out = json.loads(v or "[]")
    except json.JSONDecodeError:
        return []
    return out if isinstance(out, list) else []


def parse_gamma_markets(objs: Sequence[dict], *, file: str) -> tuple[list[dict], list[dict], dict[str, str]]:
    """Binary YES/NO Gamma ``/markets`` objects -> (question rows, resolution path rows, question_id -> YES
    token).

    A closed market whose ``outcomePrices`` are 1/0 is resolved at ``closedTime`` (else ``umaEndDate``, else
    ``endDate``). Markets whose outcomes are not ``["Yes", "No"]`` are skipped. Raises :class:`SourceError`
    (file, object index, field) for a bad date."""
    qs, path, yes_token = [], [], {}
    for i, m in enumerate(objs, start=1):
        outcomes = [str(o).strip().lower() for o in _json_list(m.get("outcomes"))]
        tokens = [str(t) for t in _json_list(m.get("clobTokenIds"))]
        if outcomes != ["yes", "no"] or not m.get("conditionId"):
            continue
        qid = m["conditionId"]
        open_at = _utc_instant(m.get("startDate") or m.get("createdAt"), file=file, row=i, field="startDate")
        close_at = _utc_instant(m.get("endDate"), file=file, row=i, field="endDate")
        resolve_at = None
        prices = [str(p) for p in _json_list(m.get("outcomePrices"))]
        if m.get("closed") and prices in (["1", "0"], ["0", "1"]):
            closed = (m.get("closedTime") or "").replace(" ", "T")
            if closed.endswith("+00"):
                closed += ":00"
            resolve_at = (
                (_utc_instant(closed, file=file, row=i, field="closedTime") if closed else None)
                or _utc_instant(m.get("umaEndDate"), file=file, row=i, field="umaEndDate")
                or close_at
            )
            path.append(
                {
                    "question_id": qid,
                    "observed_at": resolve_at,
                    "price": float(prices[0]),
                    "kind": "resolution",
                    "source_file": file,
                    "source_row": i,
                    "available_at": resolve_at,
                }
            )
        qs.append(
            {
                "question_id": qid,
                "source": "polymarket_gamma",
                "question": m.get("question") or "",
                "background": m.get("description"),
                "url": f"https://polymarket.com/market/{m.get('slug')}",
                "open_at": open_at,
                "close_at": close_at,
                "resolve_at": resolve_at,
                "source_file": file,
                "available_at": open_at,
            }
        )
        if tokens:
            yes_token[qid] = tokens[0]
    return qs, path, yes_token


def parse_prices_history(text: str, *, question_id: str, url: str) -> list[dict]:
    """CLOB ``/prices-history`` JSON ``{"history": [{"t": unix_s, "p": price}, ...]}`` -> trade path rows.
    Raises :class:`SourceError` naming the URL and the point index for a bad point."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"not JSON: {exc}", file=url) from None
    out = []
    for i, pt in enumerate(doc.get("history") or [], start=1):
        try:
            ts, p = datetime.fromtimestamp(int(pt["t"]), tz=UTC), float(pt["p"])
        except (KeyError, TypeError, ValueError, OverflowError, OSError):
            raise SourceError(
                "expected {t: unix seconds, p: price}", file=url, row=i, field="history", value=pt
            ) from None
        if not 0.0 <= p <= 1.0:
            raise SourceError("price outside [0, 1]", file=url, row=i, field="p", value=p)
        out.append(
            {
                "question_id": question_id,
                "observed_at": ts,
                "price": p,
                "kind": "trade",
                "source_file": url,
                "source_row": i,
                "available_at": ts,
            }
        )
    return out


class LivePolymarket:
    """Markets from the Polymarket Gamma API and YES-price histories from the CLOB API.

    ``slugs`` (or ``condition_ids``) name the markets; ``fidelity_min`` is the history resolution in minutes.
    """

    def __init__(
        self,
        slugs: Sequence[str] = (),
        *,
        gamma_url: str = GAMMA_URL,
        clob_url: str = CLOB_URL,
        fidelity_min: int = 60,
    ) -> None:
        self.slugs = tuple(slugs)
        self.gamma = gamma_url.rstrip("/")
        self.clob = clob_url.rstrip("/")
        self.fidelity = fidelity_min

    def load(self) -> MarketData:
        url = f"{self.gamma}/markets"
        objs: list[dict] = []
        for slug in self.slugs:
            text = http_get_text(url, params={"slug": slug}, what="Gamma markets")
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise SourceError(f"not JSON: {exc}", file=url, field="slug", value=slug) from None
            objs.extend(doc if isinstance(doc, list) else [doc])
        qs, path, yes = parse_gamma_markets(objs, file=url)
        hist_url = f"{self.clob}/prices-history"
        for qid, tok in yes.items():
            text = http_get_text(
                hist_url,
                params={"market": tok, "interval": "max", "fidelity": self.fidelity},
                what="CLOB prices-history",
            )
            path.extend(parse_prices_history(text, question_id=qid, url=hist_url))
        p = _path_frame(path)
        return MarketData(_question_frame(qs, p), p)
