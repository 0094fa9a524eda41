"""A real headless browser for the site tests: Debian's chromium, a static file server on 127.0.0.1 and a
small DOM reader (stdlib ``html.parser``).

``require_chromium()`` fails the test when the browser is missing and ``LEAF_LIVE_BROWSER_TESTS=1`` or
``CI=true`` (``.ci/run`` installs chromium and sets the switch); otherwise it skips with the command that
installs it. Chromium starts with the flags that work on this machine (no sandbox as root, no GPU, no
background networking, a fresh profile), so it opens nothing but the loopback server.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from required import unavailable

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,4000",
)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """The chromium executable; fails (``LEAF_LIVE_BROWSER_TESTS=1`` or ``CI=true``) or skips when missing."""
    path = chromium_path()
    if path:
        return path
    msg = "chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it)"
    unavailable(msg, "LEAF_LIVE_BROWSER_TESTS")


@dataclass
class SiteServer:
    """A directory served on 127.0.0.1; ``requests`` lists every path the browser asked for."""

    url: str
    requests: list[str] = field(default_factory=list)


@contextmanager
def serve(directory: Path) -> Iterator[SiteServer]:
    state = SiteServer("")

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            state.requests.append(self.path.split("?")[0])
            super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def dump_dom(chromium: str, url: str, timeout: float = 90.0) -> str:
    """The DOM of ``url`` after its scripts ran (``chromium --dump-dom``), with a fresh profile."""
    with tempfile.TemporaryDirectory(prefix="leaf_live_chromium_") as profile:
        proc = subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise AssertionError(
            f"chromium --dump-dom {url} failed (rc {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return proc.stdout


@dataclass
class Cell:
    col: str
    value: str  # data-value: the stored value as text ('' = NULL)
    text: str  # what the page shows


@dataclass
class Dom:
    """What the tests read from a page: the body's attributes, each section's attributes (by id), each table's
    rows (by table id: (data-key, cells)), every img src and every href."""

    body: dict[str, str | None] = field(default_factory=dict)
    sections: dict[str, dict[str, str | None]] = field(default_factory=dict)
    tables: dict[str, list[tuple[str | None, list[Cell]]]] = field(default_factory=dict)
    images: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def rows(self, table_id: str) -> list[dict[str, Cell]]:
        """The rows of a table as {column: cell}."""
        return [{c.col: c for c in cells} for _, cells in self.tables[table_id]]


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.dom = Dom()
        self._table: str | None = None
        self._row: list[Cell] | None = None
        self._key: str | None = None
        self._cell: dict | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "body":
            self.dom.body = a
        elif tag == "section" and a.get("id"):
            self.dom.sections[a["id"]] = a
        elif tag == "table" and a.get("id"):
            self._table = a["id"]
            self.dom.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row, self._key = [], a.get("data-key")
        elif tag == "td" and self._row is not None and "data-col" in a:
            self._cell = {"col": a["data-col"], "value": a.get("data-value") or "", "text": ""}
        elif tag == "img" and a.get("src"):
            self.dom.images.append(a["src"])
        elif tag in ("a", "link") and a.get("href"):
            self.dom.links.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.dom.links.append(a["src"])

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append(Cell(self._cell["col"], self._cell["value"], self._cell["text"].strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row:
                self.dom.tables[self._table].append((self._key, self._row))
            self._row = None
        elif tag == "table":
            self._table = None


def read_dom(html: str) -> Dom:
    r = _Reader()
    r.feed(html)
    return r.dom
