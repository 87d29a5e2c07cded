"""How often ``zsim search`` chooses the right design, on problems with known answers.

    python benchmarks/bench_search.py                      # 200 searches of the loss queue, ~5 minutes on one core
    python benchmarks/bench_search.py --problem pipeline   # 200 of the batch pipeline, ~30 minutes
    python benchmarks/bench_search.py --searches 20        # to check the script
    python benchmarks/bench_search.py --no-monotone        # the same without bisection (the grid)

``--problem mm1k`` (tests/mm1k_exact.py): PUB -> SUB inproc, Poisson arrivals at rho 0.8,
exponential service, SNDHWM 1..10 (cost: the SNDHWM), drop fraction below 9 % +- 0.5 %.
Its exact drop probabilities (the pipe's Markov chain) make SNDHWM 5 the only right answer.
The problem is easy: its two neighbours sit well outside the indifference zone, so even a
test with a tenth of its continuation region chooses right every time.

``--problem pipeline`` (tests/pipeline_exact.py): 120 tasks of exponential service (mean
10 ms) dealt round robin to 1..12 PULL workers (cost: the workers), mean batch time below
0.1857 s +- 0.0071 s. Its exact means (the maximum of the workers' Gamma sums) make 10
workers the only right answer, and put 9 and 10 workers on the two edges of the
indifference zone: the hardest case the guarantee covers, where a procedure that keeps
less than its promise is caught (a test with a tenth of the region chose right in 20 of 30).

Both exact answers are checked against zsim runs by tests/search/test_guarantee.py. Each
search has its own root seed; the script prints the share of searches that chose a right
answer with its 95 % Clopper-Pearson interval (scipy), to set against the confidence the
searches state, and the runs they spent against a grid of every design at the
replications the hardest decision took. Runs are counted, not timed (the machine is shared).

    python benchmarks/bench_search.py --study out/bs-grid --engine local   # the issue's target
    python benchmarks/bench_search.py --study experiments/buffer_sizing/report/buffer-sizing --engine local

``--study GRID`` answers the buffer-sizing study's question (experiments/buffer_sizing:
per condition, 42 of them, the smallest HWM keeping drops under 0.1 %) with
experiments/buffer_sizing/search.toml and compares it, condition by condition, with the
full grid's answers in GRID (``zsim sweep experiments/buffer_sizing/study.toml --out GRID
--report``: 10,080 runs; read from GRID/report/buffer-sizing/thresholds.csv and
points.csv; GRID may also be such a report folder, e.g. the study's stored one). The
target: the same smallest HWM in every condition where the grid's answer is unambiguous,
with at least 5x fewer runs in total. The grid's answer in a condition is **unambiguous**
when all of these hold:

1. the smallest HWM whose mean drop fraction is below 0.1 % (with every larger HWM) and the
   smallest whose 95 % upper bound is (``smallest_by_mean``, ``smallest_by_upper_ci``) are
   the same: the answer meets the target clearly;
2. the HWM just below it, if any, fails clearly: its 95 % lower bound is at or above 0.1 %
   (points.csv); otherwise the answer is one step from a design the grid cannot call;
3. every point of the condition is in steady state (``not_steady_at`` empty);
4. the answer is not the largest HWM tried (2000), which would say "at least this much".

The search runs with its own root seed (its runs are not the grid's), so the two answers
rest on independent data.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


STUDY = ROOT / "experiments" / "buffer_sizing"
HWM = "socket.publisher.options.sndhwm"
CONDITIONS = ("send.publisher.size_bytes", "send.publisher.rate_per_s", "recv.subscriber.service_s.mean_s")
METRIC, TARGET = "subscriber_drop_fraction", 0.001


def unambiguous(row: dict, points: dict[tuple, dict], hwms: list[int]) -> str:
    """Why the grid's answer in this condition (a thresholds.csv row) is ambiguous ("": it is
    not); the rules are the module docstring's."""
    mean, upper = row["smallest_by_mean"], row["smallest_by_upper_ci"]
    if mean != mean or upper != upper:
        return "no HWM tried meets the target"
    if mean != upper:
        return f"by the mean {int(mean)}, by the upper bound {int(upper)}"
    if isinstance(row["not_steady_at"], str) and row["not_steady_at"]:
        return f"not steady at {row['not_steady_at']}"
    if int(mean) == int(row["largest_tried"]):
        return "the largest HWM tried"
    at = hwms.index(int(mean))
    if at > 0:
        below = points[tuple(row[c] for c in CONDITIONS) + (hwms[at - 1],)]
        if not below[f"{METRIC}_lo"] >= TARGET:
            return f"HWM {hwms[at - 1]} below it does not clearly fail (95 % lower bound {below[f'{METRIC}_lo']:.2g})"
    return ""


def study(grid: Path, out: Path, engine: str, workers: int | None) -> dict:
    import pandas as pd

    from zsim.search import run_search
    from zsim.search.answer import to_json

    report = grid / "report" / "buffer-sizing" if (grid / "report" / "buffer-sizing").is_dir() else grid
    thresholds = pd.read_csv(report / "thresholds.csv").to_dict("records")
    points = {tuple(r[c] for c in CONDITIONS) + (int(r[HWM]),): r for r in pd.read_csv(report / "points.csv").to_dict("records")}
    hwms = sorted({key[-1] for key in points})
    grid_runs = int(pd.read_csv(report / "points.csv")["runs"].sum())
    run = run_search(STUDY / "search.toml", out, engine=engine, workers=workers, stream=sys.stderr)
    answer = to_json(run)
    found = {tuple(c["condition"][k] for k in CONDITIONS): (c["answer"]["design"][HWM] if c["outcome"] == "found" else None, c["runs"])
             for c in answer["conditions"]}
    rows = []
    for row in thresholds:
        key = tuple(row[c] for c in CONDITIONS)
        searched, runs = found[key]
        why = unambiguous(row, points, hwms)
        upper = row["smallest_by_upper_ci"]
        grid_answer = None if row["smallest_by_mean"] != row["smallest_by_mean"] else int(row["smallest_by_mean"])
        rows.append({"condition": dict(zip(CONDITIONS, key, strict=True)), "grid": grid_answer,
                     "grid_upper_ci": None if upper != upper else int(upper),
                     "search": searched, "search_runs": runs, "unambiguous": not why, "ambiguous_because": why or None,
                     "agree": searched == grid_answer})
    clear = [r for r in rows if r["unambiguous"]]
    agree = sum(r["agree"] for r in clear)
    return {"conditions": len(rows), "unambiguous": len(clear), "agree_where_unambiguous": agree,
            "agree_all": sum(r["agree"] for r in rows), "search_outcome": answer["outcome"], "search_runs": answer["runs"],
            "grid_runs": grid_runs, "fewer": grid_runs / answer["runs"],
            "target_met": agree == len(clear) and grid_runs >= 5 * answer["runs"], "rows": rows}


def main(argv: list[str] | None = None) -> int:
    import mm1k_exact
    import pipeline_exact
    from scipy import stats

    from zsim.search import run_search, spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("mm1k", "pipeline"), default="mm1k", help="the problem with a known answer")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--no-monotone", action="store_true", help="do not declare the variable monotone (no bisection)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--study", metavar="GRID", type=Path, default=None,
                        help="answer the buffer-sizing study's 42 conditions; compare with the grid (sweep output or report) GRID")
    parser.add_argument("--engine", default="serial", choices=("serial", "local", "spark"), help="for --study")
    parser.add_argument("--workers", type=int, default=None, help="for --study --engine local")
    parser.add_argument("--out", type=Path, default=None, help="for --study: the search's results (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.study is not None:
        with tempfile.TemporaryDirectory() as scratch:
            result = study(args.study, args.out or Path(scratch), args.engine, args.workers)
        if args.json:
            print(json.dumps(result, indent=2))
            return 0
        for r in result["rows"]:
            c = r["condition"]
            mark = ("agree" if r["agree"] else "DIFFER") if r["unambiguous"] else f"ambiguous ({r['ambiguous_because']})"
            print(f"{c[CONDITIONS[0]]:>6} B {c[CONDITIONS[1]]:>5}/s {c[CONDITIONS[2]] * 1000:.2f} ms: grid {r['grid']} "
                  f"(upper bound {r['grid_upper_ci']}), search {r['search']} in {r['search_runs']} runs: {mark}")
        print(f"unambiguous conditions: {result['unambiguous']} of {result['conditions']}; the search agrees in "
              f"{result['agree_where_unambiguous']} of them ({result['agree_all']} of all {result['conditions']})")
        print(f"runs: search {result['search_runs']:,}, grid {result['grid_runs']:,} ({result['fewer']:.1f}x fewer); "
              f"target {'met' if result['target_met'] else 'NOT met'}")
        return 0
    problem = mm1k_exact if args.problem == "mm1k" else pipeline_exact
    right_answers = problem.right_answers()
    chosen, runs, grid = [], [], []
    with tempfile.TemporaryDirectory() as out:
        for seed in range(args.searches):
            raw = problem.search_file(seed, args.confidence, monotone=not args.no_monotone)
            run = run_search(spec.from_dict(raw), Path(out) / str(seed), stream=None)
            state = run.outcome.state
            answer = run.outcome.answer
            chosen.append(None if answer is None else dict(run.plan.points[answer].coords)[problem.VARIABLE])
            runs.append(state.spent)
            grid.append(len(state.available) * max(state.available))
    right = sum(h in right_answers for h in chosen)
    low, high = stats.binomtest(right, len(chosen)).proportion_ci(0.95, method="exact")
    result = {
        "problem": args.problem, "variable": problem.VARIABLE, "searches": len(chosen), "confidence": args.confidence,
        "monotone": not args.no_monotone, "right_answers": right_answers,
        "right": right, "rate": right / len(chosen), "rate_ci95": [low, high],
        "chosen": {str(h): chosen.count(h) for h in sorted(set(chosen), key=str)},
        "mean_runs": sum(runs) / len(runs), "mean_grid_runs": sum(grid) / len(grid),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.problem}: {right} of {len(chosen)} searches chose a right {problem.VARIABLE} {right_answers}: "
              f"{100 * result['rate']:.1f} % "
              f"(95 % interval {100 * low:.1f} .. {100 * high:.1f} %), stated confidence {100 * args.confidence:.0f} %")
        print(f"chosen: {result['chosen']}")
        print(f"runs per search: {result['mean_runs']:.1f} (a grid at the same replications: {result['mean_grid_runs']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
