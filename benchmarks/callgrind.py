"""Instructions per message under callgrind: a speed figure the machine's clock cannot move.

Each implementation of mm1k and fanout (zsim, the naive SimPy model, the heap loop; see
bench_core.py) runs in a child Python under ``valgrind --tool=callgrind`` twice, with N1
and N2 messages. The instruction count (Ir) of a run is exact whatever else the machine is
doing, and the difference ``(Ir(N2) - Ir(N1)) / (N2 - N1)`` is the cost of one more
message: interpreter start-up, imports and building the model cancel. The speed ratios are
instructions of the baseline / instructions of zsim, with the targets of the wall-clock
benchmark (``bench_core.SPEED_TARGETS``: zsim/naive >= 3 on mm1k and >= 4 on fanout, zsim/heap >= 0.5).

Instructions are not time (a cache miss costs more than an add), so the ratios differ
somewhat from the wall-clock ones, but they are reproducible: a change to zsim that
saves 5 % shows as 5 % here on any machine, busy or not.

    python benchmarks/callgrind.py                 # mm1k and fanout, ~2.5 minutes on 2 cores
    python benchmarks/bench_core.py --callgrind    # the same
    python benchmarks/callgrind.py --case mm1k --json
    python benchmarks/callgrind.py --case mm1k-cores1    # zsim only, with [machine] cores = 1

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

from benchmarks.bench_core import IMPLEMENTATIONS, SPEED_TARGETS  # noqa: E402

CASES = ("mm1k", "fanout", "mm1k-cores1")
#: run by default; mm1k-cores1 (mm1k on a one-core [machine], zsim only) when asked for
DEFAULT_CASES = ("mm1k", "fanout")
COPIES_PER_MESSAGE = {"mm1k": 1, "fanout": 10, "mm1k-cores1": 1}
# (N1, N2) messages: each run takes 10-60 s under callgrind (about 50x slower than native).
SIZES = {"mm1k": (10_000, 30_000), "fanout": (3_000, 9_000), "mm1k-cores1": (10_000, 30_000)}
QUICK_SIZES = {"mm1k": (1_000, 3_000), "fanout": (300, 900), "mm1k-cores1": (1_000, 3_000)}
# One thread per library and a fixed hash seed: the child does the same work every time.
CHILD_ENV = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def read_total(path: Path) -> int:
    """The instruction total of a callgrind output file (its ``summary:`` or ``totals:`` line)."""
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError(f"{path.name}: no summary or totals line")


def implementations(case: str) -> tuple[str, ...]:
    """What runs on ``case``: every implementation, or zsim alone on the one-core variant."""
    return ("zsim",) if case == "mm1k-cores1" else tuple(IMPLEMENTATIONS)


def count_instructions(impl: str, case: str, messages: int) -> tuple[int, float]:
    """Ir of one child Python running ``impl`` on ``case`` with ``messages`` messages, and its wall time."""
    if case == "mm1k-cores1":
        call = f"from benchmarks.bench_core import run_zsim_one_core; run_zsim_one_core('mm1k', {int(messages)})"
    else:
        call = f"from benchmarks.bench_core import IMPLEMENTATIONS; IMPLEMENTATIONS[{impl!r}]({case!r}, {int(messages)})"
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); {call}"
    with tempfile.TemporaryDirectory(prefix="zsim-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        start = time.perf_counter()
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", code],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, **CHILD_ENV})
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"callgrind run of {impl} {case} {messages} failed (exit {proc.returncode}): {tail}")
        return read_total(out), wall


def valgrind_version() -> str | None:
    if shutil.which("valgrind") is None:
        return None
    out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", choices=CASES, help="only this case (repeatable; default mm1k and fanout)")
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
    jobs = [(impl, case, n) for case in cases for impl in implementations(case) for n in sizes[case]]
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
            (ir1, wall1), (ir2, wall2) = counts[(impl, case, n1)], counts[(impl, case, n2)]
            per_msg = (ir2 - ir1) / (n2 - n1)
            impls[impl] = {"n1": n1, "n2": n2, "ir_n1": ir1, "ir_n2": ir2, "instructions_per_message": per_msg,
                           "instructions_per_copy": per_msg / COPIES_PER_MESSAGE[case], "callgrind_wall_s": [wall1, wall2]}
        targets = []
        for base, target in SPEED_TARGETS.get(case, {}).items():
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
    print(f"{'case':<8}{'implementation':<14}{'N1':>8}{'N2':>8}{'Ir(N1)':>17}{'Ir(N2)':>17}{'instr/msg':>12}{'instr/copy':>12}")
    for case, data in report["cases"].items():
        for impl, v in data["implementations"].items():
            print(f"{case:<8}{impl:<14}{v['n1']:>8,}{v['n2']:>8,}{v['ir_n1']:>17,}{v['ir_n2']:>17,}"
                  f"{v['instructions_per_message']:>12,.0f}{v['instructions_per_copy']:>12,.0f}")
    print(f"\n{'case':<8}{'measure':<40}{'value':>8}  {'target':<8}verdict")
    for case, data in report["cases"].items():
        for t in data["targets"]:
            print(f"{case:<8}{t['measure']:<40}{t['value']:>7.2f}x  {t['target']:<8}{'met' if t['met'] else 'not met'}")
    print(f"\n{len(jobs)} callgrind runs in {report['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
