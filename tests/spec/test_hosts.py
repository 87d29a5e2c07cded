"""[[host]], [[link]] and [[process]] host: how endpoints resolve to hosts, what is refused
(one line naming the field), templates, and what a scenario without hosts keeps."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import zsim
from support import on_one_host
from zsim import spec
from zsim.build import build
from zsim.errors import ScenarioError


def deployment() -> dict[str, Any]:
    return {
        "scenario": {"name": "two-hosts", "until_s": 0.2},
        "host": [{"name": "a", "cores": 2}, {"name": "b", "cores": 1}],
        "link": [{"hosts": ["a", "b"], "bandwidth_bps": 100e6, "latency_s": 0.001}],
        "process": [{"name": "pub", "host": "a"}, {"name": "sub", "host": "b"}, {"name": "local", "host": "a"}],
        "socket": [
            {"name": "pub", "type": "PUB", "process": "pub", "bind": ["tcp://*:5556"]},
            {"name": "sub", "type": "SUB", "process": "sub", "connect": ["tcp://a:5556"], "options": {"subscribe": [""]}},
            {"name": "near", "type": "SUB", "process": "local", "connect": ["tcp://127.0.0.1:5556"], "options": {"subscribe": [""]}},
        ],
        "send": [{"socket": "pub", "rate_per_s": 1000, "size_bytes": 100}],
        "recv": [{"socket": "sub"}, {"socket": "near"}],
    }


def error_of(raw: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        spec.from_dict(raw)
    return str(info.value)


def test_endpoints_resolve_to_the_host_they_live_on():
    scenario = spec.from_dict(deployment())
    pub, sub, near = scenario.sockets
    assert pub.bind[0].key == ("tcp", "a", "5556")
    assert sub.connect[0].key == ("tcp", "a", "5556")  # a [[host]] name: that host
    assert near.connect[0].key == ("tcp", "a", "5556")  # 127.0.0.1: the process's own host
    link = scenario.links[0]
    assert (link.name, link.hosts, link.mtu_bytes) == ("a-b", ("a", "b"), 1500)
    assert link.queue_bytes == 1000 * (1500 + 14)  # Linux's txqueuelen of full frames
    assert [p.host for p in scenario.processes] == ["a", "b", "a"]


def test_a_scenario_without_hosts_keeps_its_keys_and_machine():
    raw = on_one_host(deployment())
    raw["socket"][1]["connect"] = ["tcp://localhost:5556"]
    scenario = spec.from_dict(raw)
    assert scenario.hosts == () and scenario.links == ()
    assert scenario.sockets[1].connect[0].key == ("tcp", "", "5556")
    model = build(scenario, 0)
    assert model.machines.keys() <= {""} and (model.machine is None) == (not model.machines)


@pytest.mark.parametrize("mutate, expected", [
    (lambda r: r["socket"][1].__setitem__("connect", ["tcp://c:5556"]),
     "socket[sub].connect[0]: tcp host 'c' names no [[host]] (declared: a, b)"),
    (lambda r: r["socket"][1].__setitem__("connect", ["tcp://10.0.0.1:5556"]),
     "socket[sub].connect[0]: tcp host '10.0.0.1' names no [[host]]"),
    (lambda r: r["socket"][0].__setitem__("bind", ["tcp://b:5556"]), "socket[pub].bind[0]: binds on host 'b' but its process runs on 'a'"),
    (lambda r: r["process"][1].__setitem__("host", "z"), "process[sub].host: unknown host 'z' (declared [[host]]s: a, b)"),
    (lambda r: r.__setitem__("link", []), "socket[sub].connect[0]: tcp://a:5556 is on host 'a' and 'sub' on 'b': no [[link]] joins them"),
    (lambda r: r["link"][0].__setitem__("hosts", ["a", "a"]), "link[0].hosts: joins 'a' to itself"),
    (lambda r: r["link"][0].__setitem__("hosts", ["a", "q"]), "link[0].hosts[1]: unknown host 'q'"),
    (lambda r: r["link"][0].__setitem__("hosts", "a"), "link[0].hosts: must name the two hosts (or switches) it joins"),
    (lambda r: r["link"].append({"hosts": ["b", "a"], "bandwidth_bps": 1e6, "name": "again"}),
     "link[again].hosts: 'b' and 'a' are already joined by link 'a-b'"),
    (lambda r: r["link"][0].pop("bandwidth_bps"), "link[0].bandwidth_bps: missing"),
    (lambda r: r["link"][0].__setitem__("bandwidth_bps", 10), "link[0].bandwidth_bps: must be >= 1000"),
    (lambda r: r["link"][0].__setitem__("bandwidth_bps", "fast"), "link[0].bandwidth_bps: must be a finite number of bits per second"),
    (lambda r: r["link"][0].__setitem__("latency_s", -1), "link[0].latency_s: must be >= 0"),
    (lambda r: r["link"][0].__setitem__("mtu_bytes", 100), "link[0].mtu_bytes: must be >= 576"),
    (lambda r: r["link"][0].__setitem__("queue_bytes", 10), "link[0].queue_bytes: must be >= 1514"),
    (lambda r: r["link"][0].__setitem__("loss", 1.0), "link[0].loss: must be a probability in [0, 1)"),
    (lambda r: r["link"][0].__setitem__("jitter_s", 1.0), "link[0].jitter_s: unknown field"),
    (lambda r: r["host"].append({"name": "a"}), "host[a].name: duplicate host name 'a'"),
    (lambda r: r["host"].append({"name": "localhost"}), "host[localhost].name: 'localhost' is an address, not a host name"),
    (lambda r: r["host"].append({"name": "10.1.2.3"}), "host[10.1.2.3].name: '10.1.2.3' is an address"),
    (lambda r: r["host"].append({"name": "default"}), "host[default].name: 'default' names the host"),
    (lambda r: r["host"][0].__setitem__("cores", -1), "host[a].cores: must be >= 0"),
])
def test_mistakes_are_one_line_naming_the_field(mutate, expected):
    raw = deployment()
    mutate(raw)
    assert expected in error_of(raw)


def test_ipc_and_inproc_do_not_cross_hosts():
    raw = deployment()
    raw["socket"][0]["bind"] = ["ipc://feed"]
    raw["socket"][1]["connect"] = ["ipc://feed"]
    raw["socket"][2]["connect"] = ["ipc://feed"]
    assert ("socket[sub].connect[0]: ipc://feed is bound on host 'a', not on this socket's host 'b': ipc does not cross "
            "hosts") in error_of(raw)
    raw["socket"][1]["connect"] = ["tcp://a:5556"]
    raw["socket"][0]["bind"] = ["ipc://feed", "tcp://*:5556"]
    spec.from_dict(raw)  # the process on host a may use ipc


def test_a_scenario_without_links_still_refuses_other_hosts_in_one_line():
    raw = on_one_host(deployment())
    assert "tcp host 'a' names no [[host]]; zsim models the machine's loopback unless the scenario declares [[host]]s" in error_of(raw)


def test_host_and_link_templates_expand_with_their_members():
    raw = deployment()
    raw["host"] = [{"name": "a", "cores": 2}, {"name": "edge{i}", "count": 3, "cores": 1}]
    raw["link"] = [{"name": "wan{i}", "count": 3, "hosts": ["a", "edge{i}"], "bandwidth_bps": 10e6, "latency_s": 0.02}]
    raw["process"] = [{"name": "pub", "host": "a"}, {"name": "sub{i}", "count": 3, "host": "edge{i}"}]
    raw["socket"] = [
        {"name": "pub", "type": "PUB", "process": "pub", "bind": ["tcp://*:5556"]},
        {"name": "sub{i}", "type": "SUB", "process": "sub", "connect": ["tcp://a:5556"], "options": {"subscribe": [""]}},
    ]
    raw["recv"] = [{"socket": "sub"}]
    scenario = spec.from_dict(raw)
    assert [h.name for h in scenario.hosts] == ["a", "edge0", "edge1", "edge2"]
    assert [(link.name, link.hosts) for link in scenario.links] == [("wan0", ("a", "edge0")), ("wan1", ("a", "edge1")),
                                                                    ("wan2", ("a", "edge2"))]
    assert [p.host for p in scenario.processes] == ["a", "edge0", "edge1", "edge2"]
    assert {t.kind: t.members for t in scenario.templates}["link"] == ("wan0", "wan1", "wan2")
    counted = copy.deepcopy(raw)
    del counted["link"][0]["name"]
    assert "link[0].name: a counted [[link]] needs a name with the member index" in error_of(counted)


def two_machines(cores_b: int) -> dict[str, Any]:
    """Two hosts without a link between them, each running a busy PUSH -> PULL pair."""
    raw = deployment()
    del raw["link"]
    raw["host"][1]["cores"] = cores_b
    raw["process"] = [{"name": f"{role}_{host}", "host": host} for host in ("a", "b") for role in ("push", "pull")]
    raw["socket"] = [s for host, port in (("a", 5557), ("b", 5558)) for s in (
        {"name": f"push_{host}", "type": "PUSH", "process": f"push_{host}", "bind": [f"tcp://*:{port}"]},
        {"name": f"pull_{host}", "type": "PULL", "process": f"pull_{host}", "connect": [f"tcp://127.0.0.1:{port}"]})]
    raw["send"] = [{"socket": f"push_{host}", "count": 2000, "size_bytes": 100} for host in ("a", "b")]
    raw["recv"] = [{"socket": f"pull_{host}", "service_s": 1e-4, "busy": True} for host in ("a", "b")]
    return raw


def test_each_host_has_its_own_cores():
    hosts = zsim.run(two_machines(1), 0).summary["hosts"]
    assert {name: (h["cores"], h["processes"]) for name, h in hosts.items()} == {"a": (2, ["push_a", "pull_a"]),
                                                                                 "b": (1, ["push_b", "pull_b"])}
    threads_a, threads_b = (set(hosts[h]["machine"]["threads"]) for h in ("a", "b"))
    assert {"io.push_b", "io.pull_b"} <= threads_b and not threads_a & threads_b
    # four busy threads on host b's one core wait for it; host a's two cores are shared by its own four only
    waited = {h: sum(t["waited_s"] for t in hosts[h]["machine"]["threads"].values()) for h in ("a", "b")}
    assert waited["b"] > 2 * waited["a"] > 0
    # a host with no cores gives its threads a core of their own: no machine
    hosts = zsim.run(two_machines(0), 0).summary["hosts"]
    assert hosts["b"]["machine"] is None and hosts["a"]["machine"] is not None


def test_a_connection_between_hosts_crosses_the_link_and_one_on_a_host_does_not():
    result = zsim.run(deployment(), 0)
    sockets, network = result.summary["sockets"], result.summary["network"]["a-b"]
    assert network["a->b"]["bandwidth_bps"] == 100e6 and network["a->b"]["latency_s"] == 0.001
    # 100-byte messages at 1,000/s for 0.2 s: the remote subscriber's copies cross a->b (with
    # the 2-byte ZMTP header each), the local one's stay on host a's loopback
    assert network["a->b"]["bytes"] == 102 * sockets["sub"]["received"] > 0
    assert sockets["near"]["received"] >= sockets["sub"]["received"]
    # the remote one waits out the handshake's three round trips and then 1 ms each copy
    assert sockets["sub"]["latency_s"]["p50"] >= 0.001 > sockets["near"]["latency_s"]["p50"]


def test_the_real_harness_refuses_a_link_delay_it_cannot_emulate_in_one_line():
    harness = pytest.importorskip("validation.harness")
    pytest.importorskip("zmq")
    # the deployment's link has 1 ms of latency: tbf shapes a rate and a queue, not a delay
    with pytest.raises(ScenarioError, match=r"link\[a-b\]\.latency_s: the real harness emulates a link's rate, MTU and queue"):
        harness.run_real(deployment(), 0)


def test_every_link_and_host_field_is_a_sweep_path():
    raw = deployment()
    spec.set_path(raw, "link.a-b.bandwidth_bps", 10e6)
    spec.set_path(raw, "host.b.cores", 4)
    spec.set_path(raw, "process.sub.host", "a")
    scenario = spec.from_dict(raw)
    assert scenario.links[0].bandwidth_bps == 10e6
    assert scenario.hosts[1].cores == 4 and scenario.processes[1].host == "a"
    with pytest.raises(ScenarioError, match="no \\[\\[link\\]\\] entry named 'a-c'"):
        spec.set_path(raw, "link.a-c.latency_s", 0.1)


def test_the_run_report_draws_each_host_around_its_processes():
    from zsim.report_run.data import topology

    raw = two_machines(1)
    raw["scenario"]["until_s"] = 0.05
    scenario = spec.from_dict(raw)
    topo = topology(scenario, zsim.run(scenario, 0))
    assert sorted((box.name, box.label) for box in topo.hosts) == [("a", "host a: 2 cores"), ("a", "host a: 2 cores"),
                                                                   ("b", "host b: 1 core"), ("b", "host b: 1 core")]
    for proc in topo.processes:
        inside = [box for box in topo.hosts if box.x <= proc.x and proc.x + 4.2 <= box.x + box.width
                  and box.y < proc.y and proc.y + proc.height <= box.y + box.height]
        assert [box.name for box in inside] == [proc.host], proc.name
    # boxes of one column do not overlap
    for one in topo.hosts:
        for other in topo.hosts:
            if one is not other and one.x == other.x:
                assert one.y + one.height <= other.y or other.y + other.height <= one.y



def test_export_maps_hosts_to_addresses_and_says_what_a_deployment_needs():
    from zsim.export import export_pyzmq

    program = export_pyzmq(spec.from_dict(deployment()))
    compile(program, "two.py", "exec")
    assert 'HOSTS = {\n    "a": "127.0.0.1",\n    "b": "127.0.0.1",\n}' in program
    assert 'sock.connect(on_host("tcp://a:5556"))' in program
    assert 'sock.connect("tcp://127.0.0.1:5556")' in program  # the process's own host stays loopback
    header = " ".join(program.split('"""')[1].split())
    assert "A real deployment runs each host's processes on that host (a: pub, local; b: sub)" in header
    assert "the links (a-b 100 Mbit/s, 1 ms one way); this program cannot emulate their bandwidth, latency, queue or loss" in header
    # a user who gives host a its address reaches it there
    on_host = "def on_host" + program.split("def on_host")[1].split("\n\n\n")[0]
    namespace: dict[str, Any] = {"HOSTS": {"a": "10.0.0.5"}}
    exec(on_host, namespace)
    assert namespace["on_host"]("tcp://a:5556") == "tcp://10.0.0.5:5556"


# -- a host that is another kind of machine ---------------------------------------------------


def _slow_profile(tmp_path: Any, factor: float = 20.0, cores: int = 4) -> str:
    """The default profile as another machine: every send call ``factor`` times as dear, and
    ``cores`` cores."""
    from zsim.profile import PROFILE_DIR

    text = (PROFILE_DIR / "default.toml").read_text()
    default = 1.86435e-06
    assert f"send_call_s = {default}" in text and "[scheduler]\ncores = 2" in text
    text = text.replace(f"send_call_s = {default}", f"send_call_s = {default * factor}", 1)
    text = text.replace('name = "linux-x86_64-loopback-intel-xeon-processor-2cores"', 'name = "small-board"', 1)
    text = text.replace("[scheduler]\ncores = 2", f"[scheduler]\ncores = {cores}", 1)
    (tmp_path / "board.toml").write_text(text)
    return "board.toml"


def _burst(host_profile: str | None, base_dir: Any) -> dict[str, Any]:
    """PUSH -> PULL across the link, 3,000 sends back to back from host a."""
    raw = {
        "scenario": {"name": "burst", "until_s": 1.0},
        "host": [{"name": "a"}, {"name": "b", "cores": 1}],
        "link": [{"hosts": ["a", "b"], "bandwidth_bps": 1e9}],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}],
        "socket": [{"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5557"]},
                   {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5557"]}],
        "send": [{"socket": "push", "count": 3000, "size_bytes": 100}],
        "recv": [{"socket": "pull"}],
    }
    if host_profile is not None:
        raw["host"][0]["profile"] = host_profile
    return spec.from_dict(raw, base_dir=str(base_dir))


def test_a_host_with_a_profile_of_its_own_is_that_machine(tmp_path):
    slow = zsim.run(_burst(_slow_profile(tmp_path), tmp_path), 0).summary
    same = zsim.run(_burst(None, tmp_path), 0).summary
    hosts = slow["hosts"]
    # the host's profile gives its costs and, without a core count of its own, its cores
    assert (hosts["a"]["profile"], hosts["a"]["cores"]) == ("small-board", 4)
    assert (hosts["b"]["profile"], hosts["b"]["cores"]) == (same["profile"], 1)
    assert same["hosts"]["a"]["cores"] == 2
    # 3,000 sends at 20x the call cost: the sender on the small board takes about 20x as long
    fast_s = same["senders"]["send.push"]["finished_at_s"]
    slow_s = slow["senders"]["send.push"]["finished_at_s"]
    assert slow_s > 3000 * 1.86435e-06 * 20 * 0.9 and slow_s > 10 * fast_s
    assert slow["sockets"]["pull"]["received"] == same["sockets"]["pull"]["received"] == 3000
    # the run page says which machine each host is, only when one is another kind
    from zsim.report_run import _hosts

    assert "small-board" in _hosts(slow) and "machine (profile)" in _hosts(slow)
    assert "machine (profile)" not in _hosts(same)


def test_a_host_that_names_the_scenarios_profile_runs_as_one_without(tmp_path):
    from fingerprint import fingerprint_of

    named = _burst("default", tmp_path)
    plain = _burst(None, tmp_path)
    assert fingerprint_of(zsim.run(named, 3)) == fingerprint_of(zsim.run(plain, 3))


def test_a_hosts_profile_is_checked_in_one_line_naming_it(tmp_path):
    with pytest.raises(ScenarioError, match=r"^host\[a\]\.profile: no such profile file .*nope\.toml"):
        zsim.run(_burst("nope.toml", tmp_path), 0)
    raw = deployment()
    raw["host"][0]["profile"] = 3
    assert error_of(raw).startswith("host[a].profile: must be a string")
    raw = deployment()
    spec.set_path(raw, "host.a.profile", "default")  # a sweep axis and a compare --vary path, as every host field
    assert spec.from_dict(raw).hosts[0].profile == "default"
