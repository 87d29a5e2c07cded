"""The answer of a search as a designer reads it: the chosen design and its cost, each
constraint's estimate with its interval there, the designs ruled out and why, the runs
spent against a full grid's, and a figure of cost against the binding metric.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..metrics import human_value
from .execute import Part, SearchRun
from .procedure import FAILED, FEASIBLE, INFEASIBLE, NOT_STEADY, OPEN, UNTRIED, interval

JOINT = ("with probability at least {confidence:.0%} for all {conditions} conditions together (Bonferroni over every "
         "condition's tests; replications roughly normal, monotonicity where declared): in every condition answered, the chosen "
         "design fails no constraint by more than its indifference, and no cheaper steady design meets every constraint by "
         "more than its indifference")
GUARANTEE = ("with probability at least {confidence:.0%} (replications roughly normal, monotonicity where declared): the chosen "
             "design fails no constraint by more than its indifference, and no cheaper steady design meets every constraint "
             "by more than its indifference")


def _design(run: SearchRun, d: int) -> dict[str, Any]:
    return {path: value for path, value in run.plan.points[d].coords}


def _estimates(run: SearchRun, part: Part, d: int) -> list[dict[str, Any]]:
    assert part.outcome is not None
    state = part.outcome.state
    n = state.available[d]
    out = []
    for j, constraint in enumerate(run.search.constraints):
        values = run.data.values(part.designs[d], j, n)
        mean, low, high = interval(values, run.search.confidence) if n else (math.nan, math.nan, math.nan)
        known = state.known[d][j] if state.status[d] not in (NOT_STEADY, FAILED) else None
        test = state.tests[d][j]
        out.append({
            "metric": constraint.metric, "below" if constraint.sense > 0 else "above": constraint.target,
            "indifference": constraint.indifference,
            "verdict": None if known is None else known.verdict,
            "tested_here": known is not None and known.source == d,
            "implied_by": None if known is None or known.source == d else _design(run, part.designs[known.source]),
            "decided_after_runs": known.used if known is not None and known.source == d else None,
            "runs": n, "mean": _number(mean), "low": _number(low), "high": _number(high),
            # the mean inside target +- indifference: either verdict is acceptable there
            # (docs/search.md, the guarantee): the designs a review asks about
            "within_indifference": None if mean != mean else bool(abs(mean - constraint.target) <= constraint.indifference),
            "most_runs_needed": test.closes_at if test is not None else None,
            # "sequential" (the triangular test), "bound" (runs all equal, the metric's range)
            # or "exact" (runs that drew no random value)
            "decided_by": test.how or None if test is not None and known is not None and known.source == d else None,
        })
    return out


def open_reason(run: SearchRun, part: Part, d: int) -> str:
    """Why an open design (``d``: the part's numbering) is still open: its first undecided constraint."""
    assert part.outcome is not None
    state = part.outcome.state
    n = state.available[d]
    if n < part.procedure.n0:
        return f"{n} of the first {part.procedure.n0} runs made"
    for j, constraint in enumerate(run.search.constraints):
        test = state.tests[d][j]
        if state.known[d][j] is not None or test is None:
            continue
        metric = constraint.metric
        if test.variance == 0.0:
            value = human_value(metric, float(run.data.values(part.designs[d], j, 1)[0]))
            if constraint.bounds is None:
                return (f"{metric}: all {n} runs gave {value}, and it has no known range ([[constraint]] range): "
                        "waiting for a run that differs")
            return f"{metric}: all {n} runs gave {value}; equal runs decide after {test.closes_at:,} (the binomial bound)"
        return f"{metric}: {n} runs, the test ends by {test.closes_at:,}"
    return f"{n} runs"


def _number(value: float) -> float | None:
    return None if value != value else float(value)


def _part_json(run: SearchRun, part: Part) -> dict[str, Any]:
    """One condition's answer (without conditions: the search's), design indices mapped to the plan's."""
    outcome, search, procedure = part.outcome, run.search, part.procedure
    assert outcome is not None
    state, at = outcome.state, part.designs
    answer = outcome.answer
    designs: list[dict[str, Any]] = []
    for d in procedure.order:
        status = state.status[d]
        if answer is not None and outcome.kind == "found" and d != answer and (procedure.costs[d], d) > (procedure.costs[answer], answer):
            status = "dominated" if status in (OPEN, UNTRIED, FEASIBLE) else status
        designs.append({"design": _design(run, at[d]), "point": run.plan.points[at[d]].id, "cost": run.costs[at[d]], "status": status,
                        "reason": state.reason[d] or None, "runs": state.available[d],
                        # every design run: each constraint's estimate and interval over its runs
                        "constraints": _estimates(run, part, d) if state.available[d] else []})
    most = max(state.available) if state.available else 0
    chosen = None
    if answer is not None:
        chosen = {"design": _design(run, at[answer]), "point": run.plan.points[at[answer]].id, "cost": run.costs[at[answer]],
                  "scenario_digest": run.data.digest(at[answer]), "runs": state.available[answer],
                  "constraints": _estimates(run, part, answer)}
    close = [{"design": entry["design"], "point": entry["point"], "cost": entry["cost"], "status": entry["status"],
              "runs": entry["runs"], "constraints": [e for e in entry["constraints"] if e["within_indifference"]]}
             for entry in designs if any(e["within_indifference"] for e in entry["constraints"])]
    return {
        "outcome": outcome.kind,
        "answer": chosen,
        "within_indifference": close,
        "still_open": [_design(run, at[d]) for d in outcome.open_designs],
        "still_open_why": [open_reason(run, part, d) for d in outcome.open_designs],
        # the cheapest design the runs point to (every cheaper one ruled out, its runs all
        # equal on the right side): not certified, and how far from it
        "candidate": None if outcome.candidate is None else {
            "design": _design(run, at[outcome.candidate]), "cost": run.costs[at[outcome.candidate]],
            "why": open_reason(run, part, outcome.candidate)},
        "designs": designs,
        "monotone": [{"variable": search.variables[m.variable].path, "direction": "increasing" if m.direction > 0 else "decreasing",
                      "used": i not in state.disabled, "note": state.disabled.get(i)} for i, m in enumerate(procedure.monotone)],
        "runs": state.spent,
        "designs_run": sum(1 for n in state.available if n),
        "grid_runs": len(at) * most,
        "most_runs": most,
    }


def to_json(run: SearchRun) -> dict[str, Any]:
    """The answer as one JSON-able object (``zsim search --json``): without conditions the
    answer's fields at the top; with them, ``conditions`` lists one answer per condition
    and ``outcome`` is ``found`` (every condition has an answer), ``settled`` (every
    condition is decided, some with no design meeting the constraints) or ``budget``."""
    search, procedure = run.search, run.procedure
    parts = [_part_json(run, part) for part in run.parts]
    head: dict[str, Any] = {
        "search": search.name,
        "source": search.source,
        "seed": search.seed,
        "plan_digest": run.plan.worker_payload()["digest"],
        "confidence": search.confidence,
    }
    tail = {
        "error_per_test": procedure.beta,
        "tests_covered": procedure.tests_possible,
        "first_stage_runs": procedure.n0,
        "runs": sum(p["runs"] for p in parts),
        "runs_this_call": run.ran,
        "budget_runs": procedure.budget_runs,
        "designs_total": len(run.plan.points),
        "designs_run": sum(p["designs_run"] for p in parts),
    }
    # the report folder (search.json, the figure, the chosen design's scenario file)
    where = {"results": str(run.directory), "report": str(run.directory.parent / "report" / search.name), "engine": run.engine,
             "wall_s": run.wall_s}
    if not search.conditions:
        one = parts[0]
        most = one.pop("most_runs")
        runs, designs_run, grid = one.pop("runs"), one.pop("designs_run"), one.pop("grid_runs")
        monotone = one.pop("monotone")
        return {**head, "outcome": one["outcome"], "answer": one["answer"],
                "guarantee": GUARANTEE.format(confidence=search.confidence) if one["outcome"] == "found" else None,
                "within_indifference": one["within_indifference"],
                "still_open": one["still_open"], "still_open_why": one["still_open_why"], "candidate": one["candidate"],
                "designs": one["designs"],
                "monotone": monotone,
                **tail, "runs": runs, "designs_run": designs_run, "grid_runs": grid,
                "grid_note": f"a grid of every design at the {most} replications the hardest decision here took", **where}
    kinds = {p["outcome"] for p in parts}
    outcome = "budget" if "budget" in kinds else "found" if kinds == {"found"} else "settled"
    most = max(p["most_runs"] for p in parts)
    for part, p in zip(run.parts, parts, strict=True):
        p["condition"] = part.condition
    return {**head, "outcome": outcome,
            "guarantee": JOINT.format(confidence=search.confidence, conditions=len(parts)) if outcome != "budget" else None,
            "conditions_total": len(parts), "conditions_found": sum(p["outcome"] == "found" for p in parts),
            "conditions": [{"condition": p.pop("condition"), **p} for p in parts],
            **tail, "grid_runs": len(run.plan.points) * most,
            "grid_note": f"a grid of every design at the {most} replications the hardest decision here took", **where}


def table(answer: dict[str, Any]) -> Any:
    """One row per condition (a pandas DataFrame): the condition, the outcome, the chosen
    design and its cost, each constraint's verdict, mean and interval there, the runs."""
    import pandas as pd

    rows = []
    for c in answer["conditions"]:
        row: dict[str, Any] = {**c["condition"], "outcome": c["outcome"]}
        chosen = c["answer"]
        row.update({path: value for path, value in (chosen["design"] if chosen else {}).items()})
        row["cost"] = chosen["cost"] if chosen else None
        for e in chosen["constraints"] if chosen else []:
            for key in ("verdict", "mean", "low", "high"):
                row[f"{e['metric']}.{key}"] = e[key]
        row["answer_runs"] = chosen["runs"] if chosen else None
        row["scenario_file"] = (chosen or {}).get("scenario_file")  # beside answers.csv (zsim search writes it)
        row["runs"] = c["runs"]
        row["designs_run"] = c["designs_run"]
        rows.append(row)
    return pd.DataFrame(rows)


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _where(design: dict[str, Any]) -> str:
    return ", ".join(f"{path} = {_value(value)}" for path, value in design.items())


def format_conditions(answer: dict[str, Any]) -> str:
    """The answer of a search with conditions: one line per condition."""
    lines = [f"search {answer['search']} (seed {answer['seed']}, confidence {answer['confidence']:.0%} jointly over "
             f"{answer['conditions_total']} conditions)",
             f"answers: {answer['conditions_found']} of {answer['conditions_total']} conditions have one"]
    for c in answer["conditions"]:
        head = f"  {_where(c['condition'])}: "
        chosen = c["answer"]
        if c["outcome"] == "found":
            estimates = "; ".join(f"{e['metric']} {human_value(e['metric'], e['mean'])} [{human_value(e['metric'], e['low'])}, "
                                  f"{human_value(e['metric'], e['high'])}]" if e["mean"] is not None else f"{e['metric']} no value"
                                  for e in chosen["constraints"])
            chosen_here = {k: v for k, v in chosen["design"].items() if k not in c["condition"]}
            lines.append(f"{head}{_where(chosen_here)} (cost {_value(chosen['cost'])}); {estimates}; {c['runs']} runs")
            for d in c["within_indifference"]:
                if d["point"] != chosen["point"]:
                    near = "; ".join(f"{e['metric']} {_estimate(e)}" for e in d["constraints"])
                    here_d = _where({k: v for k, v in d["design"].items() if k not in c["condition"]})
                    lines.append(f"    within the indifference zone: {here_d} (cost {_value(d['cost'])}, {d['status']}): {near}")
        elif c["outcome"] == "none":
            lines.append(f"{head}none: every design fails a constraint, is not steady or failed; {c['runs']} runs")
        else:
            def here(design: dict[str, Any], condition: dict[str, Any] = c["condition"]) -> str:
                return _where({k: v for k, v in design.items() if k not in condition})

            best = f"so far {here(chosen['design'])}" if chosen else "nothing meets every constraint so far"
            if c.get("candidate"):
                lines.append(f"{head}not settled (budget): {best}; the runs point to {here(c['candidate']['design'])} "
                             f"(every cheaper design ruled out), not certified: {c['candidate']['why']}")
            else:
                lines.append(f"{head}not settled (budget): {best}; open: " + ("; ".join(
                    f"{here(d)} ({why})" for d, why in zip(c["still_open"][:3], c["still_open_why"][:3], strict=True)) or "-"))
    if answer["guarantee"]:
        lines.append(f"  guarantee: {answer['guarantee']}")
    off = [(c["condition"], m) for c in answer["conditions"] for m in c["monotone"] if not m["used"]]
    for condition, m in off:
        lines.append(f"monotone {m['variable']} NOT used at {_where(condition)}: the data contradict it: {m['note']}")
    return "\n".join(lines + _footer(answer))


def _footer(answer: dict[str, Any]) -> list[str]:
    """The runs spent against the grid's, the error per test and where the results are:
    the last lines of every answer, with conditions or without."""
    return [f"runs: {answer['runs']:,} ({answer['runs_this_call']:,} now) on {answer['designs_run']} of "
            f"{answer['designs_total']} designs; {answer['grid_note']}: {answer['grid_runs']:,} runs",
            f"error per test {answer['error_per_test']:.3g} (1 - confidence over {answer['tests_covered']} possible tests), "
            f"first stage {answer['first_stage_runs']} runs per design",
            f"results: {answer['results']} (zsim report reads them)"]


def _estimate(e: dict[str, Any]) -> str:
    """``20.35 ms [19.9 ms, 20.8 ms]``: a constraint's mean and interval at a design."""
    if e["mean"] is None:
        return "no value"
    if e.get("decided_by") == "exact":
        return f"{human_value(e['metric'], e['mean'])} (exact: every seed gives it)"
    if e["low"] is None:
        return f"{human_value(e['metric'], e['mean'])} (no interval: {e['runs']} run{'s' if e['runs'] != 1 else ''})"
    return f"{human_value(e['metric'], e['mean'])} [{human_value(e['metric'], e['low'])}, {human_value(e['metric'], e['high'])}]"


def _target(e: dict[str, Any]) -> str:
    sense, target = ("below", e["below"]) if "below" in e else ("above", e["above"])
    return f"{sense} {human_value(e['metric'], target)} +- {human_value(e['metric'], e['indifference'])}"


#: designs listed with their estimates in the text (--json lists every one)
MAX_EVALUATED = 30


def _close_lines(answer: dict[str, Any], chosen: dict[str, Any] | None) -> list[str]:
    """The designs other than the answer whose estimate came within a constraint's
    indifference zone: either verdict is acceptable there, so a review will ask about them."""
    close = [d for d in answer.get("within_indifference") or () if not chosen or d["point"] != chosen.get("point")]
    if not close:
        return []
    lines = [f"within the indifference zone ({len(close)} other design{'s' if len(close) != 1 else ''}; the guarantee "
             "accepts either verdict there):"]
    for d in close:
        estimates = "; ".join(f"{e['metric']} {_estimate(e)}, {_target(e)}" for e in d["constraints"])
        lines.append(f"  {_where(d['design'])} (cost {_value(d['cost'])}, {d['status']}): {estimates} [{d['runs']} runs]")
    return lines


def _evaluated_lines(answer: dict[str, Any]) -> list[str]:
    """Every design run, by cost: each constraint's estimate and interval over its runs
    (``~``: within the indifference zone)."""
    run = sorted((d for d in answer["designs"] if d["runs"]), key=lambda d: d["cost"])
    if not run:
        return []
    lines = [f"designs run ({len(run)}; {answer['confidence']:.0%} intervals over each one's runs; ~ within the indifference "
             "zone):"]
    for d in run[:MAX_EVALUATED]:
        estimates = "; ".join(f"{e['metric']} {_estimate(e)}{' ~' if e['within_indifference'] else ''}" for e in d["constraints"])
        lines.append(f"  {_where(d['design'])} (cost {_value(d['cost'])}, {d['status']}): {estimates} [{d['runs']} runs]")
    if len(run) > MAX_EVALUATED:
        lines.append(f"  ... and {len(run) - MAX_EVALUATED} more (--json lists them all)")
    return lines


def format_text(answer: dict[str, Any]) -> str:
    if "conditions" in answer:
        return format_conditions(answer)
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
        if answer.get("candidate"):
            lines.append(f"  the runs point to {_where(answer['candidate']['design'])} (cost {_value(answer['candidate']['cost'])}; "
                         "every cheaper design ruled out), not certified:")
        for design, why in list(zip(answer["still_open"], answer["still_open_why"], strict=True))[:10]:
            lines.append(f"  {_where(design)}: {why}")
        if len(answer["still_open"]) > 10:
            lines.append(f"  ... and {len(answer['still_open']) - 10} more (--json lists them all)")
    if chosen and chosen.get("scenario_file"):
        lines.append(f"  its scenario file: {Path(answer['report']) / chosen['scenario_file']} (zsim run, export, validate it)")
    if chosen:
        lines.append(f"  at the answer ({chosen['runs']} runs, {answer['confidence']:.0%} intervals):")
        for c in chosen["constraints"]:
            sense, target = ("below", c["below"]) if "below" in c else ("above", c["above"])
            if not c["tested_here"]:
                how = "implied by " + _where(c["implied_by"]) if c["implied_by"] else "undecided"
            elif c.get("decided_by") == "exact":
                how = "exact: its runs drew no random value, so every seed gives this value"
            else:
                how = (f"decided after {c['decided_after_runs']} runs"
                       + (" (all equal: the binomial bound over the metric's range)" if c.get("decided_by") == "bound" else ""))
            estimate = (f"{human_value(c['metric'], c['mean'])} [{human_value(c['metric'], c['low'])}, "
                        f"{human_value(c['metric'], c['high'])}]") if c["mean"] is not None else "no value"
            lines.append(f"    {c['metric']} {sense} {human_value(c['metric'], target)} (+- {human_value(c['metric'], c['indifference'])}):"
                         f" {estimate}; {c['verdict'] or 'open'}, {how}")
    if answer["guarantee"]:
        lines.append(f"  guarantee: {answer['guarantee']}")
    lines += _close_lines(answer, chosen)
    lines += _evaluated_lines(answer)
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
    return "\n".join(lines + _footer(answer))


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
