"""Design search: the cheapest design that meets every constraint, with a stated
confidence (``zsim search FILE``, docs/search.md).

    spec.py         the search file -> a frozen Search (its designs are a grid sweep's points)
    feasibility.py  the sequential feasibility test of one design against one constraint
    procedure.py    the search: cost order, screening, bisection over monotone variables (pure)
    execute.py      runs through the sweep engines, rows in the sweep format, resume
    answer.py       the answer: text, JSON, the figure of cost against the binding metric
    cli.py          ``zsim search``

Nothing here imports pyspark, pandas, pyarrow, scipy or matplotlib at import time.
"""

from __future__ import annotations

from .execute import SearchRun, run_search
from .spec import Search, load

__all__ = ["Search", "SearchRun", "load", "run_search"]
