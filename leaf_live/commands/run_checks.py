"""The checks ``leaf-live run`` makes before any work starts (issue 12 item 6): every flag's syntax, inverted
spans, the database path (a directory, an unwritable place, a file another process writes), the snapshot
directory (never a silent switch to the live services), and the requested span against the release months the
calendar sources hold. Each failure is one line (:class:`leaf_live.commands.common.CommandError`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from leaf_live.commands.common import CommandError, check_writable_db, db_path
from leaf_live.core.pit import check_month
from leaf_live.core.settings import get_settings
from leaf_live.core.sources import SourceError

MONTH_FLAGS = ("start", "end", "fit_cutoff", "backtest_start", "backtest_end", "arima_from", "arima_to")
SPANS = (("start", "end"), ("backtest_start", "backtest_end"), ("arima_from", "arima_to"))
FIRST_MONTH = "2010-01"


@dataclass(frozen=True)
class RunPlan:
    """What ``leaf-live run`` will do: the database, the resources and the release months."""

    db: Path
    resources: dict
    start: str
    end: str
    first: str  # first and last release month the calendar sources hold
    last: str


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def check_run_args(args: argparse.Namespace) -> RunPlan:
    """Check ``leaf-live run``'s flags, paths and span (module doc) and return the :class:`RunPlan`; raises
    :class:`CommandError` (or the one-line :class:`leaf_live.core.storage.StorageError` /
    :class:`leaf_live.core.settings.SettingsError`)."""
    from resources import default_resources

    for flag in MONTH_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            try:
                check_month(value)
            except ValueError:
                raise CommandError(f"{_flag(flag)} {value!r}: expected a month YYYY-MM") from None
    if args.start and args.start < FIRST_MONTH:
        raise CommandError(f"--start {args.start}: release months start at {FIRST_MONTH}")
    for lo, hi in SPANS:
        a, b = getattr(args, lo, None), getattr(args, hi, None)
        if a and b and b < a:
            raise CommandError(f"{_flag(hi)} {b} is before {_flag(lo)} {a}")
    if args.boot_draws is not None and args.boot_draws < 1:
        raise CommandError(f"--boot-draws {args.boot_draws}: expected a positive integer")
    settings = get_settings()
    if args.snapshot is not None:
        if not Path(args.snapshot).is_dir():
            raise CommandError(f"--snapshot {args.snapshot}: not a directory")
    elif settings.transport == "snapshot":
        settings.require_snapshot()  # LEAF_LIVE_SNAPSHOT names a missing directory: one line
    elif not settings.transport_set:
        raise CommandError(
            f"no snapshot directory: {settings.snapshot_searched}; pass --snapshot DIR or set"
            " LEAF_LIVE_SNAPSHOT, or set LEAF_LIVE_TRANSPORT=live to read the live services"
        )
    db = check_writable_db(db_path(args.db))
    resources = default_resources(db=db, snapshot=args.snapshot)
    try:
        cal = resources["calendar"].client().calendar()
    except SourceError as exc:
        raise CommandError(f"calendar source: {' '.join(str(exc).split())}") from None
    if cal.height == 0:
        raise CommandError("the configured calendar sources hold no releases")
    first, last = str(cal["partition_key"].min()), str(cal["partition_key"].max())
    if args.start and args.start > last:
        raise CommandError(
            f"--start {args.start} is after the last release month the calendar sources hold ({last})"
        )
    if args.end and args.end < max(first, FIRST_MONTH):
        raise CommandError(
            f"--end {args.end} is before the first release month the calendar sources hold "
            f"({max(first, FIRST_MONTH)})"
        )
    _check_backtest(args, last)
    start, end = args.start or max(first, FIRST_MONTH), args.end or last
    return RunPlan(db, resources, start, end, first, last)


def _check_backtest(args: argparse.Namespace, last: str) -> None:
    """The backtest with its defaults filled in (assets.macro_scoring): scored months the sources hold, and a
    beta fit that ends before the first scored month (LiveMacroEval App. K: the backtest is out of sample)."""
    from assets.macro_scoring import DEFAULT_FIT_WINDOWS, DEFAULT_MODES

    mode = next(m for m in DEFAULT_MODES if m["name"] == "backtest")
    fit = next(f for f in DEFAULT_FIT_WINDOWS if f["name"] == "backtest")
    bs, be = args.backtest_start or mode["first_month"], args.backtest_end or mode["last_month"]
    cutoff = args.fit_cutoff or fit["last_month"]
    if bs > last:
        raise CommandError(
            f"--backtest-start {bs} is after the last release month the calendar sources hold ({last})"
        )
    if be < bs:
        raise CommandError(
            f"the backtest ends ({be}) before it starts ({bs}): set --backtest-start/--backtest-end"
        )
    if cutoff >= bs:
        raise CommandError(
            f"--fit-cutoff {cutoff} is not before the backtest's first month {bs}: the beta fit would "
            "see the releases the backtest scores (set --backtest-start after it)"
        )


def check_sigma_history(db: Path, start: str, end: str) -> None:
    """Before any write: the surprise scales (sigma_i, App. K.1 Eq. 3) are frozen on the releases of the
    historical window 2010-01 .. 2025-10, so every month of that window must be stored already or be in this
    run's span ``start`` .. ``end``; otherwise the run would fail halfway in ``surprise_scales`` (a fresh
    database with ``--start 2025-11``). Raises :class:`CommandError` in one line."""
    from leaf_live.core import storage
    from leaf_live.macro.scoring.surprises import HIST_END, HIST_START

    first, last = f"{HIST_START:%Y-%m}", f"{HIST_END:%Y-%m}"
    if start <= first and end >= last:
        return
    have: set[str] = set()
    if Path(db).exists():
        con = storage.connect_read_only(db)
        try:
            present = {
                r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            if "releases" in present:
                have = {r[0] for r in con.execute("SELECT DISTINCT partition_key FROM releases").fetchall()}
        finally:
            con.close()
    y, m = int(first[:4]), int(first[5:])
    missing = []
    while f"{y:04d}-{m:02d}" <= last:
        k = f"{y:04d}-{m:02d}"
        if k not in have and not (start <= k <= end):
            missing.append(k)
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    if missing:
        raise CommandError(
            f"--start {start} --end {end}: the surprise scales need the releases of {first} .. {last}, and"
            f" {len(missing)} of those months are neither stored in {db} nor in this run (first"
            f" {missing[0]});"
            f" run the full history once (leaf-live run without --start/--end) or widen the span"
        )
