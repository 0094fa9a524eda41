"""Progress of long steps: how many of a known number of items are done, reported by the code that does the
work and shown by whoever listens (``leaf-live run``'s progress display, the Dagster log of the step).

The science takes a plain callback ``progress(n)`` ("n more items done", :data:`Advance`) and never knows who
listens; the wiring opens a :class:`Task` (name, total, unit), passes ``task.advance`` down and closes the
task. Listeners subscribe process-wide (:func:`subscribe`) and receive ``(task, event)`` with ``event`` one of
``'start'``, ``'advance'``, ``'end'``. No Dagster import; listeners must be quick (they run in the caller's
thread) and must not raise (an exception in one is swallowed so the work never fails for a display).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

Advance = Callable[[int], None]  # progress(n): n more items done
Listener = Callable[["Task", str], None]

_listeners: list[Listener] = []
_lock = threading.Lock()


@dataclass
class Task:
    """One long piece of work: ``name`` (e.g. ``'arima_nowcasts: histories fitted'``), ``total`` items of
    ``unit``, ``done`` so far, ``started`` (``time.monotonic()``), ``ended`` when closed."""

    name: str
    total: int
    unit: str = "items"
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    def advance(self, n: int = 1) -> None:
        """``n`` more items done (the :data:`Advance` callback). Raises :class:`ValueError` for n < 0."""
        if n < 0:
            raise ValueError(f"progress of {self.name!r}: n={n} must not be negative")
        with _lock:
            self.done += n
        _emit(self, "advance")

    def set_total(self, total: int) -> None:
        """Correct the number of items once it is known (e.g. only the valid histories get fitted)."""
        if total < 0:
            raise ValueError(f"progress of {self.name!r}: total={total} must not be negative")
        with _lock:
            self.total = int(total)
        _emit(self, "advance")

    def close(self) -> None:
        """The work is over (listeners get ``'end'`` once; later calls do nothing): for a task whose work ends
        before the block that opened it (:func:`task` closes it on exit otherwise)."""
        with _lock:
            if self.ended is not None:
                return
            self.ended = time.monotonic()
        _emit(self, "end")

    @property
    def elapsed(self) -> float:
        """Seconds since the task started (until it ended)."""
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    def eta(self) -> float | None:
        """Seconds left at the average rate so far (None before the first item)."""
        if self.done <= 0 or self.total <= 0:
            return None
        return max(0.0, self.elapsed * (self.total - self.done) / self.done)


def _emit(task: Task, event: str) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(task, event)
        except Exception:  # a display must never fail the work it shows
            pass


def subscribe(listener: Listener) -> Callable[[], None]:
    """Add a listener for every task of this process; returns the function that removes it."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


@contextmanager
def task(name: str, total: int, unit: str = "items") -> Iterator[Task]:
    """Open a :class:`Task` of ``total`` items (listeners get ``'start'``), yield it, and close it on exit
    (``'end'``, also when the work raises). Raises :class:`ValueError` for a negative total."""
    if total < 0:
        raise ValueError(f"progress of {name!r}: total={total} must not be negative")
    t = Task(name, int(total), unit)
    _emit(t, "start")
    try:
        yield t
    finally:
        t.close()
