"""The shape of a run's summary, typed: one definition that the simulator
(``zsim.results.summarise``) and the real-pyzmq harness (``validation.harness.merge_results``)
both fill, and that ``validation.compare`` reads its comparable fields from.

A summary is what ``zsim run --json`` prints, so it stays a plain dict (JSON, Spark rows,
``summary["sockets"]["sub"]["received"]`` in user code and studies): the types are
``TypedDict``s, which mypy checks at both fillers without changing one byte of the output.
A key both sides always fill is required; a key only one side has, or only some runs, is
``NotRequired``. A count the real harness cannot observe (who dropped a message inside
libzmq) is ``None`` there.

The few computations both sides made on their own are here too, so that a number means
the same in both: the latency percentiles and a sender's requested against achieved rate.
"""

# no ``from __future__ import annotations``: the TypedDicts' annotations are evaluated at
# class creation, so that ``__required_keys__`` sees ``NotRequired`` (``shape_problems``)
import math
import sys
from typing import Annotated, Any, TypedDict, get_args, get_origin, get_type_hints

import numpy as np

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - Python 3.10
    from typing_extensions import NotRequired


#: marks (``Annotated[...]``) of a field only one side fills: not comparable between them
SIM_ONLY = "filled by the simulator only"
REAL_ONLY = "filled by the real harness only (the simulator's come from its message table)"


class Percentiles(TypedDict):
    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    p99_9: float | None
    max: float | None


#: the percentiles reported, as fractions divided as ``np.percentile`` divides them (99.9 / 100
#: is not the double nearest 0.999)
_QUANTILES = tuple(q / 100 for q in (50, 95, 99, 99.9))


def percentiles(values: np.ndarray) -> Percentiles:
    """The statistics of a latency (or round-trip) sample; all None but the count when
    it is empty."""
    return percentiles_many([values])[0]


def percentiles_many(samples: list[np.ndarray]) -> list[Percentiles]:
    """``percentiles`` of each sample.

    The p-values are ``np.percentile(values, [50, 95, 99, 99.9])`` (its default linear
    method) bit for bit, and the mean is ``values.mean()``; ``tests/results/test_summary.py``
    compares them on samples of every size from 1 to 300 and on ties. They are computed
    here with one ``np.partition`` for all samples of one size, as rows of one array, and
    the interpolation in Python floats (the same IEEE operations as numpy's): a summary
    asks for them once or twice per socket, and at 1,000 subscribers ``np.percentile``'s
    own overhead (~60 us a call) was most of the summary's cost.
    """
    found: list[Percentiles] = [{"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "p99_9": None,
                                 "max": None} for _ in samples]
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(samples):
        if len(values):
            by_size.setdefault(len(values), []).append(i)
    for n, rows in by_size.items():
        # numpy's linear method: the virtual index (n - 1) * q between its floor and the
        # next index, or the last value when it is at or beyond the end
        last = n - 1
        virtual = [last * q for q in _QUANTILES]
        below = [math.floor(v) if v < last else last for v in virtual]
        kth = sorted({0, last, *below, *(min(i + 1, last) for i in below)})
        column = {k: j for j, k in enumerate(kth)}
        block = np.stack([samples[i] for i in rows])
        picked = np.partition(block, kth, axis=1)[:, kth].tolist()
        means = block.mean(axis=1).tolist()  # a row's mean is the vector's, bit for bit
        for i, at, mean in zip(rows, picked, means, strict=True):
            p = []
            for v, k in zip(virtual, below, strict=True):
                if k == last:
                    p.append(at[column[last]])
                    continue
                a, b = at[column[k]], at[column[k + 1]]
                t = v - k
                # numpy's _lerp: from below under a half, from above at a half or more
                p.append(b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t)
            found[i] = {"count": n, "mean": mean, "p50": p[0], "p95": p[1], "p99": p[2], "p99_9": p[3],
                        "max": at[column[last]]}
    return found


class SocketSummary(TypedDict):
    type: str
    process: str
    sent: int
    send_again: int
    send_unroutable: int
    received: int
    recv_again: int
    dropped: int | None  # copies this socket dropped as a sender (None: real, not observable)
    discarded: int | None
    lost_on_close: int | None
    blocked_s: float
    blocked_count: int
    latency_s: NotRequired[Percentiles]  # of the copies delivered to it, when any were
    # request -> reply of the requests it sent (replies delivered to it); source socket ->
    # times from a message sent there to what it caused arriving here (zsim.results.causal_times;
    # the harness from the stamps replies and results carry, validation.harness.causal_times)
    rtt_s: NotRequired[Percentiles]
    e2e_s: NotRequired[dict[str, Percentiles]]
    # of a socket whose messages start chains (requests, tasks): how many were still on
    # their way when the run ended ({"in_flight": n}), outside rtt_s and e2e_s
    chains_at_end: NotRequired[Annotated[dict[str, int], SIM_ONLY]]
    # steady state after the warm-up, the warm-up found, the fates of copies meant for it
    steady_latency_s: NotRequired[Annotated[Percentiles, SIM_ONLY]]
    settling: NotRequired[Annotated[dict[str, Any], SIM_ONLY]]
    inbound: NotRequired[Annotated[dict[str, Any], SIM_ONLY]]
    first_recv_s: NotRequired[Annotated[float | None, REAL_ONLY]]
    last_recv_s: NotRequired[Annotated[float | None, REAL_ONLY]]
    first_sent_s: NotRequired[Annotated[float | None, REAL_ONLY]]
    opened: NotRequired[Annotated[bool, REAL_ONLY]]


class SenderRates(TypedDict):
    requested_rate_per_s: float | None  # None: back to back, as fast as it can
    achieved_rate_per_s: float | None
    active_s: float | None


def sender_rates(sent: int, mean_interval_s: float, start_s: float, end_s: float | None) -> SenderRates:
    """Requested against achieved rate of a ``[[send]]`` that sent ``sent`` messages,
    active from ``start_s`` (``Scenario.starts_at``) to ``end_s`` (when it finished, or
    when its counters were taken; None: unknown)."""
    active = max(0.0, end_s - start_s) if end_s is not None else None
    return {
        "requested_rate_per_s": (1.0 / mean_interval_s) if mean_interval_s > 0 else None,
        "achieved_rate_per_s": (sent / active) if active else None,
        "active_s": active,
    }


class SenderSummary(SenderRates):
    socket: str
    attempts: int
    sent: int
    again: int
    unroutable: int
    blocked_s: NotRequired[Annotated[float, SIM_ONLY]]
    finished_at_s: NotRequired[float]
    rtt_s: NotRequired[Percentiles]
    #: a REQ's: recv calls for its replies that RCVTIMEO ended (zmq.Again)
    reply_timeouts: NotRequired[int]


class ReceiverSummary(TypedDict):
    socket: str
    received: int
    paused_s: float
    #: a receiver with ``pause_every_s``: how many pauses it took, and [start, end] of the
    #: first ``zsim.model.workload.MAX_PAUSE_RECORDS`` of them (an end may lie past the run's)
    pause_count: NotRequired[Annotated[int, SIM_ONLY]]
    pauses: NotRequired[Annotated[list[list[float]], SIM_ONLY]]


class ProxySummary(TypedDict):
    frontend: str
    backend: str
    forwarded: int
    #: zmq_proxy returned -1 because a send in it failed: "EAGAIN" (SNDTIMEO), "EHOSTUNREACH"
    failed: NotRequired[str]
    failed_at_s: NotRequired[float | None]


class ProcessSummary(TypedDict):
    exit_started_s: float | None
    exit_completed_s: float | None
    term_blocked: bool
    crashed_s: float | None
    cpu_s: float | None  # None: the simulator without [machine] cores
    io_cpu_s: float | None


class LedgerSummary(TypedDict):
    """Every copy's fate (``zsim.model.fates.STATES``), by rule; the real harness sees the
    sent and delivered ones only."""
    sent: int
    copies: int | None
    delivered: int
    forwarded: int
    dropped: int | None
    discarded: int | None
    lost_on_close: int | None
    queued_at_end: int | None
    dropped_by_rule: dict[str, int] | None
    discarded_by_rule: dict[str, int] | None
    lost_by_rule: dict[str, int] | None
    queued_by_place: dict[str, int] | None


class RunSummary(TypedDict):
    ok: bool
    scenario: str
    scenario_digest: str
    source: str
    seed: int
    profile: str | None  # None: a real run
    sim_time_s: float
    wall_s: float
    ledger: LedgerSummary
    latency_s: Percentiles
    sockets: dict[str, SocketSummary]
    pipes: list[dict[str, Any]]  # the simulator's only (empty from the harness)
    links: list[dict[str, Any]]
    senders: dict[str, SenderSummary]
    receivers: dict[str, ReceiverSummary]
    proxies: dict[str, ProxySummary]
    processes: dict[str, ProcessSummary]
    versions: dict[str, str]
    mode: NotRequired[str]  # "real" from the harness
    templates: NotRequired[dict[str, Any]]
    machine: NotRequired[dict[str, Any]]
    #: with [[host]]s: per host, its processes and cores and (with cores) its machine's report
    hosts: NotRequired[dict[str, dict[str, Any]]]
    #: with [[link]]s: per link, per direction ("a->b"), its rate and latency, bytes and packets carried,
    #: utilisation, the largest queue, drops (queue overflow, random loss), retransmissions and goodput
    #: (``zsim.model.transport.network.Direction.report``)
    network: NotRequired[dict[str, dict[str, dict[str, Any]]]]
    #: with [[fault]]s: per fault, its kind, links, count, time down, intervals and recovery
    #: (``zsim.model.transport.network.Network.report_faults``)
    faults: NotRequired[dict[str, dict[str, Any]]]
    warnings: NotRequired[list[dict[str, Any]]]
    #: the model's random streams: how many were made and how many gave a value, and whether
    #: the run's result is therefore the same under every seed (nothing drawn, no app code,
    #: which could draw from elsewhere); ``zsim.build.Streams``
    randomness: NotRequired[dict[str, Any]]
    real: NotRequired[dict[str, Any]]  # how the harness behaved (lateness, indices, errors)
    timed_out: NotRequired[bool]  # the real run hit its time limit


#: the entity tables of a summary, by key, and the type of one entry
ENTITIES: dict[str, type] = {"sockets": SocketSummary, "senders": SenderSummary, "receivers": ReceiverSummary,
                             "proxies": ProxySummary, "processes": ProcessSummary}


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """A field's type without ``NotRequired``/``Annotated``, and its ``Annotated`` marks."""
    marks: tuple[Any, ...] = ()
    while get_origin(hint) in (NotRequired, Annotated):
        if get_origin(hint) is Annotated:
            marks += tuple(hint.__metadata__)
        hint = get_args(hint)[0]
    return hint, marks


def scalar_fields(entry_type: type, both_sides: bool = False) -> tuple[str, ...]:
    """The fields of an entity that hold one number (or flag), in declaration order; a
    ``Percentiles`` field gives ``<field>.<statistic>``. ``both_sides``: only those the
    simulator and the real harness both fill."""
    fields: list[str] = []
    for name, hint in get_type_hints(entry_type, include_extras=True).items():
        hint, marks = _unwrap(hint)
        if both_sides and (SIM_ONLY in marks or REAL_ONLY in marks):
            continue
        if get_origin(hint) is dict:  # a table by name (e2e_s by source): no field of its own
            continue
        kinds = get_args(hint) or (hint,)
        if Percentiles in kinds:
            fields.extend(f"{name}.{stat}" for stat in Percentiles.__annotations__)
        elif all(kind in (int, float, bool, type(None)) for kind in kinds):
            fields.append(name)
    return tuple(fields)


def shape_problems(value: Any, typed: Any = RunSummary, path: str = "summary") -> list[str]:
    """How ``value`` departs from the summary's type: a required key missing, a key the
    type does not know, an entry of the wrong kind (checked down through the typed
    entities; numbers are not checked one by one). Empty when it conforms."""
    typed = _unwrap(typed)[0]
    if not (isinstance(typed, type) and issubclass(typed, dict) and hasattr(typed, "__required_keys__")):
        origin, args = get_origin(typed), get_args(typed)
        if origin is dict and not isinstance(value, dict):
            return [f"{path}: a {type(value).__name__}, not a table"]
        if origin is dict and len(args) == 2:
            return [problem for key, item in value.items() for problem in shape_problems(item, args[1], f"{path}.{key}")]
        return []
    if not isinstance(value, dict):
        return [f"{path}: a {type(value).__name__}, not a table"]
    hints = get_type_hints(typed, include_extras=True)
    problems = [f"{path}.{key}: missing" for key in sorted(typed.__required_keys__ - value.keys())]
    problems += [f"{path}.{key}: not a field of {typed.__name__}" for key in value if key not in hints]
    for key, item in value.items():
        if key in hints and item is not None:
            problems += shape_problems(item, hints[key], f"{path}.{key}")
    return problems
