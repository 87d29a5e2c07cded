"""A program ``zsim export`` writes, as one text: per process a function, then main().

A process function (``<process>_process``) makes the process's ``Proc`` (its context, its
pinning, its end) and starts a thread per socket and per proxy (``sockets``), whose code
follows it (``loops``). A template's members come out as one function of the member index
``i`` where their code folds (``fold``), else member by member. main() starts the
processes (threads when there is one process that does not crash), starts again those that
restart, ends the run and prints the counts. The head (``header``) comes last, since what
the code turned out to need decides it, and the fixed part (``plumbing``) ends the text.
"""

from __future__ import annotations

from typing import Any

from .. import spec
from ..errors import ScenarioError
from ..spec import Scenario, SendSpec
from ..templates import Template
from . import plumbing
from .fold import fold, fstring_literal, infer
from .header import caveats, constants, header, imports
from .literals import docstring, num, quoted, seconds, section
from .loops import Loops
from .naming import Namespace
from .plan import Plan, SocketUnit
from .sockets import Sockets


def program_text(scenario: Scenario, source: str, program_name: str) -> str:
    """The program of ``scenario``; ``source`` names the scenario in its header, ``program_name``
    is its file. Raises ``ScenarioError`` for what it cannot be written for."""
    return _Program(scenario, source, program_name).text()


class _Program:
    """One program being written: the plan, the names, and the templates folded or not."""

    def __init__(self, scenario: Scenario, source: str, program_name: str) -> None:
        self.s = scenario
        self.source = source
        self.program_name = program_name
        self.plan = Plan(scenario)
        self.names = Namespace(self.plan.member_of)
        restarts = {proc.name: proc.restart_at_s for proc in scenario.processes if proc.restart_at_s is not None}
        self.sockets = Sockets(scenario, self.names, self.plan.waits, restarts)
        self.loops = Loops(scenario, self.names)
        self.folded: list[Template] = []  # written once, as functions of i
        self.expanded: list[Template] = []  # written out member by member

    def text(self) -> str:
        """Its head, a section per process (or folded template of processes), main() and the
        plumbing; refuses a scenario whose logic is an [[app]]'s SimPy code."""
        s = self.s
        if s.apps:
            app = s.apps[0]
            raise ScenarioError(f"app[{app.name}]", f"the scenario's logic is SimPy code ({app.function}), which zsim export cannot write "
                                                    "as a pyzmq program; export a scenario of [[send]], [[recv]] and [[proxy]] loops")
        groups = self._process_groups()
        sections: list[str] = []
        for title, code in groups:
            sections.append(section(title) + "\n\n\n" + code)
        threads_only = len(s.processes) == 1 and s.processes[0].crash_at_s is None
        main = self._main(threads_only)
        notes = caveats(self.plan, self.names.needs, self.folded, self.expanded)
        fixed = plumbing.CORE.strip("\n")
        if "rng" in self.names.needs:
            fixed += "\n" + plumbing.RNG.rstrip("\n")
        if "frames" in self.names.needs:
            fixed += "\n" + plumbing.FRAMES.rstrip("\n")
        if "calls" in self.names.needs:
            fixed += "\n" + plumbing.CALLS.rstrip("\n")
        parts = [header(s, self.source, self.program_name, threads_only, self.names.needs, notes),
                 imports(s, self.names.needs) + "\n\n" + constants(self.plan)]
        parts += sections
        parts.append(section("main: start the processes, end the run, print the counts") + "\n\n\n" + main)
        parts.append(section("plumbing: the run's clock, its end and the counts (the same in every exported program)") + "\n\n\n"
                     + fixed)
        parts.append('if __name__ == "__main__":\n    sys.exit(main())')
        return "\n\n\n".join(part.strip("\n") for part in parts) + "\n"

    def _process_groups(self) -> list[tuple[str, str]]:
        """Per process (or template of processes): a section title and its code."""
        s = self.s
        done: set[str] = set()
        groups: list[tuple[str, str]] = []
        for proc in s.processes:
            if proc.name in done:
                continue
            found = self.plan.member_of.get(("process", proc.name))
            if found is not None:
                template = found[0]
                members = [s.process(name) for name in template.members]
                done.update(template.members)
                code = self._fold_processes(template, members)
                if code is not None:
                    self.folded.append(template)
                    groups.append((f"[[process]] {template.pattern}, i = 0 .. {template.count - 1}", code))
                    continue
                if template.count > 1:
                    self.expanded.append(template)
                for member in members:
                    groups.append((f"[[process]] {member.name}", self._process_code(member, False)))
                continue
            done.add(proc.name)
            groups.append((f"[[process]] {proc.name}", self._process_code(proc, False)))
        return groups

    def _fold_processes(self, template: Template, members: list[spec.ProcessSpec]) -> str | None:
        if len(members) < 2 or any(m.restart_at_s is not None for m in members):
            return None
        return self._try_fold(lambda: [self._process_code(member, True) for member in members])

    def _process_code(self, proc: spec.ProcessSpec, member: bool) -> str:
        """The process function and everything it runs, as one text."""
        fn = self.names.ident("process", proc.name, member, suffix="_process")
        units = self.plan.units[proc.name]
        proxies = self.plan.proxies_of.get(proc.name, [])
        restart = proc.restart_at_s is not None
        senders = sum(1 for unit in units for w in unit.loops if isinstance(w, SendSpec))
        params = "run: Run" + (", i: int" if member else "") + (", resume: dict[str, int] | None = None" if restart else "")
        own = [sock.name for sock in self.plan.sockets_of.get(proc.name, []) if sock.name not in self.plan.proxied]
        parts = [f"socket{'s' if len(own) > 1 else ''} {', '.join(own)}" if own else ""]
        parts += [f"proxy {p.name} ({p.frontend}, {p.backend})" for p in proxies]
        timeline = []
        if proc.exit_at_s is not None:
            timeline.append(f"exits at t = {seconds(proc.exit_at_s)}")
        if proc.exit_after_sends:
            timeline.append("exits once its sends are done")
        if proc.crash_at_s is not None:
            timeline.append(f"crashes at t = {seconds(proc.crash_at_s)}")
        if restart:
            assert proc.restart_at_s is not None
            timeline.append(f"starts again at t = {seconds(proc.restart_at_s)} (main() does that)")
        doc = f"[[process]] {proc.name}: {'; '.join(p for p in parts if p) or 'no sockets'}"
        doc += f"; {', '.join(timeline)}" if timeline else ""
        doc += ". One zmq.Context; each thread owns its sockets."
        args = [quoted(proc.name)]
        if proc.exit_after_sends:
            args.append(f"senders={senders}")
        if restart:
            args.append("resume=resume")
        if proc.io_threads != 1:
            args.append(f"io_threads={proc.io_threads}")
        cores = _cores(self.s, proc)
        if cores is not None:
            args.append(f"cores=tuple(range({len(cores)}))" if len(cores) > 8 and cores == tuple(range(len(cores))) else
                        f"cores={cores!r}")
        i_arg = ", i" if member else ""
        starts: list[str] = []
        blocks: list[str] = []
        grouped: set[str] = set()
        for unit in units:
            found = None if member else self.plan.member_of.get(("socket", unit.sock.name))
            if found is not None and found[0].root.startswith("socket[") and not restart:
                template = found[0]
                if template.name in grouped:
                    continue
                grouped.add(template.name)
                group = [u for u in units if self.plan.member_of.get(("socket", u.sock.name), (None, 0))[0] is template]
                folded = self._try_fold(lambda group=group: [self._unit_code(u, proc, True, restart) for u in group])
                if folded is not None:
                    self.folded.append(template)
                    thread = self.names.given("socket_thread", template.name)
                    starts += [f"    for i in range({len(group)}):", f"        proc.start({thread}, i)"]
                    blocks.append(folded)
                    continue
                if len(group) > 1:
                    self.expanded.append(template)
                for one in group:
                    starts.append(f"    proc.start({self.names.ident('socket', one.sock.name, False, suffix='_thread')})")
                    blocks.append(self._unit_code(one, proc, False, restart))
                continue
            thread = self.names.ident("socket", unit.sock.name, member, suffix="_thread")
            starts.append(f"    proc.start({thread}{i_arg})")
            blocks.append(self._unit_code(unit, proc, member, restart))
        for proxy in proxies:
            starts.append(f"    proc.start({self.names.ident('proxy', proxy.name, False, suffix='_proxy')})")
            blocks += ["\n".join(self.sockets.opener(self.s.socket(proxy.frontend), False)),
                       "\n".join(self.sockets.opener(self.s.socket(proxy.backend), False)),
                       "\n".join(self.sockets.proxy(proxy, self.plan.proxy_calls[proxy.name]))]
            if self.plan.proxy_calls[proxy.name]:
                calls_fn = self.names.ident("proxy", proxy.name, False, suffix="_calls")
                blocks.append("\n".join(self.sockets.calls(calls_fn, self.plan.proxy_calls[proxy.name], False)))
        live = []
        if proc.exit_at_s is not None:
            live.append(f"exit_at_s={num(proc.exit_at_s)}")
        if proc.exit_after_sends:
            live.append("exit_after_sends=True")
        if proc.crash_at_s is not None:
            live.append(f"crash_at_s={num(proc.crash_at_s)}")
        lines = [f"def {fn}({params}) -> None:", *docstring(doc, 4), f"    proc = Proc(run, {', '.join(args)})", *starts,
                 f"    proc.live({', '.join(live)})"]
        return "\n\n\n".join(["\n".join(lines), *blocks])

    def _unit_code(self, unit: SocketUnit, proc: spec.ProcessSpec, member: bool, resumable: bool) -> str:
        """A socket's opener (and its forward socket's), its thread and its loops, as one text."""
        blocks = ["\n".join(self.sockets.opener(unit.sock, member))]
        if unit.forward is not None:
            blocks.append("\n".join(self.sockets.opener(unit.forward, member)))
        blocks.append("\n".join(self.sockets.thread(unit, proc.exit_after_sends, member)))
        calls = bool(unit.calls)
        if calls:
            calls_fn = self.names.ident("socket", unit.sock.name, member, suffix="_calls")
            blocks.append("\n".join(self.sockets.calls(calls_fn, unit.calls, member)))
        if unit.interleaved:
            blocks.append("\n".join(self.loops.interleaved_loop(unit, member, resumable, calls)))
            return "\n\n\n".join(blocks)
        for workload in unit.loops:
            if isinstance(workload, SendSpec):
                blocks.append("\n".join(self.loops.send_loop(workload, member, resumable, calls)))
            else:
                blocks.append("\n".join(self.loops.recv_loop(workload, member, resumable, calls)))
        return "\n\n\n".join(blocks)

    def _try_fold(self, texts: Any) -> str | None:
        """Fold the members' texts (made by ``texts()``), or leave no trace of trying."""
        saved = self.names.save()
        folded = fold(texts())
        if folded is None:
            self.names.restore(saved)
        return folded

    def _main(self, threads_only: bool) -> str:
        """``main()``: starts the processes (the one process's thread when ``threads_only``),
        starts again those that restart, ends the run and prints the report."""
        s = self.s
        lines = ["def main() -> int:",
                 '    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])',
                 '    parser.add_argument("--seed", type=int, default=SEED, help="seed of the random draws (default %(default)s)")',
                 '    parser.add_argument("--until-s", type=float, default=UNTIL_S,',
                 '                        help="end the run at this time (default: the scenario\'s until_s, %(default)s)")',
                 '    parser.add_argument("--quiet-s", type=float, default=QUIET_S,',
                 '                        help="without --until-s, end the run when no message has moved for this long '
                 '(default %(default)s)")',
                 "    args = parser.parse_args()",
                 '    mp = multiprocessing.get_context("spawn")  # each process starts afresh: no state inherited by fork',
                 "    run = Run(mp, args.seed)"]
        if threads_only:
            proc = s.processes[0]
            fn = self.names.given("process_process", proc.name)
            lines += [f"    thread = threading.Thread(target={fn}, args=(run,), name={quoted(proc.name)}, daemon=True)",
                      "    thread.start()",
                      "    run.begin(1)",
                      "    run.wait_for_end(args.until_s, args.quiet_s)",
                      "    report = run.finish(1)",
                      "    thread.join(5.0)"]
        else:
            lines += self._process_entries()
            lines += ["    for process in processes:",
                      "        process.start()",
                      "    run.begin(len(processes))"]
            restarts = sorted((p for p in s.processes if p.restart_at_s is not None), key=lambda p: p.restart_at_s or 0.0)
            for proc in restarts:
                assert proc.restart_at_s is not None and proc.crash_at_s is not None
                fn = self.names.given("process_process", proc.name)
                lines += [f"    # {proc.name} crashes at t = {seconds(proc.crash_at_s)} and starts again at "
                          f"t = {seconds(proc.restart_at_s)}, with what its loops had left",
                          f"    if run.sleep_until({num(proc.restart_at_s)}, args.until_s):",
                          f"        process = mp.Process(target={fn}, args=(run, run.resume({quoted(proc.name)})), "
                          f"name={quoted(proc.name)})",
                          "        process.start()",
                          "        processes.append(process)"]
            lines += ["    run.wait_for_end(args.until_s, args.quiet_s)",
                      "    report = run.finish(len(processes))",
                      "    for process in processes:",
                      "        process.join(5.0)",
                      "        if process.is_alive():",
                      "            process.kill()"]
        lines += ["    print(json.dumps(report, indent=2))", "    return 1 if report[\"errors\"] else 0"]
        return "\n".join(lines)

    def _process_entries(self) -> list[str]:
        """``processes = [...]``: one entry per process, one comprehension per folded template."""
        plain: list[str] = []
        lines: list[str] = []
        done: set[str] = set()

        def flush() -> None:
            if plain:
                head = "    processes = [" if not lines else "    processes += ["
                lines.extend([head, *plain, "    ]"])
                plain.clear()

        for proc in self.s.processes:
            if proc.name in done:
                continue
            found = self.plan.member_of.get(("process", proc.name))
            if found is not None and found[0] in self.folded:
                template = found[0]
                done.update(template.members)
                flush()
                fn = self.names.given("process_process", template.name)
                pattern = infer(list(template.members))
                name = fstring_literal(pattern) if pattern else quoted(template.name)
                head = "processes = " if not lines else "processes += "
                lines.append(f"    {head}[mp.Process(target={fn}, args=(run, i), name={name}) for i in range({template.count})]")
                continue
            done.add(proc.name)
            fn = self.names.given("process_process", proc.name)
            plain.append(f"        mp.Process(target={fn}, args=(run,), name={quoted(proc.name)}),")
        flush()
        return lines


def _cores(s: Scenario, proc: spec.ProcessSpec) -> tuple[int, ...] | None:
    """The CPUs (k-th of those the program may use) a process is pinned to, as the real
    harness pins it: ``[machine] cores = N`` the first N, ``affinity`` among those."""
    cores = s.machine.cores or 0
    if proc.affinity is not None:
        return tuple(proc.affinity)
    return tuple(range(cores)) if cores else None
