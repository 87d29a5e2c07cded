"""``zsim explain --sweep DIR --worst METRIC`` (issue 30 item 7): the worst run of a sweep,
rebuilt from its results folder and explained; the re-run reproduces the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zsim.cli import main
from zsim.sweep import store

BASE = """\
[scenario]
name = "mm"
profile = "ideal"

[[socket]]
name = "pub"
type = "PUB"
bind = ["inproc://q"]
options = { sndhwm = 1 }

[[socket]]
name = "sub"
type = "SUB"
connect = ["inproc://q"]
options = { rcvhwm = 1, subscribe = [""] }

[[send]]
socket = "pub"
count = 300
rate_per_s = 900
start_s = 0.001
size_bytes = 10

[[recv]]
socket = "sub"
service_s = { dist = "exponential", mean_s = 0.001 }
"""

STUDY = """\
[sweep]
name = "hwm"
base = "mm.toml"
replications = 3
seed = 1

[axes]
"socket.pub.options.sndhwm" = { values = [1, 4, 16] }

[link]
"socket.sub.options.rcvhwm" = "socket.pub.options.sndhwm"
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("replay")
    (folder / "mm.toml").write_text(BASE)
    (folder / "study.toml").write_text(STUDY)
    assert main(["sweep", str(folder / "study.toml"), "--engine", "serial", "--out", str(folder / "res")]) == 0
    return folder / "res"


def test_the_worst_run_is_the_one_with_the_most_drops_and_its_re_run_reproduces_it(results, capsys):
    capsys.readouterr()
    frame = store.read_frame(store.sweep_dirs(results)[0])
    worst = frame.loc[frame["socket.sub.dropped"].idxmax()]
    assert main(["explain", "--sweep", str(results), "--worst", "socket.sub.dropped", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    chosen = data["chosen"]
    assert (chosen["point"], chosen["replication"], chosen["seed"]) == (worst["point"], worst["replication"], worst["seed"])
    assert chosen["value"] == worst["socket.sub.dropped"] > 0 and chosen["direction"] == "highest" and chosen["runs"] == 9
    assert chosen["coords"] == {"socket.pub.options.sndhwm": 1} and chosen["reproduced"] is True
    assert data["episodes"]  # the drops are explained
    assert main(["explain", "--sweep", str(results), "--worst", "socket.sub.dropped"]) == 0
    text = capsys.readouterr().out
    first = text.splitlines()[0]
    assert first.startswith("zsim explain: the worst run for socket.sub.dropped (highest of 9 finished runs) in sweep 'hwm': "
                            "socket.pub.options.sndhwm = 1, replication ")
    assert "note: run again" not in text and "Loss episode 1" in text


def test_a_metric_that_prefers_higher_is_worst_at_its_lowest(results, capsys):
    frame = store.read_frame(store.sweep_dirs(results)[0])
    assert main(["explain", "--sweep", str(results), "--worst", "socket.sub.delivered", "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)["chosen"]
    assert chosen["direction"] == "lowest" and chosen["value"] == frame["socket.sub.delivered"].min()


@pytest.mark.parametrize("argv,expected", [
    (["--worst", "socket.sub.dropt"], "zsim: --worst: 'socket.sub.dropt' is not a metric of the rows of sweep 'hwm'; "
                                      "did you mean 'socket.sub.dropped'?"),
    ([], "zsim: --sweep: needs --worst METRIC: which run of the sweep to explain"),
    (["--worst", "socket.sub.dropped", "--seed", "3"], "zsim: --sweep: explains a run of the sweep as it ran: no --set or --seed "
                                                       "with it"),
    (["--worst", "socket.sub.dropped", "--sweep-name", "other"], "zsim: --sweep-name: no sweep 'other' in "),
])
def test_bad_input_is_one_line_and_exit_2(results, capsys, argv, expected):
    capsys.readouterr()
    assert main(["explain", "--sweep", str(results), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(expected) and "\n" not in err


def test_a_manifest_from_an_older_zsim_says_to_run_the_sweep_again(results, tmp_path, capsys):
    import shutil

    copy = tmp_path / "res"
    shutil.copytree(results, copy)
    manifest_path = store.sweep_dirs(copy)[0] / store.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    for point in manifest["points"]:
        del point["overrides"]
    manifest_path.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["explain", "--sweep", str(copy), "--worst", "socket.sub.dropped"]) == 2
    assert "written by an older zsim and cannot rebuild a run; run the sweep again" in capsys.readouterr().err


def test_explain_without_a_file_or_a_sweep_is_one_line(capsys):
    assert main(["explain"]) == 2
    assert capsys.readouterr().err.strip() == ("zsim: explain: name a scenario file, or a sweep's results with --sweep DIR "
                                               "--worst METRIC")
