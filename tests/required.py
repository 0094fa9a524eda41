"""The one rule for a test whose service or tool is missing here: it FAILS where it is demanded (its
``LEAF_LIVE_*`` switch is ``1``, or ``CI`` is set: ``.ci/run`` sets the switches) and skips otherwise, with
the same message and how to start what is missing."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def demanded(switch: str) -> bool:
    """Whether the environment demands the tests behind ``switch`` (e.g. ``LEAF_LIVE_PROD_TESTS``): the
    switch is ``1`` or ``CI`` is ``1``/``true``/``yes``."""
    return os.environ.get(switch) == "1" or os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(msg: str, switch: str) -> NoReturn:
    """Fail (demanded, see :func:`demanded`) or skip the calling test with ``msg``."""
    if demanded(switch):
        pytest.fail(f"{msg} [{switch}=1 / CI: required]")
    pytest.skip(msg)
