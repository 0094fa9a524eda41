"""Polymarket bucket prices for the macro markets of the LiveBetting score (LiveMacroEval App. L).

A categorical macro market (e.g. "March 2026 CPI YoY") is a Gamma *event* whose markets are one binary
contract per numeric bucket; a bucket's YES price p in [0, 1] is the crowd's probability of that bucket.
Output: the long ``prediction_market_prices`` frame (market_id, indicator_id, reference_period,
bucket_label, token_id, ts UTC, price, source_file, available_at = ts). Bucket labels are kept verbatim
(``'≥2.8%'``, ``'2.0–2.5%'`` with an en dash, ``'<-150k'``); turning them into numeric edges is the
scorer's job.

Two recorded formats and the live service:

* **price grids** (LiveMacroEval ``Results/polymarket_return/polymarket/*-polymarket-price-data.csv``):
  ``Date (UTC)`` 'MM-DD-YYYY HH:MM', ``Timestamp (UTC)`` unix seconds, one column per bucket (hourly YES
  prices; some hours missing). Both time columns must agree. The grid files do not name their market, so
  :data:`SNAPSHOT_GRIDS` maps each file to its indicator and reference period (from the provenance notes:
  the March-2026 CPI, unemployment and payroll markets and the 2026Q1 GDP market).
* **API responses**: Gamma ``GET /events/slug/{slug}`` (event JSON; each market has ``groupItemTitle`` =
  bucket, ``outcomes`` and ``clobTokenIds`` as JSON-encoded lists, ``outcomePrices`` = resolution) and
  CLOB ``GET /prices-history?market=<token>&startTs=..&endTs=..&fidelity=<minutes>`` ->
  ``{"history": [{"t": unix_sec, "p": price}]}``. :class:`PolymarketLive` calls them;
  :class:`PolymarketSnapshot` reads a response cache laid out as ``<sha1("<namespace>:<url>")>.json``
  (namespaces ``event_slug`` and ``prices_history``; the layout of the recorded PLSite cache under
  ``macro/polymarket/plsite_nfp/polymarket_cache``), so the same request finds its recorded answer, and,
  with no market configured, the recorded price grids. Both implement :class:`PredictionMarketClient`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlencode

import httpx
import polars as pl

from leaf_live.core.pit import UTC
from leaf_live.core.sources import SourceError, http_get, parse_number
from leaf_live.core.storage import conform, empty_frame
from leaf_live.macro.catalog import get_indicator

GAMMA_URL = "https://gamma-api.polymarket.com"
CLOB_URL = "https://clob.polymarket.com"
GRID_DIR = "livemacroeval/Results/polymarket_return/polymarket"
PLSITE_CACHE_DIR = "macro/polymarket/plsite_nfp/polymarket_cache"

# grid file stem -> (indicator_id, reference_period)
SNAPSHOT_GRIDS: dict[str, tuple[str, date]] = {
    "cpi-mar": ("cpi", date(2026, 3, 1)),
    "gdp-q1-2026": ("real_gdp_advance", date(2026, 1, 1)),
    "jobs-mar": ("nonfarm_payrolls", date(2026, 3, 1)),
    "unemp-mar": ("unemployment_rate", date(2026, 3, 1)),
}
GRID_SUFFIX = "-polymarket-price-data.csv"


def _prices_frame(rows: dict[str, list], *, partition_key: str) -> pl.DataFrame:
    if not rows["ts"]:
        return empty_frame("prediction_market_prices")
    f = pl.DataFrame(rows, schema_overrides={"ts": pl.Datetime("us", "UTC"), "token_id": pl.Utf8})
    f = f.with_columns(pl.lit(partition_key).alias("partition_key"), pl.col("ts").alias("available_at"))
    return conform(
        "prediction_market_prices",
        f.select(
            "partition_key",
            "source",
            "market_id",
            "indicator_id",
            "reference_period",
            "bucket_label",
            "token_id",
            "ts",
            "price",
            "source_file",
            "available_at",
        ),
    )


def _price(text: str, *, file: str, row: int, field: str) -> float | None:
    p = parse_number(text, file=file, row=row, field=field)
    if p is None:
        return None
    if not 0.0 <= p <= 1.0:
        raise SourceError("price outside [0, 1]", file=file, row=row, field=field, value=text)
    return p


def read_price_grid(
    path: str | Path,
    *,
    indicator_id: str,
    reference_period: date,
    market_id: str | None = None,
    display_name: str | None = None,
) -> pl.DataFrame:
    """Read one hourly price-grid CSV into ``prediction_market_prices`` rows (source ``polymarket_grid``).

    ``market_id`` defaults to the file stem without ``-polymarket-price-data``. Empty cells are missing
    prices (skipped). Raises :class:`SourceError` naming file, 1-based data row, field and value for a
    missing time column, a duplicate or empty bucket label, a malformed date, a ``Date (UTC)`` that
    disagrees with ``Timestamp (UTC)``, a non-increasing timestamp, or a price that is not a number in
    [0, 1]; :class:`KeyError` for an unknown indicator.
    """
    path = Path(path)
    name = display_name or str(path)
    get_indicator(indicator_id)
    mid = market_id or path.name.removesuffix(GRID_SUFFIX).removesuffix(".csv")
    text = path.read_text(encoding="utf-8-sig")
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    if header[:2] != ["Date (UTC)", "Timestamp (UTC)"]:
        raise SourceError(
            "expected the first columns 'Date (UTC)', 'Timestamp (UTC)'",
            file=name,
            row=0,
            field="header",
            value=",".join(header[:2]),
        )
    buckets = header[2:]
    if not buckets or any(not b for b in buckets) or len(set(buckets)) != len(buckets):
        raise SourceError(
            "bucket columns must be non-empty and distinct",
            file=name,
            row=0,
            field="header",
            value=",".join(buckets),
        )
    rows: dict[str, list] = {
        k: []
        for k in (
            "source",
            "market_id",
            "indicator_id",
            "reference_period",
            "bucket_label",
            "token_id",
            "ts",
            "price",
            "source_file",
        )
    }
    prev = None
    for i, rec in enumerate(reader, start=1):
        if not rec or all(not c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise SourceError(
                f"row has {len(rec)} fields, header has {len(header)}",
                file=name,
                row=i,
                field="row",
                value=",".join(rec)[:80],
            )
        try:
            shown = datetime.strptime(rec[0].strip(), "%m-%d-%Y %H:%M").replace(tzinfo=UTC)
        except ValueError:
            raise SourceError(
                "expected MM-DD-YYYY HH:MM (UTC)", file=name, row=i, field="Date (UTC)", value=rec[0]
            ) from None
        try:
            ts = datetime.fromtimestamp(int(rec[1].strip()), tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise SourceError(
                "expected unix seconds", file=name, row=i, field="Timestamp (UTC)", value=rec[1]
            ) from None
        if ts != shown:
            raise SourceError(
                f"Timestamp (UTC) is {ts:%Y-%m-%d %H:%M} UTC but Date (UTC) says {rec[0]}",
                file=name,
                row=i,
                field="Timestamp (UTC)",
                value=rec[1],
            )
        if prev is not None and ts <= prev:
            raise SourceError(
                f"timestamp not after the previous row's {prev:%Y-%m-%d %H:%M}",
                file=name,
                row=i,
                field="Timestamp (UTC)",
                value=rec[1],
            )
        prev = ts
        for b, cell in zip(buckets, rec[2:]):
            p = _price(cell, file=name, row=i, field=b)
            if p is None:
                continue
            rows["source"].append("polymarket_grid")
            rows["market_id"].append(mid)
            rows["indicator_id"].append(indicator_id)
            rows["reference_period"].append(reference_period)
            rows["bucket_label"].append(b)
            rows["token_id"].append(None)
            rows["ts"].append(ts)
            rows["price"].append(p)
            rows["source_file"].append(name)
    return _prices_frame(rows, partition_key=mid)


def load_snapshot_grids(
    snapshot_dir: str | Path, markets: Mapping[str, tuple[str, date]] | None = None
) -> pl.DataFrame:
    """All price grids of :data:`SNAPSHOT_GRIDS` (or ``markets``: file stem -> (indicator_id,
    reference_period)) under ``snapshot_dir``/:data:`GRID_DIR`, one partition per market."""
    snap = Path(snapshot_dir)
    frames = []
    for stem, (ind, ref) in (markets or SNAPSHOT_GRIDS).items():
        rel = f"{GRID_DIR}/{stem}{GRID_SUFFIX}"
        p = snap / rel
        if not p.is_file():
            raise SourceError("snapshot price grid does not exist", file=str(p))
        frames.append(
            read_price_grid(p, indicator_id=ind, reference_period=ref, market_id=stem, display_name=rel)
        )
    return pl.concat(frames, how="vertical") if frames else empty_frame("prediction_market_prices")


# ------------------------------------------------------------------------------------------------
# Gamma / CLOB API (live, or a response cache in the PLSite layout)
# ------------------------------------------------------------------------------------------------


def cache_key(namespace: str, url: str) -> str:
    """File stem of a cached response: sha1 of ``"<namespace>:<url>"`` (PLSite ``_fetch_cached_json``)."""
    return hashlib.sha1(f"{namespace}:{url}".encode()).hexdigest()


def _json_list(value: Any, *, file: str, field: str) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            v = json.loads(value)
        except json.JSONDecodeError:
            v = None
        if isinstance(v, list):
            return v
    raise SourceError(
        "expected a JSON list (or a JSON-encoded list string)", file=file, field=field, value=value
    )


def event_buckets(event: Mapping[str, Any], *, file: str = "event") -> pl.DataFrame:
    """The buckets of a Gamma event: one row per market with ``bucket_label`` (``groupItemTitle`` verbatim,
    else the question), ``yes_token_id``, ``no_token_id``, ``market_slug``, ``question``, ``closed`` and
    ``resolved_yes`` (the YES entry of ``outcomePrices``: 1.0 for the winning bucket of a resolved market,
    NULL if absent). Raises :class:`SourceError` naming the market for a missing or mismatched
    ``outcomes``/``clobTokenIds`` pair, or duplicate bucket labels."""
    markets = event.get("markets")
    if not isinstance(markets, list) or not markets:
        raise SourceError(
            "event has no markets list", file=file, field="markets", value=type(markets).__name__
        )
    out: dict[str, list] = {
        k: []
        for k in (
            "bucket_label",
            "yes_token_id",
            "no_token_id",
            "market_slug",
            "question",
            "closed",
            "resolved_yes",
        )
    }
    for n, m in enumerate(markets, start=1):
        where = f"markets[{n - 1}]"
        outcomes = [str(o) for o in _json_list(m.get("outcomes"), file=file, field=f"{where}.outcomes")]
        tokens = [str(t) for t in _json_list(m.get("clobTokenIds"), file=file, field=f"{where}.clobTokenIds")]
        if len(outcomes) != len(tokens) or "Yes" not in outcomes:
            raise SourceError(
                "outcomes and clobTokenIds do not pair up with a 'Yes' outcome",
                file=file,
                row=n,
                field=f"{where}.outcomes",
                value=outcomes,
            )
        prices = m.get("outcomePrices")
        resolved = None
        if prices not in (None, ""):
            pl_ = _json_list(prices, file=file, field=f"{where}.outcomePrices")
            if len(pl_) == len(outcomes):
                resolved = float(pl_[outcomes.index("Yes")])
        label = str(m.get("groupItemTitle") or m.get("question") or "").strip()
        out["bucket_label"].append(label)
        out["yes_token_id"].append(tokens[outcomes.index("Yes")])
        out["no_token_id"].append(tokens[outcomes.index("No")] if "No" in outcomes else None)
        out["market_slug"].append(m.get("slug"))
        out["question"].append(m.get("question"))
        out["closed"].append(bool(m.get("closed")))
        out["resolved_yes"].append(resolved)
    labels = out["bucket_label"]
    if len(set(labels)) != len(labels) or "" in labels:
        raise SourceError(
            "bucket labels (groupItemTitle) are empty or repeated",
            file=file,
            field="groupItemTitle",
            value=labels,
        )
    return pl.DataFrame(
        out, schema_overrides={"resolved_yes": pl.Float64, "market_slug": pl.Utf8, "no_token_id": pl.Utf8}
    )


def parse_prices_history(payload: Any, *, file: str) -> pl.DataFrame:
    """CLOB ``/prices-history`` body ``{"history": [{"t": unix_sec, "p": price}, ...]}`` -> frame
    (``ts`` UTC, ``price``), sorted by time. Raises :class:`SourceError` naming the entry index and field for
    a missing history list, a non-integer ``t`` or a price outside [0, 1]."""
    hist = payload.get("history") if isinstance(payload, dict) else None
    if not isinstance(hist, list):
        raise SourceError(
            "expected an object with a 'history' list",
            file=file,
            field="history",
            value=type(payload).__name__,
        )
    ts, ps = [], []
    for k, e in enumerate(hist):
        if not isinstance(e, dict):
            raise SourceError(
                "history entry is not an object", file=file, row=k + 1, field="history", value=e
            )
        t, p = e.get("t"), e.get("p")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or int(t) != t:
            raise SourceError("t is not unix seconds", file=file, row=k + 1, field="t", value=t)
        try:
            pv = float(p)
        except (TypeError, ValueError):
            raise SourceError("p is not a number", file=file, row=k + 1, field="p", value=p) from None
        if not 0.0 <= pv <= 1.0:
            raise SourceError("p outside [0, 1]", file=file, row=k + 1, field="p", value=p)
        ts.append(datetime.fromtimestamp(int(t), tz=UTC))
        ps.append(pv)
    return pl.DataFrame(
        {"ts": ts, "price": ps}, schema={"ts": pl.Datetime("us", "UTC"), "price": pl.Float64}
    ).sort("ts")


@dataclass(frozen=True)
class MarketSpec:
    """One categorical macro market to fetch: Gamma event ``slug``, the catalog indicator and reference period
    it resolves on, the price window ``start_ts`` .. ``end_ts`` (unix seconds) and the CLOB ``fidelity``
    (minutes; hourly = 60)."""

    slug: str
    indicator_id: str
    reference_period: date
    start_ts: int
    end_ts: int
    fidelity: int = 60


@runtime_checkable
class PredictionMarketClient(Protocol):
    """``prediction_market_prices`` rows of macro markets (:class:`PolymarketSnapshot` or
    :class:`PolymarketLive`)."""

    def market_prices(self, markets: Sequence[MarketSpec] = ()) -> pl.DataFrame:
        """Bucket price rows of ``markets``, one partition per market."""
        ...


class _GammaClob:
    """Gamma + CLOB requests and parsing shared by both implementations; ``_get_json(namespace, url)`` is
    theirs. URLs are built against ``gamma_url`` / ``clob_url`` (default Polymarket's public hosts)."""

    def __init__(self, gamma_url: str = GAMMA_URL, clob_url: str = CLOB_URL) -> None:
        self.gamma_url = gamma_url.rstrip("/")
        self.clob_url = clob_url.rstrip("/")

    def _get_json(self, namespace: str, url: str) -> Any:
        raise NotImplementedError

    def event_url(self, slug: str) -> str:
        return f"{self.gamma_url}/events/slug/{slug}"

    def prices_history_url(self, token_id: str, start_ts: int, end_ts: int, fidelity: int) -> str:
        # parameter order as the recorded requests (market, startTs, endTs, fidelity): the cache key depends
        # on it
        q = urlencode(
            {"market": token_id, "startTs": int(start_ts), "endTs": int(end_ts), "fidelity": int(fidelity)}
        )
        return f"{self.clob_url}/prices-history?{q}"

    def event_by_slug(self, slug: str) -> dict:
        """Gamma event JSON for ``slug`` (a dict with ``markets``)."""
        url = self.event_url(slug)
        ev = self._get_json("event_slug", url)
        if not isinstance(ev, dict):
            raise SourceError("expected an event object", file=url, field="root", value=type(ev).__name__)
        return ev

    def prices_history(self, token_id: str, start_ts: int, end_ts: int, fidelity: int = 60) -> pl.DataFrame:
        """YES-token price history between unix ``start_ts`` and ``end_ts`` at ``fidelity`` minutes:
        frame (``ts`` UTC, ``price``)."""
        if end_ts <= start_ts or fidelity <= 0:
            raise ValueError(f"need start_ts < end_ts and fidelity > 0, got {start_ts}, {end_ts}, {fidelity}")
        url = self.prices_history_url(token_id, start_ts, end_ts, fidelity)
        return parse_prices_history(self._get_json("prices_history", url), file=url)

    def market(self, spec: MarketSpec) -> pl.DataFrame:
        """``prediction_market_prices`` rows (source ``polymarket_clob``, market_id = ``spec.slug``) for every
        bucket of the event: each bucket's YES-token history over [start_ts, end_ts]."""
        get_indicator(spec.indicator_id)
        buckets = event_buckets(self.event_by_slug(spec.slug), file=self.event_url(spec.slug))
        rows: dict[str, list] = {
            k: []
            for k in (
                "source",
                "market_id",
                "indicator_id",
                "reference_period",
                "bucket_label",
                "token_id",
                "ts",
                "price",
                "source_file",
            )
        }
        for label, token in buckets.select("bucket_label", "yes_token_id").iter_rows():
            h = self.prices_history(token, spec.start_ts, spec.end_ts, spec.fidelity)
            n = h.height
            rows["source"] += ["polymarket_clob"] * n
            rows["market_id"] += [spec.slug] * n
            rows["indicator_id"] += [spec.indicator_id] * n
            rows["reference_period"] += [spec.reference_period] * n
            rows["bucket_label"] += [label] * n
            rows["token_id"] += [token] * n
            rows["ts"] += h.get_column("ts").to_list()
            rows["price"] += h.get_column("price").to_list()
            rows["source_file"] += [
                self.prices_history_url(token, spec.start_ts, spec.end_ts, spec.fidelity)
            ] * n
        return _prices_frame(rows, partition_key=spec.slug)

    def market_prices(self, markets: Sequence[MarketSpec] = ()) -> pl.DataFrame:
        frames = [self.market(m) for m in markets]
        return pl.concat(frames, how="vertical") if frames else empty_frame("prediction_market_prices")


class PolymarketSnapshot(_GammaClob):
    """Recorded Polymarket data under ``snapshot_dir``: with no ``markets``, the LiveMacroEval hourly price
    grids (:func:`load_snapshot_grids`); for configured markets, the recorded Gamma/CLOB responses in
    ``cache_dir`` (default :data:`PLSITE_CACHE_DIR`), laid out as ``<cache_key(namespace, url)>.json`` with
    ``url`` built against the public hosts, so the same request finds its recorded answer; a request never
    recorded raises :class:`SourceError` naming the URL and the expected file."""

    transport = "snapshot"

    def __init__(
        self,
        snapshot_dir: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        gamma_url: str = GAMMA_URL,
        clob_url: str = CLOB_URL,
    ) -> None:
        super().__init__(gamma_url, clob_url)
        if snapshot_dir is None and cache_dir is None:
            raise ValueError(
                "PolymarketSnapshot needs snapshot_dir (recorded grids) or cache_dir (recorded responses)"
            )
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir is not None else None
        self.cache_dir = Path(cache_dir) if cache_dir is not None else self.snapshot_dir / PLSITE_CACHE_DIR

    def _get_json(self, namespace: str, url: str) -> Any:
        p = self.cache_dir / f"{cache_key(namespace, url)}.json"
        if not p.is_file():
            raise SourceError(f"request not in the snapshot cache (expected {p.name})", file=url)
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SourceError(f"cached response is not JSON: {exc}", file=str(p)) from None

    def market_prices(self, markets: Sequence[MarketSpec] = ()) -> pl.DataFrame:
        if not markets:
            if self.snapshot_dir is None:
                raise ValueError("the recorded price grids need snapshot_dir")
            return load_snapshot_grids(self.snapshot_dir)
        return super().market_prices(markets)


class PolymarketLive(_GammaClob):
    """Gamma + CLOB over HTTP at ``gamma_url`` / ``clob_url`` (configurable, e.g. a local test server),
    through ``http`` or a client per request; errors raise :class:`SourceError` naming the URL and status.
    With no ``markets`` nothing is fetched (an empty frame)."""

    transport = "live"

    def __init__(
        self,
        *,
        gamma_url: str = GAMMA_URL,
        clob_url: str = CLOB_URL,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(gamma_url, clob_url)
        self._http = http
        self._timeout = timeout

    def _get_json(self, namespace: str, url: str) -> Any:
        resp = http_get(
            url,
            client=self._http,
            timeout=self._timeout,
            headers={"Accept": "application/json"},
            what=namespace,
        )
        try:
            return resp.json()
        except json.JSONDecodeError as exc:
            raise SourceError(f"response is not JSON: {exc}", file=url) from None


def read_cached_responses(cache_dir: str | Path) -> tuple[dict[str, dict], dict[str, pl.DataFrame]]:
    """Every response in a recorded cache directory, by file stem: (Gamma event objects, price histories).
    Search results (``{"events": [...], "pagination": ...}``) are skipped. Raises :class:`SourceError` for
    a file that is not JSON or has neither shape."""
    events: dict[str, dict] = {}
    histories: dict[str, pl.DataFrame] = {}
    for p in sorted(Path(cache_dir).glob("*.json")):
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise SourceError(f"not JSON: {exc}", file=str(p)) from None
        if isinstance(obj, dict) and "history" in obj:
            histories[p.stem] = parse_prices_history(obj, file=str(p))
        elif isinstance(obj, dict) and "markets" in obj:
            events[p.stem] = obj
        elif isinstance(obj, dict) and "events" in obj:
            continue
        else:
            raise SourceError(
                "neither a Gamma event, a search result nor a prices-history response", file=str(p)
            )
    return events, histories
