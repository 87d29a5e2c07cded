"""Does a link scenario simulate faster than real time? (issue 29's second target)

A 60 s scenario of 10,000 messages a second over a 1 Gbit/s link: a PUSH on host ``a``
sending 1 KB messages (Poisson arrivals) to a PULL on host ``b``, the link 1 Gbit/s each
way with 1 ms one way, the shipped profile and defaults. The run is timed in this process
(``time.perf_counter`` and the process's CPU time) and set against the 60 simulated seconds:
a real-time factor above 1 is faster than real time. The same scenario on one host
(loopback, no link) runs in turn with it, round after round, so that the cost of the link
reads as a ratio the machine's clock drift cannot move (the VM's clock may run up to 2x
off; instructions per copy are ``callgrind.py --case link``'s).

    python benchmarks/bench_link.py              # 3 rounds, ~1-2 minutes on 2 cores
    python benchmarks/bench_link.py --rounds 1 --seconds 10 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATE_PER_S = 10_000
SIZE_BYTES = 1024


def scenario(seconds: float, linked: bool) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "scenario": {"name": "link-realtime" if linked else "loopback-realtime", "until_s": seconds + 1.0},
        "process": [{"name": "src"}, {"name": "dst"}],
        "socket": [{"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5555" if linked else "tcp://127.0.0.1:5555"]},
                   {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"]}],
        "send": [{"socket": "push", "rate_per_s": RATE_PER_S, "size_bytes": SIZE_BYTES, "start_s": 0.5, "duration_s": seconds}],
        "recv": [{"socket": "pull"}],
    }
    if linked:
        raw["host"] = [{"name": "a"}, {"name": "b"}]
        raw["link"] = [{"name": "wire", "hosts": ["a", "b"], "bandwidth_bps": 1e9, "latency_s": 0.001}]
        raw["process"][0]["host"], raw["process"][1]["host"] = "a", "b"
    return raw


def timed(seconds: float, linked: bool, seed: int) -> dict[str, float]:
    import zsim

    wall, cpu = time.perf_counter(), time.process_time()
    summary = zsim.run(scenario(seconds, linked), seed).summary
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    received = summary["sockets"]["pull"]["received"]
    return {"wall_s": wall, "cpu_s": cpu, "received": received, "realtime_factor": summary["sim_time_s"] / wall,
            "us_per_copy": 1e6 * wall / max(1, received)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=60.0, help="simulated seconds of sending (default 60)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from zsim import native

    rows: dict[str, list[dict[str, float]]] = {"link": [], "loopback": []}
    for index in range(args.rounds):  # alternating: the machine's state is shared by both
        for kind in (("link", "loopback") if index % 2 == 0 else ("loopback", "link")):
            rows[kind].append(timed(args.seconds, kind == "link", index))
    link_wall = statistics.median(r["wall_s"] for r in rows["link"])
    loop_wall = statistics.median(r["wall_s"] for r in rows["loopback"])
    result = {
        "mode": native.describe(),
        "simulated_s": args.seconds + 1.0,
        "messages": int(statistics.median(r["received"] for r in rows["link"])),
        "link": {"wall_s": link_wall, "realtime_factor": (args.seconds + 1.0) / link_wall,
                 "cpu_s": statistics.median(r["cpu_s"] for r in rows["link"])},
        "loopback": {"wall_s": loop_wall, "realtime_factor": (args.seconds + 1.0) / loop_wall},
        "link_over_loopback": link_wall / loop_wall,
        "rounds": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['messages']:,} messages over {args.seconds + 1.0:g} simulated s ({result['mode']}, median of "
              f"{args.rounds} rounds): over the 1 Gbit/s link {link_wall:.1f} s wall, {result['link']['realtime_factor']:.2f}x "
              f"real time ({'faster' if link_wall < args.seconds + 1.0 else 'slower'} than real time); on one host "
              f"{loop_wall:.1f} s; link / loopback {result['link_over_loopback']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
