"""Shared by both tracks (no Dagster, no environment reads outside :mod:`.settings`): the storage engine
(:mod:`.storage`: schema registry, partition replace, read-only connections), point-in-time and calendar
rules (:mod:`.pit`), source-connector helpers (:mod:`.sources`), the one LLM call path (:mod:`.llm`) and the
settings resolver (:mod:`.settings`)."""
