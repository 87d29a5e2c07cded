"""``calibrate()``, which measures the machine and writes the profile, and the command line
``python -m validation.calibrate``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from zsim.calibration import fit_kernel
from zsim.errors import EnvironmentFault
from zsim.tomlw import to_toml

from .app_loop import harness_program_toml, measure_app_loop
from .calls import measure_api
from .common import Progress, _machine_section, _pc
from .engine import measure_engine
from .experiments import run_experiments
from .kernel import measure_kernel
from .latencies import measure_latencies
from .scheduler import measure_scheduler
from .sndbuf import measure_sndbuf_per_segment
from .wakeups import measure_send_wake_cost


def calibrate(out_path: str | None, quick: bool = False, progress: Progress = print,
              notes: dict | None = None) -> dict:
    """Measure this machine and return the calibration profile; write it as TOML if asked.

    The returned dict has the profile sections ``profile``, ``api``, ``inproc``, ``tcp`` and
    ``ipc``. If ``notes`` is given, it is filled with the measurement details that
    validation/calibration-notes.md reports (raw summaries, alternative views, fits).
    """
    from zsim.files import atomic_write, prepare_output_file

    if out_path:
        # before 95 s of measuring: a folder, a file inside a file or a read-only place is
        # refused now (ScenarioError, exit 2; EnvironmentFault, exit 1), not at the end
        prepare_output_file(out_path, "profile file")
    started = _pc()
    profile: dict[str, Any] = {"profile": _machine_section(quick)}
    if notes is None:
        notes = {}
    progress(f"calibrate ({'quick' if quick else 'full'}) on {profile['profile']['machine']}")

    phases: dict[str, float] = {}

    def timed(name: str, func: Callable[..., Any], *args: Any) -> Any:
        phase_start = _pc()
        value = func(*args)
        phases[name] = round(_pc() - phase_start, 2)
        progress(f"  ({name}: {phases[name]:.1f} s)")
        return value

    progress("[api]")
    profile["api"], notes["api"] = timed("api", measure_api, quick, progress)
    for transport in ("inproc", "tcp", "ipc"):
        progress(f"[{transport}]")
        section, notes[transport] = timed(f"{transport} latencies", measure_latencies, transport,
                                          profile["api"], quick, progress)
        wake = timed(f"{transport} wake cost", measure_send_wake_cost, transport, quick)
        section["send_wake_cost"] = {"idle_s": wake["idle_s"], "cost_s": wake["cost_s"]}
        notes[f"{transport}_wake_cost"] = wake
        progress(f"  {transport}: send that wakes a thread idle 0.1 ms / 1 ms: "
                 f"{wake['cost_s'][0] * 1e6:.1f} / {wake['cost_s'][1] * 1e6:.1f} us")
        if transport != "inproc":
            engine, notes[f"{transport}_engine"] = timed(f"{transport} engine", measure_engine,
                                                         transport, quick, progress)
            section.update(engine)
            kernel, notes[f"{transport}_kernel"] = timed(f"{transport} kernel", measure_kernel,
                                                         transport, quick, progress)
            section["kernel"] = kernel
        if transport == "tcp":  # tcp_sndbuf_expand's charge per segment: a send buffer over a [[link]]
            sndbuf = timed("tcp sndbuf", measure_sndbuf_per_segment)
            section["sndbuf_per_segment_bytes"] = sndbuf["sndbuf_per_segment_bytes"]
            notes["tcp_sndbuf"] = sndbuf
            progress(f"  tcp: send buffer charged {sndbuf['sndbuf_per_segment_bytes']:,} B per segment "
                     f"(SO_SNDBUF {sndbuf['so_sndbuf']:,} after connect, {sndbuf['segments']} segments x 2)")
        profile[transport] = section
    progress("[scheduler]")
    profile["scheduler"], notes["scheduler"] = timed("scheduler", measure_scheduler, quick, progress)
    # The kernel's effective capacity is what is left once the model accounts for
    # everything else on the path: fitted by simulating the same protocol (zsim.calibration).
    progress("[fit kernel capacities by simulation]")
    profile = timed("kernel fit", fit_kernel, profile, progress)
    notes["phase_seconds"] = phases
    notes["wall_time_s"] = _pc() - started
    progress(f"calibration took {notes['wall_time_s']:.1f} s")

    if out_path:
        truncated = [[transport] + cell for transport in ("tcp", "ipc")
                     for cell in notes.get(f"{transport}_kernel", {}).get("truncated", [])]
        # all at once: a reader (or a crash) never sees half a profile
        atomic_write(out_path, to_toml(profile, header=_toml_header(quick, truncated)))
        progress(f"wrote {out_path}")
    return profile


def _toml_header(quick: bool, truncated: list) -> str:
    mode = " --quick" if quick else ""
    text = (
        "# zsim calibration profile, measured with real pyzmq over loopback by\n"
        f"#   python -m validation.calibrate --out <file>{mode}\n"
        "# Times in seconds, sizes in bytes. Method and raw numbers: validation/calibration-notes.md\n"
    )
    if truncated:
        text += "# Kernel runs stopped by the time cap before the first Again (counts are lower bounds):\n"
        text += "".join(f"#   {t} {key} payload {size}: {count}\n" for t, key, size, count in truncated)
    return text + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m validation.calibrate",
        description="Measure libzmq/pyzmq timing and buffer parameters on this machine for zsim.")
    parser.add_argument("--out", metavar="FILE", help="write the calibration profile (TOML) here")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (under a minute)")
    parser.add_argument("--notes-json", metavar="FILE",
                        help="also write the calibration measurement details (JSON) here")
    parser.add_argument("--harness-program", metavar="FILE",
                        help="measure only the validation harness's own loop cost and write it here "
                             "(validation/harness-program.toml is the one zsim validate reads)")
    parser.add_argument("--experiments", metavar="FILE",
                        help="run the notes experiments instead of calibrating; write JSON here")
    args = parser.parse_args(argv)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    from zsim.errors import ZsimError
    from zsim.files import atomic_write, prepare_output_file

    try:
        if args.experiments:
            prepare_output_file(args.experiments, "experiments file")
            results = run_experiments(args.quick, progress)
            atomic_write(args.experiments, json.dumps(results, indent=1, default=str))
            progress(f"wrote {args.experiments} in {results['wall_time_s']:.1f} s")
            return 0
        if args.harness_program:
            prepare_output_file(args.harness_program, "harness program file")
            atomic_write(args.harness_program, harness_program_toml(measure_app_loop(args.quick)))
            progress(f"wrote {args.harness_program}")
            return 0
        if args.notes_json:
            prepare_output_file(args.notes_json, "notes file")
        notes: dict[str, Any] = {}
        profile = calibrate(args.out, quick=args.quick, progress=progress, notes=notes)
        if args.notes_json:
            atomic_write(args.notes_json, json.dumps(notes, indent=1, default=str))
    except ZsimError as exc:  # one line; an OS refusal exits 1, bad input 2 (as zsim does)
        print(f"python -m validation.calibrate: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, EnvironmentFault) else 2
    if not args.out:
        sys.stdout.write(to_toml(profile))
    return 0
