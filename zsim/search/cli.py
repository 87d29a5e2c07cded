"""``zsim search FILE``: argument handling only; the work is library calls."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..textsafe import one_line, terminal

EXIT_OK = 0
EXIT_FAULT = 1


def add_parser(sub: argparse._SubParsersAction[Any], count_arg: Any, seconds_arg: Any, add_app_args: Any) -> None:
    """The ``search`` subcommand (``zsim.cli`` calls this with its shared argument types)."""
    from ..limits import MAX_JOBS
    from .execute import DEFAULT_OUT

    p = sub.add_parser("search", help="find the cheapest design that meets every constraint, with a stated confidence",
                       description="Screens designs in order of cost with sequential feasibility tests on replications "
                                   "under common random numbers (docs/search.md). Runs go through the sweep engines into "
                                   "Parquet in the sweep format; the same command resumes a killed search.")
    p.add_argument("search", help="search TOML file")
    p.add_argument("--engine", choices=("spark", "local", "serial"), default="serial")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--workers", type=count_arg(1, MAX_JOBS, "zsim.limits.MAX_JOBS"), default=None, help="processes for --engine local")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting (repeatable)")
    p.add_argument("--out", metavar="DIR", default=None, help=f"results folder (default {DEFAULT_OUT})")
    p.add_argument("--budget-runs", type=count_arg(1), default=None, metavar="N", help="at most N runs (default: search.budget_runs)")
    p.add_argument("--run-timeout", type=seconds_arg(allow_zero=True), default=None, metavar="S",
                   help="wall-clock seconds per run (default: search.run_timeout_s, 600; 0: no limit)")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--no-figure", action="store_true", help="do not draw the figure of cost against the binding metric")
    add_app_args(p)
    p.set_defaults(func=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    from ..files import ResultsFolder, check_not_link
    from ..sweep.cli import _app_permission, _conf
    from .answer import figure, format_text, table, to_json
    from .execute import DEFAULT_OUT, run_search

    out = Path(args.out or DEFAULT_OUT)
    check_not_link(out / "report", out, "the results folder")  # before the runs: the report folder is no link
    run = run_search(args.search, out, engine=args.engine, master=args.master, workers=args.workers, conf=_conf(args.conf),
                     budget_runs=args.budget_runs, run_timeout_s=args.run_timeout, allow_apps=_app_permission(args),
                     stream=sys.stderr)
    answer = to_json(run)
    # OUT/report/<name> lies in the results folder, which may come from elsewhere: written
    # without following a link (a planted OUT/report -> /elsewhere is refused)
    results = ResultsFolder(out, "the results folder")
    folder = ("report", run.search.name)
    report_dir = results.path(*folder)
    written = [results.write(*folder, "search.json", content=(json.dumps(answer, indent=2) + "\n").encode())]
    if run.search.conditions:  # one row per condition; the figure is of one condition's designs, not drawn
        frame = table(answer)
        written.append(results.write(*folder, "answers.csv", content=frame.to_csv(index=False).encode()))
        written.append(results.write(*folder, "answers.parquet", content=lambda handle: frame.to_parquet(handle, index=False)))
    elif not args.no_figure:
        written.append(figure(run, answer, report_dir / "search.png"))
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print(terminal(format_text(answer)))
        for path in written:
            print(one_line(f"wrote {path}"))
    return EXIT_OK if answer["outcome"] != "budget" else EXIT_FAULT
