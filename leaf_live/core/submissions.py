"""Forecasts made elsewhere (``external/<name>``), read from a CSV or Parquet file: what both tracks share.

A submission is all or nothing (issue 12 item 5): every row is checked, every problem is collected with its
1-based data row (header excluded, so CSV line = row + 1), the column, the value and the reason, and a
file with any problem raises :class:`SubmissionError` listing them all; nothing is stored. The track modules
(:mod:`leaf_live.macro.submissions`, :mod:`leaf_live.event.submissions`) hold the track rules (catalog units
and guardrails, release windows, task cutoffs); this module reads the file and parses cells strictly:

* numbers: a finite decimal (``1.5``, ``-0.2``, ``2e3``); empty, text, booleans, NaN and infinities are
refused;
* timestamps: ISO 8601 with an offset (``2026-03-25T04:00:00Z``, ``2026-03-25 00:00:00-04:00``), or a Parquet
  timestamp with a time zone; a naive time is refused, never guessed (DESIGN.md conventions: UTC);
* dates: ``YYYY-MM-DD`` (or a Parquet date);
* number lists: a JSON array of numbers (CSV) or a Parquet list of doubles.

The model id is ``external/<name>``, ``<name>`` of lower-case letters, digits, ``.``, ``_`` and ``-``
(DESIGN.md ``model_id`` conventions).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

EXTERNAL_PREFIX = "external/"
PRODUCER = "external_submissions"  # the producer slice of a track's forecast table the submissions own
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
FORMATS = ("csv", "parquet")


@dataclass(frozen=True)
class RowProblem:
    """One rejected cell or row: ``row`` 1-based data row (0 = the file as a whole), ``field`` the column
    (or ``row``), ``value`` as read, ``reason`` why."""

    row: int
    field: str
    value: Any
    reason: str

    def text(self, csv_lines: bool = True) -> str:
        where = (
            "file"
            if self.row == 0
            else (f"row {self.row} (line {self.row + 1})" if csv_lines else f"row {self.row}")
        )
        shown = self.value if isinstance(self.value, str) else ("" if self.value is None else str(self.value))
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{where}: {self.field}={shown!r}: {self.reason}"


class SubmissionError(ValueError):
    """The submission is refused; ``problems`` lists every rejected row (each with row number and reason), or
    one file-level problem (unreadable, empty, wrong columns, bad model id). The message is the first line:
    file, count of rejected rows; :meth:`lines` gives one line per problem."""

    def __init__(
        self, file: str, problems: Sequence[RowProblem], *, n_rows: int = 0, csv_lines: bool = True
    ) -> None:
        self.file = file
        self.problems = list(problems)
        self.n_rows = n_rows
        self.csv_lines = csv_lines
        rows = sorted({p.row for p in self.problems if p.row > 0})
        if rows:
            head = f"{file}: {len(rows)} of {n_rows} rows rejected, nothing stored"
        else:
            head = (
                f"{file}: {self.problems[0].reason}; nothing stored" if self.problems else f"{file}: refused"
            )
        super().__init__(head)

    def lines(self) -> list[str]:
        """The message, then one line per row problem (file-level problems are the message itself)."""
        out = [str(self)]
        out.extend(p.text(self.csv_lines) for p in self.problems if p.row > 0)
        return out


def check_model_id(model_id: str) -> str:
    """``model_id`` if it is ``external/<name>`` (module doc), else :class:`ValueError` naming it."""
    if not isinstance(model_id, str) or not model_id.startswith(EXTERNAL_PREFIX):
        raise ValueError(
            f"--model {model_id!r}: submitted forecasts are external/<name> (e.g. external/my-model)"
        )
    name = model_id[len(EXTERNAL_PREFIX) :]
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"--model {model_id!r}: <name> must be 1-64 lower-case letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return model_id


@dataclass
class SubmissionFile:
    """A read submission: ``rows`` as dicts (CSV cells as text, Parquet cells typed), ``columns`` in file
    order, ``sha256`` of the file bytes, ``format`` csv | parquet."""

    path: str
    format: str
    columns: list[str]
    rows: list[dict[str, Any]]
    sha256: str

    @property
    def csv_lines(self) -> bool:
        return self.format == "csv"


def file_format(path: str | Path) -> str:
    """``csv`` or ``parquet`` from the file name (``.csv``, ``.parquet`` / ``.pq``); :class:`ValueError`
    otherwise."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise ValueError(f"{path}: unknown file type {suffix or '(none)'!r}; give a .csv or .parquet file")


def read_submission(
    path: str | Path, *, required: Sequence[str], optional: Sequence[str] = ()
) -> SubmissionFile:
    """Read a submission file and check its columns: every ``required`` present, none outside ``required`` +
    ``optional``, none repeated. Raises :class:`SubmissionError` (file-level: unreadable, empty, wrong
    columns) and :class:`ValueError` for an unknown file type."""
    p = Path(path)
    fmt = file_format(p)
    name = str(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SubmissionError(
            name, [RowProblem(0, "file", name, f"cannot read: {exc.strerror or exc}")]
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if fmt == "csv":
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SubmissionError(
                name, [RowProblem(0, "file", name, f"not UTF-8 text ({exc.reason} at byte {exc.start})")]
            ) from None
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise SubmissionError(name, [RowProblem(0, "file", name, "empty file: no header row")])
        header = [h.strip() for h in header]
        _check_columns(name, header, required, optional)
        rows, problems = [], []
        for i, cells in enumerate(reader, start=1):
            if not cells or all(not c.strip() for c in cells):
                problems.append(RowProblem(i, "row", "", "empty row"))
                rows.append({})
                continue
            if len(cells) != len(header):
                problems.append(
                    RowProblem(
                        i, "row", ",".join(cells), f"{len(cells)} fields, the header has {len(header)}"
                    )
                )
                rows.append({})
                continue
            rows.append(dict(zip(header, cells)))
        if not rows:
            raise SubmissionError(
                name, [RowProblem(0, "file", name, "empty file: a header and no data rows")]
            )
        if problems:
            raise SubmissionError(name, problems, n_rows=len(rows))
        return SubmissionFile(name, fmt, header, rows, digest)
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # polars raises several error types for a bad file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SubmissionError(
            name, [RowProblem(0, "file", name, f"not a readable Parquet file ({first})")]
        ) from None
    _check_columns(name, frame.columns, required, optional)
    if frame.height == 0:
        raise SubmissionError(
            name, [RowProblem(0, "file", name, "empty file: no data rows")], csv_lines=False
        )
    return SubmissionFile(name, fmt, list(frame.columns), frame.to_dicts(), digest)


def rows_submission(
    name: str, rows: Sequence[Any], *, required: Sequence[str], optional: Sequence[str] = (), digest: str
) -> SubmissionFile:
    """A submission given as JSON row objects (the submission service, issue 21) in the same shape as a read
    file, so it goes through the same track checks: the columns are the union of the rows' keys (first-seen
    order); each row must hold every required field and no unknown one (a problem per row, named by the
    field); a row that is not an object, or no rows, is refused. ``digest`` is the content hash (hex).
    Raises :class:`SubmissionError`."""
    if not isinstance(rows, (list, tuple)) or not rows:
        raise SubmissionError(name, [RowProblem(0, "rows", "", "no rows: give a non-empty list of objects")])
    bad = [
        RowProblem(i, "row", str(r)[:60], "not a JSON object")
        for i, r in enumerate(rows, 1)
        if not isinstance(r, dict)
    ]
    if bad:
        raise SubmissionError(name, bad, n_rows=len(rows), csv_lines=False)
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    expected = ", ".join(list(required) + [f"[{c}]" for c in optional])
    fields = []  # per row and named by field, not CSV's file-level "wrong columns"
    for i, r in enumerate(rows, 1):
        fields.extend(
            RowProblem(i, c, None, f"missing; every row needs it ({expected})")
            for c in required
            if c not in r
        )
        fields.extend(
            RowProblem(i, c, r[c], f"unknown field; expected {expected}")
            for c in r
            if c not in required and c not in optional
        )
    if fields:
        raise SubmissionError(name, fields, n_rows=len(rows), csv_lines=False)
    return SubmissionFile(name, "json", columns, [dict(r) for r in rows], digest)


def _check_columns(
    name: str, header: Sequence[str], required: Sequence[str], optional: Sequence[str]
) -> None:
    seen, dup = set(), []
    for h in header:
        if h in seen:
            dup.append(h)
        seen.add(h)
    missing = [c for c in required if c not in seen]
    unknown = [c for c in header if c not in required and c not in optional]
    if dup or missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if unknown:
            parts.append(f"unknown column(s) {unknown}")
        if dup:
            parts.append(f"repeated column(s) {dup}")
        expected = list(required) + [f"[{c}]" for c in optional]
        raise SubmissionError(
            name,
            [
                RowProblem(
                    0,
                    "header",
                    ",".join(header),
                    f"wrong columns: {'; '.join(parts)}; expected {', '.join(expected)}",
                )
            ],
        )


# ------------------------------------------------------------------------------------------------
# strict cell parsers: each returns the value or raises ValueError with the reason
# ------------------------------------------------------------------------------------------------


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def parse_number(v: Any) -> float:
    """A finite float from a decimal text or a numeric cell (module doc); :class:`ValueError` with the
    reason."""
    if _blank(v):
        raise ValueError("empty: a number is required")
    if isinstance(v, bool):
        raise ValueError("not a number (a boolean)")
    if isinstance(v, (int, float)):
        x = float(v)
    elif isinstance(v, str):
        try:
            x = float(v.strip())
        except ValueError:
            raise ValueError("not a number") from None
    else:
        raise ValueError(f"not a number ({type(v).__name__})")
    if not math.isfinite(x):
        raise ValueError("not a finite number")
    return x


def parse_timestamp(v: Any) -> datetime:
    """A UTC datetime from ISO 8601 text with an offset or a tz-aware cell; naive times are refused."""
    if _blank(v):
        raise ValueError("empty: a timestamp with a time zone is required")
    if isinstance(v, datetime):
        t = v
    elif isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.strip())
        except ValueError:
            raise ValueError("not an ISO 8601 timestamp (e.g. 2026-03-25T04:00:00Z)") from None
    else:
        raise ValueError(f"not a timestamp ({type(v).__name__})")
    if t.tzinfo is None or t.utcoffset() is None:
        raise ValueError(
            "timestamp without a time zone: give an offset (e.g. 2026-03-25T04:00:00Z); naive times "
            "are never guessed"
        )
    return t.astimezone(UTC)


def parse_date(v: Any) -> date:
    """A date from ``YYYY-MM-DD`` text or a date cell."""
    if _blank(v):
        raise ValueError("empty: a date YYYY-MM-DD is required")
    if isinstance(v, datetime):
        raise ValueError("a timestamp where a date YYYY-MM-DD is expected")
    if isinstance(v, date):
        return v
    if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v.strip()):
        try:
            return date.fromisoformat(v.strip())
        except ValueError:
            raise ValueError("not a calendar date") from None
    raise ValueError("not a date YYYY-MM-DD")


def parse_text(v: Any) -> str:
    """Non-empty text (stripped)."""
    if _blank(v):
        raise ValueError("empty")
    if not isinstance(v, str):
        raise ValueError(f"not text ({type(v).__name__})")
    return v.strip()


def parse_number_list(v: Any) -> list[float]:
    """A non-empty list of finite numbers from a JSON array text or a list cell."""
    if _blank(v):
        raise ValueError("empty: a list of numbers is required")
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise ValueError("not a JSON array of numbers (e.g. [101.5, 102.0])") from None
    if isinstance(v, pl.Series):
        v = v.to_list()
    if not isinstance(v, (list, tuple)) or not v:
        raise ValueError("not a non-empty array of numbers")
    out = []
    for k, x in enumerate(v):
        try:
            out.append(parse_number(x))
        except ValueError as exc:
            raise ValueError(f"element {k}: {exc}") from None
    return out


def optional(v: Any) -> bool:
    """True when the cell is present (not empty / null)."""
    return not _blank(v)


class RowChecker:
    """Collects :class:`RowProblem`s while a track module checks rows: ``cell(row, field, value, parser)``
    returns the parsed value or None after recording the problem; ``reject(row, field, value, reason)``.

    ``typed`` (a JSON submission, ``sub.format == "json"``): JSON has number and array types, so a number or
    a number list sent as a JSON string (``"2.9"``) is refused instead of read like a CSV cell's text."""

    def __init__(self, typed: bool = False) -> None:
        self.problems: list[RowProblem] = []
        self.typed = typed

    def cell(self, row: int, field: str, value: Any, parser) -> Any:
        if self.typed and isinstance(value, str) and parser in _JSON_TYPES:
            want = _JSON_TYPES[parser]
            self.problems.append(RowProblem(row, field, value, f"a JSON string where {want} is expected"))
            return None
        try:
            return parser(value)
        except ValueError as exc:
            self.problems.append(RowProblem(row, field, value, str(exc)))
            return None

    def reject(self, row: int, field: str, value: Any, reason: str) -> None:
        self.problems.append(RowProblem(row, field, value, reason))

    def duplicates(self, keys: Mapping[int, tuple], field: str, shown: Mapping[int, Any]) -> None:
        """Reject every row whose key equals an earlier row's (``keys``: row -> key tuple, only rows whose key
        parsed), naming the first row with that key."""
        first: dict[tuple, int] = {}
        for row in sorted(keys):
            k = keys[row]
            if k in first:
                self.reject(row, field, shown[row], f"duplicate key: same {field} as row {first[k]}")
            else:
                first[k] = row

    def raise_if_any(self, sub: SubmissionFile) -> None:
        if self.problems:
            self.problems.sort(key=lambda p: p.row)
            raise SubmissionError(sub.path, self.problems, n_rows=len(sub.rows), csv_lines=sub.csv_lines)


_JSON_TYPES = {parse_number: "a JSON number", parse_number_list: "a JSON array of numbers"}


def row_numbers(rows: Iterable[Any]) -> Iterable[tuple[int, Any]]:
    """``(1-based row, row)``."""
    return enumerate(rows, start=1)
