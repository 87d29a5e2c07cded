"""Each example scenario (one per socket family) prints the numbers libzmq would give."""

from __future__ import annotations

from pathlib import Path

import zsim

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str, seed: int = 1) -> dict:
    return zsim.run(EXAMPLES / name, seed).summary


def test_pub_sub_inproc_drops_at_the_publisher_only():
    s = run("pub_sub_inproc.toml")
    assert s["sockets"]["pub"]["sent"] == 2000 and s["sockets"]["pub"]["send_again"] == 0
    assert s["ledger"]["dropped"] == s["sockets"]["pub"]["dropped"] == 2000 - s["ledger"]["delivered"]
    assert s["ledger"]["dropped_by_rule"] == {"hwm": s["ledger"]["dropped"]}
    # the SUB serves one message per 2 ms for ~2 s: half the offered load, plus what is queued
    assert 1000 <= s["ledger"]["delivered"] <= 1000 + 20
    pipe = next(p for p in s["pipes"] if p["name"] == "pub->sub")
    assert pipe["hwm"] == 20 and pipe["max_depth"] <= 20


def test_pair_blocks_instead_of_dropping():
    s = run("pair_inproc.toml")
    assert s["ledger"]["delivered"] == 100 and s["ledger"]["dropped"] == 0
    assert s["sockets"]["a"]["blocked_s"] > 0.9
    assert next(p for p in s["pipes"] if p["name"] == "a->b")["max_depth"] == 10


def test_req_rep_lockstep():
    s = run("req_rep.toml")
    assert s["sockets"]["req"]["sent"] == s["sockets"]["rep"]["received"] == 200
    assert s["sockets"]["rep"]["sent"] == s["sockets"]["req"]["received"] == 200
    assert s["senders"]["send.req"]["rtt_s"]["p50"] > 0.001  # at least the service time
    for pipe in s["pipes"]:
        assert pipe["max_depth"] <= 1  # never more than one request in flight


def test_broker_forwards_every_request_and_reply():
    s = run("broker.toml")
    assert s["ledger"]["sent"] == 200 and s["ledger"]["forwarded"] == 200 and s["ledger"]["delivered"] == 200
    assert s["sockets"]["worker_fast"]["received"] == s["sockets"]["worker_slow"]["received"] == 50
    assert s["senders"]["send.client1"]["rtt_s"]["max"] > 0.010


def test_push_never_drops_and_skips_the_stalled_worker():
    s = run("push_pull_tcp.toml")
    assert s["ledger"]["dropped"] == 0 and s["ledger"]["delivered"] == 40000
    assert s["sockets"]["push"]["blocked_s"] > 0
    assert s["sockets"]["fast"]["received"] > s["sockets"]["stalled"]["received"]
    # before the stalled worker starts reading, its path held HWMs plus the kernel
    kernel = next(link for link in s["links"] if "stalled" in link["name"])["max_kernel_bytes"]
    assert max(kernel.values()) > 1_000_000


def test_proxy_forwards_only_subscribed_topics():
    s = run("xpub_xsub_proxy.toml")
    assert s["ledger"]["delivered"] == s["sockets"]["sub"]["received"] > 400
    assert s["proxies"]["proxy0"]["forwarded"] >= s["ledger"]["delivered"]
    # sports.* never crosses the proxy: filtered at the PUB by the forwarded subscription
    assert s["sockets"]["xsub"]["received"] <= 500
    assert s["ledger"]["dropped"] == 0


def test_cores_pipeline_four_busy_workers_on_two_cores_take_twice_as_long_as_on_four():
    from zsim import files
    from zsim.spec import from_dict, with_overrides

    base = files.load_toml(EXAMPLES / "cores_pipeline.toml", "example")

    def batch(cores: int) -> float:
        raw = with_overrides(base, {"machine.cores": cores})
        summary = zsim.run(from_dict(raw, base_dir=str(EXAMPLES)), 1).summary
        assert summary["ledger"]["delivered"] == 800  # 400 tasks to the workers, 400 results to the sink
        return summary["sim_time_s"] - 0.1

    two, four, own = batch(2), batch(4), batch(0)
    # 400 tasks of 5 ms: 0.5 s of work per worker with a core each, twice that sharing two
    assert 0.5 < four < 0.51 and 0.5 < own < 0.51
    assert 1.95 < two / four < 2.05
    s = run("cores_pipeline.toml")
    assert {w["path"] for w in s["warnings"] if w["code"] == "cpu_contention"} >= {f"thread[recv.w{n}_in]" for n in range(1, 5)}
