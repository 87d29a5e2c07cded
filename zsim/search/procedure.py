"""The search procedure: the cheapest design that meets every constraint, with a stated
confidence, spending replications only where a decision is still open.

Pure: no runs, no files. ``Procedure.plan(data)`` says which designs need how many
replications next (or that the search is over); the caller runs them and calls it again.
Every decision is recomputed from the data each time, so a search that was killed and
resumes from the stored rows takes exactly the same path.

What it does (``docs/search.md`` explains it for designers):

1. Designs are taken in order of cost (ties: grid order).
2. Each design's first run is a probe: a run that drew no random value (``seed_independent``)
   is the design's exact value, decided at once; otherwise it is the first of ``n0``.
   Each design is screened constraint by constraint with the sequential feasibility test
   of ``zsim.search.feasibility`` (Batur & Kim 2010), at error ``beta = (1 - confidence)
   / (designs x constraints)`` per test (Bonferroni over every test the search could run,
   so the bound holds whichever designs the data lead it to). Replication ``r`` runs with
   the same seed at every design (common random numbers).
3. A design whose first ``n0`` runs are, for a constraint's metric, at least half "not in
   steady state" (overloaded, a backlog at the end, the metric not settled: the rule of
   ``zsim report``, ``zsim.sweep.report.unsteady``) or whose runs failed is "no answer".
4. Where a variable is declared monotone (every constraint's metric falls, or rises, as
   it grows, the others fixed), a verdict at one design implies the same verdict at every
   design of its chain (the designs that differ only in that variable) on the side where
   the constraint is easier (meets) or harder (fails), and the designs to test are chosen
   by bisection along the chain. The data are checked: paired differences of neighbouring
   tested designs (same replications) that move the wrong way at the stated confidence,
   or two verdicts that contradict the declared order, switch the variable's inference off
   (the search then goes on design by design, the grid) and the answer says so.
5. It stops when the cheapest design that is not ruled out meets every constraint (every
   cheaper one fails a constraint or is no answer), when every design is ruled out, or
   when the next batch would exceed the budget (the answer then says what is still open).

The guarantee (for replications normal enough for the t-based test, and monotonicity
where declared): with probability at least ``confidence``, every test the search makes
is right outside its indifference zone, so the chosen design does not clearly fail any
constraint (no mean beyond ``target + eps`` on the wrong side) and no cheaper steady
design clearly meets all of them (all means beyond ``target - eps`` on the right side).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .feasibility import FAILS, MEETS, Decision, decide

FEASIBLE = "feasible"
INFEASIBLE = "infeasible"
NOT_STEADY = "not steady"
FAILED = "failed"
OPEN = "open"
UNTRIED = "untried"
#: a design is no answer when at least this share of its first n0 runs are not steady
UNSTEADY_SHARE = 0.5


@dataclass(frozen=True)
class Constraint:
    metric: str
    sense: int  # +1: below target, -1: above target
    target: float
    eps: float  # indifference zone, absolute, > 0
    #: the range every run's value lies in, where known (a loss fraction: 0 to 1); lets the
    #: test decide from runs that are all equal (zsim.search.feasibility)
    bounds: tuple[float, float] | None = None

    def text(self) -> str:
        return f"{self.metric} {'<' if self.sense > 0 else '>'} {self.target:g}"


@dataclass(frozen=True)
class Monotone:
    variable: int  # index into a design's coordinates
    direction: int  # +1: every constraint's metric rises as the variable grows; -1: falls


class Data(Protocol):
    """What the procedure reads: the runs made so far, by design and replication."""

    def available(self, design: int) -> int:
        """Replications 0 .. n-1 all present at ``design``: n."""

    def values(self, design: int, constraint: int, n: int) -> np.ndarray:
        """The constraint's metric in replications 0 .. n-1 (NaN: missing, or the run failed)."""

    def unsteady(self, design: int, constraint: int, n: int) -> np.ndarray:
        """Per replication 0 .. n-1: 1.0 when the run was not in steady state for the metric."""

    def exact(self, design: int, n: int) -> bool:
        """Whether replications 0 .. n-1 all drew no random value (``seed_independent``):
        each then gives the design's exact value."""


@dataclass
class Verdict:
    """A (design, constraint) verdict: tested there, or implied by a test at ``source``."""

    verdict: str  # MEETS or FAILS
    source: int
    used: int = 0


@dataclass
class State:
    """Everything decided so far (recomputed from the data by ``Procedure.assess``)."""

    status: list[str]
    reason: list[str]
    tests: list[list[Decision | None]]
    known: list[list[Verdict | None]]
    available: list[int]
    spent: int
    disabled: dict[int, str] = field(default_factory=dict)  # monotone variable -> why its inference is off


@dataclass(frozen=True)
class Outcome:
    """The end of a search: ``found`` (the answer), ``none`` (every design ruled out) or
    ``budget`` (the budget ran out with decisions open)."""

    kind: str
    answer: int | None  # the design chosen (found), or the cheapest meeting every constraint so far (budget)
    state: State
    open_designs: tuple[int, ...]  # cheaper than the answer and undecided (budget)
    #: (budget) the cheapest design every cheaper one of which is ruled out, and whose open
    #: constraints all lean to "meets" (runs all equal, short of the bound's count): the
    #: answer the runs point to, not certified
    candidate: int | None = None


class Procedure:
    def __init__(self, costs: Sequence[float], coords: Sequence[Sequence[float]], constraints: Sequence[Constraint],
                 monotone: Sequence[Monotone] = (), *, confidence: float = 0.95, n0: int = 10, budget_runs: int = 10_000,
                 width: int = 4, names: Sequence[str] | None = None, family: int | None = None) -> None:
        self.costs = list(costs)
        #: how reasons name a design (default "design <index>")
        self.names = list(names) if names is not None else [f"design {d}" for d in range(len(self.costs))]
        self.coords = [tuple(c) for c in coords]
        self.constraints = list(constraints)
        self.monotone = list(monotone)
        self.confidence = confidence
        self.n0 = n0
        self.budget_runs = budget_runs
        self.width = width
        self.order = sorted(range(len(self.costs)), key=lambda d: (self.costs[d], d))
        #: the tests the Bonferroni split covers: this procedure's, or a whole family's
        #: (``family``: a search with conditions splits over every condition's tests)
        self.tests_possible = len(self.costs) * len(self.constraints) if family is None else family
        self.beta = (1 - confidence) / self.tests_possible
        # chains: per monotone variable, the designs that differ only in it, by its value
        self.chains: list[dict[int, list[int]]] = []
        for mono in self.monotone:
            groups: dict[tuple[object, ...], list[int]] = {}
            for d, c in enumerate(self.coords):
                groups.setdefault(c[:mono.variable] + c[mono.variable + 1:], []).append(d)
            by_design: dict[int, list[int]] = {}
            for members in groups.values():
                members.sort(key=functools.partial(self._value, variable=mono.variable))
                for d in members:
                    by_design[d] = members
            self.chains.append(by_design)

    def _value(self, design: int, variable: int) -> float:
        return float(self.coords[design][variable])

    # -- what the data say ------------------------------------------------------------

    def better(self, mono: Monotone, constraint: Constraint) -> int:
        """+1 when meeting ``constraint`` gets easier as ``mono``'s variable grows, -1 when harder."""
        return -mono.direction * constraint.sense

    def assess(self, data: Data) -> State:
        k, m = len(self.costs), len(self.constraints)
        state = State(status=[UNTRIED] * k, reason=[""] * k, tests=[[None] * m for _ in range(k)],
                      known=[[None] * m for _ in range(k)], available=[data.available(d) for d in range(k)], spent=0)
        state.spent = sum(state.available)
        for d in range(k):
            n = state.available[d]
            # runs that drew no random value give the design's exact value: one is enough
            exact = n >= 1 and data.exact(d, n)
            if n < self.n0 and not exact:
                continue
            state.status[d] = OPEN
            for j, constraint in enumerate(self.constraints):
                share = float(np.mean(data.unsteady(d, j, min(n, self.n0))))
                if share >= UNSTEADY_SHARE:
                    state.status[d] = NOT_STEADY
                    state.reason[d] = (f"{constraint.metric}: {share:.0%} of the first {self.n0} runs were not in steady state "
                                       "(overloaded, a backlog at the end, or the metric not settled)")
                    break
                values = data.values(d, j, n)
                missing = np.flatnonzero(~np.isfinite(values))
                if len(missing):
                    state.status[d] = FAILED
                    state.reason[d] = f"{constraint.metric}: no value in replication {int(missing[0])} (the run failed or measured nothing)"
                    break
                test = decide(values, constraint.target, constraint.sense, constraint.eps, self.beta, self.n0,
                              constraint.bounds, exact=exact)
                state.tests[d][j] = test
                if test.verdict is not None:
                    state.known[d][j] = Verdict(test.verdict, d, test.used)
        self._infer(state, data)
        for d in range(k):
            if state.status[d] not in (OPEN, UNTRIED):
                continue
            verdicts = [v.verdict if v else None for v in state.known[d]]
            if FAILS in verdicts:
                j = verdicts.index(FAILS)
                state.status[d] = INFEASIBLE
                source = state.known[d][j]
                assert source is not None
                how = "" if source.source == d else f" (implied by {self.names[source.source]})"
                state.reason[d] = f"fails {self.constraints[j].text()}{how}"
            elif verdicts and all(v == MEETS for v in verdicts):
                state.status[d] = FEASIBLE
        return state

    def _infer(self, state: State, data: Data) -> None:
        """Spread verdicts along the chains of the monotone variables whose order the data
        do not contradict; switch off (``state.disabled``) those they do."""
        tested = [[v for v in row] for row in state.known]
        for index, mono in enumerate(self.monotone):
            why = self._contradiction(index, mono, state, tested, data)
            if why:
                state.disabled[index] = why
        for index, mono in enumerate(self.monotone):
            if index in state.disabled:
                continue
            chains = self.chains[index]
            for d, row in enumerate(tested):
                if state.status[d] in (NOT_STEADY, FAILED):
                    continue
                for j, verdict in enumerate(row):
                    if verdict is None or verdict.source != d:
                        continue
                    up = self.better(mono, self.constraints[j]) * (1 if verdict.verdict == MEETS else -1)
                    value = self.coords[d][mono.variable]
                    for e in chains[d]:
                        there = self.coords[e][mono.variable]
                        if e != d and up * (there - value) > 0 and state.known[e][j] is None:
                            state.known[e][j] = Verdict(verdict.verdict, d)

    def _contradiction(self, index: int, mono: Monotone, state: State, tested: list[list[Verdict | None]], data: Data) -> str:
        from scipy import stats

        seen: set[int] = set()
        alpha = 1 - self.confidence
        for chain in self.chains[index].values():
            if id(chain) in seen:
                continue
            seen.add(id(chain))
            tried = [e for e in chain if state.status[e] == OPEN]  # a first stage made, or an exact run
            for j, constraint in enumerate(self.constraints):
                better = self.better(mono, constraint)
                # verdicts in the wrong order: meets at a value, fails where it is easier
                for a in tried:
                    for b in tried:
                        va, vb = tested[a][j], tested[b][j]
                        if va and vb and va.verdict == MEETS and vb.verdict == FAILS and better * (
                                self.coords[b][mono.variable] - self.coords[a][mono.variable]) > 0:
                            return (f"{constraint.metric} meets its target at {self.names[a]} and fails it at {self.names[b]}, where "
                                    "the declared order says it is easier")
                # paired differences of neighbours that move the wrong way
                for a, b in zip(tried, tried[1:], strict=False):
                    n = min(state.available[a], state.available[b])
                    if n < self.n0 and not (data.exact(a, state.available[a]) and data.exact(b, state.available[b])):
                        continue  # one run of a design that draws at random says nothing against an exact one
                    ya, yb = data.values(a, j, n), data.values(b, j, n)
                    if not (np.all(np.isfinite(ya)) and np.all(np.isfinite(yb))):
                        continue
                    diff = (yb - ya) * mono.direction  # > 0: the way the declaration says it moves
                    if np.all(diff == diff[0]):
                        wrong = diff[0] < 0
                    else:
                        wrong = float(stats.ttest_1samp(diff, 0.0, alternative="less").pvalue) < alpha
                    if wrong:
                        return (f"{constraint.metric} {'rises' if mono.direction < 0 else 'falls'} from {self.names[a]} to "
                                f"{self.names[b]} (paired over {n} replications, one-sided t test at {1 - alpha:.0%})")
        return ""

    # -- what to run next --------------------------------------------------------------

    def outcome(self, state: State) -> Outcome | None:
        """The search's end if the data settle it, else None."""
        for d in self.order:
            status = state.status[d]
            if status == FEASIBLE:
                return Outcome("found", d, state, ())
            if status not in (INFEASIBLE, NOT_STEADY, FAILED):
                return None
        return Outcome("none", None, state, ())

    def _target(self, state: State, d: int) -> int:
        if state.available[d] == 0:
            # a probe: one run says whether the design draws anything random; if not, that
            # run is its exact value and the first stage's other n0 - 1 runs are not needed
            # (a design that does draw uses the probe as its first replication)
            return 1
        if state.available[d] < self.n0:
            return self.n0
        wanted = [test.predicted for j, test in enumerate(state.tests[d]) if test is not None and state.known[d][j] is None]
        return max(wanted) if wanted else state.available[d]

    @staticmethod
    def tentative(state: State, d: int, j: int) -> str | None:
        """The verdict an open test leans to when every run so far gave one value (the
        test waits for a run that differs, or for the binomial bound's count: possibly
        thousands): MEETS or FAILS by the side of the target that value is on; None when
        the test is open for another reason (or decided)."""
        test = state.tests[d][j]
        if state.known[d][j] is not None or test is None or test.verdict is not None or test.variance != 0.0:
            return None
        return test.lean or None

    def _to_run(self, state: State, d: int) -> int:
        """The design to run for open design ``d``: ``d`` itself, or the middle of its
        undecided stretch along the first monotone variable in use (bisection). A design
        whose runs are all equal (``tentative``) does not hold the bisection up: it bounds
        the stretch like a verdict, and is run itself only once the stretch on its far side
        is decided (its certification can take thousands of runs)."""
        for index in range(len(self.monotone)):
            if index in state.disabled:
                continue
            chain = self.chains[index][d]
            unknown = [j for j in range(len(self.constraints)) if state.known[d][j] is None]
            if not unknown:
                return d
            j = unknown[0]

            def open_for(e: int, j: int = j) -> bool:
                return state.status[e] in (OPEN, UNTRIED) and state.known[e][j] is None and self.tentative(state, e, j) is None

            at = chain.index(d)
            lean = self.tentative(state, d, j)
            if lean is not None:
                # meets (so far): the open stretch on the harder side decides first; fails: the easier side
                better = self.better(self.monotone[index], self.constraints[j])
                step = -better if lean == MEETS else better
                at += step
                if not (0 <= at < len(chain) and open_for(chain[at])):
                    return d
            lo = hi = at
            while lo > 0 and open_for(chain[lo - 1]):
                lo -= 1
            while hi < len(chain) - 1 and open_for(chain[hi + 1]):
                hi += 1
            return chain[(lo + hi) // 2]
        return d

    def plan(self, data: Data, room: int | None = None) -> tuple[dict[int, int], State, Outcome | None]:
        """The next batch (design -> replications wanted there), the state, and the outcome
        when the search is over (then the batch is empty). ``room``: the runs this batch may
        take (default: the budget less the runs spent here)."""
        state = self.assess(data)
        done = self.outcome(state)
        if done is not None:
            return {}, state, done
        wanted: dict[int, int] = {}
        for d in self.order:
            if len(wanted) >= self.width:
                break
            if state.status[d] not in (OPEN, UNTRIED):
                continue
            e = self._to_run(state, d)
            if e not in wanted:
                target = self._target(state, e)
                if target > state.available[e]:
                    wanted[e] = target
        if room is None:
            room = self.budget_runs - state.spent
        batch: dict[int, int] = {}
        for e, target in wanted.items():  # cheapest first: the budget goes where the answer is
            extra = min(target - state.available[e], room)
            if target > 1 and state.available[e] < self.n0 and state.available[e] + extra < self.n0:
                continue  # a first stage that does not fit tells nothing (a probe of one run does)
            if extra > 0:
                batch[e] = state.available[e] + extra
                room -= extra
        if not batch:
            return {}, state, self._out_of_budget(state)
        return batch, state, None

    def _out_of_budget(self, state: State) -> Outcome:
        best = next((d for d in self.order if state.status[d] == FEASIBLE), None)
        cheaper = self.order if best is None else self.order[:self.order.index(best)]
        still = tuple(d for d in cheaper if state.status[d] in (OPEN, UNTRIED))
        candidate = None
        if still and state.status[still[0]] == OPEN and all(
                state.known[still[0]][j] is not None and state.known[still[0]][j].verdict == MEETS  # type: ignore[union-attr]
                or self.tentative(state, still[0], j) == MEETS for j in range(len(self.constraints))):
            candidate = still[0]
        return Outcome("budget", best, state, still, candidate)


def interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean and the two-sided Student-t ``confidence`` interval of the replications
    (scipy's quantile; NaN bounds below two values)."""
    from scipy import stats

    n = len(values)
    mean = float(np.mean(values)) if n else math.nan
    if n < 2:
        return mean, math.nan, math.nan
    sd = float(np.std(values, ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half
