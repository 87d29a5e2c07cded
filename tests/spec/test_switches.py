"""[[switch]]es and routes over several links (issue 42, item 2): a switch joins links, a
connection between two hosts crosses the shortest route through switches (never through
another host), and a deployment whose hosts are joined by no route, or by two equally short
ones (equal-cost multipath is not modelled), is refused in one line."""

from __future__ import annotations

from typing import Any

import pytest

from zsim import spec
from zsim.errors import ScenarioError


def rack(extra_links: list[dict[str, Any]] | None = None, switches: list[str] | None = None) -> dict[str, Any]:
    """Hosts a and b behind switch tor, whose uplink reaches the server."""
    return {
        "scenario": {"name": "rack"},
        "host": [{"name": "a"}, {"name": "b"}, {"name": "server"}],
        "switch": [{"name": name} for name in (switches or ["tor"])],
        "link": [{"name": "a-tor", "hosts": ["a", "tor"], "bandwidth_bps": 1e9},
                 {"name": "b-tor", "hosts": ["b", "tor"], "bandwidth_bps": 1e9},
                 {"name": "uplink", "hosts": ["tor", "server"], "bandwidth_bps": 10e6}] + (extra_links or []),
        "process": [{"name": "pa", "host": "a"}, {"name": "ps", "host": "server"}],
        "socket": [{"name": "push", "type": "PUSH", "process": "pa", "connect": ["tcp://server:6000"]},
                   {"name": "pull", "type": "PULL", "process": "ps", "bind": ["tcp://*:6000"]}],
        "send": [{"socket": "push", "count": 10, "interval_s": 0}],
        "recv": [{"socket": "pull"}],
    }


def test_a_connection_crosses_the_route_through_the_switch():
    scenario = spec.from_dict(rack())
    assert [s.name for s in scenario.switches] == ["tor"]
    hops = spec.route(scenario.links, {"tor"}, "a", "server")
    assert [(link.name, forward) for link, forward in hops] == [("a-tor", True), ("uplink", True)]
    back = spec.route(scenario.links, {"tor"}, "server", "a")
    assert [(link.name, forward) for link, forward in back] == [("uplink", False), ("a-tor", False)]


def test_two_equally_short_routes_are_refused():
    # a second switch joining a and the server: two routes of two links each
    links = [{"name": "a-spine", "hosts": ["a", "spine"], "bandwidth_bps": 1e9},
             {"name": "spine-server", "hosts": ["spine", "server"], "bandwidth_bps": 1e9}]
    with pytest.raises(ScenarioError) as caught:
        spec.from_dict(rack(links, ["tor", "spine"]))
    assert "2 routes of 2 links each join them" in str(caught.value) and "equal-cost multipath" in str(caught.value)
    # a direct link is shorter than any route through a switch: that one is taken
    direct = spec.from_dict(rack([{"name": "a-server", "hosts": ["a", "server"], "bandwidth_bps": 1e9}]))
    assert [link.name for link, _ in spec.route(direct.links, {"tor"}, "a", "server")] == ["a-server"]


def test_a_host_is_never_a_hop():
    raw = rack()
    raw["link"] = [{"name": "a-b", "hosts": ["a", "b"], "bandwidth_bps": 1e9},
                   {"name": "b-server", "hosts": ["b", "server"], "bandwidth_bps": 1e9}]
    with pytest.raises(ScenarioError) as caught:
        spec.from_dict(raw)
    assert "no [[link]] joins them, directly or through [[switch]]es" in str(caught.value)


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda raw: raw["switch"].append({"name": "a"}), "switch[a].name", "already a [[host]]"),
    (lambda raw: raw["switch"].append({"name": "tor"}), "switch[tor].name", "duplicate switch name"),
    (lambda raw: raw["switch"].append({"name": "sw", "ports": 4}), "switch[sw]", "ports"),
    (lambda raw: raw["link"].append({"hosts": ["a", "nowhere"], "bandwidth_bps": 1e9}), "link[3].hosts[1]",
     "[[switch]]es: tor"),
    (lambda raw: raw["link"].append({"hosts": ["tor", "tor"], "bandwidth_bps": 1e9}), "link[3].hosts", "to itself"),
])
def test_bad_switches_are_one_line_naming_the_field(change, field, words):
    raw = rack()
    change(raw)
    with pytest.raises(ScenarioError) as caught:
        spec.from_dict(raw)
    message = str(caught.value)
    assert field in message and words in message and "\n" not in message


def test_a_link_field_behind_a_switch_is_a_sweep_path():
    scenario = spec.from_dict(spec.with_overrides(rack(), {"link.uplink.queue_bytes": 32000}))
    assert {link.name: link.queue_bytes for link in scenario.links}["uplink"] == 32000


def test_zsim_validate_builds_a_switch_and_routes_each_pair_of_hosts_as_zsim_does():
    # the real harness builds a deployment with switches (a namespace that forwards) and gives
    # each pair of hosts behind them the route zsim.spec.route chose, both ways
    from validation import harness

    scenario = spec.from_dict(rack())
    harness.check_deployment(scenario)
    routes = harness._routes(scenario, ["a", "b", "server"])
    assert routes == {("a", "b"): ["a", "tor", "b"], ("a", "server"): ["a", "tor", "server"],
                      ("b", "server"): ["b", "tor", "server"]}
    # pairs with no route (a host forwards nothing) are left out
    raw = rack()
    raw["host"].append({"name": "lone"})
    raw["link"].append({"name": "lone-a", "hosts": ["lone", "a"], "bandwidth_bps": 1e9})
    assert ("b", "lone") not in harness._routes(spec.from_dict(raw), ["a", "b", "server", "lone"])


def test_switches_count_toward_the_namespaces_zsim_validate_builds(monkeypatch):
    from validation import harness

    monkeypatch.setattr(harness, "MAX_VALIDATE_HOSTS", 4)
    with pytest.raises(ScenarioError) as caught:
        harness.check_deployment_size(spec.from_dict(rack(switches=["tor", "spare"])))
    assert str(caught.value) == ("switch[spare]: the deployment has 3 hosts and 2 switches; zsim validate builds at most 4 (a network "
                                 "namespace each, every run; validation.harness.MAX_VALIDATE_HOSTS): validate a smaller deployment")
