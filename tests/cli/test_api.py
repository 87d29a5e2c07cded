"""The Python API's tables: ``RunResult.to_frame``, ``messages_frame``, ``depth_frame``, and
``zsim.compare`` from Python (dicts as designs, ``Comparison.to_frame``). Each table must say
the same as the run's summary and ledger, entity by entity."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import zsim
from zsim.compare import compare
from zsim.model.fates import RULES, STATES

ROOT = Path(__file__).resolve().parents[2]
PUB_SUB = ROOT / "examples" / "pub_sub_inproc.toml"
PIPELINE = ROOT / "experiments" / "task_pipeline" / "pipeline.toml"
TCP = ROOT / "examples" / "push_pull_tcp.toml"


def shadowing(frame: pd.DataFrame) -> list[str]:
    return [column for column in frame.columns if hasattr(pd.DataFrame, str(column))]


def test_socket_frame_is_the_summary_entity_by_entity() -> None:
    result = zsim.run(PUB_SUB, 1)
    frame = result.to_frame("socket")
    assert list(frame.index) == list(result.summary["sockets"]) == ["pub", "sub"]
    assert frame.index.name == "socket"
    sub = result.summary["sockets"]["sub"]
    assert frame.loc["sub", "type"] == "SUB" and frame.loc["sub", "process"] == "main"
    assert frame.loc["sub", "delivered"] == sub["inbound"]["delivered"] == 1011
    assert frame.loc["sub", "dropped"] == sub["inbound"]["dropped"] == 989
    assert frame.loc["sub", "latency_p99_s"] == sub["latency_s"]["p99"]
    # the publisher had nothing meant for it: its own drops are dropped_sending, the rest NaN
    assert frame.loc["pub", "dropped_sending"] == 989
    assert math.isnan(frame.loc["pub", "dropped"]) and math.isnan(frame.loc["pub", "copies"])
    # offered utilisation needs the scenario's service time: the result carries it
    assert frame.loc["sub", "offered_utilisation"] == pytest.approx(1000 / 500, rel=1e-2)
    assert result.flat()["socket.sub.offered_utilisation"] == frame.loc["sub", "offered_utilisation"]


def test_pipe_link_and_sender_frames() -> None:
    result = zsim.run(TCP, 1)
    pipes = result.to_frame("pipe")
    summed = {}
    for pipe in result.summary["pipes"]:
        summed[pipe["name"]] = summed.get(pipe["name"], 0) + pipe["dropped"]
    assert pipes["dropped"].to_dict() == summed
    rules = [c for c in pipes.columns if c.startswith("dropped_")]
    assert (pipes[rules].sum(axis=1) == pipes["dropped"]).all()
    assert all(c[len("dropped_"):] in RULES.values() for c in rules)
    links = result.to_frame("link")
    directions = {name for link in result.summary["links"] for name in link["directions"]}
    assert set(links.index) == directions and (links["transport"] == "tcp").all()
    for name in links.index:
        assert links.loc[name, "max_kernel_bytes"] == result.flat()[f"link.{name}.max_kernel_bytes"]
    senders = result.to_frame("sender")
    assert list(senders.index) == list(result.summary["senders"])
    for name, sender in result.summary["senders"].items():
        assert senders.loc[name, "sent"] == sender["sent"] and senders.loc[name, "socket"] == sender["socket"]
    for kind in ("pipe", "link", "sender"):
        assert shadowing(result.to_frame(kind)) == []


def test_template_frame_aggregates_the_members() -> None:
    result = zsim.run(PIPELINE, 1)
    templates = result.to_frame("template")
    members = result.summary["templates"]["socket"]["w_in"]["members"]
    sockets = result.to_frame("socket").loc[members]
    assert templates.loc["w_in", "members"] == len(members) == 8
    assert templates.loc["w_in", "sum_delivered"] == sockets["delivered"].sum()
    assert templates.loc["w_in", "max_last_recv_s"] == sockets["last_recv_s"].max()
    assert templates.loc["w_in", "kind"] == "socket"
    assert shadowing(templates) == [] and shadowing(result.to_frame("socket")) == []
    with pytest.raises(ValueError, match="kind must be one of"):
        result.to_frame("sockets")


def test_messages_frame_decodes_the_ledger() -> None:
    result = zsim.run(PUB_SUB, 1)
    frame = result.messages_frame()
    ledger = result.summary["ledger"]
    assert len(frame) == ledger["copies"]
    assert shadowing(frame) == []
    counts = frame["state"].value_counts()
    for state in STATES:
        assert counts.get(state, 0) == ledger[state]
    delivered = frame[frame.state == "delivered"]
    assert (delivered.rule == "").all() and (delivered.socket == "sub").all()
    assert np.allclose(delivered.latency_s, delivered.end_s - delivered.sent_s)
    assert frame[frame.state != "delivered"].latency_s.isna().all()
    dropped = frame[frame.state == "dropped"]
    assert set(dropped.rule) == {"hwm"} and set(dropped.pipe_name) == {"pub->sub"} and set(dropped.socket) == {"pub"}
    assert set(frame.origin) == {"pub"} and (frame.size_bytes == 100).all()


def test_depth_frame_needs_a_traced_run() -> None:
    with pytest.raises(ValueError, match="trace=True"):
        zsim.run(PUB_SUB, 1).depth_frame()
    traced = zsim.run(PUB_SUB, 1, trace=True)
    depth = traced.depth_frame()
    assert list(depth.columns) == ["pipe_name", "time_s", "depth"]
    pub_sub = depth[depth.pipe_name == "pub->sub"]
    assert pub_sub.depth.max() == next(p["max_depth"] for p in traced.summary["pipes"] if p["name"] == "pub->sub")
    assert pub_sub.time_s.is_monotonic_increasing


def test_compare_takes_dicts_and_gives_the_same_numbers_as_files() -> None:
    import tomllib

    raw = tomllib.loads(PUB_SUB.read_text())
    small = {**raw, "socket": [dict(s, options={**s["options"], "sndhwm": 1000}) if s["name"] == "pub" else s for s in raw["socket"]]}
    from_files = compare([str(PUB_SUB), str(PUB_SUB)], replications=2, engine="serial", stream=None,
                         metrics=["socket.sub.delivered"], names=["a", "b"])
    from_dicts = compare([raw, small], replications=2, engine="serial", stream=None, metrics=["socket.sub.delivered"])
    assert [d.design.name for d in from_dicts.designs] == ["pub-sub-inproc", "pub-sub-inproc (2)"]
    assert [d.design.source for d in from_dicts.designs] == ["<dict 1>", "<dict 2>"]
    assert from_dicts.designs[0].design.digest == from_files.designs[0].design.digest
    frame = from_dicts.to_frame()
    assert list(frame.index.names) == ["metric", "design"]
    base = frame.loc[("socket.sub.delivered", "pub-sub-inproc")]
    assert base["mean"] == 1011 and base["baseline"] and base["verdict"] == ""
    bigger = frame.loc[("socket.sub.delivered", "pub-sub-inproc (2)")]
    more = zsim.run(small, 0).summary["sockets"]["sub"]["inbound"]["delivered"]  # no random draws: every seed alike
    assert more > 1011
    assert bigger["mean"] == more and bigger["diff_mean"] == more - 1011 and bigger["verdict"] == "better"
    assert from_dicts.text().startswith("zsim compare: 2 designs x 2 replications")
    with pytest.raises(zsim.ScenarioError, match=r"<dict 2>: socket\[pub\]"):
        bad = {**raw, "socket": [dict(s, type="PUBB") if s["name"] == "pub" else s for s in raw["socket"]]}
        compare([raw, bad], replications=2, engine="serial", stream=None)


def test_docs_model_md_explains_every_rule_the_rule_column_can_hold() -> None:
    text = (ROOT / "docs" / "model.md").read_text()
    section = text[text.index("### Fates and rules"):]
    table = section[: section.index("\n#")]
    documented = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert documented == [name for name in RULES.values() if name]
