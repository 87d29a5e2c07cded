"""zsim: a discrete-event simulator of ZeroMQ (libzmq 4.3.5) queuing, on SimPy.

Describe a topology in a scenario file, run it, and read what libzmq would do: messages
delivered, dropped (where and why), blocked, lost at close, pipe depths and latencies.

    >>> import zsim
    >>> result = zsim.run("examples/pub_sub_inproc.toml", seed=1)   # doctest: +SKIP
    >>> result.summary["ledger"]["dropped"]                          # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

# first: importing zsim.native chooses compiled or pure Python before any model module loads
from . import native  # noqa: F401
from .app import App, AppSocket, Received
from .errors import (
    Again,
    ConservationError,
    EnvironmentFault,
    HostUnreachable,
    InvalidArgument,
    LimitExceeded,
    NoSuchEndpoint,
    NotSupported,
    ScenarioError,
    SocketClosed,
    StateError,
    UnsupportedOption,
    ZsimError,
)
from .runner import run, run_safe
from .spec import Scenario, load, set_path, with_overrides
from .trust import AppPermission

__all__ = [
    "Again",
    "App",
    "AppPermission",
    "AppSocket",
    "ConservationError",
    "EnvironmentFault",
    "HostUnreachable",
    "InvalidArgument",
    "LimitExceeded",
    "NotSupported",
    "Received",
    "NoSuchEndpoint",
    "SocketClosed",
    "StateError",
    "Scenario",
    "ScenarioError",
    "UnsupportedOption",
    "ZsimError",
    "__version__",
    "load",
    "run",
    "run_safe",
    "set_path",
    "with_overrides",
]
