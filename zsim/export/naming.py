"""The names in a program ``zsim export`` writes, and the helpers its code refers to.

Every function and socket variable gets its entity's (or its template's) name made an
identifier, unique across the program and never one the program uses itself (its imports,
plumbing, constants and locals: ``_RESERVED``), so a scenario's names cannot shadow the
code around them. Names are given in the order the code is written, so the same scenario
always gets the same names. The code written so far also notes which helpers it uses
(``needs``), which decide the program's imports and plumbing. A fold that fails
(``fold.fold``) leaves no trace here: ``save`` and ``restore`` around it.
"""

from __future__ import annotations

import builtins
import keyword
import re

from ..spec import SocketSpec
from ..templates import Template

#: Names the generated code uses itself: a socket or loop never gets one of them.
_RESERVED = frozenset(
    set(dir(builtins)) | set(keyword.kwlist) | {
        "annotations", "argparse", "contextlib", "itertools", "json", "math", "multiprocessing", "np", "os", "queue",
        "signal", "sys", "threading", "time", "traceback", "zlib", "zmq", "Any", "Run", "Proc", "Stopped", "COUNTS",
        "SCENARIO", "SEED", "UNTIL_S", "QUIET_S", "LAST_EVENT_S", "BINDERS", "frames", "main", "proc", "run", "i", "n", "mp",
        "message", "reply", "envelope", "body", "size", "due", "rng", "poller", "other", "sock", "topics", "peers",
        "payload", "received", "next_pause", "message_in", "events", "ready", "sending", "receiving", "pause", "error", "args",
        "parser", "processes", "process", "thread",
        "report", "result", "ctx", "name", "opener", "target", "intervals", "sizes", "service_times", "reply_sizes",
        "pause_gaps", "pause_lengths", "calls", "Calls",
    }
)


class Namespace:
    """The names given so far (per entity kind, with its prefix and suffix, and name) and the
    helpers the code written so far needs: "itertools", "rng" (numpy's generator) and
    "frames" (the plumbing's ``frames()``)."""

    def __init__(self, member_of: dict[tuple[str, str], tuple[Template, int]]) -> None:
        #: (kind, entity name) -> (its template, its index): a member's functions are named after the template
        self.member_of = member_of
        self.names: dict[tuple[str, str], str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.needs: set[str] = set()

    def ident(self, kind: str, name: str, member: bool, suffix: str = "", prefix: str = "") -> str:
        """The Python name of an entity: its (template) name made an identifier, unique."""
        base = name
        if member and (kind, name) in self.member_of:
            base = self.member_of[(kind, name)][0].name
        for head in ("send.", "recv."):
            if kind in ("send", "recv") and base.startswith(head):
                base = base[len(head):]
        key = (kind + prefix + suffix, base)
        if key in self.names:
            return self.names[key]
        word = re.sub(r"\W", "_", base)
        if not word or word[0].isdigit():
            word = "s" + word
        word = f"{prefix}{word}{suffix}"
        candidate, n = word, 2
        while candidate in self.taken or keyword.iskeyword(candidate):
            candidate = f"{word}_{n}"
            n += 1
        self.taken.add(candidate)
        self.names[key] = candidate
        return candidate

    def var(self, sock: SocketSpec, member: bool) -> str:
        """The variable a socket is held in."""
        return self.ident("socket", sock.name, member)

    def given(self, kind: str, name: str) -> str:
        """The name ``ident`` gave an entity: ``kind`` with the prefix and suffix it was given
        (``"process_process"``), ``name`` the entity's or its template's."""
        return self.names[(kind, name)]

    def save(self) -> tuple[dict[tuple[str, str], str], set[str], set[str]]:
        """A copy of the names and needs so far, for ``restore`` after a fold that failed."""
        return dict(self.names), set(self.taken), set(self.needs)

    def restore(self, saved: tuple[dict[tuple[str, str], str], set[str], set[str]]) -> None:
        self.names, self.taken, self.needs = saved
