"""Run a scenario file on real pyzmq sockets and summarise what the sockets did.

``run_real(scenario, seed)`` executes the same scenario file that ``zsim run`` simulates:

* one OS process per ``[[process]]`` (``python -m validation.child``), with one
  ``zmq.Context`` each; inside it one thread per socket (running that socket's ``[[send]]``
  and ``[[recv]]`` workloads and making its ``[[call]]``s at their times) and one per
  ``[[proxy]]``;
* real endpoints: ``inproc://`` names as written, ``ipc://`` paths in a fresh temporary
  directory, ``tcp://127.0.0.1`` with free ports chosen now (the port in the file only
  identifies the endpoint);
* one time origin t0 shared by every process (``CLOCK_MONOTONIC``), from which each process
  opens, closes and exits at ``open_at_s``/``close_at_s``/``exit_at_s`` and starts its
  workloads at ``start_s``;
* the workloads of docs/scenario-format.md, with the same random draws as the simulation for
  the same seed (same numpy streams, same names);
* the end: ``scenario.until_s`` if given (every process takes its counters at that instant),
  otherwise when everything is quiet (every sender done, the timeline over, no message moved
  for ``quiet_s``).

It returns a summary dict with the keys of ``zsim run --json`` (``zsim/results.py``), counted
from what the real sockets did. What a real socket cannot tell (drops, discards, messages
queued at the end, pipe depths) is ``None``. Extra observations are under ``"real"``: which
message indices arrived where, timestamps, errors.

Every run is bounded: children get an absolute deadline and leave by themselves; the parent
kills their process groups at ``timeout_s`` and always removes its temporary folder (and a
deployment's namespaces), also on errors, on Ctrl-C, SIGTERM and SIGHUP, which stop the run
at its checks and never its clean-up (``validation.interrupts``). The folder is named
``zsim-val-<pid>s<start>-...`` (``netns.run_tag``), so the next run removes those of runs
that were killed (``kill -9``), as ``netns`` removes their namespaces.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import platform
import re
import selectors
import shutil
import signal
import socket as pysocket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zsim import spec
from zsim.errors import EnvironmentFault, ScenarioError
from zsim.model.transport.network import ETHERNET_HEADER_BYTES, IP_TCP_HEADER_BYTES
from zsim.socket_types import TYPES
from zsim.spec import Endpoint, Scenario
from zsim.summary import (
    LedgerSummary,
    ProcessSummary,
    ProxySummary,
    ReceiverSummary,
    RunSummary,
    SenderSummary,
    SocketSummary,
    percentiles,
    sender_rates,
)

from . import interrupts, netns

__all__ = ["run_real", "RealRunError", "build_plans", "EndpointMap", "real_defaults"]

_pc = time.perf_counter

#: margin between the children reporting ready and t0
START_MARGIN_S = 0.25
#: default quiet period that ends a run without ``until_s``
DEFAULT_QUIET_S = 0.5
#: extra time after the horizon for children to write their results
RESULT_GRACE_S = 5.0
#: what a TCP packet over a link carries besides payload, as a qdisc counts it (IPv4, TCP
#: with timestamps, Ethernet): the model's per-packet overhead
PACKET_HEADER_BYTES = IP_TCP_HEADER_BYTES + ETHERNET_HEADER_BYTES
#: tbf's ``limit`` is a 32-bit count of bytes
TBF_MAX_LIMIT_BYTES = 2**32 - 1
#: the most hosts (network namespaces, the default host's included) and links (shaped veth
#: pairs) a real run builds, checked before any work. Every run builds them anew; on the
#: project's 2-core machine (busy) 40 hosts in a chain took 2.5 s, 128 took 8 s, 256 took
#: 25 s (slower per host as they grow), and so many hosts share two cores anyway
#: how long after a crashed host's links are cut its processes are killed: a process killed
#: first has its kernel close its sockets (FIN, or RST with unread data) before the cut, and
#: its peers learn of it, which a dead host's do not (measured: the harness's cut comes 15-25 ms
#: after the time it is due, so killing at the same time told the peer every time)
HOST_CRASH_KILL_AFTER_S = 0.1
#: the options that notice a silent peer (ZMTP heartbeats, TCP keepalive), set as integers
LIVENESS_OPTIONS = ("heartbeat_ivl", "heartbeat_timeout", "heartbeat_ttl", "tcp_keepalive", "tcp_keepalive_idle",
                    "tcp_keepalive_intvl", "tcp_keepalive_cnt")
MAX_VALIDATE_HOSTS = 128
MAX_VALIDATE_LINKS = 128
#: a run's temporary folder: ``zsim-val-<pid>s<start>-<random>`` (``netns.run_tag``)
TMP_PREFIX = "zsim-val-"
_TMP_NAME = re.compile(rf"{TMP_PREFIX}(\d+)s(\d+)-")


class RealRunError(RuntimeError):
    """A real run could not be carried out (a child failed to start, a port clash, ...)."""


# --------------------------------------------------------------------------------------
# Endpoints


@dataclass
class EndpointMap:
    """Scenario endpoints -> real endpoints for one run (free ports, temporary ipc paths).

    With [[host]]s (``where`` given: ``netns.Deployment.address``) every host is a network
    namespace of its own, so a tcp endpoint keeps the port the file gives it; a bind listens
    on all the host's addresses (``zsim.spec.resolve_endpoint``: a socket on another host
    reaches it whatever address the bind wrote) and a connect goes to 127.0.0.1 on its own
    host, else to the bound host's address on the link between them."""

    tmpdir: str
    mapping: dict[tuple[str, str, str], str] = field(default_factory=dict)
    where: Callable[[str, str], str] | None = None

    @classmethod
    def allocate(cls, scenario: Scenario, tmpdir: str, where: Callable[[str, str], str] | None = None) -> EndpointMap:
        result = cls(tmpdir, where=where)
        keys: list[Endpoint] = []
        seen: set[tuple[str, str, str]] = set()
        # a [[call]]'s endpoints too: a bind at a time gets the port its connects get
        named = [e for sock in scenario.sockets for e in (*sock.bind, *sock.connect)]
        named += [e for call in scenario.calls for e in call.endpoints]
        for endpoint in named:
            if endpoint.key not in seen:
                seen.add(endpoint.key)
                keys.append(endpoint)
        tcp = [e for e in keys if e.transport == "tcp"]
        if where is None:
            ports = free_tcp_ports(len(tcp))
            for endpoint, port in zip(tcp, ports, strict=True):
                result.mapping[endpoint.key] = f"tcp://127.0.0.1:{port}"
        else:
            for endpoint in tcp:
                result.mapping[endpoint.key] = f"tcp://0.0.0.0:{endpoint.address}"
        ipc_index = 0
        for endpoint in keys:
            if endpoint.transport == "ipc":
                ipc_index += 1
                result.mapping[endpoint.key] = f"ipc://{tmpdir}/e{ipc_index}"
            elif endpoint.transport == "inproc":
                result.mapping[endpoint.key] = f"inproc://{endpoint.address}"
        return result

    def real(self, endpoint: Endpoint, connect_from: str | None = None) -> str:
        """The real endpoint a socket binds (``connect_from`` None) or connects to from
        host ``connect_from``."""
        if self.where is not None and endpoint.transport == "tcp" and connect_from is not None:
            return f"tcp://{self.where(endpoint.node, connect_from)}:{endpoint.address}"
        return self.mapping[endpoint.key]


def free_tcp_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports the kernel considers free right now.

    All are held open together (so they differ) and released just before use; the small
    window in which another program could take one is reported as a bind error.
    """
    held = []
    try:
        for _ in range(count):
            sock = pysocket.socket(pysocket.AF_INET, pysocket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            held.append(sock)
        return [s.getsockname()[1] for s in held]
    finally:
        for sock in held:
            sock.close()


# --------------------------------------------------------------------------------------
# Plans: what each child process does (JSON)


def real_defaults(scenario: Scenario) -> dict[str, Any]:
    """The ``[validation]`` settings the harness uses (with defaults)."""
    table = dict(scenario.validation)
    quiet = table.get("quiet_s")
    if quiet is None:
        longest = 0.0
        for recv in scenario.recvs:
            longest = max(longest, 2.0 * recv.service.expected())
            if recv.pause is not None:
                longest = max(longest, recv.pause.expected() * 2.0)
        for sock in scenario.sockets:
            if sock.options.linger > 0:
                longest = max(longest, sock.options.linger / 1000.0 + 0.2)
            if sock.options.rcvtimeo > 0:
                longest = max(longest, sock.options.rcvtimeo / 1000.0 + 0.2)
        quiet = max(DEFAULT_QUIET_S, longest)
    timeout = table.get("timeout_s")
    if timeout is None:
        timeout = (scenario.until_s + 30.0) if scenario.until_s is not None else 60.0
    return {"quiet_s": float(quiet), "timeout_s": float(timeout)}


def _last_timeline_s(scenario: Scenario) -> float:
    times = [0.0]
    for sock in scenario.sockets:
        times.append(sock.open_at_s)
        if sock.close_at_s is not None:
            times.append(sock.close_at_s)
    for proc in scenario.processes:
        for value in (proc.exit_at_s, proc.crash_at_s, proc.restart_at_s):
            if value is not None:
                times.append(value)
    for send in scenario.sends:
        times.append(send.start_s)
    for recv in scenario.recvs:
        times.append(recv.start_s)
    times += [call.at_s for call in scenario.calls]
    return max(times)


def _connected(a: Any, b: Any) -> bool:
    """Do sockets a and b talk directly (one binds an endpoint the other connects)?"""
    a_binds = {e.key for e in a.bind}
    b_binds = {e.key for e in b.bind}
    return bool(a_binds & {e.key for e in b.connect}) or bool(b_binds & {e.key for e in a.connect})


def _expected_wait_lateness(scenario: Scenario) -> Callable[[float, float], float]:
    """The mean lateness the model adds to a workload's waits (the profile's sleep lateness,
    or its precise wait's for a workload that spins), by (wait_spin_s, mean wait)."""
    from zsim import profile as profile_module
    from zsim.build import model_params

    params = model_params(profile_module.load(scenario.profile, scenario.base_dir))

    def late(wait_spin_s: float, mean_wait_s: float) -> float:
        dist = params.wait_lateness(wait_spin_s, mean_wait_s)
        return dist.expected() if dist is not None else 0.0

    return late


def build_plans(scenario: Scenario, endpoints: EndpointMap, seed: int, results_dir: str, horizon_s: float | None,
                hard_limit_s: float) -> dict[str, dict[str, Any]]:
    """One JSON-able plan per process."""
    send_index = {send.name: i for i, send in enumerate(scenario.sends)}
    recv_index = {recv.name: i for i, recv in enumerate(scenario.recvs)}
    multipart = any(send.parts > 1 for send in scenario.sends)
    by_name = {s.name: s for s in scenario.sockets}
    host_of = {proc.name: proc.host for proc in scenario.processes}
    plans: dict[str, dict[str, Any]] = {}
    if scenario.apps:
        raise ScenarioError(f"app[{scenario.apps[0].name}]",
                            "the real-pyzmq harness runs the scenario's [[send]]/[[recv]] workloads only, not SimPy app code "
                            "(simulation only)")
    check_calls(scenario)
    check_deployment(scenario)
    cpus = real_cpus(scenario)
    late = _expected_wait_lateness(scenario)
    # a host that crashes takes its processes with it (SIGKILL) once its links are cut, so that
    # the kernel's FIN or RST for their sockets reaches no peer (HOST_CRASH_KILL_AFTER_S)
    host_crash = {fault.hosts[0]: (fault.at_s or 0.0) + HOST_CRASH_KILL_AFTER_S
                  for fault in scenario.faults if fault.kind == "host_crash"}
    for proc in scenario.processes:
        if proc.restart_at_s is not None:
            raise ScenarioError(f"process[{proc.name}].restart_at_s",
                                "the real-pyzmq harness does not restart crashed processes (simulation only)")
        crash_at = proc.crash_at_s
        if proc.host in host_crash:
            crash_at = min(crash_at, host_crash[proc.host]) if crash_at is not None else host_crash[proc.host]
        plans[proc.name] = {
            "process": proc.name,
            "scenario": scenario.name,
            "seed": seed,
            "results_dir": results_dir,
            "horizon_s": horizon_s,
            "hard_limit_s": hard_limit_s,
            "exit_at_s": proc.exit_at_s,
            "exit_after_sends": proc.exit_after_sends,
            "crash_at_s": crash_at,
            "io_threads": proc.io_threads,
            "cpus": cpus.get(proc.name),
            "sockets": [],
            "sends": [],
            "recvs": [],
            "proxies": [],
        }
    calls_of: dict[str, list[tuple[int, spec.CallSpec]]] = {}
    for order, call in enumerate(scenario.calls):
        calls_of.setdefault(call.socket, []).append((order, call))
    for sock in scenario.sockets:
        opts = sock.options
        plans[sock.process]["sockets"].append({
            "name": sock.name,
            "type": sock.type,
            "bind": [endpoints.real(e) for e in sock.bind],
            "connect": [endpoints.real(e, host_of[sock.process]) for e in sock.connect],
            "open_at_s": sock.open_at_s,
            "close_at_s": sock.close_at_s,
            "routing_id": sock.routing_id,
            "multipart": multipart or TYPES[sock.type].prepends_identity,
            "options": {
                "sndhwm": opts.sndhwm, "rcvhwm": opts.rcvhwm, "linger": opts.linger,
                "sndtimeo": opts.sndtimeo, "rcvtimeo": opts.rcvtimeo, "subscribe": list(opts.subscribe),
                "immediate": opts.immediate, "conflate": opts.conflate, "router_mandatory": opts.router_mandatory,
                "xpub_nodrop": opts.xpub_nodrop, "sndbuf": opts.sndbuf, "rcvbuf": opts.rcvbuf,
                "reconnect_ivl": opts.reconnect_ivl, "reconnect_ivl_max": opts.reconnect_ivl_max,
                "xpub_verbose": opts.xpub_verbose, "xpub_verboser": opts.xpub_verboser, "xpub_manual": opts.xpub_manual,
                "invert_matching": opts.invert_matching, "router_handover": opts.router_handover,
                "probe_router": opts.probe_router, "connect_routing_id": opts.connect_routing_id,
                "req_relaxed": opts.req_relaxed, "req_correlate": opts.req_correlate,
                **{name: getattr(opts, name) for name in LIVENESS_OPTIONS},
            },
            "calls": _call_plans(calls_of.get(sock.name, []), endpoints, host_of[sock.process]),
        })
    for send in scenario.sends:
        sock = by_name[send.socket]
        plans[sock.process]["sends"].append({
            "index": send_index[send.name],
            "name": send.name,
            "socket": send.socket,
            "socket_type": sock.type,
            "count": send.count,
            "duration_s": send.duration_s,
            "start_s": scenario.starts_at(send),
            "streams": send.streams,
            "interval": send.interval.to_raw(),
            "size": send.size.to_raw(),
            "topics": list(send.topics),
            "parts": send.parts,
            "dontwait": scenario.never_waits(send),
            "on_again": send.on_again,
            "on_timeout": send.on_timeout,
            "pacing": send.pacing,
            "to": list(send.to),
            "loop_cpu_s": send.loop_cpu_s,
            "wait_spin_s": send.wait_spin_s,
            # how late this machine wakes each of its waits, by the profile (the model adds
            # as much): part of the program's own pace, not a disturbance of the run
            "expected_late_s": late(send.wait_spin_s, send.interval.expected()),
        })
    # how many frames each sending workload's messages have (build_frames: its parts, at
    # least one), so that a receiver can tell the envelope from the body
    body_frames = {f"s{send_index[send.name]}": max(1, send.parts) for send in scenario.sends}
    for recv in scenario.recvs:
        sock = by_name[recv.socket]
        plans[sock.process]["recvs"].append({
            "index": recv_index[recv.name],
            "name": recv.name,
            "socket": recv.socket,
            "socket_type": sock.type,
            "streams": recv.streams,
            "service": recv.service.to_raw(),
            "start_s": scenario.starts_at(recv),
            "count": recv.count,
            "duration_s": recv.duration_s,
            "reply": recv.reply,
            "reply_size": recv.reply_size.to_raw() if recv.reply_size is not None else None,
            "pause_every": recv.pause_every.to_raw() if recv.pause_every is not None else None,
            "pause": recv.pause.to_raw() if recv.pause is not None else None,
            "on_timeout": recv.on_timeout,
            "forward_to": recv.forward_to,
            "busy": recv.busy,
            "body_frames": body_frames,
            "loop_cpu_s": recv.loop_cpu_s,
            "wait_spin_s": recv.wait_spin_s,
        })
    for proxy in scenario.proxies:
        front, back = by_name[proxy.frontend], by_name[proxy.backend]
        sides: dict[str, str] = {}
        # which proxy socket a message of each workload comes in through (for counting
        # per direction what zmq.proxy forwarded)
        for send in scenario.sends:
            origin = by_name[send.socket]
            for side, member in (("front", front), ("back", back)):
                if _connected(origin, member):
                    sides[f"s{send_index[send.name]}"] = side
        for recv in scenario.recvs:
            origin = by_name[recv.socket]
            for side, member in (("front", front), ("back", back)):
                if _connected(origin, member):
                    sides[f"r{recv_index[recv.name]}"] = side
        plans[front.process]["proxies"].append({
            "name": proxy.name,
            "frontend": proxy.frontend,
            "backend": proxy.backend,
            "sides": sides,
        })
    return plans


def _call_plans(calls: list[tuple[int, spec.CallSpec]], endpoints: EndpointMap, host: str) -> list[dict[str, Any]]:
    """A socket's [[call]]s as its thread makes them (``validation.child.CallTimeline``):
    real endpoints (a bind or unbind as the socket binds, a connect or disconnect as it
    connects from its host), options by pyzmq's names in the table's order, prefixes; each
    with its place among the scenario's calls (``order``: calls at one time go in file order)."""
    plans = []
    for order, call in calls:
        binding = call.action in ("bind", "unbind")
        plans.append({
            "label": call.label,
            "at_s": call.at_s,
            "order": order,
            "action": call.action,
            "endpoints": [endpoints.real(e) if binding else endpoints.real(e, host) for e in call.endpoints],
            "options": [[name, value] for name, value in call.options],
            "prefixes": list(call.prefixes),
        })
    return plans


def real_cpus(scenario: Scenario, available: set[int] | None = None) -> dict[str, list[int] | None]:
    """Per process, the CPUs its child is pinned to (``os.sched_setaffinity``), or None.

    ``[machine] cores = N`` runs the whole scenario on the first N CPUs this harness may
    use, so that its threads compete for N cores as the model's do; a process's
    ``affinity`` picks among those N (core k is the k-th of them). Without ``cores`` (or
    with 0) nothing is pinned except processes with an ``affinity``, pinned to those CPUs.
    """
    usable = sorted(available if available is not None else os.sched_getaffinity(0))
    if scenario.hosts:
        return _host_cpus(scenario, usable)
    cores = scenario.machine.cores or 0
    if cores > len(usable):
        raise ScenarioError("machine.cores", f"the real harness runs on this machine's CPUs, and it may use {len(usable)} "
                                             f"({', '.join(map(str, usable))}), not {cores}")
    machine = usable[:cores] if cores else usable
    found: dict[str, list[int] | None] = {}
    for proc in scenario.processes:
        if proc.affinity is None:
            found[proc.name] = list(machine) if cores else None
            continue
        for index, core in enumerate(proc.affinity):
            if core >= len(machine):
                raise ScenarioError(f"process[{proc.name}].affinity[{index}]",
                                    f"core {core} does not exist here: the real harness may use {len(machine)} CPUs")
        found[proc.name] = [machine[core] for core in proc.affinity]
    return found


def host_slices(scenario: Scenario, usable: list[int]) -> dict[str, list[int]] | None:
    """With [[host]]s: the CPUs of this machine each host gets to itself (its cores as the
    model counts them, ``zsim.build.host_cores``, taken in turn from ``usable``), or None when
    they do not fit (a host without a core count, or more cores in all than there are here):
    then the hosts share this machine's CPUs, which only a CPU-bound result shows."""
    from zsim.build import host_cores, host_params

    cores = host_cores(scenario, host_params(scenario))
    if any(count <= 0 for count in cores.values()) or sum(cores.values()) > len(usable):
        return None
    slices: dict[str, list[int]] = {}
    taken = 0
    for host in sorted(cores):
        slices[host] = usable[taken:taken + cores[host]]
        taken += cores[host]
    return slices


def _host_cpus(scenario: Scenario, usable: list[int]) -> dict[str, list[int] | None]:
    """``real_cpus`` with [[host]]s: each process on its host's CPUs (``host_slices``), a
    process's ``affinity`` picking among them; when the hosts share this machine, a process
    with an ``affinity`` is pinned to those CPUs of this machine (so core 0 of two hosts is
    one real CPU: the run's note says the hosts share) and the others are not pinned."""
    slices = host_slices(scenario, usable)
    found: dict[str, list[int] | None] = {}
    for proc in scenario.processes:
        machine = slices[proc.host] if slices is not None else usable
        if proc.affinity is None:
            found[proc.name] = list(machine) if slices is not None else None
            continue
        for index, core in enumerate(proc.affinity):
            if core >= len(machine):
                raise ScenarioError(f"process[{proc.name}].affinity[{index}]",
                                    f"core {core} does not exist here: the real harness may use {len(machine)} CPUs for "
                                    f"host {proc.host or 'default'!r}")
        found[proc.name] = [machine[core] for core in proc.affinity]
    return found


def check_calls(scenario: Scenario) -> None:
    """The [[call]]s the harness cannot make, refused in one line: those on a [[proxy]]'s
    sockets. zmq_proxy owns both sockets in its thread until it returns; stopping it
    (TERMINATE), making the call and starting zmq.proxy_steerable again left the restarted
    proxy deaf to its sockets in about half the runs tried (pyzmq 27.3, libzmq 4.3.5)."""
    proxied = {name for proxy in scenario.proxies for name in (proxy.frontend, proxy.backend)}
    for call in scenario.calls:
        if call.socket in proxied:
            raise ScenarioError(f"{call.label} (socket {call.socket})",
                                "the real-pyzmq harness runs a [[proxy]] as zmq.proxy_steerable, which holds its sockets' thread: "
                                "it makes no [[call]]s on them (simulation and zsim export only)")


def check_deployment(scenario: Scenario) -> None:
    """What the real harness cannot build of a deployment, refused in one line: more hosts
    and switches than ``MAX_VALIDATE_HOSTS`` or links than ``MAX_VALIDATE_LINKS``; it makes a
    link's rate, MTU and queue, each direction's own (``validation.netns``: tbf; a switch's
    end is its port), not its delay or its loss, and every host is this machine (no host
    with a profile of its own)."""
    from zsim import profile as profile_module

    check_deployment_size(scenario)

    machine = profile_module.load(scenario.profile, scenario.base_dir)
    for host in scenario.hosts:
        # the same machine however it is named (no name, "default", one file by two paths)
        own = profile_module.load(host.profile, scenario.base_dir, f"host[{host.name}].profile") if host.profile is not None else machine
        if (own.name, own.source) != (machine.name, machine.source):
            raise ScenarioError(f"host[{host.name}].profile", "the real harness runs every host on this machine: a host that is "
                                                              "another kind of machine cannot be validated here (give it the "
                                                              "scenario's profile)")
    switches = {switch.name for switch in scenario.switches}
    for fault in scenario.faults:
        if fault.kind == "host_crash" and (fault.random or (scenario.until_s is not None and fault.at_s is not None
                                                            and fault.duration_s is not None
                                                            and fault.at_s + fault.duration_s < scenario.until_s)):
            raise ScenarioError(f"fault[{fault.name}].duration_s", "the real harness does not restart a crashed host's processes: "
                                                                   "validate a host that stays down until the run ends "
                                                                   "(at_s + duration_s >= scenario.until_s)")
        if fault.kind == "loss":
            raise ScenarioError(f"fault[{fault.name}].kind", "the real harness cannot lose packets at a probability (this kernel has "
                                                             "no netem): validate link_down and partition faults")
        for link in fault.links_cut(scenario.links):
            if not switches.intersection(link.hosts):
                raise ScenarioError(f"fault[{fault.name}]", f"cuts link {link.name!r}, which joins two hosts directly: the real harness "
                                                            "cuts a link silently at a [[switch]]'s end (a blackhole there; setting a "
                                                            "host's own interface down is another fault, its kernel sees it), so put a "
                                                            "switch between them")
    for link in scenario.links:
        forward = link.forward
        for way, prefix in ((forward, f"link[{link.name}]"), (link.backward, f"link[{link.name}].reverse")):
            if way is not forward and way.queue_bytes == forward.queue_bytes and way.latency_s == forward.latency_s \
                    and way.loss == forward.loss:
                continue  # the way back's fields are the forward ones, checked under their own names
            if way.queue_bytes > TBF_MAX_LIMIT_BYTES:
                raise ScenarioError(f"{prefix}.queue_bytes", f"the real harness's tbf holds at most {TBF_MAX_LIMIT_BYTES:,} "
                                                             f"bytes a queue, not {way.queue_bytes:,}")
            for name, value in (("latency_s", way.latency_s), ("loss", way.loss)):
                if value > 0:
                    raise ScenarioError(f"{prefix}.{name}",
                                        f"the real harness emulates a link's rate, MTU and queue with tbf, not its delay or loss "
                                        f"(no netem): validate the deployment with {name} = 0 (docs/validation.md, \"Links\")")


def check_deployment_size(scenario: Scenario) -> None:
    """At most ``MAX_VALIDATE_HOSTS`` namespaces (hosts and switches) and ``MAX_VALIDATE_LINKS``
    veth pairs per run, refused in one line naming the first host, switch or link beyond the
    bound (counted from the file: nothing is built or run before)."""
    if not scenario.hosts:
        return
    default = any(proc.host == "" for proc in scenario.processes)
    hosts = len(scenario.hosts) + default
    nodes = [("host", host.name) for host in scenario.hosts] + [("switch", switch.name) for switch in scenario.switches]
    if hosts + len(scenario.switches) > MAX_VALIDATE_HOSTS:
        kind, beyond = nodes[MAX_VALIDATE_HOSTS - default]
        counted = f"{hosts:,} hosts{' (the default host included)' if default else ''}"
        if scenario.switches:
            counted += f" and {len(scenario.switches):,} switches"
        raise ScenarioError(f"{kind}[{beyond}]", f"the deployment has {counted}; zsim validate builds at most {MAX_VALIDATE_HOSTS} "
                                                 "(a network namespace each, every run; validation.harness.MAX_VALIDATE_HOSTS): "
                                                 "validate a smaller deployment")
    if len(scenario.links) > MAX_VALIDATE_LINKS:
        beyond = scenario.links[MAX_VALIDATE_LINKS].name
        raise ScenarioError(f"link[{beyond}]", f"the deployment has {len(scenario.links):,} links; zsim validate builds at most "
                                               f"{MAX_VALIDATE_LINKS} (a shaped veth pair each, every run; "
                                               "validation.harness.MAX_VALIDATE_LINKS): validate a smaller deployment")


def remove_dead_folders(directory: str | None = None) -> list[str]:
    """Remove the temporary folders of runs that are gone (``zsim-val-<pid>s<start>-...`` in
    ``directory``, the temporary folder by default, whose process is not running, or runs
    with another start time: a reused pid) and return them. Only this user's own folders,
    never through a symbolic link; an older zsim's (no pid in the name) are left alone."""
    directory = directory if directory is not None else tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for name in entries:
        owner = _TMP_NAME.match(name)
        if owner is None or netns.owner_alive(int(owner.group(1)), int(owner.group(2))):
            continue
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        # a world-writable /tmp: anyone may plant the name; only what this user made is removed
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        shutil.rmtree(path, ignore_errors=True)  # does not follow links inside (fd-based on Linux)
        removed.append(path)
    return removed


# --------------------------------------------------------------------------------------
# Children


class _Child:
    def __init__(self, name: str, plan_path: Path, log_path: Path, prefix: Callable[[list[str]], list[str]] | None = None) -> None:
        self.name = name
        self.log = open(log_path, "wb")
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        argv = [sys.executable, "-m", "validation.child", str(plan_path)]
        self.proc = subprocess.Popen(
            prefix(argv) if prefix is not None else argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            start_new_session=True, env=env, cwd=root,
        )
        self.buffer = b""
        self.ready = False
        self.done = False
        self.status: dict[str, Any] = {}
        self.messages: list[dict[str, Any]] = []

    def send(self, line: str) -> None:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("ready"):
                self.ready = True
            if message.get("hb") is not None:
                self.status = message["hb"]
            if message.get("done"):
                self.done = True
                self.status = message.get("hb", self.status)

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(Exception):
            self.log.close()

    def stderr_tail(self, path: Path, limit: int = 2000) -> str:
        with contextlib.suppress(OSError):
            text = path.read_text(errors="replace")
            return text[-limit:]
        return ""


def run_real(scenario: Scenario | str | Path | Mapping[str, Any], seed: int = 0, *, timeout_s: float | None = None,
             keep_dir: str | None = None, samples: dict[str, np.ndarray] | None = None) -> RunSummary:
    """Run ``scenario`` once on real pyzmq; return the summary dict (see the module doc).

    ``samples``, if given, receives the per-message samples: ``latency`` (every delivery
    with a timestamp), ``latency.<socket>`` and ``rtt.<sender>`` (seconds).

    Raises ``ScenarioError`` for a scenario the harness cannot run and ``RealRunError`` when
    the run itself failed (a child did not start, crashed with an error, the results are
    missing). A run that hit its time limit returns with ``"timed_out": True``.
    """
    scen = scenario if isinstance(scenario, Scenario) else spec.load(scenario)  # type: ignore[arg-type]
    settings = real_defaults(scen)
    limit = float(timeout_s) if timeout_s is not None else settings["timeout_s"]
    horizon = scen.until_s
    if horizon is not None and horizon + 1.0 > limit:
        limit = horizon + 1.0
    started = _pc()
    check_deployment(scen)
    # SIGINT, SIGTERM and SIGHUP stop the run at its checks (interrupts.check: every turn of
    # pump's wait, before every ip/tc command) and never the finally that removes what it
    # made; one noted after the last check is raised when the shield ends
    with interrupts.shielded():
        tmpdir: str | None = None
        children: dict[str, _Child] = {}
        network = contextlib.ExitStack()
        try:
            remove_dead_folders()
            tmpdir = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{netns.run_tag()}-")
            deployment = network.enter_context(_deployment(scen)) if scen.hosts else None
            endpoints = EndpointMap.allocate(scen, tmpdir, deployment.address if deployment is not None else None)
            results_dir = Path(tmpdir) / "results"
            results_dir.mkdir()
            plans = build_plans(scen, endpoints, seed, str(results_dir), horizon, limit)
            host_of = {proc.name: proc.host for proc in scen.processes}
            for name, plan in plans.items():
                plan_path = Path(tmpdir) / f"plan-{name}.json"
                plan_path.write_text(json.dumps(plan))
                prefix = functools.partial(deployment.argv, host_of[name]) if deployment is not None else None
                children[name] = _Child(name, plan_path, Path(tmpdir) / f"stderr-{name}.txt", prefix)
            selector = selectors.DefaultSelector()
            for child in children.values():
                assert child.proc.stdout is not None
                os.set_blocking(child.proc.stdout.fileno(), False)
                selector.register(child.proc.stdout, selectors.EVENT_READ, child)

            def pump(timeout: float) -> None:
                interrupts.check()  # a stopping signal ends the run here, every turn of the wait loops
                for key, _ in selector.select(timeout):
                    child = key.data
                    try:
                        data = key.fileobj.read()  # type: ignore[union-attr]
                    except (BlockingIOError, ValueError):
                        continue
                    if not data:
                        with contextlib.suppress(Exception):
                            selector.unregister(key.fileobj)
                        continue
                    child.feed(data)

            # 1. everyone ready (imports done, context made)
            ready_deadline = _pc() + 30.0 + 2.0 * len(children)
            while not all(c.ready for c in children.values()):
                pump(0.05)
                for child in children.values():
                    if child.proc.poll() is not None and not child.ready:
                        raise RealRunError(f"process {child.name} died while starting:\n"
                                           f"{child.stderr_tail(Path(tmpdir) / f'stderr-{child.name}.txt')}")
                if _pc() > ready_deadline:
                    raise RealRunError("processes did not start within "
                                       f"{ready_deadline - started:.0f} s: {[c.name for c in children.values() if not c.ready]}")
            # 2. a common time origin
            t0 = _pc() + START_MARGIN_S
            for child in children.values():
                child.send(f"t0 {t0!r}")
            # the faults' cuts and repairs, at the times the model draws for this seed
            cuts = _fault_plan(scen, seed, horizon)
            cut_at: dict[str, list[list[float]]] = {}
            cut_links: dict[tuple[str, str], int] = {}
            last_event = _last_timeline_s(scen)
            quiet = settings["quiet_s"]
            timed_out = False
            stop_sent = False
            end_reason = "horizon" if horizon is not None else "quiet"
            hard_deadline = t0 + limit
            while True:
                due = t0 + cuts[0][0] - _pc() if cuts else 0.02
                pump(min(0.02, max(0.0, due)))
                while cuts and deployment is not None and _pc() >= t0 + cuts[0][0]:
                    _at, restore, fault_name, ends = cuts.pop(0)
                    for a, b in ends:
                        # two faults over one link at once: cut by the first, restored by the last
                        held = cut_links.get((a, b), 0) + (-1 if restore else 1)
                        cut_links[(a, b)] = held
                        if held == (0 if restore else 1):
                            deployment.cut(a, b, restore=restore)
                    if restore:
                        cut_at[fault_name][-1].append(_pc() - t0)
                    else:
                        cut_at.setdefault(fault_name, []).append([_pc() - t0])
                now = _pc()
                alive = [c for c in children.values() if not c.done and c.proc.poll() is None]
                if not alive:
                    break
                if now > hard_deadline + RESULT_GRACE_S:
                    timed_out = True
                    break
                if stop_sent:
                    continue
                if now > hard_deadline:
                    timed_out = horizon is None
                    end_reason = "timeout"
                    for child in alive:
                        child.send("stop")
                    stop_sent = True
                    continue
                if horizon is None and now - t0 > last_event:
                    statuses = [c.status for c in children.values()]
                    if statuses and all(s.get("senders_done") for s in statuses):
                        last_activity = max((s.get("activity", 0.0) for s in statuses), default=0.0)
                        busy = any(s.get("busy") for s in statuses)
                        if not busy and now - t0 - last_activity > quiet:
                            for child in alive:
                                child.send("stop")
                            stop_sent = True
            wall = _pc() - started
            child_results: dict[str, dict[str, Any]] = {}
            failures = []
            for name, child in children.items():
                path = results_dir / f"{name}.json"
                if path.exists():
                    with contextlib.suppress(ValueError):
                        child_results[name] = json.loads(path.read_text())
                if name not in child_results:
                    failures.append(f"process {name}: no results (exit code {child.proc.poll()})\n"
                                    f"{child.stderr_tail(Path(tmpdir) / f'stderr-{name}.txt')}")
            if failures:
                raise RealRunError("\n".join(failures))
            summary = merge_results(scen, child_results, results_dir, seed=seed, wall_s=wall, t0=t0, samples=samples)
            if deployment is not None:
                summary["network"] = link_counters(scen, deployment)
                if host_slices(scen, sorted(os.sched_getaffinity(0))) is None:
                    summary["real"]["notes"] = [f"the hosts share this machine's {len(os.sched_getaffinity(0))} CPUs (the model gives "
                                                "each its own cores): a CPU-bound result differs"]
            summary["real"]["end_reason"] = end_reason
            if cut_at:
                # when the harness cut and restored each fault's links, from the common origin
                summary["real"]["faults"] = cut_at
            summary["real"]["endpoints"] = {f"{k[0]}://{k[1]}": v for k, v in endpoints.mapping.items()}
            summary["timed_out"] = timed_out
            if timed_out:
                summary["ok"] = False
            if keep_dir:
                shutil.copytree(tmpdir, keep_dir, dirs_exist_ok=True)
            return summary
        finally:
            for child in children.values():
                child.kill()
            network.close()  # the namespaces, their links and qdiscs (after the processes in them)
            if tmpdir is not None:
                shutil.rmtree(tmpdir, ignore_errors=True)


@contextlib.contextmanager
def _deployment(scenario: Scenario) -> Iterator[netns.Deployment]:
    """The scenario's hosts as network namespaces joined by its links (``validation.netns``):
    one namespace per host that runs a process (the default host too) and per switch, one
    shaped veth pair per link, host routes along zsim's routes through switches; removed on
    exit. A machine that cannot make them: ``RealRunError``, one line."""
    used = {proc.host for proc in scenario.processes}
    hosts = [""] if "" in used else []
    hosts += [host.name for host in scenario.hosts]
    # each end's tbf shapes the direction it sends: hosts[0]'s the link's own fields, hosts[1]'s its reverse
    links = [(*link.hosts, netns.LinkSpec(rate_bps=link.bandwidth_bps, queue_bytes=link.queue_bytes, mtu_bytes=link.mtu_bytes,
                                          reverse_rate_bps=link.backward.bandwidth_bps, reverse_queue_bytes=link.backward.queue_bytes))
             for link in scenario.links]
    switches = [switch.name for switch in scenario.switches]
    try:
        with netns.deployment(hosts, links, switches, _routes(scenario, hosts)) as made:
            yield made
    except netns.LinkUnavailable as exc:
        raise RealRunError(f"cannot build the scenario's hosts and links: {exc}") from None


def _routes(scenario: Scenario, hosts: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """The nodes from each host to each other host that a route through [[switch]]es joins
    (``zsim.spec.route``, as the model routes them): the namespaces' host routes. Pairs
    with no route are left out (no connect between them passed ``zsim.spec``'s checks)."""
    switches = {switch.name for switch in scenario.switches}
    if not switches:
        return {}
    found: dict[tuple[str, str], list[str]] = {}
    for first, last in itertools.combinations(hosts, 2):
        try:
            hops = spec.route(scenario.links, switches, first, last)
        except spec.RouteError:
            continue
        nodes = [first]
        for link, forward in hops:
            nodes.append(link.hosts[1] if forward else link.hosts[0])
        found[(first, last)] = nodes
    return found


def _fault_plan(scenario: Scenario, seed: int, horizon: float | None) -> list[tuple[float, bool, str, list[tuple[str, str]]]]:
    """The [[fault]]s as the harness carries them out: (seconds from the origin, whether it is
    the repair, the fault's name, the links' ends), in time order; the intervals are the ones
    the model draws for ``seed`` (``FaultSpec.intervals`` with ``zsim.build.stream_factory``)."""
    from zsim.build import stream_factory

    streams = stream_factory(seed)
    plan: list[tuple[float, bool, str, list[tuple[str, str]]]] = []
    for fault in scenario.faults:
        ends = [link.hosts for link in fault.links_cut(scenario.links)]
        for start, end in fault.intervals(streams, horizon):
            plan += [(start, False, fault.name, ends), (end, True, fault.name, ends)]
    return sorted(plan, key=lambda entry: (entry[0], entry[1]))


def link_counters(scenario: Scenario, deployment: netns.Deployment) -> dict[str, dict[str, dict[str, Any]]]:
    """Per link direction, what its qdisc counted over the run (``tc -s qdisc``), by the
    names of ``zsim run``'s ``network`` table: ``packets`` (every IP packet, ACKs included),
    ``wire_bytes`` (as tbf counts: IP packets plus the Ethernet header), ``bytes`` (TCP
    payload: less 66 bytes a packet, IPv4 + TCP + timestamps + Ethernet) and ``queue_drops``
    (tbf's queue overflowing). Counted until the processes left, linger included."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for link in scenario.links:
        directions: dict[str, dict[str, Any]] = {}
        for a, b in (link.hosts, tuple(reversed(link.hosts))):
            stats = deployment.qdisc_stats(a, b)
            directions[f"{a}->{b}"] = {
                "packets": stats["packets"],
                "wire_bytes": stats["bytes"],
                "bytes": max(0, stats["bytes"] - PACKET_HEADER_BYTES * stats["packets"]),
                "queue_drops": stats["drops"],
            }
        found[link.name] = directions
    return found


# --------------------------------------------------------------------------------------
# Results


def _origin_name(scenario: Scenario, origin: str) -> str:
    """``s3`` -> the name of [[send]] number 3; ``r1`` -> replies of [[recv]] number 1."""
    kind, number = origin[0], int(origin[1:])
    if kind == "s" and number < len(scenario.sends):
        return scenario.sends[number].name
    if kind == "r" and number < len(scenario.recvs):
        return f"{scenario.recvs[number].name} (replies)"
    return origin


def causal_times(scenario: Scenario, socket: str, rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A socket's request -> reply and end-to-end times from its causal records (rows of
    ``child._causal_copy``: root [[send]] index, seconds since the root's send, end flag), as
    ``zsim.results.causal_times`` makes them from the ledger: a caused message whose root was
    sent from this socket is a round trip (``rtt``), one whose root came from another socket
    and that caused nothing further is an end-to-end time from that socket (``e2e``, by the
    root's socket name), each in delivery order."""
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 3)
    origin_of = [send.socket for send in scenario.sends]
    origins = [origin_of[int(i)] if 0 <= int(i) < len(origin_of) else None for i in rows[:, 0]]
    back = np.array([origin == socket for origin in origins], dtype=bool)
    rtt = rows[back, 1]
    e2e: dict[str, np.ndarray] = {}
    ends = rows[:, 2] > 0
    for name in dict.fromkeys(o for o in origins if o is not None and o != socket):
        mask = np.array([origin == name for origin in origins], dtype=bool) & ends
        if mask.any():
            e2e[name] = rows[mask, 1]
    # in the order of the scenario's sockets, as the simulator lists its sources
    order = {s.name: i for i, s in enumerate(scenario.sockets)}
    return rtt, dict(sorted(e2e.items(), key=lambda item: order.get(item[0], len(order))))


def count_runs(runs: list[list[int]]) -> int:
    """How many indices a list of [first, last] runs holds."""
    return sum(last - first + 1 for first, last in runs)


def merge_results(scenario: Scenario, results: dict[str, dict[str, Any]], results_dir: Path, *, seed: int,
                  wall_s: float, t0: float, samples: dict[str, np.ndarray] | None = None) -> RunSummary:
    """Child results -> one summary of the simulator's shape (``zsim.summary.RunSummary``, what
    ``zsim run --json`` prints), with what the harness cannot observe as None."""
    import zmq

    sockets: dict[str, SocketSummary] = {}
    latency_all: list[np.ndarray] = []
    indices: dict[str, Any] = {}
    unstamped: dict[str, int] = {}
    errors: list[str] = []
    end_s = 0.0
    socket_stats: dict[str, dict[str, Any]] = {}
    for result in results.values():
        socket_stats.update(result["sockets"])
        errors.extend(f"{result['process']}: {e}" for e in result.get("errors", []))
        end_s = max(end_s, result.get("snapshot_s") or 0.0)
    for sock in scenario.sockets:
        stats = socket_stats.get(sock.name, {})
        entry: SocketSummary = {
            "type": sock.type,
            "process": sock.process,
            "sent": stats.get("sent", 0),
            "send_again": stats.get("send_again", 0),
            "send_unroutable": stats.get("send_unroutable", 0),
            "received": stats.get("received", 0),
            "recv_again": stats.get("recv_again", 0),
            "dropped": None,
            "discarded": None,
            "lost_on_close": None,
            "blocked_s": stats.get("blocked_s", 0.0),
            "blocked_count": stats.get("blocked_count", 0),
            "first_recv_s": stats.get("first_recv_s"),
            "last_recv_s": stats.get("last_recv_s"),
            "first_sent_s": stats.get("first_sent_s"),
            "opened": stats.get("opened", False),
        }
        lat_path = results_dir / f"latency-{sock.name}.npy"
        if lat_path.exists():
            lat = np.load(lat_path)
            if len(lat):
                entry["latency_s"] = percentiles(lat)
                latency_all.append(lat)
                if samples is not None:
                    samples[f"latency.{sock.name}"] = lat
        causal_path = results_dir / f"causal-{sock.name}.npy"
        if causal_path.exists():
            rtt, e2e = causal_times(scenario, sock.name, np.load(causal_path))
            if len(rtt):
                entry["rtt_s"] = percentiles(rtt)
            if e2e:
                entry["e2e_s"] = {source: percentiles(times) for source, times in e2e.items()}
        if stats.get("causal_unstamped"):
            unstamped[sock.name] = int(stats["causal_unstamped"])
        if stats.get("indices"):
            indices[sock.name] = {_origin_name(scenario, origin): runs for origin, runs in stats["indices"].items()}
        sockets[sock.name] = entry
    senders: dict[str, SenderSummary] = {}
    receivers: dict[str, ReceiverSummary] = {}
    proxies: dict[str, ProxySummary] = {}
    processes: dict[str, ProcessSummary] = {}
    schedules: dict[str, Any] = {}
    send_specs = {send.name: send for send in scenario.sends}
    for result in results.values():
        for name, sender in result["senders"].items():
            # requested against achieved rate, as the simulator reports them: a sender still
            # running when its process took its counters (until_s, a crash) was active until then
            send = send_specs[name]
            end = sender.get("finished_at_s")
            sender_entry: SenderSummary = {
                "socket": sender["socket"], "attempts": sender["attempts"], "sent": sender["sent"],
                "again": sender["again"], "unroutable": sender["unroutable"],
                **sender_rates(sender["sent"], send.interval.expected(), scenario.starts_at(send),
                               end if end is not None else result.get("snapshot_s")),
            }
            if end is not None:
                sender_entry["finished_at_s"] = end
            rtt_path = results_dir / f"rtt-{name}.npy"
            if rtt_path.exists():
                rtt = np.load(rtt_path)
                if len(rtt):
                    sender_entry["rtt_s"] = percentiles(rtt)
                    if samples is not None:
                        samples[f"rtt.{name}"] = rtt
            senders[name] = sender_entry
            schedules[name] = sender.get("schedule")
        for name, receiver in result["receivers"].items():
            receivers[name] = {"socket": receiver["socket"], "received": receiver["received"], "paused_s": receiver["paused_s"]}
        for name, proxy in result["proxies"].items():
            proxies[name] = {"frontend": proxy["frontend"], "backend": proxy["backend"], "forwarded": proxy["forwarded"]}
        processes[result["process"]] = {
            "exit_started_s": result.get("exit_started_s"),
            "exit_completed_s": result.get("exit_completed_s"),
            "term_blocked": bool(result.get("term_blocked")),
            "crashed_s": result.get("crashed_s"),
            "cpu_s": result.get("cpu_s"),
            "io_cpu_s": result.get("io_cpu_s"),
        }
    # keep the scenario's order
    senders = {s.name: senders[s.name] for s in scenario.sends if s.name in senders}
    receivers = {r.name: receivers[r.name] for r in scenario.recvs if r.name in receivers}
    latency = np.concatenate(latency_all) if latency_all else np.zeros(0)
    if samples is not None:
        samples["latency"] = latency
    lateness_all = [np.load(path) for path in sorted(results_dir.glob("lateness-*.npy"))]
    lateness = np.concatenate(lateness_all) if lateness_all else np.zeros(0)
    send_calls = sum(r.get("send_calls", 0) for r in results.values())
    send_time = sum(r.get("send_call_time_s", 0.0) for r in results.values())
    sent_total = sum(e["sent"] for e in senders.values()) + sum(
        result.get("replies_sent", 0) for result in results.values())
    delivered = sum(r["received"] for r in receivers.values()) + sum(
        result.get("replies_received", 0) for result in results.values())
    forwarded = sum(p["forwarded"] for p in proxies.values())
    ledger: LedgerSummary = {
        "sent": sent_total,
        "copies": None,
        "delivered": delivered,
        "forwarded": forwarded,
        "dropped": None,
        "discarded": None,
        "lost_on_close": None,
        "queued_at_end": None,
        "dropped_by_rule": None,
        "discarded_by_rule": None,
        "lost_by_rule": None,
        "queued_by_place": None,
    }
    summary: RunSummary = {
        "ok": not errors,
        "mode": "real",
        "scenario": scenario.name,
        "scenario_digest": scenario.digest,
        "source": scenario.source,
        "seed": seed,
        "profile": None,
        "sim_time_s": end_s,
        "wall_s": wall_s,
        "ledger": ledger,
        "latency_s": percentiles(latency),
        "sockets": sockets,
        "pipes": [],
        "links": [],
        "senders": senders,
        "receivers": receivers,
        "proxies": proxies,
        "processes": processes,
        "versions": {
            "pyzmq": zmq.__version__,
            "libzmq": zmq.zmq_version(),
            "python": platform.python_version(),
        },
        "real": {
            "indices": indices,
            "errors": errors,
            "last_activity_s": max((r.get("last_activity_s") or 0.0) for r in results.values()) if results else 0.0,
            "latency_samples": int(len(latency)),
            # per socket: replies and results received without their root's stamp (a frame
            # under child.CAUSED_SIZE bytes): no request -> reply or end-to-end time from them
            "causal_unstamped": unstamped,
            # how the harness itself behaved: lateness of timed waits and the mean cost of a
            # send call that did not block, measured during this run
            "wait_lateness_s": percentiles(lateness),
            "send_call_s": (send_time / send_calls) if send_calls else None,
            # per sender: how far it fell behind its own schedule (child.SendTask.schedule)
            "schedule": {s.name: schedules.get(s.name) for s in scenario.sends if s.name in schedules},
            # per process with a back-to-back sender: its dropped PUB send measured just
            # before the run (child.Process.probe_speed), as the profile measures it
            "speed_probe_drop_s": {name: r["speed_probe_drop_s"] for name, r in results.items() if r.get("speed_probe_drop_s")},
        },
    }
    return summary



def main(argv: list[str] | None = None) -> int:
    """``python -m validation.harness SCENARIO [--seed S] [--timeout T]``: one real run, its
    summary as JSON on stdout (the real-socket counterpart of ``zsim run --json``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m validation.harness", description=main.__doc__)
    parser.add_argument("scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=None, help="wall-time limit, seconds")
    args = parser.parse_args(argv)
    try:
        summary = run_real(args.scenario, args.seed, timeout_s=args.timeout)
    except ScenarioError as exc:
        print(f"zsim: {exc}", file=sys.stderr)
        return 2
    except (RealRunError, EnvironmentFault) as exc:
        print(f"zsim: real run failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # cleaned up first; SIGTERM and SIGHUP too (interrupts)
        print("zsim: interrupted", file=sys.stderr)
        return getattr(exc, "exit_status", 130)
    print(json.dumps(summary, indent=2))
    return 0 if summary.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
