"""README's "Join the benchmark" example writes its files only where git ignores them (issue 21: the
example's receipts_pubkey.pem, round.json and receipt.json used to land untracked in the repo root)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_join_example_writes_only_ignored_files():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Join the benchmark", 1)[1].split("\n## ", 1)[0]
    code = "\n".join(re.findall(r"```bash\n(.*?)```", section, flags=re.S))
    targets = re.findall(r"(?<![0-9&])>\s*([^\s|;&)]+)", code)
    assert sorted(Path(t).name for t in targets) == ["receipt.json", "receipts_pubkey.pem", "round.json"]
    for t in targets:
        assert "/" in t, f"{t}: written in the repo root"
        ignored = subprocess.run(["git", "check-ignore", "-q", t], cwd=ROOT).returncode
        assert ignored == 0, f"{t}: not ignored by git"
