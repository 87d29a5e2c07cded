"""Scaling of sweeps: the same sweep serially, on a local process pool, and on Spark.

    python benchmarks/bench_sweep.py              # 2,000 runs (100 points x 20), ~6 minutes on 2 cores
    python benchmarks/bench_sweep.py --quick      # 200 runs, to check the script

Prints the wall time of each engine and the parallel efficiency
``serial time / (workers x parallel time)``, for Spark both end to end and without the
Spark start-up (a one-off cost of ~10 s per sweep, not per run). Every engine writes its
own Parquet directory; the script checks that all three hold identical rows (except
wall time), which is the determinism guarantee the sweep design rests on.

The base scenario is the buffer-sizing study's (experiments/buffer_sizing/gc_pause.toml):
PUB -> SUB over tcp with GC pauses, about 50-150 ms per run on the default profile.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "experiments" / "buffer_sizing" / "gc_pause.toml"


def sweep_dict(points_hwm: int, points_size: int, replications: int) -> dict:
    hwms = [5, 10, 20, 50, 100, 200, 300, 500, 1000, 2000][:points_hwm]
    sizes = [100, 200, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536][:points_size]
    return {
        "sweep": {"name": "bench", "replications": replications, "seed": 11},
        "set": {"send.publisher.rate_per_s": 1000},
        "axes": {"socket.publisher.options.sndhwm": hwms, "send.publisher.size_bytes": sizes},
        "link": {"socket.subscriber.options.rcvhwm": "socket.publisher.options.sndhwm"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 runs instead of 2,000")
    parser.add_argument("--workers", type=int, default=2, help="processes / Spark cores (default 2)")
    parser.add_argument("--engines", default="serial,local,spark", help="comma-separated subset of serial,local,spark")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    from zsim import spec
    from zsim.sweep import plan as plan_module
    from zsim.sweep import run_sweep, store

    raw = sweep_dict(10, 10, 2 if args.quick else 20)
    base = spec.parse_toml(BASE.read_text(), str(BASE))
    sweep = plan_module.from_dict(raw, base=base, base_dir=str(BASE.parent), base_source=str(BASE))
    plan = plan_module.expand(sweep)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    print(f"sweep: {len(plan.points)} points x {sweep.replications} replications = {plan.total_runs} runs; "
          f"{args.workers} workers; engines {', '.join(engines)}", flush=True)

    results: dict[str, dict[str, float]] = {}
    frames = {}
    with tempfile.TemporaryDirectory(prefix="zsim-bench-") as tmp:
        for engine in engines:
            out = Path(tmp) / engine
            started = time.perf_counter()
            outcome = run_sweep(
                plan, out, engine=engine,
                master=f"local[{args.workers}]" if engine == "spark" else None,
                workers=args.workers if engine == "local" else None,
                stream=None,
            )
            wall = time.perf_counter() - started
            if not outcome.complete or outcome.failed:
                print(f"{engine}: incomplete ({outcome.not_done} not done, {outcome.failed} failed)", file=sys.stderr)
                return 1
            frame = store.read_frame(store.sweep_dir(out, sweep.name))
            run_cpu = float(frame["wall_s"].sum())
            frames[engine] = frame.drop(columns=["wall_s"])
            results[engine] = {"wall_s": wall, "start_s": outcome.engine_start_s, "sum_run_s": run_cpu}
            print(f"{engine:>7}: {wall:8.1f} s wall (engine start {outcome.engine_start_s:.1f} s), "
                  f"mean run {run_cpu / plan.total_runs * 1000:.0f} ms", flush=True)

    if "serial" in results:
        serial = results["serial"]["wall_s"]
        serial_run = results["serial"]["sum_run_s"]
        print()
        print("efficiency = serial time / (workers x wall time) = run slowdown x engine utilisation, where")
        print("  run slowdown = serial run time / run time when runs share the machine (the hardware's part)")
        print("  engine utilisation = time spent in runs / (workers x wall time) (the engine's part)")
        print()
        print(f"{'engine':>10} {'wall s':>9} {'speed-up':>9} {'efficiency':>11} {'run slowdown':>13} {'utilisation':>12}")
        print(f"{'serial':>10} {serial:9.1f} {1.0:9.2f} {1.0:11.2f} {1.0:13.2f} {serial_run / serial:12.2f}")
        for engine in ("local", "spark"):
            if engine not in results:
                continue
            for label, wall in ((engine, results[engine]["wall_s"]),
                                *((("spark*", results[engine]["wall_s"] - results[engine]["start_s"]),) if engine == "spark" else ())):
                efficiency = serial / (args.workers * wall)
                slowdown = serial_run / results[engine]["sum_run_s"]
                utilisation = results[engine]["sum_run_s"] / (args.workers * wall)
                key = "" if label == engine else "_without_start"
                results[engine]["efficiency" + key] = efficiency
                results[engine]["utilisation" + key] = utilisation
                results[engine]["run_slowdown"] = slowdown
                print(f"{label:>10} {wall:9.1f} {serial / wall:9.2f} {efficiency:11.2f} {slowdown:13.2f} {utilisation:12.2f}")
        if "spark" in results:
            print("(spark*: without the one-off Spark session start-up)")
    names = list(frames)
    for other in names[1:]:
        same = frames[names[0]].equals(frames[other])
        print(f"rows identical {names[0]} vs {other}: {same}")
        if not same:
            return 1
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": plan.total_runs, "workers": args.workers, "engines": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
