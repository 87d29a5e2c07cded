"""``zsim compare``: two or more designs side by side, paired, with a verdict per metric.

A designer's question is often not "what does this topology do?" but "which of these two
does it better?": four workers or eight, an XPUB SNDHWM of 1000 or 100,000. This is JMT's
what-if analysis for zsim: every design runs the same replications, and each metric gets
every design's mean with its 95 % interval, each design's difference from the first (the
baseline) with its interval, and a verdict.

    designs.py   scenario files, ``--vary`` variants or a sweep file's points -> named, validated designs
    runs.py      every design over the same seeded replications (common random numbers), on the
                 sweep engines -> rows; each design's failures and warnings
    verdicts.py  per metric: means, paired differences and their verdicts (false discovery rate,
                 practical effect), the best design, which metrics are shown; ``--precision``
    render.py    the ``Comparison``: the printed table, ``--json``, a frame, ``--report``'s page and figures

``compare`` runs them in that order (each imports only those above it in this list); docs/compare.md
is the user's account.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from .. import files, trust
from ..errors import ScenarioError
from ..metrics import PREFERENCES
from .designs import Source, assignment, make_designs
from .render import Comparison, format_text, to_json, write_report
from .runs import DEFAULT_MAX_RUNS, check_apps, design_result, run_designs, seeds
from .verdicts import (
    DEFAULT_MAX_METRICS,
    DEFAULT_MIN_EFFECT,
    Precision,
    add_derived,
    best_design,
    check_derived_reads,
    check_metric_names,
    closest_name,
    control,
    metric_names,
    metric_result,
    not_default,
    resolve_metrics,
    select_metrics,
    to_precision,
    with_derived,
)

__all__ = ["PREFERENCES", "Comparison", "compare", "format_text", "to_json"]


def compare(sources: Sequence[Source], *, vary: Sequence[str] = (), link: Sequence[str] = (), set_: Sequence[str] = (),
            names: Sequence[str] = (), replications: int | None = None, seed: int | None = None, metrics: Sequence[str] = (),
            prefer: Sequence[str] = (), max_metrics: int = DEFAULT_MAX_METRICS, engine: str = "spark", jobs: int | None = None,
            master: str | None = None, conf: Mapping[str, str] | None = None, run_timeout_s: float | None = None,
            max_runs: int | None = DEFAULT_MAX_RUNS, report: str | Path | None = None,
            stream: IO[str] | None = files.STDERR, allow_apps: bool | trust.AppPermission = False,
            min_effect: float = DEFAULT_MIN_EFFECT, derive: Sequence[str] = (), precision: Sequence[str] = (),
            command: str | None = None) -> Comparison:
    """Run every design over the same replications (common random numbers) and compare them
    metric by metric; with ``report``, write the Markdown page, JSON and one figure per
    metric there. What ``zsim compare`` calls. Bad input: ``ScenarioError`` before any run.
    ``allow_apps``: run the code the designs' ``[[app]]`` tables name (``zsim.trust``).
    ``min_effect``: the smallest relative change of a mean that counts (``control``);
    ``derive``: ``NAME=EXPR`` metrics computed from each run's row, as a sweep file's
    ``[report.derived]``; ``precision``: ``METRIC=HALF_WIDTH`` targets (``Precision``):
    replications are added until every one is met or ``max_runs`` stops them. ``command``:
    the command line, for the header of each design's scenario file (``--report``)."""
    targets = [Precision.parse(text) for text in precision]
    prefers: dict[str, str | None] = {}
    for text in prefer:
        name, direction = assignment(text, "--prefer", "METRIC=lower|higher|none")
        if direction not in ("lower", "higher", "none"):
            raise ScenarioError(f"--prefer {name}", f"must be lower, higher or none, got {direction!r}")
        prefers[name] = None if direction == "none" else direction
    if max_metrics < 1:
        raise ScenarioError("--max-metrics", f"must be >= 1, got {max_metrics}")
    if not (isinstance(min_effect, (int, float)) and 0 <= min_effect < 1):
        raise ScenarioError("--min-effect", f"must be a fraction from 0 to below 1 (0.05: 5 %), got {min_effect!r}")
    design_set = make_designs(sources, vary=vary, link=link, set_=set_, names=names, replications=replications, seed=seed)
    if derive:
        design_set = with_derived(design_set, derive)
    designs = design_set.designs
    runs = len(designs) * design_set.replications
    if max_runs and runs > max_runs:
        raise ScenarioError("--replications", f"{len(designs)} designs x {design_set.replications} replications = {runs:,} runs, "
                                              f"more than the limit of {max_runs:,} (--max-runs N, 0 for none)")
    check_metric_names(list(metrics) + list(prefers) + [t.metric for t in targets], design_set)
    apps = check_apps(designs, trust.permission(allow_apps), stream)
    if report is not None:
        files.prepare_output_dir(report, "the report folder (--report)")
    rows = run_designs(designs, design_set.replications, design_set.seed, engine=engine, jobs=jobs, master=master, conf=conf,
                       run_timeout_s=run_timeout_s, stream=stream, apps=apps)
    add_derived(rows, design_set.derived)
    if targets:
        design_set = to_precision(design_set, rows, targets, max_runs, stream, functools.partial(
            run_designs, designs, root_seed=design_set.seed, engine=engine, jobs=jobs, master=master, conf=conf,
            run_timeout_s=run_timeout_s, stream=stream, apps=apps))
    results = [design_result(d, r) for d, r in zip(designs, rows, strict=True)]
    for result in results:
        if result.failed == result.runs:
            raise ScenarioError(f"design {result.design.name!r}", f"all {result.runs} runs failed; the first: "
                                                                   f"{result.errors[0]}")
    check_derived_reads(rows, design_set.derived, [text.partition("=")[0].strip() for text in derive])
    known = metric_names(rows)
    wanted = resolve_metrics(metrics, known)
    for name in prefers:
        if name not in known:
            raise ScenarioError(f"--prefer {name}", f"no run has this metric; {closest_name(name, known)}")
    if wanted:
        all_results = [metric_result(name, rows, results, prefers) for name in wanted]
    else:
        all_results = [metric_result(name, rows, results, prefers) for name in known]
    candidates = [m for m in design_set.report_metrics if m in known]
    # the family: what was named, or every metric the default selection may show (a run's
    # wall time is noise that differs from one call to the next: the same seed must give the
    # same verdicts)
    decided = control(all_results if wanted else [m for m in all_results if not not_default(m.name)], min_effect)
    shown, selection = select_metrics(all_results, wanted, max_metrics, candidates)
    for metric in shown:
        metric.best = best_design(metric, min_effect)
    comparison = Comparison(results, design_set.replications, design_set.seed, seeds(design_set.seed, design_set.replications),
                            shown, selection, list(design_set.notes), control=decided)
    if report is not None:
        comparison.written = write_report(comparison, report, command)
    return comparison
