"""core.figures and core.site on hand-made inputs: the bars and whiskers drawn are the values given, the PNG
writer's file, the colours, and the pages: stored values round-trip through data-value, text is escaped,
nothing refers outside the site, bad page definitions are refused."""

from __future__ import annotations

import math
import re
import stat
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest
from browser import read_dom
from PIL import Image

from leaf_live.core.figures import Plot, interval_barh, model_colors, new_figure, png_base64, save_png
from leaf_live.core.site import (
    Column,
    FigureBlock,
    Page,
    Tab,
    TableBlock,
    TextBlock,
    cell_text,
    raw_value,
    render_site,
    site_dir,
)


def test_interval_bars_draw_the_given_values_and_whiskers():
    fig, axes = new_figure(6, 3)
    ax = axes[0, 0]
    bars = interval_barh(
        ax,
        ["a", "b", "c"],
        [0.25, -0.125, None],
        [0.1, -0.5, None],
        [0.3, 0.0625, None],
        colors=["#111111", "#222222", "#333333"],
        hollow=[False, True, False],
    )
    # first label on top: y positions 2, 1, 0
    assert [b.get_width() for b in bars] == [0.25, -0.125, 0.0]
    assert [b.get_y() + b.get_height() / 2 for b in bars] == [2.0, 1.0, 0.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    # one whisker per bar with both bounds; its segment spans exactly [lo, hi]
    segs = [c.lines[2][0].get_segments()[0] for c in ax.containers if hasattr(c, "lines") and c.lines[2]]
    spans = sorted((float(s[0][0]), float(s[1][0]), float(s[0][1])) for s in segs)
    assert spans == [(-0.5, 0.0625, 1.0), (0.1, 0.3, 2.0)]
    # the hollow bar is its hatched outline in its colour
    assert bars[1].get_hatch() == "///" and bars[1].get_facecolor()[3] == 0.0
    assert bars[1].get_edgecolor()[:3] == pytest.approx((0x22 / 255,) * 3) and bars[0].get_hatch() is None
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["+0.2500", "-0.1250", "n/a"]
    # the reference line at 0
    assert any(np.allclose(line.get_xdata(), [0, 0]) for line in ax.lines)


def test_model_colours_are_per_family_distinct_and_stable():
    ids = [
        "openai/gpt-5@single",
        "anthropic/claude@team",
        "fed/gdpnow",
        "fed/nyfed-staff",
        "baseline/last-value",
        "baseline/hist-mean",
        "consensus/investing",
    ]
    c = model_colors(ids)
    assert c == model_colors(list(reversed(ids)))  # order of appearance does not matter
    assert c["consensus/investing"] == "#555555"
    for fam in ("fed/", "baseline/"):
        fam_colors = [v for k, v in c.items() if k.startswith(fam)]
        assert len(set(fam_colors)) == len(fam_colors)
    agents = {c["openai/gpt-5@single"], c["anthropic/claude@team"]}
    assert len(agents) == 2 and not agents & {c["fed/gdpnow"], c["baseline/last-value"]}


def test_save_png_writes_a_palette_png_of_the_figure_size(tmp_path):
    fig, axes = new_figure(4.0, 2.5)
    axes[0, 0].bar([0, 1], [1, 2], color=["#d62728", "#1f77b4"])
    path = save_png(Plot("x", "x", "", fig), tmp_path / "sub" / "x.png")
    assert path.is_file() and [p.name for p in path.parent.iterdir()] == ["x.png"]  # no temporary file left
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    with Image.open(path) as im:
        assert im.format == "PNG" and im.mode == "P"
        assert im.size == (400, 250)  # 4.0 x 2.5 in at 100 dpi
        rgb = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(int)
    for color in ((0xD6, 0x27, 0x28), (0x1F, 0x77, 0xB4)):  # both bars are in the image
        assert (np.abs(rgb - color).max(axis=1) <= 8).sum() > 500
    assert png_base64(path) == __import__("base64").b64encode(path.read_bytes()).decode()


def test_raw_values_round_trip_and_display_text():
    x = 0.1 + 0.2
    assert float(raw_value(x)) == x and raw_value(x) == "0.30000000000000004"
    assert raw_value(None) == "" and raw_value(True) == "true" and raw_value(7) == "7"
    assert raw_value(date(2026, 3, 1)) == "2026-03-01"
    assert raw_value(datetime(2026, 4, 10, 12, 30, tzinfo=UTC)) == "2026-04-10T12:30:00+00:00"
    assert cell_text(None, "+.4f") == "n/a" and cell_text(math.nan, "+.4f") == "n/a"
    assert cell_text(-0.00123, "+.4f") == "-0.0012" and cell_text(0.5, lambda v: f"{100 * v:.0f}%") == "50%"


def _pages():
    rows = [
        {"model_id": "m<script>alert(1)</script>", "score": 0.1 + 0.2, "n": 3},
        {"model_id": "fed/gdpnow", "score": None, "n": 0},
    ]
    cols = [
        Column("model_id", "model"),
        Column("score", "score", "+.4f", True, "meaning"),
        Column("n", "n", numeric=True),
    ]
    tab1 = Tab(
        "one",
        "One",
        [
            TextBlock(["coverage: 3 of 4"], links=[("b.html", "page b")]),
            TableBlock("t1", "Table", cols, rows, "caption", key=("model_id",)),
            FigureBlock("figures/f.png", "Figure", "what it shows"),
        ],
    )
    tab2 = Tab("two", "Two", [TableBlock("t2", "Empty", cols, [])])
    return Page("b", "Page B", [tab1, tab2], intro=["intro"], facts={"span": "2025-11 .. 2026-05"}), Page(
        "index", "Home", [Tab("overview", "Overview", [TextBlock(["hi"])])]
    )


def test_render_site_writes_pages_whose_cells_hold_the_stored_values(tmp_path):
    page, index = _pages()
    written = render_site(
        tmp_path, [page], index, site_title="t", generated_at=datetime(2026, 5, 6, 7, 8, tzinfo=UTC)
    )
    assert sorted(p.name for p in written) == ["b.html", "index.html", "site.css", "site.js"]
    html = (tmp_path / "b.html").read_text()
    dom = read_dom(html)
    rows = dom.rows("t1")
    assert [r["model_id"].value for r in rows] == ["m<script>alert(1)</script>", "fed/gdpnow"]
    assert float(rows[0]["score"].value) == 0.1 + 0.2 and rows[0]["score"].text == "+0.3000"
    assert rows[1]["score"].value == "" and rows[1]["score"].text == "n/a"
    assert [k for k, _ in dom.tables["t1"]] == ["m<script>alert(1)</script>", "fed/gdpnow"]
    assert "<script>alert" not in html  # escaped
    assert dom.tables["t2"] == []  # the empty table says so in a row without cells
    assert "nothing stored" in html and "2026-05-06 07:08 UTC" in html
    assert dom.images == ["figures/f.png"]
    # offline: no URL outside the site
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)
    assert set(dom.links) == {"site.css", "site.js", "index.html", "b.html"}
    assert set(dom.sections) == {"one", "two"}
    assert stat.S_IMODE((tmp_path / "b.html").stat().st_mode) == 0o644


def test_render_site_refuses_duplicate_ids_and_a_wrong_index(tmp_path):
    page, index = _pages()
    when = datetime(2026, 1, 1, tzinfo=UTC)
    page.tabs.append(Tab("one", "again"))
    with pytest.raises(ValueError, match="duplicate tab ids"):
        render_site(tmp_path, [page], index, site_title="t", generated_at=when)
    page, index = _pages()
    with pytest.raises(ValueError, match="slug must be 'index'"):
        render_site(tmp_path, [page], page, site_title="t", generated_at=when)
    with pytest.raises(ValueError, match="unique and not 'index'"):
        render_site(tmp_path, [page, page], index, site_title="t", generated_at=when)


def test_site_dir_is_next_to_the_database(tmp_path):
    assert site_dir(tmp_path / "data" / "x.duckdb") == (tmp_path / "data" / "site").resolve()
    assert site_dir(Path("data/leaf_live.duckdb")) == Path("data/site").resolve()
    with pytest.raises(ValueError, match="in-memory"):
        site_dir(":memory:")


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(monkeypatch):
    import browser

    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("LEAF_LIVE_BROWSER_TESTS", "1")
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed.*required"):
        browser.require_chromium()
    monkeypatch.delenv("LEAF_LIVE_BROWSER_TESTS")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        browser.require_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        browser.require_chromium()
    monkeypatch.setenv("LEAF_LIVE_BROWSER_TESTS", "0")  # only "1" demands the browser
    with pytest.raises(pytest.skip.Exception):
        browser.require_chromium()
    # an installed browser is used whatever the switches say (Debian names it chromium, Ubuntu
    # chromium-browser)
    monkeypatch.setattr(
        browser.shutil, "which", lambda name: "/opt/cb" if name == "chromium-browser" else None
    )
    monkeypatch.setenv("LEAF_LIVE_BROWSER_TESTS", "1")
    assert browser.require_chromium() == "/opt/cb"


def test_ci_installs_debians_chromium_and_demands_the_browser_test():
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text().splitlines()
    # a command line (not the message that names the command): [VAR=value ...] apt-get install [flags] ...
    # chromium
    install = [
        i
        for i, line in enumerate(ci)
        if re.match(r"\s*(\w+=\S+\s+)*apt-get install\b", line) and "chromium" in line.split(">")[0].split()
    ]
    assert install, "no 'apt-get install ... chromium' line"
    switch = ci.index("export LEAF_LIVE_BROWSER_TESTS=1")
    tests = ci.index(".venv/bin/python -m pytest")
    assert max(install) < switch < tests  # installed, then demanded, then the tests run
