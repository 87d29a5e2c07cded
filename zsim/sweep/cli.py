"""``zsim sweep`` and ``zsim report``: argument handling only; the work is library calls.

Flags read here with ``getattr(args, name, default)`` so this module works with a parser
that does not define them yet: ``--max-runs N`` (``args.max_runs``), ``--run-timeout S``
(``args.run_timeout``) and ``zsim report --config FILE`` (``args.config``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import EnvironmentFault, ZsimError
from ..textsafe import one_line

EXIT_OK = 0
EXIT_FAULT = 1
EXIT_USAGE = 2


def _conf(pairs: list[str] | None) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ZsimError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.executor.memory=2g")
        conf[key.strip()] = value.strip()
    return conf


def _report(results: str | Path, out: str | Path | None, config: str | Path | None = None) -> int:
    """Write the reports; one stderr line per sweep whose report failed. Exit status: 0,
    1 if one failed for an environment reason, else 2."""
    from .report import make_report

    errors: list[tuple[Path, ZsimError]] = []
    written = make_report(results, out, errors=errors, config=config)
    for path in written:
        print(one_line(f"wrote {path}"))
    status = EXIT_OK
    for directory, error in errors:
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(one_line(f"zsim: {directory}: no report: {text}"), file=sys.stderr)
        status = max(status, EXIT_FAULT if isinstance(error, EnvironmentFault) else EXIT_USAGE)
    return status


def _app_permission(args: argparse.Namespace) -> Any:
    from ..trust import from_command_line

    return from_command_line(bool(getattr(args, "allow_apps", False)), getattr(args, "allow_apps_from", None))


def cmd_sweep(args: argparse.Namespace) -> int:
    from .execute import DEFAULT_OUT, run_sweep
    from .plan import DEFAULT_MAX_RUNS

    out = args.out or DEFAULT_OUT
    max_runs = getattr(args, "max_runs", None)
    master = args.master
    if master is None and args.engine == "spark" and args.jobs is not None:
        master = f"local[{args.jobs}]"  # --jobs means what it means for zsim compare
    outcome = run_sweep(
        args.sweep,
        out,
        engine=args.engine,
        master=master,
        workers=args.jobs,
        conf=_conf(getattr(args, "conf", None)),
        retry_failed=bool(getattr(args, "retry_failed", False)),
        max_runs=DEFAULT_MAX_RUNS if max_runs is None else max_runs,
        run_timeout_s=getattr(args, "run_timeout", None),
        allow_apps=_app_permission(args),
        stream=sys.stderr,
        precision=getattr(args, "precision", None) or (),
    )
    print(
        f"sweep {outcome.sweep}: {outcome.ran} runs done now, {outcome.already_done} were already done, "
        f"{outcome.failed} failed, {outcome.not_done} not done; {outcome.wall_s:.1f} s on {outcome.engine}"
    )
    for line in outcome.precision:
        print(one_line(line))
    for error in outcome.errors:
        print(one_line(f"  failed: {error}"))
    if outcome.failed:
        print("  (failed runs are rows with ok = false and the error; --retry-failed runs them again)")
    print(f"results: {outcome.directory}")
    status = EXIT_OK
    if getattr(args, "report", False):
        status = _report(out, None)
    else:
        print(f"next: zsim report {out}")
    if outcome.lost_batches or outcome.not_done:
        print(f"zsim: {outcome.not_done} runs are not done (lost batches: {len(outcome.lost_batches)}); "
              "run the same command again to do them", file=sys.stderr)
        return max(status, EXIT_FAULT)
    return status


def cmd_report(args: argparse.Namespace) -> int:
    return _report(args.results, args.out, getattr(args, "config", None))
