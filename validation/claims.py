"""Claims of the seed documents about HWM, dropping, blocking, slow joiners and termination,
each checked against real pyzmq and against zsim's prediction.

A claim is quoted briefly with its source document (the project's seed documents: zguide
chapters 1-2, two articles and a mailing-list thread, named in ``SEEDS``) and checked in
one of two ways:

* by the scenarios of the catalogue (``validation/scenarios/*.toml``): the claim reads the
  real and the simulated values of some of their metrics;
* by a *probe*: a few lines of pyzmq that test an API statement no scenario can express
  (``setsockopt(zmq.HWM, ...)``, a monitor event), with the matching zsim behaviour.

``write_claims(results, path)`` renders ``validation/claims.md`` from the results of a
catalogue run (``python -m validation`` does it); ``python -m validation.claims
--results DIR/results.json`` renders it again from a saved run.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compare import metric_value

SEEDS = {
    "zguide": "zguide-chapters-1-2.txt",
    "dropped": "article-dropped-messages-fast-publisher.txt",
    "durable": "article-hwm-durable-subscribers.txt",
    "kamens": "mailing-list-rcvhwm-pull-termination.txt",
}


# --------------------------------------------------------------------------------------
# Evidence: the catalogue's numbers, by scenario and metric


class Evidence:
    """Values of metrics per scenario and side, from a catalogue run (objects or JSON)."""

    def __init__(self, results: Sequence[Any]) -> None:
        self.by_name: dict[str, dict[str, Any]] = {}
        for result in results:
            data = result.to_json() if hasattr(result, "to_json") else result
            self.by_name[data["scenario"]] = data
        self.probes: dict[str, Any] = {}

    def has(self, scenario: str) -> bool:
        return scenario in self.by_name

    def values(self, scenario: str, metric: str, side: str) -> list[float]:
        data = self.by_name.get(scenario)
        if data is None:
            return []
        for entry in data["metrics"]:
            if entry["metric"] == metric:
                return [v for v in entry[side]["values"] if v is not None]
        runs = data.get("real_runs" if side == "real" else "sim_runs", [])
        found = [metric_value(run, metric) for run in runs]
        return [v for v in found if v is not None]

    def mean(self, scenario: str, metric: str, side: str) -> float | None:
        values = self.values(scenario, metric, side)
        return statistics.fmean(values) if values else None

    def verdict(self, scenario: str, metric: str) -> str | None:
        data = self.by_name.get(scenario)
        if data is None:
            return None
        for entry in data["metrics"]:
            if entry["metric"] == metric:
                return entry["verdict"]
        return None

    def text(self, scenario: str, metric: str, side: str, scale: float = 1.0, unit: str = "") -> str:
        values = self.values(scenario, metric, side)
        if not values:
            return "not run"
        shown = sorted({_short(v * scale) for v in values}, key=lambda t: float(t.replace(",", "")))
        if len(shown) == 1:
            return f"{shown[0]}{unit}"
        mean = statistics.fmean(values) * scale
        return f"{_short(mean)}{unit} (runs: {', '.join(_short(v * scale) for v in values)})"


def _short(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if float(value).is_integer() and abs(value) < 1e9:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


# --------------------------------------------------------------------------------------
# Probes: pyzmq API statements


def probe_hwm_option() -> dict[str, Any]:
    """``setsockopt(zmq.HWM, n)``, ``sock.HWM = n``, ``ctx.hwm = n``, ``sock.hwm = n``."""
    import zmq

    out: dict[str, Any] = {"zmq.HWM": int(zmq.HWM)}
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.SUB)
        try:
            sock.setsockopt(zmq.HWM, 10000)
            out["setsockopt"] = "accepted"
        except zmq.ZMQError as exc:
            out["setsockopt"] = f"raises ZMQError {errno.errorcode.get(exc.errno or 0, exc.errno)} ({exc})"
        try:
            sock.HWM = 10000  # type: ignore[attr-defined]
            out["attribute_upper"] = "accepted"
        except zmq.ZMQError as exc:
            out["attribute_upper"] = f"raises ZMQError {errno.errorcode.get(exc.errno or 0, exc.errno)}"
        sock.hwm = 10000
        out["property_lower"] = {"sndhwm": sock.getsockopt(zmq.SNDHWM), "rcvhwm": sock.getsockopt(zmq.RCVHWM)}
        sock.close(linger=0)
        ctx.hwm = 10000  # type: ignore[attr-defined]
        other = ctx.socket(zmq.SUB)
        out["context_hwm"] = {"sndhwm": other.getsockopt(zmq.SNDHWM), "rcvhwm": other.getsockopt(zmq.RCVHWM)}
        out["defaults"] = {"sndhwm": other.getsockopt(zmq.SNDHWM), "rcvhwm": other.getsockopt(zmq.RCVHWM)}
        other.close(linger=0)
        fresh = ctx.socket(zmq.PUSH)
        out["defaults"] = {"sndhwm": fresh.getsockopt(zmq.SNDHWM), "rcvhwm": fresh.getsockopt(zmq.RCVHWM),
                           "linger": fresh.getsockopt(zmq.LINGER)}
        fresh.close(linger=0)
    finally:
        ctx.destroy(linger=0)
    return out


def probe_zsim_hwm_option() -> dict[str, Any]:
    """What zsim's scenario loader does with ``HWM`` and ``hwm``."""
    from zsim import spec
    from zsim.errors import ScenarioError

    def attempt(options: dict[str, Any]) -> str:
        raw = {"socket": [{"name": "sub", "type": "SUB", "connect": "inproc://x", "options": options},
                          {"name": "pub", "type": "PUB", "bind": "inproc://x"}]}
        try:
            scenario = spec.from_dict(raw)
        except ScenarioError as exc:
            return f"rejected: {exc}"
        sock = scenario.socket("sub")
        return f"sndhwm {sock.options.sndhwm}, rcvhwm {sock.options.rcvhwm}"

    from zsim.constants import OPTION_DEFAULTS

    return {"upper": attempt({"HWM": 10000}), "lower": attempt({"hwm": 10000}),
            "defaults": {"sndhwm": OPTION_DEFAULTS["sndhwm"], "rcvhwm": OPTION_DEFAULTS["rcvhwm"]}}


def probe_monitor_events() -> dict[str, Any]:
    import zmq

    names = sorted(name for name in dir(zmq) if name.startswith("EVENT_"))
    return {"EVENT_SND_HWM": hasattr(zmq, "EVENT_SND_HWM"), "events": names,
            "hwm_like": [n for n in names if "HWM" in n or "DROP" in n]}


def run_probes() -> dict[str, Any]:
    return {"hwm_option": probe_hwm_option(), "zsim_hwm_option": probe_zsim_hwm_option(),
            "monitor": probe_monitor_events()}


# --------------------------------------------------------------------------------------
# Claims


@dataclass
class Finding:
    real: str  # what real pyzmq showed
    sim: str  # what zsim predicts
    holds: str  # does the claim hold on real pyzmq: "yes", "no", "partly", "not checked"
    zsim_agrees: str  # does zsim's prediction match the real outcome: "yes", "no", "n/a"


@dataclass
class Claim:
    id: str
    source: str
    quote: str
    topic: str
    scenarios: tuple[str, ...]
    check: Callable[[Evidence], Finding]


def _same(a: float | None, b: float | None, tol: float = 0.0) -> str:
    if a is None or b is None:
        return "n/a"
    return "yes" if abs(a - b) <= tol else "no"


def _c_pub_dontwait(ev: Evidence) -> Finding:
    real = ev.mean("pub-dontwait", "sockets.pub.send_again", "real")
    sim = ev.mean("pub-dontwait", "sockets.pub.send_again", "sim")
    durable = ev.mean("durable-proxy-fixed", "sockets.pub.send_again", "real")
    nodrop_real = ev.text("xpub-nodrop-dontwait", "sockets.xpub.send_again", "real")
    nodrop_sim = ev.text("xpub-nodrop-dontwait", "sockets.xpub.send_again", "sim")
    return Finding(
        real=f"pub-dontwait: {ev.text('pub-dontwait', 'sockets.pub.send_again', 'real')} Again in 20,000 DONTWAIT sends at "
             f"SNDHWM 1 to a stalled SUB; durable-proxy-fixed: {_short(durable) if durable is not None else 'not run'} Again. "
             f"Only XPUB with XPUB_NODROP raises it ({nodrop_real} of 20,000).",
        sim=f"{ev.text('pub-dontwait', 'sockets.pub.send_again', 'sim')} Again (PUB drops silently); XPUB_NODROP: {nodrop_sim}",
        holds="no" if real == 0 else ("yes" if real else "not checked"),
        zsim_agrees=_same(real, sim),
    )


def _c_raise_sub_hwm(ev: Evidence) -> Finding:
    lost_default = ev.mean("slow-subscriber-ipc", "lost", "real")
    lost_fixed = ev.mean("slow-subscriber-ipc-rcvhwm", "lost", "real")
    sim_default = ev.mean("slow-subscriber-ipc", "lost", "sim")
    sim_fixed = ev.mean("slow-subscriber-ipc-rcvhwm", "lost", "sim")
    fast = ev.text("fast-publisher", "sockets.sub.received", "real")
    holds = "not checked"
    if lost_default is not None and lost_fixed is not None:
        holds = "partly" if lost_default > 0 and lost_fixed == 0 else "no"
    agrees = "n/a"
    if lost_default is not None and lost_fixed is not None and sim_default is not None and sim_fixed is not None:
        agrees = "yes" if (sim_default > 0) == (lost_default > 0) and (sim_fixed > 0) == (lost_fixed > 0) else "no"
    return Finding(
        real=f"ipc, 4,000 msgs at 2,000/s to a SUB doing 200/s for 2.2 s: lost {ev.text('slow-subscriber-ipc', 'lost', 'real')} "
             f"with RCVHWM 1000, {ev.text('slow-subscriber-ipc-rcvhwm', 'lost', 'real')} with RCVHWM 10000. The loss happens at the "
             f"PUB (its pipe fills through backpressure), a bigger SUB pipe absorbs a finite burst; a sustained overload "
             f"only fills it later. Over tcp (fast-publisher) nothing was lost at all: {fast} of 1,000 arrived.",
        sim=f"lost {ev.text('slow-subscriber-ipc', 'lost', 'sim')} (RCVHWM 1000), {ev.text('slow-subscriber-ipc-rcvhwm', 'lost', 'sim')} "
            f"(RCVHWM 10000), all dropped at the PUB",
        holds=holds,
        zsim_agrees=agrees,
    )


def _c_hwm_option(ev: Evidence) -> Finding:
    probe = ev.probes.get("hwm_option", {})
    zprobe = ev.probes.get("zsim_hwm_option", {})
    real = probe.get("setsockopt", "not run")
    return Finding(
        real=f"`setsockopt(zmq.HWM, 10000)`: {real}; `sock.HWM = n`: {probe.get('attribute_upper', '?')}; "
             f"`ctx.hwm = 10000` is ignored silently (new socket: {probe.get('context_hwm', '?')}); only the lowercase "
             f"property `sock.hwm = n` sets both ({probe.get('property_lower', '?')}). zmq.HWM = {probe.get('zmq.HWM', '?')} "
             "is the libzmq 2.x option number.",
        sim=f"`HWM` in a scenario: {zprobe.get('upper', '?')}; `hwm`: {zprobe.get('lower', '?')}",
        holds="no" if "accepted" not in str(real) and real != "not run" else ("yes" if real == "accepted" else "not checked"),
        zsim_agrees="yes" if "rejected" in str(zprobe.get("upper", "")) and "accepted" not in str(real) else "n/a",
    )


def _c_hwm_exact(ev: Evidence) -> Finding:
    inproc = ev.mean("inproc-summed-hwm", "sockets.push.sent", "real")
    tcp = ev.text("tcp-stalled-capacity", "sockets.push.sent", "real")
    ipc = ev.text("ipc-stalled-capacity", "sockets.push.sent", "real")
    half = ev.text("hwm-as-little-as-half", "latency_s.p50", "real", 1000, " ms")
    holds = "no" if inproc is not None and inproc != 5 else "not checked"
    sim_inproc = ev.mean("inproc-summed-hwm", "sockets.push.sent", "sim")
    agrees = []
    for scenario, metric in (("inproc-summed-hwm", "sockets.push.sent"), ("tcp-stalled-capacity", "sockets.push.sent"),
                             ("ipc-stalled-capacity", "sockets.push.sent"), ("hwm-as-little-as-half", "latency_s.p50")):
        verdict = ev.verdict(scenario, metric)
        if verdict in ("agrees", "differs"):
            agrees.append(verdict == "agrees")
    return Finding(
        real=f"PUSH SNDHWM 5 -> stalled PULL RCVHWM 7 accepts {_short(inproc) if inproc is not None else 'not run'} on inproc "
             f"(the sum), {tcp} on tcp and {ipc} on ipc (engines and kernel buffers); with a draining reader the "
             f"inproc queue of 20 keeps messages {half} (exact HWM: 200 ms).",
        sim=f"inproc {_short(sim_inproc) if sim_inproc is not None else '-'}, tcp "
            f"{ev.text('tcp-stalled-capacity', 'sockets.push.sent', 'sim')}, "
            f"ipc {ev.text('ipc-stalled-capacity', 'sockets.push.sent', 'sim')}, "
            f"latency {ev.text('hwm-as-little-as-half', 'latency_s.p50', 'sim', 1000, ' ms')}",
        holds=holds,
        zsim_agrees=("yes" if all(agrees) else "partly" if any(agrees) else "no") if agrees else "n/a",
    )


def _c_as_little_as_half(ev: Evidence) -> Finding:
    real = ev.mean("hwm-as-little-as-half", "latency_s.p50", "real")
    sim = ev.mean("hwm-as-little-as-half", "latency_s.p50", "sim")
    holds = "not checked" if real is None else ("yes" if 0.09 <= real <= 0.19 else "no")
    return Finding(
        real=f"inproc pipe of 20 (LWM 10), reader 10 ms/msg, writer faster: median wait {_short(real * 1000) if real else '-'} ms, "
             "i.e. the queue held about 10 to 20 messages, not a steady 20 (200 ms)",
        sim=f"median wait {_short(sim * 1000) if sim else '-'} ms",
        holds=holds,
        zsim_agrees="n/a" if real is None or sim is None else (
            "yes" if ev.verdict("hwm-as-little-as-half", "latency_s.p50") == "agrees" else "no"),
    )


def _c_drop_block(ev: Evidence) -> Finding:
    parts = []
    ok_real = []
    ok_sim = []
    for sender, receiver, drops in (("pub", "sub", True), ("router", "dealer_peer", True), ("push", "pull", False),
                                    ("dealer", "router_peer", False), ("pair", "pair_peer", False)):
        sent = ev.mean("hwm-action-by-type", f"sockets.{sender}.sent", "real")
        again = ev.mean("hwm-action-by-type", f"sockets.{sender}.send_again", "real")
        got = ev.mean("hwm-action-by-type", f"sockets.{receiver}.received", "real")
        sim_again = ev.mean("hwm-action-by-type", f"sockets.{sender}.send_again", "sim")
        if sent is None:
            continue
        parts.append(f"{sender.upper()}: sent {_short(sent)}, Again {_short(again)}, peer got {_short(got)}")
        ok_real.append((again == 0) == drops)
        if sim_again is not None:
            ok_sim.append((sim_again == 0) == (again == 0))
    return Finding(
        real="; ".join(parts) + " (30 attempts each, HWM 5+5, SNDTIMEO 20 ms)" if parts else "not run",
        sim="same counts" if ok_sim and all(ok_sim) else "differs" if ok_sim else "-",
        holds="yes" if ok_real and all(ok_real) else "no" if ok_real else "not checked",
        zsim_agrees="yes" if ok_sim and all(ok_sim) else "no" if ok_sim else "n/a",
    )


def _c_article_table(ev: Evidence) -> Finding:
    push_again = ev.mean("hwm-action-by-type", "sockets.push.send_again", "real")
    router_again = ev.mean("hwm-action-by-type", "sockets.router.send_again", "real")
    router_sent = ev.mean("hwm-action-by-type", "sockets.router.sent", "real")
    router_got = ev.mean("hwm-action-by-type", "sockets.dealer_peer.received", "real")
    sim_push = ev.mean("hwm-action-by-type", "sockets.push.send_again", "sim")
    sim_router = ev.mean("hwm-action-by-type", "sockets.router.send_again", "sim")
    if push_again is None:
        return Finding("not run", "-", "not checked", "n/a")
    return Finding(
        real=f"PUSH blocks ({_short(push_again)} sends timed out with Again, none dropped); ROUTER drops (0 Again, "
             f"{_short(router_sent)} sent, peer got {_short(router_got)})",
        sim=f"PUSH Again {_short(sim_push)}, ROUTER Again {_short(sim_router)}",
        holds="no" if push_again > 0 and router_again == 0 else "yes",
        zsim_agrees=_same(push_again, sim_push) if _same(router_again, sim_router) == "yes" else "no",
    )


def _c_inproc_sum(ev: Evidence) -> Finding:
    real = ev.mean("inproc-summed-hwm", "sockets.push.sent", "real")
    sim = ev.mean("inproc-summed-hwm", "sockets.push.sent", "sim")
    action = ev.mean("hwm-action-by-type", "sockets.pull.received", "real")
    return Finding(
        real=f"SNDHWM 5 + RCVHWM 7: {_short(real) if real is not None else '-'} accepted; 5 + 5: "
             f"{_short(action) if action is not None else '-'} (hwm-action-by-type)",
        sim=f"{_short(sim) if sim is not None else '-'} accepted",
        holds="yes" if real == 12 else ("no" if real is not None else "not checked"),
        zsim_agrees=_same(real, sim),
    )


def _c_sub_discards(ev: Evidence) -> Finding:
    real = ev.mean("pub-stalled-sub", "sockets.sub.received", "real")
    sim = ev.mean("pub-stalled-sub", "sockets.sub.received", "sim")
    return Finding(
        real=f"PUB SNDHWM 0 -> SUB RCVHWM 10 stalled 1 s, 100,000 msgs: {_short(real) if real is not None else 'not run'} "
             "received. With PUB SNDHWM 10 the PUB drops (pub-stalled-sub-sndhwm10: "
             f"{ev.text('pub-stalled-sub-sndhwm10', 'sockets.sub.received', 'real')} received): drops happen at the sender.",
        sim=f"{_short(sim) if sim is not None else '-'} received; with SNDHWM 10: "
            f"{ev.text('pub-stalled-sub-sndhwm10', 'sockets.sub.received', 'sim')}",
        holds="no" if real == 100000 else ("yes" if real is not None else "not checked"),
        zsim_agrees=_same(real, sim),
    )


def _c_missing_900(ev: Evidence) -> Finding:
    slow = ev.text("fast-publisher", "receivers.slow.received", "real")
    total = ev.mean("fast-publisher", "sockets.sub.received", "real")
    sim_total = ev.mean("fast-publisher", "sockets.sub.received", "sim")
    large = ev.mean("fast-publisher-large", "sockets.sub.received", "real")
    sim_large = ev.mean("fast-publisher-large", "sockets.sub.received", "sim")
    large_text = ""
    if large is not None:
        large_text = (f"; with 64 KB messages (3,000 sent) the kernel holds only ~40, so after ~2 s the PUB drops: "
                      f"{_short(large)} received in all, the rest dropped at the PUB")
    return Finding(
        real=f"1,000 sent at 1 ms over tcp; the SUB (100 ms/msg) had {slow} after 1.5 s, and all "
             f"{_short(total) if total is not None else '-'} once it drained: the 'missing' ones were queued (SUB pipe and "
             f"tcp buffers), not dropped{large_text}",
        sim=(f"slow phase {ev.text('fast-publisher', 'receivers.slow.received', 'sim')}, "
             f"total {_short(sim_total) if sim_total is not None else '-'}")
            + (f"; 64 KB: {_short(sim_large)} received, 1,000 dropped at the PUB" if sim_large is not None else ""),
        holds="no" if total == 1000 else ("partly" if total is not None else "not checked"),
        zsim_agrees=_same(total, sim_total),
    )


def _c_drops_at_pub(ev: Evidence) -> Finding:
    lost = ev.mean("slow-subscriber-ipc", "lost", "real")
    discard = ev.mean("pub-stalled-sub", "sockets.sub.received", "real")
    return Finding(
        real=f"the SUB never discards (pub-stalled-sub: {_short(discard) if discard is not None else '-'} of 100,000 with "
             f"RCVHWM 10 and an unlimited PUB); the {_short(lost) if lost is not None else '-'} losses of slow-subscriber-ipc "
             "are PUB drops",
        sim=f"drops by rule in the simulator: at the PUB's pipe (hwm) only; lost {ev.text('slow-subscriber-ipc', 'lost', 'sim')}",
        holds="yes" if discard == 100000 else "not checked",
        zsim_agrees=_same(discard, ev.mean("pub-stalled-sub", "sockets.sub.received", "sim")),
    )


def _c_slow_joiner_burst(ev: Evidence) -> Finding:
    real = ev.mean("slow-joiner", "sockets.sub.received", "real")
    sim = ev.mean("slow-joiner", "sockets.sub.received", "sim")
    return Finding(
        real=f"SUB connecting first, PUB binds and sends 1,000 back to back: {_short(real) if real is not None else 'not run'} received",
        sim=f"{_short(sim) if sim is not None else '-'} received",
        holds="yes" if real == 0 else ("no" if real is not None else "not checked"),
        zsim_agrees=_same(real, sim),
    )


def _c_slow_joiner_miss(ev: Evidence) -> Finding:
    window = ev.text("slow-joiner-paced", "join_window_s", "real", 1000, " ms")
    sim = ev.text("slow-joiner-paced", "join_window_s", "sim", 1000, " ms")
    values = ev.values("slow-joiner-paced", "join_window_s", "real")
    verdict = ev.verdict("slow-joiner-paced", "join_window_s")
    return Finding(
        real=f"publishing every 0.1 ms, the first message the new SUB got was published {window} after connect(); "
             "everything published before that was dropped at the PUB",
        sim=f"{sim}",
        holds="yes" if values and all(v > 0 for v in values) else "not checked",
        zsim_agrees={"agrees": "yes", "differs": "no"}.get(verdict or "", "n/a"),
    )


def _c_push_unfair(ev: Evidence) -> Finding:
    w1 = ev.text("push-late-joiner", "sockets.w1.received", "real")
    w2 = ev.text("push-late-joiner", "sockets.w2.received", "real")
    w1_mean = ev.mean("push-late-joiner", "sockets.w1.received", "real")
    verdict = [ev.verdict("push-late-joiner", m) for m in ("sockets.w1.received", "sockets.w2.received")]
    return Finding(
        real=f"100 tasks at 1 ms, worker 2 joins half way: worker 1 got {w1}, worker 2 got {w2}",
        sim=f"worker 1 {ev.text('push-late-joiner', 'sockets.w1.received', 'sim')}, worker 2 "
            f"{ev.text('push-late-joiner', 'sockets.w2.received', 'sim')}",
        holds="yes" if w1_mean is not None and w1_mean > 60 else ("no" if w1_mean is not None else "not checked"),
        zsim_agrees="yes" if all(v == "agrees" for v in verdict) else ("no" if None not in verdict else "n/a"),
    )


def _c_ventilator_no_sync(ev: Evidence) -> Finding:
    share = ev.mean("ventilator-unsynchronised", "largest_share", "real")
    return Finding(
        real=f"4 workers connecting as 100 tasks go out back to back: the first connected got "
             f"{ev.text('ventilator-unsynchronised', 'largest_share', 'real', 100, '%')} of the tasks",
        sim=f"{ev.text('ventilator-unsynchronised', 'largest_share', 'sim', 100, '%')}",
        holds="yes" if share is not None and share > 0.5 else ("no" if share is not None else "not checked"),
        zsim_agrees={"agrees": "yes", "differs": "no"}.get(ev.verdict("ventilator-unsynchronised", "largest_share") or "", "n/a"),
    )


def _ventilator(n: int, guide_ms: int) -> Callable[[Evidence], Finding]:
    name = f"ventilator-{n}-worker{'s' if n > 1 else ''}"

    def check(ev: Evidence) -> Finding:
        real = ev.mean(name, "elapsed_s", "real")
        lower = 5.050 / n  # the total work (expected 5,050 ms) split perfectly
        holds = "not checked"
        if real is not None:
            off = abs(real * 1000 - guide_ms) / guide_ms
            holds = "yes" if off <= 0.1 else "partly" if off <= 0.25 else "no"
        note = " The guide's 1,018 ms is below the expected total work / 4 (1,262 ms): not reproducible." if n == 4 else ""
        return Finding(
            real=f"elapsed {ev.text(name, 'elapsed_s', 'real', 1000, ' ms')} (guide: {guide_ms:,} ms; perfect split of the "
                 f"expected 5,050 ms: {lower * 1000:,.0f} ms).{note}",
            sim=f"{ev.text(name, 'elapsed_s', 'sim', 1000, ' ms')}",
            holds=holds,
            zsim_agrees={"agrees": "yes", "differs": "no"}.get(ev.verdict(name, "elapsed_s") or "", "n/a"),
        )

    return check


def _c_syncpub(ev: Evidence) -> Finding:
    values = []
    sims = []
    for i in range(1, 11):
        values += ev.values("syncpub", f"sockets.sub{i}.received", "real")
        sims += ev.values("syncpub", f"sockets.sub{i}.received", "sim")
    default = []
    for i in range(1, 11):
        default += ev.values("syncpub-default-hwm", f"sockets.sub{i}.received", "real")
    if not values:
        return Finding("not run", "-", "not checked", "n/a")
    return Finding(
        real=f"scaled to 100,000 updates: every subscriber received {_short(min(values))} to {_short(max(values))} with "
             f"SNDHWM 0" + (f"; with the default SNDHWM 1000: {_short(min(default))} to {_short(max(default))}" if default else ""),
        sim=f"{_short(min(sims))} to {_short(max(sims))}" if sims else "-",
        holds="yes" if min(values) == 100000 else "no",
        zsim_agrees="yes" if sims and min(sims) == min(values) and max(sims) == max(values) else "no",
    )


def _c_kamens(ev: Evidence) -> Finding:
    ipc = ev.text("termination-rcvhwm-ipc", "sockets.pull.received", "real")
    tcp = ev.text("termination-rcvhwm-tcp", "sockets.pull.received", "real")
    blocked = ev.mean("termination-rcvhwm-ipc", "processes.sender.term_blocked", "real")
    values = ev.values("termination-rcvhwm-ipc", "sockets.pull.received", "real")
    holds = "not checked"
    if values:
        holds = "yes" if all(v < 10 for v in values) else "partly" if any(v < 10 for v in values) else "no"
    return Finding(
        real=f"ipc: received {ipc} of 10, zmq_ctx_term blocked: {'yes' if blocked else 'no'}; tcp: {tcp} of 10. The loss is "
             "ipc-only (EPOLLHUP on the stopped engine, libzmq #4660) and a race.",
        sim=f"ipc {ev.text('termination-rcvhwm-ipc', 'sockets.pull.received', 'sim')}, tcp "
            f"{ev.text('termination-rcvhwm-tcp', 'sockets.pull.received', 'sim')}",
        holds=holds,
        zsim_agrees={"agrees": "yes", "differs": "no"}.get(ev.verdict("termination-rcvhwm-ipc", "sockets.pull.received") or "", "n/a"),
    )


def _c_linger(ev: Evidence) -> Finding:
    blocked = ev.mean("linger-term-blocks", "processes.sender.term_blocked", "real")
    zero = ev.mean("linger-zero-term", "processes.sender.term_blocked", "real")
    sim_blocked = ev.mean("linger-term-blocks", "processes.sender.term_blocked", "sim")
    sim_zero = ev.mean("linger-zero-term", "processes.sender.term_blocked", "sim")
    if blocked is None:
        return Finding("not run", "-", "not checked", "n/a")
    return Finding(
        real=f"10 messages queued for an endpoint nobody binds: ctx.term() "
             f"{'still blocked at the end of the run' if blocked else 'returned'} "
             f"with LINGER -1; {'returned at once' if zero == 0 else 'blocked'} with LINGER 0",
        sim=f"term blocked: {'yes' if sim_blocked else 'no'} (LINGER -1), {'yes' if sim_zero else 'no'} (LINGER 0)",
        holds="yes" if blocked == 1 and zero == 0 else "no",
        zsim_agrees="yes" if blocked == sim_blocked and zero == sim_zero else "no",
    )


def _c_event_snd_hwm(ev: Evidence) -> Finding:
    probe = ev.probes.get("monitor", {})
    return Finding(
        real=f"pyzmq has no `zmq.EVENT_SND_HWM` (exists: {probe.get('EVENT_SND_HWM', '?')}); libzmq 4.3.5 defines no HWM or drop "
             "event (the only queue statistic, ZMQ_EVENT_PIPES_STATS, is DRAFT and not in the bundled build)",
        sim="zsim reports drops per pipe and rule in its results instead (ledger.dropped_by_rule)",
        holds="no" if probe.get("EVENT_SND_HWM") is False else "not checked",
        zsim_agrees="n/a",
    )


def _c_durable_fix(ev: Evidence) -> Finding:
    again = ev.mean("durable-proxy-fixed", "sockets.pub.send_again", "real")
    total = ev.mean("durable-proxy-fixed", "sockets.sub.received", "real")
    broken = ev.mean("durable-proxy-broken", "sockets.sub.received", "real")
    sim_total = ev.mean("durable-proxy-fixed", "sockets.sub.received", "sim")
    if again is None:
        return Finding("not run", "-", "not checked", "n/a")
    return Finding(
        real=f"fixed: {_short(again)} 'Dropped' log lines (Again), {_short(total)} of 1,000 delivered; broken: "
             f"{_short(broken) if broken is not None else '-'} of 1,000. Neither version drops: the tcp buffers hold the backlog.",
        sim=(f"fixed: {ev.text('durable-proxy-fixed', 'sockets.pub.send_again', 'sim')} Again, "
             f"{_short(sim_total) if sim_total is not None else '-'} delivered"),
        holds="no" if again == 0 else "yes",
        zsim_agrees=_same(total, sim_total),
    )


def _c_defaults(ev: Evidence) -> Finding:
    probe = ev.probes.get("hwm_option", {})
    zprobe = ev.probes.get("zsim_hwm_option", {})
    defaults = probe.get("defaults", {})
    return Finding(
        real=f"new socket: {defaults}",
        sim=f"{zprobe.get('defaults', '?')}, LINGER -1",
        holds="yes" if defaults.get("sndhwm") == 1000 and defaults.get("rcvhwm") == 1000 else "not checked",
        zsim_agrees="yes" if zprobe.get("defaults", {}).get("sndhwm") == defaults.get("sndhwm") else "n/a",
    )


CLAIMS: tuple[Claim, ...] = (
    Claim("pub-dontwait-again", "durable", "Non-Blocking Send (zmq.DONTWAIT): Explicitly catch zmq.Again exceptions to log "
          "dropped messages", "dropping", ("pub-dontwait", "durable-proxy-fixed", "xpub-nodrop-dontwait"), _c_pub_dontwait),
    Claim("article-durable-fix", "durable", "With these fixes, the PUB and XPUB sockets will drop messages once their buffers "
          "reach 100. You'll see \"Dropped: Message X\" in the logs", "dropping", ("durable-proxy-fixed", "durable-proxy-broken"),
          _c_durable_fix),
    Claim("raise-sub-hwm-stops-drops", "dropped", "Fix: Increase the HWM on the receiver's socket. This gives the receiver more "
          "buffer space to hold incoming messages", "HWM", ("slow-subscriber-ipc", "slow-subscriber-ipc-rcvhwm", "fast-publisher"),
          _c_raise_sub_hwm),
    Claim("zmq-hwm-option", "dropped", "socket.setsockopt(zmq.HWM, 10000) # Set a higher HWM, e.g., 10,000 messages", "HWM",
          (), _c_hwm_option),
    Claim("article-missing-900-dropped", "dropped", "The publisher will report sending 1000 messages, while the subscriber might "
          "only report receiving 100. The missing 900? Dropped.", "dropping", ("fast-publisher", "fast-publisher-large"), _c_missing_900),
    Claim("hwm-exact", "durable", "High Water Mark (HWM): A flow-control mechanism that limits the number of messages queued in "
          "a ZeroMQ socket's buffer", "HWM", ("inproc-summed-hwm", "tcp-stalled-capacity", "ipc-stalled-capacity",
                                               "hwm-as-little-as-half"), _c_hwm_exact),
    Claim("hwm-as-little-as-half", "zguide", "the HWMs are not exact; ... the real buffer size may be much lower (as little as "
          "half), due to the way libzmq implements its queues", "HWM", ("hwm-as-little-as-half",), _c_as_little_as_half),
    Claim("pub-router-drop-others-block", "zguide", "PUB and ROUTER sockets will drop data if they reach their HWM, while other "
          "socket types will block", "blocking", ("hwm-action-by-type",), _c_drop_block),
    Claim("article-drop-block-table", "durable", "Drops messages: PUB, PUSH, XPUB, XSUB ... Blocks sender: REQ, REP, DEALER, "
          "ROUTER", "blocking", ("hwm-action-by-type",), _c_article_table),
    Claim("inproc-summed-hwm", "zguide", "Over the inproc transport, the sender and receiver share the same buffers, so the real "
          "HWM is the sum of the HWM set by both sides", "HWM", ("inproc-summed-hwm", "hwm-action-by-type"), _c_inproc_sum),
    Claim("sub-discards-at-rcvhwm", "durable", "Receiver-side (RCVHWM): The receiver's buffer discards new messages once full "
          "(applies to most socket types)", "dropping", ("pub-stalled-sub", "pub-stalled-sub-sndhwm10"), _c_sub_discards),
    Claim("drops-at-pub-side", "durable", "HWM drops happen on the sender side for PUB", "dropping",
          ("pub-stalled-sub", "slow-subscriber-ipc"), _c_drops_at_pub),
    Claim("event-snd-hwm", "durable", "Use zmq_socket_monitor to track socket events (e.g., ZMQ_EVENT_SND_HWM when SNDHWM is "
          "hit)", "HWM", (), _c_event_snd_hwm),
    Claim("default-hwm-1000", "zguide", "In ZeroMQ v3.x, it's set to 1,000 by default", "HWM", (), _c_defaults),
    Claim("slow-joiner-burst", "zguide", "Publisher binds to an endpoint and immediately sends 1,000 messages. Then the "
          "subscriber will most likely not receive anything.", "slow joiner", ("slow-joiner",), _c_slow_joiner_burst),
    Claim("slow-joiner-always-miss", "zguide", "the subscriber will always miss the first messages that the publisher sends",
          "slow joiner", ("slow-joiner-paced",), _c_slow_joiner_miss),
    Claim("push-first-connect-unfair", "zguide", "the first PULL socket to connect will grab an unfair share of messages",
          "slow joiner", ("push-late-joiner",), _c_push_unfair),
    Claim("ventilator-no-sync", "zguide", "the first one to successfully connect will get a whole load of messages in that short "
          "time while the others are also connecting", "slow joiner", ("ventilator-unsynchronised",), _c_ventilator_no_sync),
    Claim("ventilator-elapsed-1", "zguide", "1 worker: total elapsed time: 5034 msecs.", "blocking", ("ventilator-1-worker",),
          _ventilator(1, 5034)),
    Claim("ventilator-elapsed-2", "zguide", "2 workers: total elapsed time: 2421 msecs.", "blocking", ("ventilator-2-workers",),
          _ventilator(2, 2421)),
    Claim("ventilator-elapsed-4", "zguide", "4 workers: total elapsed time: 1018 msecs.", "blocking", ("ventilator-4-workers",),
          _ventilator(4, 1018)),
    Claim("syncpub-all-updates", "zguide", "Received 1000000 updates (ten subscribers, publisher with SNDHWM 0)", "slow joiner",
          ("syncpub", "syncpub-default-hwm"), _c_syncpub),
    Claim("kamens-rcvhwm-termination", "kamens", "if you set RCVHWM too low on the PULL end, in fact the socket termination does "
          "not hang on the PUSH end, and messages are lost ... 'Received 7'", "termination",
          ("termination-rcvhwm-ipc", "termination-rcvhwm-tcp"), _c_kamens),
    Claim("linger-term-hangs", "zguide", "zmq_ctx_destroy() will by default wait forever if there are pending connects or sends "
          "unless you set the LINGER to zero", "termination", ("linger-term-blocks", "linger-zero-term"), _c_linger),
)


# --------------------------------------------------------------------------------------
# Rendering


def evaluate_claims(results: Sequence[Any], probes: Mapping[str, Any] | None = None) -> list[tuple[Claim, Finding]]:
    evidence = Evidence(results)
    evidence.probes = dict(probes) if probes is not None else run_probes()
    findings = []
    for claim in CLAIMS:
        try:
            finding = claim.check(evidence)
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the others
            finding = Finding(f"(check failed: {type(exc).__name__}: {exc})", "-", "not checked", "n/a")
        findings.append((claim, finding))
    return findings


def render(findings: Sequence[tuple[Claim, Finding]]) -> str:
    lines = [
        "# Claims in the seed documents, checked",
        "",
        "Generated by `python -m validation` (validation/claims.py) from the scenario catalogue run on real pyzmq "
        "and in zsim. Seed documents (the texts zsim started from; not part of this repository): "
        + ", ".join(f"`{v}`" for v in SEEDS.values()) + ".",
        "",
        "*Holds?* says whether real pyzmq 27.3.0 (libzmq 4.3.5) behaved as the claim says; *zsim agrees?* whether the "
        "simulator predicted what real pyzmq did. Numbers are means over the replications (individual runs in brackets "
        "when they differ). The scenarios are in `validation/scenarios/`; the full numbers are in the validation report.",
        "",
        "| # | claim (source) | topic | holds? | real pyzmq showed | zsim predicts | zsim agrees? | scenarios |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for index, (claim, finding) in enumerate(findings, 1):
        holds = {"yes": "**yes**", "no": "**no**", "partly": "**partly**"}.get(finding.holds, finding.holds)
        scenarios = ", ".join(f"`{s}`" for s in claim.scenarios) if claim.scenarios else "probe"
        lines.append(
            f"| {index} | “{_md(claim.quote)}” ({SEEDS[claim.source]}) | {claim.topic} | {holds} | {_md(finding.real)} | "
            f"{_md(finding.sim)} | {finding.zsim_agrees} | {scenarios} |")
    counts = {key: sum(1 for _, f in findings if f.holds == key) for key in ("yes", "no", "partly", "not checked")}
    lines += ["", f"{len(findings)} claims: {counts['yes']} hold, {counts['no']} do not, {counts['partly']} partly, "
              f"{counts['not checked']} not checked in this run."]
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_claims(results: Sequence[Any], path: str | Path, probes: Mapping[str, Any] | None = None) -> Path:
    target = Path(path)
    target.write_text(render(evaluate_claims(results, probes)))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation.claims", description="Render the claims table.")
    parser.add_argument("--results", required=True, help="results.json of a catalogue run (report directory)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "claims.md"))
    args = parser.parse_args(argv)
    results = json.loads(Path(args.results).read_text())
    print(write_claims(results, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
