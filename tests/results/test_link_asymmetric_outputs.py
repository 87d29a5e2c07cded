"""What the answers say of an asymmetric link (issue 42, finding 5): a link of 100 Mbit/s
a -> c and 10 Mbit/s c -> a (its ``reverse``), a PUB on host c offering 82 Mbit/s to a SUB
on host a. The slow way back is the one oversubscribed: the summary, ``zsim run``'s
network table, the warning, ``zsim explain`` and the run page give each direction its own
rate, delay and queue, never the forward direction's for both."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

import zsim
from zsim.cli import main
from zsim.results import RunResult

SCENARIO = """\
[scenario]
name = "asymmetric-link"
until_s = 1.5

[[host]]
name = "a"

[[host]]
name = "c"

[[link]]
hosts = ["a", "c"]
bandwidth_bps = 100e6
latency_s = 0.002
queue_bytes = 500000
reverse = { bandwidth_bps = 10e6, latency_s = 0.008, queue_bytes = 60000 }

[[process]]
name = "desk"
host = "a"

[[process]]
name = "feed"
host = "c"

[[socket]]
name = "pub"
type = "PUB"
process = "feed"
bind = ["tcp://*:5556"]

[[socket]]
name = "sub"
type = "SUB"
process = "desk"
connect = ["tcp://c:5556"]
options = { subscribe = [""] }

[[send]]
socket = "pub"
rate_per_s = 5000
size_bytes = 2048
start_s = 0.3
duration_s = 1.0

[[recv]]
socket = "sub"
"""


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = tmp_path_factory.mktemp("asym") / "asym.toml"
    found.write_text(SCENARIO)
    return found


@pytest.fixture(scope="module")
def result(path: Path) -> RunResult:
    return zsim.run(path, 0)


def test_the_summary_gives_each_direction_its_own_rate_delay_and_queue(result):
    network = result.summary["network"]["a-c"]
    assert {way: (d["bandwidth_bps"], d["latency_s"], d["queue_limit_bytes"]) for way, d in network.items()} == {
        "a->c": (100e6, 0.002, 500_000), "c->a": (10e6, 0.008, 60_000)}
    back = network["c->a"]
    # the 82 Mbit/s the PUB offers is 8.2 times the way back's 10 Mbit/s (not 0.82 of the forward 100)
    assert back["offered_utilisation"] == pytest.approx(back["offered_bps"] / 10e6, rel=1e-12)
    assert back["offered_utilisation"] > 7
    assert back["goodput_bps"] < 10e6 and back["active_utilisation"] > 0.95


def test_the_warning_names_the_slow_directions_own_rate(result):
    (warning,) = [w for w in result.summary["warnings"] if w["code"] == "link_oversubscribed"]
    assert warning["message"].startswith("link 'a-c' c->a (10 Mbit/s) was offered ")


def test_zsim_run_prints_each_directions_rate_and_delay(path, capsys):
    assert main(["run", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    forward = next(line for line in lines if line.startswith("a-c a->c "))
    back = next(line for line in lines if line.startswith("a-c c->a "))
    # rate, then what was offered that way (zsim run's offered column), then the delay
    assert forward.split()[2:4] + forward.split()[6:8] == ["100", "Mb/s", "2", "ms"]
    assert back.split()[2:4] + back.split()[6:8] == ["10", "Mb/s", "8", "ms"]


def test_explain_states_the_rate_of_the_way_it_was_offered(path, result, capsys):
    assert main(["explain", str(path)]) == 0
    text = capsys.readouterr().out
    back = result.summary["network"]["a-c"]["c->a"]
    assert "crosses link a-c (c->a: 10 Mbit/s, 8 ms one way)" in text
    assert (f"Link a-c, 10 Mbit/s c->a (100 Mbit/s a->c), was offered {back['offered_bps'] / 1e6:.3g} Mbit/s c->a by the "
            "writers of the connections crossing it") in text
    assert "The 100 Mbit/s link" not in text and "The 10 Mbit/s link" not in text


def test_the_run_page_draws_and_tabulates_each_direction(path, tmp_path):
    assert main(["run", str(path), "--report", str(tmp_path / "page")]) == 0
    page = html.unescape((tmp_path / "page" / "report.html").read_text())
    assert "link 'a-c' c->a (10 Mbit/s) was offered" in page
    network = page[page.index('id="network"'):]
    assert "100 Mbit/s" in network and "10 Mbit/s" in network


def test_the_topology_and_the_exported_programs_header_name_both_directions(path, result):
    from zsim import spec
    from zsim.export import export_pyzmq
    from zsim.report_run.data import topology

    scenario = spec.load(path)
    (edge,) = topology(scenario, result).edges
    assert edge.label.endswith("\nover a-c: a->c 100 Mbit/s, 2 ms; c->a 10 Mbit/s, 8 ms")
    header = " ".join(export_pyzmq(scenario).split('"""')[1].split())
    assert "the links (a-c a->c 100 Mbit/s and 2 ms, c->a 10 Mbit/s and 8 ms)" in header
