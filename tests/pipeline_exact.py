"""A second search problem with a known answer: a batch pipeline whose makespan is known
for every number of workers (tests/search, benchmarks/bench_search.py).

A ventilator PUSHes ``TASKS`` tasks at once to ``N`` PULL workers (inproc, ``ideal``
profile: no call costs, no wake-up latency); each worker serves a task for an
exponential time of mean ``MEAN_S`` (a wait, not CPU: the cores do not matter) and PUSHes
its result to the sink. The batch time is the largest task -> result time, the metric
``e2e.vent->sink.max_s``.

Why it is known. The PUSH's pipes hold every task (HWM 1000 each, 120 tasks), so libzmq's
round robin (``lb_t::sendpipe``: the next pipe in turn that accepts the message) deals
task ``j`` to worker ``j mod N``: worker ``i`` gets ``k_i = ceil`` or ``floor(TASKS / N)``
tasks, all queued at the batch's start, and finishes the last of them after the sum of its
``k_i`` service times, a Gamma(``k_i``, ``MEAN_S``) time. The workers draw from streams of
their own, so their sums are independent, and the batch time is their maximum:

    E[batch] = integral over t >= 0 of 1 - prod_i GammaCDF(t; k_i, MEAN_S) dt

(the mean of a nonnegative variable is the integral of its survival function).
``test_exact_batch_time_matches_runs`` checks it against many zsim runs.

Unlike tests/mm1k_exact.py's drop fraction, the batch time is unbounded and its
replications are roughly normal with a variance that changes with ``N``: the search's
sequential test runs on its normal-theory path throughout (no range bound, no
loss-free first stage), and the variable is a template's count, not a buffer size.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import integrate, stats

#: The guarantee problem: 120 tasks of 10 ms on average, 1..12 workers, the batch done
#: within 0.1857 s +- 0.0071 s on average. Exact means: 9 workers 0.1929 s, 10 workers
#: 0.1785 s: the two sit on the edges of the indifference zone (0.1928 and 0.1786), the
#: hardest case the guarantee covers, so 10 workers is the only right answer and a
#: procedure that keeps less than its promise is caught (tests/search/test_guarantee.py).
TASKS = 120
MEAN_S = 0.010
WORKERS = range(1, 13)
TARGET_S = 0.1857
INDIFFERENCE_S = 0.0071
START_S = 0.01
METRIC = "e2e.vent->sink.max_s"
#: the decision variable a search of this problem answers: the number of workers
VARIABLE = "socket.w.count"


def shares(tasks: int, workers: int) -> list[int]:
    """The tasks each worker gets from the round robin."""
    return [tasks // workers + (1 if i < tasks % workers else 0) for i in range(workers)]


def batch_time(workers: int, tasks: int = TASKS, mean_s: float = MEAN_S) -> float:
    """The exact mean batch time (the module docstring's integral, by adaptive quadrature)."""
    counts = shares(tasks, workers)

    def survival(t: float) -> float:
        return 1.0 - math.prod(float(stats.gamma.cdf(t, k, scale=mean_s)) for k in counts)

    # the integrand is ~1 up to the smallest share's bulk and vanishes a few sd past the largest's
    top = max(counts) * mean_s + 40 * math.sqrt(max(counts)) * mean_s
    value, error = integrate.quad(survival, 0.0, top, limit=200, epsabs=1e-10)
    assert error < 1e-7, error
    return float(value)


def scenario(workers: int = 1, tasks: int = TASKS, mean_s: float = MEAN_S) -> dict[str, Any]:
    """The base scenario (the number of workers set by the search)."""
    return {
        "scenario": {"name": "batch", "profile": "ideal"},
        "socket": [
            {"name": "vent", "type": "PUSH", "bind": ["inproc://tasks"]},
            {"name": "w{i+1}", "type": "PULL", "count": workers, "connect": ["inproc://tasks"]},
            {"name": "results", "type": "PUSH", "bind": ["inproc://results"]},
            {"name": "sink", "type": "PULL", "connect": ["inproc://results"]},
        ],
        "send": [{"socket": "vent", "count": tasks, "start_s": START_S, "size_bytes": 16}],
        "recv": [
            {"socket": "w", "forward_to": "results", "reply_size_bytes": 8,
             "service_s": {"dist": "exponential", "mean_s": mean_s}},
            {"socket": "sink", "count": tasks},
        ],
    }


def right_answers(target: float = TARGET_S, indifference: float = INDIFFERENCE_S) -> list[int]:
    """Every worker count a search may answer: not clearly above the target, and no smaller
    one clearly below it (the indifference-zone definition of a right answer)."""
    exact = {n: batch_time(n) for n in WORKERS}
    first = min(n for n in WORKERS if exact[n] <= target - indifference)
    return [n for n in WORKERS if n <= first and exact[n] < target + indifference]


def search_file(seed: int, confidence: float = 0.95, monotone: bool = True) -> dict[str, Any]:
    """The search: the fewest workers whose mean batch time is below the target."""
    variable: dict[str, Any] = {"low": min(WORKERS), "high": max(WORKERS), "step": 1}
    if monotone:
        variable["monotone"] = "decreasing"
    return {
        "search": {"name": f"batch-{seed}", "seed": seed, "confidence": confidence, "indifference": INDIFFERENCE_S,
                   "budget_runs": 5000, "cost": VARIABLE},
        "base": scenario(),
        "variables": {VARIABLE: variable},
        "constraint": [{"metric": METRIC, "below": TARGET_S}],
    }
