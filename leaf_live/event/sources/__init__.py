"""Event-track source connectors: each returns a typed polars frame with ``available_at`` and has a snapshot
transport (files in the service's own format under ``LEAF_LIVE_SNAPSHOT``) and a live transport (the
library / API), behind one Protocol per source (:mod:`.markets`, :mod:`.weather`, :mod:`.electricity`,
:mod:`.prediction_markets`)."""
