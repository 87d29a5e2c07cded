"""``zsim sweep`` and ``zsim report``: argument handling only; the work is library calls."""

from __future__ import annotations

import argparse
import sys

from ..errors import ZsimError


def _conf(pairs: list[str] | None) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ZsimError(f"--conf {pair!r}: expected KEY=VALUE, e.g. spark.executor.memory=2g")
        conf[key.strip()] = value.strip()
    return conf


def cmd_sweep(args: argparse.Namespace) -> int:
    from .execute import DEFAULT_OUT, run_sweep

    out = args.out or DEFAULT_OUT
    outcome = run_sweep(
        args.sweep,
        out,
        engine=args.engine,
        master=args.master,
        workers=args.workers,
        conf=_conf(getattr(args, "conf", None)),
        retry_failed=bool(getattr(args, "retry_failed", False)),
    )
    print(
        f"sweep {outcome.sweep}: {outcome.ran} runs done now, {outcome.already_done} were already done, "
        f"{outcome.failed} failed, {outcome.not_done} not done; {outcome.wall_s:.1f} s on {outcome.engine}"
    )
    for error in outcome.errors:
        print(f"  failed: {error}")
    if outcome.failed:
        print("  (failed runs are rows with ok = false and the error; --retry-failed runs them again)")
    print(f"results: {outcome.directory}")
    if getattr(args, "report", False):
        from .report import make_report

        written = make_report(out, None)
        for path in written:
            print(f"wrote {path}")
    else:
        print(f"next: zsim report {out}")
    if outcome.lost_batches or outcome.not_done:
        print(f"zsim: {outcome.not_done} runs are not done (lost batches: {len(outcome.lost_batches)}); run the same command again to do them",
              file=sys.stderr)
        return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import make_report

    written = make_report(args.results, args.out)
    for path in written:
        print(f"wrote {path}")
    return 0


