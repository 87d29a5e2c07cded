"""A search problem with a known answer: PUB -> SUB inproc with the ``ideal`` profile,
Poisson sends and exponential service after each recv, is a single-server loss queue
whose exact blocking probability is known for every HWM (tests/search, benchmarks).

How the HWM maps to K. inproc is one pipe of summed HWM ``H = sndhwm + rcvhwm`` with low
watermark ``L = (H + 1) // 2`` (libzmq ``compute_lwm``), and the writer learns of reads
only when the reader has read ``L`` more (libzmq ``pipe_t::check_read`` sends
``activate_write`` every ``lwm`` reads): it sees ``queued + reads not yet reported`` and
drops a message when that reaches ``H``. For ``H <= 2`` (``L = 1``) this is M/M/1/K with
``K = H + 1`` and ``P_K = (1 - rho) rho^K / (1 - rho^(K+1))`` (tests/model/
test_queueing_theory.py); for larger ``H`` the unreported reads make the queue smaller by
up to ``L - 1`` at times, and the exact blocking probability is that of the continuous-time
Markov chain on (queued, serving, unreported reads), solved here from its balance
equations (PASTA: an arrival is dropped with the chain's probability of a full view).
``test_exact_blocking_matches_long_runs`` checks it against long zsim runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def closed_form(rho: float, k: int) -> float:
    """M/M/1/K blocking probability."""
    return (1 - rho) * rho**k / (1 - rho ** (k + 1))


def blocking(rho: float, summed_hwm: int, lwm: int | None = None) -> float:
    """The exact drop probability of a Poisson(rho) stream into the pipe of summed HWM
    ``summed_hwm`` (low watermark ``lwm``, default libzmq's ``(H + 1) // 2``) read by one
    exponential(1) server."""
    hwm = summed_hwm
    low = (hwm + 1) // 2 if lwm is None else lwm
    states = [(q, s, m) for q in range(hwm + 1) for s in (0, 1) for m in range(low) if not (s == 0 and q > 0)]
    index = {state: i for i, state in enumerate(states)}
    rates = np.zeros((len(states), len(states)))

    def after_read(m: int) -> int:  # a read; the writer hears of it every ``low`` reads
        return 0 if m + 1 == low else m + 1

    for q, s, m in states:
        i = index[(q, s, m)]
        if q + m < hwm:  # the writer's view has room: the arrival is queued (or served at once)
            rates[i, index[(0, 1, after_read(m))] if s == 0 else index[(q + 1, 1, m)]] += rho
        if s == 1:  # a service ends: the next queued message is read, or the server idles
            rates[i, index[(q - 1, 1, after_read(m))] if q > 0 else index[(0, 0, m)]] += 1.0
    np.fill_diagonal(rates, -rates.sum(axis=1))
    equations = np.vstack([rates.T, np.ones(len(states))])
    right = np.zeros(len(states) + 1)
    right[-1] = 1.0
    pi = np.linalg.lstsq(equations, right, rcond=None)[0]
    return float(sum(pi[index[state]] for state in states if state[0] + state[2] >= hwm))


def scenario(rho: float, messages: int, service_rate: float = 1000.0) -> dict[str, Any]:
    """The base scenario (SNDHWM set by the search; RCVHWM 1)."""
    return {
        "scenario": {"name": "mm1k", "profile": "ideal"},
        "socket": [
            {"name": "pub", "type": "PUB", "bind": ["inproc://q"], "options": {"sndhwm": 1}},
            {"name": "sub", "type": "SUB", "connect": ["inproc://q"], "options": {"rcvhwm": 1, "subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "count": messages, "rate_per_s": rho * service_rate, "start_s": 0.001, "size_bytes": 10}],
        "recv": [{"socket": "sub", "service_s": {"dist": "exponential", "mean_s": 1.0 / service_rate}}],
    }


#: The guarantee problem: rho 0.8, SNDHWM 1..10 (summed HWM 2..11), drop fraction below
#: 9 % +- 0.5 %. Exact drop probabilities: SNDHWM 4 (H 5) 10.26 %, clearly above 9.5 %;
#: SNDHWM 5 (H 6) 7.59 %, clearly below 8.5 %; so the only right answer is SNDHWM 5.
RHO = 0.8
TARGET = 0.09
INDIFFERENCE = 0.005
SNDHWMS = range(1, 11)
MESSAGES = 2000
#: the decision variable a search of this problem answers
VARIABLE = "socket.pub.options.sndhwm"


def right_answers(rho: float = RHO, target: float = TARGET, indifference: float = INDIFFERENCE) -> list[int]:
    """Every SNDHWM a search may answer: not clearly above the target, and no smaller one
    clearly below it (the indifference-zone definition of a right answer)."""
    exact = {h: blocking(rho, h + 1) for h in SNDHWMS}
    clearly_meets = [h for h in SNDHWMS if exact[h] <= target - indifference]
    first = min(clearly_meets)
    return [h for h in SNDHWMS if h <= first and exact[h] < target + indifference]


def search_file(seed: int, confidence: float = 0.95, monotone: bool = True, messages: int = MESSAGES) -> dict[str, Any]:
    variable: dict[str, Any] = {"low": min(SNDHWMS), "high": max(SNDHWMS), "step": 1}
    if monotone:
        variable["monotone"] = "decreasing"
    return {
        "search": {"name": f"mm1k-{seed}", "seed": seed, "confidence": confidence, "indifference": INDIFFERENCE,
                   "budget_runs": 5000, "cost": "socket.pub.options.sndhwm"},
        "base": scenario(RHO, messages),
        "variables": {VARIABLE: variable},
        "constraint": [{"metric": "drop_fraction", "below": TARGET}],
    }
