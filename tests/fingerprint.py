"""Ledger fingerprints of fixed scenarios: what pins the model's behaviour.

``python tests/fingerprint.py`` prints the fingerprints of every example and validation
scenario (seed 0, default limits) as JSON; ``tests/fingerprints.json`` holds the pinned
ones and ``tests/test_fingerprints.py`` compares. A change of the model that moves a
fingerprint must be on purpose: regenerate the file with
``python tests/fingerprint.py > tests/fingerprints.json`` and say why in the commit.

A fingerprint is the SHA-256 of the per-copy ledger (id, state, socket, pipe, rule, end
time, send time, size, origin; times rounded to 1 ns so that the last bit of a float
sum does not count) and of the per-socket counters.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = sorted((ROOT / "examples").glob("*.toml")) + sorted((ROOT / "validation" / "scenarios").glob("*.toml"))


def fingerprint(path: Path, seed: int = 0) -> str:
    import zsim

    result = zsim.run(path, seed)
    table = result.messages
    digest = hashlib.sha256()
    order = np.lexsort((table["socket"], table["msg_id"]))
    for key in ("msg_id", "state", "socket", "pipe", "rule", "size", "origin"):
        digest.update(np.ascontiguousarray(table[key][order]).astype(np.int64).tobytes())
    for key in ("time", "t0"):
        digest.update(np.round(table[key][order] * 1e9).astype(np.int64).tobytes())
    counters = {name: {k: v for k, v in sock.items() if isinstance(v, int)} for name, sock in result.summary["sockets"].items()}
    digest.update(json.dumps(counters, sort_keys=True).encode())
    return digest.hexdigest()[:20]


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


if __name__ == "__main__":
    print(json.dumps({relative(path): fingerprint(path) for path in SCENARIOS}, indent=1, sort_keys=True))
