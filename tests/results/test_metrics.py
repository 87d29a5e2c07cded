"""``zsim.metrics``: one grammar of metric names. Every name a run's row has is a name the
grammar knows before the run and takes apart; a derived metric of a run has the same
value whichever tool computes it and whatever other rows share its table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from zsim import files, metrics, spec
from zsim.runner import run

ROOT = Path(__file__).resolve().parents[2]
#: the shipped examples (without the one that runs app code) and a few validation scenarios
#: with templates, [machine] cores, [[link]]s and request -> reply paths
SCENARIOS = sorted(p for p in (ROOT / "examples").glob("*.toml") if p.name != "lru_broker.toml") + [
    ROOT / "validation" / "scenarios" / name for name in ("ventilator_4_workers.toml", "wan_two_branches.toml",
                                                          "syncpub_default_hwm.toml", "linger_term_blocks.toml")]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_name_a_run_has_is_known_before_the_run_and_parses(path: Path) -> None:
    raw = files.load_toml(path, "scenario file")
    known = metrics.known_metrics(raw)
    assert known is not None
    row = run(spec.load(path), 0).flat()
    assert [name for name in row if name not in known] == []
    for name in row:
        parsed = metrics.parse(name)
        assert parsed is not None and str(parsed) == name, name


def test_a_name_taken_apart() -> None:
    assert metrics.parse("socket.w_in.max_loss_fraction") == metrics.Name("socket", "w_in", "loss_fraction", "max")
    assert metrics.parse("sender.send.pub.refused_fraction") == metrics.Name("sender", "send.pub", "refused_fraction")
    assert metrics.parse("pipe.pub->sub (tcp send).p99_depth") == metrics.Name("pipe", "pub->sub (tcp send)", "p99_depth")
    assert metrics.parse("network.wan.dc->branch.queue_drops") == metrics.Name("network", "wan.dc->branch", "queue_drops")
    assert metrics.parse("rtt.client.max_p99_s") == metrics.Name("rtt", "client", "p99_s", "max")
    assert metrics.parse("rtt.client.max_s") == metrics.Name("rtt", "client", "max_s")
    assert metrics.parse("latency_p99_s") == metrics.Name("pooled", None, "latency_p99_s")
    assert metrics.parse("machine.cpu_s") == metrics.Name("machine", None, "cpu_s")
    for nothing in ("socket.sub", "socket.sub.dropd", "pipe.nodirection.dropped", "sokcet.sub.sent", "batch_s", "machine.x"):
        assert metrics.parse(nothing) is None, nothing


def test_units_directions_and_shares_of_refused_sends() -> None:
    assert metrics.kind("sender.send.push.refused_fraction") == "fraction"
    assert metrics.human_value("sender.send.push.refused_fraction", 0.0123) == "1.230%"
    assert metrics.preference("sender.send.push.refused_fraction") == ("lower", "refused sends")
    assert metrics.preference("socket.push.send_again") == ("lower", "refused sends")
    assert metrics.preference("sender.send.push.attempts") == (None, "load, inputs and times of events")
    assert "refused sends" in metrics.EVENT_FAMILIES and "losses and drops" in metrics.EVENT_FAMILIES
    columns = ["sender.send.push.attempts", "socket.push.send_attempts", "socket.sub.copies", "socket.w.min_copies", "copies"]
    assert metrics.share("sender.send.push.refused_fraction", columns)[0] == "sender.send.push.attempts"
    assert metrics.share("socket.push.send_refused_fraction", columns)[0] == "socket.push.send_attempts"
    assert metrics.share("socket.sub.loss_fraction", columns)[0] == "socket.sub.copies"
    assert metrics.share("socket.w.max_loss_fraction", columns)[0] == "socket.w.min_copies"
    assert metrics.share("pooled_loss_fraction", columns)[0] == "copies"
    assert metrics.share("skips", columns, {"skips": "sender.send.push.again / sender.send.push.attempts"})[0] == \
        "sender.send.push.attempts"
    assert metrics.share("x", columns, {"x": "socket.sub.dropped / sent"})[0] is None


def test_labels_are_one_for_sweeps_and_compare() -> None:
    assert metrics.label("socket.slow.copies") == "copies meant for slow"
    assert metrics.label("socket.slow.dropped") == "dropped (copies for slow)"
    assert metrics.label("socket.slow.steady_latency_p99_9_s") == "steady-state p99.9 latency of slow (after MSER-5's warm-up)"
    assert metrics.label("pipe.a->b (tcp send).dropped") == "copies dropped at pipe a->b (tcp send)"
    assert metrics.label("network.wan.dc->branch.queue_drops") == "queue drops of link wan dc->branch"
    assert metrics.label("latency_p99_s", "ms") == "p99 latency (pooled) (ms)"
    assert metrics.label("batch_s") == "batch_s"


def test_a_derived_metric_of_a_run_is_its_own_whatever_shares_its_table() -> None:
    derived = {"worst": "max(a, b)", "gap": "a - b", "both": "sum(a, b)", "share": "a / z", "twice": "2 * worst"}
    rows = [{"ok": True, "a": 3.0, "b": 5.0, "z": 2.0},
            {"ok": True, "a": 3.0, "z": 0.0},  # no b in this run (a worker that does not exist at this point)
            {"ok": True, "a": 3.0, "b": math.nan, "z": 4.0}]  # b without a number (a socket that got nothing)
    expected = [{"worst": 5.0, "gap": -2.0, "both": 8.0, "share": 1.5, "twice": 10.0},
                {"worst": 3.0, "gap": math.nan, "both": 3.0, "share": math.nan, "twice": 6.0},
                {"worst": 3.0, "gap": math.nan, "both": 3.0, "share": 0.75, "twice": 6.0}]

    def same(found: dict[str, float], wanted: dict[str, float]) -> bool:
        return all((math.isnan(wanted[k]) and math.isnan(found[k])) or found[k] == wanted[k] for k in wanted)

    # one row at a time (zsim.metrics.derive), rows of designs (zsim compare), a sweep's whole
    # frame (zsim report) and one design's frame alone (zsim search): the same numbers
    assert all(same(metrics.derive(row, derived), want) for row, want in zip(rows, expected, strict=True))
    listed = [dict(row) for row in rows]
    metrics.add_derived(listed, derived)
    assert all(same(row, want) for row, want in zip(listed, expected, strict=True))
    frame = pd.DataFrame(rows)
    metrics.add_derived_frame(frame, derived)
    assert all(same(record, want) for record, want in zip(frame.to_dict("records"), expected, strict=True))
    alone = pd.DataFrame([rows[1]])
    metrics.add_derived_frame(alone, derived)
    assert same(alone.to_dict("records")[0], expected[1])
