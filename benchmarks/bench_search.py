"""How often ``zsim search`` chooses the right design, on a problem with a known answer.

    python benchmarks/bench_search.py                 # 200 searches, ~5 minutes on one core
    python benchmarks/bench_search.py --searches 20   # to check the script
    python benchmarks/bench_search.py --no-monotone   # the same without bisection (the grid)

The problem is tests/mm1k_exact.py's: PUB -> SUB inproc, Poisson arrivals at rho 0.8,
exponential service, SNDHWM 1..10 (cost: the SNDHWM), drop fraction below 9 % +- 0.5 %.
Its exact drop probabilities (the pipe's Markov chain, checked against long runs by
tests/search/test_guarantee.py) make SNDHWM 5 the only right answer. Each search has its
own root seed; the script prints the share of searches that chose a right answer with its
95 % Clopper-Pearson interval (scipy), to set against the confidence the searches state,
and the runs they spent against a grid of every design at the replications the hardest
decision took. Runs are counted, not timed (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv: list[str] | None = None) -> int:
    import mm1k_exact
    from scipy import stats

    from zsim.search import run_search, spec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--no-monotone", action="store_true", help="do not declare the SNDHWM monotone (no bisection)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    right_answers = mm1k_exact.right_answers()
    chosen, runs, grid = [], [], []
    with tempfile.TemporaryDirectory() as out:
        for seed in range(args.searches):
            raw = mm1k_exact.search_file(seed, args.confidence, monotone=not args.no_monotone)
            run = run_search(spec.from_dict(raw), Path(out) / str(seed), stream=None)
            state = run.outcome.state
            answer = run.outcome.answer
            chosen.append(None if answer is None else dict(run.plan.points[answer].coords)["socket.pub.options.sndhwm"])
            runs.append(state.spent)
            grid.append(len(state.available) * max(state.available))
    right = sum(h in right_answers for h in chosen)
    low, high = stats.binomtest(right, len(chosen)).proportion_ci(0.95, method="exact")
    result = {
        "searches": len(chosen), "confidence": args.confidence, "monotone": not args.no_monotone, "right_answers": right_answers,
        "right": right, "rate": right / len(chosen), "rate_ci95": [low, high],
        "chosen": {str(h): chosen.count(h) for h in sorted(set(chosen), key=str)},
        "mean_runs": sum(runs) / len(runs), "mean_grid_runs": sum(grid) / len(grid),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{right} of {len(chosen)} searches chose a right SNDHWM {right_answers}: {100 * result['rate']:.1f} % "
              f"(95 % interval {100 * low:.1f} .. {100 * high:.1f} %), stated confidence {100 * args.confidence:.0f} %")
        print(f"chosen: {result['chosen']}")
        print(f"runs per search: {result['mean_runs']:.1f} (a grid at the same replications: {result['mean_grid_runs']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
