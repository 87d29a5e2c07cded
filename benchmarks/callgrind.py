"""Instructions per message under callgrind: a speed figure the machine's clock cannot move.

Each implementation of mm1k-shipped, mm1k and fanout (zsim, the naive SimPy model, the heap
loop; see bench_core.py) runs in a child Python under ``valgrind --tool=callgrind`` twice,
with N1 and N2 messages (a baseline has no profile, so mm1k-shipped's baselines are mm1k's,
counted once). The instruction count (Ir) of a run is exact whatever else the machine is
doing, and the difference ``(Ir(N2) - Ir(N1)) / (N2 - N1)`` is the cost of one more
message: interpreter start-up, imports and building the model cancel. The speed ratios are
instructions of the baseline / instructions of zsim, with the targets of ``INSTRUCTION_TARGETS``
(issue 26: zsim/naive >= 3 with the shipped profile, mm1k-shipped, and >= 6 with ``cores = 0``,
mm1k; the wall-clock benchmark's for the rest: >= 4 on fanout, zsim/heap >= 0.5).

Instructions are not time (a cache miss costs more than an add), so the ratios differ
somewhat from the wall-clock ones, but they are reproducible: a change to zsim that
saves 5 % shows as 5 % here on any machine, busy or not.

    python benchmarks/callgrind.py                 # mm1k-shipped, mm1k and fanout, ~3 minutes on 2 cores
    python benchmarks/bench_core.py --callgrind    # the same
    python benchmarks/callgrind.py --case mm1k-shipped --json
    python benchmarks/callgrind.py --case mm1k-cores1    # zsim only, with [machine] cores = 1
    python benchmarks/callgrind.py --case scale          # 10 against 1,000 subscribers, with cache misses
    python benchmarks/callgrind.py --case link           # a tcp copy over a [[link]] against one over loopback

``scale`` is bench_core's scale case (the same number of copies through 1 PUB -> 10 SUB and
1 PUB -> 1,000 SUB, summary included) under cachegrind with a fixed cache, this reference
machine's 48 KB first-level data cache and 2 MB second-level cache (``SCALE_CACHES``), so
the counts do not depend on the host: instructions, first-level misses and last-level
misses per copy, each by the same difference method. It shows what the wall-clock ratio
is made of: the same work per copy, and more of it missing the caches at 1,000.

Needs valgrind (Debian: ``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_core import IMPLEMENTATIONS, SPEED_TARGETS, queue_kind  # noqa: E402

CASES = ("mm1k-shipped", "mm1k", "fanout", "mm1k-cores1", "scale", "link")
#: run by default, the shipped profile first (what users get); mm1k-cores1 (mm1k on a
#: one-core [machine], zsim only) when asked for
DEFAULT_CASES = ("mm1k-shipped", "mm1k", "fanout")
#: zsim speed / baseline speed in instructions, at least: issue 26's for the M/M/1/K queue
#: (3x naive SimPy with the shipped profile, 6x with ``cores = 0``), the wall-clock ones else
INSTRUCTION_TARGETS = {**SPEED_TARGETS, "mm1k-shipped": {"naive simpy": 3.0}, "mm1k": {"naive simpy": 6.0, "heap loop": 0.5}}
COPIES_PER_MESSAGE = {"mm1k-shipped": 1, "mm1k": 1, "fanout": 10, "mm1k-cores1": 1, "scale": 1, "link": 1}
# (N1, N2) messages (copies for scale): each run takes 10-60 s under callgrind (about 50x
# slower than native); scale's 1,000-subscriber runs have 100 and 300 messages.
SIZES = {"mm1k-shipped": (10_000, 30_000), "mm1k": (10_000, 30_000), "fanout": (3_000, 9_000), "mm1k-cores1": (10_000, 30_000),
         "scale": (100_000, 300_000), "link": (5_000, 15_000)}
QUICK_SIZES = {"mm1k-shipped": (1_000, 3_000), "mm1k": (1_000, 3_000), "fanout": (300, 900), "mm1k-cores1": (1_000, 3_000),
               "scale": (10_000, 30_000), "link": (500, 1_500)}
#: link's two variants: bench_core's tcp case on one host, and across a 100 Mbit/s link
#: (issue 29's target: a copy over a link costs at most twice a loopback one)
LINK_VARIANTS = ("loopback", "link")
LINK_TARGET = 2.0
#: scale's subscriber counts, and the cache cachegrind simulates for it (size, ways, line):
#: the reference machine's first-level data and second-level caches (lscpu: 48 KB and 2 MB
#: per core), fixed so the miss counts are the same on any host
SCALE_SUBS = (10, 1000)
SCALE_CACHES = ("--D1=49152,12,64", "--LL=2097152,16,64")
# One thread per library and a fixed hash seed: the child does the same work every time.
CHILD_ENV = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def read_counts(path: Path) -> dict[str, int]:
    """The event totals of a callgrind or cachegrind output file (its ``events:`` line
    names them; its ``summary:`` or ``totals:`` line counts them)."""
    names: list[str] = []
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            return dict(zip(names or ["Ir"], map(int, line.split()[1:]), strict=False))
    raise ValueError(f"{path.name}: no summary or totals line")


def implementations(case: str) -> tuple[str, ...]:
    """What runs on ``case``: every implementation, zsim alone on the one-core variant, or
    the two subscriber counts of scale."""
    if case == "scale":
        return tuple(f"{subs} SUB" for subs in SCALE_SUBS)
    if case == "link":
        return LINK_VARIANTS
    return ("zsim",) if case == "mm1k-cores1" else tuple(IMPLEMENTATIONS)


def runs_as(impl: str, case: str) -> str:
    """The case ``impl`` actually runs for ``case``: a baseline has no profile, so its
    mm1k-shipped is its mm1k (one valgrind run serves both)."""
    return case if impl == "zsim" or case == "link" else queue_kind(case)


def count_instructions(impl: str, case: str, messages: int) -> tuple[dict[str, int], float]:
    """Event counts (``Ir``; under cachegrind, the cache misses too) of one child Python
    running ``impl`` on ``case`` with ``messages`` messages (copies, for scale), and its wall time."""
    tool, options = "callgrind", []
    if case == "mm1k-cores1":
        call = f"from benchmarks.bench_core import run_zsim_one_core; run_zsim_one_core('mm1k', {int(messages)})"
    elif case == "link":
        call = (f"from benchmarks.bench_core import link_scenario, run_scenario; "
                f"run_scenario(link_scenario({impl == 'link'}, {int(messages)}))")
    elif case == "scale":
        subs = int(impl.split()[0])
        call = (f"from benchmarks.bench_core import pubsub_scenario, run_scenario; "
                f"run_scenario(pubsub_scenario({subs}, 10, {int(messages) // subs}, 'bench-scale-{subs}'))")
        tool, options = "cachegrind", ["--cache-sim=yes", *SCALE_CACHES]
    else:
        call = f"from benchmarks.bench_core import IMPLEMENTATIONS; IMPLEMENTATIONS[{impl!r}]({case!r}, {int(messages)})"
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); {call}"
    with tempfile.TemporaryDirectory(prefix="zsim-callgrind-") as tmp:
        out = Path(tmp) / f"{tool}.out"
        start = time.perf_counter()
        proc = subprocess.run(["valgrind", f"--tool={tool}", *options, f"--{tool}-out-file={out}", sys.executable, "-c", code],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, **CHILD_ENV})
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"{tool} run of {impl} {case} {messages} failed (exit {proc.returncode}): {tail}")
        return read_counts(out), wall


def valgrind_version() -> str | None:
    if shutil.which("valgrind") is None:
        return None
    out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=CASES,
                        help="only this case (repeatable; default mm1k-shipped, mm1k and fanout)")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time (default 2; counts do not depend on it)")
    parser.add_argument("--quick", action="store_true", help="a tenth of the messages, to check the script")
    parser.add_argument("--json", action="store_true", help="print everything as one JSON object")
    args = parser.parse_args(argv)
    version = valgrind_version()
    if version is None:
        print("callgrind mode needs valgrind, which is not installed here (Debian: sudo apt-get install -y valgrind)", file=sys.stderr)
        return 1
    cases = list(dict.fromkeys(args.case or DEFAULT_CASES))
    sizes = QUICK_SIZES if args.quick else SIZES
    jobs = list(dict.fromkeys((impl, runs_as(impl, case), n) for case in cases for impl in implementations(case) for n in sizes[case]))
    print(f"{version}: {len(jobs)} callgrind runs, {max(1, args.jobs)} at a time ...", file=sys.stderr, flush=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        try:
            counts = dict(zip(jobs, pool.map(lambda job: count_instructions(*job), jobs), strict=True))
        except RuntimeError as err:
            print(err, file=sys.stderr)
            return 1
    report: dict = {"valgrind": version, "python": sys.version.split()[0], "wall_s": time.perf_counter() - start,
                    "method": "(Ir(N2) - Ir(N1)) / (N2 - N1)", "cases": {}}
    for case in cases:
        n1, n2 = sizes[case]
        impls = {}
        for impl in implementations(case):
            run = runs_as(impl, case)
            (c1, wall1), (c2, wall2) = counts[(impl, run, n1)], counts[(impl, run, n2)]
            ir1, ir2 = c1["Ir"], c2["Ir"]
            per_msg = (ir2 - ir1) / (n2 - n1)
            impls[impl] = {"n1": n1, "n2": n2, "ir_n1": ir1, "ir_n2": ir2, "instructions_per_message": per_msg,
                           "instructions_per_copy": per_msg / COPIES_PER_MESSAGE[case], "callgrind_wall_s": [wall1, wall2]}
            if case == "scale":
                # first-level and last-level data misses (reads and writes), per copy
                for level, (read, write) in {"d1": ("D1mr", "D1mw"), "ll": ("DLmr", "DLmw")}.items():
                    impls[impl][f"{level}_misses_per_copy"] = (c2[read] + c2[write] - c1[read] - c1[write]) / (n2 - n1)
        targets = []
        if case == "scale":
            small, large = (impls[f"{subs} SUB"] for subs in SCALE_SUBS)
            for key, what in (("instructions_per_copy", "instructions"), ("d1_misses_per_copy", "first-level misses"),
                              ("ll_misses_per_copy", "last-level (2 MB) misses")):
                targets.append({"measure": f"{what} per copy, {SCALE_SUBS[1]} SUB / {SCALE_SUBS[0]}",
                                "value": large[key] / small[key], "target": None, "met": None})
        if case == "link":
            ratio = impls["link"]["instructions_per_copy"] / impls["loopback"]["instructions_per_copy"]
            targets.append({"measure": "instructions per copy, link / loopback", "value": ratio, "target": f"<= {LINK_TARGET}",
                            "met": ratio <= LINK_TARGET})
        for base, target in INSTRUCTION_TARGETS.get(case, {}).items():
            if base not in impls:
                continue
            ratio = impls[base]["instructions_per_message"] / impls["zsim"]["instructions_per_message"]
            targets.append({"measure": f"zsim/{base.split()[0]} speed in instructions", "value": ratio, "target": f">= {target}",
                            "met": ratio >= target})
        report["cases"][case] = {"implementations": impls, "targets": targets}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"\n{version}, Python {report['python']}: instructions per message = {report['method']}")
    print(f"{'case':<14}{'implementation':<14}{'N1':>8}{'N2':>8}{'Ir(N1)':>17}{'Ir(N2)':>17}{'instr/msg':>12}{'instr/copy':>12}")
    for case, data in report["cases"].items():
        for impl, v in data["implementations"].items():
            print(f"{case:<14}{impl:<14}{v['n1']:>8,}{v['n2']:>8,}{v['ir_n1']:>17,}{v['ir_n2']:>17,}"
                  f"{v['instructions_per_message']:>12,.0f}{v['instructions_per_copy']:>12,.0f}")
    if "scale" in report["cases"]:
        print(f"\nscale, per copy under cachegrind ({' '.join(SCALE_CACHES)}):")
        print(f"{'variant':<10}{'instructions':>14}{'D1 misses':>12}{'LL misses':>12}")
        for impl, v in report["cases"]["scale"]["implementations"].items():
            print(f"{impl:<10}{v['instructions_per_copy']:>14,.0f}{v['d1_misses_per_copy']:>12.1f}{v['ll_misses_per_copy']:>12.2f}")
    print(f"\n{'case':<14}{'measure':<48}{'value':>8}  {'target':<8}verdict")
    for case, data in report["cases"].items():
        for t in data["targets"]:
            verdict = "-" if t["met"] is None else "met" if t["met"] else "not met"
            print(f"{case:<14}{t['measure']:<48}{t['value']:>7.2f}x  {t['target'] or '-':<8}{verdict}")
    print(f"\n{len(jobs)} callgrind runs in {report['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
