"""``zsim compare``: paired statistics on constructed numbers, common random numbers that
really pair, a comparison whose answer is known (M/M/1/K with HWM 1 against HWM 100),
designs from files, variants and a sweep file, the same output on every engine, one-line
errors with exit status 2, the JSON schema and the report."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path

import pytest

import zsim
from zsim import compare as cmp
from zsim.cli import main
from zsim.compare.designs import make_designs, parse_values
from zsim.compare.runs import DesignResult, run_designs
from zsim.compare.verdicts import MetricResult, best_design, control, describe, metric_result, paired
from zsim.metrics import preference
from zsim.sweep.plan import seed_for

MM1K = """\
[scenario]
name = "mm1k"
profile = "ideal"

[[socket]]
name = "pub"
type = "PUB"
bind = ["inproc://q"]
options = {{ sndhwm = {hwm} }}

[[socket]]
name = "sub"
type = "SUB"
connect = ["inproc://q"]
options = {{ rcvhwm = {hwm}, subscribe = [""] }}

[[send]]
socket = "pub"
count = 2000
rate_per_s = 900
start_s = 0.001
size_bytes = 10

[[recv]]
socket = "sub"
service_s = {{ dist = "exponential", mean_s = 0.001 }}
"""

#: A consumer at half the speed of its producer: overloaded, every run warns.
OVERLOADED = MM1K.replace("rate_per_s = 900", "rate_per_s = 2000")


@pytest.fixture
def designs(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in (("hwm1", MM1K.format(hwm=1)), ("hwm100", MM1K.format(hwm=100)),
                       ("overloaded", OVERLOADED.format(hwm=1))):
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        paths[name] = str(path)
    return paths


# -- statistics on constructed numbers ------------------------------------------------------


def test_describe_is_the_student_t_interval():
    sample = describe([1.0, 2.0, 3.0, 4.0, 5.0])
    half = 2.7764451051977934 * math.sqrt(2.5) / math.sqrt(5)  # t(0.975, 4) * sd / sqrt(n)
    assert (sample.n, sample.missing, sample.mean) == (5, 0, 3.0)
    assert sample.sd == pytest.approx(math.sqrt(2.5), rel=1e-15)
    assert sample.low == pytest.approx(3.0 - half, rel=1e-12) and sample.high == pytest.approx(3.0 + half, rel=1e-12)
    assert not sample.constant


def test_describe_leaves_out_missing_values_and_has_no_interval_for_one_value():
    sample = describe([None, 4.0, math.nan])
    assert (sample.n, sample.missing, sample.mean, sample.low, sample.high) == (1, 2, 4.0, None, None)
    empty = describe([None, math.nan])
    assert (empty.n, empty.mean) == (0, None)


def test_paired_difference_interval_and_verdicts():
    # differences 1, 0.5, 2: mean 7/6, sd sqrt(7/12), t(0.975, 2) = 4.302652729749462
    difference = paired([10.0, 12.0, 14.0], [11.0, 12.5, 16.0], prefers="higher")
    half = 4.302652729749462 * math.sqrt(7 / 12) / math.sqrt(3)
    assert difference.sample.mean == pytest.approx(7 / 6, rel=1e-15)
    assert difference.sample.low == pytest.approx(7 / 6 - half, rel=1e-12)
    assert difference.sample.high == pytest.approx(7 / 6 + half, rel=1e-12)
    assert difference.verdict == "no detectable difference"  # the interval (-0.73, 3.06) contains 0
    # differences 1.0, 1.1, 0.9, 1.0: clearly above 0
    clear = [10.0, 20.0, 30.0, 40.0]
    up = [11.0, 21.1, 30.9, 41.0]
    assert paired(clear, up, "higher").verdict == "better"
    assert paired(clear, up, "lower").verdict == "worse"
    assert paired(clear, up, None).verdict == "higher"
    assert paired(up, clear, None).verdict == "lower"
    assert paired(up, clear, "lower").verdict == "better"


def test_the_same_difference_in_every_replication_is_a_difference_not_noise():
    difference = paired([1.0, 5.0, 9.0], [3.0, 7.0, 11.0], prefers="lower")
    assert (difference.sample.mean, difference.sample.low, difference.sample.high) == (2.0, 2.0, 2.0)
    assert difference.sample.constant and not difference.identical
    assert difference.verdict == "worse"


def test_identical_numbers_are_identical_and_pairs_need_two_replications():
    same = paired([1.0, 5.0, 9.0], [1.0, 5.0, 9.0], prefers="lower")
    assert same.identical and same.verdict == "identical" and same.sample.mean == 0.0
    assert paired([1.0, None, 3.0], [2.0, 5.0, math.nan], None).verdict == "too few replications"
    # a value in one design only is not "identical"
    assert not paired([None, None], [1.0, 1.0], None).identical


@pytest.mark.parametrize(("metric", "prefers"), [
    ("socket.slow.dropped", "lower"),
    ("pooled_loss_fraction", "lower"),
    ("socket.fast1.latency_p99_s", "lower"),
    ("socket.fast1.steady_latency_p50_s", "lower"),
    ("pipe.pub->sub.max_depth", "lower"),
    ("socket.slow.queued_at_end", "lower"),
    ("link.a->b.max_kernel_bytes", "lower"),
    ("link.a->b.rtt_s", "lower"),
    ("link.a->b.window_limited_s", "lower"),
    ("link.a->b.throughput_bps", "higher"),
    ("link.a->b.max_cwnd_bytes", None),  # TCP's state, not a quality
    ("link.a->b.max_sndbuf_bytes", None),
    ("link.a->b.sndbuf_limited_s", "lower"),
    ("link.a->b.sending_s", None),
    ("socket.pub.blocked_s", "lower"),
    ("warning.overloaded", "lower"),
    ("warning.cpu_contention", "lower"),  # issue 30: no preferred direction before
    ("warning.rate_not_achieved", "lower"),
    ("warnings", "lower"),
    ("fast_p99_worst_s", "lower"),
    ("socket.sink.delivered", "higher"),
    ("pooled_delivered_rate_per_s", "higher"),
    ("sender.feed1.achieved_rate_per_s", "higher"),
    ("sender.feed1.requested_rate_per_s", None),
    ("socket.slow.offered_utilisation", None),
    ("socket.sink.last_recv_s", None),
    ("batch_s", None),
    ("socket.pub.sent", None),
])
def test_preferred_direction_by_metric_family(metric, prefers):
    assert preference(metric)[0] == prefers


def test_prefer_overrides_the_table():
    assert preference("batch_s", {"batch_s": "lower"}) == ("lower", "--prefer")


# -- common random numbers, a known answer ---------------------------------------------------


def test_replication_r_has_the_same_seed_in_every_design(designs):
    set_ = make_designs([designs["hwm1"], designs["hwm100"]], replications=3, seed=11)
    rows = run_designs(set_.designs, 3, 11, engine="serial")
    expected = [seed_for(11, "", r, True) for r in range(3)]
    assert [row["seed"] for row in rows[0]] == expected == [row["seed"] for row in rows[1]]
    assert len(set(expected)) == 3


def test_a_design_compared_with_itself_is_identical_in_every_metric(designs, capsys):
    status = main(["compare", designs["hwm1"], designs["hwm1"], "-n", "3", "--engine", "serial", "--json"])
    assert status == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data["designs"]] == ["hwm1", "hwm1 (2)"]
    assert data["metrics"] == [] and data["selection"]["differ"] == 0 and data["selection"]["identical"] > 50
    comparison = cmp.compare([designs["hwm1"], designs["hwm1"]], replications=3, engine="serial", metrics=["socket.sub.dropped"],
                             stream=None)
    (metric,) = comparison.metrics
    assert metric.differences[1].identical and metric.differences[1].verdict == "identical"
    assert metric.differences[1].sample.mean == 0.0
    assert metric.values[0] == metric.values[1] and len(set(metric.values[0])) > 1  # the replications differ, the designs do not
    assert "Every metric is identical" in cmp.format_text(cmp.compare([designs["hwm1"], designs["hwm1"]], replications=2,
                                                                     engine="serial", stream=None))


def test_mm1k_hwm_100_drops_fewer_than_hwm_1_and_the_numbers_are_zsim_run_s(designs):
    comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=4, seed=3, engine="serial",
                             metrics=["socket.sub.dropped", "socket.sub.delivered"], stream=None)
    dropped, delivered = comparison.metrics
    assert dropped.prefers == "lower" and dropped.differences[1].verdict == "better"
    assert delivered.prefers == "higher" and delivered.differences[1].verdict == "better"
    # every number is that of zsim.run with the replication's seed: the runs really are paired
    for index, name in enumerate(("hwm1", "hwm100")):
        for rep in range(4):
            summary = zsim.run(designs[name], seed_for(3, "", rep, True)).summary
            assert dropped.values[index][rep] == summary["sockets"]["sub"]["inbound"]["dropped"]
    # K = 3 (HWM 1 on both sides, one in service) at rho 0.9: about 21 % of 2,000 dropped
    assert 300 < dropped.samples[0].mean < 550
    assert dropped.samples[1].mean == 0 and dropped.samples[1].constant
    diffs = [b - a for a, b in zip(dropped.values[0], dropped.values[1], strict=True)]
    assert dropped.differences[1].sample.mean == pytest.approx(sum(diffs) / 4, rel=1e-15)
    assert not any(dropped.warned)
    text = cmp.format_text(comparison)
    assert "socket.sub.dropped - dropped (copies for sub); lower is better (losses and drops)" in text
    assert "  hwm100  " in text and "better" in text


def test_default_selection_shows_what_differs_ranked_and_says_how_many_more(designs):
    comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=3, engine="serial", max_metrics=2, stream=None)
    names = [m.name for m in comparison.metrics]
    assert len(names) == 2 and all(m.differs and m.detectable for m in comparison.metrics)
    assert "wall_s" not in names and "drop_fraction" not in names  # never by default; aliases of pooled names
    # one metric of each entity and kind first, sockets before pipes: the losses of sub and its deliveries, not two of its
    # latency percentiles or the pipe's drops (the same numbers as the socket's)
    assert names == ["socket.sub.loss_fraction", "socket.sub.delivered"]
    selection = comparison.selection
    assert selection.detectable == 2 + len(selection.more) and selection.more
    assert selection.differ == selection.detectable + len(selection.noise) and selection.noise
    text = cmp.format_text(comparison)
    assert f"Shown: 2 of the {selection.detectable} metrics that differ beyond noise" in text
    assert f"{len(selection.noise)} more differ only within noise" in text
    assert f"{len(selection.more)} more differ beyond noise: " in text


def test_metric_globs_and_named_order(designs):
    comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=2, engine="serial",
                             metrics=["socket.sub.loss_fraction", "socket.sub.latency_p*"], stream=None)
    names = [m.name for m in comparison.metrics]
    assert names[0] == "socket.sub.loss_fraction"
    assert set(names[1:]) == {f"socket.sub.latency_{p}_s" for p in ("p50", "p95", "p99", "p99_9")}


def test_every_metric_a_row_carries_can_be_named(designs, tmp_path, capsys):
    # issue 30: docs/sweeps.md lists machine.cpu_s, and compare refused it as unknown before any run
    cores = tmp_path / "cores.toml"
    cores.write_text(Path(designs["hwm1"]).read_text().replace('profile = "ideal"', 'profile = "ideal"\n\n[machine]\ncores = 1'))
    comparison = cmp.compare([str(cores), str(cores)], replications=2, engine="serial", metrics=["machine.cpu_s", "thread.*"],
                             stream=None)
    names = [m.name for m in comparison.metrics]
    assert names[0] == "machine.cpu_s" and len(names) > 1 and all(name.startswith("thread.") for name in names[1:])
    assert comparison.metrics[0].samples[0].n == 2  # a number in every run (the ideal profile charges no CPU: 0)
    # a name no row carries is still refused, after the runs, in one line
    assert main(["compare", designs["hwm1"], designs["hwm100"], "-n", "2", "--engine", "serial", "--metric", "machine.cpu_s"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("zsim: --metric machine.cpu_s: unknown metric")


def test_compare_says_it_does_not_use_a_scenario_seed(designs, tmp_path):
    seeded = tmp_path / "seeded.toml"
    seeded.write_text(Path(designs["hwm1"]).read_text().replace('profile = "ideal"', 'profile = "ideal"\nseed = 7'))
    comparison = cmp.compare([designs["hwm100"], str(seeded)], replications=2, engine="serial", seed=3,
                             metrics=["socket.sub.delivered"], stream=None)
    text = cmp.format_text(comparison)
    assert text.splitlines()[1].startswith(f"note: {seeded} sets scenario.seed; a comparison does not use it: replication r of "
                                           "every design runs with the r-th seed from the root seed (3, --seed)")
    # and it does not: the seeded design's runs are those of the same file without its seed
    unseeded = cmp.compare([designs["hwm100"], designs["hwm1"]], replications=2, engine="serial", seed=3,
                           metrics=["socket.sub.delivered"], stream=None)
    assert comparison.metrics[0].values == unseeded.metrics[0].values
    assert "note:" not in cmp.format_text(unseeded)


def test_warned_runs_are_marked_next_to_their_numbers(designs):
    comparison = cmp.compare([designs["hwm1"], designs["overloaded"]], replications=2, engine="serial",
                             metrics=["socket.sub.dropped", "socket.pub.sent"], stream=None)
    dropped, sent = comparison.metrics
    assert dropped.warned[0] == {} and dropped.warned[1] == {"overloaded (sub)": 2}
    assert dropped.differences[1].verdict == "worse"
    assert sent.warned[1] == {}  # the sender's count is not what the warning is about
    assert comparison.designs[1].warnings["overloaded"] == 2
    text = cmp.format_text(comparison)
    assert "! overloaded (sub): 2/2 runs" in text and "worse, but runs warned (!)" in text
    assert "overloaded: runs warned: overloaded in 2/2" in text


def test_a_template_metric_is_marked_when_its_members_warned(designs, tmp_path):
    # issue 30: socket.sub.sum_dropped over a template of overloaded subscribers showed
    # "better"/"worse" with no "!" although every run warned about every member
    text = Path(designs["overloaded"]).read_text().replace('name = "sub"', 'name = "sub{i}"\ncount = 2')
    templated = tmp_path / "templated.toml"
    templated.write_text(text)
    comparison = cmp.compare([designs["hwm1"], str(templated)], replications=2, engine="serial",
                             metrics=["socket.sub.sum_dropped", "socket.sub.max_loss_fraction"], stream=None)
    for metric in comparison.metrics:
        assert metric.warned[1] == {"overloaded (sub)": 2}, metric.name
    assert "! overloaded (sub): 2/2 runs" in cmp.format_text(comparison)


def test_a_loss_no_run_had_is_not_shown_as_an_answer(designs):
    # issue 30: "identical in every run of every design: 0 %" read as "loses nothing"; with
    # 2 runs a design may still lose in most runs (1 - 0.05^(1/2) = 78 %)
    calm = Path(designs["hwm100"]).with_name("calm.toml")  # rho 0.3 into 100 + 1 places: no drop in any run
    calm.write_text(MM1K.format(hwm=100).replace("rate_per_s = 900", "rate_per_s = 300"))
    comparison = cmp.compare([str(calm), str(calm)], replications=2, engine="serial", metrics=["socket.sub.dropped"],
                             stream=None)
    (dropped,) = comparison.metrics
    assert dropped.identical
    text = cmp.format_text(comparison)
    assert ("identical in every run of every design: 0; none in 2 runs of each design does not rule it out: at 95 %, a run "
            "of a design has some with probability up to 78 %") in text
    sent = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=2, engine="serial", metrics=["socket.pub.sent"],
                       stream=None)
    assert "rule it out" not in cmp.format_text(sent)  # not a loss
    # beside a design that drops, the one that did not shows the same bound, not "0 % same in every run"
    mixed = cmp.compare([designs["hwm1"], str(calm)], replications=2, engine="serial", metrics=["socket.sub.dropped"],
                        stream=None)
    text = cmp.format_text(mixed)
    assert "none in 2 runs: some in up to 78 % of runs" in text and "same in every run" not in text


def test_identical_metric_has_no_interval(designs):
    comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=2, engine="serial",
                             metrics=["socket.pub.sent"], stream=None)
    (sent,) = comparison.metrics
    assert sent.identical and sent.differences[1].verdict == "identical"
    assert "socket.pub.sent - sent of pub: identical in every run of every design: 2,000" in cmp.format_text(comparison)


# -- designs from variants and from a sweep file ---------------------------------------------


def test_vary_makes_the_designs_with_path_value_names(designs, capsys):
    status = main(["compare", designs["hwm1"], "--vary", "socket.pub.options.sndhwm=1,100", "--link",
                   "socket.sub.options.rcvhwm=socket.pub.options.sndhwm", "-n", "2", "--engine", "serial", "--json",
                   "--metric", "socket.sub.dropped"])
    assert status == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data["designs"]] == ["socket.pub.options.sndhwm=1", "socket.pub.options.sndhwm=100"]
    assert data["designs"][1]["overrides"] == {"socket.pub.options.sndhwm": 100, "socket.sub.options.rcvhwm": 100}
    # the variant with HWM 100 on both sides is the file hwm100.toml: the same scenario digest
    files = make_designs([designs["hwm1"], designs["hwm100"]])
    assert data["designs"][1]["scenario_digest"] == files.designs[1].digest
    assert data["designs"][0]["scenario_digest"] == files.designs[0].digest
    assert data["metrics"][0]["designs"][1]["difference"]["verdict"] == "better"


def test_set_changes_every_design_and_is_shown(designs):
    plain = make_designs([designs["hwm1"], designs["hwm100"]])
    longer = make_designs([designs["hwm1"], designs["hwm100"]], set_=["scenario.until_s=5"])
    assert [d.raw["scenario"]["until_s"] for d in longer.designs] == [5, 5]
    assert [d.digest for d in longer.designs] != [d.digest for d in plain.designs]
    assert longer.designs[0].describe().endswith("hwm1.toml; set scenario.until_s = 5")
    variants = make_designs([designs["hwm1"]], vary=["socket.pub.options.sndhwm=1,100"], set_=["scenario.until_s=5"],
                                link=["socket.sub.options.rcvhwm=socket.pub.options.sndhwm"])
    assert variants.designs[1].describe().endswith(
        "hwm1.toml with socket.pub.options.sndhwm = 100 (and 1 linked path); set scenario.until_s = 5")
    assert variants.designs[1].overrides == {"scenario.until_s": 5, "socket.pub.options.sndhwm": 100,
                                             "socket.sub.options.rcvhwm": 100}


def test_vary_values_are_toml(designs):
    assert parse_values('1, 2.5, true, "a,b", { dist = "exponential", mean_s = 0.001 }', "--vary x") == [
        1, 2.5, True, "a,b", {"dist": "exponential", "mean_s": 0.001}]
    assert parse_values("PUB,XPUB", "--vary x") == ["PUB", "XPUB"]


def test_a_sweep_file_s_points_are_the_designs(designs, tmp_path):
    sweep = tmp_path / "study.toml"
    sweep.write_text(f"""\
[sweep]
name = "hwm"
base = "{Path(designs['hwm1']).name}"
replications = 2
seed = 4

[axes]
"socket.pub.options.sndhwm" = {{ values = [1, 100], names = ["small", "large"], label = "HWM" }}

[link]
"socket.sub.options.rcvhwm" = "socket.pub.options.sndhwm"

[report.derived]
kept = "socket.sub.delivered / socket.sub.copies"
""")
    comparison = cmp.compare([str(sweep)], engine="serial", metrics=["kept"], stream=None)
    assert [d.design.name for d in comparison.designs] == ["HWM=small", "HWM=large"]
    assert (comparison.replications, comparison.seed) == (2, 4)
    (kept,) = comparison.metrics
    assert kept.prefers is None and kept.differences[1].verdict == "higher"
    assert kept.values[1] == [1.0, 1.0]
    # -n and --seed override the sweep's
    assert make_designs([str(sweep)], replications=3, seed=9).replications == 3


# -- engines ----------------------------------------------------------------------------------


def test_local_engine_gives_the_same_output_as_the_in_process_one(designs):
    def output(engine: str) -> dict:
        comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=3, seed=7, engine=engine, jobs=2, stream=None) \
            if engine == "local" else cmp.compare([designs["hwm1"], designs["hwm100"]], replications=3, seed=7, engine=engine,
                                                  stream=None)
        return cmp.to_json(comparison)

    serial = output("serial")
    assert output("local") == serial
    assert output("serial") == serial  # and the same seed gives the same output again


@pytest.mark.spark
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="Spark needs Java")
def test_spark_engine_gives_the_same_output(designs):
    pytest.importorskip("pyspark")
    common = dict(replications=2, seed=7, metrics=["socket.sub.*", "pooled_*"], stream=None)
    serial = cmp.to_json(cmp.compare([designs["hwm1"], designs["hwm100"]], engine="serial", **common))
    spark = cmp.to_json(cmp.compare([designs["hwm1"], designs["hwm100"]], engine="spark", master="local[1]", **common))
    assert spark == serial


# -- errors: one line, exit 2 ----------------------------------------------------------------


@pytest.mark.parametrize(("extra", "expected"), [
    (["--metric", "socket.sub.dropd"], "zsim: --metric socket.sub.dropd: unknown metric; did you mean 'socket.sub.dropped'"),
    (["--metric", "socket.nothing.*"], "zsim: --metric socket.nothing.*: matches no metric"),
    (["--vary", "socket.pub.options.sndhwm"], "zsim: --vary: expected PATH=V1,V2,..."),
    (["--vary", "socket.nope.options.sndhwm=1,2"], "zsim: --vary socket.nope.options.sndhwm: no [[socket]] entry named 'nope'"),
    (["--vary", "socket.pub.options.sndhwm=1,-5"], "zsim: --vary socket.pub.options.sndhwm = -5: socket[pub].options.sndhwm: must be >= 0"),
    (["--vary", "socket.pub.options.sndhwm=1"], "zsim: --vary: gives one design"),
    (["--vary", "socket.pub.options.sndhwm=1,2", "--name", "a"], "zsim: --name: give one name per design: 2 designs, 1 names"),
    (["--prefer", "socket.sub.dropped=down"], "zsim: --prefer socket.sub.dropped: must be lower, higher or none"),
    ([], "zsim: DESIGN: one design"),
])
def test_bad_input_is_one_line_and_exit_2(designs, capsys, extra, expected):
    files = [designs["hwm1"], designs["hwm100"]] if extra and extra[0] in ("--metric", "--prefer") else [designs["hwm1"]]
    status = main(["compare", *files, "--engine", "serial", "-n", "2", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith(expected), err


def test_a_design_whose_every_run_fails_is_one_line(designs, tmp_path, capsys):
    limited = tmp_path / "limited.toml"
    limited.write_text(MM1K.format(hwm=1) + "\n[limits]\nmax_events = 50\n")
    assert main(["compare", designs["hwm1"], str(limited), "--engine", "serial", "-n", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("zsim: design 'limited': all 2 runs failed; the first: replication 0 (seed "), err
    assert "LimitExceeded: limits.max_events" in err[-1] and not any("Traceback" in line for line in err)


def test_a_bad_file_is_named(designs, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(MM1K.format(hwm=-1))
    assert main(["compare", designs["hwm1"], str(bad), "--engine", "serial"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.toml: socket[pub].options.sndhwm: must be >= 0" in err[0]
    assert main(["compare", designs["hwm1"], str(tmp_path / "missing.toml"), "--engine", "serial"]) == 2
    assert "missing.toml: no such file" in capsys.readouterr().err


# -- JSON and the report ------------------------------------------------------------------------


def test_json_schema(designs, capsys):
    assert main(["compare", designs["hwm1"], designs["hwm100"], "-n", "2", "--seed", "5", "--engine", "serial", "--json",
                 "--metric", "socket.sub.dropped", "--metric", "socket.pub.sent"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"format", "zsim_version", "seed", "replications", "paired", "seeds", "baseline", "designs", "metrics",
                         "selection", "notes", "verdicts", "best_overall"}
    assert data["verdicts"]["false_discovery_rate"] == 0.05 and data["verdicts"]["min_effect"] == 0.05
    assert data["verdicts"]["tests"] == 1  # socket.sub.dropped; socket.pub.sent is identical, nothing to test
    assert (data["format"], data["zsim_version"], data["seed"], data["replications"], data["paired"]) == (1, zsim.__version__, 5,
                                                                                                          2, True)
    assert data["seeds"] == [seed_for(5, "", 0, True), seed_for(5, "", 1, True)]
    assert data["baseline"] == "hwm1"
    for design in data["designs"]:
        assert set(design) == {"name", "baseline", "source", "overrides", "coords", "scenario_digest", "runs", "failed", "errors",
                               "warnings", "socket_warnings", "scenario_file"}
        assert design["scenario_file"] is None  # no --report: nothing written
        assert len(design["scenario_digest"]) == 16 and design["runs"] == 2 and design["failed"] == 0
    dropped, sent = data["metrics"]
    assert set(dropped) == {"name", "label", "prefers", "family", "identical", "same_numbers", "designs", "best"}
    assert dropped["best"] is None  # two designs: the verdict says it
    assert (dropped["name"], dropped["prefers"], dropped["identical"]) == ("socket.sub.dropped", "lower", False)
    base, other = dropped["designs"]
    assert "difference" not in base
    assert set(other) == {"design", "n", "missing", "mean", "sd", "ci_low", "ci_high", "constant", "values", "warned", "difference"}
    assert set(other["difference"]) == {"baseline", "n", "missing", "mean", "sd", "ci_low", "ci_high", "constant", "identical",
                                         "verdict", "p", "q", "relative_change"}
    assert other["difference"]["mean"] == pytest.approx(sum(b - a for a, b in zip(base["values"], other["values"], strict=True)) / 2)
    assert sent["identical"] is True and sent["designs"][1]["difference"]["verdict"] == "identical"


def test_report_writes_a_page_json_and_one_png_per_metric(designs, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["compare", designs["hwm1"], designs["hwm100"], designs["overloaded"], "-n", "3", "--engine", "serial",
                 "--report", str(out), "--metric", "socket.sub.dropped", "--metric", "socket.sub.latency_p99_s"]) == 0
    printed = capsys.readouterr().out
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["socket.sub.dropped.png", "socket.sub.latency_p99_s.png"]
    for name in pngs:
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
        assert f"wrote {out / name}" in printed
    page = (out / "summary.md").read_text()
    assert "## `socket.sub.dropped`" in page and "![socket.sub.dropped](socket.sub.dropped.png)" in page
    assert "| `overloaded` |" in page and "overloaded in 3/3 runs" in page
    assert json.loads((out / "compare.json").read_text())["designs"][2]["warnings"]["overloaded"] == 3


def test_the_best_design_is_named_and_every_design_written_as_a_scenario_file(designs, tmp_path, capsys):
    # issue 41, item 4: a comparison's answer names the scenario file that reproduces it, and writes it
    import tomllib

    from zsim import spec

    out = tmp_path / "report"
    argv = ["compare", designs["hwm1"], designs["hwm100"], "-n", "3", "--engine", "serial", "--report", str(out),
            "--metric", "socket.sub.dropped", "--set", "scenario.until_s=0.5"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    best = out / "designs" / "02-hwm100.toml"
    assert f"best (or as good) on the one metric shown that tells the designs apart: hwm100; its scenario file: {best}" in printed
    assert f"wrote {best}" in printed and f"wrote {out / 'designs' / '01-hwm1.toml'}" in printed
    data = json.loads((out / "compare.json").read_text())
    assert data["best_overall"]["designs"] == ["hwm100"]
    assert [d["scenario_file"] for d in data["designs"]] == ["designs/01-hwm1.toml", "designs/02-hwm100.toml"]
    text = best.read_text()
    assert text.startswith("# Design 'hwm100' of a zsim compare of 2 designs: the best (or as good) on every metric shown that "
                           "tells the designs apart\n# Made by: zsim compare ")
    assert f"# The same design from its base file: zsim run {designs['hwm100']} --set scenario.until_s=0.5\n" in text
    # the file is the design that ran: the same scenario digest
    written = spec.from_dict(tomllib.loads(text), base_dir=str(tmp_path))
    assert written.digest == data["designs"][1]["scenario_digest"] and written.until_s == 0.5
    assert "| `hwm100` |" in (out / "summary.md").read_text() and "`designs/02-hwm100.toml`" in (out / "summary.md").read_text()


def test_report_folder_is_checked_before_the_runs(designs, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["compare", designs["hwm1"], designs["hwm100"], "--engine", "serial", "--report", str(blocker)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a file" in err[0]


# -- which differences count, and which design is best (issue 30 item 3) ---------------------


def _noise_metrics(count: int, replications: int, seed: int) -> list[MetricResult]:
    """``count`` metrics on which two designs behave the same: every number is noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    design = DesignResult(None, replications, 0, [], {}, {})  # type: ignore[arg-type]
    metrics = []
    for index in range(count):
        rows = [[{"ok": True, f"socket.r{index}.latency_p99_s": float(x)} for x in rng.normal(1.0, 0.1, replications)]
                for _ in range(2)]
        metrics.append(metric_result(f"socket.r{index}.latency_p99_s", rows, [design, design]))
    return metrics


def test_noise_over_hundreds_of_metrics_is_not_reported_as_findings():
    # 300 metrics on which two designs do not differ: a 95 % test per metric calls about 15
    # of them better or worse; over the comparison as one family (false discovery rate 5 %)
    # none is, whatever the practical effect
    metrics = _noise_metrics(300, 10, seed=7)
    uncorrected = sum(m.detectable for m in metrics)
    assert uncorrected >= 5
    decided = control(metrics, min_effect=0.0)
    assert decided.tests == 300 and decided.fdr == 0.05
    assert sum(m.detectable for m in metrics) == 0
    assert all(d.q is not None and d.q > 0.05 for m in metrics for d in m.differences[1:] if d is not None)


def test_a_real_difference_survives_the_control_and_a_small_one_is_negligible():
    metrics = _noise_metrics(50, 10, seed=3)
    design = DesignResult(None, 10, 0, [], {}, {})  # type: ignore[arg-type]
    big = [[{"ok": True, "socket.x.dropped": base + r} for r in range(10)] for base in (100.0, 50.0)]
    small = [[{"ok": True, "socket.y.dropped": base + r} for r in range(10)] for base in (100.0, 102.0)]
    metrics += [metric_result("socket.x.dropped", big, [design, design]),
                metric_result("socket.y.dropped", small, [design, design])]
    control(metrics, min_effect=0.05)
    x, y = metrics[-2:]
    assert x.differences[1].verdict == "better" and x.differences[1].q == 0.0
    # 2 more drops in every replication: beyond noise, but 2 % of the larger mean
    assert y.differences[1].verdict == "negligible" and not y.detectable
    control(metrics, min_effect=0.0)
    assert y.differences[1].verdict == "worse"


def test_the_best_design_is_named_and_every_other_tested_against_it():
    # four designs of one metric that prefers lower: C is best, A within noise of it, B and D worse
    design = DesignResult(None, 8, 0, [], {}, {})  # type: ignore[arg-type]
    jitter = [0.3, -0.2, 0.1, -0.4, 0.25, 0.0, -0.1, 0.05]
    means = {"A": 10.05, "B": 13.0, "C": 10.0, "D": 20.0}
    rows = [[{"ok": True, "socket.s.latency_p99_s": mean + j + (0.2 * (-1) ** r if name == "A" else 0.0)}
             for r, j in enumerate(jitter)] for name, mean in means.items()]
    metric = metric_result("socket.s.latency_p99_s", rows, [design] * 4)
    best = best_design(metric, min_effect=0.05)
    assert best is not None
    assert best.design == 2 and best.ties == [0] and [i for i, _ in best.worse] == [1, 3] and best.comparisons == 3
    assert [round(d, 6) for _, d in best.worse] == [3.0, 10.0]
    # with a practical effect of 40 %, B (30 % worse) is as good as C for the designer
    assert best_design(metric, min_effect=0.4).ties == [0, 1]
    # a design whose runs warned is not named best while one that did not warn exists
    metric.warned[2] = {"overloaded": 8}
    assert best_design(metric).design == 0
    # no preferred direction, or two designs: no best line
    assert best_design(metric_result("socket.s.latency_p99_s", rows[:2], [design] * 2)) is None


def test_compare_names_the_best_of_several_designs(designs, capsys):
    assert main(["compare", designs["hwm1"], "--vary", "socket.sub.options.rcvhwm=1,4,100", "--link",
                 "socket.pub.options.sndhwm=socket.sub.options.rcvhwm", "-n", "4", "--engine", "serial",
                 "--metric", "socket.sub.dropped"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.strip().startswith("best:"))
    assert line.strip().startswith("best: socket.sub.options.rcvhwm=100 (lowest mean)")
    assert "worse: socket.sub.options.rcvhwm=1 (+" in line and "over 2 comparisons" in line
    assert "Benjamini-Hochberg" in out and "--min-effect" in out


def test_derive_adds_a_metric_checked_before_any_run(designs, capsys):
    assert main(["compare", designs["hwm1"], designs["hwm100"], "-n", "2", "--engine", "serial", "--json",
                 "--derive", "loss=socket.sub.dropped / socket.pub.sent", "--metric", "loss"]) == 0
    data = json.loads(capsys.readouterr().out)
    (loss,) = data["metrics"]
    dropped = json.loads(json.dumps(loss))["designs"][0]
    assert loss["name"] == "loss" and loss["prefers"] == "lower" and 0 < dropped["mean"] < 1
    assert main(["compare", designs["hwm1"], designs["hwm100"], "-n", "2", "--engine", "serial",
                 "--derive", "loss=socket.sub.dropt / socket.pub.sent"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("zsim: --derive loss: reads socket.sub.dropt") and "socket.sub.dropped" in err
    with pytest.raises(SystemExit) as exited:
        main(["compare", designs["hwm1"], designs["hwm100"], "--min-effect", "5"])
    assert exited.value.code == 2 and "argument --min-effect: must be from 0 to below 1" in capsys.readouterr().err


# -- --precision: replications until the interval is as narrow as asked ----------------------


def test_precision_adds_replications_until_the_half_width_is_met_and_extends_the_same_seeds(designs):
    # HWM 1 against HWM 100 on the drop fraction: 3 replications give a wide interval; asked
    # for +- 0.5 percentage points, compare runs more, and the first 3 are the same runs
    target = 0.005
    base = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=3, seed=5, engine="serial",
                       metrics=["socket.sub.loss_fraction"], stream=None)
    (metric,) = base.metrics
    assert max(s.half_width for s in metric.samples) > target  # the premise: 3 are not enough
    precise = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=3, seed=5, engine="serial",
                          metrics=["socket.sub.loss_fraction"], precision=[f"socket.sub.loss_fraction={target}"], stream=None)
    (wide,) = precise.metrics
    assert precise.replications > 3
    assert precise.seeds[:3] == base.seeds
    widths = [s.half_width for s in wide.samples] + [d.sample.half_width for d in wide.differences[1:]]
    assert max(widths) <= target
    assert any(note.startswith(f"--precision: met at {precise.replications} replications") for note in precise.notes)
    # the runs of the first three replications are the same runs: the means over them agree
    again = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=precise.replications, seed=5, engine="serial",
                        metrics=["socket.sub.loss_fraction"], stream=None)
    assert [s.mean for s in again.metrics[0].samples] == [s.mean for s in wide.samples]


def test_precision_stops_at_max_runs_and_says_so(designs):
    comparison = cmp.compare([designs["hwm1"], designs["hwm100"]], replications=2, seed=5, engine="serial",
                             metrics=["socket.sub.loss_fraction"], precision=["socket.sub.loss_fraction=0.00001"],
                             max_runs=12, stream=None)
    assert comparison.replications == 6  # 12 runs over 2 designs
    assert any(note.startswith("--precision: NOT met at 6 replications, the most --max-runs allows") for note in comparison.notes)


@pytest.mark.parametrize(("flag", "message"), [
    ("socket.sub.loss_fraction", "--precision: expected METRIC=HALF_WIDTH"),
    ("socket.sub.loss_fraction=0", "--precision socket.sub.loss_fraction: the half-width must be a number > 0"),
    ("socket.sub.loss_fraction=abc", "--precision socket.sub.loss_fraction: the half-width must be a number > 0"),
    ("socket.sub.loss_fraction=100%", "--precision socket.sub.loss_fraction: the half-width must be a number > 0"),
    ("socket.sbu.loss_fraction=0.01", "socket.sbu.loss_fraction"),
])
def test_a_bad_precision_is_one_line_and_exit_2(designs, capsys, flag, message):
    assert main(["compare", designs["hwm1"], designs["hwm100"], "-n", "2", "--engine", "serial", "--precision", flag]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_fraction_s_interval_stays_in_zero_to_one_and_its_difference_does_not():
    # a loss fraction of 0, 0, 0, 5 %: the t interval reaches below 0; a loss cannot
    rows = [[{"ok": True, "socket.sub.loss_fraction": v} for v in (0.0, 0.0, 0.0, 0.05)],
            [{"ok": True, "socket.sub.loss_fraction": v} for v in (0.0, 0.0, 0.0, 0.0)]]
    raw = describe([0.0, 0.0, 0.0, 0.05])
    assert raw.low is not None and raw.low < 0
    designs = [DesignResult(design=None, runs=4, failed=0, errors=[], warnings={}, socket_flags={}) for _ in range(2)]  # type: ignore[arg-type]
    metric = metric_result("socket.sub.loss_fraction", rows, designs)
    assert metric.samples[0].low == 0.0 and metric.samples[0].high == raw.high
    assert metric.differences[1] is not None and metric.differences[1].sample.low is not None
    assert metric.differences[1].sample.low < 0  # 0 - 5 %: a difference may be negative
    # a metric that is not a fraction keeps its t interval
    rows = [[{"ok": True, "socket.sub.latency_p99_s": v} for v in (0.0, 0.0, 0.0, 0.05)]] * 2
    assert metric_result("socket.sub.latency_p99_s", rows, designs).samples[0].low == raw.low


def test_progress_goes_to_the_stderr_of_the_moment_not_of_the_import(monkeypatch):
    # a default stream=sys.stderr bound pytest's capture of the first importing test: a later
    # test's compare wrote to that closed stream ("I/O operation on closed file")
    import io

    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    raw = {"scenario": {"name": "tiny", "until_s": 0.05, "profile": "ideal"},
           "socket": [{"name": "a", "type": "PUSH", "bind": ["inproc://x"]}, {"name": "b", "type": "PULL", "connect": ["inproc://x"]}],
           "send": [{"socket": "a", "count": 3}]}
    cmp.compare([raw, raw], replications=2, engine="serial")
    assert "[compare]" in later.getvalue()


def test_a_comparison_that_shows_no_metric_is_an_empty_frame_with_its_columns():
    raw = {"scenario": {"name": "tiny", "until_s": 0.05, "profile": "ideal"},
           "socket": [{"name": "a", "type": "PUSH", "bind": ["inproc://x"]}, {"name": "b", "type": "PULL", "connect": ["inproc://x"]}],
           "send": [{"socket": "a", "count": 3}]}
    comparison = cmp.compare([raw, raw], replications=2, engine="serial", stream=None)
    assert comparison.metrics == []  # the same design twice: nothing differs
    frame = comparison.to_frame()  # was KeyError: 'mean'
    assert len(frame) == 0 and list(frame.index.names) == ["metric", "design"]
    assert "diff_mean" in frame.columns and frame["mean"].dtype == float


def test_progress_without_any_stderr_is_silent(monkeypatch):
    from zsim import files

    monkeypatch.setattr(sys, "stderr", None)  # pythonw, some embedders
    assert files.STDERR.write("[compare] note\n") == len("[compare] note\n")
    files.STDERR.flush()
    assert files.STDERR.isatty() is False
