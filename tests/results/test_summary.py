"""The run summary's one typed shape (``zsim.summary``): the simulator and the real harness
fill it, and the comparison reads its comparable fields from it."""

from __future__ import annotations

import glob

import numpy as np
import pytest

import zsim
from validation.harness import merge_results
from zsim import spec
from zsim.metrics import SUMMARY_FIELDS as _FIELDS
from zsim.metrics import SUMMARY_LEDGER as _LEDGER
from zsim.summary import SocketSummary, percentiles, percentiles_many, scalar_fields, sender_rates, shape_problems


@pytest.mark.parametrize("path", sorted(glob.glob("examples/*.toml")))
def test_simulated_summaries_have_the_typed_shape(path):
    summary = zsim.run(path, 1, allow_apps=True).summary  # the repository's own examples (lru_broker runs its app)
    assert shape_problems(summary) == []


def test_a_departure_from_the_shape_is_named():
    summary = dict(zsim.run("examples/pub_sub_inproc.toml", 1).summary)
    del summary["ok"]
    summary["bogus"] = 1
    summary["senders"] = []
    name = next(iter(summary["sockets"]))
    summary["sockets"] = {name: {**summary["sockets"][name], "x": 2}}
    del summary["sockets"][name]["sent"]
    assert sorted(shape_problems(summary)) == sorted([
        "summary.ok: missing", "summary.bogus: not a field of RunSummary", "summary.senders: a list, not a table",
        f"summary.sockets.{name}.sent: missing", f"summary.sockets.{name}.x: not a field of SocketSummary"])


def test_the_harness_fills_the_same_shape_and_rates_from_the_effective_start(tmp_path):
    """A sender whose socket opens after its ``start_s`` is active from the opening, on both
    sides (``Scenario.starts_at``): the harness used to count from ``start_s``."""
    scenario = spec.from_dict({
        "scenario": {"name": "late", "until_s": 2.0},
        "process": [{"name": "a"}, {"name": "b"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "a", "bind": "tcp://*:5555", "open_at_s": 0.5},
            {"name": "pull", "type": "PULL", "process": "b", "connect": "tcp://localhost:5555"},
        ],
        "send": [{"name": "load", "socket": "push", "count": 10, "interval_s": 0.01}],
        "recv": [{"name": "work", "socket": "pull"}],
    })
    np.save(tmp_path / "latency-pull.npy", np.array([0.001, 0.002]))
    results = {
        "a": {"process": "a", "snapshot_s": 2.0, "sockets": {"push": {"sent": 10, "opened": True}}, "errors": [],
              "senders": {"load": {"socket": "push", "attempts": 10, "sent": 10, "again": 0, "unroutable": 0,
                                   "finished_at_s": 0.6}},
              "receivers": {}, "proxies": {}},
        "b": {"process": "b", "snapshot_s": 2.0, "sockets": {"pull": {"received": 10, "opened": True}}, "errors": [],
              "senders": {}, "receivers": {"work": {"socket": "pull", "received": 10, "paused_s": 0.0}}, "proxies": {}},
    }
    summary = merge_results(scenario, results, tmp_path, seed=1, wall_s=3.0, t0=0.0)
    assert shape_problems(summary) == []
    load = summary["senders"]["load"]
    assert load["active_s"] == pytest.approx(0.1) and load["achieved_rate_per_s"] == pytest.approx(100.0)
    assert summary["sockets"]["pull"]["latency_s"]["p99_9"] is not None  # the simulator's statistics
    simulated = zsim.run(scenario, 1).summary
    assert shape_problems(simulated) == []
    # ten sends 10 ms apart after the opening (and the tcp handshake), not from 0
    assert 0.09 <= simulated["senders"]["load"]["active_s"] < 0.5


def test_compared_fields_are_those_both_sides_fill():
    assert "steady_latency_s.p50" not in _FIELDS["sockets"]  # the simulator's only
    assert "opened" not in _FIELDS["sockets"]  # the harness's only
    assert "blocked_s" not in _FIELDS["senders"]
    assert {"first_recv_s", "first_index", "latency_s.p99", "dropped"} <= set(_FIELDS["sockets"])
    assert _LEDGER == ("sent", "copies", "delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end")
    assert "latency_s.p99_9" in scalar_fields(SocketSummary)


def test_the_shared_statistics():
    assert percentiles(np.zeros(0)) == {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "p99_9": None,
                                        "max": None}
    stats = percentiles(np.arange(1001, dtype=float))
    assert stats["p50"] == 500.0 and stats["p99_9"] == pytest.approx(999.0) and stats["max"] == 1000.0
    assert sender_rates(10, 0.01, 0.5, 0.6) == {"requested_rate_per_s": 100.0, "achieved_rate_per_s": pytest.approx(100.0),
                                                "active_s": pytest.approx(0.1)}
    assert sender_rates(10, 0.0, 0.5, None) == {"requested_rate_per_s": None, "achieved_rate_per_s": None, "active_s": None}


def test_the_percentiles_are_numpys_bit_for_bit():
    # zsim.summary.percentiles reproduces np.percentile's linear method on one partition:
    # every size from 1 to 300 (each position of the virtual index against its floor and
    # the end), ties, and values spanning magnitudes (where the lerp's two branches differ);
    # alone or as one row among the samples of its size
    rng = np.random.default_rng(7)
    samples = [rng.exponential(1e-3, n) for n in range(1, 301)]
    samples += [rng.integers(0, 3, n).astype(float) for n in (2, 7, 50, 1000)]
    samples += [np.r_[rng.exponential(1e-6, 500), rng.exponential(1e3, 5)], np.full(17, 0.25)]
    samples += [rng.exponential(1e-3, n) for n in (1, 2, 300, 600, 600, 600)]  # sizes shared, computed together
    together = percentiles_many(samples)
    for values, stats in zip(samples, together, strict=True):
        assert percentiles(values) == stats
        expected = np.percentile(values, [50, 95, 99, 99.9]).tolist()
        assert [stats["p50"], stats["p95"], stats["p99"], stats["p99_9"]] == expected, len(values)
        assert stats["max"] == values.max() and stats["mean"] == values.mean() and stats["count"] == len(values)
        assert all(type(v) is float for k, v in stats.items() if k != "count")
