"""Work limits of one run: no input can make zsim run, or grow, without end.

Every simulation runs under a ``RunLimits``: a budget of events the event loop may
process, of message copies the model may create, and of wall-clock seconds. The defaults
are far above what a normal study needs (the buffer-sizing study's runs use about 10^5
events, 50-150 ms); a run that reaches one stops with ``LimitExceeded`` naming the limit
and what drove the work (the workload that sent most, or the loop that advanced no
simulated time), exit status 2.

They are set, in increasing priority, by these defaults, by ``[limits]`` in the scenario
file, and by the command line (``zsim run --max-events N --max-messages N --max-wall-s S``);
a sweep gives every run ``sweep.run_timeout_s``. A value of 0 lifts that limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .errors import ScenarioError

#: Events the loop may process in one run (about 5 minutes of a fast model).
DEFAULT_MAX_EVENTS = 100_000_000
#: Message copies one run may create (each costs 72 bytes of ledger, more while queued:
#: about 0.8 GB of memory at the limit).
DEFAULT_MAX_MESSAGES = 10_000_000
#: Wall-clock seconds one run may take.
DEFAULT_MAX_WALL_S = 3600.0
#: Events processed at one simulated instant before the run is declared stuck in a loop
#: that advances no time (``interval_s = 0`` under the ``ideal`` profile).
DEFAULT_MAX_EVENTS_AT_ONE_TIME = 2_000_000

FIELDS = ("max_events", "max_messages", "max_wall_s", "max_events_at_one_time")

#: What a run's watchdog (``zsim.runner.Watchdog``) does when app code catches every
#: interruption and keeps the thread: called with the run's one line. The command line
#: sets it to print the line and end the process (exit 2); from Python it is None and the
#: watchdog goes on raising into the thread, once a second.
LAST_RESORT: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class RunLimits:
    """Budgets for one run; ``None`` means no limit."""

    max_events: int | None = DEFAULT_MAX_EVENTS
    max_messages: int | None = DEFAULT_MAX_MESSAGES
    max_wall_s: float | None = DEFAULT_MAX_WALL_S
    max_events_at_one_time: int | None = DEFAULT_MAX_EVENTS_AT_ONE_TIME

    def merged(self, overrides: Mapping[str, Any], where: str) -> RunLimits:
        """These limits with ``overrides`` (field -> value, 0 = no limit) applied and checked."""
        values: dict[str, Any] = {}
        for key, value in overrides.items():
            if value is None:
                continue
            path = f"{where}.{key}" if where else key
            if key not in FIELDS:
                raise ScenarioError(path, f"unknown limit; known: {', '.join(FIELDS)}")
            values[key] = check_limit(key, value, path)
        return replace(self, **values)


def check_limit(key: str, value: Any, path: str) -> int | float | None:
    """A limit value as given by a user: a number >= 0, where 0 lifts the limit."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"must be a number (0 for no limit), got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(path, f"must be finite (0 for no limit), got {value!r}")
    if value < 0:
        raise ScenarioError(path, f"must be >= 0 (0 for no limit), got {value!r}")
    if value == 0:
        return None
    if key == "max_wall_s":
        if value > MAX_SECONDS:
            raise ScenarioError(path, f"must be at most {MAX_SECONDS:g} s (zsim.limits.MAX_SECONDS; 0 for no limit), got {value!r}")
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise ScenarioError(path, f"must be a whole number, got {value!r}")
    return int(value)


DEFAULT = RunLimits()


# -- the size of a topology -------------------------------------------------------------------
#
# Counted after template expansion and before anything is built (``zsim.templates``,
# ``zsim.spec``): ten socket templates of 100,000 members are one line at once, not a
# MemoryError minutes later. They are not ``[limits]`` fields: a scenario file must not
# lift the bounds that protect you from it. A study that needs more sets them from Python
# (``zsim.limits.MAX_SOCKETS = 500_000``) before loading its scenarios.

#: Sockets in a scenario (each a model socket with its pipes, about 10-20 KB of memory).
MAX_SOCKETS = 100_000
#: Processes (each a context with its I/O threads, reaper and application threads).
MAX_PROCESSES = 50_000
#: ``[[send]]`` and ``[[recv]]`` workloads together (each an application thread of the model).
MAX_WORKLOADS = 200_000
#: I/O threads of all contexts together (the sum of ``io_threads`` over every process):
#: 2,000 processes with ``io_threads = 4096`` is 8 million threads, refused.
MAX_IO_THREADS = 100_000
#: Characters of a name (a scenario, process, socket, workload, proxy or app name, a
#: template's name pattern); a scenario's description may have ``MAX_DESCRIPTION_CHARS``.
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 20_000
#: Characters that template members render from text with placeholders, all members
#: together (a 1 MB string in a block of 100,000 members would be 100 GB).
MAX_EXPANDED_CHARS = 50_000_000
#: Bytes of a program ``zsim export`` writes (templates fold into loops; a topology that
#: does not fold is written member by member, about 1.5 KB each).
MAX_EXPORT_BYTES = 64 * 1024 * 1024


# -- the size of an input's text ----------------------------------------------------------
#
# Expressions (``[report.derived]``, ``--derive``, a search's cost and constraints,
# ``[validation.derived]``) and the dotted paths of ``--set``, sweep axes and ``compare
# --vary``: bounded before they are parsed, so a 100,000-character expression or a path of
# 1,000 parts is one line naming the field, not a RecursionError or MemoryError.

#: Seconds, of a scenario's times (``until_s``, a send interval, a service time, a
#: distribution's values) and of wall-clock limits (``--max-wall-s``, ``--run-timeout``):
#: about 32 years. Beyond it the model's clock has no microseconds left (and 1e308 s more
#: is infinity), and a timer of the operating system's overflows; a limit that should not
#: stop anything is 0.
MAX_SECONDS = 1e9
#: Worker processes (``--jobs``, ``search --workers``): each is a Python process; more than
#: there are runs, or cores, only costs memory.
MAX_JOBS = 1024
#: Characters of one expression.
MAX_EXPRESSION_CHARS = 10_000
#: How deeply an expression nests: the operators, signs, parentheses and calls along its
#: deepest chain, counted before it is parsed (``a + b + c`` is 3 deep; ``sum(a, b, c)`` 2).
MAX_EXPRESSION_DEPTH = 100
#: Characters of a field's dotted path (``socket.pub.options.sndhwm``).
MAX_PATH_CHARS = 1_000
#: Parts of a dotted path: as deep as a TOML file may nest (``zsim.files.MAX_NESTING``).
MAX_PATH_PARTS = 32


def check_size(what: str, total: int, limit_name: str, field: str, how: str = "") -> None:
    """Refuse a topology over one of the bounds above: ``ScenarioError`` naming ``field``,
    the block that drove the count."""
    limit = globals()[limit_name]
    if limit is not None and total > limit:
        raise ScenarioError(field, f"{how}makes {total:,} {what} in all after template expansion; zsim builds at most {limit:,} "
                                   f"(zsim.limits.{limit_name}): make the topology smaller")


def check_text(value: str, field: str, limit_name: str = "MAX_NAME_CHARS") -> str:
    """Refuse a name (or description) longer than its bound, before anything uses it."""
    limit = globals()[limit_name]
    if limit is not None and len(value) > limit:
        raise ScenarioError(field, f"is {len(value):,} characters long; at most {limit:,} are accepted (zsim.limits.{limit_name})")
    return value
