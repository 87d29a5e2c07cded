"""``zsim run --report``: the series behind the figures are exact, bounded and leave the
model alone; the figures' data matches the ledger; the page is self-contained and every
figure decodes in a real browser (headless Chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import scenario, unwritable_folder
from zsim import spec
from zsim.build import build
from zsim.cli import main
from zsim.ledger import DROPPED, RULES
from zsim.model.occupancy import FIELDS, Occupancy
from zsim.report_run import FIGURES, write_report
from zsim.report_run import data as report_data
from zsim.report_run.series import Series, SeriesRecorder, SeriesSet
from zsim.results import RunResult
from zsim.runner import run, simulate

ROOT = Path(__file__).resolve().parents[2]
PUB_SUB = ROOT / "examples" / "pub_sub_inproc.toml"
PUSH_PULL = ROOT / "examples" / "push_pull_tcp.toml"
PROXY = ROOT / "examples" / "xpub_xsub_proxy.toml"


# -- the bounded series ----------------------------------------------------------------------


def test_a_series_keeps_lowest_highest_and_last_per_bucket_and_merges_them_exactly():
    series = Series(1)
    # level 3 at 0.5, 1 at 0.7, 5 at 1.2, 2 at 3.5 (0 before), buckets of 1 s
    series.fold(np.array([0.5, 0.7, 1.2, 3.5]), np.array([[3], [1], [5], [2]]), 1.0)
    lo, hi, last = (a[:, 0].tolist() for a in series.dense(4))
    assert lo == [0, 1, 5, 2]  # bucket 0 starts at 0; bucket 1 starts at 1 (held since 0.7)
    assert hi == [3, 5, 5, 5]  # bucket 3 holds 5 until 3.5
    assert last == [1, 5, 5, 2]  # bucket 2 has no change: the level carried from bucket 1
    series.coarsen()  # buckets of 2 s: [0, 2) and [2, 4)
    lo, hi, last = (a[:, 0].tolist() for a in series.dense(2))
    assert (lo, hi, last) == ([0, 2], [5, 5], [5, 2])


def _brute(times: np.ndarray, values: np.ndarray, width: float, buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lowest, highest and last level per bucket, point by point (level 0 before the first)."""
    lo, hi, last = np.zeros(buckets, np.int64), np.zeros(buckets, np.int64), np.zeros(buckets, np.int64)
    level = 0
    i = 0
    for k in range(buckets):
        seen = [level]  # the level held at the bucket's start
        while i < len(times) and np.floor(times[i] / width) <= k:
            level = int(values[i])
            seen.append(level)
            i += 1
        lo[k], hi[k], last[k] = min(seen), max(seen), level
    return lo, hi, last


@pytest.mark.parametrize("seed", range(6))
def test_folding_in_any_chunks_with_any_coarsening_equals_the_point_by_point_answer(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    times = np.sort(np.round(rng.uniform(0, 50, n), 1))  # rounded: several changes at one instant
    values = rng.integers(0, 30, n)
    grid = SeriesSet(buckets=16, horizon_s=None)  # starts at 1 ms buckets: must widen many times
    series = grid.new(1)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 8))), replace=False)) if n > 1 else []
    for chunk_t, chunk_v in zip(np.split(times, cuts), np.split(values, cuts), strict=True):
        if len(chunk_t):
            grid.cover(float(chunk_t[-1]))
            series.fold(chunk_t, chunk_v[:, None], grid.width)
    grid.cover(50.0)
    buckets = grid.count(50.0)
    assert series.n <= grid.buckets
    lo, hi, last = series.dense(buckets)
    want = _brute(times, values, grid.width, buckets)
    assert lo[:, 0].tolist() == want[0].tolist()
    assert hi[:, 0].tolist() == want[1].tolist()
    assert last[:, 0].tolist() == want[2].tolist()
    assert int(hi.max()) == int(values.max())  # the peak survives every merge


def test_a_memory_budget_gives_every_series_fewer_wider_buckets_and_keeps_them_exact():
    """Many series: ``fit`` halves the buckets until the dense levels fit the budget; the
    levels are then exactly those of the coarser grid, and every peak survives."""
    rng = np.random.default_rng(7)
    grid = SeriesSet(buckets=256, horizon_s=50.0, max_bytes=40 * 64 * 3 * 8)  # 40 channels: room for 64 buckets
    data = []
    for _ in range(40):
        times = np.sort(np.round(rng.uniform(0, 50, 300), 2))
        values = rng.integers(0, 100, 300)
        series = grid.new(1)
        series.fold(times, values[:, None], grid.width)
        data.append((series, times, values))
        grid.fit()
    assert grid.buckets == 64 and grid.asked == 256 and grid.level_bytes() <= grid.max_bytes
    buckets = grid.count(50.0)
    assert buckets <= 64
    for series, times, values in data:
        assert series.n <= grid.buckets and len(series.idx) <= max(8, 2 * series.n) * 2
        lo, hi, last = series.dense(buckets)
        want = _brute(times, values, grid.width, buckets)
        assert (lo[:, 0].tolist(), hi[:, 0].tolist(), last[:, 0].tolist()) == tuple(w.tolist() for w in want)
        assert int(hi.max()) == int(values.max())
    tiny = SeriesSet(buckets=256, horizon_s=50.0, max_bytes=1)
    tiny.new(6)
    tiny.fit()
    assert tiny.buckets == 32  # MIN_BUCKETS: below it a figure says nothing; the budget is exceeded instead


def test_a_run_with_many_pipes_is_recorded_within_the_budget_and_the_page_says_so(tmp_path):
    subs = 40
    raw = {
        "scenario": {"name": "wide", "until_s": 1.0},
        "socket": [{"name": "pub", "type": "PUB", "bind": "tcp://127.0.0.1:5600", "options": {"sndhwm": 50}},
                   {"name": "s{i}", "count": subs, "type": "SUB", "connect": "tcp://127.0.0.1:5600",
                    "options": {"subscribe": "", "rcvhwm": 50}}],
        "send": [{"socket": "pub", "rate_per_s": 2000, "size_bytes": 100, "start_s": 0.05}],
        "recv": [{"socket": "s{i}", "service_s": 0.0004}],
    }
    budget = 2 * 2**20
    result, recorder = _recorded(raw, 0, max_bytes=budget)
    series = recorder.result
    assert series.buckets_asked == 512 and series.buckets < 512
    dense = sum(lv.lo.nbytes + lv.hi.nbytes + lv.last.nbytes for lv in series.pipes.values())
    dense += sum(lv.lo.nbytes + lv.hi.nbytes + lv.last.nbytes for _, _, lv in series.directions)
    assert dense <= budget
    for index, pipe in enumerate(result.summary["pipes"]):  # the peaks are still the model's
        levels = series.pipes.get(index)
        assert (int(levels.hi.max()) if levels is not None else 0) == pipe["max_depth"], pipe["name"]
    assert run(raw, 0).summary["ledger"] == result.summary["ledger"]
    write_report(result, series, spec.from_dict(raw), tmp_path / "r", command="zsim run wide --report r")
    html = (tmp_path / "r" / "report.html").read_text()
    assert f"({series.buckets} buckets instead of 512: this run has so many pipes and link directions" in html


def _recorded(path: Path | dict, seed: int = 0, **kwargs: object) -> tuple[RunResult, SeriesRecorder]:
    recorder = SeriesRecorder(**kwargs)  # type: ignore[arg-type]
    return run(path, seed, recorder=recorder), recorder


@pytest.fixture(scope="module")
def push_pull() -> tuple[RunResult, SeriesRecorder]:
    """push_pull_tcp.toml, seed 0, recorded (one run shared by the tests that only read it)."""
    return _recorded(PUSH_PULL)


@pytest.fixture(scope="module")
def push_pull_page(push_pull, tmp_path_factory) -> Path:
    result, recorder = push_pull
    folder = tmp_path_factory.mktemp("push-pull") / "report"
    write_report(result, recorder.result, spec.load(PUSH_PULL), folder, command="zsim run x --report y")
    return folder


def test_recorded_series_peak_and_end_equal_the_models_own_numbers(push_pull):
    result, recorder = push_pull
    series = recorder.result
    assert series is not None and series.pipes and series.directions
    for index, pipe in enumerate(result.summary["pipes"]):
        levels = series.pipes.get(index)
        peak = int(levels.hi.max()) if levels is not None else 0
        assert peak == pipe["max_depth"], pipe["name"]
        if levels is not None:
            assert int(levels.last[-1, 0]) == pipe["depth_at_end"], pipe["name"]
    for link_index, name, levels in series.directions:
        report = result.summary["links"][link_index]["directions"][name]
        for channel, field in enumerate(FIELDS):
            assert int(levels.hi[:, channel].max()) == report[field]["max"], (name, field)
            assert int(levels.last[-1, channel]) == report[field]["at_end"], (name, field)
    # the kernel of the stalled worker's direction held 2,749 messages (push_pull_tcp.toml's story)
    kernel = FIELDS.index("kernel_messages")
    assert max(int(levels.hi[:, kernel].max()) for _, name, levels in series.directions if name == "push->stalled") == 2749


def test_recording_changes_nothing_in_the_run_and_costs_nothing_without_it(push_pull):
    plain = run(PUSH_PULL, 0)
    recorded, _ = push_pull
    assert recorded.summary["ledger"] == plain.summary["ledger"]
    for key in plain.messages:
        assert np.array_equal(recorded.messages[key], plain.messages[key]), key
    model = build(spec.load(PUSH_PULL), 0)
    simulate(model)
    wires = [wire for link in model.world.links for wire in (link.c2b, link.b2c)]
    assert wires and all(type(wire.occupancy) is Occupancy for wire in wires)  # the plain class: no trace, no check per update
    assert all(pipe.trace is None for pipe in model.world.pipes)


def test_small_pending_folds_often_and_gives_the_same_series_and_keep_traces_keeps_the_depth_table():
    _, once = _recorded(PUSH_PULL, pending=10**12)  # everything folded at the end, in one go
    _, often = _recorded(PUSH_PULL, pending=2000)  # folded at every check of the run's monitor
    kept_result, kept = _recorded(PUSH_PULL, keep_traces=True, pending=2000)
    assert once.folds == 1 and often.folds > 5
    for other in (often, kept):
        assert other.result is not None and once.result is not None
        assert other.result.width_s == once.result.width_s
        for index, levels in once.result.pipes.items():
            assert np.array_equal(other.result.pipes[index].hi, levels.hi)
            assert np.array_equal(other.result.pipes[index].lo, levels.lo)
            assert np.array_equal(other.result.pipes[index].last, levels.last)
    # with --out the pipes' full traces stay for depth.parquet
    assert kept_result.depth and max(len(trace) for trace in kept_result.depth.values()) > 1000


def test_a_long_open_ended_run_stays_within_its_buckets():
    raw = scenario({"name": "push", "type": "PUSH", "bind": "inproc://q", "options": {"sndhwm": 50}},
                   {"name": "pull", "type": "PULL", "connect": "inproc://q", "options": {"rcvhwm": 50}},
                   sends=[{"socket": "push", "count": 60000, "interval_s": 0.001}],
                   recvs=[{"socket": "pull", "service_s": {"dist": "exponential", "mean_s": 0.0009}}])
    result, recorder = _recorded(raw, 3, buckets=32, pending=5000)
    assert recorder.folds > 5  # one per check of the run's monitor (every 16,384 events) once 5,000 values wait
    assert recorder.grid.width > 1.0  # started at 1 ms, doubled until 60 s fit in 32 buckets
    assert all(series.n <= 32 for series in recorder.grid.series)
    index = result.pipe_names.index("push->pull")
    levels = recorder.result.pipes[index] if recorder.result else None
    assert levels is not None and len(levels.times) <= 32
    assert int(levels.hi.max()) == result.summary["pipes"][index]["max_depth"] == 31


# -- the figures' data --------------------------------------------------------------------------


def _router_scenario() -> dict:
    """A ROUTER that sends every other message to a peer that does not exist (dropped with no
    pipe: unroutable) and the others to a slow DEALER (dropped at its full pipe: hwm)."""
    return scenario({"name": "router", "type": "ROUTER", "bind": "inproc://r", "options": {"sndhwm": 5}},
                    {"name": "dealer", "type": "DEALER", "connect": "inproc://r", "options": {"rcvhwm": 5}},
                    sends=[{"socket": "router", "count": 400, "interval_s": 0.001, "to": ["dealer", "ghost"]}],
                    recvs=[{"socket": "dealer", "service_s": 0.004}])


def test_drops_over_time_equal_the_ledgers_drops_per_pipe_and_rule():
    result = run(_router_scenario(), 1)
    drops = report_data.drops_over_time(result, result.summary["sim_time_s"], bins=50)
    table = result.messages
    dropped = table["state"] == DROPPED
    want: dict[tuple[str | None, str], int] = {}
    for pipe, sock, rule in zip(table["pipe"][dropped], table["socket"][dropped], table["rule"][dropped], strict=True):
        key = (result.pipe_names[pipe] if pipe >= 0 else f"socket {result.socket_names[sock]}", RULES[int(rule)])
        want[key] = want.get(key, 0) + 1
    got = {(line.pipe if line.pipe is not None else f"socket {line.label.split(' ')[0]}", line.rule): line.total for line in drops.lines}
    assert got == want
    assert want == {("socket router", "unroutable"): 200, ("router->dealer", "hwm"): 93}
    for line in drops.lines:
        assert int(line.counts.sum()) == line.total
    unroutable = drops.lines[0]
    assert unroutable.label == "router (no pipe): unroutable" and unroutable.pipe is None
    # every other send, one a millisecond from t = 0: 10 per 20 ms bin
    assert drops.bin_s == pytest.approx(result.summary["sim_time_s"] / 50)
    when = table["time"][dropped & (table["pipe"] < 0)]
    assert unroutable.counts.tolist() == np.histogram(when, drops.edges)[0].tolist()
    assert (unroutable.first_s, unroutable.last_s) == (when.min(), when.max())
    # per pipe, the summary says the same
    for pipe in result.summary["pipes"]:
        for rule, count in pipe["dropped_by_rule"].items():
            assert got[(pipe["name"], rule)] == count


def test_latency_panels_are_the_deliveries_per_send_time_bin_and_account_for_every_copy():
    result = run(_router_scenario(), 1)
    end = result.summary["sim_time_s"]
    panels = report_data.latency_by_receiver(result, end, bins=40)
    assert [p.receiver for p in panels] == ["dealer"]  # the unroutable copies were meant for nobody
    panel = panels[0]
    inbound = result.summary["sockets"]["dealer"]["inbound"]
    assert (panel.delivered, panel.meant, panel.lost) == (107, 200, 93)
    assert panel.delivered == inbound["delivered"] and panel.meant == inbound["copies"]
    assert panel.lost == inbound["dropped"] + inbound["discarded"] + inbound["lost_on_close"]
    assert panel.queued == inbound["queued_at_end"]
    table = result.messages
    mine = (table["state"] == 0) & (table["socket"] == result.socket_names.index("dealer"))
    t0, latency = table["t0"][mine], table["time"][mine] - table["t0"][mine]
    edges = np.linspace(0, end, 41)
    for k in range(40):
        inside = (t0 >= edges[k]) & (t0 < edges[k + 1]) if k < 39 else (t0 >= edges[k])
        if inside.any():
            assert panel.low[k] == latency[inside].min() and panel.high[k] == latency[inside].max()
        else:
            assert np.isnan(panel.median[k])  # no delivery: the line breaks, it is not drawn across
    assert panel.p99 == pytest.approx(result.summary["sockets"]["dealer"]["latency_s"]["p99"])


def test_depth_panels_name_the_direction_and_leave_out_subscription_only_directions(push_pull):
    result, recorder = push_pull
    panels = report_data.depth_panels(result, recorder.result)
    # the largest backlog first: on the shipped profile's 2 cores the fast worker falls behind too
    assert [p.direction for p in panels] == ["push->fast", "push->stalled"]
    stalled = panels[1]
    kernel_max = [link["directions"]["push->stalled"]["kernel_bytes"]["max"] for link in result.summary["links"]
                  if "push->stalled" in link["directions"]]
    assert stalled.transport == "tcp" and stalled.kernel_peak_bytes == max(kernel_max) == 2_773_741
    places = [line.place for line in stalled.lines]
    assert places == ["send pipe", "out batch", "kernel", "in engine", "recv pipe"]
    assert [line.peak for line in stalled.lines] == [96, 1, 2749, 9, 100]
    result, recorder = _recorded(PROXY)
    directions = {p.direction for p in report_data.depth_panels(result, recorder.result)}
    assert directions and all(not d.startswith(("sub", "subscriber")) for d in directions)  # SUB->XPUB carries subscriptions only


def test_topology_orders_columns_by_data_flow_and_puts_drops_on_their_connection():
    raw = spec.load(ROOT / "experiments" / "market_data" / "fanout.toml")
    small = dict(raw.raw)
    small["scenario"] = {**raw.raw["scenario"], "until_s": 1.8}
    result = run(small, 0)
    topo = report_data.topology(spec.from_dict(small, base_dir=raw.base_dir), result)
    column = {p.name: p.column for p in topo.processes}
    assert column["feed1"] == column["feed2"] == 0 and column["proxy"] == 1
    assert {column[f"fast{i}"] for i in range(1, 8)} == {2} and column["slow"] == 2
    by_pair = {(e.a, e.b): e for e in topo.edges}
    slow = by_pair[("slow", "xpub")]
    assert (slow.a_to_b, slow.b_to_a) == (False, True)  # data flows xpub -> slow only
    assert slow.dropped == result.summary["sockets"]["slow"]["inbound"]["dropped"] > 0 and slow.drop_rules == "hwm"
    assert slow.label == "tcp HWM 1,000+1,000"
    assert all(by_pair[(f"fast{i}", "xpub")].dropped == 0 for i in range(1, 8))
    sockets = {s.name: s for p in topo.processes for s in p.sockets}
    assert "overloaded" in sockets["slow"].flags
    assert sockets["xpub"].endpoints == ["bind tcp :6001"]


def test_a_column_of_hundreds_of_processes_is_folded_into_one_box():
    subs = [{"name": f"s{i}", "type": "SUB", "process": f"p{i}", "connect": "tcp://127.0.0.1:7000",
             "options": {"subscribe": [""]}} for i in range(60)]
    raw = scenario({"name": "pub", "type": "PUB", "process": "src", "bind": "tcp://127.0.0.1:7000"}, *subs,
                   sends=[{"socket": "pub", "count": 3, "interval_s": 0.01, "start_s": 0.2}], until_s=0.5,
                   processes=[{"name": "src"}] + [{"name": f"p{i}"} for i in range(60)])
    result = run(raw, 0)
    topo = report_data.topology(spec.from_dict(raw), result)
    assert len(topo.processes) == 1 + report_data.MAX_PER_COLUMN
    stub = topo.processes[-1]
    hidden = 60 - (report_data.MAX_PER_COLUMN - 1)
    assert stub.folded == hidden and stub.name == f"{hidden} more like p{60 - hidden}"
    folded = [e for e in topo.edges if e.hidden > 1]
    assert len(folded) == 1 and folded[0].hidden == hidden and folded[0].label.startswith(f"{hidden} x tcp")


# -- the page ---------------------------------------------------------------------------------


def _report(tmp_path: Path, path: Path | dict, seed: int = 0) -> tuple[Path, RunResult]:
    scen = spec.load(path) if isinstance(path, Path) else spec.from_dict(path)
    result, recorder = _recorded(scen, seed)
    write_report(result, recorder.result, scen, tmp_path / "report", command="zsim run x --report y")
    return tmp_path / "report", result


def test_the_page_is_self_contained_and_names_what_it_shows(tmp_path):
    raw = _router_scenario()
    raw["scenario"]["description"] = 'a <b>bold</b> & "quoted" claim'
    folder, result = _report(tmp_path, raw, 1)
    text = (folder / "report.html").read_text()
    assert sorted(p.name for p in folder.iterdir()) == sorted([*FIGURES, "report.html"])
    sources = re.findall(r'\ssrc="([^"]*)"', text)
    links = re.findall(r'\shref="([^"]*)"', text)
    assert len(sources) == 4 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert links and all(link.startswith("#") for link in links)
    assert "<script" not in text and "<link" not in text and "url(" not in text
    assert "a &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; claim" in text
    for name in ("router-&gt;dealer", "router (no pipe)", "unroutable", "hwm", "dealer"):
        assert name in text
    # the figures in the page are the files beside it
    import base64

    # (no [[link]]: network.png only says so and the page has no network section)
    assert "The scenario has no [[link]]" not in text and 'id="network"' not in text
    for source, figure in zip(sources, [name for name in FIGURES if name != "network.png"], strict=True):
        assert base64.b64decode(source.split(",", 1)[1]) == (folder / figure).read_bytes()


def test_link_directions_over_time_add_up_to_the_runs_own_numbers(tmp_path):
    # two_hosts: a 20 Mbit/s link offered more than it carries. The recorded series of each
    # direction ends with everything its queue took serialized and its queue empty, and its
    # largest level and drops are the run's own
    path = ROOT / "examples" / "two_hosts.toml"
    result, recorder = _recorded(path)
    series = recorder.result
    assert series is not None
    network = result.summary["network"]["wan"]
    elapsed = result.summary["sim_time_s"]
    recorded = {direction: levels for link, direction, levels in series.network if link == "wan"}
    assert set(recorded) == {"dc->branch", "branch->dc"}
    for direction, levels in recorded.items():
        carried = network[direction]
        assert levels.last[-1, 1] / 1e9 == pytest.approx(carried["utilisation"] * elapsed, rel=1e-9, abs=1e-9)
        assert levels.last[-1, 2] / 1e9 <= elapsed  # its last frame left before the end
        assert abs(int(levels.hi[:, 0].max()) - carried["max_queue_bytes"]) <= 1
        assert levels.last[-1, 3] == carried["queue_drops"] + carried["loss_drops"]
        assert levels.last[-1, 0] == 0  # drained: the queue does not hold its last level until the end
    panels = report_data.network_panels(result, series)
    (busiest,) = panels  # branch->dc carries only subscriptions: left out
    assert (busiest.link, busiest.direction) == ("wan", "dc->branch") and busiest.peak_busy == pytest.approx(1.0)
    width = np.diff(np.append(busiest.times, elapsed))
    # each bucket's share is its serialization, exactly: together, the run's
    assert float((busiest.busy * width).sum()) == pytest.approx(network["dc->branch"]["utilisation"] * elapsed, rel=1e-6)
    write_report(result, series, spec.load(path), tmp_path / "report", command="zsim run x --report y")
    text = (tmp_path / "report" / "report.html").read_text()
    assert '<h2 id="network">Network links</h2>' in text and 'href="#network"' in text
    assert len(re.findall(r'\ssrc="data:image/png;base64,', text)) == 5
    assert "pub-&gt;sub1" in text and "wan dc-&gt;branch" in text


def test_warnings_come_first_in_their_box(push_pull, push_pull_page):
    text = (push_pull_page / "report.html").read_text()
    warnings = push_pull[0].summary["warnings"]
    assert warnings
    box = text.index('class="warnings"')
    assert box < text.index('id="run"') and box < text.index("<img")
    for warning in warnings:
        assert warning["code"] in text


def test_a_run_without_drops_says_so_instead_of_drawing_an_empty_figure(push_pull_page):
    folder = push_pull_page
    text = (folder / "report.html").read_text()
    assert "push-pull-tcp, seed 0: No copy was dropped during the run." in text
    assert len(re.findall(r"<img ", text)) == 3
    assert (folder / "drops.png").stat().st_size > 0  # the file says the same (no stale figure of an earlier run)


def test_same_seed_same_figures(tmp_path):
    first, _ = _report(tmp_path / "a", PUB_SUB, 4)
    second, _ = _report(tmp_path / "b", PUB_SUB, 4)
    for name in FIGURES:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


# -- the command line -------------------------------------------------------------------------


def test_cli_run_report_writes_the_page_and_prints_where(tmp_path, capsys):
    assert main(["run", str(PUB_SUB), "--report", str(tmp_path / "r"), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'r' / 'report.html'} (self-contained) and topology.png, depth.png, latency.png, drops.png" in out
    assert (tmp_path / "o" / "depth.parquet").exists()
    text = (tmp_path / "r" / "report.html").read_text()
    assert f"--report {tmp_path / 'r'}" in text


def test_cli_report_dir_that_cannot_be_written_is_one_line_exit_1_before_the_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "zsim", "run", str(PUB_SUB), "--report", str(unwritable_folder(tmp_path))],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot be written" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""  # refused before the simulation


def test_cli_report_that_is_a_file_is_exit_2_and_a_failed_run_leaves_an_earlier_report_alone(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    assert main(["run", str(PUB_SUB), "--report", str(a_file)]) == 2
    assert "is a file" in capsys.readouterr().err and a_file.read_text() == "keep me"
    folder = tmp_path / "r"
    assert main(["run", str(PUB_SUB), "--report", str(folder)]) == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "mine.txt").write_text("mine")
    assert main(["run", str(PUB_SUB), "--report", str(folder), "--max-events", "100"]) == 2  # a limit stops the run
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "mine.txt"} == before
    assert (folder / "mine.txt").read_text() == "mine"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left behind


# -- in a browser ------------------------------------------------------------------------------

#: the flags headless Chromium needs on a closed network, as root, without a display
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
#: records, once the page has loaded, each image's decoded width into the DOM
PROBE = ('<script>window.addEventListener("load", () => { for (const img of document.images) '
         'img.setAttribute("data-natural-width", img.naturalWidth); document.body.setAttribute("data-images", '
         "document.images.length); });</script></body>")


def _decoded_widths(page: Path, tmp_path: Path) -> tuple[int, list[int]]:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.fail("headless Chromium is needed for this test: apt-get install chromium (bash dev.sh test installs it when run as root)")
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE))
    proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=10000",
                           "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    images = re.search(r'data-images="(\d+)"', proc.stdout)
    assert images, "the page did not finish loading in Chromium"
    return int(images.group(1)), [int(w) for w in re.findall(r'data-natural-width="(\d+)"', proc.stdout)]


@pytest.mark.slow
def test_every_figure_renders_in_headless_chromium(tmp_path):
    folder, _ = _report(tmp_path, PUB_SUB)
    count, widths = _decoded_widths(folder / "report.html", tmp_path)
    assert count == 4 and len(widths) == 4
    assert all(width > 0 for width in widths), widths
    # the check can fail: a figure whose data is not a PNG does not decode
    broken = tmp_path / "broken" / "report.html"
    broken.parent.mkdir()
    broken.write_text(re.sub(r"base64,[A-Za-z0-9+/=]{40}", "base64,AAAA", (folder / "report.html").read_text(), count=1))
    count, widths = _decoded_widths(broken, tmp_path)
    assert count == 4 and sorted(widths)[0] == 0


def test_a_process_with_more_sockets_than_a_box_holds_draws_the_rest_as_one_row():
    """1,000 subscribers of one template in one process made a figure 1,000 rows high (11 s
    and 260 MB to draw): beyond ``MAX_PER_BOX`` they are one row, their connections one edge
    that says how many it stands for; a socket with drops keeps its own row."""
    subs = 60
    raw = {
        "scenario": {"name": "wide", "profile": "ideal"},
        "socket": [{"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}},
                   {"name": "s{i}", "count": subs, "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": "", "rcvhwm": 5}}],
        "send": [{"socket": "pub", "count": 200, "interval_s": 0.001, "start_s": 0.01}],
        # s45 is the only slow one: it must stay visible
        "recv": [{"socket": f"s{i}", "service_s": 0.004 if i == 45 else 0.0001} for i in range(subs)],
    }
    scen = spec.from_dict(raw)
    topo = report_data.topology(scen, run(scen, 0))
    (box,) = topo.processes
    names = [s.name for s in box.sockets]
    assert len(names) == report_data.MAX_PER_BOX
    assert "s45" in names and names[0] == "pub"
    stub = box.sockets[-1]
    hidden = subs + 1 - (len(names) - 1)
    assert stub.name == f"{hidden} more sockets of main"
    assert sum(e.hidden for e in topo.edges) == subs  # every connection is drawn or counted once
    (folded,) = [e for e in topo.edges if stub.name in (e.a, e.b)]
    assert folded.hidden == hidden and folded.label.startswith(f"{hidden} x ")
    assert [e.dropped > 0 for e in topo.edges if "s45" in (e.a, e.b)] == [True]


def test_the_page_leads_with_the_answer_and_is_green_only_when_nothing_was_lost(tmp_path):
    # issue 30: pages with 4.65 % loss opened with a green "The run raised no warning"
    lossy = scenario({"name": "pub", "type": "PUB", "bind": "tcp://*:5556", "options": {"sndhwm": 5}},
                     {"name": "sub", "type": "SUB", "connect": "tcp://127.0.0.1:5556", "options": {"subscribe": [""], "rcvhwm": 5}},
                     sends=[{"socket": "pub", "interval_s": 0.0005, "start_s": 0.05, "count": 1000, "size_bytes": 20000}],
                     recvs=[{"socket": "sub", "pause_every_s": 0.25, "pause_s": 0.2}], until_s=1.0)
    folder, result = _report(tmp_path / "lossy", lossy)
    text = (folder / "report.html").read_text()
    assert not result.summary["warnings"]  # a design that drops without any warning ...
    inbound = result.summary["sockets"]["sub"]["inbound"]
    assert inbound["dropped"] > 0
    answer = text[text.index('id="answer"'):text.index('id="run"')]
    assert 'class="answer"' in text[text.index('id="answer"') - 30:] and "class=\"calm\" id=\"answer\"" not in text
    lost = inbound["copies"] - inbound["delivered"]
    # the receivers table's loss %, to the digit (issue 41: the answer said 89.1 %, the table 90.32 %)
    assert (f"sub did not get {100 * inbound['loss_fraction']:.2f} % of the copies meant for it ({lost:,} of "
            f"{inbound['copies']:,}): ") in answer
    assert f"{inbound['dropped']:,} dropped at pub-&gt;sub" in answer
    assert text.index('id="answer"') < text.index('id="warnings"') < text.index("<img")
    assert 'class="calm" id="warnings"' not in text  # ... no longer opens green
    # every pipe of the direction that carried copies is listed, the PUB's own send pipe too
    pipes = text[text.index('id="pipes"'):]
    assert "pub-&gt;sub (tcp send)" in pipes and "pub-&gt;sub (tcp recv)" in pipes
    calm, _ = _report(tmp_path / "calm", {**lossy, "recv": [{"socket": "sub"}]})
    page = (calm / "report.html").read_text()
    assert 'class="calm" id="answer"' in page and "Every copy meant for a receiver reached it (1,000 copies to 1 receiver)" in page


def test_latency_panels_pool_a_templates_members_and_come_worst_first():
    # issue 30: one panel per member (14 identical subscribers: 14 panels), in no useful order
    raw = scenario({"name": "pub", "type": "PUB", "bind": "inproc://feed", "options": {"sndhwm": 5}},
                   {"name": "s{i}", "type": "SUB", "count": 4, "connect": "inproc://feed", "options": {"subscribe": [""], "rcvhwm": 5}},
                   {"name": "slow", "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": [""], "rcvhwm": 5}},
                   sends=[{"socket": "pub", "interval_s": 0.001, "count": 300, "size_bytes": 10}],
                   recvs=[{"socket": "s", "service_s": 0.0001}, {"socket": "slow", "service_s": 0.002}], until_s=0.5)
    scen = spec.from_dict(raw)
    result, _ = _recorded(scen, 0)
    members = {name: t.name for t in scen.templates if t.kind == "socket" for name in t.members}
    panels = report_data.latency_by_receiver(result, 0.5, bins=20, members=members)
    assert [p.receiver for p in panels] == ["slow", "s (4 members)"]  # the one that lost most first
    pooled = panels[1]
    each = [report_data.latency_by_receiver(result, 0.5, bins=20)]
    singles = {p.receiver: p for p in each[0]}
    assert pooled.meant == sum(singles[f"s{i}"].meant for i in range(4))
    assert pooled.delivered == sum(singles[f"s{i}"].delivered for i in range(4))
    assert panels[0].lost > 0 and pooled.lost == 0


def test_copies_on_their_way_at_the_end_are_not_losses_but_a_growing_backlog_is(tmp_path):
    # issue 30: a page whose only "loss" was 1 copy still queued when the run ended opened
    # with an orange "sub lost 0.1 %": that copy was on its way (the horizon's)
    from zsim.report_run import headline

    raw = scenario({"name": "pub", "type": "PUB", "bind": "inproc://feed"},
                   {"name": "sub", "type": "SUB", "connect": "inproc://feed", "options": {"subscribe": [""]}},
                   sends=[{"socket": "pub", "interval_s": 0.001, "count": 100}], recvs=[{"socket": "sub"}])
    scen = spec.from_dict(raw)
    inbound = {"copies": 1000, "delivered": 999, "forwarded": 0, "dropped": 0, "discarded": 0, "lost_on_close": 0,
               "queued_at_end": 1, "dropped_by": {}, "loss_fraction": 0.001}
    summary = {"sockets": {"sub": {"type": "SUB", "inbound": inbound, "latency_s": {"p99": 0.002}}, "pub": {"type": "PUB"}},
               "warnings": [], "senders": {}}
    (line,) = headline(summary, scen)
    assert line.startswith("Every copy meant for a receiver reached it, or was on its way when the run ended "
                           "(1 still queued: the horizon's, not losses; the receivers table's loss % counts them) "
                           "(1,000 copies to 1 receiver)")
    # the same count in a backlog that grows (overloaded to the end) is not calm
    summary["warnings"] = [{"path": "socket[sub]", "code": "backlog_at_end", "message": "..."}]
    (line,) = headline(summary, scen)
    assert line.startswith("sub did not get 0.10 % of the copies meant for it (1 of 1,000): 1 still queued when the run ended, "
                           "in a backlog that was still growing (backlog_at_end)")
    # and a drop is a loss, counted with the copies still queued, which are said apart (the
    # receivers table's loss %: issue 41)
    summary["warnings"] = []
    inbound.update(delivered=989, dropped=10, dropped_by={"pub->sub": 10}, loss_fraction=0.011)
    (line,) = headline(summary, scen)
    assert line.startswith("sub did not get 1.10 % of the copies meant for it (11 of 1,000): 10 dropped at pub->sub; 1 still "
                           "queued when the run ended (on their way: the horizon's); p99 latency")
    # a real run: an overloaded receiver with a backlog at the end gets the orange box
    slow = {**raw, "send": [{"socket": "pub", "interval_s": 0.001, "count": 400}],
            "recv": [{"socket": "sub", "service_s": {"dist": "constant", "value_s": 0.002}}],
            "scenario": {**raw["scenario"], "until_s": 0.3}}
    slow["socket"][0]["options"] = {"sndhwm": 0}
    slow["socket"][1]["options"] = {"subscribe": [""], "rcvhwm": 0}
    folder, result = _report(tmp_path, slow)
    assert any(w["code"] == "backlog_at_end" for w in result.summary["warnings"])
    text = (folder / "report.html").read_text()
    assert 'class="answer" id="answer"' in text and "in a backlog that was still growing" in text


def test_a_link_queue_drawn_drains_between_trains_and_is_empty_after_the_last():
    # a burst of 200 x 1 KB into a 1 Mbit/s link: its queue fills, then drains for a second and
    # more with no train queued; the figure must not hold the last train's level meanwhile
    raw = {
        "scenario": {"name": "slow-link-drain", "until_s": 4.0},
        "host": [{"name": "a"}, {"name": "b"}],
        "link": [{"hosts": ["a", "b"], "bandwidth_bps": 1e6}],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}],
        "socket": [{"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5555"], "options": {"sndhwm": 0}},
                   {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"]}],
        "send": [{"socket": "push", "count": 200, "interval_s": 0, "size_bytes": 1024}],
        "recv": [{"socket": "pull"}],
    }
    result, recorder = _recorded(raw)
    (panel,) = report_data.network_panels(result, recorder.result)
    carried = result.summary["network"]["a-b"]["a->b"]
    assert abs(int(panel.queue_bytes.max()) - carried["max_queue_bytes"]) <= 1
    busy = np.flatnonzero(panel.busy > 0)
    assert (panel.queue_bytes[int(busy[-1]) + 1:] == 0).all()
    # between trains the recorded level is the last train's; where a bucket had no train of its
    # own the figure draws what was left of it at the bucket's start instead: never more than
    # the recorded level, and less in such buckets (TCP small queues keep a train coming every
    # few buckets here, so there are a few)
    ((_, _, levels),) = recorder.result.network[:1]
    recorded = levels.hi[:, 0]
    assert (panel.queue_bytes <= recorded).all() and (panel.queue_bytes < recorded).any()


def test_the_readers_pauses_are_shaded_on_its_depth_panel(tmp_path):
    # a subscriber that pauses 50 ms about every 200 ms: its panel carries each recorded pause
    # (the run's summary), the other subscriber's none, and the figure's legend says what the shade is
    raw = {
        "scenario": {"name": "pausing", "until_s": 2.0},
        "process": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "socket": [{"name": "pub", "type": "PUB", "process": "a", "bind": "tcp://*:5556"},
                   {"name": "slow", "type": "SUB", "process": "b", "connect": "tcp://localhost:5556", "options": {"subscribe": [""]}},
                   {"name": "fast", "type": "SUB", "process": "c", "connect": "tcp://localhost:5556", "options": {"subscribe": [""]}}],
        "send": [{"socket": "pub", "rate_per_s": 2000, "size_bytes": 100}],
        "recv": [{"socket": "slow", "pause_every_s": 0.2, "pause_s": 0.05}, {"socket": "fast"}],
    }
    result, recorder = _recorded(raw)
    panels = {p.direction: p for p in report_data.depth_panels(result, recorder.result)}
    slow = result.summary["receivers"]["recv.slow"]
    recorded = [tuple(p) for p in slow["pauses"]]
    assert len(recorded) >= 5 and panels["pub->slow"].pauses == recorded
    assert panels["pub->slow"].pause_count == slow["pause_count"] == len(recorded)
    assert all(panel.pauses == [] for direction, panel in panels.items() if direction != "pub->slow")
    # the figure shades them and says so in its legend (and how many, when the record ended)
    from zsim import plotting

    drawn: list = []
    monkeypatch_save = plotting._save
    try:
        plotting._save = lambda fig, path: drawn.append(fig) or path  # type: ignore[assignment]
        plotting.depth_figure(list(panels.values()), tmp_path / "depth.png", title="t", note="n")
        panels["pub->slow"].pause_count = 5000
        plotting.depth_figure(list(panels.values()), tmp_path / "depth.png", title="t", note="n")
    finally:
        plotting._save = monkeypatch_save
    legends = [[t.get_text() for t in fig.legends[0].get_texts()] for fig in drawn]
    assert "the reader paused (shaded)" in legends[0]
    assert f"the reader paused (shaded; the first {len(recorded)} of 5,000 pauses recorded)" in legends[1]
    spans = [p for p in drawn[0].axes[0].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert len(spans) >= len(recorded)


def test_the_warning_box_calls_figures_artefacts_only_when_a_warning_says_so():
    # cpu_contention is the design's answer (workers share cores), not an artefact of the horizon
    from zsim.report_run import _warnings

    scenario = spec.from_dict({"scenario": {"name": "w"}, "socket": [{"name": "a", "type": "PUSH", "bind": ["inproc://x"]}]})
    contention = {"code": "cpu_contention", "path": "thread[recv.a]", "message": "waited 5 ms for a core"}
    overloaded = {"code": "overloaded", "path": "recv[a].service_s", "message": "offered utilisation 1.2"}
    assert "No figure below is an artefact of the horizon" in _warnings({"warnings": [contention]}, scenario)
    both = _warnings({"warnings": [contention, overloaded]}, scenario)
    assert "describe this run's horizon or setup" in both and "No figure below" not in both
    late = {"code": "starts_after_horizon", "path": "send[a]", "message": "starts at 5 s, after until_s"}
    assert "describe this run's horizon or setup" in _warnings({"warnings": [late]}, scenario)


def test_the_answer_and_the_receivers_table_give_one_loss_with_the_queued_copies_said_apart(tmp_path):
    # issue 41, finding 6: the answer said "lost 89.1 %" (drops only), the table 90.32 %
    # (with the copies still queued at the end): one page, two losses
    raw = scenario({"name": "pub", "type": "PUB", "bind": "tcp://*:5556", "options": {"sndhwm": 5}},
                   {"name": "sub", "type": "SUB", "connect": "tcp://127.0.0.1:5556", "options": {"subscribe": [""], "rcvhwm": 5}},
                   sends=[{"socket": "pub", "interval_s": 0.0005, "start_s": 0.05, "count": 1000, "size_bytes": 20000}],
                   recvs=[{"socket": "sub", "service_s": 0.002}], until_s=0.3)
    folder, result = _report(tmp_path, raw)
    inbound = result.summary["sockets"]["sub"]["inbound"]
    assert inbound["dropped"] > 0 and inbound["queued_at_end"] > 0  # both kinds of copy it did not get
    text = (folder / "report.html").read_text()
    answer = text[text.index('id="answer"'):text.index('id="warnings"')]
    table = text[text.index('id="receivers"'):]
    shown = f"{100 * inbound['loss_fraction']:.2f} %"
    assert re.search(rf'<td class="n( bad)?">{re.escape(shown)}</td>', table)  # the table's loss % column
    missed = inbound["copies"] - inbound["delivered"]
    assert f"sub did not get {shown} of the copies meant for it ({missed:,} of {inbound['copies']:,}): " in answer
    assert f"{inbound['dropped']:,} dropped at pub-&gt;sub" in answer
    assert f"; {inbound['queued_at_end']:,} still queued when the run ended" in answer
    # zsim explain leads with the same sentence (the same number, the same definition)
    from zsim.explain import explain

    found = explain(result, None, spec.from_dict(raw))
    assert any(line.startswith(f"sub did not get {shown} of the copies meant for it ({missed:,} of") for line in found.answer)
    assert f"sub did not get {shown} of the copies" in found.text()


def test_a_deployment_with_switches_is_drawn_with_its_links_load():
    # issue 42: the run page's network figure draws the hosts, the switch and each link, coloured
    # by its busier direction's busy share of the run (data.network_map); without switches the
    # topology's host boxes already show the deployment, and nothing is added
    from zsim.report_run import data

    raw = {"scenario": {"name": "rack", "until_s": 3.0},
           "host": [{"name": "a"}, {"name": "server"}], "switch": [{"name": "tor"}],
           "link": [{"name": "a-tor", "hosts": ["a", "tor"], "bandwidth_bps": 1e9},
                    {"name": "uplink", "hosts": ["tor", "server"], "bandwidth_bps": 10e6}],
           "process": [{"name": "pa", "host": "a"}, {"name": "ps", "host": "server"}],
           "socket": [{"name": "push", "type": "PUSH", "process": "pa", "connect": ["tcp://server:6000"]},
                      {"name": "pull", "type": "PULL", "process": "ps", "bind": ["tcp://*:6000"]}],
           "send": [{"socket": "push", "count": 2000, "interval_s": 0, "size_bytes": 1024, "start_s": 0.5}],
           "recv": [{"socket": "pull"}]}
    scenario = spec.from_dict(raw)
    summary = run(scenario, 0).summary
    drawn = data.network_map(scenario, summary)
    assert drawn is not None and sorted(drawn.nodes) == [("a", "host"), ("server", "host"), ("tor", "switch")]
    busy = {label.split("\n")[0]: share for _, _, label, share in drawn.edges}
    assert busy["uplink"] == summary["network"]["uplink"]["tor->server"]["utilisation"] > 0.5
    assert busy["a-tor"] < 0.05
    assert data.network_map(spec.from_dict({**raw, "switch": [], "link": [{"name": "direct", "hosts": ["a", "server"],
                                                                             "bandwidth_bps": 10e6}]}), summary) is None
