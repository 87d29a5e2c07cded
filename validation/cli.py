"""``zsim validate`` and ``zsim calibrate``: thin wrappers over library calls.

``zsim validate SCENARIO [--set PATH=VALUE ...] [--replications N] [--seed S] [--json] [--report DIR] [--timeout T]``
prints the per-metric table, what was not compared and why (or one JSON object), and exits
with the verdict (``validation.compare.ScenarioValidation.verdict``): 0 ``agrees`` (every
metric the question depends on was compared and agrees), 1 ``differs`` (a compared metric
differs), and also 1 when no run succeeded on a side (``error``) or the real side missed its
own schedule (``machine-bound``), as before; 3 ``incomplete`` (what was compared agrees, but
a metric the question depends on was not compared: never read as an agreement). Bad input
raises ``ScenarioError`` (the zsim CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from zsim import fields
from zsim.errors import EnvironmentFault, ScenarioError
from zsim.files import check_input_file, prepare_output_dir
from zsim.results import json_default
from zsim.textsafe import terminal

EXIT_AGREES = 0
EXIT_DIFFERS = 1
#: what was compared agrees, but not everything the question depends on was compared
#: (2 is bad input, everywhere in zsim)
EXIT_INCOMPLETE = 3
#: the exit status of each scenario verdict (any other: EXIT_DIFFERS)
VERDICT_EXIT = {"agrees": EXIT_AGREES, "differs": EXIT_DIFFERS, "incomplete": EXIT_INCOMPLETE}


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Adds ``validate`` and ``calibrate`` to zsim's command line: the ``zsim.commands``
    entry point of pyproject.toml, which ``zsim.cli`` calls (zsim never imports validation)."""
    from zsim.cli import add_set_arg, count_arg, seconds_arg, seed_arg

    p = sub.add_parser("validate", help="run a scenario in simulation and on real pyzmq, compare metric by metric")
    p.add_argument("scenario")
    p.add_argument("--replications", "-n", type=count_arg(1), default=None,
                   help="default: the scenario's [validation] replications, else 5")
    p.add_argument("--seed", type=seed_arg, default=0, help="first simulation seed")
    p.add_argument("--json", action="store_true")
    p.add_argument("--report", metavar="DIR", help="write a Markdown report with plots")
    p.add_argument("--timeout", type=seconds_arg(), default=None, help="wall-time limit per real run, seconds")
    add_set_arg(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("calibrate", help="measure this machine with real pyzmq and write a profile")
    p.add_argument("--out", metavar="FILE", default="profile.toml")
    p.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    p.set_defaults(func=cmd_calibrate)


def cmd_validate(args: argparse.Namespace) -> int:
    from zsim.cli import load_scenario, scenario_words

    from .compare import format_table, parse_validation, validate

    path = Path(args.scenario)
    check_run_options(args.replications, args.timeout)
    # everything a typo can break is checked before the first run: the file and its --set
    # changes (as zsim run checks them), the size of its deployment (counted, before any
    # work), its [validation] table (metric paths included, in one pass), the report folder
    check_input_file(path, "scenario file")
    scenario = load_scenario(args)
    from .harness import check_deployment, check_deployment_size

    check_deployment_size(scenario)
    parse_validation(scenario)
    if scenario.hosts:  # the real side runs in network namespaces: can this machine make them?
        from .netns import available

        check_deployment(scenario)
        reason = available()
        if reason is not None:
            raise EnvironmentFault("zsim validate", f"a scenario with [[host]]s runs its real side in network namespaces: {reason}")
    if args.report:
        prepare_output_dir(args.report, "report folder")

    def progress(message: str) -> None:
        if not args.json:
            print(message, file=sys.stderr, flush=True)

    result = validate(scenario, replications=args.replications, seed=args.seed, timeout_s=args.timeout, progress=progress)
    if args.report:
        from .report import write_report

        title = f"zsim validate {path.name}" if not getattr(args, "set", None) else f"zsim validate {scenario_words(args)}"
        written = write_report([result], args.report, title=title)
        if not args.json:
            print(f"wrote {written}", file=sys.stderr)
    changes = list(getattr(args, "set", None) or ())
    if args.json:
        data = result.to_json()
        if changes:
            data["set"] = changes  # the design validated: the file with these changes
        print(json.dumps(data, indent=2, default=json_default))
    else:
        if changes:
            print(terminal(f"design: {scenario_words(args)}"))
        print(terminal(format_table(result)))
    return VERDICT_EXIT.get(result.verdict, EXIT_DIFFERS)


def check_run_options(replications: Any, timeout: Any) -> None:
    """``--replications`` a whole number >= 1, ``--timeout`` a finite number of seconds > 0
    (argparse may hand over nan, inf or a negative; other callers anything)."""
    from .compare import MAX_REPLICATIONS

    if replications is not None and (isinstance(replications, bool) or not isinstance(replications, int) or replications < 1):
        raise ScenarioError("--replications", f"must be a whole number >= 1, got {replications!r}")
    if replications is not None and replications > MAX_REPLICATIONS:  # each a real run, and a seed in a list
        raise ScenarioError("--replications", f"must be at most {MAX_REPLICATIONS:,} (validation.compare.MAX_REPLICATIONS), "
                                              f"got {fields.short(replications)}")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise ScenarioError("--timeout", f"must be a number of seconds, got {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ScenarioError("--timeout", f"must be a finite number of seconds > 0, got {timeout!r}")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate

    # calibrate() checks the output path before it measures and writes it atomically
    calibrate(args.out, quick=args.quick)
    return 0

