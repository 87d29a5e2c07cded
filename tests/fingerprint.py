"""Ledger fingerprints of fixed scenarios: what pins the model's behaviour.

``python tests/fingerprint.py`` prints the fingerprints of every example and validation
scenario (seed 0, default limits) and of the examples and study scenarios with a second
seed as JSON; ``tests/fingerprints.json`` holds the pinned
ones and ``tests/model/test_fingerprints.py`` compares. A change of the model that moves a
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
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = sorted((ROOT / "examples").glob("*.toml")) + sorted((ROOT / "validation" / "scenarios").glob("*.toml"))
#: pinned with a second seed too: the examples and the studies' scenarios (random
#: arrivals, services and sizes, so a second seed exercises other draws and orders)
SECOND_SEED = 1
SEEDED = sorted((ROOT / "examples").glob("*.toml")) + [
    ROOT / "experiments" / "buffer_sizing" / "gc_pause.toml",
    ROOT / "experiments" / "market_data" / "fanout.toml",
    ROOT / "experiments" / "task_pipeline" / "pipeline.toml",
]


def fingerprint(path: Path, seed: int = 0) -> str:
    import zsim

    return fingerprint_of(zsim.run(path, seed, allow_apps=True))  # the repository's own files (examples/apps)


def fingerprint_of(result: Any) -> str:
    """The fingerprint of one run's result (``zsim.run``)."""
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


def key(path: Path, seed: int) -> str:
    """The name of a pinned fingerprint: the path for seed 0, ``path@seed=N`` otherwise."""
    return relative(path) if seed == 0 else f"{relative(path)}@seed={seed}"


def cases() -> list[tuple[Path, int]]:
    return [(path, 0) for path in SCENARIOS] + [(path, SECOND_SEED) for path in SEEDED]


if __name__ == "__main__":
    print(json.dumps({key(path, seed): fingerprint(path, seed) for path, seed in cases()}, indent=1, sort_keys=True))
