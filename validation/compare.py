"""Simulation against reality, metric by metric: ``zsim validate``.

``validate(path, replications=N)`` runs a scenario N times in simulation (seeds s, s+1, ...)
and N times on real pyzmq (``validation.harness.run_real``, with the same seeds for the
workloads' random draws), extracts the metrics the scenario's ``[validation]`` table names
(or sensible defaults), and decides per metric whether the two agree under that metric's
tolerance. The ``[validation]`` schema is documented in docs/validation.md:

```toml
[validation]
replications = 3            # default N for zsim validate / python -m validation
timeout_s = 20              # wall limit per real run
quiet_s = 0.5               # a run without until_s ends after this long without traffic
fast = true                 # part of the CI subset (python -m validation --fast)
claims = ["pub-dontwait"]   # claims of validation/claims.py this scenario checks

[validation.derived]        # new metrics from others: + - * / min() max() abs(), numbers
elapsed_s = "sockets.vent.last_recv_s - 0.5"

[validation.metrics]        # metric path = tolerance
"sockets.sub.received" = "exact"
"senders.send.pub.finished_at_s" = { rel = 0.05 }
"latency_s.p50" = { rel = 0.25, abs = 0.0005 }
"latency" = { ks = 0.2 }                      # per-message samples, Kolmogorov distance
"processes.sender.term_blocked" = { proportion = 0.34 }
"sockets.pull.received" = { range = 0 }       # real values inside the simulated range
"sockets.pull.last_index" = { mode = 0 }      # the most common value is the same (races)

[validation.known."sockets.pull.received"]    # a difference we know and explain
reason = "..."
model_lacks = "..."

[validation.not_compared]   # what the question does not depend on, and why
"sockets.sync*.rtt_s" = "the sync handshake only orders the start"
```

Per metric: ``agrees``, ``differs`` (with the scenario's explanation if it has one), ``n/a``
(a side could not observe it) or ``error`` (no successful run). Every other metric the
simulation reports for the design is listed as not compared, with the reason (``account``:
simulation-only, not observed on the real side, no tolerance, not in the default set, or the
scenario's own word). The question depends on the named metrics (or the defaults) and on the
request -> reply and end-to-end times of the design's request paths (``request_paths``); the
scenario's verdict is ``agrees`` only when everything it depends on was compared and agrees,
``differs`` when a compared metric differs, ``incomplete`` when what was compared agrees but
something the question depends on was not compared (``question_not_compared``), ``error``
without a successful run on a side. A scenario whose real senders fell behind their own
schedule by more than ``SCHEDULE_MARGIN`` is ``machine-bound``: its numbers measure the
machine, not ZeroMQ (``schedule_check``). Metric paths are checked against the scenario when
the file is loaded (``check_metric_path``). Times default to a relative tolerance
(``time_tolerance``).

Per ``[[send]]``, ``sender_rates`` sets the requested rate next to the rate achieved in the
real runs and in the simulated ones; a side below ``ACHIEVED_RATE_SHARE`` (95 %) of the
requested rate offered a different load downstream than the scenario asks, and the output
says so (``SenderRates.warnings``). It does not change the verdict.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zsim import expressions, spec
from zsim.checks import ACHIEVED_RATE_SHARE
from zsim.errors import ScenarioError
from zsim.expressions import evaluate
from zsim.metrics import SUMMARY_LEDGER, SUMMARY_LINK_FIELDS, summary_paths
from zsim.socket_types import TYPES
from zsim.spec import Scenario
from zsim.stats import t975
from zsim.summary import ENTITIES, LedgerSummary, Percentiles, RunSummary

__all__ = [
    "Tolerance", "ValidationSpec", "MetricResult", "ScenarioValidation", "parse_validation", "validate",
    "metric_value", "interval", "evaluate", "check_metric_path", "metric_paths", "schedule_check", "machine_load",
    "SCHEDULE_MARGIN", "ACHIEVED_RATE_SHARE", "SenderRates", "sender_rates", "format_senders",
    "NotCompared", "account", "request_paths", "reported_metrics", "format_not_compared", "matches_pattern",
    "time_tolerance", "TIME_REL", "TIME_FLOOR_S",
]

_pc = time.perf_counter

SAMPLE_METRICS = ("latency", "rtt")
_VALIDATION_KEYS = {"replications", "timeout_s", "quiet_s", "fast", "claims", "derived", "metrics", "known",
                    "not_compared", "description", "real_seed_offset"}


# --------------------------------------------------------------------------------------
# Tolerances


@dataclass(frozen=True)
class Tolerance:
    """How close simulation and reality must be for one metric.

    kind: ``exact`` (every value on both sides equal), ``relative`` (|mean difference| <=
    max(rel * |real mean|, abs)), ``range`` (every real value within the simulated
    min..max, widened by abs), ``mode`` (the most common real value is within ``value`` of
    the most common simulated one: a race whose outcome a busy machine can move in some real
    runs), ``proportion`` (share of true/non-zero values differs by at most ``value``),
    ``ks`` (Kolmogorov-Smirnov distance between the pooled per-message samples at most
    ``value``).
    """

    kind: str
    rel: float = 0.0
    abs: float = 0.0
    value: float = 0.0

    def describe(self) -> str:
        if self.kind == "exact":
            return "exact"
        if self.kind == "relative":
            parts = []
            if self.rel:
                parts.append(f"±{self.rel * 100:g}%")
            if self.abs:
                parts.append(f"±{_num(self.abs)}")
            return " or ".join(parts) if parts else "±0"
        if self.kind == "range":
            return "in sim range" + (f" ±{_num(self.abs)}" if self.abs else "")
        if self.kind == "mode":
            return "same mode" + (f" ±{_num(float(self.value))}" if self.value else "")
        if self.kind == "proportion":
            return f"share ±{self.value:g}"
        if self.kind == "ks":
            return f"KS D ≤ {self.value:g}"
        return self.kind


#: the statistics of a time's percentiles (``zsim.summary.Percentiles``)
_PERCENTILES = tuple(Percentiles.__annotations__)

def parse_tolerance(raw: Any, path: str) -> Tolerance:
    if raw == "exact":
        return Tolerance("exact")
    if isinstance(raw, str):
        raise ScenarioError(path, f"a tolerance is \"exact\" or a table like {{ rel = 0.1 }}, got {raw!r}")
    if not isinstance(raw, dict):
        raise ScenarioError(path, f"must be \"exact\" or a table, got {raw!r}")
    keys = set(raw)
    allowed = {"rel", "abs", "range", "mode", "proportion", "ks", "tolerance"}
    for key in keys - allowed:
        raise ScenarioError(f"{path}.{key}", f"unknown tolerance field; known: {', '.join(sorted(allowed))}")

    def number(key: str) -> float:
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ScenarioError(f"{path}.{key}", f"must be a number >= 0, got {value!r}")
        return float(value)

    if raw.get("tolerance") == "exact":
        return Tolerance("exact")
    if "ks" in keys:
        return Tolerance("ks", value=number("ks"))
    if "proportion" in keys:
        return Tolerance("proportion", value=number("proportion"))
    if "range" in keys:
        return Tolerance("range", abs=number("range"))
    if "mode" in keys:
        return Tolerance("mode", value=number("mode"))
    if "rel" in keys or "abs" in keys:
        return Tolerance("relative", rel=number("rel") if "rel" in keys else 0.0, abs=number("abs") if "abs" in keys else 0.0)
    raise ScenarioError(path, "give one of: \"exact\", rel/abs, range, mode, proportion, ks")


# --------------------------------------------------------------------------------------
# The [validation] table


@dataclass
class ValidationSpec:
    replications: int = 3
    timeout_s: float | None = None
    fast: bool = False
    claims: tuple[str, ...] = ()
    metrics: dict[str, Tolerance] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    known: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ``[validation.not_compared]``: metric path patterns (``fnmatch``, a prefix matches
    #: what is under it) the scenario's question does not depend on, with the reason
    not_compared: dict[str, str] = field(default_factory=dict)
    description: str = ""
    defaulted: bool = False


#: Replications of one validation: each is a real run (seconds of pyzmq) and a simulated one.
MAX_REPLICATIONS = 10_000


def parse_validation(scenario: Scenario) -> ValidationSpec:
    raw = dict(scenario.validation)
    for key in raw:
        if key not in _VALIDATION_KEYS:
            raise ScenarioError(f"validation.{key}", f"unknown field; known: {', '.join(sorted(_VALIDATION_KEYS))}")
    result = ValidationSpec()
    if "replications" in raw:
        value = raw["replications"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ScenarioError("validation.replications", f"must be an integer >= 1, got {value!r}")
        if value > MAX_REPLICATIONS:
            raise ScenarioError("validation.replications", f"must be at most {MAX_REPLICATIONS:,} (validation.compare.MAX_REPLICATIONS)")
        result.replications = value
    if "timeout_s" in raw:
        value = raw["timeout_s"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ScenarioError("validation.timeout_s", f"must be a number > 0, got {value!r}")
        result.timeout_s = float(value)
    if "quiet_s" in raw:
        value = raw["quiet_s"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ScenarioError("validation.quiet_s", f"must be a number > 0, got {value!r}")
    result.fast = bool(raw.get("fast", False))
    claims = raw.get("claims", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise ScenarioError("validation.claims", "must be a list of claim ids")
    result.claims = tuple(claims)
    result.description = str(raw.get("description", ""))
    derived = raw.get("derived", {})
    if not isinstance(derived, dict):
        raise ScenarioError("validation.derived", "must be a table of name = \"expression\"")
    for name, expr in derived.items():
        if not isinstance(expr, str):
            raise ScenarioError(f"validation.derived.{name}", "must be an expression string")
        try:
            _check_expression(expr)
        except ValueError as exc:
            raise ScenarioError(f"validation.derived.{name}", str(exc)) from None
        result.derived[name] = expr
    metrics = raw.get("metrics")
    if metrics is None:
        result.metrics = default_metrics(scenario)
        result.defaulted = True
    else:
        if not isinstance(metrics, dict) or not metrics:
            raise ScenarioError("validation.metrics", "must be a non-empty table of metric = tolerance")
        for name, tol in metrics.items():
            result.metrics[name] = parse_tolerance(tol, f"validation.metrics.{name}")
            if result.metrics[name].kind == "ks" and _sample_kind(name) is None:
                raise ScenarioError(f"validation.metrics.{name}", "a ks tolerance needs a per-message sample metric: "
                                    "latency, latency.<socket>, rtt.<sender>")
    # metric paths exist: a typo is an error now, not "n/a (not observed on either side)"
    # after minutes of real runs. The valid paths are listed once (a dict: looked up in
    # constant time), so the check is linear in the metrics, not metrics x paths
    valid = dict.fromkeys(metric_paths(scenario, result.derived))
    for index, (name, tol) in enumerate(result.metrics.items()):
        problem = check_metric_path(name, scenario, result.derived, tol, valid=valid)
        if problem is not None:
            raise ScenarioError(f"validation.metrics[{index}]", problem)
    for name, expr in result.derived.items():
        for path in _expression_paths(expr):
            problem = check_metric_path(path, scenario, result.derived, valid=valid)
            if problem is None and _sample_kind(path) is not None and path not in result.derived:
                problem = f"{path!r} is a per-message sample metric; a derived metric takes summary values"
            if problem is not None:
                raise ScenarioError(f"validation.derived.{name}", problem)
    known = raw.get("known", {})
    if not isinstance(known, dict):
        raise ScenarioError("validation.known", "must be a table of metric = { reason, model_lacks }")
    for name, note in known.items():
        if not isinstance(note, dict) or "reason" not in note:
            raise ScenarioError(f"validation.known.{name}", "needs reason = \"...\" (and model_lacks = \"...\")")
        if name not in result.metrics:
            raise ScenarioError(f"validation.known.{name}", "explains a metric that [validation.metrics] does not list"
                                f"; listed: {', '.join(result.metrics)}")
        result.known[name] = {"reason": str(note["reason"]), "model_lacks": str(note.get("model_lacks", ""))}
    skipped = raw.get("not_compared", {})
    if not isinstance(skipped, dict):
        raise ScenarioError("validation.not_compared", "must be a table of metric pattern = \"why the question does not depend on it\"")
    for pattern, reason in skipped.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ScenarioError(f"validation.not_compared.{pattern}", "needs the reason, a non-empty string")
        if pattern in result.metrics:
            raise ScenarioError(f"validation.not_compared.{pattern}", "is compared: [validation.metrics] names it")
        if not _pattern_matches_any(pattern, scenario, result.derived):
            raise ScenarioError(f"validation.not_compared.{pattern}", "matches no metric of this scenario "
                                "(a metric path or a pattern such as \"sockets.sync*.rtt_s\")")
        result.not_compared[pattern] = reason.strip()
    return result


def matches_pattern(path: str, pattern: str) -> bool:
    """``path`` is ``pattern`` (``fnmatch``: * ? [...]) or lies under it
    (``sockets.sync*.rtt_s`` matches ``sockets.sync1.rtt_s.p50``)."""
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern + ".*")


def _pattern_matches_any(pattern: str, scenario: Scenario, derived: Mapping[str, str]) -> bool:
    """Whether a ``[validation.not_compared]`` pattern names some metric of the scenario:
    a summary path, or an end-to-end time from a sending socket to a receiving one."""
    if any(matches_pattern(path, pattern) for path in metric_paths(scenario, derived)):
        return True
    sources = {send.socket for send in scenario.sends}
    sinks = {recv.socket for recv in scenario.recvs}
    return any(matches_pattern(f"sockets.{sink}.e2e_s.{source}.p50", pattern) for sink in sinks for source in sources)


# --------------------------------------------------------------------------------------
# Which metric paths exist (checked when the file is loaded, before anything runs)

_LEDGER_TABLES = tuple(name for name in LedgerSummary.__annotations__ if name not in SUMMARY_LEDGER)


def metric_paths(scenario: Scenario, derived: Mapping[str, str] | None = None) -> list[str]:
    """Every metric path a ``[validation]`` table may name for ``scenario``: the summary
    paths both sides fill (``zsim.metrics.summary_paths``; without the open-ended
    ``ledger.<rule table>.<rule>``) and the derived names."""
    return [*summary_paths(scenario), *(derived or ())]


def check_metric_path(path: str, scenario: Scenario, derived: Mapping[str, str], tolerance: Tolerance | None = None,
                      valid: Mapping[str, Any] | None = None) -> str | None:
    """None when ``path`` names a metric of ``scenario``, else the reason (with the closest
    valid paths). Per-message sample metrics (``latency``, ``latency.<socket>``,
    ``rtt.<sender>``) need a ks tolerance; every other path is a summary value. ``valid``:
    ``metric_paths`` as a dict's keys, made once by a caller that checks many paths."""
    import difflib

    if path in derived:
        return None
    sample = _sample_kind(path)
    if sample is not None:
        kind, target = sample
        what, names = ("socket", [s.name for s in scenario.sockets]) if kind == "latency" else ("sender", [s.name for s in scenario.sends])
        if target is not None and target not in names:
            close = difflib.get_close_matches(target, names, n=3)
            return (f"unknown metric {path!r}: no {what} {target!r}"
                    + (f" (did you mean {', '.join(repr(f'{kind}.{c}') for c in close)}?)" if close else ""))
        if tolerance is not None and tolerance.kind != "ks":
            return f"{path!r} is a per-message sample metric: give it a ks tolerance ({{ ks = 0.2 }}) or name a summary value"
        return None
    if path.startswith("ledger.") and path.split(".")[1] in _LEDGER_TABLES and path.count(".") >= 2:
        return None
    if ".e2e_s." in path:
        return _check_e2e_path(path, scenario)
    if valid is None:
        valid = dict.fromkeys(metric_paths(scenario, derived))
    if path in valid:
        return _check_sender_rtt(path, scenario)
    close = difflib.get_close_matches(path, list(valid), n=3, cutoff=0.75)
    if close:
        return f"unknown metric {path!r} (did you mean {', '.join(repr(c) for c in close)}?)"
    return (f"unknown metric {path!r}; metrics are sockets.<socket>.<counter>, sockets.<socket>.rtt_s.<statistic>, "
            "sockets.<sink>.e2e_s.<source>.<statistic>, senders.<sender>.<field>, "
            "receivers.<receiver>.<field>, proxies.<proxy>.forwarded, processes.<process>.<field>, ledger.<field>, "
            "network.<link>.<a>-><b>.<bytes|queue_drops>, latency_s.<p50|p95|...>, a name of [validation.derived] or, "
            "with a ks tolerance, latency[.<socket>] / rtt.<sender>")


def _check_e2e_path(path: str, scenario: Scenario) -> str | None:
    """``sockets.<sink>.e2e_s.<source>.<statistic>``: the times from a message sent at the
    source socket to what it caused arriving at the sink (``zsim.results.causal_times``)."""
    names = [s.name for s in scenario.sockets]
    for sink in sorted(names, key=len, reverse=True):  # names with dots: the longest first
        head = f"sockets.{sink}.e2e_s."
        if not path.startswith(head):
            continue
        source, _, stat = path[len(head):].rpartition(".")
        if source not in names:
            return f"unknown metric {path!r}: no socket {source!r} (sockets.<sink>.e2e_s.<source socket>.<statistic>)"
        if stat not in _PERCENTILES:
            return f"unknown metric {path!r}: the statistics are {', '.join(_PERCENTILES)}"
        return None
    return f"unknown metric {path!r}: end-to-end times are sockets.<sink socket>.e2e_s.<source socket>.<statistic>"


def _check_sender_rtt(path: str, scenario: Scenario) -> str | None:
    """A ``[[send]]`` has request -> reply times of its own only on a REQ (it waits for each
    reply); other senders' round trips are their socket's (``sockets.<s>.rtt_s``), read from
    the replies that socket receives."""
    if not path.startswith("senders.") or ".rtt_s." not in path:
        return None
    types = {s.name: s.type for s in scenario.sockets}
    for send in scenario.sends:
        if path.startswith(f"senders.{send.name}.rtt_s.") and not TYPES[types[send.socket]].request:
            stat = path.rpartition(".")[2]
            return (f"{path!r}: a {types[send.socket]}'s [[send]] does not wait for replies; its request -> reply times are "
                    f"the replies its socket receives: sockets.{send.socket}.rtt_s.{stat}")
    return None


#: what one direction of a link carries in the real run beyond the model's payload: ZMTP's
#: greeting and handshake (64 + about 50 bytes a connection), with room for a few connections
LINK_HANDSHAKE_BYTES = 4096


#: The default tolerance of a time's median (latency, request -> reply, end to end): within
#: TIME_REL of the real value, or TIME_FLOOR_S when that is larger. From the catalogue's
#: real runs (docs/validation.md, "Tolerances of times"): on a quiet machine the medians of
#: round trips and latencies agreed within 1-5 % (reqrep-lockstep 1.22 ms on both sides,
#: router-dealer-broker 5.6 against 5.7 ms, hwm-as-little-as-half 146.8 against 146.5 ms);
#: on the project's loaded 2-core machine a round trip of four thread wake-ups took 0.10-0.15
#: ms longer (8-12 % of 1.3 ms) and a sub-millisecond hop 20 us longer (pubsub-envelopes,
#: 0.105 against 0.125 ms). 25 % of the real value holds that noise; a larger difference is
#: the model's. The floor is one thread wake-up on that loaded machine (about 40 us of the
#: 0.15 ms over four) and the spread of one tcp hop (validation/calibration-notes.md:
#: hop_latency p10-p90 57-112 us around 72 us): a difference under 50 us says nothing about
#: the model. (The old default, +-50 % or 0.5 ms absolute, passed sub-millisecond medians 3.3
#: to 4.7 times apart, issue 41: 0.4 ms against 0.1 ms is within 0.5 ms.)
TIME_REL = 0.25
TIME_FLOOR_S = 50e-6


def time_tolerance() -> Tolerance:
    """The default tolerance of a time's median (``TIME_REL``, ``TIME_FLOOR_S``)."""
    return Tolerance("relative", rel=TIME_REL, abs=TIME_FLOOR_S)


def default_metrics(scenario: Scenario) -> dict[str, Tolerance]:
    """Metrics observable on both sides, with tolerances for noisy real runs. The medians of
    request -> reply and end-to-end times are added once the simulation shows which sockets
    have them (``request_paths``; ``validate``)."""
    metrics: dict[str, Tolerance] = {}
    for send in scenario.sends:
        metrics[f"senders.{send.name}.sent"] = Tolerance("relative", rel=0.05, abs=2)
        metrics[f"senders.{send.name}.again"] = Tolerance("relative", rel=0.1, abs=2)
    receiving = {recv.socket for recv in scenario.recvs}
    for sock in scenario.sockets:
        if sock.name in receiving:
            metrics[f"sockets.{sock.name}.received"] = Tolerance("relative", rel=0.1, abs=2)
    if scenario.recvs:
        metrics["latency_s.p50"] = time_tolerance()
    for proc in scenario.processes:
        if proc.exit_at_s is not None or proc.exit_after_sends:
            metrics[f"processes.{proc.name}.term_blocked"] = Tolerance("proportion", value=0.34)
    for link in scenario.links:
        # the payload each direction carried (the real side: its qdisc's count less the
        # headers, harness.link_counters); a few KB either way for what only the real side
        # carries over the link (ZMTP greetings and handshakes)
        for a, b in (link.hosts, tuple(reversed(link.hosts))):
            metrics[f"network.{link.name}.{a}->{b}.bytes"] = Tolerance("relative", rel=0.1, abs=LINK_HANDSHAKE_BYTES)
    return metrics


# --------------------------------------------------------------------------------------
# Metric values


def metric_value(summary: Mapping[str, Any], path: str) -> Any:
    """A value of the summary by dotted path; names with dots are matched longest first
    (``senders.send.pub.sent`` finds the sender ``send.pub``). Booleans become 0/1."""
    node: Any = summary
    parts = path.split(".")
    index = 0
    while index < len(parts):
        if not isinstance(node, Mapping):
            return None
        for end in range(len(parts), index, -1):
            key = ".".join(parts[index:end])
            if key in node:
                node = node[key]
                index = end
                break
        else:
            return None
    if isinstance(node, bool):
        return 1.0 if node else 0.0
    if isinstance(node, (int, float)):
        return float(node)
    return None


# The expression language of [validation.derived] is zsim's (``zsim.expressions``), shared
# with the sweeps' [report.derived]: names with dots, numbers, + - * /, max, min, abs, sum.
def _check_expression(expr: str) -> Any:
    return expressions.parse(expr)


def _expression_paths(expr: str) -> list[str]:
    """The metric paths an expression of ``[validation.derived]`` reads."""
    return expressions.names(expr)


def _sample_kind(name: str) -> tuple[str, str | None] | None:
    """``latency`` / ``latency.<socket>`` / ``rtt.<sender>`` -> (kind, target)."""
    for kind in SAMPLE_METRICS:
        if name == kind:
            return kind, None
        if name.startswith(kind + "."):
            return kind, name[len(kind) + 1:]
    return None


def sim_extras(result: Any, scenario: Scenario) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Metrics the simulator's summary does not carry but its per-message table does:
    first/last delivery time and first/last index per socket; per-message samples."""
    from zsim.ledger import DELIVERED

    extras: dict[str, Any] = {"sockets": {}}
    samples: dict[str, np.ndarray] = {}
    table = result.messages
    names = list(result.socket_names)
    single_sender = len(scenario.sends) == 1 and not any(r.reply for r in scenario.recvs)
    if table is not None and len(table.get("msg_id", ())):
        delivered = table["state"] == DELIVERED
        latency = table["time"] - table["t0"]
        samples["latency"] = latency[delivered]
        for index, name in enumerate(names):
            mask = delivered & (table["socket"] == index)
            entry: dict[str, Any] = {}
            if mask.any():
                times = table["time"][mask]
                first = int(np.argmin(times))
                entry["first_recv_s"] = float(times[first])
                entry["last_recv_s"] = float(times.max())
                entry["first_sent_s"] = float(table["t0"][mask][first])
                samples[f"latency.{name}"] = latency[mask]
                if single_sender:
                    ids = table["msg_id"][mask]
                    entry["first_index"] = float(ids.min())
                    entry["last_index"] = float(ids.max())
            extras["sockets"][name] = entry
    return extras, samples


def real_extras(summary: Mapping[str, Any], scenario: Scenario) -> dict[str, Any]:
    extras: dict[str, Any] = {"sockets": {}}
    indices = summary.get("real", {}).get("indices", {})
    single_sender = len(scenario.sends) == 1 and not any(r.reply for r in scenario.recvs)
    for name, origins in indices.items():
        if single_sender and origins:
            runs = [run for runs in origins.values() for run in runs]
            if runs:
                extras["sockets"][name] = {"first_index": float(min(r[0] for r in runs)),
                                           "last_index": float(max(r[1] for r in runs))}
    return extras


def _merged_lookup(summary: Mapping[str, Any], extras: Mapping[str, Any], derived: Mapping[str, str]) -> Callable[[str], Any]:
    def lookup(path: str) -> Any:
        if path in derived:
            return evaluate(derived[path], lookup)
        value = metric_value(extras, path)
        if value is None:
            value = metric_value(summary, path)
        return value

    return lookup


# --------------------------------------------------------------------------------------
# What the question depends on, and every reported metric that was not compared

#: why real sockets cannot give a field of the simulator's summary, by its name
_SIM_ONLY_REASONS: dict[str, str] = {
    **dict.fromkeys(("dropped", "discarded", "lost_on_close", "queued_at_end", "copies", "dropped_by_rule",
                     "discarded_by_rule", "lost_by_rule", "queued_by_place"),
                    "simulation-only: real sockets do not report the copies libzmq makes, drops, discards or still queues"),
    **dict.fromkeys(("steady_latency_s", "settling", "inbound"),
                    "simulation-only: the model's analysis of its own run (steady state, warm-up, the fates of copies)"),
    "blocked_s@senders": "simulation-only: the harness measures time blocked per socket (sockets.<s>.blocked_s), not per workload",
    **dict.fromkeys(("pause_count", "pauses"), "simulation-only: the model's record of a receiver's pauses"),
    **dict.fromkeys(("pipes", "links"), "simulation-only: libzmq does not expose its pipes or its engines' buffers"),
    **dict.fromkeys(("machine", "hosts"), "simulation-only: the model's cores and hosts"),
}
#: parts of a summary that describe the run, not the design
_NOT_METRICS = frozenset({"ok", "scenario", "scenario_digest", "source", "seed", "profile", "wall_s", "versions", "mode",
                          "templates", "warnings", "randomness", "real", "timed_out"})


@dataclass(frozen=True)
class NotCompared:
    """A metric zsim reports for the design, or one the scenario names, that was not
    compared, and why. ``question``: the scenario's question depends on it (a
    ``[validation.metrics]`` entry a side did not observe, or a request path's round trips
    or end-to-end times that no metric compared), so the verdict cannot be "agrees".
    ``parts``: (family, entity, field) of the path, for listing many compactly."""

    metric: str
    reason: str
    question: bool = False
    parts: tuple[str, str | None, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "reason": self.reason, "question": self.question}


def request_paths(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The request paths of a design, as its simulation reports them: ``sockets.<s>.rtt_s``
    where replies to the requests a socket sent came back to it, and
    ``sockets.<sink>.e2e_s.<source>`` where what a message sent at ``source`` caused ended at
    ``sink`` (``zsim.results.causal_times``); in the order they appear."""
    found: dict[str, None] = {}
    for summary in summaries:
        for name, entry in (summary.get("sockets") or {}).items():
            rtt = entry.get("rtt_s")
            if rtt and rtt.get("count"):
                found[f"sockets.{name}.rtt_s"] = None
            for source, stats in (entry.get("e2e_s") or {}).items():
                if stats and stats.get("count"):
                    found[f"sockets.{name}.e2e_s.{source}"] = None
    return list(found)


def reported_metrics(summary: Mapping[str, Any]) -> list[tuple[str, str | None, str]]:
    """Every metric a summary reports with a value, as (family, entity, field): the
    entities' numbers and flags (a percentile table as one field per statistic, an
    end-to-end table per source), the ledger (its rule tables per rule), the overall
    latency, each link direction's counters, and one entry each for the simulator's pipes,
    links, machine and hosts."""
    found: list[tuple[str, str | None, str]] = []

    def stats(family: str, entity: str | None, field_name: str, table: Mapping[str, Any]) -> None:
        found.extend((family, entity, f"{field_name}.{stat}") for stat, value in table.items() if value is not None)

    for key, value in summary.items():
        if key in _NOT_METRICS or value is None:
            continue
        if key in ENTITIES:
            for name, entry in value.items():
                for field_name, item in entry.items():
                    if item is None or isinstance(item, str):
                        continue
                    if field_name == "e2e_s" and isinstance(item, Mapping):
                        for source, table in item.items():
                            stats(key, name, f"e2e_s.{source}", table)
                    elif isinstance(item, Mapping) and "p50" in item:
                        stats(key, name, field_name, item)
                    else:
                        found.append((key, name, field_name))
        elif key == "ledger":
            for field_name, item in value.items():
                if isinstance(item, Mapping):
                    found.extend(("ledger", None, f"{field_name}.{rule}") for rule in item)
                elif item is not None:
                    found.append(("ledger", None, field_name))
        elif key == "latency_s":
            stats("latency_s", None, "", value)
        elif key == "network":
            for link, directions in value.items():
                for direction, counters in directions.items():
                    found.extend(("network", f"{link}.{direction}", name) for name, item in counters.items()
                                 if isinstance(item, (int, float)) and not isinstance(item, bool))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((key, None, ""))
        elif value:  # pipes, links, machine, hosts: the simulator's own tables
            found.append((key, None, ""))
    return found


def path_of(parts: tuple[str, str | None, str]) -> str:
    family, entity, field_name = parts
    return ".".join(part for part in (family, entity, field_name.strip(".")) if part)


def _inputs(name: str, derived: Mapping[str, str], seen: frozenset[str] = frozenset()) -> list[str]:
    """The metric paths a compared metric reads: itself, or a derived metric's inputs."""
    if name not in derived or name in seen:
        return [name]
    return [path for part in _expression_paths(derived[name]) for path in _inputs(part, derived, seen | {name})]


def _prefixes(path: str, scenario: Scenario) -> list[str]:
    """What a compared metric covers: its own path, or for a per-message sample metric
    every statistic of the same times (``latency.<s>``: ``sockets.<s>.latency_s.*``;
    ``rtt.<sender>``: the sender's and its socket's ``rtt_s.*``)."""
    sample = _sample_kind(path)
    if sample is None:
        return [path]
    kind, target = sample
    if kind == "latency":
        return ["latency_s."] if target is None else [f"sockets.{target}.latency_s."]
    sockets = [send.socket for send in scenario.sends if send.name == target]
    return [f"senders.{target}.rtt_s.", *(f"sockets.{sock}.rtt_s." for sock in sockets)]


def _covers(path: str, family: str, scenario: Scenario) -> bool:
    """Whether comparing ``path`` compares the request path ``family`` (a REQ sender's
    ``senders.<s>.rtt_s.*`` are its socket's round trips)."""
    for prefix in _prefixes(path, scenario):
        if prefix.startswith(family + ".") or prefix == family:
            return True
        if family.startswith("sockets.") and family.endswith(".rtt_s"):
            sock = family[len("sockets."):-len(".rtt_s")]
            if any(send.socket == sock and prefix.startswith(f"senders.{send.name}.rtt_s.") for send in scenario.sends):
                return True
    return False


def _unstamped_note(real_summaries: Sequence[Mapping[str, Any]], family: str) -> str:
    """Why the real side has no round trips or end-to-end times for ``family``, when its
    replies or results came without the stamp of the request that caused them."""
    sink = family[len("sockets."):].split(".rtt_s")[0].split(".e2e_s.")[0]
    counts = [int(((s.get("real") or {}).get("causal_unstamped") or {}).get(sink, 0)) for s in real_summaries]
    if not any(counts):
        return ""
    from .child import CAUSED_SIZE

    return (f"; {max(counts):,} replies or results reached {sink} in a run without the stamp of the message that caused "
            f"them (their frames are under {CAUSED_SIZE} bytes, too small to carry it)")


def account(vspec: ValidationSpec, scenario: Scenario, metrics: Sequence[MetricResult],
            sim_summaries: Sequence[Mapping[str, Any]], real_summaries: Sequence[Mapping[str, Any]],
            real_lookups: Sequence[Callable[[str], Any] | None]) -> list[NotCompared]:
    """Every metric the simulation reports for the design that no metric compared, and every
    metric the question depends on that was not compared, each with the reason.

    The question depends on the ``[validation.metrics]`` entries (or the defaults) and on the
    request paths the simulation shows (``request_paths``): a path no compared metric covers
    (a REQ sender's ``rtt_s``, ``rtt.<sender>`` or the socket's own ``rtt_s``/``e2e_s``), or
    covers only with a metric a side did not observe, is listed with ``question`` set,
    unless ``[validation.not_compared]`` says why the question does not depend on it."""
    derived = vspec.derived
    compared = [m for m in metrics if m.verdict in ("agrees", "differs")]
    exact: set[str] = set()
    prefixes: list[str] = []
    for m in compared:
        for path in _inputs(m.metric, derived):
            for prefix in _prefixes(path, scenario):
                if prefix.endswith("."):
                    prefixes.append(prefix)
                else:
                    exact.add(prefix)

    def is_compared(path: str) -> bool:
        return path in exact or any(path.startswith(prefix) for prefix in prefixes)

    def declared(path: str) -> str | None:
        for pattern, reason in vspec.not_compared.items():
            if matches_pattern(path, pattern):
                return reason
        return None

    found: list[NotCompared] = []
    folded: list[str] = []  # request paths listed as one entry, not statistic by statistic
    for family in request_paths(sim_summaries):
        covering = [m for m in metrics if any(_covers(path, family, scenario) for path in _inputs(m.metric, derived))]
        if any(m.verdict in ("agrees", "differs") for m in covering):
            continue
        folded.append(family)
        kind = "request -> reply times" if family.endswith(".rtt_s") else "end-to-end times"
        why = declared(f"{family}.p50")
        if why is not None:
            found.append(NotCompared(f"{family}.*", f"the scenario's question does not depend on them: {why}", False,
                                     ("", None, f"{family}.*")))
        elif covering:
            seen = "; ".join(f"{m.metric}: {m.detail or m.verdict}" for m in covering)
            found.append(NotCompared(f"{family}.*", f"{kind} of a request path, not observed ({seen})"
                                     f"{_unstamped_note(real_summaries, family)}", True, ("", None, f"{family}.*")))
        else:
            found.append(NotCompared(f"{family}.*", f"{kind} of a request path, and [validation.metrics] names no metric of "
                                     f"them (name {family}.p50 with a tolerance, or say why not in [validation.not_compared])",
                                     True, ("", None, f"{family}.*")))
    named = set()
    for m in metrics:
        named.add(m.metric)
        if m.verdict == "n/a" and not any(any(_covers(p, f, scenario) for p in _inputs(m.metric, derived)) for f in folded):
            note = _unstamped_note(real_summaries, m.metric) if ".rtt_s." in m.metric or ".e2e_s." in m.metric else ""
            found.append(NotCompared(m.metric, f"named in [validation.metrics] but {m.detail or 'not observed'}{note}", True,
                                     (m.metric.split(".")[0], None, m.metric.partition(".")[2])))
    usable = [lookup for lookup in real_lookups if lookup is not None]
    listed: dict[str, None] = {}
    for summary in sim_summaries:
        for parts in reported_metrics(summary):
            path = path_of(parts)
            if path in listed or path in named or is_compared(path) or any(path.startswith(f + ".") for f in folded):
                continue
            listed[path] = None
            why = declared(path)
            if why is not None:
                reason = f"the scenario's question does not depend on it: {why}"
            elif not usable:
                reason = "no successful real run"
            elif all(lookup(path) is None for lookup in usable):
                kind, _entity, field_name = parts
                name = field_name.strip(".").split(".")[0] or kind
                reason = _SIM_ONLY_REASONS.get(f"{name}@{kind}") or _SIM_ONLY_REASONS.get(name) or "not observed on the real side"
                if name in ("rtt_s", "e2e_s"):
                    reason += _unstamped_note(real_summaries, path)
            elif _not_comparable_link_counter(parts):
                reason = "not comparable: the real qdisc counts ACKs and headers that the model's count does not"
            elif vspec.defaulted:
                reason = "not in the default set (name it in [validation.metrics] with a tolerance to compare it)"
            else:
                reason = "no tolerance: [validation.metrics] does not name it"
            found.append(NotCompared(path, reason, False, parts))
    return found


def _not_comparable_link_counter(parts: tuple[str, str | None, str]) -> bool:
    """A link direction's counter that both sides have but count differently (``zsim.metrics.SUMMARY_LINK_FIELDS``
    are the comparable ones)."""
    return parts[0] == "network" and parts[2] not in SUMMARY_LINK_FIELDS


def group_not_compared(entries: Sequence[NotCompared]) -> list[tuple[str, list[str]]]:
    """(reason, compact names) per reason, in order: the statistics of one table in braces
    (``latency_s.{p95,p99}``, ``.*`` for all), and entities with the same fields in braces
    (``sockets.{w1,w2}.{dropped,discarded}``)."""
    by_reason: dict[str, list[NotCompared]] = {}
    for entry in entries:
        by_reason.setdefault(entry.reason, []).append(entry)
    return [(reason, compact_names(items)) for reason, items in by_reason.items()]


def compact_names(entries: Sequence[NotCompared]) -> list[str]:
    """Metric names in few words (``group_not_compared``)."""
    stat_names = set(_PERCENTILES)
    leaves: dict[tuple[str, str | None, str], list[str]] = {}
    for entry in entries:
        family, entity, field_name = entry.parts or (entry.metric, None, "")
        base, _, leaf = field_name.rpartition(".")
        if base and leaf not in stat_names:  # a dotted field that is no statistic: one leaf
            base, leaf = "", field_name
        leaves.setdefault((family, entity, base), []).append(leaf)
    by_shape: dict[tuple[str, str, tuple[str, ...]], list[str | None]] = {}
    for (family, entity, base), fields in leaves.items():
        by_shape.setdefault((family, base, tuple(fields)), []).append(entity)
    out = []
    for (family, base, shape), entities in by_shape.items():
        leaf = "*" if set(shape) == stat_names else _braces(shape)
        entity_text = _braces([e for e in entities if e is not None]) if any(e is not None for e in entities) else ""
        out.append(".".join(part for part in (family, entity_text, base, leaf) if part))
    return out


def _braces(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"


# --------------------------------------------------------------------------------------
# Statistics (Student's t from zsim.stats)


def interval(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """Mean and 95 % Student-t interval of the mean; (None, None, None) without values."""
    data = [v for v in values if v is not None and math.isfinite(v)]
    if not data:
        return None, None, None
    mean = float(np.mean(data))
    if len(data) < 2:
        return mean, mean, mean
    sd = float(np.std(data, ddof=1))
    half = t975(len(data) - 1) * sd / math.sqrt(len(data))
    return mean, mean - half, mean + half


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    a = np.sort(np.asarray(a, dtype=float))
    b = np.sort(np.asarray(b, dtype=float))
    if len(a) == 0 or len(b) == 0:
        return math.nan
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / len(a)
    cdf_b = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


@dataclass
class MetricResult:
    metric: str
    tolerance: Tolerance
    sim: list[float | None]
    real: list[float | None]
    verdict: str
    detail: str = ""
    note: dict[str, str] | None = None

    def stats(self, side: str) -> tuple[float | None, float | None, float | None]:
        return interval([v for v in (self.sim if side == "sim" else self.real) if v is not None])

    def to_json(self) -> dict[str, Any]:
        sim_mean, sim_lo, sim_hi = self.stats("sim")
        real_mean, real_lo, real_hi = self.stats("real")
        return {
            "metric": self.metric,
            "tolerance": self.tolerance.describe(),
            "sim": {"values": self.sim, "mean": sim_mean, "ci95": [sim_lo, sim_hi]},
            "real": {"values": self.real, "mean": real_mean, "ci95": [real_lo, real_hi]},
            "verdict": self.verdict,
            "detail": self.detail,
            "note": self.note,
        }


def judge(tol: Tolerance, sim: Sequence[float | None], real: Sequence[float | None],
          sim_samples: np.ndarray | None = None, real_samples: np.ndarray | None = None) -> tuple[str, str]:
    """(verdict, detail) for one metric."""
    if tol.kind == "ks":
        if sim_samples is None or real_samples is None or not len(sim_samples) or not len(real_samples):
            return "n/a", "no per-message samples on one side"
        distance = ks_distance(sim_samples, real_samples)
        return ("agrees" if distance <= tol.value else "differs"), f"D = {distance:.3f} (n = {len(sim_samples)}, {len(real_samples)})"
    s = [v for v in sim if v is not None]
    r = [v for v in real if v is not None]
    if not s or not r:
        return "n/a", "not observed on " + ("either side" if not s and not r else "the simulated side" if not s else "the real side")
    if tol.kind == "exact":
        values = set(s) | set(r)
        if len(values) == 1:
            return "agrees", ""
        return "differs", f"sim {sorted(set(s))}, real {sorted(set(r))}"
    if tol.kind == "range":
        low, high = min(s) - tol.abs, max(s) + tol.abs
        outside = [v for v in r if not low <= v <= high]
        if outside:
            return "differs", f"real {outside} outside sim range [{_num(low)}, {_num(high)}]"
        return "agrees", ""
    if tol.kind == "mode":
        sim_modes, real_modes = _modes(s), _modes(r)
        detail = (f"sim {_num(sim_modes[0])} in {sum(1 for v in s if v == sim_modes[0])} of {len(s)}, "
                  f"real {_num(real_modes[0])} in {sum(1 for v in r if v == real_modes[0])} of {len(r)}")
        close = any(abs(a - b) <= tol.value + 1e-12 for a in sim_modes for b in real_modes)
        return ("agrees" if close else "differs"), detail
    if tol.kind == "proportion":
        ps = sum(1 for v in s if v) / len(s)
        pr = sum(1 for v in r if v) / len(r)
        return ("agrees" if abs(ps - pr) <= tol.value + 1e-12 else "differs"), f"sim {ps:.2f}, real {pr:.2f}"
    mean_s, mean_r = float(np.mean(s)), float(np.mean(r))
    diff = abs(mean_s - mean_r)
    allowed = max(tol.rel * abs(mean_r), tol.abs)
    detail = f"|Δ| = {_num(diff)}" + (f" ({diff / abs(mean_r) * 100:.1f}%)" if mean_r else "") + f", allowed {_num(allowed)}"
    return ("agrees" if diff <= allowed + 1e-12 else "differs"), detail


def _modes(values: Sequence[float]) -> list[float]:
    """The most common values (several when tied), smallest first."""
    counts: dict[float, int] = {}
    for value in values:
        counts[float(value)] = counts.get(float(value), 0) + 1
    top = max(counts.values())
    return sorted(value for value, count in counts.items() if count == top)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e12:
        return str(int(value))
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.3f}"
    if magnitude >= 0.001:
        return f"{value:.4f}"
    return f"{value:.3g}"


# --------------------------------------------------------------------------------------
# The machine: load, and whether the real side kept its own schedule

#: A real run whose slowest paced workload achieved less than 1 - SCHEDULE_MARGIN of its
#: requested rate (or its lateness against its own schedule exceeded SCHEDULE_MARGIN of
#: the schedule) measured the machine, not ZeroMQ: the verdict says so.
SCHEDULE_MARGIN = 0.10


def machine_load() -> dict[str, Any]:
    """Load averages (1, 5, 15 min) and cores, as ``os.getloadavg`` and ``os.cpu_count`` give them."""
    import os

    try:
        load: list[float] | None = [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Linux
        load = None
    return {"load": load, "cores": os.cpu_count()}


def describe_load(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """``load 0.22 before, 2.63 after (1-min averages) on 2 cores``."""
    def one(entry: Mapping[str, Any] | None) -> str:
        load = (entry or {}).get("load")
        return "unknown" if not load else f"{load[0]:.2f}"

    cores = (before or after or {}).get("cores")
    return f"machine load {one(before)} before, {one(after)} after (1-min averages) on {cores} cores"


def schedule_check(real_summaries: Sequence[Mapping[str, Any]], seeds: Sequence[int],
                   margin: float = SCHEDULE_MARGIN) -> dict[str, Any]:
    """How far the real workloads fell behind their own schedules, per run and worst.

    ``missed`` is true when a paced workload (interval > 0) achieved less than
    ``1 - margin`` of its requested rate in some run; ``message`` then says what the
    numbers measure. Back-to-back workloads request no rate and are listed, not judged.
    """
    runs = []
    worst: tuple[float, str, int, float] | None = None
    for index, summary in enumerate(real_summaries):
        seed = summary.get("seed", seeds[index] if index < len(seeds) else index)
        schedule = (summary.get("real") or {}).get("schedule") or {}
        runs.append({"seed": seed, "senders": schedule})
        for name, entry in schedule.items():
            if not entry or entry.get("rate_fraction") is None:
                continue
            fraction = float(entry["rate_fraction"])
            if worst is None or fraction < worst[0]:
                worst = (fraction, name, seed, float(entry.get("behind_s") or 0.0))
    result: dict[str, Any] = {"margin": margin, "runs": runs, "worst_rate_fraction": None, "missed": False, "message": ""}
    if worst is not None:
        fraction, name, seed, behind = worst
        result["worst_rate_fraction"] = fraction
        result["worst"] = {"sender": name, "seed": seed, "behind_s": behind}
        if fraction < 1.0 - margin:
            result["missed"] = True
            result["message"] = (f"the real side sent {fraction * 100:.0f} % of the requested rate ({name}, seed {seed}: "
                                 f"{behind * 1000:.1f} ms behind its own schedule at its last send; margin {margin * 100:g} %): "
                                 "these numbers measure this machine, not ZeroMQ")
    return result


#: A back-to-back real sender more than 1 + SPEED_MARGIN times slower than its simulation,
#: on a machine that today runs its profile's dropped send more than 1 + SPEED_MARGIN times
#: slower than the profile records (``speed_check``), measured the machine's speed.
SPEED_MARGIN = 0.30


def speed_probe() -> float:
    """This machine's cost of a dropped PUB send now (seconds; the median of three short
    loops), measured exactly as the profile's ``send_drop_call_s``
    (``validation.calibrate.measure_send_dropped``). About a second."""
    from .calibrate import measure_send_dropped

    return float(measure_send_dropped(quick=True)["median_s"])


def in_run_probes(real_summaries: Sequence[Mapping[str, Any]]) -> list[float]:
    """The machine's dropped PUB send measured by the real runs' own processes just before
    each run (``child.Process.probe_speed``; ``real.speed_probe_drop_s`` per process)."""
    found: list[float] = []
    for summary in real_summaries:
        probes = (summary.get("real") or {}).get("speed_probe_drop_s") or {}
        found.extend(float(v) for v in probes.values() if v)
    return found


def speed_check(rates: Sequence[SenderRates], profile_drop_s: float | None,
                probe: Callable[[], float] = speed_probe, margin: float = SPEED_MARGIN,
                in_run: Sequence[float] = ()) -> dict[str, Any]:
    """Whether a back-to-back real sender was slower than its simulation because this
    machine runs slower today than on the day its profile was measured.

    A back-to-back sender's rate is the machine's speed: nothing else paces it. When some
    real one achieved less than ``1 / (1 + margin)`` of its simulated rate, the machine's
    speed is measured in the same run (``probe``: a dropped PUB send, the profile's
    ``send_drop_call_s``). ``slow`` is true when the machine is more than ``1 + margin``
    times slower than its profile *and* that accounts for the sender's slowdown (the sender
    is no more than ``1 + margin`` times slower again than the machine): then the scenario's
    timing says how fast this machine is today, not how ZeroMQ behaves. A sender slower than
    the machine explains stays a difference of the model. ``in_run``: the probes the real
    runs' processes made just before their runs, seconds from the blast (their median is
    the machine's speed; ``probe`` runs after the runs only when there are none).
    """
    result: dict[str, Any] = {"margin": margin, "slow": False, "message": "", "profile_drop_s": profile_drop_s}
    worst: tuple[float, str, float, float] | None = None
    for rate in rates:
        real, sim = rate.values("real"), rate.values("sim")
        if rate.requested is not None or not real or not sim:
            continue
        real_mean, sim_mean = float(np.mean(real)), float(np.mean(sim))
        if real_mean <= 0 or sim_mean <= 0:
            continue
        slowdown = sim_mean / real_mean
        if worst is None or slowdown > worst[0]:
            worst = (slowdown, rate.name, real_mean, sim_mean)
    if worst is None or worst[0] < 1.0 + margin or not profile_drop_s:
        return result
    today = float(np.median(in_run)) if in_run else probe()
    factor = today / profile_drop_s
    slowdown, name, real_mean, sim_mean = worst
    result.update({"sender": name, "sender_slowdown": slowdown, "probe_drop_s": today, "machine_factor": factor,
                   "probe": "in the real runs, just before each" if in_run else "after the real runs"})
    if factor >= 1.0 + margin and slowdown <= factor * (1.0 + margin):
        result["slow"] = True
        result["message"] = (f"this machine ran {factor:.1f}x slower than its profile today (a dropped PUB send took "
                             f"{today * 1e6:.2f} us against the profile's {profile_drop_s * 1e6:.2f} us) and the real "
                             f"back-to-back {name} achieved {real_mean:,.0f}/s against {sim_mean:,.0f}/s simulated "
                             f"({slowdown:.1f}x): these numbers measure this machine's speed, not ZeroMQ")
    return result


# --------------------------------------------------------------------------------------
# Offered load: each sender's requested rate against what it achieved on each side


@dataclass
class SenderRates:
    """One ``[[send]]``: the rate it was asked for and, per replication, the rate it achieved
    (``achieved_rate_per_s`` of the summaries: messages sent, not attempts, over the time
    from its start to its last send or the end of the run) in simulation and for real.

    A side whose slowest run achieved less than ``ACHIEVED_RATE_SHARE`` of the requested rate
    offered a different load downstream than the scenario asks: its downstream metrics are
    compared at that load, not at the requested one. Back-to-back senders request no rate
    (``requested`` None, shown as "max") and are never flagged.
    """

    name: str
    requested: float | None
    sim: list[float | None]
    real: list[float | None]
    #: attempts and attempts refused (again + unroutable) per run, aligned with sim/real
    sim_attempts: list[tuple[int, int] | None] = field(default_factory=list)
    real_attempts: list[tuple[int, int] | None] = field(default_factory=list)

    def values(self, side: str) -> list[float]:
        return [v for v in (self.sim if side == "sim" else self.real) if v is not None and math.isfinite(v)]

    def stats(self, side: str) -> tuple[float | None, float | None, float | None]:
        """Mean, min and max of the achieved rate over the side's runs."""
        data = self.values(side)
        if not data:
            return None, None, None
        return float(np.mean(data)), min(data), max(data)

    def lowest_share(self, side: str) -> float | None:
        """The slowest run's achieved rate as a share of the requested one."""
        data = self.values(side)
        if not self.requested or not data:
            return None
        return min(data) / self.requested

    def below(self, side: str) -> bool:
        share = self.lowest_share(side)
        return share is not None and share < ACHIEVED_RATE_SHARE

    def warning(self, side: str) -> str:
        """``real send[pub] achieved 6,130/s of 10,000/s asked (61 %): downstream metrics
        compare different offered loads``, or "" when the side kept the rate."""
        if not self.below(side) or self.requested is None:
            return ""
        rates = self.sim if side == "sim" else self.real
        attempts = self.sim_attempts if side == "sim" else self.real_attempts
        data = self.values(side)
        slowest = min(data)
        notes = [_percent(slowest / self.requested)]
        if len(data) > 1:
            notes.append(f"slowest of {len(data)} runs, mean {_rate(float(np.mean(data)))}/s")
        index = rates.index(slowest)
        counts = attempts[index] if index < len(attempts) else None
        if counts is not None and counts[1]:
            notes.append(f"{counts[1]:,} of {counts[0]:,} attempts refused (again/unroutable)")
        return (f"{side} {spec.workload_label('send', self.name)} achieved {_rate(slowest)}/s of {_rate(self.requested)}/s "
                f"asked ({'; '.join(notes)}): downstream metrics compare different offered loads")

    def warnings(self) -> list[str]:
        return [text for text in (self.warning("real"), self.warning("sim")) if text]

    def flag(self) -> str:
        """The table's last column: which side fell below the requested rate."""
        if self.requested is None:
            return "-"
        sides = [side for side in ("real", "sim") if self.below(side)]
        if sides:
            return f"{' and '.join(sides)} below {ACHIEVED_RATE_SHARE * 100:g} %"
        if not self.values("real") and not self.values("sim"):
            return "-"
        return "as asked"

    def cell(self, side: str) -> str:
        """``6,130 (6,100–6,160)``: mean and range over the runs; ``-`` without a value."""
        mean, low, high = self.stats(side)
        if mean is None or low is None or high is None:
            return "-"
        if _rate(low) == _rate(high):
            return _rate(mean)
        return f"{_rate(mean)} ({_rate(low)}–{_rate(high)})"

    def to_json(self) -> dict[str, Any]:
        def side(name: str) -> dict[str, Any]:
            mean, low, high = self.stats(name)
            share = self.lowest_share(name)
            return {"achieved_rate_per_s": list(self.sim if name == "sim" else self.real), "mean": mean, "min": low,
                    "max": high, "lowest_share": share, "below": self.below(name)}

        return {"requested_rate_per_s": self.requested, "back_to_back": self.requested is None,
                "real": side("real"), "sim": side("sim"), "below": self.below("real") or self.below("sim"),
                "warnings": self.warnings()}


def sender_rates(sim_summaries: Sequence[Mapping[str, Any]], real_summaries: Sequence[Mapping[str, Any]]) -> list[SenderRates]:
    """Per sender of the summaries (``summary["senders"]``, simulated and real, in the
    order they appear): requested rate and achieved rate per run on each side."""
    names: list[str] = []
    requested: dict[str, float | None] = {}
    for summary in (*sim_summaries, *real_summaries):
        for name, entry in (summary.get("senders") or {}).items():
            if name not in names:
                names.append(name)
            if name not in requested and isinstance(entry, Mapping) and "requested_rate_per_s" in entry:
                value = entry["requested_rate_per_s"]
                requested[name] = float(value) if value else None

    def per_run(summaries: Sequence[Mapping[str, Any]], name: str) -> tuple[list[float | None], list[tuple[int, int] | None]]:
        rates: list[float | None] = []
        attempts: list[tuple[int, int] | None] = []
        for summary in summaries:
            entry = (summary.get("senders") or {}).get(name)
            if not isinstance(entry, Mapping):
                rates.append(None)
                attempts.append(None)
                continue
            value = entry.get("achieved_rate_per_s")
            rates.append(float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
            refused = int(entry.get("again") or 0) + int(entry.get("unroutable") or 0)
            attempts.append((int(entry.get("attempts") or 0), refused))
        return rates, attempts

    result = []
    for name in names:
        sim, sim_attempts = per_run(sim_summaries, name)
        real, real_attempts = per_run(real_summaries, name)
        result.append(SenderRates(name, requested.get(name), sim, real, sim_attempts, real_attempts))
    return result


def _rate(value: float | None) -> str:
    """A rate per second as the tables show it: ``10,000``, ``613``, ``2.5``; None is "-"."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _percent(share: float) -> str:
    """``61 %``; a share just below the threshold is not rounded up onto it (``94.9 %``)."""
    text = f"{share * 100:.0f}"
    if share < ACHIEVED_RATE_SHARE and float(text) >= ACHIEVED_RATE_SHARE * 100:
        text = f"{math.floor(share * 1000) / 10:.1f}"
    return text + " %"


def format_senders(rates: Sequence[SenderRates]) -> list[str]:
    """The text table of requested against achieved rate per sender, then one line per
    side that fell below the requested rate."""
    if not rates:
        return []
    width = max(24, *(len(r.name) + 2 for r in rates))
    head = (f"{'sender':<{width}}{'asked /s':>10}  {'real achieved /s (min–max)':<30}{'sim achieved /s (min–max)':<30}"
            "offered load")
    lines = [head, "-" * len(head)]
    for r in rates:
        asked = "max" if r.requested is None else _rate(r.requested)
        lines.append(f"{r.name:<{width}}{asked:>10}  {r.cell('real'):<30}{r.cell('sim'):<30}{r.flag()}")
    lines.extend(f"  ! {text}" for r in rates for text in r.warnings())
    return lines


# --------------------------------------------------------------------------------------
# Running both sides


@dataclass
class ScenarioValidation:
    scenario: str
    source: str
    description: str
    replications: int
    seeds: list[int]
    metrics: list[MetricResult]
    sim_summaries: list[RunSummary]
    real_summaries: list[RunSummary]
    real_errors: list[str]
    sim_errors: list[str]
    wall_sim_s: float
    wall_real_s: float
    spec: ValidationSpec
    depth: dict[str, np.ndarray] = field(default_factory=dict)
    sim_samples: dict[str, list[np.ndarray]] = field(default_factory=dict)
    real_samples: dict[str, list[np.ndarray]] = field(default_factory=dict)
    #: ``machine_load()`` before the first and after the last run
    machine_before: dict[str, Any] = field(default_factory=dict)
    machine_after: dict[str, Any] = field(default_factory=dict)
    #: ``schedule_check()`` of the real runs
    schedule: dict[str, Any] = field(default_factory=dict)
    #: ``speed_check()`` of the back-to-back senders
    speed: dict[str, Any] = field(default_factory=dict)
    #: ``account()``: every reported metric not compared, and what the question depends on
    #: that was not compared, with the reasons
    not_compared: list[NotCompared] = field(default_factory=list)

    @property
    def question_not_compared(self) -> list[NotCompared]:
        """The metrics the scenario's question depends on that were not compared: while
        there is one, the verdict is not "agrees"."""
        return [entry for entry in self.not_compared if entry.question]

    @property
    def compared(self) -> list[MetricResult]:
        return [m for m in self.metrics if m.verdict in ("agrees", "differs")]

    @property
    def sender_rates(self) -> list[SenderRates]:
        """Requested against achieved rate per sender, real and simulated (``sender_rates``)."""
        return sender_rates(self.sim_summaries, self.real_summaries)

    @property
    def metrics_verdict(self) -> str:
        """The verdict of the metrics alone: ``error`` (a side had no successful run),
        ``differs`` (a compared metric differs), ``incomplete`` (what was compared agrees,
        but a metric the question depends on was not compared, or nothing was), else
        ``agrees``."""
        verdicts = [m.verdict for m in self.metrics]
        if any(v == "error" for v in verdicts) or not self.sim_summaries or not self.real_summaries:
            return "error"
        if any(v == "differs" for v in verdicts):
            return "differs"
        if self.question_not_compared or not self.compared:
            return "incomplete"
        return "agrees"

    @property
    def machine_bound(self) -> bool:
        """The real side missed its own schedule by more than the margin, or metrics differ
        where its back-to-back senders ran at the speed of a machine slower than its profile
        today (metrics that agree on a slow machine still agree: the speed did not matter)."""
        if self.schedule.get("missed"):
            return True
        return bool(self.speed.get("slow")) and self.metrics_verdict == "differs"

    @property
    def verdict(self) -> str:
        """``agrees``, ``differs``, ``incomplete``, ``error``, or ``machine-bound``: the real
        side could not keep the requested rate, so neither agreement nor difference says
        anything about the model (``verdict_reason`` says by how much)."""
        verdict = self.metrics_verdict
        if verdict in ("agrees", "differs", "incomplete") and self.machine_bound:
            return "machine-bound"
        return verdict

    @property
    def verdict_text(self) -> str:
        """The verdict in words: ``agrees``; ``incomplete: agrees on the 5 metrics compared;
        1 metric the question depends on was not compared: sockets.router.rtt_s.* (...)``;
        ``differs (1 unexplained difference)``, and what the question depends on that was
        not compared; ``machine-bound: <why>``."""
        verdict = self.verdict
        if verdict == "machine-bound":
            return f"machine-bound: {self.verdict_reason} (the metrics alone: {self.metrics_verdict})"
        missing = self.question_not_compared
        listed = "; ".join(f"{entry.metric} ({entry.reason})" for entry in missing)
        if verdict == "incomplete":
            count = len(self.compared)
            head = (f"agrees on the {count} metric{'s' if count != 1 else ''} compared" if count
                    else "nothing was compared")
            return (f"incomplete: {head}; {len(missing)} metric{'s' if len(missing) != 1 else ''} the question depends on "
                    f"{'were' if len(missing) != 1 else 'was'} not compared" + (f": {listed}" if missing else ""))
        text = verdict
        if verdict == "differs" and self.unexplained:
            text += f" ({len(self.unexplained)} unexplained difference(s))"
        if verdict == "differs" and missing:
            text += f"; the question also depends on {len(missing)} metric(s) not compared: {listed}"
        return text

    @property
    def verdict_reason(self) -> str:
        if self.schedule.get("missed"):
            return str(self.schedule.get("message", ""))
        return str(self.speed.get("message", "")) if self.speed.get("slow") else ""

    @property
    def unexplained(self) -> list[MetricResult]:
        if self.machine_bound:  # not a statement about the model
            return []
        return [m for m in self.metrics if m.verdict == "differs" and not m.note]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "source": self.source,
            "description": self.description,
            "replications": self.replications,
            "seeds": self.seeds,
            "verdict": self.verdict,
            "verdict_text": self.verdict_text,
            "verdict_reason": self.verdict_reason,
            "metrics_verdict": self.metrics_verdict,
            "question_not_compared": [entry.metric for entry in self.question_not_compared],
            "not_compared": [entry.to_json() for entry in self.not_compared],
            "machine": {"before": self.machine_before, "after": self.machine_after},
            "schedule": self.schedule,
            "speed": self.speed,
            "metrics": [m.to_json() for m in self.metrics],
            "senders": {r.name: r.to_json() for r in self.sender_rates},
            "real_errors": self.real_errors,
            "sim_errors": self.sim_errors,
            "wall_sim_s": self.wall_sim_s,
            "wall_real_s": self.wall_real_s,
            "claims": list(self.spec.claims),
            "real_runs": [_trim(s) for s in self.real_summaries],
            "sim_runs": [_trim(s) for s in self.sim_summaries],
        }


def _trim(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary without the bulky parts (pipes of big scenarios)."""
    out = dict(summary)
    if len(out.get("pipes", [])) > 40:
        out["pipes"] = out["pipes"][:40]
    return out


def validate(source: str | Path | Scenario, replications: int | None = None, seed: int = 0, timeout_s: float | None = None,
             progress: Callable[[str], Any] | None = None, trace_depth: bool = True) -> ScenarioValidation:
    """Run ``source`` N times simulated and N times real; compare every chosen metric."""
    from . import harness_program
    from .harness import RealRunError, check_deployment_size, run_real

    scenario = source if isinstance(source, Scenario) else spec.load(source)
    check_deployment_size(scenario)  # counted before any work
    vspec = parse_validation(scenario)
    if scenario.apps:  # refused before the simulated runs too: no app code runs here, simulated or real
        raise ScenarioError(f"app[{scenario.apps[0].name}].function",
                            "the real-pyzmq harness runs the scenario's [[send]]/[[recv]] workloads only, not SimPy app code "
                            "(simulation only; zsim validate runs no app code)")
    from .harness import check_calls

    check_calls(scenario)  # refused before the simulated runs too
    if scenario.hosts:  # what cannot be built is refused before anything runs
        from .harness import check_deployment

        check_deployment(scenario)
    n = replications if replications is not None else vspec.replications
    if n < 1:
        raise ScenarioError("--replications", f"must be >= 1, got {n}")
    if n > MAX_REPLICATIONS:  # each a real run of seconds, and a seed in a list
        raise ScenarioError("--replications", f"must be at most {MAX_REPLICATIONS:,} (validation.compare.MAX_REPLICATIONS)")
    timeout = timeout_s if timeout_s is not None else vspec.timeout_s
    seeds = [seed + i for i in range(n)]
    say = progress or (lambda _msg: None)

    sim_summaries: list[RunSummary] = []
    sim_lookups: list[Callable[[str], Any] | None] = []
    sim_samples: dict[str, list[np.ndarray]] = {}
    sim_errors: list[str] = []
    depth: dict[str, np.ndarray] = {}
    # the program the harness really runs: the scenario's, plus the harness's own loop
    simulated = harness_program.declare(scenario)
    machine_before = machine_load()
    started = _pc()
    for index, run_seed in enumerate(seeds):
        try:
            result, rtts = simulate(simulated, run_seed, trace=trace_depth and index == 0)
        except ScenarioError:
            raise
        except Exception as exc:  # noqa: BLE001 - a model fault is a result of the validation
            sim_errors.append(f"seed {run_seed}: {type(exc).__name__}: {exc}")
            sim_lookups.append(None)
            continue
        if index == 0:
            depth = dict(result.depth)
        extras, run_samples = sim_extras(result, scenario)
        for key, value in run_samples.items():
            sim_samples.setdefault(key, []).append(value)
        for name, rtt in rtts.items():
            sim_samples.setdefault(f"rtt.{name}", []).append(rtt)
        sim_summaries.append(result.summary)
        sim_lookups.append(_merged_lookup(result.summary, extras, vspec.derived))
    wall_sim = _pc() - started
    say(f"  simulated {len(sim_summaries)}/{n} in {wall_sim:.1f} s")

    real_summaries: list[RunSummary] = []
    real_lookups: list[Callable[[str], Any] | None] = []
    real_samples: dict[str, list[np.ndarray]] = {}
    real_errors: list[str] = []
    started = _pc()
    for run_seed in seeds:
        samples: dict[str, np.ndarray] = {}
        attempt_errors = []
        summary = None
        for _attempt in range(2):  # a free port taken in the meantime: try once more
            try:
                summary = run_real(scenario, run_seed, timeout_s=timeout, samples=samples)
                break
            except RealRunError as exc:
                attempt_errors.append(str(exc))
                if "Address already in use" not in str(exc):
                    break
        if summary is None:
            real_errors.append(f"seed {run_seed}: {attempt_errors[-1] if attempt_errors else 'failed'}")
            real_lookups.append(None)
            continue
        if summary.get("real", {}).get("errors"):
            real_errors.extend(f"seed {run_seed}: {e}" for e in summary["real"]["errors"])
        if summary.get("timed_out"):
            real_errors.append(f"seed {run_seed}: hit the time limit ({summary['real'].get('end_reason')})")
        for key, value in samples.items():
            real_samples.setdefault(key, []).append(value)
        real_summaries.append(summary)
        real_lookups.append(_merged_lookup(summary, real_extras(summary, scenario), vspec.derived))
        behind = schedule_check([summary], [run_seed])
        late = ""
        if behind["worst_rate_fraction"] is not None:
            late = (f", slowest paced sender at {behind['worst_rate_fraction'] * 100:.0f} % of its requested rate "
                    f"({behind['worst']['behind_s'] * 1000:.1f} ms behind schedule)")
        say(f"  real run seed {run_seed}: {summary['wall_s']:.1f} s{late}")
        if run_seed == seeds[0]:
            for note in summary.get("real", {}).get("notes", []):
                say(f"  note: {note}")
    wall_real = _pc() - started
    machine_after = machine_load()
    schedule = schedule_check(real_summaries, seeds)
    from zsim import profile as profile_module

    profile = profile_module.load(scenario.profile, scenario.base_dir)
    speed = speed_check(sender_rates(sim_summaries, real_summaries), profile.send_drop_call_s, in_run=in_run_probes(real_summaries))
    say(f"  {describe_load(machine_before, machine_after)}")
    if speed.get("slow"):
        say(f"  machine speed: {speed['message']}")

    chosen = dict(vspec.metrics)
    if vspec.defaulted:
        # the question of a design with request paths is their times too: the median of
        # each, as the simulation shows them, under the time tolerance
        for family in request_paths(sim_summaries):
            chosen.setdefault(f"{family}.p50", time_tolerance())
    metrics: list[MetricResult] = []
    for name, tol in chosen.items():
        kind = _sample_kind(name)
        if tol.kind == "ks" and kind is not None:
            s_samples = _pool(sim_samples, name)
            r_samples = _pool(real_samples, name)
            verdict, detail = judge(tol, [], [], s_samples, r_samples)
            sim_vals = [float(np.median(a)) if len(a) else None for a in sim_samples.get(name, [])]
            real_vals = [float(np.median(a)) if len(a) else None for a in real_samples.get(name, [])]
        else:
            sim_vals = [lk(name) if lk is not None else None for lk in sim_lookups]
            real_vals = [lk(name) if lk is not None else None for lk in real_lookups]
            if not any(lk is not None for lk in real_lookups) or not any(lk is not None for lk in sim_lookups):
                verdict, detail = "error", "no successful run on one side"
            else:
                verdict, detail = judge(tol, sim_vals, real_vals)
        note = vspec.known.get(name)
        metrics.append(MetricResult(name, tol, sim_vals, real_vals, verdict, detail, note))
    not_compared = account(vspec, scenario, metrics, sim_summaries, real_summaries, real_lookups)
    return ScenarioValidation(
        scenario=scenario.name,
        source=scenario.source,
        description=scenario.description,
        replications=n,
        seeds=seeds,
        metrics=metrics,
        sim_summaries=sim_summaries,
        real_summaries=real_summaries,
        real_errors=real_errors,
        sim_errors=sim_errors,
        wall_sim_s=wall_sim,
        wall_real_s=wall_real,
        spec=vspec,
        depth=depth,
        sim_samples=sim_samples,
        real_samples=real_samples,
        machine_before=machine_before,
        machine_after=machine_after,
        schedule=schedule,
        speed=speed,
        not_compared=not_compared,
    )


def simulate(scenario: Scenario, seed: int, trace: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    """``zsim.runner.run`` plus each sender's round-trip samples (which the summary only
    gives as percentiles)."""
    from zsim.build import build
    from zsim.results import summarise
    from zsim.runner import simulate as run_model

    started = _pc()
    model = build(scenario, seed, trace_depth=trace)
    run_model(model)
    result = summarise(model, _pc() - started)
    rtts = {s.name: np.frombuffer(s.rtt, dtype=np.float64).copy() for s in model.senders if len(s.rtt)}
    return result, rtts


def _pool(samples: Mapping[str, list[np.ndarray]], name: str, limit: int = 50_000) -> np.ndarray | None:
    arrays = samples.get(name)
    if not arrays:
        return None
    pooled = np.concatenate(arrays)
    if len(pooled) > limit:
        pooled = np.random.default_rng(0).choice(pooled, limit, replace=False)
    return pooled


# --------------------------------------------------------------------------------------
# Text output


def format_table(result: ScenarioValidation) -> str:
    lines = []
    lines.append(f"scenario {result.scenario} ({result.source}): {result.replications} replications each side, "
                 f"seeds {result.seeds[0]}..{result.seeds[-1]}; simulated in {result.wall_sim_s:.1f} s, real in {result.wall_real_s:.1f} s")
    head = f"{'metric':<40} {'sim mean [95% CI]':>30} {'real mean [95% CI]':>30}  {'tolerance':<16} verdict"
    lines.append(head)
    lines.append("-" * len(head))
    for m in result.metrics:
        lines.append(f"{m.metric[:40]:<40} {_fmt_ci(m.stats('sim')):>30} {_fmt_ci(m.stats('real')):>30}  "
                     f"{m.tolerance.describe():<16} {m.verdict}" + (f"  ({m.detail})" if m.verdict != "agrees" and m.detail else ""))
        if m.verdict in ("differs", "n/a") and m.note:
            lines.append(f"{'':<4}known: {m.note['reason']}")
            if m.note.get("model_lacks"):
                lines.append(f"{'':<4}model lacks: {m.note['model_lacks']}")
    if result.not_compared:
        lines.append("")
        lines.extend(format_not_compared(result.not_compared))
    senders = format_senders(result.sender_rates)
    if senders:
        lines.append("")
        lines.extend(senders)
        lines.append("")
    for error in result.real_errors + result.sim_errors:
        lines.append(f"  ! {error.strip().splitlines()[0] if error.strip() else error}")
    if result.machine_before or result.machine_after:
        lines.append(f"  {describe_load(result.machine_before, result.machine_after)}")
    if result.schedule.get("worst_rate_fraction") is not None:
        worst = result.schedule["worst"]
        lines.append(f"  real schedule: slowest paced sender {worst['sender']} (seed {worst['seed']}) reached "
                     f"{result.schedule['worst_rate_fraction'] * 100:.0f} % of its requested rate, "
                     f"{worst['behind_s'] * 1000:.1f} ms behind at its last send (margin {result.schedule['margin'] * 100:g} %)")
    lines.append(f"verdict: {result.verdict_text}")
    return "\n".join(lines)


def format_not_compared(entries: Sequence[NotCompared], width: int = 110) -> list[str]:
    """The text listing of what was not compared, by reason: first what the question
    depends on (marked ``!``), then every other metric zsim reports for the design."""
    question = [entry for entry in entries if entry.question]
    rest = [entry for entry in entries if not entry.question]
    lines = [f"not compared ({len(entries)} metric names; --json lists each with its reason):"]
    for mark, group in (("!", question), ("-", rest)):
        for reason, names in group_not_compared(group):
            lines.append(f"  {mark} {reason}:")
            line = "     "
            for index, name in enumerate(names):
                piece = name + (", " if index < len(names) - 1 else "")
                if len(line) + len(piece) > width and line.strip():
                    lines.append(line.rstrip())
                    line = "     "
                line += piece
            lines.append(line.rstrip())
    return lines


def _fmt_ci(stats: tuple[float | None, float | None, float | None]) -> str:
    mean, low, high = stats
    if mean is None:
        return "-"
    if low == high:
        return _num(mean)
    return f"{_num(mean)} [{_num(low)}, {_num(high)}]"
