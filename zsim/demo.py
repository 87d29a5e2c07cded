"""The README's main job: simulate the example scenarios and print what they show.

``python -m zsim.demo`` runs every scenario in ``examples/`` (one per socket family) and
prints the summary of each. When the sweep machinery is installed it then runs the demo
buffer-sizing sweep (see ``experiments/buffer_sizing``) unless ``--no-sweep`` is given,
into ``out/sweeps`` or the folder ``--out`` names (a folder that already holds its rows only
has its report drawn again: ``benchmarks/timings.py`` times the demo into a new one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli import format_summary
from .errors import EnvironmentFault, ZsimError
from .files import prepare_output_dir
from .runner import run
from .spec import load
from .trust import AppPermission, announcements, check

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zsim.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-sweep", action="store_true", help="only the example scenarios")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", metavar="DIR", help="the demo sweep's results folder (default: out/sweeps)")
    args = parser.parse_args(argv)
    if args.out is not None and not args.no_sweep:
        try:  # before the examples run, not after (a path that cannot be written: one line)
            prepare_output_dir(args.out, "--out")
        except ZsimError as exc:
            print(f"zsim: {exc}", file=sys.stderr)
            return 1 if isinstance(exc, EnvironmentFault) else 2
    files = sorted(EXAMPLES.glob("*.toml"))
    if not files:
        print(f"no example scenarios in {EXAMPLES}", file=sys.stderr)
        return 1
    for path in files:
        # the repository's own examples: lru_broker.toml runs examples/apps/lru_broker.py,
        # which a scenario from elsewhere could do only with --allow-apps (docs/safety.md)
        scenario = load(path)
        allow = AppPermission(allowed=True, because="the demo (the repository's own examples)")
        for line in announcements(check(scenario, allow)):
            print(line, file=sys.stderr)
        result = run(scenario, args.seed, allow_apps=allow)
        print("=" * 100)
        print(f"{path.relative_to(ROOT)}: {result.summary['scenario']}")
        print("=" * 100)
        print(format_summary(result.summary))
        print()
    if not args.no_sweep:
        try:
            from .sweep.demo import run_demo  # type: ignore[import-not-found]
        except ImportError:
            return 0
        return int(run_demo() if args.out is None else run_demo(out=Path(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
