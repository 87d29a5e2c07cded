"""The demo sweep of the README's main job: buffer sizing under GC pauses, on Spark.

Runs ``experiments/buffer_sizing/demo.toml`` (72 points x 8 replications) on Spark in local
mode when Java and pyspark are there, on a local process pool otherwise, into
``out/sweeps`` (Parquet), then writes its report (summary, CSV tables, figures) to
``out/sweeps/report/buffer-sizing-demo``. A second run finds the rows on disk and only
redraws the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import EnvironmentFault, ZsimError

ROOT = Path(__file__).resolve().parents[2]
DEMO_SWEEP = ROOT / "experiments" / "buffer_sizing" / "demo.toml"
DEMO_OUT = ROOT / "out" / "sweeps"


def _engine() -> str:
    from .spark import java_executable

    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "local"
    return "spark" if java_executable() is not None else "local"


def run_demo(out: Path = DEMO_OUT, engine: str | None = None) -> int:
    """Run the demo sweep and its report; return a process exit status."""
    if not DEMO_SWEEP.exists():  # an installed wheel has no experiments/ folder
        print(f"(no demo sweep: {DEMO_SWEEP} is not there)")
        return 0
    from .execute import run_sweep
    from .report import make_report

    engine = engine or _engine()
    print("=" * 100)
    print(f"demo sweep: {DEMO_SWEEP.relative_to(ROOT)} on {engine} -> {out}")
    print("=" * 100)
    try:
        outcome = run_sweep(DEMO_SWEEP, out, engine=engine)
    except ZsimError as exc:
        print(f"zsim: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, EnvironmentFault) else 2
    print(f"sweep {outcome.sweep}: {outcome.ran} runs done now, {outcome.already_done} already done, "
          f"{outcome.failed} failed; {outcome.wall_s:.1f} s on {outcome.engine}")
    written = make_report(out, None)
    for path in written:
        print(f"wrote {path}")
    summary = next((p for p in written if str(p).endswith("summary.md")), None)
    if summary is not None:
        text = Path(summary).read_text()
        start = text.find("## Smallest")
        end = text.find("## Figures", start)
        if start >= 0:
            print()
            print(text[start:end if end > start else None].rstrip())
    return 1 if outcome.failed or outcome.not_done else 0
