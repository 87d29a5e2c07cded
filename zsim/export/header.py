"""The head of a program ``zsim export`` writes: its docstring, imports and constants.

The docstring says what the program is and where it came from, how to run it, what it
carries over from the scenario and, one note per matter, what it cannot (``caveats``): a
reader of the program learns there, not in zsim's docs, where it differs from the
simulation. The head is written after the code, since what the code turned out to need
(numpy's draws, folded templates) decides parts of it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from .. import __version__
from ..distributions import Distribution
from ..socket_types import DIST, TYPES
from ..spec import RecvSpec, Scenario, SendSpec
from ..templates import Template
from .literals import doc_safe, num, quoted, seconds, wrap
from .plan import Plan


def header(s: Scenario, source: str, program_name: str, threads_only: bool, needs: set[str], notes: list[str]) -> str:
    """The program's docstring: what it is, where it came from, how to run it, what it
    carries over from the scenario and (``notes``, from ``caveats``) what it does not."""
    title = f"{s.name}: a pyzmq program written by zsim export from a zsim scenario."
    lines = [title, ""]
    if s.description.strip():
        lines += textwrap.fill(" ".join(s.description.split()), 88).splitlines() + [""]
    about = [f"Scenario: {source} (digest {s.digest}), exported by zsim {__version__}."]
    if threads_only:
        about.append("One process: its sockets' threads run in this program's process, with one zmq.Context.")
    else:
        about.append(f"{len(s.processes)} processes: each runs as an OS process of its own (multiprocessing), with one "
                     "zmq.Context and one thread per socket.")
    about.append("Times are seconds from the start of the run (t = 0, once every process has its context).")
    lines += wrap(" ".join(about), 88)
    lines += ["",
              f"Run it: python {program_name} [--seed N] [--until-s S] [--quiet-s S]",
              "At the end it prints one JSON object: per socket the messages sent and received (and",
              "sends and receives that failed), with the keys of `zsim run --json`'s sockets, and per",
              "process how it ended. It needs pyzmq" + (" and numpy." if "rng" in needs else "."), ""]
    lines += textwrap.wrap(
        "Carried over: processes (io_threads, affinity, [machine] cores), sockets (type, every option set explicitly, "
        "bind and connect in order), the timeline (open_at_s, close_at_s, start_s, exit_at_s, exit_after_sends, "
        "until_s), loops (count, duration_s, pacing, sizes, topics, frames, routing ids, dontwait, on_again, service "
        "times, busy, replies, forward_to, pauses, on_timeout) and proxies"
        + (", and the [[call]]s (bind, unbind, connect, disconnect, setsockopt, subscribe, unsubscribe), each made at its "
           "time by the thread that owns its socket" if s.calls else "")
        + ". Not carried over, or only approximately:", 88)
    for note in notes:
        lines += wrap(note, 86, "- ", "  ")
    text = "\n".join(doc_safe(line) for line in lines)  # the name and the description are the file's text
    return f'"""{text}\n"""'


def caveats(plan: Plan, needs: set[str], folded: list[Template], expanded: list[Template]) -> list[str]:
    """What the program does not carry over, or only approximately, one note per matter:
    the profile's costs, the random draws, the end of the run, the timing of short waits,
    hosts and links, ..., then the plan's notes on loops it runs one after another. ``needs``,
    ``folded`` and ``expanded`` are what writing the code found (so the code comes first)."""
    s = plan.s
    notes = [f"profile {s.profile or 'default'!r}: the simulator charges each call, hop and byte what the profile "
             "measured; here each costs what it costs on this machine, and nothing in this file models it."]
    if "rng" in needs:
        notes.append("random distributions: drawn with numpy from the seed (--seed, default the scenario's seed or 0) and "
                     "each loop's name: the same distributions as the simulator's, not the same values.")
    if s.until_s is None:
        notes.append("the end: the simulation ends when nothing can move any more; this program ends when no message has "
                     f"moved for --quiet-s seconds (0.5) after the timeline's last event (at {seconds(plan.last_event())}) "
                     "and after every planned wait.")
    else:
        notes.append(f"the end: at until_s = {seconds(s.until_s)} every process takes its counts and leaves at once "
                     "(LINGER 0), as the simulation stops there.")
    workloads: list[SendSpec | RecvSpec] = [*s.sends, *s.recvs]
    short = [w.name for w in workloads if _short_wait(w)]
    if short:
        notes.append("timing: waits are threading.Event.wait, late by some 0.05-0.1 ms each, so waits below 1 ms come out "
                     f"longer than asked ({', '.join(short[:4])}{', ...' if len(short) > 4 else ''}).")
    if any(w.forward_to is not None and TYPES[s.socket(w.forward_to).type].send == DIST for w in s.recvs):
        notes.append("forward_to: a result carries no topic here; the simulator lets it keep the input's topic for filtering.")
    if s.hosts:
        placed = "; ".join(f"{host.name}: {', '.join(p.name for p in s.processes if p.host == host.name) or 'none'}"
                           for host in s.hosts)
        links = "; ".join(f"{link.name} {link.bandwidth_bps / 1e6:g} Mbit/s, {seconds(link.latency_s)} one way" if link.symmetric
                          else f"{link.name} " + ", ".join(f"{src}->{dst} {way.bandwidth_bps / 1e6:g} Mbit/s and {seconds(way.latency_s)}"
                                                           for src, dst, way in link.ways())
                          for link in s.links)
        if s.switches:
            links += f"; through the switches {', '.join(switch.name for switch in s.switches)}"
        notes.append(f"[[host]]s and [[link]]s: every process runs on this machine and every host's name is 127.0.0.1 in "
                     f"HOSTS, so nothing here crosses a network. A real deployment runs each host's processes on that host "
                     f"({placed}), with HOSTS giving each host's address, on a network that provides the links ({links}); "
                     "this program cannot emulate their bandwidth, latency, queue or loss (Linux's tc can: "
                     "docs/validation.md, section Links).")
        if s.faults:
            what = "; ".join(f"{fault.name}: {fault.kind} of {', '.join(link.name for link in fault.links_cut(s.links))} "
                             + (f"at random, up {seconds(fault.mtbf_s or 0.0)} and down {seconds(fault.mttr_s or 0.0)} on average"
                                if fault.random else f"from {seconds(fault.at_s or 0.0)} for {seconds(fault.duration_s or 0.0)}")
                             for fault in s.faults)
            notes.append(f"[[fault]]s: this program cuts no link ({what}); zsim validate cuts them at a switch's end at the "
                         "model's times (docs/validation.md, section Outages), or cut them yourself on the real network.")
        other = [f"{host.name} ({host.profile})" for host in s.hosts if host.profile is not None and host.profile != s.profile]
        if other:
            notes.append(f"[[host]] profile: the simulator modelled {', '.join(other)} as another kind of machine; here every "
                         "host is this one, with this machine's costs.")
    if s.machine.cores or any(p.affinity is not None for p in s.processes):
        notes.append(f"[machine] cores = {s.machine.cores or 0} and affinity: each process is pinned to its CPUs "
                     "(os.sched_setaffinity, Linux; core k is the k-th CPU this program may use), so its threads share "
                     "them as the simulator's do; the scheduler's costs are this machine's, not the model's.")
    spinning = [w.name for w in workloads if w.wait_spin_s > 0]
    if spinning:
        notes.append(f"wait_spin_s ({', '.join(spinning[:4])}{', ...' if len(spinning) > 4 else ''}): this program's waits "
                     "sleep (threading.Event.wait); the simulated design spins the end of each wait, which costs CPU on "
                     "shared cores: remove wait_spin_s to simulate this program as written.")
    working = [w.name for w in workloads if w.loop_cpu_s > 0]
    if working:
        notes.append(f"loop_cpu_s ({', '.join(working[:4])}{', ...' if len(working) > 4 else ''}): the simulated design "
                     "spends that CPU per message beyond the ZeroMQ call; this program does only its own bookkeeping.")
    if any(r.busy for r in s.recvs):
        notes.append("busy = true: the service time is a busy loop (proc.busy), which holds its process's GIL: the other "
                     "threads of that process wait for it, which the simulator does not model (put busy workers in "
                     "processes of their own).")
    if s.proxies:
        subscriptions = any(TYPES[s.socket(name).type].app_sees_subscriptions for name in plan.proxied)
        notes.append("[[proxy]]: written as zmq.proxy's poll loop, to count what it forwards"
                     + (" (the XSUB's sent counts the subscriptions it passes upstream; the simulator's does not)"
                        if subscriptions else "")
                     + "; libzmq's proxy reads a side only while the other can take a message, this loop blocks in the "
                     "send instead.")
    for proc in s.processes:
        if proc.crash_at_s is not None:
            notes.append(f"process {proc.name} crash_at_s: the OS process is killed (SIGKILL) at "
                         f"t = {seconds(proc.crash_at_s)}, right after it reported its counts.")
        if proc.restart_at_s is not None:
            notes.append(f"process {proc.name} restart_at_s: main() starts it again at t = {seconds(proc.restart_at_s)} as a "
                         "new OS process; its sockets open at once, count-bounded loops carry on with the attempts they had "
                         "left, loops bounded by time keep their times (the simulator resumes every loop at once).")
    if folded:
        notes.append(f"templates: {_templates(folded)} written once, as functions of the member index i.")
    if expanded:
        notes.append(f"templates: {_templates(expanded)} written out member by member (their code differs in more "
                     "than the member index).")
    ignored = [f"[{key}]" for key in ("validation", "limits", "sweep") if key in s.raw]
    if ignored:
        notes.append(f"{', '.join(ignored)}: read by zsim only.")
    notes.append("measurements: counts, latencies from the send time each message carries in its last 8 bytes (end to end: "
                 "a reply or result carries its request's on; zsim's per-socket latency is per hop) and the batch time of a "
                 "[[recv]] with a count; no pipe depths or drops (a real socket does not report them).")
    return notes + plan.notes


def imports(s: Scenario, needs: set[str]) -> str:
    """The program's imports: the plumbing's, and those the code written ``needs``."""
    modules = ["argparse", "contextlib", "json", "multiprocessing", "os", "queue", "signal", "sys", "threading", "time",
               "traceback"]
    if "itertools" in needs:
        modules.append("itertools")
    if "rng" in needs:
        modules.append("zlib")
    if any(d.kind == "lognormal" for d in _distributions(s)):
        modules.append("math")
    lines = ["from __future__ import annotations", ""] + [f"import {m}" for m in sorted(modules)]
    lines += ["from typing import Any", ""]
    if "rng" in needs:
        lines.append("import numpy as np")
    lines.append("import zmq")
    return "\n".join(lines)


def _distributions(s: Scenario) -> Iterable[Distribution]:
    for send in s.sends:
        yield send.interval
        yield send.size
    for recv in s.recvs:
        yield from (d for d in (recv.service, recv.reply_size, recv.pause_every, recv.pause) if d is not None)


def constants(plan: Plan) -> str:
    """The program's constants: the scenario's name, seed and horizon, the timeline's last
    event, the sockets others wait for (``BINDERS``) and the hosts' addresses."""
    s = plan.s
    return "\n".join([
        f"SCENARIO = {quoted(s.name)}",
        f"SEED = {s.seed if s.seed is not None else 0}  # scenario.seed (or 0); --seed changes it",
        f"UNTIL_S = {num(s.until_s) if s.until_s is not None else None}  # scenario.until_s, the horizon; --until-s changes it",
        "QUIET_S = 0.5  # without a horizon the run ends when no message has moved for this long ...",
        f"LAST_EVENT_S = {num(plan.last_event())}  # ... after the timeline's last event (open, close, start, exit)",
        *_binders(plan.binders),
        *_hosts(s),
    ])


def _hosts(s: Scenario) -> list[str]:
    """``HOSTS`` and ``on_host``: the address each [[host]] is reached at (every host this
    machine's loopback until the user gives real addresses)."""
    if not s.hosts:
        return []
    lines = ["# the address each [[host]] is reached at: every one is this machine until you give real addresses",
             "HOSTS = {"]
    lines += [f"    {quoted(host.name)}: \"127.0.0.1\"," for host in s.hosts]
    lines += ["}", "", "",
              "def on_host(endpoint):",
              '    """tcp://NAME:PORT with NAME a [[host]] -> tcp://ADDRESS:PORT (HOSTS)."""',
              '    name, _, port = endpoint[len("tcp://"):].rpartition(":")',
              '    return f"tcp://{HOSTS[name]}:{port}"']
    return lines


def _binders(names: list[str]) -> list[str]:
    """``BINDERS = (...)``: the sockets others wait for before they connect (``Proc.open``'s ``after``)."""
    comment = "  # sockets that others connecting at the same instant wait for: binds come first"
    if not names:
        return ["BINDERS: tuple[str, ...] = ()" + comment]
    items = ", ".join(quoted(name) for name in names) + ("," if len(names) == 1 else "")
    wrapped = textwrap.wrap(items, 100)
    if len(wrapped) == 1:
        return [f"BINDERS = ({items})" + comment]
    return ["BINDERS = (" + comment, *(f"    {line}" for line in wrapped), ")"]


def _templates(templates: list[Template]) -> str:
    return ", ".join(f"{t.kind} {t.pattern} (count = {t.count})" for t in templates)


def _short_wait(workload: SendSpec | RecvSpec) -> bool:
    dist = workload.interval if isinstance(workload, SendSpec) else workload.service
    return 0 < dist.expected() < 0.001
