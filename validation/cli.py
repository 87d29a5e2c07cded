"""``zsim validate`` and ``zsim calibrate``: thin wrappers over library calls.

``zsim validate SCENARIO [--replications N] [--seed S] [--json] [--report DIR] [--timeout T]``
prints the per-metric table (or one JSON object) and exits 0 when every metric agrees, 1
when at least one differs (or no run succeeded on a side). Bad input raises
``ScenarioError`` (the zsim CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zsim.errors import ScenarioError
from zsim.results import json_default

EXIT_AGREES = 0
EXIT_DIFFERS = 1


def cmd_validate(args: argparse.Namespace) -> int:
    from .compare import format_table, validate

    path = Path(args.scenario)
    if not path.exists():
        raise ScenarioError(str(path), "no such file")
    if args.replications is not None and args.replications < 1:
        raise ScenarioError("--replications", f"must be >= 1, got {args.replications}")
    if args.timeout is not None and args.timeout <= 0:
        raise ScenarioError("--timeout", f"must be > 0, got {args.timeout}")

    def progress(message: str) -> None:
        if not args.json:
            print(message, file=sys.stderr, flush=True)

    result = validate(path, replications=args.replications, seed=args.seed, timeout_s=args.timeout, progress=progress)
    if args.report:
        from .report import write_report

        written = write_report([result], args.report, title=f"zsim validate {path.name}")
        if not args.json:
            print(f"wrote {written}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=json_default))
    else:
        print(format_table(result))
    return EXIT_AGREES if result.verdict == "agrees" else EXIT_DIFFERS


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate

    calibrate(args.out, quick=args.quick)
    return 0

