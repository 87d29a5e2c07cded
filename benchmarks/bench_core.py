"""Core speed: zsim against a naive SimPy model and a hand-written heap event loop.

Cases (``--case NAME``, repeatable; default all):

* ``mm1k-shipped``: ``mm1k`` as a user runs it, with the shipped profile (``"profile":
  "default"``: its call costs, wake-ups and sleep lateness, and its 2 cores, so every send
  call and receive is a burst on the CPU-contention model, zsim.model.cpu). Reported first:
  it is the speed users get.
* ``mm1k``: PUB -> SUB over inproc with SNDHWM = RCVHWM = 1 (summed HWM 2, LWM 1),
  Poisson sends, exponential service: the M/M/1/K queue with K = 3 (rho = 0.9), with the
  ``ideal`` profile (no costs, no ``[machine]``: a core per thread, ``cores = 0``).
* ``fanout``: one PUB to ten SUBs over inproc, HWM 10 each side, Poisson sends,
  exponential service per subscriber (rho = 0.9 each).
* ``tcp``: one PUSH -> PULL over tcp (default profile), Poisson sends at 10,000 msg/s,
  a consumer at rho = 0.5: microseconds of wall time per message copy, zsim only.
* ``broker``: REQ clients -> ROUTER | proxy | DEALER -> REP workers (10 + 10), over tcp
  and over inproc: microseconds per copy (a request and its reply make four copies).
* ``scale``: 1 PUB -> 10 SUB against 1 PUB -> 1,000 SUB over inproc, the same number of
  copies each: cost per copy at 1,000 / cost per copy at 10 (target <= 1.3).

mm1k-shipped, mm1k and fanout also run the naive SimPy version, what one writes first (a
``simpy.Store`` per pipe and a generator process per producer and consumer), and the
hand-written loop, a ``heapq`` of (time, event) tuples with the queue state in plain
integers: the floor for a Python DES. zsim runs the full model (pipes with HWM/LWM
accounting, routing policies, mailboxes, the per-message ledger, conservation check,
summary).

Wall-clock figures drift on a shared or virtual machine, so every case runs in rounds
(default 5) in this one process, the implementations interleaved within a round (their
order rotating from round to round) and the rounds interleaved across cases; the report
gives the median of each and the median of the per-round ratios. Peak memory (mm1k with
10^6 messages; a broker with 500 clients and 500 workers) is measured in child processes.

``--callgrind`` is the clock-free mode (benchmarks/callgrind.py): instructions per message
under valgrind, exact whatever else the machine is doing.

    python benchmarks/bench_core.py                    # everything, ~3 minutes on 2 cores
    python benchmarks/bench_core.py --quick            # smoke run: 10x fewer messages, no memory runs
    python benchmarks/bench_core.py --case mm1k --rounds 9
    python benchmarks/bench_core.py --json             # one JSON object on stdout
    python benchmarks/bench_core.py --callgrind        # instructions per message (mm1k-shipped, mm1k, fanout)
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# simpy and zsim are imported where they are used, not here: a child process that runs one
# baseline (the memory and callgrind runs) then holds only that baseline's objects, and the
# cyclic GC, whose passes walk every live object, costs it no more than it would alone.

RHO = 0.9
CASES = ("mm1k-shipped", "mm1k", "fanout", "tcp", "broker", "scale")
#: the cases zsim runs beside the naive SimPy model and the heap loop
COMPARED = ("mm1k-shipped", "mm1k", "fanout")
#: zsim speed / baseline speed, at least, per case (issue 10: M/M/1/K 3x naive SimPy and half
#: the heap loop; the fan-out 4x naive SimPy; issue 26: the shipped profile's M/M/1/K 3x
#: naive SimPy). benchmarks/callgrind.py has its own, in instructions.
SPEED_TARGETS = {"mm1k-shipped": {"naive simpy": 3.0}, "mm1k": {"naive simpy": 3.0, "heap loop": 0.5},
                 "fanout": {"naive simpy": 4.0, "heap loop": 0.5}}
SCALE_TARGET = 1.3  # cost per copy at 1,000 SUBs / at 10 SUBs, at most
MEMORY_MESSAGES = 1_000_000  # mm1k memory run
MEMORY_TARGET_MB = 300.0
BROKER_MEMORY_PEERS = 500  # clients and as many workers
BROKER_MEMORY_REQUESTS = 20  # per client
BROKER_MEMORY_TARGET_MB = 150.0


# ---------------------------------------------------------------- scenarios (zsim dicts)


def pubsub_scenario(subs: int, hwm: int, messages: int, name: str) -> dict:
    """1 PUB -> ``subs`` SUBs over inproc, Poisson sends at 1/s, exponential service at rho 0.9."""
    sockets = [{"name": "pub", "type": "PUB", "bind": ["inproc://q"], "options": {"sndhwm": hwm}}]
    recvs = []
    for i in range(subs):
        sockets.append({"name": f"sub{i}", "type": "SUB", "connect": ["inproc://q"], "options": {"rcvhwm": hwm, "subscribe": [""]}})
        recvs.append({"socket": f"sub{i}", "service_s": {"dist": "exponential", "mean_s": RHO}})
    return {
        "scenario": {"name": name, "profile": "ideal"},
        "socket": sockets,
        "send": [{"socket": "pub", "count": messages, "rate_per_s": 1.0, "start_s": 0.001, "size_bytes": 10}],
        "recv": recvs,
    }


def zsim_scenario(kind: str, messages: int) -> dict:
    if kind == "mm1k":
        return pubsub_scenario(1, 1, messages, "bench-mm1k")
    if kind == "mm1k-shipped":
        # what a user gets: the shipped profile, and the cores it records (2)
        raw = pubsub_scenario(1, 1, messages, "bench-mm1k-shipped")
        raw["scenario"]["profile"] = "default"
        return raw
    return pubsub_scenario(10, 10, messages, "bench-fanout")


def queue_kind(kind: str) -> str:
    """The queue a baseline models for ``kind``: mm1k-shipped is mm1k's queue (a baseline has
    no profile)."""
    return "mm1k" if kind == "mm1k-shipped" else kind


def tcp_scenario(messages: int) -> dict:
    """PUSH -> PULL over tcp in two processes: 10,000 msg/s offered, the consumer busy half the time."""
    return {
        "scenario": {"name": "bench-tcp"},
        # a core per thread, as the figures this case is compared with were measured (the
        # shipped profile's 2 cores would add the scheduler's work: --case mm1k-cores1)
        "machine": {"cores": 0},
        "process": [{"name": "producer"}, {"name": "consumer"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "producer", "bind": ["tcp://*:5557"]},
            {"name": "pull", "type": "PULL", "process": "consumer", "connect": ["tcp://127.0.0.1:5557"]},
        ],
        "send": [{"socket": "push", "count": messages, "rate_per_s": 10_000, "start_s": 0.05, "size_bytes": 100}],
        "recv": [{"socket": "pull", "service_s": {"dist": "exponential", "mean_s": 0.00005}}],
    }


def link_scenario(over_link: bool, messages: int) -> dict:
    """``tcp_scenario`` with its two processes on one host, or on two hosts joined by a
    100 Mbit/s link of 1 ms each way (8 Mbit/s offered: the link is not what limits)."""
    raw = tcp_scenario(messages)
    if over_link:
        raw["host"] = [{"name": "a"}, {"name": "b"}]
        raw["link"] = [{"hosts": ["a", "b"], "bandwidth_bps": 100e6, "latency_s": 0.001}]
        raw["process"] = [{"name": "producer", "host": "a"}, {"name": "consumer", "host": "b"}]
        raw["socket"][1]["connect"] = ["tcp://a:5557"]
    return raw


def broker_scenario(clients: int, workers: int, requests: int, transport: str) -> dict:
    """The zguide's rrbroker: REQ clients -> ROUTER | proxy | DEALER -> REP workers.

    Each client sends ``requests`` requests, waiting 10 ms on average after each reply;
    workers take 1 ms per request. Over tcp the broker, the clients and the workers are
    three processes; inproc needs one process, so all sockets share it.
    """
    tcp = transport == "tcp"
    front, back = ("tcp://*:5559", "tcp://*:5560") if tcp else ("inproc://frontend", "inproc://backend")
    front_c, back_c = ("tcp://127.0.0.1:5559", "tcp://127.0.0.1:5560") if tcp else (front, back)
    sockets = [{"name": "frontend", "type": "ROUTER", "bind": [front]}, {"name": "backend", "type": "DEALER", "bind": [back]}]
    sends, recvs = [], []
    for i in range(clients):
        sockets.append({"name": f"client{i}", "type": "REQ", "connect": [front_c]})
        sends.append({"socket": f"client{i}", "count": requests, "interval_s": {"dist": "exponential", "mean_s": 0.01},
                      "start_s": 0.05, "size_bytes": 64})
    for i in range(workers):
        sockets.append({"name": f"worker{i}", "type": "REP", "connect": [back_c]})
        recvs.append({"socket": f"worker{i}", "service_s": {"dist": "exponential", "mean_s": 0.001}})
    raw: dict = {"scenario": {"name": f"bench-broker-{transport}"}, "machine": {"cores": 0}}  # as tcp_scenario
    if tcp:
        raw["process"] = [{"name": "broker"}, {"name": "clients"}, {"name": "workers"}]
        for sock in sockets:
            sock["process"] = {"ROUTER": "broker", "DEALER": "broker", "REQ": "clients", "REP": "workers"}[sock["type"]]
    raw.update({"socket": sockets, "proxy": [{"frontend": "frontend", "backend": "backend"}], "send": sends, "recv": recvs})
    return raw


def run_scenario(raw: dict) -> dict:
    import zsim

    ledger = zsim.run(raw, seed=1).summary["ledger"]
    return {"copies": ledger["copies"], "delivered": ledger["delivered"], "dropped": ledger["dropped"]}


def run_zsim(kind: str, messages: int) -> dict:
    return run_scenario(zsim_scenario(kind, messages))


def run_zsim_one_core(kind: str, messages: int) -> dict:
    """The same on a one-core ``[machine]``, the service time CPU work (``busy``): every
    send call and service is a burst on the scheduler (``zsim.model.cpu``). The ideal
    profile's sender costs nothing, so the receiver has the core to itself and the
    ledger is the one without a machine; what differs is the scheduler's work."""
    raw = zsim_scenario(kind, messages)
    raw["machine"] = {"cores": 1}
    for recv in raw["recv"]:
        recv["busy"] = True
    return run_scenario(raw)


# ---------------------------------------------------------------- baselines


def run_naive_simpy(kind: str, messages: int) -> dict:
    """A simpy.Store per pipe, a process per producer and per consumer."""
    import simpy

    kind = queue_kind(kind)
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
    kind = queue_kind(kind)
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


# The implementations of mm1k-shipped, mm1k and fanout by name (also what benchmarks/callgrind.py runs).
IMPLEMENTATIONS: dict[str, Callable[[str, int], dict]] = {
    "zsim": run_zsim,
    "naive simpy": run_naive_simpy,
    "heap loop": run_heap_loop,
}


# ---------------------------------------------------------------- cases


def case_sizes(case: str, messages: int) -> dict:
    """What each case runs for a given --messages (default 200,000)."""
    if case in COMPARED:
        return {"messages": messages}
    if case == "tcp":
        return {"messages": max(1, messages // 2)}
    if case == "broker":
        return {"clients": 10, "workers": 10, "requests_per_client": max(1, messages // 80)}
    # scale: the same number of copies through 10 and through 1,000 subscribers
    copies = 5 * messages
    return {"copies": copies, "messages_10": max(1, copies // 10), "messages_1000": max(1, copies // 1000)}


def case_variants(case: str, sizes: dict) -> list[tuple[str, Callable[[], dict]]]:
    """(label, zero-argument function returning ledger counts) for each variant of a case."""
    if case in COMPARED:
        return [(name, lambda fn=fn: fn(case, sizes["messages"])) for name, fn in IMPLEMENTATIONS.items()]
    if case == "tcp":
        return [("zsim tcp", lambda: run_scenario(tcp_scenario(sizes["messages"])))]
    if case == "broker":
        clients, workers, requests = sizes["clients"], sizes["workers"], sizes["requests_per_client"]
        return [(f"zsim {t}", lambda t=t: run_scenario(broker_scenario(clients, workers, requests, t))) for t in ("tcp", "inproc")]
    return [
        ("10 SUB", lambda: run_scenario(pubsub_scenario(10, 10, sizes["messages_10"], "bench-scale-10"))),
        ("1000 SUB", lambda: run_scenario(pubsub_scenario(1000, 10, sizes["messages_1000"], "bench-scale-1000"))),
    ]


def timed(fn: Callable[[], dict]) -> tuple[float, dict]:
    gc.collect()
    start = time.perf_counter()
    stats = fn()
    return time.perf_counter() - start, stats


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "rounds": values}


def summarise(case: str, sizes: dict, samples: dict[str, list[tuple[float, dict]]]) -> dict:
    """Medians per variant, medians of per-round ratios, and the targets of the case."""
    variants = {}
    for label, runs in samples.items():
        walls = [wall for wall, _stats in runs]
        stats = runs[-1][1]
        if any(other != stats for _wall, other in runs):  # same seed, same counts: anything else is a bug worth seeing
            print(f"warning: {case} {label}: the ledger counts differ between rounds: {[other for _wall, other in runs]}", file=sys.stderr)
        entry = {**stats, "wall_s": spread(walls), "us_per_copy": spread([wall / stats["copies"] * 1e6 for wall in walls])}
        if case in COMPARED:
            entry["msgs_per_s"] = spread([sizes["messages"] / wall for wall in walls])
            entry["copies_per_s"] = spread([stats["copies"] / wall for wall in walls])
        variants[label] = entry
    out: dict = {"sizes": sizes, "variants": variants, "ratios": {}, "targets": []}
    if case in COMPARED:
        zsim_walls = variants["zsim"]["wall_s"]["rounds"]
        for base, target in SPEED_TARGETS[case].items():
            per_round = [b / z for b, z in zip(variants[base]["wall_s"]["rounds"], zsim_walls, strict=True)]
            key = f"zsim/{base.split()[0]}"
            out["ratios"][key] = r = spread(per_round)
            out["targets"].append({"measure": f"{key} speed", "value": r["median"], "min": r["min"], "max": r["max"], "unit": "x",
                                   "target": f">= {target}", "met": r["median"] >= target})
    elif case == "scale":
        per_round = [b / a for a, b in zip(variants["10 SUB"]["us_per_copy"]["rounds"], variants["1000 SUB"]["us_per_copy"]["rounds"],
                                           strict=True)]
        out["ratios"]["cost per copy 1000/10"] = r = spread(per_round)
        out["targets"].append({"measure": "cost per copy, 1000 SUB / 10 SUB", "value": r["median"], "min": r["min"], "max": r["max"],
                               "unit": "x", "target": f"<= {SCALE_TARGET}", "met": r["median"] <= SCALE_TARGET})
    else:  # tcp, broker: a figure to follow, no target
        for label, entry in variants.items():
            us = entry["us_per_copy"]
            out["targets"].append({"measure": f"{label}: wall time per copy", "value": us["median"], "min": us["min"], "max": us["max"],
                                   "unit": "us", "target": None, "met": None})
    return out


# ---------------------------------------------------------------- memory (child processes)


def memory_workload(name: str) -> None:
    """Run one memory workload in this (fresh) process and print its peak RSS as JSON."""
    import resource

    start = time.perf_counter()
    if name == "mm1k":
        stats = run_zsim("mm1k", MEMORY_MESSAGES)
    else:  # broker-tcp, broker-inproc
        transport = name.split("-")[1]
        stats = run_scenario(broker_scenario(BROKER_MEMORY_PEERS, BROKER_MEMORY_PEERS, BROKER_MEMORY_REQUESTS, transport))
    wall = time.perf_counter() - start
    hwm_kb = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")))
    print(json.dumps({"vm_hwm_kb": hwm_kb, "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "wall_s": wall, **stats}))


def peak_memory(name: str) -> dict:
    # The child's own VmHWM. Its ru_maxrss would do only for a child started from a small
    # parent: Linux carries ru_maxrss over fork+exec, so a child of this (by then large)
    # process reports at least the parent's size at the fork; both are in the JSON.
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.bench_core import memory_workload; memory_workload({name!r})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["peak_mb"] = result["vm_hwm_kb"] / 1024.0
    return result


def memory_report() -> dict:
    runs = {
        "mm1k": (f"mm1k, {MEMORY_MESSAGES:,} messages", MEMORY_TARGET_MB),
        "broker-tcp": (f"broker tcp, {BROKER_MEMORY_PEERS} REQ + {BROKER_MEMORY_PEERS} REP", BROKER_MEMORY_TARGET_MB),
        "broker-inproc": (f"broker inproc, {BROKER_MEMORY_PEERS} REQ + {BROKER_MEMORY_PEERS} REP", BROKER_MEMORY_TARGET_MB),
    }
    report = {}
    for name, (what, target) in runs.items():
        print(f"memory: {what} ...", file=sys.stderr, flush=True)
        result = peak_memory(name)
        result.update({"what": what, "target_mb": target, "met": result["peak_mb"] < target})
        report[name] = result
    return report


# ---------------------------------------------------------------- output


def fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "us":
        return f"{value:.2f} us"
    return f"{value:,.0f}"


def verdict(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "not met")


def print_table(report: dict) -> None:
    print()
    print(f"{'case':<14}{'variant':<14}{'median wall s':>14}{'msg/s (median)':>16}{'min-max msg/s':>22}{'copies/s':>12}{'us/copy':>9}")
    for case, data in report["cases"].items():
        for label, v in data["variants"].items():
            rate = v.get("msgs_per_s")
            rate_s = f"{rate['median']:>16,.0f}{rate['min']:>11,.0f}-{rate['max']:<10,.0f}" if rate else f"{'':>16}{'':>22}"
            copies_s = f"{v['copies_per_s']['median']:>12,.0f}" if "copies_per_s" in v else f"{v['copies'] / v['wall_s']['median']:>12,.0f}"
            print(f"{case:<14}{label:<14}{v['wall_s']['median']:>14.3f}{rate_s}{copies_s}{v['us_per_copy']['median']:>9.2f}")
    print()
    print(f"{'case':<14}{'measure':<44}{'median':>10}{'min-max over rounds':>24}  {'target':<10}verdict")
    for case, data in report["cases"].items():
        for t in data["targets"]:
            rng = f"{fmt(t['min'], t['unit'])} - {fmt(t['max'], t['unit'])}"
            print(f"{case:<14}{t['measure']:<44}{fmt(t['value'], t['unit']):>10}{rng:>24}  {t['target'] or '-':<10}{verdict(t['met'])}")
    for m in report.get("memory", {}).values():
        target = f"< {m['target_mb']:.0f} MB"
        print(f"{'memory':<14}{'peak RSS ' + m['what']:<44}{m['peak_mb']:>7.0f} MB{'':>24}  {target:<10}{verdict(m['met'])}")


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=CASES, help="run only this case (repeatable; default all)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per case (default 5); medians are reported")
    parser.add_argument("--messages", type=int, default=200_000,
                        help="messages per run of mm1k-shipped, mm1k and fanout (default 200,000); tcp sends half, the broker an eighth as "
                             "requests, scale passes 5x as many copies")
    parser.add_argument("--quick", action="store_true", help="smoke run: a tenth of the messages, no memory runs")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory child processes")
    parser.add_argument("--json", action="store_true", help="print everything as one JSON object on stdout (progress on stderr)")
    parser.add_argument("--callgrind", action="store_true",
                        help="instructions per message under valgrind instead (mm1k-shipped, mm1k, fanout)")
    parser.add_argument("--jobs", type=int, default=2, help="--callgrind: valgrind runs at a time (default 2)")
    args = parser.parse_args(argv)
    cases = list(dict.fromkeys(args.case or CASES))
    import simpy

    import zsim

    if args.callgrind:
        from benchmarks import callgrind

        other = sorted(set(args.case or ()) - set(callgrind.CASES))
        if other:
            parser.error(f"--callgrind measures {' and '.join(callgrind.CASES)} only, not {', '.join(other)}")
        cg_argv = [a for c in cases for a in ("--case", c)] if args.case else []
        cg_argv += ["--jobs", str(args.jobs)] + (["--json"] if args.json else []) + (["--quick"] if args.quick else [])
        return callgrind.main(cg_argv)
    if args.rounds < 1 or args.messages < 1:
        parser.error("--rounds and --messages must be at least 1")
    messages = max(1, args.messages // 10) if args.quick else args.messages
    sizes = {case: case_sizes(case, messages) for case in cases}
    variants = {case: case_variants(case, sizes[case]) for case in cases}
    report: dict = {
        "rounds": args.rounds, "messages": messages, "python": sys.version.split()[0], "simpy": simpy.__version__,
        "zsim": zsim.__version__, "cpus": os.cpu_count(), "load_average_start": os.getloadavg()[0], "cases": {},
    }
    log = sys.stderr
    print(f"{args.rounds} rounds, {messages:,} messages (mm1k-shipped, mm1k, fanout), cases {', '.join(cases)}; Python {report['python']}, "
          f"SimPy {report['simpy']}, {report['cpus']} CPUs, load average {report['load_average_start']:.2f}", file=log, flush=True)
    samples: dict[str, dict[str, list[tuple[float, dict]]]] = {case: {label: [] for label, _ in variants[case]} for case in cases}
    for rnd in range(args.rounds):
        round_start = time.perf_counter()
        for case in cases:
            order = variants[case][rnd % len(variants[case]):] + variants[case][:rnd % len(variants[case])]
            for label, fn in order:
                samples[case][label].append(timed(fn))
        print(f"round {rnd + 1}/{args.rounds}: {time.perf_counter() - round_start:.1f} s", file=log, flush=True)
    for case in cases:
        report["cases"][case] = summarise(case, sizes[case], samples[case])
    report["load_average_end"] = os.getloadavg()[0]
    if not (args.quick or args.no_memory):
        report["memory"] = memory_report()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
        print(f"\nload average {report['load_average_start']:.2f} at the start, {report['load_average_end']:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
