"""Analytic checks: where a ZeroMQ pipe is a textbook queue, the simulator must agree.

A PUB -> SUB inproc pipe with SNDHWM = RCVHWM = 1 has a summed HWM of 2 and LWM 1, so the
publisher learns of every read at once (with the ``ideal`` profile: no command
throttling, no call costs). With Poisson sends and exponential service after each recv,
the system (two queued plus one in service) is an M/M/1/K queue with K = 3: a message is
dropped exactly when three are already in the system. Its blocking probability is
P_K = (1 - rho) rho^K / (1 - rho^(K+1)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import zsim


def mm1k_blocking(rho: float, k: int) -> float:
    if rho == 1.0:
        return 1.0 / (k + 1)
    return (1 - rho) * rho**k / (1 - rho ** (k + 1))


def mm1k_scenario(arrival_rate: float, service_rate: float, count: int) -> dict:
    return {
        "scenario": {"name": "mm1k", "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": ["inproc://q"], "options": {"sndhwm": 1}},
            {"name": "sub", "type": "SUB", "connect": ["inproc://q"], "options": {"rcvhwm": 1, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": count, "rate_per_s": arrival_rate, "start_s": 0.001, "size_bytes": 10}],
        "recv": [{"socket": "sub", "service_s": {"dist": "exponential", "mean_s": 1.0 / service_rate}}],
    }


def batch_means_interval(indicator: np.ndarray, batches: int = 50) -> tuple[float, float]:
    """Mean and 99 % half-width from batch means (drops are correlated in time)."""
    usable = len(indicator) - len(indicator) % batches
    means = indicator[:usable].reshape(batches, -1).mean(axis=1)
    from scipy import stats

    half = stats.t.ppf(0.995, batches - 1) * means.std(ddof=1) / math.sqrt(batches)
    return float(indicator.mean()), float(half)


@pytest.mark.parametrize("rho", [0.5, 0.8, 1.2])
def test_pub_sub_inproc_is_mm1k_with_k3(rho):
    count = 100_000
    result = zsim.run(mm1k_scenario(arrival_rate=rho, service_rate=1.0, count=count), seed=2024)
    summary = result.summary
    assert summary["ledger"]["copies"] == count
    assert summary["ledger"]["queued_at_end"] + summary["ledger"]["delivered"] + summary["ledger"]["dropped"] == count
    # per-message drop indicator in send order
    table = result.messages
    order = np.argsort(table["msg_id"], kind="stable")
    dropped = (table["state"][order] == 2).astype(float)
    simulated, half_width = batch_means_interval(dropped)
    expected = mm1k_blocking(rho, 3)
    assert abs(simulated - expected) <= half_width, (simulated, expected, half_width)
    # and the interval is informative (not trivially wide)
    assert half_width < 0.15 * expected


def test_mm1k_little_law_holds():
    rho = 0.8
    result = zsim.run(mm1k_scenario(rho, 1.0, 50_000), seed=7)
    summary = result.summary
    # time-average number in the pipe, from the depth integral, equals throughput x wait in pipe
    pipe = next(p for p in summary["pipes"] if p["name"] == "pub->sub")
    table = result.messages
    delivered = table["state"] == 0
    # latency = pipe wait (service starts at recv); Little's law on the pipe
    wait = (table["time"][delivered] - table["t0"][delivered]).mean()
    throughput = delivered.sum() / summary["sim_time_s"]
    assert pipe["mean_depth"] == pytest.approx(throughput * wait, rel=0.02)
    # and the M/M/1/K queue-length distribution gives the mean number waiting
    p = [(1 - rho) * rho**n / (1 - rho**4) for n in range(4)]
    expected_waiting = sum(max(0, n - 1) * p[n] for n in range(4))
    assert pipe["mean_depth"] == pytest.approx(expected_waiting, rel=0.05)
