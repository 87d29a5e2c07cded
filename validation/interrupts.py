"""Interruptions of a real run that holds things on the machine (network namespaces, a
temporary folder, child processes): SIGINT, SIGTERM and SIGHUP stop the run, never its
clean-up.

Python's default SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread is,
a ``finally`` block included: a second Ctrl-C while a run removes its 40 namespaces left
most of them behind, and SIGTERM and SIGHUP (a closed terminal, ``kill``) ended the process
without any clean-up. Inside ``shielded()`` the handler of all three only notes the signal
(the first one counts); the run asks ``check()`` at its safe points (before each ``ip``/``tc``
command, every turn of its wait loops), which raises ``zsim.errors.Interrupted`` there, so the
run's ``finally`` blocks run whole whatever arrives meanwhile. A signal noted after the last
check is raised when the outermost shield ends; the command line exits 128 + its number
(130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).

Handlers can only be set in the main thread (``signal.signal``); elsewhere ``shielded()``
changes nothing and ``check()`` never raises.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from zsim.errors import Interrupted

#: what stops a run: Ctrl-C, ``kill``, the terminal going away
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Shield:
    """The process's one shield (signal handlers are per process): how many ``shielded()``
    blocks are open, the handlers they replaced, the first signal noted and whether it was
    raised already."""

    def __init__(self) -> None:
        self.depth = 0
        self.previous: dict[int, Any] = {}
        self.noted: int | None = None
        self.raised = False


_SHIELD = _Shield()


def _note(signum: int, frame: Any) -> None:
    # only noted: raising here would interrupt whatever runs, a clean-up too
    if _SHIELD.noted is None:
        _SHIELD.noted = signum


def check() -> None:
    """Raise ``Interrupted`` if a stopping signal came since the shield went up (once)."""
    if _SHIELD.noted is not None and not _SHIELD.raised:
        _SHIELD.raised = True
        raise Interrupted(_SHIELD.noted)


@contextmanager
def shielded() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP noted, not raised, while the block runs (in the main
    thread); a noted signal is raised by ``check()`` or when the outermost block ends, also
    in place of an error the block ended with (the user asked to stop)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _SHIELD.depth == 0:
        _SHIELD.noted, _SHIELD.raised = None, False
        _SHIELD.previous = {signum: signal.signal(signum, _note) for signum in SIGNALS}
    _SHIELD.depth += 1
    try:
        yield
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:
        if _SHIELD.depth == 1 and _SHIELD.noted is not None and not _SHIELD.raised:
            _SHIELD.raised = True
            raise Interrupted(_SHIELD.noted) from exc
        raise
    finally:
        _SHIELD.depth -= 1
        if _SHIELD.depth == 0:
            for signum, handler in _SHIELD.previous.items():
                # None: a handler not set from Python, which cannot be put back; the default
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    if _SHIELD.depth == 0:
        check()
