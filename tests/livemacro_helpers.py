"""Test helpers shared by the macro nowcast tests (real snapshot files, read where they are)."""

from __future__ import annotations

from datetime import date

import polars as pl

from leaf_live.core.settings import get_settings

LIVE = "livemacroeval/Results/ground_truth/data/field_releases_live.csv"


def live_releases() -> pl.DataFrame:
    """(indicator_id, reference_period, release_at UTC) from the paper's live-window ground truth (ET
    times)."""
    path = get_settings().require_snapshot() / LIVE
    raw = pl.read_csv(path, infer_schema=False)
    q = raw.get_column("ref_period").str.extract(r"^(\d{4})-Q(\d)$", 2)
    y = raw.get_column("ref_period").str.slice(0, 4).cast(pl.Int32)
    m = pl.Series([3 * int(x) - 2 if x is not None else None for x in q]).fill_null(
        raw.get_column("ref_period").str.slice(5, 2).cast(pl.Int32, strict=False)
    )
    return pl.DataFrame(
        {
            "indicator_id": raw.get_column("field_id"),
            "reference_period": [date(a, b, 1) for a, b in zip(y, m)],
            "release_at": (
                raw.get_column("release_datetime_et")
                .str.to_datetime("%Y-%m-%d %H:%M:%S")
                .dt.replace_time_zone("America/New_York")
                .dt.convert_time_zone("UTC")
            ),
        }
    )


# ------------------------------------------------------------------------------------------------
# a loopback HTTP server answering in the services' own formats (for the live transports)
# ------------------------------------------------------------------------------------------------

import threading  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402

Route = bytes | Callable[[dict[str, list[str]]], tuple[int, bytes]]


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[tuple[str, list[str]]]:
    """Serve ``routes`` (URL path -> body bytes, or a function of the query dict returning (status, body)) on
    127.0.0.1; yields (base URL, list of requested paths with queries). Unknown paths answer 404."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            seen.append(self.path)
            parts = urlsplit(self.path)
            route = routes.get(parts.path)
            if route is None:
                status, body = 404, b'{"error": "not found"}'
            elif callable(route):
                status, body = route(parse_qs(parts.query))
            else:
                status, body = 200, route
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
