"""Monte Carlo parameter sweeps: many seeded runs over a grid or a sampled design, on
Spark (or a local process pool), into Parquet, with aggregate reports and figures.

    plan.py     sweep file -> points, seeds, batches (pure; validates every point first)
    worker.py   a batch of runs -> rows (what every engine executes)
    local.py    engines without Spark: serial, multiprocessing pool
    spark.py    the Spark engine (the only module importing pyspark)
    store.py    Parquet partitioned by sweep and point; resume; manifest
    execute.py  run_sweep: plan, skip finished rows, run, write, progress
    report.py   per-point means and 95 % intervals, Markdown, figures (via zsim.plotting)
    cli.py      ``zsim sweep`` and ``zsim report``

Nothing here imports pyspark, pandas, pyarrow or matplotlib at import time.
"""

from __future__ import annotations

from .execute import Outcome, run_sweep
from .plan import Plan, Sweep, expand, load, seed_for
from .plan import plan as make_plan

__all__ = ["Outcome", "Plan", "Sweep", "expand", "load", "make_plan", "run_sweep", "seed_for"]
