"""README.md stays true: its table documentation is the one generated from the schema definitions,
and its quickstart test command is the one CI runs."""

from __future__ import annotations

from pathlib import Path

from leaf_live.cli import tables_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tables_match_schemas():
    text = (ROOT / "README.md").read_text()
    begin = text.index("<!-- TABLES:BEGIN")
    begin = text.index("\n", begin) + 1
    end = text.index("<!-- TABLES:END -->")
    assert text[begin:end].strip() == tables_markdown().strip(), (
        "README table docs are stale: regenerate with `python tests/test_readme.py`"
    )


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = ".venv/bin/python -m pytest"
    assert f"\n{command}\n" in readme and f"\n{command}\n" in ci


def regenerate() -> None:
    path = ROOT / "README.md"
    text = path.read_text()
    head, rest = text.split("<!-- TABLES:BEGIN", 1)
    marker_line, _ = rest.split("\n", 1)
    _, tail = rest.split("<!-- TABLES:END -->", 1)
    path.write_text(f"{head}<!-- TABLES:BEGIN{marker_line}\n{tables_markdown().strip()}\n<!-- TABLES:END -->{tail}")


if __name__ == "__main__":
    regenerate()
