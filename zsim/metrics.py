"""The names of a run's metrics: one grammar, and the row of numbers it names.

Every tool that reads a run's numbers (``RunResult.flat()``, a sweep's rows and report,
``zsim compare``, ``zsim search``, ``zsim explain``, the run page, ``zsim validate``) names
them here, so a metric added once is known to all of them: its name, how a name parses,
its unit and how to show it, which direction is better, and what a fraction is a share
of (the trials a zero-event bound counts).

Flat names (a sweep's row; ``flat_metrics``):

=====================================================  ====================================
``sent``, ``pooled_loss_fraction``, ... (``POOLED``)    every copy of the run together
``socket.<socket>.<field>``                             ``PER_SOCKET``
``sender.<sender>.<field>``                             ``SENDER_FIELDS`` (a ``[[send]]``)
``pipe.<pipe>.<field>``                                 ``PIPE_FIELDS`` (pipe names hold
                                                        ``->``, spaces and brackets)
``link.<writer>-><reader>.<field>``                     ``LINK_LEVELS``, and over a
                                                        ``[[link]]`` ``CONNECTION_FIELDS``
``network.<link>.<a>-><b>.<field>``                     ``NETWORK_FIELDS``
``rtt.<socket>.<field>``, ``e2e.<a>-><b>.<field>``      ``CAUSAL_FIELDS``
``thread.<thread>.<field>``, ``machine.<field>``        ``THREAD_FIELDS``, ``MACHINE_FIELDS``
``warning.<code>``                                      ``WARNING_CODES``
=====================================================  ====================================

and, over a template's members (``zsim.templates``), ``socket.<template>.<stat>_<field>``,
``sender.<template>.<stat>_<field>`` (``MEMBER_STATS``: sum, min, mean, max) with
``.members``, and ``rtt.<template>.<stat>_<field>``, ``e2e.<A>-><B>.<stat>_<field>``.
The statistic comes first so that a name still ends with its field's unit. ``parse``
takes a name apart; ``known_metrics`` lists the names a scenario's runs can have.

The summary paths of ``zsim validate`` (``sockets.<socket>.<field>``,
``senders.<sender>.<field>``, ``network.<link>.<a>-><b>.<field>``, ...) are the JSON
summary's own keys (``zsim.summary``): ``summary_paths``.

Units come from a name's end: ``_fraction`` a share (0..1), ``_per_s`` a rate, ``_s`` a
time in seconds, ``_bytes`` bytes, anything else a count (``kind``, ``human_value``); a
name's words for people are ``label``'s. Which direction is better comes from its last
name part by the first matching rule of ``PREFERENCES`` (``preference``).

A fraction of events (``loss_fraction``, ``refused_fraction``) is a share of trials the
row also carries (copies, send attempts: ``SHARES``): where no run saw the event, its
95 % bound is the zero-event bound over those trials (``zsim.stats.zero_upper``).

Derived metrics (``[report.derived]``, ``--derive``, a search's ``[derived]``) are
evaluated on each run's row on its own, by one rule (``derive``): a name the row does not
have, or has no number for (NaN: the latency of a socket that got nothing), has no value;
arithmetic on no value, and a division by zero, give no value; ``max()``, ``min()`` and
``sum()`` take the values there are (``zsim.expressions``). No value is NaN in the row. A
run's derived number never depends on which other runs, points or designs share its table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ScenarioError
from .ledger import DELIVERED
from .model.occupancy import FIELDS as OCCUPANCY_FIELDS
from .summary import ENTITIES, LedgerSummary, Percentiles, scalar_fields
from .units import human_bytes, human_time, time_unit

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

# --------------------------------------------------------------------------------------
# The fields of each family

#: Pooled metrics (every copy and delivery of the run counted together) and the older
#: names that still give the same numbers (existing studies and tests use them).
POOLED_ALIASES: dict[str, str] = {
    "drop_fraction": "pooled_drop_fraction",
    "loss_fraction": "pooled_loss_fraction",
    "delivered_rate_per_s": "pooled_delivered_rate_per_s",
    "max_pipe_depth": "pooled_max_pipe_depth",
    **{f"latency_{key}_s": f"pooled_latency_{key}_s" for key in ("mean", "p50", "p95", "p99", "p99_9", "max")},
}
#: Warning codes of ``zsim.checks`` counted in every row (``warning.<code>``), so every
#: row has the same columns whichever warnings its run raised.
WARNING_CODES = ("no_subscription", "subscription_matches_nothing", "starts_after_horizon", "overloaded", "backlog_at_end",
                 "latency_not_settled", "loss_not_settled", "rate_not_achieved", "cpu_contention", "link_saturated",
                 "window_limited", "sndbuf_limited", "incompatible_peer", "link_oversubscribed")
#: run warnings about one socket (``path`` = ``socket[<name>]``), flagged 0/1 per socket
SOCKET_FLAGS = ("backlog_at_end", "latency_not_settled", "loss_not_settled")
#: the per-socket 0/1 flags of the warnings that question a socket's numbers
QUESTIONING_FLAGS = ("overloaded", *SOCKET_FLAGS)
#: Per receiving socket (``socket.<name>.<field>``): from its ``inbound`` table.
INBOUND_FIELDS = ("copies", "delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end", "loss_fraction")
#: Per receiving socket: its own latency percentiles (NaN when nothing was delivered to it).
SOCKET_LATENCY = ("mean", "p50", "p95", "p99", "p99_9", "max")
#: Per socket, always: its own counters (``dropped_sending``: copies it dropped as a
#: sender; ``send_again``: send calls that failed with EAGAIN, zmq.Again under DONTWAIT or
#: SNDTIMEO; ``send_unroutable``: EHOSTUNREACH, a ROUTER_MANDATORY without the peer;
#: ``send_attempts``: send calls that returned; ``send_refused_fraction``: send_again of them).
SOCKET_FIELDS = ("sent", "send_again", "received", "blocked_s", "dropped_sending", "send_unroutable", "send_attempts",
                 "send_refused_fraction")
#: Per receiving socket with a ``[[recv]]`` in the scenario (``flat_metrics(..., scenario=)``).
LOAD_FIELDS = ("offered_utilisation", "overloaded", "backlog_at_end", "latency_not_settled", "loss_not_settled")
#: Per receiving socket, with the run's message table (``flat_metrics(..., result=)``).
TIME_FIELDS = ("first_recv_s", "last_recv_s")
PIPE_FIELDS = ("dropped", "max_depth", "mean_depth", "p50_depth", "p99_depth", "max_bytes", "mean_bytes")
#: Per direction of a tcp/ipc link (``link.<writer>-><reader>.<field>``): the most and the
#: time average of what its kernel buffers and engines held (``zsim.model.occupancy``).
LINK_LEVELS = tuple(f"{stat}_{place}" for stat in ("max", "mean") for place in OCCUPANCY_FIELDS)
#: Per direction of a [[link]] (``network.<link>.<a>-><b>.<field>``; ``zsim.model.transport.network.Direction.report``),
#: and what its writers offered it (``zsim.results.offer_to_links``): ``offered_bps``, the
#: bits per second the writers of the connections crossing it handed their sockets for it
#: (ZMTP frames, dropped copies included), and ``offered_utilisation``, that over the
#: link's ``bandwidth_bps`` (above 1: more than it carries; ``link_oversubscribed``)
NETWORK_FIELDS = ("bytes", "packets", "utilisation", "active_utilisation", "max_queue_bytes", "queue_drops", "local_drops", "loss_drops",
                  "retransmits", "goodput_bps", "offered_bps", "offered_utilisation")
#: Per [[link]] direction too when the scenario has [[fault]]s: how long it was down, the
#: frames lost on its wire meanwhile and to loss faults, the ACKs lost on their way back,
#: and the retransmission timeouts of the connections sending this way.
NETWORK_FAULT_FIELDS = ("down_s", "outage_drops", "fault_loss_drops", "acks_lost", "timeouts")
#: Per ``[[fault]]`` (``fault.<name>.<field>``): how many times it happened, for how long in
#: all, how long after it ended the first frame crossed one of its links again (the mean over
#: its intervals, and the longest), how long after it began something broke a connection over
#: its links (ZMTP heartbeats, TCP keepalive, tcp_retries2: time to detect), and how many.
FAULT_FIELDS = ("count", "down_s", "recovery_s", "longest_recovery_s", "detect_s", "disconnects")
#: Per direction of a tcp connection crossing a [[link]] (``link.<writer>-><reader>.<field>``;
#: the ``connections`` of ``Direction.report``).
CONNECTION_FIELDS = ("sending_s", "window_limited_s", "sndbuf_limited_s", "bytes", "throughput_bps", "rtt_s", "max_rtt_s",
                     "max_cwnd_bytes", "max_sndbuf_bytes")
#: Per thread, with [machine] cores (``thread.<name>.<field>``).
THREAD_FIELDS = ("cpu_s", "waited_s")
#: With [machine] cores (``machine.<field>``): the cores, and all threads' CPU work.
MACHINE_FIELDS = ("cores", "cpu_s")
#: Per ``[[send]]`` (``sender.<name>.<field>``): ``attempts`` (send calls it began),
#: ``again`` (refused with zmq.Again: DONTWAIT or SNDTIMEO and no pipe had room),
#: ``unroutable`` (EHOSTUNREACH, counted apart), ``refused_fraction`` (again / attempts).
SENDER_FIELDS = ("sent", "again", "requested_rate_per_s", "achieved_rate_per_s", "blocked_s", "finished_at_s", "attempts",
                 "unroutable", "refused_fraction")
#: Every ``socket.<name>.<field>`` a row can have.
PER_SOCKET = (*SOCKET_FIELDS, *INBOUND_FIELDS, *(f"latency_{p}_s" for p in SOCKET_LATENCY),
              *(f"steady_latency_{p}_s" for p in SOCKET_LATENCY), "warmup_end_s", *LOAD_FIELDS, *TIME_FIELDS)
#: Over the members of a template: ``socket.<template>.<stat>_<field>`` (``zsim.templates``).
#: The statistic comes first so that the name still ends with the field's unit (``_s``,
#: ``_fraction``, ``_per_s``), from which reports choose units; no per-entity field starts so.
MEMBER_STATS = ("sum", "min", "mean", "max")
#: the fields of ``rtt.<socket>.*`` and ``e2e.<source>-><sink>.*`` (``zsim.results.causal_times``)
CAUSAL_FIELDS = ("count", *(f"{p}_s" for p in SOCKET_LATENCY))
#: Per-socket counts that a member nothing was meant for has none of in its row: 0, exactly.
_ZERO_WHEN_ABSENT = frozenset(INBOUND_FIELDS) - {"loss_fraction"}
#: The pooled names every row has (no entity): totals, pooled figures and their aliases,
#: the run's length and cost, whether it drew random values, its warnings.
POOLED = ("sent", "copies", "delivered", "forwarded", "dropped", "discarded", "lost_on_close", "queued_at_end",
          "pooled_drop_fraction", "pooled_loss_fraction", "sim_time_s", "wall_s",
          *(f"pooled_latency_{key}_s" for key in SOCKET_LATENCY), "pooled_delivered_rate_per_s", "pooled_max_pipe_depth",
          *POOLED_ALIASES, "warnings", "seed_independent", "random_streams_drawn")


@dataclass(frozen=True)
class Family:
    """The names ``<prefix>.<entity>.<field>`` of one kind of entity."""

    prefix: str
    #: what names the entity (for messages and docs)
    entity: str
    fields: tuple[str, ...]
    #: its templates have ``<stat>_<field>`` aggregates over their members (and ``members``
    #: for socket and sender templates)
    aggregates: bool = False
    #: the entity's name is ``<a>-><b>`` (a direction, a pipe, a source -> sink)
    directed: bool = False
    #: made by the model (pipes, links, threads): matched, not listed, before a run
    internal: bool = False


FAMILIES: dict[str, Family] = {family.prefix: family for family in (
    Family("socket", "socket", PER_SOCKET, aggregates=True),
    Family("sender", "[[send]]", SENDER_FIELDS, aggregates=True),
    Family("pipe", "pipe", PIPE_FIELDS, directed=True, internal=True),
    Family("link", "connection direction", (*LINK_LEVELS, *CONNECTION_FIELDS), directed=True, internal=True),
    Family("network", "[[link]] direction", (*NETWORK_FIELDS, *NETWORK_FAULT_FIELDS), directed=True, internal=True),
    Family("fault", "[[fault]]", FAULT_FIELDS),
    Family("rtt", "socket that sends requests", CAUSAL_FIELDS, aggregates=True),
    Family("e2e", "source -> sink", CAUSAL_FIELDS, aggregates=True, directed=True),
    Family("thread", "thread", THREAD_FIELDS, internal=True),
)}
#: name sections without an entity: ``warning.<code>``, ``machine.<field>``
SECTIONS = ("warning", "machine")
#: every first name part a dotted metric can have
PREFIXES = (*FAMILIES, *SECTIONS)
#: the families of the run's own entities (sockets, senders), before the internals
#: (pipes, links, network links) when metrics are ranked
ENTITY_PREFIXES = tuple(f"{prefix}." for prefix in ("socket", "sender", "pipe", "link", "network"))
INTERNAL_PREFIXES = tuple(f"{family.prefix}." for family in FAMILIES.values() if family.internal and family.prefix != "thread")


@dataclass(frozen=True)
class Name:
    """A metric name taken apart (``parse``): ``socket.w_in.max_loss_fraction`` is kind
    ``socket``, entity ``w_in``, field ``loss_fraction``, stat ``max``."""

    kind: str  # a family's prefix, "warning", "machine" or "pooled"
    entity: str | None
    field: str
    stat: str | None = None  # over a template's members: sum, min, mean, max

    @property
    def key(self) -> str:
        """The last name part as written (``max_loss_fraction``)."""
        return f"{self.stat}_{self.field}" if self.stat else self.field

    def __str__(self) -> str:
        if self.kind == "pooled":
            return self.field
        if self.entity is None:
            return f"{self.kind}.{self.field}"
        return f"{self.kind}.{self.entity}.{self.key}"


def parse(name: str) -> Name | None:
    """``name`` taken apart by the grammar, or None when it is no built-in metric's name
    (a derived metric's, a typo). Only the shape is checked: whether the entity exists is
    ``known_metrics``'s question."""
    if name in POOLED:
        return Name("pooled", None, name)
    kind, dot, rest = name.partition(".")
    if not dot or not rest:
        return None
    if kind == "warning":
        return Name("warning", None, rest) if "." not in rest else None
    if kind == "machine":
        return Name("machine", None, rest) if rest in MACHINE_FIELDS else None
    family = FAMILIES.get(kind)
    if family is None:
        return None
    entity, dot, key = rest.rpartition(".")
    if not dot or not entity:
        return None
    if family.directed and "->" not in entity:
        return None
    if key in family.fields:
        return Name(kind, entity, key)
    if family.aggregates:
        if key == "members" and kind in ("socket", "sender"):
            return Name(kind, entity, key)
        stat, _, field = key.partition("_")
        if stat in MEMBER_STATS and field in family.fields:
            return Name(kind, entity, field, stat)
    return None


def name(kind: str, entity: str, field: str, stat: str | None = None) -> str:
    """The metric name of ``field`` of ``entity`` (``name("socket", "w_in", "loss_fraction", "max")``)."""
    return str(Name(kind, entity, field, stat))


# --------------------------------------------------------------------------------------
# Units and how to show them


#: Names whose values are stored as floats whatever Python type a run produced (0 against
#: 0.0 must not change a Parquet column's type between a sweep's files)
FLOAT_SUFFIXES = ("_s", "_fraction", "_per_s", "_utilisation")


def kind(metric: str) -> str:
    """``fraction``, ``time`` (seconds), ``rate`` (per second), ``bytes`` or ``count``,
    from the name's end."""
    if metric.endswith("_fraction"):
        return "fraction"
    if metric.endswith("_per_s"):
        return "rate"
    if metric.endswith("_s"):
        return "time"
    if metric.endswith("_bytes"):
        return "bytes"
    return "count"


def display_unit(metric: str, values: Iterable[float] = ()) -> tuple[float, str | None]:
    """(scale, unit) of a metric in figures: times in us/ms/s by their size, rates in
    msg/s, fractions as they are."""
    found = kind(metric)
    if found == "time":
        return time_unit(values)
    if found == "rate":
        return 1.0, "msg/s"
    if found == "bytes":
        return 1.0, "bytes"
    if metric.endswith(("_depth", "max_pipe_depth", "_messages")):
        return 1.0, "messages"
    return 1.0, None


def human_value(metric: str, value: Any) -> str:
    """A metric's value for a table: ``0.123 %``, ``1.2 ms``, ``10,000 msg/s``, ``1,234``."""
    if value is None or value != value:
        return "-"
    found = kind(metric)
    number = float(value)
    if found == "fraction":
        return f"{number:.3%}" if number < 0.1 else f"{number:.1%}"
    if found == "time":
        return human_time(number)
    if found == "rate":
        return f"{number:,.0f}/s" if abs(number) >= 100 else f"{number:.3g}/s"
    if found == "bytes":
        return human_bytes(number)
    if abs(number) >= 1000:
        return f"{number:,.0f}"
    return f"{number:.4g}"


#: What a metric's last name part means (labels of figures and tables).
FIELD_LABELS = {
    "drop_fraction": "drop fraction",
    "loss_fraction": "loss fraction",
    "delivered_rate_per_s": "delivered rate",
    "max_pipe_depth": "max queue depth",
    "copies": "copies meant for it",
    "delivered": "delivered",
    "forwarded": "forwarded",
    "dropped": "dropped",
    "dropped_sending": "dropped when sending",
    "discarded": "discarded",
    "lost_on_close": "lost on close",
    "queued_at_end": "queued at the end",
    "offered_utilisation": "offered utilisation",
    "overloaded": "overloaded (share of runs)",
    "backlog_at_end": "backlog at the end (share of runs)",
    "first_recv_s": "first delivery",
    "last_recv_s": "last delivery",
    "sent": "sent",
    "send_again": "send Again",
    "again": "send Again",
    "attempts": "send attempts",
    "send_attempts": "send attempts",
    "refused_fraction": "refused send fraction (zmq.Again)",
    "send_refused_fraction": "refused send fraction (zmq.Again)",
    "unroutable": "unroutable sends (EHOSTUNREACH)",
    "send_unroutable": "unroutable sends (EHOSTUNREACH)",
    "received": "received",
    "blocked_s": "time blocked in send",
    "requested_rate_per_s": "requested rate",
    "achieved_rate_per_s": "achieved rate",
    "finished_at_s": "finished at",
    "max_depth": "max depth",
    "sim_time_s": "simulated time",
    "wall_s": "wall time per run",
}
_LATENCY_NAMES = {"mean": "mean", "p50": "p50", "p95": "p95", "p99": "p99", "p99_9": "p99.9", "max": "max"}
_OVER_MEMBERS = {"sum": "summed", "min": "least", "mean": "mean", "max": "largest"}
#: per-socket counts of the copies meant for the socket (``dropped (copies for sub)``)
_COPIES_FOR = ("dropped", "delivered", "queued_at_end", "lost_on_close", "discarded")


def field_label(field: str) -> str:
    if field.startswith("latency_") and field.endswith("_s"):
        key = field[len("latency_"):-len("_s")]
        if key in _LATENCY_NAMES:
            return f"{_LATENCY_NAMES[key]} latency"
    return FIELD_LABELS.get(field, field.replace("_", " "))


def label(metric: str, unit: str | None = None) -> str:
    """A metric's name for people: ``p99 latency of fast1``, ``loss fraction (pooled)``,
    ``copies dropped at pipe pub->sub``; with ``unit`` (``ms``, ``msg/s``) it is added in
    brackets. A name outside the grammar (a derived metric's) is itself."""
    pooled = POOLED_ALIASES.get(metric, metric)
    parsed = parse(metric)
    if pooled.startswith("pooled_"):
        text = f"{field_label(pooled[len('pooled_'):])} (pooled)"
    elif parsed is not None and parsed.kind in ("socket", "sender") and parsed.entity is not None:
        steady = re.fullmatch(r"steady_latency_(\w+?)_s", parsed.key)
        if steady:
            text = f"steady-state {steady.group(1).replace('_', '.')} latency of {parsed.entity} (after MSER-5's warm-up)"
        elif parsed.kind == "socket" and parsed.key == "copies":
            text = f"copies meant for {parsed.entity}"
        elif parsed.kind == "socket" and parsed.key in _COPIES_FOR:
            text = f"{field_label(parsed.key)} (copies for {parsed.entity})"
        else:
            text = f"{field_label(parsed.key)} of {parsed.entity}"
    elif parsed is not None and parsed.kind in ("pipe", "link") and parsed.entity is not None:
        what = {"dropped": "copies dropped at"}.get(parsed.key, f"{parsed.key.replace('_', ' ')} of")
        text = f"{what} {parsed.kind} {parsed.entity}"
    elif parsed is not None and parsed.kind == "network" and parsed.entity is not None:
        link, _, direction = parsed.entity.partition(".")
        text = f"{parsed.key.replace('_', ' ')} of link {link} {direction}"
    elif "." not in metric and metric in FIELD_LABELS:
        text = field_label(metric)
    elif parsed is not None and parsed.kind in ("rtt", "e2e") and parsed.entity is not None:
        stat = "count" if parsed.field == "count" else parsed.field.removesuffix("_s").replace("_", ".")
        entity = parsed.entity
        what = f"request -> reply at {entity}" if parsed.kind == "rtt" else f"end to end {entity.replace('->', ' -> ')}"
        text = f"{what} ({'requests answered' if parsed.kind == 'rtt' else 'messages'})" if stat == "count" else f"{stat} {what}"
        if parsed.stat:  # over a socket template's members (_causal_aggregates)
            text = f"{_OVER_MEMBERS[parsed.stat]} over the members: {text}"
    else:
        text = metric
    return f"{text} ({unit})" if unit else text


def bounds(metric: str) -> tuple[float, float] | None:
    """The range a metric's per-run value lies in by its definition: (0, 1) for a fraction
    of the grammar (a loss, drop or refused fraction, a template's least, mean or largest of
    them; not their sum over members), and for a derived name that says it is a loss or drop
    fraction; None for the rest (counts, times, depths have no upper bound)."""
    parsed = parse(metric)
    if parsed is not None:
        return (0.0, 1.0) if kind(parsed.field) == "fraction" and parsed.stat != "sum" else None
    return (0.0, 1.0) if metric.endswith(("loss_fraction", "drop_fraction")) else None


# --------------------------------------------------------------------------------------
# Which direction is better


@dataclass(frozen=True)
class Preference:
    """The rule a metric's direction comes from: the pattern found in its last name part
    (a derived metric's whole name), the direction it prefers, and its family."""

    pattern: str
    prefers: str | None  # "lower", "higher", None: no preferred direction
    family: str
    #: counts events whose absence in every run needs a bound (a loss, a refused send):
    #: "none in N runs" is shown with the zero-event bound, never as an interval of zero width
    events: bool = False


#: The direction each metric family prefers, decided from the metric's name: the first
#: rule whose pattern is found in the metric's last name part (``socket.slow.dropped`` ->
#: ``dropped``; a derived metric's whole name) decides. ``warnings``, ``warning.<code>``,
#: ``rtt.*`` and ``e2e.*`` are decided before the table (``preference``).
PREFERENCES: tuple[Preference, ...] = (
    # what the designer sets or the run's length decides, not a quality
    Preference(r"requested_rate|offered_utilisation|^offered_bps$|^copies$|^sent$|attempts$|first_recv|last_recv|finished_at|warmup_end|sim_time"
               r"|^wall_s$|^seed_independent$|^random_streams_drawn$|^sending_s$|cwnd|max_sndbuf|^down_s$|^count$",
               None, "load, inputs and times of events"),
    Preference(r"drop|loss|lost|discard|unroutable", "lower", "losses and drops", events=True),
    # a send refused with zmq.Again never entered a pipe: the design lost it as surely as a drop
    Preference(r"again|refused", "lower", "refused sends", events=True),
    Preference(r"depth|queued|backlog|_messages$|_bytes$", "lower", "queue depth and backlog"),  # before latency: p99_depth is a depth
    Preference(r"latency|rtt|(^|_)p\d|_wait", "lower", "latency"),
    Preference(r"blocked|window_limited|sndbuf_limited", "lower", "blocked time, a window or send buffer holding TCP back"),
    Preference(r"timeouts|recovery|detect|disconnects", "lower", "retransmission timeouts, a fault's time to recover and to detect, "
               "and the connections it broke"),
    Preference(r"warning|overloaded|not_settled|starts_after|no_subscription|matches_nothing|rate_not_achieved", "lower",
               "warnings"),
    Preference(r"deliver|received|forwarded|achieved|throughput|goodput|_rate_per_s$", "higher", "delivered and throughput"),
)
#: the families whose metrics count events (``Preference.events``)
EVENT_FAMILIES = frozenset(rule.family for rule in PREFERENCES if rule.events)


def preference(metric: str, overrides: Mapping[str, str | None] | None = None) -> tuple[str | None, str]:
    """(the direction ``metric`` prefers: ``lower``, ``higher`` or None; its family)."""
    if overrides and metric in overrides:
        return overrides[metric], "--prefer"
    if metric == "warnings" or metric.startswith("warning."):  # a run that warned less is better, whatever the code
        return "lower", "warnings"
    if metric.startswith(("rtt.", "e2e.")):  # request -> reply, source -> sink: times, and how many
        counted = metric.endswith((".count", "_count"))  # how many (over a template: sum_count, max_count, ...)
        return (None, "load, inputs and times of events") if counted else ("lower", "latency")
    entity_metric = metric.startswith(("socket.", "sender.", "pipe.", "link.", "network.", "warning.", "fault."))
    field_name = metric.rsplit(".", 1)[-1] if entity_metric else metric
    if metric.startswith("network.") and field_name == "offered_utilisation":
        # a link's capacity is the design's (link.<name>.bandwidth_bps) and its load the
        # writers': of two designs under one load, the one whose links are offered less of
        # what they carry has the headroom (a receiver's offered utilisation stays the load)
        return "lower", "a link's load against its capacity"
    for rule in PREFERENCES:
        if re.search(rule.pattern, field_name):
            return rule.prefers, rule.family
    return None, "no preferred direction"


# --------------------------------------------------------------------------------------
# What a fraction is a share of


@dataclass(frozen=True)
class Share:
    """A fraction of events and the trials it is a share of, with the words a zero-event
    bound is told in (``zsim.sweep.report``)."""

    trials: str  # the field of the trials in the same entity ("copies", "attempts")
    noun: str  # the trials, plural ("copies", "send attempts")
    none: str  # "no run <none> at X": "lost any", "refused any send"
    one_by_one: str  # the bound "assumes they are <one_by_one> one by one"
    bursts: str  # "<bursts> come in bursts"
    some: str  # "a run <some> in up to N % of runs"


_LOSS = Share("copies", "copies", "lost any", "lost", "losses", "loses some")
_REFUSAL = Share("attempts", "attempts", "refused any send", "refused", "refusals", "refuses some")
#: fraction field -> what it is a share of
SHARES: dict[str, Share] = {
    "loss_fraction": _LOSS,
    "drop_fraction": _LOSS,
    "refused_fraction": _REFUSAL,
    "send_refused_fraction": Share("send_attempts", "send attempts", "refused any send", "refused", "refusals", "refuses some"),
}
#: the fields of trials a derived ``a / b`` may divide by for its zero-event bound
TRIAL_FIELDS = ("copies", "min_copies", "attempts", "min_attempts", "send_attempts", "min_send_attempts")


def share(metric: str, columns: Iterable[str], derived: Mapping[str, str] | None = None) -> tuple[str | None, Share]:
    """What a fraction metric is a share of: the column of its trials when a row has it
    (None otherwise), and the words for it. ``socket.<name>.copies`` for a socket's loss
    fraction (over a template's ``max_``/``mean_``/``min_`` fraction the members' fewest,
    ``socket.<template>.min_copies``), ``sender.<name>.attempts`` for a sender's refused
    fraction, ``copies`` for the pooled fractions, ``b`` for a derived ``a / b`` whose ``b``
    is such a column; a fraction of anything else is told in the words of a loss."""
    present = set(columns)
    parsed = parse(metric)
    if parsed is not None and parsed.entity is not None and parsed.field in SHARES and parsed.kind in ("socket", "sender"):
        found = SHARES[parsed.field]
        fewest = name(parsed.kind, parsed.entity, found.trials, "min")
        if parsed.stat is not None and fewest in present:
            return fewest, found
        own = name(parsed.kind, parsed.entity, found.trials)
        return (own if own in present else None), found
    if metric in ("pooled_loss_fraction", "pooled_drop_fraction", "loss_fraction", "drop_fraction"):
        return ("copies" if "copies" in present else None), _LOSS
    if derived and metric in derived:  # "a / b": b, when it is a column of trials
        from . import expressions

        parts = derived[metric].split("/")
        names = expressions.names(parts[-1]) if len(parts) == 2 else []
        if len(names) == 1 and names[0] in present:
            field = names[0].rsplit(".", 1)[-1]
            if field in TRIAL_FIELDS:
                return names[0], _REFUSAL if "attempts" in field else _LOSS
    return None, _LOSS


# --------------------------------------------------------------------------------------
# Derived metrics

#: A derived metric's name: a plain name (it becomes a column; expressions can name it).
DERIVED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,99}$")


def check_derived(derived: Any, known: set[str] | None, where: str = "report.derived") -> dict[str, list[str]]:
    """``[report.derived]`` (``where``): name = "expression" over row metrics (``zsim.expressions``).

    Each name must be new (not a metric of the rows), each expression must parse and read
    only metrics of the rows or other derived names, without a cycle. Returns each derived
    name's dependencies in an order that computes every name after those it reads."""
    from . import expressions
    from .fields import short

    if not isinstance(derived, Mapping):
        raise ScenarioError(where, 'must be a table of name = "expression"')
    reads: dict[str, list[str]] = {}
    for derived_name, text in derived.items():
        path = f"{where}.{derived_name}"
        if not DERIVED_NAME.match(derived_name):
            raise ScenarioError(path, "a derived metric's name is letters, digits, '_' and '.' (starting with a letter or '_')")
        if known is not None and derived_name in known:
            raise ScenarioError(path, "is already a metric of the rows; choose another name")
        if not isinstance(text, str):
            raise ScenarioError(path, f"must be an expression string, got {short(text)}")
        try:
            reads[derived_name] = expressions.names(text)
        except ValueError as exc:
            raise ScenarioError(path, str(exc)) from None
        for used in reads[derived_name]:
            if used in derived:
                continue
            if known is not None and used not in known:
                import difflib

                close = difflib.get_close_matches(used, sorted(known), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ScenarioError(path, f"reads unknown metric {used!r}{hint}; names with characters other than letters, "
                                          "digits, '_' and '.' go between backquotes: `pipe.a->b (tcp send).dropped`")
    order: dict[str, list[str]] = {}
    visiting: list[str] = []

    def visit(derived_name: str) -> None:
        if derived_name in order:
            return
        if derived_name in visiting:
            raise ScenarioError(f"{where}.{derived_name}",
                                "depends on itself: " + " -> ".join(visiting[visiting.index(derived_name):] + [derived_name]))
        visiting.append(derived_name)
        for used in reads[derived_name]:
            if used in reads:
                visit(used)
        visiting.pop()
        order[derived_name] = reads[derived_name]

    for derived_name in reads:
        visit(derived_name)
    return order


def number(value: Any) -> float | None:
    """A row's value as a number: None for no value (absent, NaN, not a number); a
    boolean is 0 or 1."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        found = float(value)
        return found if found == found else None
    return None


def derive(row: Mapping[str, Any], derived: Mapping[str, str], order: Iterable[str] | None = None) -> dict[str, float]:
    """The derived metrics of one run's ``row``, by the one rule of this module's
    docstring: a name the row lacks or has no number for has no value; arithmetic on it
    and a division by zero give none; ``max``/``min``/``sum`` take the values there are.
    No value is NaN. ``derived`` must have been checked (``check_derived``, whose order
    ``order`` is: each name after those it reads)."""
    from . import expressions

    found: dict[str, float] = {}

    def lookup(key: str) -> float | None:
        return found[key] if key in found else number(row.get(key))

    for derived_name in check_derived(derived, None) if order is None else order:
        value = expressions.parse(derived[derived_name]).evaluate(lookup)
        found[derived_name] = math.nan if value is None else float(value)
    return found


def add_derived(rows: Iterable[dict[str, Any]], derived: Mapping[str, str]) -> None:
    """Every derived metric added to each finished run's row (``ok``), in place (``derive``)."""
    if not derived:
        return
    order = list(check_derived(derived, None))
    for row in rows:
        if row.get("ok", True):
            row.update(derive(row, derived, order))


def add_derived_frame(frame: pd.DataFrame, derived: Mapping[str, str]) -> None:
    """``derive`` on every row of a sweep's frame: one new column per derived name (each
    after the names it reads), in place."""
    if not derived:
        return
    order = list(check_derived(derived, None))
    reads = {used for text in derived.values() for used in _names(text)}
    present = sorted(column for column in reads if column in frame.columns)
    records = frame[present].to_dict("records") if len(frame) else []
    values = [derive(record, derived, order) for record in records]
    for derived_name in order:
        frame[derived_name] = np.asarray([v[derived_name] for v in values], dtype=float) if values else np.array([], dtype=float)


def _names(text: str) -> list[str]:
    from . import expressions

    return expressions.names(text)


def add_aliases(frame: pd.DataFrame) -> None:
    """Rows written before the pooled names existed get them (and the reverse), in place."""
    for alias, pooled in POOLED_ALIASES.items():
        if pooled not in frame.columns and alias in frame.columns:
            frame[pooled] = frame[alias]
        elif alias not in frame.columns and pooled in frame.columns:
            frame[alias] = frame[pooled]


# --------------------------------------------------------------------------------------
# The names a scenario's runs can have


class MetricNames(set):  # type: ignore[type-arg]
    """The metric names a scenario's rows can have: a set of names, plus the names the
    model makes, which are matched: every ``pipe.<a>-><b>...<field>`` and
    ``link.<a>-><b>.<field>`` between two of the scenario's sockets, a template member's
    names at any count, ``rtt.``/``e2e.`` names of its sockets and templates, and
    ``thread.<name>.<field>``."""

    def __init__(self, names: Iterable[str], sockets: Iterable[str] = (),
                 members: Iterable[tuple[str, re.Pattern[str], tuple[str, ...]]] = (), socket_templates: Iterable[str] = (),
                 network: bool = False) -> None:
        super().__init__(names)
        self.sockets = sorted(set(sockets), key=len, reverse=True)
        #: (prefix, member name pattern, fields): a member of a template, whatever the count
        #: of a point (``socket.w12_in.delivered`` exists where an axis makes 16 workers)
        self.members = list(members)
        #: socket templates' names (``rtt.<template>.max_p99_s``)
        self.socket_templates = set(socket_templates)
        #: the scenario has [[link]]s: its tcp connections have TCP's fields (``link.<a>-><b>.rtt_s``)
        self.link_fields = frozenset((*LINK_LEVELS, *(CONNECTION_FIELDS if network else ())))

    def _socket(self, entity: str) -> bool:
        """A socket of the scenario, or a member of a socket template at any count."""
        return entity in self.sockets or any(prefix == "socket." and pattern.fullmatch(entity) for prefix, pattern, _ in self.members)

    def _between_sockets(self, entity: str, endpoints: bool = False) -> bool:
        """``<a>-><b>`` or ``<a>-><b> (<kind>)`` between two of the scenario's sockets; with
        ``endpoints``, one end may be an endpoint no socket took (``push->tcp://5605 (send)``:
        the pipes of a connect that found no peer)."""
        for first in self.sockets:
            if entity.startswith(first + "->"):
                rest = entity[len(first) + 2:]
                return (any(rest == other or rest.startswith(other + " (") for other in self.sockets)
                        or (endpoints and "://" in rest.split(" (", 1)[0]))
        if endpoints and "://" in entity.split("->", 1)[0]:
            rest = entity.split("->", 1)[1] if "->" in entity else ""
            return any(rest == other or rest.startswith(other + " (") for other in self.sockets)
        return False

    def _causal(self, parsed: Name) -> bool:
        """``rtt.<socket>.<field>``, ``e2e.<source>-><sink>.<field>``, and their aggregates
        over socket templates (``rtt.<template>.<stat>_<field>``, ``e2e.<A>-><B>.<stat>_<field>``)."""
        assert parsed.entity is not None
        ends = [parsed.entity] if parsed.kind == "rtt" else parsed.entity.split("->")
        if len(ends) != (1 if parsed.kind == "rtt" else 2) or not all(ends):
            return False
        if parsed.stat is None:
            return all(self._socket(end) for end in ends)
        return any(end in self.socket_templates for end in ends) and all(end in self.socket_templates or self._socket(end)
                                                                         for end in ends)

    def __contains__(self, metric: object) -> bool:
        if super().__contains__(metric):
            return True
        if not isinstance(metric, str):
            return False
        for prefix, pattern, known in self.members:
            if metric.startswith(prefix):
                entity, _, key = metric[len(prefix):].rpartition(".")
                if key in known and pattern.fullmatch(entity):
                    return True
        parsed = parse(metric)
        if parsed is None or parsed.entity is None:
            return False
        if parsed.kind in ("rtt", "e2e"):
            return self._causal(parsed)
        if parsed.kind == "thread":
            return True  # the model names its threads (io.<process>, send.<name>, proxy0, ...)
        if parsed.kind == "link":
            return parsed.field in self.link_fields and parsed.entity.count("->") == 1 and self._between_sockets(parsed.entity)
        if parsed.kind == "pipe":
            return self._between_sockets(parsed.entity, endpoints=True)
        return False


def known_metrics(base: Mapping[str, Any]) -> MetricNames | None:
    """The metric names a run of the scenario ``base`` (a raw scenario table) can have
    (``flat_metrics``), or None when they cannot be told (then metric names are not
    checked). For a template (``zsim.templates``): the members' metrics, for any count,
    and the aggregates over them (``socket.w_in.sum_delivered``, ``socket.w_in.members``)."""
    import copy

    from . import spec as scenario_spec
    from . import templates

    sockets = base.get("socket", [])
    if not isinstance(sockets, list):
        return None
    names = [str(s["name"]) for s in sockets if isinstance(s, Mapping) and isinstance(s.get("name"), str)]
    found: tuple[templates.Template, ...] = ()
    try:
        scenario = scenario_spec.from_dict(copy.deepcopy(dict(base)))
        names = [sock.name for sock in scenario.sockets]
        senders = [send.name for send in scenario.sends]
        found = scenario.templates
        links = list(scenario.links)
        faults = list(scenario.faults)
    except Exception:  # noqa: BLE001 - an invalid base is reported by expand; name senders as zsim would
        senders = [f"send.{s.get('socket')}" for s in base.get("send", []) if isinstance(s, Mapping)]
        links = []
        faults = []
    listed = [*POOLED, *POOLED_ALIASES.values(), *(f"warning.{code}" for code in WARNING_CODES),
              *(f"machine.{field}" for field in MACHINE_FIELDS)]
    listed += [f"socket.{n}.{f}" for n in names for f in PER_SOCKET]
    listed += [f"sender.{n}.{f}" for n in senders for f in SENDER_FIELDS]
    listed += [f"network.{link.name}.{a}->{b}.{f}" for link in links for a, b in (link.hosts, link.hosts[::-1])
               for f in (*NETWORK_FIELDS, *(NETWORK_FAULT_FIELDS if faults else ()))]
    listed += [f"fault.{fault.name}.{f}" for fault in faults for f in FAULT_FIELDS]
    members: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = []
    for template in found:
        if template.kind not in ("socket", "send"):
            continue
        prefix, fields = ("socket.", PER_SOCKET) if template.kind == "socket" else ("sender.", SENDER_FIELDS)
        listed.append(f"{prefix}{template.name}.members")
        listed += [f"{prefix}{template.name}.{stat}_{f}" for f in fields for stat in MEMBER_STATS]
        pattern = templates.member_pattern(template.pattern)
        if pattern is not None:
            members.append((prefix, pattern, tuple(fields)))
    return MetricNames(listed, names, members, [t.name for t in found if t.kind == "socket"], network=bool(links))


def unknown_metric(metric: str, known: set[str]) -> str:
    """The reason ``metric`` is no metric of ``known`` (a ``known_metrics``), with the
    closest name and the grammar of the names."""
    import difflib

    close = difflib.get_close_matches(metric, sorted(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    main = ", ".join(m for m in sorted(known) if "." not in m)
    return (f"unknown metric {metric!r}{hint}; metrics: {main}, socket.<name>.<field>, sender.<name>.<field>, "
            f"pipe.<pipe name>.<{'|'.join(PIPE_FIELDS)}>, "
            "link.<a>-><b>.<max|mean>_<place>_<messages|bytes>, "
            "link.<a>-><b>.<tcp field> (over a [[link]]), "
            "rtt.<socket>.<field>, e2e.<source>-><sink>.<field>, "
            "warning.<code>, socket.<template>.<sum|min|mean|max>_<field>, a name of [report.derived]")


# --------------------------------------------------------------------------------------
# The summary paths of zsim validate


#: what both sides count per link direction (the real side from its qdisc,
#: ``validation.harness.link_counters``): payload bytes and packets dropped at the full
#: queue (the real packet count holds ACKs, the model's does not, so packets are not compared)
SUMMARY_LINK_FIELDS = ("bytes", "queue_drops")
#: the per-socket summary values both sides measure beyond the summary's own fields
#: (``validation.compare.sim_extras``/``real_extras``)
SUMMARY_SOCKET_EXTRAS = ("first_recv_s", "last_recv_s", "first_sent_s", "first_index", "last_index")
#: per entity table of a summary (``sockets``, ``senders``, ...), the paths of its entries
#: both sides fill, read from its type (``zsim.summary``, which the simulator and the
#: harness both fill), and the extras both sides add
SUMMARY_FIELDS: dict[str, tuple[str, ...]] = {
    table: scalar_fields(entry, both_sides=True) + (SUMMARY_SOCKET_EXTRAS if table == "sockets" else ())
    for table, entry in ENTITIES.items()}
#: the ledger's counts (``ledger.<field>``)
SUMMARY_LEDGER = scalar_fields(LedgerSummary)


def summary_paths(scenario: Any) -> list[str]:
    """Every summary path (``sockets.<socket>.<field>``, ``senders.<sender>.<field>``,
    ``ledger.<field>``, ``network.<link>.<a>-><b>.<field>``, ``latency_s.<stat>``, ...) both
    the simulator and the real harness fill for ``scenario``: what ``zsim validate`` can
    compare (without the open-ended ``ledger.<rule table>.<rule>``)."""
    entities = {
        "sockets": [s.name for s in scenario.sockets],
        "senders": [s.name for s in scenario.sends],
        "receivers": [r.name for r in scenario.recvs],
        "proxies": [p.name for p in scenario.proxies],
        "processes": [p.name for p in scenario.processes],
    }
    paths = ["sim_time_s", "wall_s", *(f"ledger.{k}" for k in SUMMARY_LEDGER), *(f"latency_s.{p}" for p in Percentiles.__annotations__)]
    for table, names in entities.items():
        paths.extend(f"{table}.{entity}.{field}" for entity in names for field in SUMMARY_FIELDS[table])
    for link in scenario.links:
        for a, b in (link.hosts, tuple(reversed(link.hosts))):
            paths.extend(f"network.{link.name}.{a}->{b}.{field}" for field in SUMMARY_LINK_FIELDS)
    return paths


# --------------------------------------------------------------------------------------
# The row: a run's built-in metrics, flat


def template_members(scenario: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """``summary["templates"]``: per kind (process, socket, send, recv), per template name,
    its name pattern, count, the block whose count made it, and its members in order."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for template in scenario.templates:
        found.setdefault(template.kind, {})[template.name] = {
            "pattern": template.pattern, "count": template.count, "root": template.root, "members": list(template.members)}
    return found


def _number(value: Any) -> float:
    return float(value) if value is not None else math.nan


def _fraction(part: int, whole: int) -> float:
    """``part / whole``; NaN for no trials (a sender that never called send has no share)."""
    return part / whole if whole else math.nan


def flat_metrics(summary: Mapping[str, Any], result: Any = None, scenario: Any = None) -> dict[str, Any]:
    """One flat row of a run's numbers (for sweeps and comparisons).

    Pooled figures (every copy of the run together): ``sent``, ``copies``, ``delivered``,
    ... and ``pooled_drop_fraction``, ``pooled_loss_fraction`` (dropped, discarded, lost on
    close and queued at the end, over copies), ``pooled_latency_<p>_s``,
    ``pooled_delivered_rate_per_s``, ``pooled_max_pipe_depth``; the older names without
    ``pooled_`` (``drop_fraction``, ``latency_p99_s``, ...) are aliases with the same values.

    Per entity (names as in the scenario; pipe names contain ``->``, spaces, brackets):

    - ``socket.<name>.{sent,send_again,received,blocked_s,dropped_sending,send_unroutable,
      send_attempts,send_refused_fraction}`` for every socket (``send_attempts``: send calls
      that returned, sent or refused; ``send_refused_fraction``: of them the share refused
      with zmq.Again, NaN without any);
    - for a socket copies were meant for (it has an ``inbound`` table):
      ``socket.<name>.{copies,delivered,forwarded,dropped,discarded,lost_on_close,queued_at_end,loss_fraction}``
      (``dropped``: copies meant for it that were dropped, wherever; ``loss_fraction``
      counts copies still queued at the end as lost) and ``latency_{mean,p50,p95,p99,p99_9,max}_s``
      (NaN when nothing was delivered to it); for a socket nothing was meant for,
      ``socket.<name>.dropped`` is the copies it dropped as a sender (``dropped_sending``);
    - with ``scenario``: ``socket.<name>.offered_utilisation`` (copies offered per second x
      mean service time / share of time not paused) and ``.overloaded``, ``.backlog_at_end``
      (1 when the run warned so about it) for every socket a ``[[recv]]`` reads, and
      ``.latency_not_settled``, ``.loss_not_settled`` likewise;
    - ``socket.<name>.steady_latency_{mean,p50,p95,p99,p99_9,max}_s``: its latency after
      MSER-5's warm-up (``zsim.steady``; NaN below 100 deliveries) and
      ``socket.<name>.warmup_end_s``, the send time where that warm-up ends;
    - with ``result`` (the run's message table): ``socket.<name>.{first,last}_recv_s``;
    - ``pipe.<pipe name>.{dropped,max_depth,mean_depth,p50_depth,p99_depth,max_bytes,mean_bytes}``
      (drops of the ledger, by any rule; the depth held for half and 99 % of the run's time;
      payload bytes; pipes of the same name, after reconnects, are summed, maxed, or for the
      means summed);
    - ``link.<writer>-><reader>.{max,mean}_{kernel,sender_engine,receiver_engine}_{messages,bytes}``
      per direction of a tcp/ipc link: the kernel's buffers, the sending engine's unwritten
      batch, the receiving engine's decoded messages its pipe refused (links of the same
      name, after reconnects: the largest max, the summed time averages);
    - ``sender.<name>.{sent,again,requested_rate_per_s,achieved_rate_per_s,blocked_s,finished_at_s,
      attempts,unroutable,refused_fraction}`` (NaN where the summary has none: back-to-back
      senders ask no rate; ``refused_fraction``: again / attempts, the share of its sends
      refused with zmq.Again);
    - ``rtt.<socket>.{count,mean_s,p50_s,p95_s,p99_s,p99_9_s,max_s}``: request -> reply
      times of the requests a socket sent, measured where the reply arrives (a REQ, a
      DEALER, a ROUTER sending with ``to``; through any broker), and
      ``e2e.<source>-><sink>.*`` likewise from a message sent at ``source`` to what it
      caused arriving at ``sink`` (a task -> its result); ``zsim.results.causal_times``
      says how; over a socket template's members, ``rtt.<template>.<sum|min|mean|max>_<field>``
      and ``e2e.<A>-><B>.<stat>_<field>`` (A or B a template);
    - with ``[machine] cores``: ``machine.cores``, ``machine.cpu_s`` (CPU work of every
      thread) and ``thread.<name>.{cpu_s,waited_s}`` (its work, its wait for a core);
    - with ``[[link]]`` tables: ``network.<link>.<a>-><b>.<field>`` per direction of each link
      for every field of ``NETWORK_FIELDS`` (``summary["network"]``), and per direction of
      each tcp connection crossing one ``link.<writer>-><reader>.<field>`` for every field of
      ``CONNECTION_FIELDS`` (its sending time, the part of it its receiver's window held it
      back, the payload acknowledged, its rate while sending, mean and largest round trip,
      largest congestion window; a reconnection's add up);
    - ``warnings`` (how many) and ``warning.<code>`` for every code of ``WARNING_CODES``;
    - ``random_streams_drawn`` (how many of the model's random streams gave a value) and
      ``seed_independent`` (1 when none did and no app code ran: every seed gives this row);
    - for a scenario written with templates (``zsim.templates``; ``summary["templates"]``,
      else ``scenario.templates``): ``socket.<template>.{sum,min,mean,max}_<field>`` over
      its members for every per-socket field above (``socket.w_in.max_last_recv_s``),
      ``sender.<template>.<stat>_<field>`` likewise, and ``socket.<template>.members``, ``sender.<template>.members`` (how many;
      see ``_member_aggregates`` for members without a value).
    """
    ledger = summary["ledger"]
    copies = ledger["copies"] or 0
    undelivered = ledger["dropped"] + ledger["discarded"] + ledger["lost_on_close"] + ledger["queued_at_end"]
    row: dict[str, Any] = {
        "sent": ledger["sent"],
        "copies": copies,
        "delivered": ledger["delivered"],
        "forwarded": ledger["forwarded"],
        "dropped": ledger["dropped"],
        "discarded": ledger["discarded"],
        "lost_on_close": ledger["lost_on_close"],
        "queued_at_end": ledger["queued_at_end"],
        "pooled_drop_fraction": (ledger["dropped"] / copies) if copies else 0.0,
        "pooled_loss_fraction": (undelivered / copies) if copies else 0.0,
        "sim_time_s": summary["sim_time_s"],
        "wall_s": summary["wall_s"],
    }
    for key in SOCKET_LATENCY:
        row[f"pooled_latency_{key}_s"] = _number(summary["latency_s"].get(key))
    row["pooled_delivered_rate_per_s"] = ledger["delivered"] / summary["sim_time_s"] if summary["sim_time_s"] > 0 else 0.0
    pipes: dict[str, dict[str, float]] = {}
    for pipe in summary["pipes"]:
        entry = pipes.setdefault(pipe["name"], {"dropped": 0, "max_depth": 0, "mean_depth": 0.0, "p50_depth": 0, "p99_depth": 0,
                                                "max_bytes": 0, "mean_bytes": 0.0})
        by_rule = pipe.get("dropped_by_rule")
        entry["dropped"] += sum(by_rule.values()) if by_rule is not None else pipe.get("dropped", 0)
        # a pipe made again (a reconnect) under the same name: the deepest of them, the
        # means added (each over the whole run)
        for key in ("max_depth", "p50_depth", "p99_depth", "max_bytes"):
            entry[key] = max(entry[key], pipe.get(key, 0))
        entry["mean_depth"] += pipe.get("mean_depth", 0.0)
        entry["mean_bytes"] += pipe.get("mean_bytes", 0.0)
    row["pooled_max_pipe_depth"] = max((p["max_depth"] for p in pipes.values()), default=0)
    for alias, pooled in POOLED_ALIASES.items():
        row[alias] = row[pooled]

    load = _receiving_load(scenario, summary) if scenario is not None else {}
    times = _delivery_times(result) if result is not None else {}
    for sock_name, sock in summary["sockets"].items():
        for key in ("sent", "send_again", "received", "blocked_s"):
            row[f"socket.{sock_name}.{key}"] = sock[key]
        row[f"socket.{sock_name}.dropped_sending"] = sock["dropped"]
        unroutable = sock.get("send_unroutable") or 0
        attempts = sock["sent"] + sock["send_again"] + unroutable
        row[f"socket.{sock_name}.send_unroutable"] = unroutable
        row[f"socket.{sock_name}.send_attempts"] = attempts
        row[f"socket.{sock_name}.send_refused_fraction"] = _fraction(sock["send_again"], attempts)
        inbound = sock.get("inbound")
        if inbound is not None:
            for key in INBOUND_FIELDS:
                row[f"socket.{sock_name}.{key}"] = inbound[key]
            latency = sock.get("latency_s") or {}
            steady_latency = sock.get("steady_latency_s") or {}
            for key in SOCKET_LATENCY:
                row[f"socket.{sock_name}.latency_{key}_s"] = _number(latency.get(key))
                row[f"socket.{sock_name}.steady_latency_{key}_s"] = _number(steady_latency.get(key))
            warmup = (sock.get("settling") or {}).get("latency") or {}
            row[f"socket.{sock_name}.warmup_end_s"] = _number(warmup.get("warmup_end_s"))
        else:
            row[f"socket.{sock_name}.dropped"] = sock["dropped"]
        for key, value in load.get(sock_name, {}).items():
            row[f"socket.{sock_name}.{key}"] = value
        if sock_name in times:
            row[f"socket.{sock_name}.first_recv_s"], row[f"socket.{sock_name}.last_recv_s"] = times[sock_name]
        elif result is not None and inbound is not None:
            row[f"socket.{sock_name}.first_recv_s"] = row[f"socket.{sock_name}.last_recv_s"] = math.nan
    for sock_name, sock in summary["sockets"].items():  # causal times: rtt.<socket>.*, e2e.<source>-><sink>.*
        for prefix, found in ((f"rtt.{sock_name}", sock.get("rtt_s")),
                              *((f"e2e.{source}->{sock_name}", e2e) for source, e2e in (sock.get("e2e_s") or {}).items())):
            if found:
                row[f"{prefix}.count"] = found["count"]
                for key in SOCKET_LATENCY:
                    row[f"{prefix}.{key}_s"] = _number(found.get(key))
    for pipe_name, entry in pipes.items():
        for key in PIPE_FIELDS:
            row[f"pipe.{pipe_name}.{key}"] = entry[key]
    directions: dict[str, dict[str, float]] = {}
    for link in summary.get("links") or []:
        for direction, levels in (link.get("directions") or {}).items():
            entry = directions.setdefault(direction, {})
            for quantity, level in levels.items():
                entry[f"max_{quantity}"] = max(entry.get(f"max_{quantity}", 0), level["max"])
                entry[f"mean_{quantity}"] = entry.get(f"mean_{quantity}", 0.0) + level["mean"]
    for direction, entry in directions.items():
        for key, value in entry.items():
            row[f"link.{direction}.{key}"] = value
    for sender_name, sender in (summary.get("senders") or {}).items():
        for key in SENDER_FIELDS:
            if key == "refused_fraction":
                value = _fraction(sender.get("again") or 0, sender.get("attempts") or 0)
                row[f"sender.{sender_name}.{key}"] = value
                continue
            value = sender.get(key)
            row[f"sender.{sender_name}.{key}"] = _number(value) if key.endswith(("_s", "_per_s")) else (value or 0)
    machine = summary.get("machine")
    if machine:
        # [machine] cores: what each thread used and how long it waited for a core
        row["machine.cores"] = machine["cores"]
        row["machine.cpu_s"] = machine["cpu_s"]
        for thread_name, thread in machine["threads"].items():
            for key in THREAD_FIELDS:
                row[f"thread.{thread_name}.{key}"] = thread[key]
    for link_name, ways in (summary.get("network") or {}).items():
        # [[link]]s: what each direction carried, dropped and retransmitted
        for direction, way in ways.items():
            for key in NETWORK_FIELDS:
                row[f"network.{link_name}.{direction}.{key}"] = way[key]
            if "down_s" in way:
                for key in NETWORK_FAULT_FIELDS:
                    row[f"network.{link_name}.{direction}.{key}"] = way[key]
            # its connections: TCP as it ran them (each crosses one link, in one direction)
            for connection, tcp in way["connections"].items():
                for key in CONNECTION_FIELDS:
                    row[f"link.{connection}.{key}"] = tcp[key]
    for fault_name, fault in (summary.get("faults") or {}).items():
        for key in FAULT_FIELDS:
            row[f"fault.{fault_name}.{key}"] = fault[key]
    randomness = summary.get("randomness")
    if randomness is not None:
        # 1: the run drew no random value (and ran no app code): every seed gives this row
        row["seed_independent"] = 1 if randomness["seed_independent"] else 0
        row["random_streams_drawn"] = randomness["drawn"]
    warnings = summary.get("warnings") or []
    row["warnings"] = len(warnings)
    codes = dict.fromkeys(WARNING_CODES, 0)
    for warning in warnings:
        code = str(warning.get("code", "unknown"))
        codes[code] = codes.get(code, 0) + 1
    for code, count in codes.items():
        row[f"warning.{code}"] = count
    templates = summary.get("templates")
    if templates is None and getattr(scenario, "templates", None):
        templates = template_members(scenario)
    if templates:
        _member_aggregates(row, templates)
    return row


def _member_aggregates(row: dict[str, Any], templates: dict[str, Any]) -> None:
    """Per socket and sender template: each metric of its members summed and as min, mean
    and max over them (``socket.w_in.sum_delivered``, ``socket.w_in.max_last_recv_s``), and
    the number of members
    (``socket.w_in.members``). Members without a value (NaN: a latency of a socket that got
    nothing) are left out; a count a member has no column for (nothing was meant for it) is
    0; a field no member has gets no aggregate, nor does any field of a template with no
    members."""
    _causal_aggregates(row, templates)
    for template_kind, prefix, fields in (("socket", "socket", PER_SOCKET), ("send", "sender", SENDER_FIELDS)):
        for template, info in (templates.get(template_kind) or {}).items():
            members = list(info.get("members") or ())
            row[f"{prefix}.{template}.members"] = len(members)
            for key in fields:
                values = [row.get(f"{prefix}.{member}.{key}") for member in members]
                if all(value is None for value in values):
                    continue
                if prefix == "socket" and key in _ZERO_WHEN_ABSENT:
                    values = [0 if value is None else value for value in values]
                numbers = [float(value) for value in values if value is not None and value == value]
                stats: tuple[float, ...] = (math.nan,) * len(MEMBER_STATS)
                if numbers:
                    total = math.fsum(numbers)
                    stats = (total, min(numbers), total / len(numbers), max(numbers))
                for stat, value in zip(MEMBER_STATS, stats, strict=True):
                    row[f"{prefix}.{template}.{stat}_{key}"] = value


def _causal_aggregates(row: dict[str, Any], templates: dict[str, Any]) -> None:
    """Request -> reply and end-to-end times over a socket template's members, as the other
    member aggregates: ``rtt.<template>.<sum|min|mean|max>_<field>`` over the members that
    sent requests, and ``e2e.<A>-><B>.<stat>_<field>`` over the source -> sink pairs whose
    source is A (a template or one socket) and sink B, where one of them is a template
    (``e2e.w->sink.max_p99_s``: the worst worker's task -> result p99)."""
    member_of = {member: template for template, info in (templates.get("socket") or {}).items() for member in info.get("members") or ()}
    if not member_of:
        return
    groups: dict[str, dict[str, list[float]]] = {}
    for key, value in row.items():
        if not key.startswith(("rtt.", "e2e.")) or value is None or value != value:
            continue
        causal, rest = key.split(".", 1)
        entity, _, field = rest.rpartition(".")
        if field not in CAUSAL_FIELDS:
            continue
        if causal == "rtt":
            if entity not in member_of:
                continue
            group = f"rtt.{member_of[entity]}"
        else:
            source, sep, sink = entity.partition("->")
            if not sep or (source not in member_of and sink not in member_of):
                continue
            group = f"e2e.{member_of.get(source, source)}->{member_of.get(sink, sink)}"
        groups.setdefault(group, {}).setdefault(field, []).append(float(value))
    for group, fields in groups.items():
        for field, numbers in fields.items():
            total = math.fsum(numbers)
            for stat, value in zip(MEMBER_STATS, (total, min(numbers), total / len(numbers), max(numbers)), strict=True):
                row[f"{group}.{stat}_{field}"] = value


def _receiving_load(scenario: Any, summary: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Per socket read by a ``[[recv]]``: offered utilisation (copies meant for it per second
    x mean service time, over the share of time its readers are not paused; several
    readers add their capacities) and 0/1 flags for the run's ``overloaded``,
    ``backlog_at_end``, ``latency_not_settled`` and ``loss_not_settled`` warnings about it.
    The formula is ``zsim.checks``'s."""
    capacity: dict[str, float] = {}
    labels: dict[str, str] = {}
    for recv in scenario.recvs:
        service = recv.service.expected()
        paused = 0.0
        if recv.pause_every is not None and recv.pause is not None:
            every, pause = recv.pause_every.expected(), recv.pause.expected()
            paused = pause / (every + pause) if every + pause > 0 else 0.0
        capacity[recv.socket] = capacity.get(recv.socket, 0.0) + ((1.0 - paused) / service if service > 0 else math.inf)
        short = recv.name[len("recv."):] if recv.name.startswith("recv.") else recv.name
        labels[f"recv[{short}].service_s"] = recv.socket
    flagged: dict[str, set[str]] = {}
    for warning in summary.get("warnings") or ():
        code, path = warning.get("code"), str(warning.get("path", ""))
        if code == "overloaded" and path in labels:
            flagged.setdefault(labels[path], set()).add(code)
        elif code in SOCKET_FLAGS and path.startswith("socket[") and path.endswith("]"):
            flagged.setdefault(path[len("socket["):-1], set()).add(str(code))
    load: dict[str, dict[str, float]] = {}
    for sock_name, cap in capacity.items():
        inbound = (summary["sockets"].get(sock_name) or {}).get("inbound")
        rate = inbound["copies"] / inbound["offered_window_s"] if inbound and inbound.get("offered_window_s", 0) > 0 else math.nan
        utilisation = rate / cap if cap > 0 else math.inf
        load[sock_name] = {"offered_utilisation": utilisation if cap != math.inf else 0.0,
                           "overloaded": float("overloaded" in flagged.get(sock_name, ()))}
        load[sock_name].update({code: float(code in flagged.get(sock_name, ())) for code in SOCKET_FLAGS})
    for sock_name, codes in flagged.items():  # a socket no [[recv]] reads (a proxy's)
        load.setdefault(sock_name, {"offered_utilisation": math.nan, "overloaded": 0.0})
        load[sock_name].update({code: float(code in codes) for code in SOCKET_FLAGS})
    return load


def _delivery_times(result: Any) -> dict[str, tuple[float, float]]:
    """Per socket that got deliveries: the time of its first and its last delivery."""
    table = result.messages
    if not table or not len(table.get("state", ())):
        return {}
    delivered = table["state"] == DELIVERED
    sockets = table["socket"][delivered].astype(np.int64)
    times = table["time"][delivered].astype(np.float64)
    n = len(result.socket_names)
    if not len(sockets) or n == 0:
        return {}
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    ok = sockets >= 0
    np.minimum.at(first, sockets[ok], times[ok])
    np.maximum.at(last, sockets[ok], times[ok])
    return {sock_name: (float(first[i]), float(last[i])) for i, sock_name in enumerate(result.socket_names) if np.isfinite(first[i])}


def drop_member_columns(row: dict[str, Any], templates: Mapping[str, Any], cap: int,
                        summary: Mapping[str, Any] | None = None) -> int:
    """Leave out of ``row`` (``flat_metrics``) the per-entity columns of the members of every
    template with more than ``cap`` members, keeping the template's aggregates
    (``socket.<template>.sum_delivered``, ...): their sockets, senders, the pipes and links
    they end, and their threads (a member workload's, a member socket's, a member
    process's). A sweep's rows stay a few hundred columns wide however many members a
    template has (``zsim.sweep.plan.DEFAULT_MEMBER_COLUMNS``). Returns how many went."""
    big: set[str] = set()
    big_processes: set[str] = set()
    for template_kind, entries in templates.items():
        for info in (entries or {}).values():
            members = list(info.get("members") or ())
            if len(members) > cap:
                (big_processes if template_kind == "process" else big).update(members)
    if not big and not big_processes:
        return 0
    threads = ((summary or {}).get("machine") or {}).get("threads") or {}
    dropped = [key for key in row if _member_column(key, big, big_processes, threads)]
    for key in dropped:
        del row[key]
    return len(dropped)


def _member_column(key: str, big: set[str], big_processes: set[str], threads: Mapping[str, Any]) -> bool:
    head, _, rest = key.partition(".")
    if head not in ("socket", "sender", "pipe", "link", "thread") or "." not in rest:
        return False
    entity = rest[:rest.rindex(".")]
    if head in ("socket", "sender"):
        return entity in big
    if head in ("pipe", "link"):
        writer, _, reader = entity.partition("->")
        return writer in big or reader.split(" (")[0] in big
    thread = threads.get(entity) or {}
    if thread.get("process") in big_processes:
        return True
    thread_name = entity.split("#")[0]
    return thread_name in big or (thread_name.startswith("socket.") and thread_name[len("socket."):] in big)
