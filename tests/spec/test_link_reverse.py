"""A [[link]]'s ``reverse`` table: the way back (hosts[1] -> hosts[0]) with its own rate,
propagation, queue and loss (issue 42, finding 5). What a ``reverse`` omits is the forward
direction's; mistakes are one line naming the field; templates, ``--set``/``--vary`` paths
and sweep axes reach its fields like any other."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from zsim import spec
from zsim.compare.designs import make_designs
from zsim.errors import ScenarioError
from zsim.sweep import plan as sweep_plan


def deployment(**reverse: Any) -> dict[str, Any]:
    link: dict[str, Any] = {"hosts": ["a", "b"], "bandwidth_bps": 20e6, "latency_s": 0.001, "queue_bytes": 100_000}
    if reverse:
        link["reverse"] = reverse
    return {
        "scenario": {"name": "asymmetric", "until_s": 0.2},
        "host": [{"name": "a"}, {"name": "b"}],
        "link": [link],
        "process": [{"name": "src", "host": "a"}, {"name": "dst", "host": "b"}],
        "socket": [
            {"name": "push", "type": "PUSH", "process": "src", "connect": ["tcp://b:5555"]},
            {"name": "pull", "type": "PULL", "process": "dst", "bind": ["tcp://*:5555"]},
        ],
        "send": [{"socket": "push", "count": 10, "size_bytes": 100}],
        "recv": [{"socket": "pull"}],
    }


def ways(raw: dict[str, Any]) -> list[tuple[str, str, float, float, int, float]]:
    """Each direction of the first link: sender, receiver, rate, latency, queue, loss."""
    link = spec.from_dict(raw).links[0]
    return [(src, dst, way.bandwidth_bps, way.latency_s, way.queue_bytes, way.loss) for src, dst, way in link.ways()]


def error_of(raw: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        spec.from_dict(raw)
    return str(info.value)


def test_a_link_without_reverse_is_the_same_both_ways():
    assert ways(deployment()) == [("a", "b", 20e6, 0.001, 100_000, 0.0), ("b", "a", 20e6, 0.001, 100_000, 0.0)]


def test_reverse_overrides_only_the_fields_it_gives():
    assert ways(deployment(bandwidth_bps=2e6)) == [("a", "b", 20e6, 0.001, 100_000, 0.0), ("b", "a", 2e6, 0.001, 100_000, 0.0)]
    assert ways(deployment(latency_s=0.03, queue_bytes=5000, loss=0.01)) == [
        ("a", "b", 20e6, 0.001, 100_000, 0.0), ("b", "a", 20e6, 0.03, 5000, 0.01)]
    # the forward direction's default queue (1000 full frames of the link's MTU) is the way back's too
    raw = deployment(bandwidth_bps=1e6)
    del raw["link"][0]["queue_bytes"]
    raw["link"][0]["mtu_bytes"] = 9000
    assert [way[4] for way in ways(raw)] == [1000 * 9014, 1000 * 9014]


@pytest.mark.parametrize("reverse, expected", [
    ({"bandwith_bps": 1e6}, "link[0].reverse.bandwith_bps: unknown field (did you mean 'bandwidth_bps'?); known: bandwidth_bps, "
                            "latency_s, loss, queue_bytes"),
    ({"mtu_bytes": 9000}, "link[0].reverse.mtu_bytes: a link has one MTU, both ways"),
    ({"bandwidth_bps": 10}, "link[0].reverse.bandwidth_bps: must be >= 1000 bits per second, got 10"),
    ({"bandwidth_bps": 1e14}, "link[0].reverse.bandwidth_bps: must be <= 1e13 (10 Tbit/s)"),
    ({"bandwidth_bps": "slow"}, "link[0].reverse.bandwidth_bps: must be a finite number of bits per second"),
    ({"latency_s": -1}, "link[0].reverse.latency_s: must be >= 0"),
    ({"latency_s": 11}, "link[0].reverse.latency_s: must be <= 10 s one way"),
    ({"queue_bytes": 1000}, "link[0].reverse.queue_bytes: must be >= 1514"),
    ({"loss": 1.0}, "link[0].reverse.loss: must be a probability in [0, 1)"),
])
def test_a_bad_reverse_field_is_one_line_naming_it(reverse, expected):
    message = error_of(deployment(**reverse))
    assert expected in message and "\n" not in message


def test_reverse_must_be_a_table():
    raw = deployment()
    raw["link"][0]["reverse"] = 2e6
    assert error_of(raw).startswith("link[0].reverse: must be a table")


def test_a_link_template_gives_every_member_its_reverse():
    raw = deployment()
    raw["host"] = [{"name": "a"}, {"name": "edge{i}", "count": 2}]
    raw["link"] = [{"name": "wan{i}", "count": 2, "hosts": ["a", "edge{i}"], "bandwidth_bps": 10e6,
                    "reverse": {"bandwidth_bps": 1e6, "latency_s": 0.02}}]
    raw["process"] = [{"name": "src", "host": "a"}, {"name": "dst", "host": "edge1"}]
    raw["socket"][0]["connect"] = ["tcp://edge1:5555"]
    links = spec.from_dict(raw).links
    assert [(link.name, link.backward.bandwidth_bps, link.backward.latency_s, link.forward.bandwidth_bps) for link in links] == [
        ("wan0", 1e6, 0.02, 10e6), ("wan1", 1e6, 0.02, 10e6)]
    # a template's reverse is a path of the template, every member at once
    spec.set_path(raw, "link.wan.reverse.bandwidth_bps", 3e6)
    assert [link.backward.bandwidth_bps for link in spec.from_dict(raw).links] == [3e6, 3e6]


def test_every_reverse_field_is_a_set_path():
    raw = deployment()
    for field, value in (("bandwidth_bps", 2e6), ("latency_s", 0.05), ("queue_bytes", 3028), ("loss", 0.001)):
        spec.set_path(raw, f"link.a-b.reverse.{field}", value)
    assert ways(raw)[1] == ("b", "a", 2e6, 0.05, 3028, 0.001)
    assert ways(raw)[0] == ("a", "b", 20e6, 0.001, 100_000, 0.0)


def test_a_reverse_field_is_a_vary_path_and_a_sweep_axis(tmp_path):
    base = tmp_path / "asym.toml"
    base.write_text("""\
[scenario]
name = "asymmetric"
until_s = 0.2
[[host]]
name = "a"
[[host]]
name = "b"
[[link]]
hosts = ["a", "b"]
bandwidth_bps = 20e6
[[process]]
name = "src"
host = "a"
[[process]]
name = "dst"
host = "b"
[[socket]]
name = "push"
type = "PUSH"
process = "src"
connect = ["tcp://b:5555"]
[[socket]]
name = "pull"
type = "PULL"
process = "dst"
bind = ["tcp://*:5555"]
""")
    designs = make_designs([str(base)], vary=["link.a-b.reverse.bandwidth_bps=2e6,20e6"]).designs
    assert [d.raw["link"][0]["reverse"]["bandwidth_bps"] for d in designs] == [2e6, 20e6]
    assert [spec.from_dict(d.raw).links[0].backward.bandwidth_bps for d in designs] == [2e6, 20e6]
    # a misspelt field of reverse is the flag's one line
    with pytest.raises(ScenarioError, match=r"reverse\.bandwith_bps: unknown field \(did you mean 'bandwidth_bps'\?\)"):
        make_designs([str(base)], vary=["link.a-b.reverse.bandwith_bps=2e6,20e6"])

    sweep = sweep_plan.plan({"sweep": {"name": "asym", "replications": 1}, "base": copy.deepcopy(deployment()),
                             "axes": {"link.a-b.reverse.latency_s": [0.01, 0.04]}})
    derived = [spec.with_overrides(sweep.base, point.overrides) for point in sweep.points]
    assert [spec.from_dict(raw).links[0].backward.latency_s for raw in derived] == [0.01, 0.04]
    assert [spec.from_dict(raw).links[0].forward.latency_s for raw in derived] == [0.001, 0.001]


@pytest.mark.parametrize("reverse, expected", [
    ({"latency_s": 0.01}, "link[a-b].reverse.latency_s: the real harness emulates a link's rate, MTU and queue with tbf, not its "
                          "delay or loss"),
    ({"loss": 0.01}, "link[a-b].reverse.loss: the real harness emulates"),
    ({"queue_bytes": 1 << 33}, "link[a-b].reverse.queue_bytes: the real harness's tbf holds at most"),
])
def test_the_real_harness_refuses_what_tbf_cannot_make_of_the_way_back_naming_it(reverse, expected):
    harness = pytest.importorskip("validation.harness")
    pytest.importorskip("zmq")
    raw = deployment(**reverse)
    raw["link"][0]["latency_s"] = 0.0
    with pytest.raises(ScenarioError) as info:
        harness.check_deployment(spec.from_dict(raw))
    assert str(info.value).startswith(expected)
    # a way back of its own rate and queue is what tbf makes: accepted
    accepted = deployment(bandwidth_bps=2e6, queue_bytes=3028)
    accepted["link"][0]["latency_s"] = 0.0
    harness.check_deployment(spec.from_dict(accepted))


def test_the_real_links_tbf_of_each_end_shapes_its_own_direction():
    netns = pytest.importorskip("validation.netns")
    link = netns.LinkSpec(rate_bps=20e6, queue_bytes=262_144, reverse_rate_bps=2e6, reverse_queue_bytes=3028)
    assert (link.backward.rate_bps, link.backward.queue_bytes, link.backward.mtu_bytes) == (2e6, 3028, 1500)
    assert (link.burst_bytes, link.backward.burst_bytes) == (2 * 1514, 2 * 1514)  # a millisecond of either is less
    same = netns.LinkSpec(rate_bps=1e9, queue_bytes=262_144)
    assert same.backward == same and same.backward.burst_bytes == 125_000
