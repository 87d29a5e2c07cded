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


def _command(args: argparse.Namespace) -> str:
    """The command line that made the search (as given; else its file and results folder)."""
    import shlex

    from ..files import shown_path

    words = getattr(args, "command_line", None)  # zsim.cli.main keeps them
    if words is None:
        words = ["search", shown_path(args.search)] + (["--out", shown_path(args.out)] if args.out else [])
    return " ".join(shlex.quote(word) for word in ["zsim", *words])


def chosen_files(run: Any, answer: dict[str, Any], made_by: str) -> list[tuple[str, str]]:
    """(file name, TOML) of the scenario of each design the search chose (``chosen.toml``;
    with conditions, ``chosen-<k>.toml`` for the k-th condition that has an answer), and
    each answer's ``scenario_file`` set to its name. Only certified answers (``found``): a
    budget's best so far is no answer to carry on."""
    from ..design_file import CHOSEN, design_toml
    from ..sweep.report import human_value
    from .answer import _estimate, _value, _where

    search = run.search
    sweep = search.sweep
    parts = answer["conditions"] if "conditions" in answer else [answer]
    out = []
    for k, part in enumerate(parts, 1):
        chosen = part.get("answer")
        if part["outcome"] != "found" or not chosen:
            continue
        point = run.plan.point(chosen["point"])
        changes = [*sweep.fixed.items(), *point.overrides.items()]
        condition = part.get("condition")
        where = _where(chosen["design"])
        notes = [f"{e['metric']} {'below' if 'below' in e else 'above'} {human_value(e['metric'], e.get('below', e.get('above')))} "
                 f"(+- {human_value(e['metric'], e['indifference'])}): {_estimate(e)} over {e['runs']} runs "
                 f"({search.confidence:.0%} interval); {e['verdict'] or 'open'}" for e in chosen["constraints"]]
        notes.append(f"Those are over the search's replications (root seed {search.seed}); one zsim run of this file is one run.")
        text = design_toml(
            sweep.base, changes,
            title=f"The design zsim search {search.name} chose{' at ' + _where(condition) if condition else ''}: {where} "
                  f"(cost {_value(chosen['cost'])}), the cheapest that meets every constraint ({search.confidence:.0%}, "
                  "search.json says how sure)",
            made_by=made_by, base_source=sweep.base_source, base_dir=sweep.base_dir, notes=notes)
        name = CHOSEN if condition is None else f"chosen-{k}.toml"
        chosen["scenario_file"] = name
        out.append((name, text))
    return out


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
    made_by = _command(args)
    chosen = chosen_files(run, answer, made_by)  # each answer's scenario file, named in the answer before it is written
    written = [results.write(*folder, "search.json", content=(json.dumps(answer, indent=2) + "\n").encode())]
    written += [results.write(*folder, name, content=text.encode()) for name, text in chosen]
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
