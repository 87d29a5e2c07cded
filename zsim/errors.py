"""Exceptions raised by zsim.

``ScenarioError`` is the user-facing error for bad input: it always names the field path
and the reason, and the CLI turns it into one line on stderr and exit status 2.
``Again`` mirrors pyzmq's ``zmq.Again`` (EAGAIN) for the simulated socket API.
``ConservationError`` means the model lost track of a message: a bug in zsim, never a
property of the scenario.
"""

from __future__ import annotations


class ZsimError(Exception):
    """Base class of every error zsim raises on purpose."""


class ScenarioError(ZsimError):
    """A scenario (or sweep, or profile) is invalid.

    ``path`` is a dotted field path such as ``socket[publisher].options.sndhwm``;
    ``reason`` says what is wrong with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class EnvironmentFault(ZsimError):
    """The environment refused (an OS call failed: permission denied, disk full, no Java).

    Not the user's input and not a bug in zsim: the CLI prints one line naming ``path``
    and the reason and exits with status 1.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class Interrupted(KeyboardInterrupt):
    """A signal asked the command to stop (SIGINT, SIGTERM, SIGHUP), raised where the work
    it interrupted can stop cleanly (``validation.interrupts``). A ``KeyboardInterrupt``, so
    whatever handles Ctrl-C handles it; the CLI exits 128 + ``signum`` (130, 143, 129), as a
    shell reports a command a signal ended."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_status = 128 + signum
        super().__init__(f"signal {signum}")

    @property
    def signal_name(self) -> str:
        import signal

        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"


class LimitExceeded(ScenarioError):
    """A run reached one of its work limits (events, messages, wall-clock time).

    ``path`` names the limit (``limits.max_events``) and ``reason`` says what drove the
    work, so the user can fix the scenario or raise the limit. Exit status 2.
    """


class UnsupportedOption(ScenarioError):
    """A socket option that exists in ZeroMQ but that zsim does not model."""


class Again(ZsimError):
    """A send or receive would block (pyzmq ``zmq.Again``, errno EAGAIN)."""


class HostUnreachable(ZsimError):
    """ROUTER with ``router_mandatory`` sending to an unknown peer (EHOSTUNREACH)."""


class StateError(ZsimError):
    """A REQ/REP call out of turn (pyzmq ``ZMQError`` EFSM)."""


class NoSuchEndpoint(ZsimError):
    """``disconnect``/``unbind`` of an endpoint the socket does not connect/bind (ENOENT)."""


class NotSupported(ZsimError):
    """A call the socket type does not have: send on a PULL, recv on a PUB (ENOTSUP)."""


class InvalidArgument(ZsimError):
    """``zmq_setsockopt`` of an option the socket type does not take now (pyzmq
    ``ZMQError`` EINVAL): ``subscribe`` on an XSUB, a PUB, or an XPUB without ``xpub_manual``."""


class SocketClosed(ZsimError):
    """The socket was closed (its process exited or crashed) while, or before, a call
    used it (pyzmq ``ZMQError`` ENOTSOCK / ETERM)."""


class ConservationError(ZsimError):
    """The per-message ledger does not balance: a bug report, not a result."""
