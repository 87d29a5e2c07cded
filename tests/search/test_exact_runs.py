"""Runs that draw no random value give every seed the same result: a run says whether it
drew any (``seed_independent``), and the search decides such a design from its value, not
from a bound that would never close for a metric without a known range (a latency)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zsim
from zsim.results import flat_metrics
from zsim.search import run_search, spec
from zsim.search.answer import format_text, to_json
from zsim.search.feasibility import FAILS, MEETS, decide

#: drops and mean latency of the deterministic pipe below, by SNDHWM (one run: every seed)
DROPPED = {1: 196, 5: 176, 10: 157, 20: 119, 30: 69, 50: 5}
MEAN_S = {1: 0.000514, 5: 0.001400, 10: 0.002145, 20: 0.003291, 30: 0.004703, 50: 0.006090}


def deterministic(sndhwm: int = 5, **recv: Any) -> dict[str, Any]:
    """PUB -> SUB inproc, ``ideal`` profile (no call costs, nothing drawn): a message every
    1 ms, 0.5 ms to serve each, and a 30 ms pause every 100 ms; 1,000 messages. Each pause
    fills the pipe, which drops what does not fit."""
    return {
        "scenario": {"name": "deterministic", "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": ["inproc://q"], "options": {"sndhwm": sndhwm}},
            {"name": "sub", "type": "SUB", "connect": ["inproc://q"], "options": {"rcvhwm": 1, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": 1000, "interval_s": 0.001, "pacing": "schedule", "start_s": 0.001, "size_bytes": 10}],
        "recv": [{"socket": "sub", "service_s": 0.0005, "pause_every_s": 0.1, "pause_s": 0.03, **recv}],
    }


def test_a_run_that_draws_nothing_is_the_same_under_every_seed() -> None:
    rows = [flat_metrics(zsim.run(deterministic(20), seed).summary) for seed in (1, 2, 99)]
    assert [row["seed_independent"] for row in rows] == [1, 1, 1]
    assert [row["random_streams_drawn"] for row in rows] == [0, 0, 0]
    assert [row["dropped"] for row in rows] == [DROPPED[20]] * 3


@pytest.mark.parametrize("change", [
    {"service_s": {"dist": "exponential", "mean_s": 0.0005}},  # a drawn service time
    {"pause_every_s": {"dist": "exponential", "mean_s": 0.1}},  # drawn pauses
])
def test_a_run_that_draws_is_not_seed_independent(change: dict[str, Any]) -> None:
    summary = zsim.run(deterministic(20, **change), 1).summary
    assert summary["randomness"]["drawn"] >= 1 and not summary["randomness"]["seed_independent"]
    assert flat_metrics(summary)["seed_independent"] == 0


def test_the_shipped_profile_draws() -> None:
    raw = deterministic(20)
    del raw["scenario"]["profile"]  # the default profile: measured tables of call costs and wake-ups
    summary = zsim.run(raw, 1).summary
    assert summary["randomness"]["drawn"] >= 1 and not summary["randomness"]["seed_independent"]


def test_a_stream_made_but_never_drawn_from_does_not_count() -> None:
    # a pause every 10 s in a run of 1 s: the stream of pause lengths is made, never drawn
    summary = zsim.run(deterministic(20, pause_every_s=10.0, pause_s={"dist": "exponential", "mean_s": 0.01}), 1).summary
    assert summary["randomness"]["streams"] >= 1 and summary["randomness"]["drawn"] == 0
    assert summary["randomness"]["seed_independent"]


def test_exact_runs_decide_at_their_value_and_must_agree() -> None:
    mean = np.full(10, 0.0047)
    decision = decide(mean, 0.005, 1, 0.0002, 0.01, 10, exact=True)
    assert (decision.verdict, decision.how, decision.used) == (MEETS, "exact", 1)
    assert decide(mean, 0.0046, 1, 0.0002, 0.01, 10, exact=True).verdict == FAILS  # inside the zone: still its side
    assert decide(mean, 0.0047, 1, 0.0002, 0.01, 10, exact=True).verdict == MEETS  # on the target
    assert decide(mean, 0.005, 1, 0.0002, 0.01, 10).verdict is None  # not known exact: an unbounded metric stays open
    with pytest.raises(ValueError, match="differ"):
        decide(np.array([0.0047, 0.0048]), 0.005, 1, 0.0002, 0.01, 2, exact=True)


def search_file(base: dict[str, Any]) -> dict[str, Any]:
    return {
        "search": {"name": "deterministic", "seed": 1, "confidence": 0.95, "budget_runs": 500,
                   "cost": "socket.pub.options.sndhwm"},
        "base": base,
        "variables": {"socket.pub.options.sndhwm": {"values": list(DROPPED)}},
        "constraint": [{"metric": "drop_fraction", "below": 0.1, "indifference": 0.01},
                       {"metric": "socket.sub.latency_mean_s", "below": 0.005, "indifference": 0.0002}],
    }


def test_a_search_over_a_deterministic_model_settles_on_exact_values(tmp_path: Path) -> None:
    # drop fractions 19.6 % .. 0.5 % and mean latency 0.5 .. 6.1 ms as SNDHWM grows: 30 is
    # the cheapest meeting both. Before, the latency (no known range) never settled, and the
    # drop fraction took the binomial bound's hundreds of equal runs.
    run = run_search(spec.from_dict(search_file(deterministic())), tmp_path, stream=None)
    answer = to_json(run)
    assert answer["outcome"] == "found"
    assert answer["answer"]["design"]["socket.pub.options.sndhwm"] == 30
    chosen = answer["answer"]["constraints"]
    assert [c["decided_by"] for c in chosen] == ["exact", "exact"]
    assert [c["mean"] for c in chosen] == pytest.approx([DROPPED[30] / 1000, MEAN_S[30]], rel=1e-3)
    # one run a design at most: the probe drew nothing random, so it is the design's value
    # (before, each design tested spent a first stage of 10 identical runs)
    assert answer["runs"] <= len(DROPPED)
    assert "exact: its runs drew no random value" in format_text(answer)


def test_a_search_over_a_random_model_is_not_decided_exactly(tmp_path: Path) -> None:
    raw = search_file(deterministic(service_s={"dist": "exponential", "mean_s": 0.0005}))
    raw["constraint"] = raw["constraint"][:1]
    answer = to_json(run_search(spec.from_dict(raw), tmp_path, stream=None))
    assert answer["answer"] is not None
    assert all(c["decided_by"] in ("sequential", "bound") for c in answer["answer"]["constraints"] if c["tested_here"])
