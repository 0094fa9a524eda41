"""The docs stay true: the table reference is the one generated from the schema definitions, and README's
quickstart test command is the one CI runs."""

from __future__ import annotations

from pathlib import Path

from leaf_live.cli import TABLES_DOC, tables_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_table_reference_matches_schemas():
    text = (ROOT / TABLES_DOC).read_text()
    assert text.strip() == tables_markdown().strip(), (
        f"{TABLES_DOC} is stale: regenerate with `.venv/bin/leaf-live tables > {TABLES_DOC}`"
    )


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = ".venv/bin/python -m pytest"
    assert f"\n{command}\n" in readme and f"\n{command}\n" in ci
