"""Live participation (issue 21): open rounds, the submission service with signed receipts, its inbox, and
the store step that moves accepted submissions into the track tables. Science-side: no dagster import; the
Dagster sensor is ``sensors/participation.py``."""
