"""From a validated scenario, a profile and a seed to a live model ready to run.

This is where ``spec`` (frozen scenario objects) and ``model`` (the SimPy core) meet.
Randomness: every random source gets its own numpy stream derived from (seed, its dotted
name) through ``SeedSequence``; a stream never depends on the order in which objects are
built, on other workloads, or on the scenario's other parameters, so sweeps get common
random numbers across points and the same seed gives the same run everywhere.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from . import profile as profile_module
from .distributions import Distribution
from .errors import ScenarioError
from .ledger import Ledger
from .model.cpu import Machine
from .model.kernel import NORMAL, URGENT, Environment
from .model.params import LinkParams, LinkWayParams, ModelParams, SchedulerParams, TransportParams, unix_skb_truesize, wake_cost_fn
from .model.socket import OPEN, Socket
from .model.workload import Proxy, Receiver, Sender
from .model.world import Process, World
from .profile import Profile, TransportProfile
from .spec import CallSpec, LinkSpec, Scenario, check_affinity, parse_endpoint, parse_options, resolve_endpoint


class Streams:
    """name -> an independent ``numpy.random.Generator`` for (seed, name).

    Each generator made is kept with its first state, so that after a run ``drawn()`` says
    how many of them gave a value. Every random draw of the model goes through these
    streams (a constant distribution never touches one: ``zsim.sampler``), so a run that
    drew nothing gives the same result under every seed: one run is its exact value
    (``zsim.search`` decides such a design from it, not from a confidence bound)."""

    __slots__ = ("seed", "_made")

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self._made: list[tuple[np.random.Generator, Any]] = []

    def __call__(self, name: str) -> np.random.Generator:
        digest = hashlib.sha256(name.encode()).digest()
        words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
        generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence([self.seed, *words])))
        self._made.append((generator, generator.bit_generator.state))
        return generator

    @property
    def made(self) -> int:
        return len(self._made)

    def drawn(self) -> int:
        """How many of the streams made so far have given a value."""
        return sum(1 for generator, first in self._made if generator.bit_generator.state != first)


def stream_factory(seed: int) -> Streams:
    """name -> an independent ``numpy.random.Generator`` for (seed, name) (``Streams``)."""
    return Streams(seed)


#: Linux ``sock_setsockopt``: SO_SNDBUF/SO_RCVBUF values are capped at net.core.wmem_max /
#: rmem_max (212992 by default), then doubled with a floor of SOCK_MIN_SNDBUF (4608) and
#: SOCK_MIN_RCVBUF (2304) bytes; in the units a user sets, that floor is half of those.
LINUX_MAX_BUF = 212992
LINUX_MIN_SNDBUF = 2304
LINUX_MIN_RCVBUF = 1152


def _capacity_fn(tp: TransportProfile, transport: str) -> Any:
    table = tp.kernel
    explicit = tp.kernel_explicit
    explicit_bytes = tp.explicit_bytes

    def capacity(wire: int, sndbuf: int, rcvbuf: int, sndhwm: int) -> int:
        base = table.capacity(wire, sndhwm)
        if transport != "tcp" or (sndbuf < 0 and rcvbuf < 0):
            return base
        if sndbuf >= 0:
            sndbuf = min(max(sndbuf, LINUX_MIN_SNDBUF), LINUX_MAX_BUF)
        if rcvbuf >= 0:
            rcvbuf = min(max(rcvbuf, LINUX_MIN_RCVBUF), LINUX_MAX_BUF)
        # SO_SNDBUF/SO_RCVBUF switch autotuning off for that side. Each side carries
        # about half of what is in flight; scale the measured explicit-buffer table.
        if explicit is not None:
            per_side = explicit.capacity(wire) / 2.0
            send_side = base / 2.0 if sndbuf < 0 else per_side * sndbuf / explicit_bytes
            recv_side = base / 2.0 if rcvbuf < 0 else per_side * rcvbuf / explicit_bytes
        else:
            # Linux doubles the value for bookkeeping; about half of that is payload.
            send_side = base / 2.0 if sndbuf < 0 else float(sndbuf)
            recv_side = base / 2.0 if rcvbuf < 0 else float(rcvbuf)
        return max(1, int(send_side + recv_side))

    return capacity


def _median(dist: Distribution | None) -> float:
    if dist is None:
        return 0.0
    if dist.kind == "empirical":
        values = sorted(dist.values)
        return values[len(values) // 2]
    if dist.kind == "lognormal":
        import math

        return dist.mean * math.exp(-dist.sigma**2 / 2.0)
    return dist.expected()


def _shift(dist: Distribution, by: float) -> Distribution:
    """``dist`` minus a constant, clamped at zero (for splitting a measured latency)."""
    if by <= 0:
        return dist
    if dist.kind == "empirical":
        return Distribution("empirical", dist.unit, values=tuple(max(0.0, v - by) for v in dist.values))
    if dist.kind == "constant":
        return Distribution.constant(max(0.0, dist.value - by), dist.unit)
    return dist


def model_params(profile: Profile) -> ModelParams:
    """Profile -> model parameters.

    A one-way hop measured end to end (idle ping-pong) includes the sending I/O thread
    waking up for the message and the receiving application thread waking up for it; the
    model applies those two separately (they also decide how many messages an engine
    batch holds), so the kernel's share is the measured hop minus their medians. A thread
    wake-up is taken from the profile (``api.wake_s``) or, failing that, from the inproc
    hop (which is exactly one application-to-application wake-up).
    """
    wake = profile.wake
    if wake is None:
        inproc = profile.transports.get("inproc")
        wake = inproc.hop_latency if inproc is not None and _median(inproc.hop_latency) > 0 else None
    params = ModelParams(
        send_call_s=profile.send_call_s,
        send_drop_call_s=profile.send_drop_call_s,
        recv_call_s=profile.recv_call_s,
        command_throttle_s=profile.command_throttle_s,
        app_wake=wake,
        sleep_late=profile.sleep_late,
        timer_jitter=profile.timer_jitter,
        profile_name=profile.name,
    )
    for name in ("inproc", "ipc", "tcp"):
        tp = profile.transport(name)
        io_wakeup = tp.io_wakeup if tp.io_wakeup is not None else (wake if _median(tp.hop_latency) > 0 else None)
        hop = _shift(tp.hop_latency, _median(io_wakeup) + _median(wake)) if name != "inproc" else tp.hop_latency
        params.transports[name] = TransportParams(
            handshake=tp.handshake,
            hop_latency=hop,
            engine_s_per_msg=tp.engine_s_per_msg,
            engine_s_per_byte=tp.engine_s_per_byte,
            io_wakeup=io_wakeup if io_wakeup is not None else Distribution.constant(0.0),
            kernel_capacity=_capacity_fn(tp, name),
            hup_loses_kernel_data=(name == "ipc"),
            pollout_free_fraction=0.75 if name == "ipc" else 1.0 / 3.0,
            write_overhead_bytes=tp.write_overhead_bytes,
            write_charge=unix_skb_truesize if name == "ipc" else None,
            wake_cost=wake_cost_fn(*tp.send_wake_cost) if tp.send_wake_cost else None,
            sndbuf_per_segment_bytes=tp.sndbuf_per_segment_bytes,
        )
    return params


@dataclass
class Model:
    """A built, not yet run, simulation."""

    scenario: Scenario
    seed: int
    profile: Profile
    env: Environment
    world: World
    ledger: Ledger
    senders: list[Sender] = field(default_factory=list)
    receivers: list[Receiver] = field(default_factory=list)
    proxies: list[Proxy] = field(default_factory=list)
    sockets: dict[str, Socket] = field(default_factory=dict)
    processes: dict[str, Process] = field(default_factory=dict)
    app_names: list[str] = field(default_factory=list)  # apps started on this model (zsim.app)
    #: [[call]]s not made because their socket was not open then: (label, time)
    calls_skipped: list[tuple[str, float]] = field(default_factory=list)
    machine: Machine | None = None  # the shared cores ([machine] cores > 0) of the default host
    #: every host's machine, by host name ("" the default host), for hosts with cores > 0
    machines: dict[str, Machine] = field(default_factory=dict)


def _sampler(dist: Distribution | None, streams: Callable[[str], np.random.Generator], stream: str,
             integer: bool = False) -> Any:
    """A sampler of ``dist`` on the random stream ``stream`` (created only if it draws:
    a stream costs a hash and a generator, and a constant never touches one)."""
    if dist is None:
        return None
    return dist.sampler(None if dist.is_constant else streams(stream), integer)


def scheduler_params(profile: Profile, scenario: Scenario) -> SchedulerParams:
    """The machine of a run: ``[machine] cores`` if the scenario gives it, else the
    profile's recorded core count (0 when it records none); the scheduler's costs from the
    profile's ``[scheduler]`` table, or the model's defaults."""
    defaults = SchedulerParams()
    cores = scenario.machine.cores if scenario.machine.cores is not None else profile.cores
    return SchedulerParams(
        cores=cores,
        context_switch_s=profile.context_switch_s if profile.context_switch_s is not None else defaults.context_switch_s,
        wakeup_s=profile.wakeup_s if profile.wakeup_s is not None else defaults.wakeup_s,
        timeslice_s=profile.timeslice_s if profile.timeslice_s is not None else defaults.timeslice_s,
        io_wake_s=profile.io_wake_s if profile.io_wake_s is not None else defaults.io_wake_s,
    )


def host_params(scenario: Scenario, profile: Profile | None = None) -> dict[str, ModelParams]:
    """Each host's model parameters ("" the default host): the scenario's profile (or
    ``profile``, a caller's override), and for a [[host]] with a ``profile`` of its own that
    profile's (its call costs, wake-ups, sleep lateness, transports and scheduler); hosts
    without one share the default host's object."""
    def machine(of: Profile) -> ModelParams:
        params = model_params(of)
        params.scheduler = scheduler_params(of, scenario)
        return params

    if profile is None:
        profile = profile_module.load(scenario.profile, scenario.base_dir)
    default = machine(profile)
    found = {"": default}
    for host in scenario.hosts:
        found[host.name] = default if host.profile is None else machine(
            profile_module.load(host.profile, scenario.base_dir, f"host[{host.name}].profile"))
    return found


def build(scenario: Scenario, seed: int, profile: Profile | None = None, trace_depth: bool = False) -> Model:
    if profile is None:
        profile = profile_module.load(scenario.profile, scenario.base_dir)
    by_host = host_params(scenario, profile)
    params = by_host[""]
    env = Environment()
    ledger = Ledger()
    streams = stream_factory(seed)
    world = World(env, params, ledger, streams)
    world.host_params = by_host
    world.trace_depth = trace_depth
    world.until_s = scenario.until_s
    model = Model(scenario, seed, profile, env, world, ledger)

    for proc_spec in scenario.processes:
        process = world.add_process(proc_spec.name, proc_spec.io_threads)
        process.exit_after_sends = proc_spec.exit_after_sends
        # its host, and with it the machine's costs every socket and workload of it takes
        process.host = proc_spec.host
        process.params = by_host[proc_spec.host]
        model.processes[proc_spec.name] = process

    for sock_spec in scenario.sockets:
        process = model.processes[sock_spec.process]
        sock = world.add_socket(sock_spec.name, sock_spec.type, process, sock_spec.options, sock_spec.routing_id, sock_spec.bind,
                                sock_spec.connect)
        model.sockets[sock_spec.name] = sock

    for send in scenario.sends:
        sock = model.sockets[send.socket]
        sock_spec = scenario.socket(send.socket)
        sender = Sender(
            world, send.name, sock, sock.process,
            count=send.count, duration_s=send.duration_s, until_s=scenario.until_s,
            interval=_sampler(send.interval, streams, send.streams["interval"]),
            size=_sampler(send.size, streams, send.streams["size"], integer=True),
            start_s=scenario.starts_at(send), topics=send.topics, parts=send.parts,
            dontwait=scenario.never_waits(send), on_again=send.on_again, to=send.to, pacing=send.pacing,
            loop_cpu_s=send.loop_cpu_s, wait_spin_s=send.wait_spin_s, on_timeout=send.on_timeout,
        )
        sock.process.workloads.append(sender)
        model.senders.append(sender)

    for recv in scenario.recvs:
        sock = model.sockets[recv.socket]
        sock_spec = scenario.socket(recv.socket)
        receiver = Receiver(
            world, recv.name, sock, sock.process,
            service=_sampler(recv.service, streams, recv.streams["service"]),
            start_s=scenario.starts_at(recv), count=recv.count, duration_s=recv.duration_s,
            reply=recv.reply, reply_size=_sampler(recv.reply_size, streams, recv.streams["reply_size"], integer=True),
            pause_every=_sampler(recv.pause_every, streams, recv.streams["pause_every"]),
            pause=_sampler(recv.pause, streams, recv.streams["pause"]),
            on_timeout=recv.on_timeout,
            forward_to=model.sockets[recv.forward_to] if recv.forward_to else None,
            busy=recv.busy, loop_cpu_s=recv.loop_cpu_s, wait_spin_s=recv.wait_spin_s,
        )
        sock.process.workloads.append(receiver)
        model.receivers.append(receiver)

    for proxy_spec in scenario.proxies:
        front, back = model.sockets[proxy_spec.frontend], model.sockets[proxy_spec.backend]
        proxy = Proxy(world, proxy_spec.name, front, back, front.process)
        front.process.workloads.append(proxy)
        model.proxies.append(proxy)

    if scenario.links:  # TCP over the links between hosts (docs/model.md, "Links")
        from .model.transport.network import Network  # only with links: a scenario without never loads it

        router = None
        if scenario.switches:  # routes through switches: the shortest, and only, one (zsim.spec.route)
            from .spec import route

            switches = {switch.name for switch in scenario.switches}

            def router(a: str, b: str) -> list[tuple[str, bool]]:
                return [(link.name, forward) for link, forward in route(scenario.links, switches, a, b)]

        world.network = Network(world, [LinkParams(link.name, link.hosts, link.bandwidth_bps, link.latency_s, link.mtu_bytes,
                                                   link.queue_bytes, link.loss, _way_back(link)) for link in scenario.links],
                                router)
        if scenario.faults:  # outages, loss bursts and hosts that crash (docs/model.md, "Outages")
            world.network.apply_faults(scenario.faults, scenario.links, scenario.until_s, world.stream)
    _build_machines(model)
    _schedule_timeline(model)
    return model


def _way_back(link: LinkSpec) -> LinkWayParams | None:
    """The model's parameters of a link's ``hosts[1] -> hosts[0]``, None when they are the
    forward direction's."""
    if link.symmetric:
        return None
    back = link.backward
    return LinkWayParams(back.bandwidth_bps, back.latency_s, back.queue_bytes, back.loss)


def host_cores(scenario: Scenario, by_host: Mapping[str, ModelParams]) -> dict[str, int]:
    """The cores of each host that runs a process ("" the default host): a [[host]]'s
    ``cores``, else ``[machine] cores``, else its profile's (``host_params``: the
    scheduler's ``cores``)."""
    declared = {host.name: host.cores for host in scenario.hosts}
    cores: dict[str, int] = {}
    for proc_spec in scenario.processes:
        own = declared.get(proc_spec.host)
        cores[proc_spec.host] = own if own is not None else by_host[proc_spec.host].scheduler.cores
    return cores


def _build_machines(model: Model) -> None:
    """Each host's cores (a host with none gives each of its threads a core of its own)
    and a thread for each thread of the real program: one per socket with workloads (the
    harness runs a socket's [[send]]/[[recv]] in one thread), one per [[proxy]], and each
    process's I/O threads, on the machine of the process's host."""
    scenario, world = model.scenario, model.world
    by_host = world.host_params
    for host, cores in host_cores(scenario, by_host).items():
        if cores > 0:
            model.machines[host] = Machine(model.env, dataclasses.replace(by_host[host].scheduler, cores=cores), host)
    if not model.machines:
        return
    model.machine = model.machines.get("")
    machine_of = {proc.name: model.machines.get(proc.host) for proc in scenario.processes}
    declared = {host.name: host.cores for host in scenario.hosts}
    affinity: dict[str, tuple[int, ...] | None] = {}
    for proc_spec in scenario.processes:
        machine = machine_of[proc_spec.name]
        if proc_spec.affinity is not None and machine is not None and declared.get(proc_spec.host, scenario.machine.cores) is None:
            check_affinity(proc_spec.affinity, f"process[{proc_spec.name}].affinity", machine.cores)
        affinity[proc_spec.name] = proc_spec.affinity
    taken: set[str] = set()

    def unique(name: str) -> str:
        candidate, number = name, 1
        while candidate in taken:
            number += 1
            candidate = f"{name}#{number}"
        taken.add(candidate)
        return candidate

    by_socket: dict[str, list[Sender | Receiver]] = {}
    workloads: list[Sender | Receiver] = [*model.senders, *model.receivers]
    for workload in workloads:
        by_socket.setdefault(workload.socket.name, []).append(workload)
    for sock_name, on_socket in by_socket.items():
        process = on_socket[0].process.name
        machine = machine_of[process]
        if machine is None:
            continue
        name = on_socket[0].name if len(on_socket) == 1 else f"socket.{sock_name}"
        thread = machine.thread(unique(name), "app", process, affinity[process])
        thread.wait_spin_s = on_socket[0].wait_spin_s  # one per socket (zsim.spec checks it)
        for workload in on_socket:
            workload.thread.cpu = thread
    for proxy in model.proxies:
        machine = machine_of[proxy.process.name]
        if machine is not None:
            proxy.thread.cpu = machine.thread(unique(proxy.name), "app", proxy.process.name, affinity[proxy.process.name])
    for proc_spec in scenario.processes:
        machine = machine_of[proc_spec.name]
        if machine is None:
            continue
        # each of its context's I/O threads runs on a thread of the machine
        for io in model.processes[proc_spec.name].io_threads:
            io.cpu = machine.thread(unique(io.name), "io", proc_spec.name, affinity[proc_spec.name])


def _schedule_timeline(model: Model) -> None:
    env, world, scenario = model.env, model.world, model.scenario
    for sock_spec in scenario.sockets:
        sock = model.sockets[sock_spec.name]
        env.call_later(sock_spec.open_at_s, partial(world.open_binds, sock), priority=URGENT)
    for sock_spec in scenario.sockets:
        sock = model.sockets[sock_spec.name]
        env.call_later(sock_spec.open_at_s, partial(world.open_connects, sock), priority=URGENT)
    for sock_spec in scenario.sockets:
        sock = model.sockets[sock_spec.name]
        if sock_spec.close_at_s is not None:
            env.call_later(sock_spec.close_at_s, partial(world.close_socket, sock), priority=NORMAL)
    for call in scenario.calls:
        env.call_later(call.at_s, partial(perform_call, model, call), priority=NORMAL)
    for sender in model.senders:
        sender.start()
    for receiver in model.receivers:
        receiver.start()
    for proxy in model.proxies:
        front_open = scenario.socket(proxy.frontend.name).open_at_s
        back_open = scenario.socket(proxy.backend.name).open_at_s
        env.call_later(max(front_open, back_open), proxy.start, priority=NORMAL)
    network = model.world.network
    for fault, intervals, _cut in getattr(network, "faults", []):
        if fault.kind != "host_crash":
            continue
        # its processes die with it, silently (their peers are not told: the host's links are
        # down meanwhile, ``Network.apply_faults``), and start again when it does
        for proc_spec in scenario.processes:
            if proc_spec.host == fault.hosts[0]:
                process = model.processes[proc_spec.name]
                taken: list[Process] = []  # alive when its host crashed: starts again with it
                for start, end in intervals:
                    env.call_later(start, partial(_crash_with_host, process, taken))
                    env.call_later(end, partial(_restart_after_host, model, process, taken), priority=URGENT)
    for proc_spec in scenario.processes:
        process = model.processes[proc_spec.name]
        if proc_spec.exit_at_s is not None:
            env.call_later(proc_spec.exit_at_s, process.exit)
        if proc_spec.crash_at_s is not None:
            env.call_later(proc_spec.crash_at_s, process.crash)
        if proc_spec.restart_at_s is not None:
            env.call_later(proc_spec.restart_at_s, partial(_restart, model, process), priority=URGENT)


def call_endpoint(model: Model, sock: Socket, text: str, verb: str) -> Any:
    """``text`` as the endpoint a call of an app on ``sock`` names, resolved as a
    [[socket]]'s would be (its process's host); a bad one is a ``ValueError`` naming it."""
    scenario = model.scenario
    own = next((proc.host for proc in scenario.processes if proc.name == sock.process.name), "")
    where = f"{verb} on {sock.name!r}"
    try:
        return resolve_endpoint(parse_endpoint(str(text), where), own, scenario.hosts, where, bind=verb in ("bind", "unbind"))
    except ScenarioError as exc:
        raise ValueError(str(exc)) from None


def call_options(sock: Socket, name: str, value: Any, where: str) -> list[tuple[str, Any]]:
    """``(option, value)`` pairs a ``setsockopt(name, value)`` sets, checked as a
    [[socket]]'s ``options`` are (``hwm`` sets both HWMs); a bad one is a ``ValueError``."""
    try:
        parsed = parse_options({name: value}, where, sock.type)
    except ScenarioError as exc:
        raise ValueError(str(exc)) from None
    return [(key, getattr(parsed, key)) for key in (("sndhwm", "rcvhwm") if name == "hwm" else (name,))]


def perform_call(model: Model, call: CallSpec) -> None:
    """A ``[[call]]`` at its time: the socket's thread calls ``zmq_bind``, ``zmq_unbind``,
    ``zmq_connect``, ``zmq_disconnect``, ``zmq_setsockopt`` or (un)subscribes. A socket that
    is not open then (its process crashed, exited or has not restarted) gets no call: its
    program is not running. The scenario's checks made sure each call is valid when the
    socket lives as declared."""
    world = model.world
    sock = model.sockets[call.socket]
    if sock.state != OPEN or not sock.process.alive or sock.process.exiting:
        model.calls_skipped.append((call.label, world.clock.now))
        return
    action = call.action
    for endpoint in call.endpoints:
        if action == "bind":
            world.bind(sock, endpoint)
        elif action == "connect":
            world.connect(sock, endpoint)
        elif action == "disconnect":
            world.disconnect(sock, endpoint)
        else:
            world.unbind(sock, endpoint)
    for name, value in call.options:
        world.set_option(sock, name, value)
    for prefix in call.prefixes:
        world.subscribe(sock, prefix, action == "subscribe")


def _crash_with_host(process: Process, taken: list[Process]) -> None:
    """Its host crashed: the process dies, and its peers are not told (``Process.crash``)."""
    if process.alive:
        process.crash(silent=True)
        taken.append(process)


def _restart_after_host(model: Model, process: Process, taken: list[Process]) -> None:
    """Its host is back: the process starts again if the host's crash took it (not one that
    had exited or crashed on its own before)."""
    if process in taken:
        taken.remove(process)
        _restart(model, process)


def _restart(model: Model, process: Process) -> None:
    """The crashed process starts again: fresh sockets (same names, the endpoints and
    options its program declares), workloads resume."""
    world = model.world
    process.alive = True
    process.exiting = False
    for sock in process.sockets:
        world.reset_socket(sock)
        world.open_socket(sock)
    for workload in process.workloads:
        workload.resume()
