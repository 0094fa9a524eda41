"""Shared fixtures: the real snapshot directory (tests FAIL without it) and a loopback HTTP server that
answers GET requests in a service's own wire format."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import leaf_live.cli  # noqa: F401  (registers every table in the CLI's order, as README documents them)
from leaf_live.core.settings import get_settings
from leaf_live.process import prepare_process

prepare_process()  # the test process is an entry point like the CLI (tests/test_import_effects.py)


@pytest.fixture(scope="session")
def snapshot_dir() -> Path:
    """``LEAF_LIVE_SNAPSHOT`` (default ../shared/data); raises SettingsError, failing the test, if missing."""
    return get_settings().require_snapshot()


@dataclass
class GetServer:
    """``routes`` maps a URL path to ``handler(query) -> (status, content_type, body)`` (body text or bytes);
    a path with no route is served from ``static`` (a directory: ``/a/b.csv`` -> ``static/a/b.csv``) when set;
    ``requests`` records ``(path, query)`` of every request. Binds 127.0.0.1 only."""

    routes: dict[str, Callable[[dict[str, list[str]]], tuple[int, str, str | bytes]]] = field(
        default_factory=dict
    )
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)
    url: str = ""
    static: Path | None = None

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, str | bytes]:
        route = self.routes.get(path)
        if route:
            return route(query)
        if self.static is not None:
            f = (self.static / path.lstrip("/")).resolve()
            if f.is_file() and self.static.resolve() in f.parents:
                return 200, "application/octet-stream", f.read_bytes()
        return 404, "text/plain", f"no route {path}"


@pytest.fixture()
def http_server() -> Iterator[GetServer]:
    state = GetServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            state.requests.append((parts.path, query))
            status, ctype, body = state.answer(parts.path, query)
            data = body.encode("utf-8") if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


# The main job once per test session, shared by the asset tests (they copy the file before writing to it).
# ARIMA runs on two release months only (one backtest, one live): each distinct history costs a 52-order grid.
MAIN_RUN_ARGS = ["--arima-from", "2025-10", "--arima-to", "2025-11"]


ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def dagster_home(tmp_path_factory, remove: bool = True) -> Iterator[Path]:
    """A fresh Dagster instance directory with the project's ``dagster_home/dagster.yaml`` (telemetry off) as
    ``DAGSTER_HOME`` for the duration, removed afterwards unless ``remove`` is false. On tmpfs when the
    machine has one: the SQLite run storage commits every event, and fsyncs on a shared disk would dominate
    the main run."""
    import os
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    home = Path(
        tempfile.mkdtemp(
            prefix="leaf_live_dagster_", dir=shm if shm.is_dir() else tmp_path_factory.getbasetemp()
        )
    )
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    old = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        yield home
    finally:
        if old is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = old
        if remove:
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def main_run(tmp_path_factory, snapshot_dir) -> Iterator[dict]:
    """``leaf-live run`` on the real snapshot into a fresh DuckDB file, recorded in a fresh Dagster instance:
    ``{"db", "out", "err", "dagster_home"}`` (the instance directory lives for the session)."""
    import contextlib
    import io
    import shutil

    from leaf_live.cli import main as cli_main

    db = tmp_path_factory.mktemp("main_run") / "leaf_live.duckdb"
    out, err = io.StringIO(), io.StringIO()
    with dagster_home(tmp_path_factory, remove=False) as home:  # read by the tests; removed at session end
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli_main(["run", "--snapshot", str(snapshot_dir), "--db", str(db), *MAIN_RUN_ARGS])
    try:
        assert rc == 0, err.getvalue()[-3000:]
        yield {"db": db, "out": out.getvalue(), "err": err.getvalue(), "dagster_home": home}
    finally:
        shutil.rmtree(home, ignore_errors=True)


# The time-series foundation models are an optional extra (pip install -e ".[tsfm]": torch,
# chronos-forecasting, timesfm). CI installs it and sets LEAF_LIVE_REQUIRE_TSFM=1, so there a missing extra
# FAILS its tests; elsewhere (the two-command quickstart, which does not install torch) they are skipped with
# the reason.
@pytest.fixture(scope="session")
def tsfm_extra():
    """The imported ``(torch, transformers, chronos)`` modules of the tsfm extra."""
    import importlib
    import os

    try:
        return tuple(importlib.import_module(m) for m in ("torch", "transformers", "chronos"))
    except ImportError as exc:
        if os.environ.get("LEAF_LIVE_REQUIRE_TSFM") == "1":
            pytest.fail(f"LEAF_LIVE_REQUIRE_TSFM=1 but the tsfm extra is missing: {exc}")
        pytest.skip(f"tsfm extra not installed (pip install -e '.[tsfm]'): {exc}")


@pytest.fixture(scope="session")
def series_vintage_rows(snapshot_dir):
    """The ``series_vintages`` rows of every release month from the snapshot (FRED-MD/QD archive and files,
    the Philadelphia Fed's real-time GDP with its release-panel extension), built as the asset builds them."""
    from leaf_live.core.pit import month_keys
    from leaf_live.macro import series_vintages as SV
    from leaf_live.macro.sources.fred_md import FredMdSnapshot
    from leaf_live.macro.sources.realtime_gdp import RealTimeGdpSnapshot

    rows, report = SV.load_vintage_rows(
        month_keys("2010-01", "2026-05"),
        "2010-01",
        fred_md=FredMdSnapshot(snapshot_dir),
        gdp=RealTimeGdpSnapshot(snapshot_dir),
    )
    assert not report.unavailable
    return rows


@pytest.fixture(scope="session")
def vintage_store(series_vintage_rows):
    """:class:`leaf_live.macro.series_vintages.VintageStore` of :func:`series_vintage_rows`."""
    from leaf_live.macro.series_vintages import VintageStore

    return VintageStore(series_vintage_rows)
