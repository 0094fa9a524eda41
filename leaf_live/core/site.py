"""The static leaderboard site: plain HTML + CSS + a few lines of vanilla JavaScript for the tabs, rendered
with Jinja2 from page descriptions the tracks build (:class:`Page` of :class:`Tab` of blocks). Works offline:
no CDN, no font or script from elsewhere; figures are files next to the pages.

Every table cell carries the stored value it shows in ``data-value`` (floats as ``repr``, so they round-trip
exactly; empty for NULL) and its column in ``data-col``; rows carry ``data-key``. A reader (or a test) can
compare the page with the table it came from without parsing the formatted text.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(__file__).with_name("site_templates")
STATIC_FILES = ("site.css", "site.js")
SITE_DIR = "site"


def site_dir(db_path: str | os.PathLike) -> Path:
    """Where the site of a database is written: ``site/`` next to the DuckDB file (``data/site/`` for the
    default ``data/leaf_live.duckdb``). Raises ``ValueError`` for an in-memory database (``:memory:``)."""
    if str(db_path) == ":memory:":
        raise ValueError("the leaderboard site is written next to a DuckDB file, not an in-memory database")
    return Path(db_path).resolve().parent / SITE_DIR


@dataclass(frozen=True)
class Column:
    """A table column: ``key`` in the row dicts, header ``label``, ``fmt`` (a format spec such as ``+.4f``, or
    a callable value -> text), ``numeric`` (right-aligned) and a header tooltip ``title``."""

    key: str
    label: str
    fmt: str | Callable[[Any], str] | None = None
    numeric: bool = False
    title: str = ""


@dataclass
class TableBlock:
    """A table: ``id`` (HTML id, unique on its page), ``title``, ``caption`` (what the numbers are, units,
    which interval), ``columns`` and ``rows`` (dicts of raw stored values), ``key`` (row key columns, joined
    into ``data-key``)."""

    id: str
    title: str
    columns: Sequence[Column]
    rows: Sequence[dict]
    caption: str = ""
    key: Sequence[str] = ()
    kind: str = "table"


@dataclass
class FigureBlock:
    """A figure file shown on the page: ``src`` relative to the page, ``title``, ``caption``."""

    src: str
    title: str
    caption: str = ""
    kind: str = "figure"


@dataclass
class TextBlock:
    """Plain paragraphs (escaped), e.g. a coverage statement, and ``links`` ((href, text) pairs) listed
    below."""

    paragraphs: Sequence[str]
    title: str = ""
    links: Sequence[tuple[str, str]] = ()
    kind: str = "text"


@dataclass
class Tab:
    """One tab of a page: ``id`` (HTML id and URL fragment), ``label`` and its blocks."""

    id: str
    label: str
    blocks: list = field(default_factory=list)


@dataclass
class Page:
    """One HTML page: ``slug`` (file ``<slug>.html``), ``title``, ``intro`` paragraphs, ``tabs``, and
    ``facts`` (label -> text shown under the title: data span, sample counts, ...)."""

    slug: str
    title: str
    tabs: list[Tab]
    intro: Sequence[str] = ()
    facts: dict[str, str] = field(default_factory=dict)


def raw_value(v: Any) -> str:
    """The ``data-value`` text of a stored value: ``repr`` for floats (exact round trip; NaN/inf as text), ISO
    8601 for dates and timestamps, ``str`` otherwise, ``""`` for NULL."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    return str(v)


def cell_text(v: Any, fmt: str | Callable[[Any], str] | None) -> str:
    """Display text of a value: ``n/a`` for NULL/NaN, ``fmt`` applied otherwise (timestamps as
    ``YYYY-MM-DD HH:MM`` in their zone without a format)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if callable(fmt):
        return fmt(v)
    if fmt:
        return format(v, fmt)
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M %Z").strip()
    return str(v)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["raw"] = raw_value
    env.globals["cell_text"] = cell_text
    return env


def _write(path: Path, text: str | bytes) -> None:
    """Write through a temporary file and rename (a reader never sees half a page)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a web server serving the site must read it
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def render_site(
    out_dir: str | Path, pages: Sequence[Page], index: Page, *, site_title: str, generated_at: datetime
) -> list[Path]:
    """Write ``index.html`` (from ``index``), ``<slug>.html`` for each page, ``site.css`` and ``site.js`` into
    ``out_dir`` (created). ``generated_at`` (UTC) is printed on every page. Page slugs must be unique and not
    ``index``; tab ids unique within a page (``ValueError`` naming the duplicate). Returns the written files.
    """
    if index.slug != "index":
        raise ValueError(f"the index page's slug must be 'index', got {index.slug!r}")
    slugs = [p.slug for p in pages]
    if len(set(slugs)) != len(slugs) or "index" in slugs:
        raise ValueError(f"page slugs must be unique and not 'index': {slugs}")
    for p in (index, *pages):
        ids = [t.id for t in p.tabs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"page {p.slug}: duplicate tab ids {ids}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = _environment()
    nav = [("index", "Overview"), *((p.slug, p.title) for p in pages)]
    written = []
    for page in (index, *pages):
        html = env.get_template("page.html").render(
            page=page,
            nav=nav,
            site_title=site_title,
            generated_at=generated_at.strftime("%Y-%m-%d %H:%M UTC"),
        )
        path = out / f"{page.slug}.html"
        _write(path, html)
        written.append(path)
    for name in STATIC_FILES:
        shutil.copyfile(TEMPLATES / name, out / name)
        written.append(out / name)
    return written
