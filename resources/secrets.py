"""The secret values of this process's environment, registered with the one redaction rule
(:mod:`leaf_live.core.redaction`): the wiring reads the environment, the science never does.

Every variable whose name holds ``KEY``, ``SECRET``, ``TOKEN``, ``PASSWORD``, ``PASSWD`` or ``CREDENTIAL``
(``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``PGPASSWORD``, ...) has its value hidden,
whatever its shape, from every stored text column (``leaf_live.core.storage`` redacts each frame it writes)
and every log record. Called when the resources are built (:func:`resources.default_resources`), when a run
opens the database or the LLM client (each step process of a multiprocess or Celery executor), and by the
``leaf-live`` command at start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from leaf_live.core.redaction import secret_values_of, set_secret_values


def register_environment_secrets(environ: Mapping[str, str] | None = None) -> int:
    """Register the secret values of ``environ`` (default ``os.environ``, read now) with
    :func:`leaf_live.core.redaction.set_secret_values`; returns how many (the values are never returned,
    logged or stored)."""
    values = secret_values_of(os.environ if environ is None else environ)
    set_secret_values(values)
    return len(values)


__all__ = ["register_environment_secrets"]
