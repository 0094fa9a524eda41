"""deploy/production/services.sh: ``start`` keeps an existing cluster (durable: fsync on, Redis
append-only), ``fresh`` builds a throwaway one (issue 20 item 5). Runs the real script on private ports in a
temporary directory; needs the PostgreSQL and Redis binaries (CI installs them: required there)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from required import unavailable

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "production" / "services.sh"
PG_PORT, REDIS_PORT = "55511", "56511"


def _bins() -> tuple[str, str]:
    psql = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql")) or [shutil.which("psql") or ""]
    redis_cli = shutil.which("redis-cli") or ""
    if not (psql[-1] and redis_cli and shutil.which("redis-server")):
        msg = "PostgreSQL / Redis binaries missing (apt-get install postgresql redis-server)"
        unavailable(msg, "LEAF_LIVE_PROD_TESTS")
    return psql[-1], redis_cli


def test_start_keeps_the_cluster_and_fresh_wipes_it():
    psql, redis_cli = _bins()
    # not pytest's tmp_path: as root the server runs as `postgres`, which cannot enter pytest-of-root (0700)
    base = Path(tempfile.mkdtemp(prefix="leaf_live_svc_test_"))
    os.chmod(base, 0o755)
    d = base / "svc"
    env = {
        **os.environ,
        "LEAF_LIVE_SERVICES_DIR": str(d),
        "LEAF_LIVE_PG_PORT": PG_PORT,
        "LEAF_LIVE_REDIS_PORT": REDIS_PORT,
    }

    def sh(*args: str) -> str:
        out = subprocess.run(
            ["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=180
        )
        assert out.returncode == 0, out.stderr
        return out.stderr

    def q(sql: str, db: str = "leaf_live") -> str:
        out = subprocess.run(
            [psql, "-h", "127.0.0.1", "-p", PG_PORT, "-U", "leaf_live", "-d", db, "-tAc", sql],
            env={**env, "PGPASSWORD": "leaf-live-local"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def redis(*args: str) -> str:
        cmd = [redis_cli, "-p", REDIS_PORT, *args]
        out = subprocess.run(
            cmd, env={**env, "REDISCLI_AUTH": "leaf-live-local"}, capture_output=True, text=True
        )
        return out.stdout.strip()

    try:
        assert "new cluster, fsync on" in sh("start")
        assert q("SHOW fsync") == "on"
        # the submission service's inbox: its own database, its URL in inbox.env (not in env)
        inbox_env = (d / "inbox.env").read_text()
        assert (
            f"export LEAF_LIVE_INBOX=postgresql://leaf_live@127.0.0.1:{PG_PORT}/leaf_live_inbox" in inbox_env
        )
        assert "LEAF_LIVE_INBOX" not in (d / "env").read_text()
        assert q("SELECT current_database()", db="leaf_live_inbox") == "leaf_live_inbox"
        q("DROP DATABASE leaf_live_inbox")  # a cluster kept from before the inbox existed
        sh("stop")
        assert "kept cluster" in sh("start")
        assert q("SELECT count(*) FROM pg_database WHERE datname = 'leaf_live_inbox'") == "1"
        q("CREATE TABLE kept(x int); INSERT INTO kept VALUES (42)")
        redis("SET", "queued", "task-1")
        time.sleep(1.5)  # Redis appends every second
        sh("stop")
        assert "kept cluster, fsync on" in sh("start")
        assert q("SELECT x FROM kept") == "42" and redis("GET", "queued") == "task-1"
        assert "new cluster, fsync off" in sh("fresh")
        assert q("SELECT count(*) FROM pg_tables WHERE tablename = 'kept'") == "0"
        assert q("SHOW fsync") == "off" and redis("GET", "queued") == ""
    finally:
        sh("stop")
        shutil.rmtree(base, ignore_errors=True)
