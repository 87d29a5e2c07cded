"""The answer of a search as a designer reads it: the chosen design and its cost, each
constraint's estimate with its interval there, the designs ruled out and why, the runs
spent against a full grid's, and a figure of cost against the binding metric.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..sweep.report import human_value
from .execute import SearchRun
from .procedure import FAILED, FEASIBLE, INFEASIBLE, NOT_STEADY, OPEN, UNTRIED, interval

GUARANTEE = ("with probability at least {confidence:.0%} (replications roughly normal, monotonicity where declared): the chosen "
             "design fails no constraint by more than its indifference, and no cheaper steady design meets every constraint "
             "by more than its indifference")


def _design(run: SearchRun, d: int) -> dict[str, Any]:
    return {path: value for path, value in run.plan.points[d].coords}


def _estimates(run: SearchRun, d: int) -> list[dict[str, Any]]:
    state = run.outcome.state
    n = state.available[d]
    out = []
    for j, constraint in enumerate(run.search.constraints):
        mean, low, high = interval(run.data.values(d, j, n), run.search.confidence) if n else (math.nan, math.nan, math.nan)
        known = state.known[d][j] if state.status[d] not in (NOT_STEADY, FAILED) else None
        test = state.tests[d][j]
        out.append({
            "metric": constraint.metric, "below" if constraint.sense > 0 else "above": constraint.target,
            "indifference": constraint.indifference,
            "verdict": None if known is None else known.verdict,
            "tested_here": known is not None and known.source == d,
            "implied_by": None if known is None or known.source == d else _design(run, known.source),
            "decided_after_runs": known.used if known is not None and known.source == d else None,
            "runs": n, "mean": _number(mean), "low": _number(low), "high": _number(high),
            "most_runs_needed": test.closes_at if test is not None else None,
            # "sequential" (the triangular test) or "bound" (runs all equal, the metric's range)
            "decided_by": test.how or None if test is not None and known is not None and known.source == d else None,
        })
    return out


def open_reason(run: SearchRun, d: int) -> str:
    """Why an open design is still open, per undecided constraint (the first)."""
    state = run.outcome.state
    n = state.available[d]
    if n < run.procedure.n0:
        return f"{n} of the first {run.procedure.n0} runs made"
    for j, constraint in enumerate(run.search.constraints):
        test = state.tests[d][j]
        if state.known[d][j] is not None or test is None:
            continue
        metric = constraint.metric
        if test.variance == 0.0:
            value = human_value(metric, float(run.data.values(d, j, 1)[0]))
            if constraint.bounds is None:
                return (f"{metric}: all {n} runs gave {value}, and it has no known range ([[constraint]] range): "
                        "waiting for a run that differs")
            return f"{metric}: all {n} runs gave {value}; equal runs decide after {test.closes_at:,} (the binomial bound)"
        return f"{metric}: {n} runs, the test ends by {test.closes_at:,}"
    return f"{n} runs"


def _number(value: float) -> float | None:
    return None if value != value else float(value)


def to_json(run: SearchRun) -> dict[str, Any]:
    """The answer as one JSON-able object (``zsim search --json``)."""
    outcome, state, search = run.outcome, run.outcome.state, run.search
    procedure = run.procedure
    order = procedure.order
    answer = outcome.answer
    designs = []
    for d in order:
        status = state.status[d]
        if answer is not None and outcome.kind == "found" and d != answer and (run.costs[d], d) > (run.costs[answer], answer):
            status = "dominated" if status in (OPEN, UNTRIED, FEASIBLE) else status
        designs.append({"design": _design(run, d), "point": run.plan.points[d].id, "cost": run.costs[d], "status": status,
                        "reason": state.reason[d] or None, "runs": state.available[d]})
    most = max(state.available) if state.available else 0
    chosen = None
    if answer is not None:
        chosen = {"design": _design(run, answer), "point": run.plan.points[answer].id, "cost": run.costs[answer],
                  "scenario_digest": run.data.digest(answer), "runs": state.available[answer],
                  "constraints": _estimates(run, answer)}
    return {
        "search": search.name,
        "source": search.source,
        "seed": search.seed,
        "plan_digest": run.plan.worker_payload()["digest"],
        "confidence": search.confidence,
        "outcome": outcome.kind,
        "answer": chosen,
        "guarantee": GUARANTEE.format(confidence=search.confidence) if outcome.kind == "found" else None,
        "still_open": [_design(run, d) for d in outcome.open_designs],
        "still_open_why": [open_reason(run, d) for d in outcome.open_designs],
        "designs": designs,
        "monotone": [{"variable": search.variables[m.variable].path, "direction": "increasing" if m.direction > 0 else "decreasing",
                      "used": i not in state.disabled, "note": state.disabled.get(i)} for i, m in enumerate(procedure.monotone)],
        "error_per_test": procedure.beta,
        "tests_covered": procedure.tests_possible,
        "first_stage_runs": procedure.n0,
        "runs": state.spent,
        "runs_this_call": run.ran,
        "budget_runs": procedure.budget_runs,
        "designs_total": len(run.plan.points),
        "designs_run": sum(1 for n in state.available if n),
        "grid_runs": len(run.plan.points) * most,
        "grid_note": f"a grid of every design at the {most} replications the hardest decision here took",
        "results": str(run.directory),
        "engine": run.engine,
        "wall_s": run.wall_s,
    }


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _where(design: dict[str, Any]) -> str:
    return ", ".join(f"{path} = {_value(value)}" for path, value in design.items())


def format_text(answer: dict[str, Any]) -> str:
    lines = [f"search {answer['search']} (seed {answer['seed']}, confidence {answer['confidence']:.0%})"]
    chosen = answer["answer"]
    if answer["outcome"] == "found":
        lines.append(f"answer: {_where(chosen['design'])}; cost {_value(chosen['cost'])}")
    elif answer["outcome"] == "none":
        lines.append("answer: none. Every design fails a constraint, is not in steady state, or its runs failed")
    else:
        best = f"the cheapest design meeting every constraint so far is {_where(chosen['design'])} (cost {_value(chosen['cost'])})" \
            if chosen else "no design meets every constraint so far"
        lines.append(f"answer: not settled, the budget of {answer['budget_runs']:,} runs is spent; {best}; still open:"
                     + ("" if answer["still_open"] else " nothing cheaper"))
        for design, why in list(zip(answer["still_open"], answer["still_open_why"], strict=True))[:10]:
            lines.append(f"  {_where(design)}: {why}")
        if len(answer["still_open"]) > 10:
            lines.append(f"  ... and {len(answer['still_open']) - 10} more (--json lists them all)")
    if chosen:
        lines.append(f"  at the answer ({chosen['runs']} runs, {answer['confidence']:.0%} intervals):")
        for c in chosen["constraints"]:
            sense, target = ("below", c["below"]) if "below" in c else ("above", c["above"])
            how = ("decided after " + str(c["decided_after_runs"]) + " runs"
                   + (" (all equal: the binomial bound over the metric's range)" if c.get("decided_by") == "bound" else "")
                   ) if c["tested_here"] else (
                "implied by " + _where(c["implied_by"]) if c["implied_by"] else "undecided")
            estimate = (f"{human_value(c['metric'], c['mean'])} [{human_value(c['metric'], c['low'])}, "
                        f"{human_value(c['metric'], c['high'])}]") if c["mean"] is not None else "no value"
            lines.append(f"    {c['metric']} {sense} {human_value(c['metric'], target)} (+- {human_value(c['metric'], c['indifference'])}):"
                         f" {estimate}; {c['verdict'] or 'open'}, {how}")
    if answer["guarantee"]:
        lines.append(f"  guarantee: {answer['guarantee']}")
    ruled = [d for d in answer["designs"] if d["status"] in (INFEASIBLE, NOT_STEADY, FAILED)]
    dominated = [d for d in answer["designs"] if d["status"] == "dominated"]
    if ruled:
        lines.append(f"ruled out ({len(ruled)}):")
        for d in ruled[:20]:
            lines.append(f"  {_where(d['design'])} (cost {_value(d['cost'])}): {d['status']}: {d['reason']} [{d['runs']} runs]")
        if len(ruled) > 20:
            lines.append(f"  ... and {len(ruled) - 20} more (--json lists them all)")
    if dominated:
        lines.append(f"dominated: {len(dominated)} designs cost more than the answer")
    for m in answer["monotone"]:
        state = "used (bisection, verdicts implied along it)" if m["used"] else f"NOT used: the data contradict it: {m['note']}"
        lines.append(f"monotone {m['variable']} ({m['direction']}): {state}")
    lines.append(f"runs: {answer['runs']:,} ({answer['runs_this_call']:,} now) on {answer['designs_run']} of "
                 f"{answer['designs_total']} designs; {answer['grid_note']}: {answer['grid_runs']:,} runs")
    lines.append(f"error per test {answer['error_per_test']:.3g} (1 - confidence over {answer['tests_covered']} possible tests), "
                 f"first stage {answer['first_stage_runs']} runs per design")
    lines.append(f"results: {answer['results']} (zsim report reads them)")
    return "\n".join(lines)


def figure(run: SearchRun, answer: dict[str, Any], path: str | Path) -> Path:
    """Cost against the binding constraint's metric (the one nearest its target at the
    answer, in indifference units; the first without an answer), every design run with
    its interval, coloured by status."""
    from .. import plotting

    constraints = run.search.constraints
    binding = 0
    if answer["answer"]:
        margins = [c.sense * (c.target - (e["mean"] if e["mean"] is not None else math.inf)) / c.indifference
                   for c, e in zip(constraints, answer["answer"]["constraints"], strict=True)]
        binding = min(range(len(margins)), key=lambda j: margins[j])
    constraint = constraints[binding]
    points = []
    status = {d["point"]: d["status"] for d in answer["designs"]}
    for d, point in enumerate(run.plan.points):
        n = run.outcome.state.available[d]
        if not n:
            continue
        mean, low, high = interval(run.data.values(d, binding, n), run.search.confidence)
        points.append(plotting.SearchPoint(cost=run.costs[d], mean=mean, low=low, high=high, status=status[point.id],
                                           chosen=point.id == (answer["answer"] or {}).get("point")))
    return plotting.search_figure(points, path, title=f"search {run.search.name}: cost against {constraint.metric}",
                                  xlabel="cost (search.cost)", ylabel=constraint.metric, target=constraint.target,
                                  indifference=constraint.indifference,
                                  note=f"{run.search.confidence:.0%} intervals over each design's runs; dashed: target, dotted: "
                                       "target +- indifference")
