"""What ``leaf-live run`` shows while it works and where the time went: a progress display on stderr (rich
bars with counts and ETA on a terminal, plain lines otherwise) fed by the run's step events and by the
progress tasks of the steps (:mod:`leaf_live.core.progress`), and the wall and CPU time of every stage.

No Dagster import: :func:`leaf_live.commands.run_report.execute_run` translates the run's events into
:meth:`RunProgress.stage_started` / :meth:`RunProgress.stage_finished` calls. CPU time counts this
process and its waited-for children (the auto-ARIMA pool, dbt), from :func:`os.times`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from leaf_live.core import progress


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its terminated, waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class Stage:
    """One stage of a run: ``name``, wall seconds, CPU seconds (process + children), how many steps it
    groups (asset checks are one stage per run), and ``peak_mib``: this process's peak resident memory (MiB)
    when the stage ended, so the stage where it rises is the one that set it."""

    name: str
    wall: float = 0.0
    cpu: float = 0.0
    steps: int = 1
    failed: bool = False
    peak_mib: float | None = None


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (``getrusage``: KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fmt_s(s: float | None) -> str:
    if s is None:
        return "?"
    s = int(round(s))
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s} s"


class RunProgress:
    """Progress display and stage clock of one ``leaf-live run``.

    ``total_steps``: steps the run will execute (for the overall bar). ``stream``: where the display goes
    (default stderr; stdout is hidden during the run so dbt's echo stays out of the summary). ``live``: rich
    bars (default: when ``stream`` is a terminal), else one plain line per finished stage of at least
    ``min_line_s`` seconds, and per quarter and at the end of a progress task once it has run ``min_task_s``
    seconds. Use as a context manager; :attr:`stages` holds the timings.
    """

    def __init__(
        self,
        total_steps: int = 0,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        min_line_s: float = 1.0,
        min_task_s: float = 5.0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total_steps = total_steps
        self.min_line_s = min_line_s
        self.min_task_s = min_task_s
        self.stages: list[Stage] = []
        self._open: dict[str, tuple[float, float]] = {}
        self._checks: Stage | None = None
        self._lock = threading.Lock()
        self._marks: dict[int, int] = {}
        self._bars: dict[int, object] = {}
        self._progress = None
        self._overall = None
        self._unsubscribe = None
        self._steps_done = 0

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> RunProgress:
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
                refresh_per_second=4,
            )
            self._progress.start()
            self._overall = self._progress.add_task("steps", total=self.total_steps or None, unit="steps")
        self._unsubscribe = progress.subscribe(self._on_task)
        return self

    def __exit__(self, *exc) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._progress is not None:
            self._progress.stop()

    # -- stages ------------------------------------------------------------------------------------
    def stage_started(self, name: str) -> None:
        """A stage (a Dagster step, or a phase such as 'load definitions') began."""
        with self._lock:
            self._open[name] = (time.monotonic(), cpu_seconds())
        if self._progress is not None:
            from rich.markup import escape  # a name in [brackets] would read as a style tag

            self._progress.update(
                self._overall, description=escape(f"steps: {name}"), total=self.total_steps or None
            )

    def stage_finished(
        self, name: str, *, failed: bool = False, check: bool = False, step: bool = False
    ) -> Stage | None:
        """The stage ``name`` ended; records its wall and CPU time (asset checks add up into one stage).
        ``step``: it is one of the run's steps (counted on the overall bar)."""
        with self._lock:
            start = self._open.pop(name, None)
            if start is None:
                return None
            wall, cpu = time.monotonic() - start[0], cpu_seconds() - start[1]
            if check:
                if self._checks is None:
                    self._checks = Stage("asset checks", 0.0, 0.0, 0)
                    self.stages.append(self._checks)
                stage = self._checks
                stage.wall += wall
                stage.cpu += cpu
                stage.steps += 1
                stage.failed |= failed
                stage.peak_mib = peak_rss_mib()
            else:
                stage = Stage(name, wall, cpu, 1, failed, peak_rss_mib())
                self.stages.append(stage)
            self._steps_done += step or check
        if self._progress is not None:
            self._progress.update(self._overall, completed=self._steps_done)
        elif not check and (wall >= self.min_line_s or failed):
            n = f"[{self._steps_done}/{self.total_steps}] " if step and self.total_steps else ""
            self._line(f"{n}{name}: {'FAILED after ' if failed else ''}{wall:.1f} s wall, {cpu:.1f} s CPU")
        return stage

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    # -- progress tasks ----------------------------------------------------------------------------
    def _on_task(self, task: progress.Task, event: str) -> None:
        key = id(task)
        if self._progress is not None:
            if event == "start":
                from rich.markup import escape

                self._bars[key] = self._progress.add_task(
                    escape(f"  {task.name}"), total=task.total or None, unit=task.unit
                )
            bar = self._bars.get(key)
            if bar is not None:
                self._progress.update(bar, completed=task.done)
                if event == "end":
                    self._progress.remove_task(bar)
                    self._bars.pop(key, None)
            return
        # plain lines for tasks that take a while: every quarter, and the end
        if event == "start":
            self._marks[key] = 0
        elif event == "advance" and task.total and task.elapsed >= self.min_task_s:
            q = min(3, 4 * task.done // task.total)
            if q > self._marks.get(key, 0):
                self._marks[key] = q
                self._line(
                    f"  {task.name}: {task.done}/{task.total} {task.unit}, {_fmt_s(task.elapsed)}, "
                    f"ETA {_fmt_s(task.eta())}"
                )
        elif event == "end":
            if self._marks.pop(key, None) is not None and task.elapsed >= self.min_task_s:
                self._line(f"  {task.name}: {task.done}/{task.total} {task.unit} in {task.elapsed:.1f} s")


def stage_table(
    stages: list[Stage], *, total_wall: float | None = None, total_cpu: float | None = None
) -> str:
    """The wall and CPU seconds of each stage (in run order) and their total, as aligned text; the stages'
    share of the wall time and the process's peak memory at each stage's end are shown too."""
    wall = total_wall if total_wall is not None else sum(s.wall for s in stages)
    cpu = total_cpu if total_cpu is not None else sum(s.cpu for s in stages)
    width = max([len(s.name) + (len(f" ({s.steps})") if s.steps > 1 else 0) for s in stages] + [5])
    lines = [f"{'stage':<{width}} {'wall s':>8} {'CPU s':>8} {'share':>6} {'peak MiB':>9}"]
    for s in stages:
        name = s.name + (f" ({s.steps})" if s.steps > 1 else "") + (" FAILED" if s.failed else "")
        share = f"{100 * s.wall / wall:5.1f}%" if wall > 0 else ""
        peak = f"{s.peak_mib:9.0f}" if s.peak_mib is not None else ""
        lines.append(f"{name:<{width}} {s.wall:8.1f} {s.cpu:8.1f} {share:>6} {peak}".rstrip())
    lines.append(f"{'total':<{width}} {wall:8.1f} {cpu:8.1f}")
    return "\n".join(lines)
