"""A link offered more than it carries (issue 41, finding 1): a PUB on host a sends 5,000 x
2,048 B a second (82 Mbit/s of ZMTP frames) to a SUB on host c behind a 10 Mbit/s link.
The link sets the pace (about 580 copies/s get across), the PUB drops the rest at its
SNDHWM; the link's queue drops nothing (TCP small queues keep it short), so
``link_saturated`` stays silent. What the writers offered each direction, against what it
carries, is the warning ``link_oversubscribed``, the metrics
``network.<link>.<a>-><b>.offered_bps`` and ``offered_utilisation``, a statement of
``zsim explain`` (whose arrival rate is what arrived, not what was sent) and a line of the
run page's answer."""

from __future__ import annotations

import html
import re
import tomllib
from pathlib import Path

import pyarrow.dataset as ds
import pytest

import zsim
from zsim import compare as cmp
from zsim.cli import main
from zsim.constants import frame_wire_bytes
from zsim.metrics import known_metrics, preference
from zsim.model.transport.network import ETHERNET_HEADER_BYTES, IP_TCP_HEADER_BYTES
from zsim.results import RunResult, flat_metrics

#: the measured case: 5,000 x 2,048 B/s from a to c over 10 Mbit/s, for 2 s
SCENARIO = """\
[scenario]
name = "oversubscribed-link"
until_s = 3.0

[[host]]
name = "a"

[[host]]
name = "c"

[[link]]
hosts = ["a", "c"]
bandwidth_bps = 10e6

[[process]]
name = "feed"
host = "a"

[[process]]
name = "desk"
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
connect = ["tcp://a:5556"]
options = {{ subscribe = [""] }}

[[send]]
socket = "pub"
{load}
size_bytes = 2048
start_s = 0.5
duration_s = 2.0

[[recv]]
socket = "sub"
"""
BANDWIDTH_BPS = 10e6
SIZE = 2048
RATE = 5000
#: the ZMTP frame of each copy: 2,048 bytes and a 9-byte header (a long frame)
WIRE = frame_wire_bytes(SIZE)
#: the offered load the scenario asks for: 5,000 x 2,057 B x 8 = 82.3 Mbit/s
ASKED_BPS = RATE * WIRE * 8
#: 1 Mbit/s: 61 x 2,057 B x 8
GENTLE_RATE = 61


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("link")
    # Poisson arrivals at 5,000/s, as measured
    (folder / "over.toml").write_text(SCENARIO.format(load=f"rate_per_s = {RATE}"))
    # 61 a second on a fixed schedule: 1 Mbit/s exactly, not a random share of it
    (folder / "gentle.toml").write_text(SCENARIO.format(load=f'interval_s = {1 / GENTLE_RATE!r}\npacing = "schedule"'))
    return folder


@pytest.fixture(scope="module")
def over(folder: Path) -> RunResult:
    return zsim.run(folder / "over.toml", 0)


@pytest.fixture(scope="module")
def gentle(folder: Path) -> RunResult:
    return zsim.run(folder / "gentle.toml", 0)


def offered(result: RunResult) -> tuple[int, float]:
    """(copies pub sent, the span of their send times): every copy crosses a->c."""
    t0 = result.messages["t0"]
    return len(t0), float(t0.max() - t0.min())


def test_the_direction_offered_more_than_it_carries_warns_with_the_figures(over):
    summary = over.summary
    copies, window = offered(over)
    assert copies == summary["sockets"]["pub"]["sent"] > 9900
    way = summary["network"]["a-c"]["a->c"]
    # exact: every copy is one 2,057-byte ZMTP frame, offered over the span of their send times
    assert way["offered_copies"] == copies and way["offered_bytes"] == copies * WIRE
    assert way["offered_window_s"] == window
    assert way["offered_bps"] == pytest.approx(8 * copies * WIRE / window, rel=1e-12)
    assert way["offered_utilisation"] == pytest.approx(way["offered_bps"] / BANDWIDTH_BPS, rel=1e-12)
    # the sender kept its rate within 1 %: what the scenario asks for
    assert way["offered_bps"] == pytest.approx(ASKED_BPS, rel=0.01)
    # the queue dropped nothing: link_saturated does not apply, link_oversubscribed does
    assert way["queue_drops"] == 0
    (warning,) = [w for w in summary["warnings"] if w["code"].startswith("link_")]
    assert warning["code"] == "link_oversubscribed" and warning["path"] == "link[a-c]"
    missed = copies - summary["sockets"]["sub"]["inbound"]["delivered"]
    message = warning["message"]
    assert message.startswith(f"link 'a-c' a->c (10 Mbit/s) was offered {way['offered_bps'] / 1e6:.3g} Mbit/s "
                              f"({way['offered_utilisation']:.3g}x its capacity) by the writers of the connections crossing it "
                              f"that way, over the {window:.3g} s they sent: it ran at its capacity")
    assert "it, not the reader, set the pace" in message
    assert f"{missed:,} of the {copies:,} copies sent across it ({100 * missed / copies:.0f} %) were not delivered" in message
    assert 0.8 < missed / copies < 0.9
    assert flat_metrics(summary)["warning.link_oversubscribed"] == 1


def test_the_offered_load_is_a_metric_of_every_row_sweep_and_comparison(over, folder):
    row = flat_metrics(over.summary)
    utilisation = row["network.a-c.a->c.offered_utilisation"]
    # 2 KB x 5,000/s x 8 over 10 Mbit/s: 8.2 (8.23 with the frames' headers)
    assert utilisation == pytest.approx(SIZE * RATE * 8 / BANDWIDTH_BPS, rel=0.01)
    assert row["network.a-c.a->c.offered_bps"] == over.summary["network"]["a-c"]["a->c"]["offered_bps"]
    # nothing goes c -> a but the subscription (no copy): offered 0
    assert row["network.a-c.c->a.offered_bps"] == 0.0 and row["network.a-c.c->a.offered_utilisation"] == 0.0
    names = known_metrics(tomllib.loads((folder / "over.toml").read_text()))
    assert names is not None and {"network.a-c.a->c.offered_bps", "network.a-c.a->c.offered_utilisation"} <= set(names)
    assert preference("network.a-c.a->c.offered_utilisation")[0] == "lower"
    # a sweep's Parquet rows have the columns; a faster link is offered a tenth as much of it
    (folder / "study.toml").write_text('[sweep]\nname = "bw"\nbase = "over.toml"\nreplications = 1\n\n[axes]\n'
                                       '"link.a-c.bandwidth_bps" = { values = [10e6, 100e6] }\n')
    assert main(["sweep", str(folder / "study.toml"), "--engine", "serial", "--out", str(folder / "res")]) == 0
    rows = ds.dataset(folder / "res", format="parquet", partitioning="hive").to_table().to_pandas()
    by_rate = dict(zip(rows["link.a-c.bandwidth_bps"], rows["network.a-c.a->c.offered_utilisation"], strict=True))
    # (the sweep's seed is another: its sender's late wake-ups differ, within a few %)
    assert by_rate[10e6] == pytest.approx(ASKED_BPS / BANDWIDTH_BPS, rel=0.05)
    assert by_rate[100e6] == pytest.approx(by_rate[10e6] / 10, rel=0.01)
    warned = dict(zip(rows["link.a-c.bandwidth_bps"], rows["warning.link_oversubscribed"], strict=True))
    assert warned == {10e6: 1, 100e6: 0}
    # zsim compare: the faster link's lower offered utilisation is the better
    comparison = cmp.compare([folder / "over.toml"], vary=["link.a-c.bandwidth_bps=10e6,100e6"], replications=2, engine="serial",
                             metrics=["network.a-c.a->c.offered_utilisation"], stream=None)
    (metric,) = comparison.metrics
    assert metric.prefers == "lower" and metric.differences[1].verdict == "better"


def test_explain_gives_the_rate_that_arrived_and_names_the_link_that_set_the_pace(folder, capsys):
    assert main(["explain", str(folder / "over.toml")]) == 0
    text = capsys.readouterr().out
    found = re.search(r"\(offered utilisation [\d.]+: ([\d,]+) copies/s were sent to it, ([\d,]+)/s arrived, ", text)
    assert found, text[:2000]
    sent, arrived = (float(value.replace(",", "")) for value in found.groups())
    assert sent == pytest.approx(RATE, rel=0.01)
    # what a 10 Mbit/s link carries of 2,057-byte frames, 1,448 bytes of them a 1,514-byte packet: 581/s, not 5,000
    mss = 1500 - IP_TCP_HEADER_BYTES
    carried = BANDWIDTH_BPS / 8 * mss / (mss + IP_TCP_HEADER_BYTES + ETHERNET_HEADER_BYTES) / WIRE
    assert arrived == pytest.approx(carried, rel=0.03)
    summary = zsim.run(folder / "over.toml", 0).summary
    way = summary["network"]["a-c"]["a->c"]
    offered_text = f"{way['offered_bps'] / 1e6:.3g} Mbit/s"
    assert f"The 10 Mbit/s link a-c was offered {offered_text} a->c" in text
    assert (f"Link 'a-c' a->c (10 Mbit/s) was offered {offered_text} ({way['offered_utilisation']:.3g}x its capacity) by the "
            "writers of the connections crossing it: it ran at its capacity") in text
    assert "it, not the reader, set the pace (link_oversubscribed)." in text


def test_the_run_page_answer_names_the_link(folder, over):
    assert main(["run", str(folder / "over.toml"), "--report", str(folder / "page")]) == 0
    page = (folder / "page" / "report.html").read_text()
    answer = html.unescape(page[page.index('id="answer"'):page.index("</div>", page.index('id="answer"'))])
    way = over.summary["network"]["a-c"]["a->c"]
    assert (f"Link 'a-c' a->c (10 Mbit/s) was offered {way['offered_bps'] / 1e6:.3g} Mbit/s "
            f"({way['offered_utilisation']:.3g}x its capacity)") in answer
    assert "it, not the reader, set the pace" in answer
    assert "The run raised no warning" not in page
    warnings = html.unescape(page[page.index('id="warnings"'):])
    assert "link_oversubscribed" in warnings and "link 'a-c' a->c (10 Mbit/s) was offered" in warnings


def test_a_link_offered_a_tenth_of_its_rate_raises_nothing(gentle, folder, capsys):
    summary = gentle.summary
    copies, window = offered(gentle)
    way = summary["network"]["a-c"]["a->c"]
    assert way["offered_bytes"] == copies * WIRE and summary["sockets"]["sub"]["inbound"]["delivered"] == copies
    # 1.0 Mbit/s: copies - 1 intervals of 1/61 s between the first send and the last
    assert way["offered_bps"] == pytest.approx(copies * WIRE * 8 / ((copies - 1) / GENTLE_RATE), rel=1e-3)
    assert way["offered_utilisation"] == pytest.approx(GENTLE_RATE * WIRE * 8 / BANDWIDTH_BPS, rel=0.01)
    assert not [w for w in summary["warnings"] if w["code"].startswith("link_")]
    assert flat_metrics(summary)["warning.link_oversubscribed"] == 0
    assert main(["explain", str(folder / "gentle.toml")]) == 0
    assert "link_oversubscribed" not in capsys.readouterr().out
    assert main(["run", str(folder / "gentle.toml"), "--report", str(folder / "gentle-page")]) == 0
    page = html.unescape((folder / "gentle-page" / "report.html").read_text())
    assert "link_oversubscribed" not in page and "was offered" not in page
    if not summary["warnings"]:
        assert "The run raised no warning: no receiver offered more than it can take, no link offered more than it carries" in page


def reader(service_s: float) -> str:
    """The measured case with a reader that takes ``service_s`` a copy."""
    return SCENARIO.format(load=f"rate_per_s = {RATE}").replace('[[recv]]\nsocket = "sub"\n',
                                                               f'[[recv]]\nsocket = "sub"\nservice_s = {service_s!r}\n')


def test_a_reader_the_link_kept_idle_is_not_called_overloaded(folder, capsys):
    # 1 ms a copy: about 4,993 copies/s are sent to it (a utilisation of 5 by what was sent), about
    # 581/s get across the link (0.58 by what arrived): the link, not the reader, set the
    # pace; overloaded ("it cannot keep up") and explain's "too slow" said the opposite
    (folder / "reader1ms.toml").write_text(reader(0.001))
    summary = zsim.run(folder / "reader1ms.toml", 0).summary
    codes = [w["code"] for w in summary["warnings"]]
    assert "link_oversubscribed" in codes and "overloaded" not in codes
    assert main(["explain", str(folder / "reader1ms.toml")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    busy = re.search(r"The reader, SUB sub, is fast enough for what reached it \(busy about (\d+) % of the time with it\): "
                     r"what was sent to it was held back before it \(offered utilisation 4\.99: 4,99\d copies/s were sent to it, "
                     r"(\d+)/s arrived, it takes 1 ms per copy\)", text)
    assert busy, text[:2000]
    assert int(busy.group(1)) == pytest.approx(int(busy.group(2)) * 0.1, abs=1)  # arrived/s x 1 ms
    assert "too slow for what it is offered" not in text


def test_a_reader_too_slow_for_what_got_through_is_still_overloaded(folder, capsys):
    # 5 ms a copy: 200/s at most, fewer than the 581/s the link carries: both were too slow
    (folder / "reader5ms.toml").write_text(reader(0.005))
    codes = [w["code"] for w in zsim.run(folder / "reader5ms.toml", 0).summary["warnings"]]
    assert "link_oversubscribed" in codes and "overloaded" in codes
    assert main(["explain", str(folder / "reader5ms.toml")]) == 0
    assert "The reader, SUB sub, is too slow for what it is offered" in capsys.readouterr().out


def test_zsim_run_shows_each_direction_offered_beside_its_rate(folder, over, capsys):
    # the network table gave the link's rate, utilisation and goodput (76 %, healthy-looking)
    # and nothing of the 82 Mbit/s the writers handed it
    assert main(["run", str(folder / "over.toml")]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("network link direction"))
    assert header.split()[3:6] == ["rate", "offered", "one"]
    row = next(line for line in out.splitlines() if line.startswith("a-c a->c"))
    offered_bps = over.summary["network"]["a-c"]["a->c"]["offered_bps"]
    assert row.split()[2:6] == ["10", "Mb/s", f"{offered_bps / 1e6:.4g}", "Mb/s"]
    assert f"{offered_bps / 1e6:.4g}" == "82.16"  # 5,000 x 2,057 B x 8 a second, as the scenario asks (Poisson)
    back = next(line for line in out.splitlines() if line.startswith("a-c c->a"))
    assert back.split()[2:6] == ["10", "Mb/s", "0", "Mb/s"]  # nothing offered the way back: 0, not a rate
