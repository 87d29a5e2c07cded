"""The model's behaviour is pinned: every example and validation scenario, seed 0, gives
the ledger fingerprint recorded in ``tests/fingerprints.json``.

A change that moves a fingerprint changes what zsim predicts. If that is the purpose of
the change, regenerate the file (``python tests/fingerprint.py > tests/fingerprints.json``)
and say in the commit which scenarios moved and why; otherwise it is a regression.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fingerprint import ROOT, cases, fingerprint, key

PINNED = json.loads((Path(__file__).resolve().parents[1] / "fingerprints.json").read_text())


def test_every_scenario_is_pinned():
    assert sorted(PINNED) == sorted(key(path, seed) for path, seed in cases())


#: the scenarios that take ~5 s each: in the full suite, not in test-quick
_SLOW = {"validation/scenarios/syncpub.toml", "validation/scenarios/syncpub_default_hwm.toml",
         "experiments/market_data/fanout.toml@seed=1"}


@pytest.mark.parametrize(
    "path, seed",
    [pytest.param(p, s, marks=pytest.mark.slow) if key(p, s) in _SLOW else (p, s) for p, s in cases()],
    ids=[key(p, s) for p, s in cases()],
)
def test_ledger_fingerprint_is_unchanged(path, seed):
    assert fingerprint(path, seed) == PINNED[key(path, seed)], (
        f"{key(path, seed)}: the model's prediction changed; if on purpose, regenerate tests/fingerprints.json (see its docstring)")


def test_a_changed_prediction_changes_the_fingerprint(tmp_path):
    text = (ROOT / "examples" / "pub_sub_inproc.toml").read_text().replace("sndhwm = 10", "sndhwm = 11")
    changed = tmp_path / "pub_sub_inproc.toml"
    changed.write_text(text)
    assert fingerprint(changed) != PINNED["examples/pub_sub_inproc.toml"]
