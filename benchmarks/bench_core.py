"""Core speed: zsim against a naive SimPy model and a hand-written heap event loop.

Two workloads, all three implementations in this one process so that the ratios do not
depend on the machine:

* ``mm1k``: PUB -> SUB over inproc with SNDHWM = RCVHWM = 1 (summed HWM 2, LWM 1),
  Poisson sends, exponential service: the M/M/1/K queue with K = 3 (rho = 0.9).
* ``fanout``: one PUB to ten SUBs over inproc, HWM 10 each side, Poisson sends,
  exponential service per subscriber (rho = 0.9 each).

The naive SimPy version is what one writes first: a ``simpy.Store`` per pipe and a
generator process per producer and consumer. The hand-written loop is a ``heapq`` of
(time, event) tuples with the queue state in plain integers: the floor for a Python DES.

zsim runs the full model (pipes with HWM/LWM accounting, routing policies, mailboxes,
the per-message ledger, conservation check, summary). Peak memory for 10^6 messages is
measured in a child process (``ru_maxrss``), so it is zsim's own footprint.

    python benchmarks/bench_core.py [--messages 1000000] [--quick]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simpy  # noqa: E402

import zsim  # noqa: E402

RHO = 0.9


def zsim_scenario(kind: str, messages: int) -> dict:
    if kind == "mm1k":
        subs = 1
        hwm = 1
    else:
        subs = 10
        hwm = 10
    sockets = [{"name": "pub", "type": "PUB", "bind": ["inproc://q"], "options": {"sndhwm": hwm}}]
    recvs = []
    for i in range(subs):
        sockets.append({"name": f"sub{i}", "type": "SUB", "connect": ["inproc://q"], "options": {"rcvhwm": hwm, "subscribe": [""]}})
        recvs.append({"socket": f"sub{i}", "service_s": {"dist": "exponential", "mean_s": RHO}})
    return {
        "scenario": {"name": f"bench-{kind}", "profile": "ideal"},
        "socket": sockets,
        "send": [{"socket": "pub", "count": messages, "rate_per_s": 1.0, "start_s": 0.001, "size_bytes": 10}],
        "recv": recvs,
    }


def run_zsim(kind: str, messages: int) -> dict:
    result = zsim.run(zsim_scenario(kind, messages), seed=1)
    ledger = result.summary["ledger"]
    return {"copies": ledger["copies"], "delivered": ledger["delivered"], "dropped": ledger["dropped"]}


def run_naive_simpy(kind: str, messages: int) -> dict:
    """A simpy.Store per pipe, a process per producer and per consumer."""
    rng = random.Random(1)
    env = simpy.Environment()
    subs = 1 if kind == "mm1k" else 10
    capacity = 2 if kind == "mm1k" else 20
    stores = [simpy.Store(env) for _ in range(subs)]
    stats = {"copies": 0, "delivered": 0, "dropped": 0}

    def producer():
        for i in range(messages):
            yield env.timeout(rng.expovariate(1.0))
            for store in stores:
                stats["copies"] += 1
                if len(store.items) < capacity:
                    yield store.put((i, env.now))
                else:
                    stats["dropped"] += 1

    def consumer(store):
        while True:
            _msg = yield store.get()
            stats["delivered"] += 1
            yield env.timeout(rng.expovariate(1.0 / RHO))

    env.process(producer())
    for store in stores:
        env.process(consumer(store))
    env.run()
    return stats


def run_heap_loop(kind: str, messages: int) -> dict:
    """The floor: a heapq of events and integer queue state (same semantics)."""
    rng = random.Random(1)
    subs = 1 if kind == "mm1k" else 10
    capacity = 2 if kind == "mm1k" else 20
    queued = [0] * subs
    busy = [False] * subs
    stats = {"copies": 0, "delivered": 0, "dropped": 0}
    heap: list[tuple[float, int, int]] = [(rng.expovariate(1.0), 0, -1)]
    sent = 0
    push, pop = heapq.heappush, heapq.heappop
    expo = rng.expovariate
    while heap:
        now, seq, who = pop(heap)
        if who < 0:  # arrival
            sent += 1
            for s in range(subs):
                stats["copies"] += 1
                if not busy[s]:
                    busy[s] = True
                    stats["delivered"] += 1
                    push(heap, (now + expo(1.0 / RHO), seq, s))
                elif queued[s] < capacity:
                    queued[s] += 1
                else:
                    stats["dropped"] += 1
            if sent < messages:
                push(heap, (now + expo(1.0), seq + 1, -1))
        else:  # service done
            if queued[who]:
                queued[who] -= 1
                stats["delivered"] += 1
                push(heap, (now + expo(1.0 / RHO), seq, who))
            else:
                busy[who] = False
    return stats


def timed(fn, *args) -> tuple[float, dict]:
    start = time.perf_counter()
    stats = fn(*args)
    return time.perf_counter() - start, stats


def peak_memory_mb(kind: str, messages: int) -> float:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork+exec, so a child started
    # from this (by then large) process would report the parent's peak.
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
        f"from benchmarks.bench_core import run_zsim; run_zsim({kind!r}, {int(messages)}); "
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return int(out.stdout.strip().splitlines()[-1]) / 1024.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="10^5 messages, no memory run")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    messages = 100_000 if args.quick else args.messages
    report = {"messages": messages, "python": sys.version.split()[0], "simpy": simpy.__version__, "zsim": zsim.__version__, "cases": {}}
    print(f"{messages:,} messages per case, Python {report['python']}, SimPy {report['simpy']}, {os.cpu_count()} CPUs")
    print(f"{'case':<8}{'implementation':<16}{'wall s':>9}{'msg/s':>12}{'copies/s':>12}")
    for kind in ("mm1k", "fanout"):
        case = {}
        for name, fn in (("zsim", run_zsim), ("naive simpy", run_naive_simpy), ("heap loop", run_heap_loop)):
            wall, stats = timed(fn, kind, messages)
            case[name] = {"wall_s": wall, "msgs_per_s": messages / wall, "copies_per_s": stats["copies"] / wall, **stats}
            print(f"{kind:<8}{name:<16}{wall:>9.2f}{messages / wall:>12,.0f}{stats['copies'] / wall:>12,.0f}")
        case["zsim_vs_naive"] = case["naive simpy"]["wall_s"] / case["zsim"]["wall_s"]
        case["zsim_vs_heap"] = case["heap loop"]["wall_s"] / case["zsim"]["wall_s"]
        print(f"{kind:<8}zsim / naive SimPy speed = {case['zsim_vs_naive']:.2f}x (target >= 3), "
              f"zsim / heap loop = {case['zsim_vs_heap']:.2f}x (target >= 0.5)")
        report["cases"][kind] = case
    if not args.quick:
        mem = peak_memory_mb("mm1k", messages)
        report["zsim_peak_rss_mb"] = mem
        print(f"zsim peak RSS for {messages:,} messages (mm1k, separate process): {mem:.0f} MB (target < 300 MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
