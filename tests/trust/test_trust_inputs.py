"""Inputs that end in one clear line (issue 39, findings 6, 7 and 8): a profile must be a
profile and never repeats what it read; expressions and dotted paths are bounded before
they are parsed (no RecursionError, no "out of memory"); numbers beyond what a float or a
timer holds are refused where they are given; a metric name that is no metric is refused;
text tables keep their columns apart whatever the values."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from untrusted import one_line, scenario_text
from zsim import profile as profile_module
from zsim.cli import build_parser, main

SHIPPED = profile_module.PROFILE_DIR / "default.toml"


@pytest.fixture(autouse=True)
def fresh_profiles():
    """Profiles are cached by path: every test reads its files anew."""
    profile_module._CACHE.clear()
    yield
    profile_module._CACHE.clear()


def scenario_with_profile(tmp_path: Path, profile_text: str, name: str = "machine.toml") -> Path:
    (tmp_path / name).write_text(profile_text)
    path = tmp_path / "s.toml"
    path.write_text(scenario_text().replace('profile = "ideal"', f'profile = "{name}"'))
    return path


# -- finding 6: any TOML file was a profile ----------------------------------------------------


PYPROJECT = """[project]
name = "mine"
version = "1.0"

[tool.ruff]
line-length = 100
"""


@pytest.mark.parametrize("text", [PYPROJECT, "", "[api]\nsend_call_s = 1e-6\n"], ids=["pyproject", "empty", "no-profile-table"])
def test_a_toml_file_without_a_profile_table_is_not_a_profile(tmp_path, capsys, text):
    """``profile = "pyproject.toml"`` (a typo) ran a machine whose every cost was zero."""
    path = scenario_with_profile(tmp_path, text, "pyproject.toml")
    line = one_line(capsys, ["run", str(path)], 2)
    assert line == (f"zsim: scenario.profile: {tmp_path / 'pyproject.toml'}: not a zsim profile: it has no [profile] table "
                    "(zsim calibrate writes one, with format = 1 and where it was measured; docs/scenario-format.md, Profiles)")


def test_a_host_profile_must_be_a_profile_too(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    path = tmp_path / "s.toml"
    path.write_text(scenario_text() + '\n[[host]]\nname = "a"\nprofile = "pyproject.toml"\n')
    line = one_line(capsys, ["run", str(path)], 2)
    assert line.startswith(f"zsim: host[a].profile: {tmp_path / 'pyproject.toml'}: not a zsim profile")


@pytest.mark.parametrize("change, field, hint", [
    ("[api]\nsend_cal_s = 1e-6\n", "api.send_cal_s", "(did you mean 'send_call_s'?)"),
    ("[apy]\nsend_call_s = 1e-6\n", "apy", "(did you mean [api]?)"),
    ("[tcp]\nhop_latncy_s = 1e-5\n", "tcp.hop_latncy_s", "(did you mean 'hop_latency_s'?)"),
    ("[scheduler]\ncore = 4\n", "scheduler.core", "(did you mean 'cores'?)"),
    ("[tcp.kernel]\npayload_bytes = [10]\ncapacity_bytes = [4096]\n[tcp.kernel.hwm_x]\npayload_bytes = [10]\n",
     "tcp.kernel.hwm_x", "unknown field"),
])
def test_an_unknown_table_or_key_is_refused_with_the_one_it_meant(tmp_path, capsys, change, field, hint):
    path = scenario_with_profile(tmp_path, '[profile]\nname = "mine"\n' + change)
    line = one_line(capsys, ["run", str(path)], 2)
    assert line.startswith(f"zsim: profile {tmp_path / 'machine.toml'}: {field}: "), line
    assert hint in line


SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize("change, field, expected", [
    (f'[api]\nsend_call_s = "{SECRET}"\n', "api.send_call_s", "must be a finite number >= 0, got a string"),
    (f'[scheduler]\ncores = "{SECRET}"\n', "scheduler.cores", "must be an integer, got a string"),
    (f'[tcp]\nhop_latency_s = {{ dist = "{SECRET}", mean_s = 1 }}\n', "tcp.hop_latency_s.dist",
     "unknown distribution; one of constant, exponential, uniform, lognormal, empirical"),
    (f'[tcp]\nhop_latency_s = "{SECRET}"\n', "tcp.hop_latency_s", "must be a number"),
    (f'[tcp.kernel]\npayload_bytes = [10]\ncapacity_bytes = ["{SECRET}"]\n', "tcp.kernel.capacity_bytes[0]",
     "must be a whole number >= 0, got a string"),
    ("[api]\nsend_call_s = -31337.5\n", "api.send_call_s", "must be a finite number >= 0"),
    ("[profile]\nname = 31337\n", "profile.name", "must be a string, got an integer"),
])
def test_a_profile_error_names_the_field_and_never_repeats_the_value(tmp_path, capsys, change, field, expected):
    """A profile file may be any TOML file on the machine (a scenario from elsewhere names
    it): its error says what the field must be, not what it holds."""
    head = "" if change.startswith("[profile]") else '[profile]\nname = "mine"\n'
    path = scenario_with_profile(tmp_path, head + change)
    line = one_line(capsys, ["run", str(path)], 2)
    assert line == f"zsim: profile {tmp_path / 'machine.toml'}: {field}: {expected}"
    assert SECRET not in line and "31337" not in line


def test_the_shipped_profile_and_calibrate_say_what_they_are_and_older_profiles_still_load(tmp_path, capsys):
    """``[profile] format`` is the marker (zsim calibrate writes it); a profile of an older
    zsim calibrate has none and loads when its tables and keys are known; a newer format is
    refused."""
    from validation.calibrate.common import _machine_section

    assert tomllib.loads(SHIPPED.read_text())["profile"]["format"] == profile_module.FORMAT == 1
    assert _machine_section(quick=True)["format"] == profile_module.FORMAT
    shipped = profile_module.load("default")
    older = SHIPPED.read_text().replace("\nformat = 1", "\n# no format: an older zsim calibrate's", 1)
    assert "format =" not in older
    path = scenario_with_profile(tmp_path, older)
    from_older = profile_module.load(str(tmp_path / "machine.toml"))
    assert (from_older.send_call_s, from_older.cores, from_older.transport("tcp").kernel) == \
        (shipped.send_call_s, shipped.cores, shipped.transport("tcp").kernel)
    assert main(["run", str(path)]) == 0
    capsys.readouterr()
    profile_module._CACHE.clear()
    newer = SHIPPED.read_text().replace("\nformat = 1", "\nformat = 2", 1)
    path = scenario_with_profile(tmp_path, newer)
    line = one_line(capsys, ["run", str(path)], 2)
    assert line.endswith("profile.format: this zsim reads profile format 1; this file is written in a newer one (a newer zsim "
                         "wrote it)")


# -- finding 7: expressions and paths bounded before the work ----------------------------------


def compare_argv(tmp_path: Path, *extra: str) -> list[str]:
    path = tmp_path / "s.toml"
    path.write_text(scenario_text())
    return ["compare", str(path), str(path), "--engine", "serial", "-n", "2", *extra]


DEPTH = ("nests 1,000 deep (operators, signs, parentheses and calls along its deepest chain); at most 100 are accepted "
         "(zsim.limits.MAX_EXPRESSION_DEPTH): a long sum reads sum(a, b, c, ...)")


@pytest.mark.parametrize("expression, reason", [
    ("+".join(["sent"] * 1000), DEPTH),
    ("(" * 999 + "sent" + ")" * 999, DEPTH),
    ("-" * 999 + "sent", DEPTH),
    ("-" * 100_000 + "sent", "is 100,004 characters long; at most 10,000 are accepted (zsim.limits.MAX_EXPRESSION_CHARS)"),
    ("sent * " + "9" * 5000, "a number of 5,000 characters at character 8; at most 400 are accepted"),
    ("sent * 1e999", "a number must be finite (at most about 1.8e308)"),
    ("sent * 1" + "0" * 320, "a number must be finite (at most about 1.8e308)"),
])
def test_a_derived_expression_too_long_or_too_deep_is_one_line(tmp_path, capsys, expression, reason):
    """1,000 nested terms were a RecursionError ("internal error"), 100,000 unary minus
    signs "out of memory" with advice about --max-messages."""
    line = one_line(capsys, compare_argv(tmp_path, "--derive", f"x={expression}"), 2)
    assert line == f"zsim: --derive x: {reason}"


def test_a_long_chain_is_refused_and_the_same_sum_reads_as_sum(tmp_path, capsys):
    line = one_line(capsys, compare_argv(tmp_path, "--derive", "x=" + " + ".join(["sent"] * 101)), 2)
    assert line == "zsim: --derive x: " + DEPTH.replace("1,000", "101")
    assert main(compare_argv(tmp_path, "--derive", "x=sum(" + ", ".join(["sent"] * 1000) + ")", "--metric", "x")) == 0
    assert "x: identical in every run of every design: 20,000\n" in capsys.readouterr().out


def test_a_sweep_files_derived_expression_is_bounded_before_any_run(tmp_path, capsys):
    (tmp_path / "s.toml").write_text(scenario_text())
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('[sweep]\nname = "d"\nbase = "s.toml"\nreplications = 1\n[axes]\n"send.push.count" = [10, 20]\n'
                     f'[report.derived]\nx = "{"+".join(["sent"] * 1000)}"\n')
    line = one_line(capsys, ["sweep", str(sweep), "--engine", "serial", "--out", str(tmp_path / "out")], 2)
    assert line == f"zsim: report.derived.x: {DEPTH}"
    assert not (tmp_path / "out").exists()


PARTS = "a path of 40 parts; at most 32 are accepted (zsim.limits.MAX_PATH_PARTS): no scenario field lies deeper"
CHARS = "a path of 2,006 characters; at most 1,000 are accepted (zsim.limits.MAX_PATH_CHARS)"


@pytest.mark.parametrize("command", ["run", "explain"])
@pytest.mark.parametrize("parts, reason", [(40, PARTS), (1000, CHARS)])
def test_a_set_path_of_too_many_parts_is_one_line(tmp_path, capsys, command, parts, reason):
    """A --set path of 1,000 parts was a RecursionError ("internal error")."""
    path = tmp_path / "s.toml"
    path.write_text(scenario_text())
    line = one_line(capsys, [command, str(path), "--set", "scenario." + ".".join(["a"] * (parts - 1)) + "=1"], 2)
    assert line == f"zsim: --set: {reason}"


@pytest.mark.parametrize("parts, reason", [(40, PARTS), (1000, CHARS)])
def test_a_vary_path_of_too_many_parts_is_one_line(tmp_path, capsys, parts, reason):
    argv = compare_argv(tmp_path, "--vary", "scenario." + ".".join(["a"] * (parts - 1)) + "=1,2")
    del argv[2]  # one scenario file, its variants
    line = one_line(capsys, argv, 2)
    assert line == f"zsim: --vary: {reason}"


@pytest.mark.parametrize("assignment, expected", [
    # 5,000 digits: Python's int() refuses past 4,300 (a ValueError out of tomllib); the text is then a string
    ("scenario.until_s=" + "9" * 5000, "zsim: --set scenario.until_s: scenario.until_s: must be a number of seconds, got '999999"),
    # 10**400 written out: an int no float holds (OverflowError)
    ("scenario.until_s=1" + "0" * 400, "zsim: --set scenario.until_s: scenario.until_s: must be a number of seconds, got '100000"),
    # a send every 1e308 s: simulated time reaches infinity (an AttributeError deep in the model)
    ("send.push.interval_s=1e308", "zsim: --set send.push.interval_s: send[push].interval_s: must be at most 1e+09 s (about 32 "
                                   "years; zsim.limits.MAX_SECONDS), got 1e+308"),
    ("send.push.rate_per_s=1e-300", "zsim: --set send.push.rate_per_s: send[push].rate_per_s: must be at least 1e-09 (a send "
                                    "every 1e+09 s at most: zsim.limits.MAX_SECONDS), got 1e-300"),
])
def test_numbers_beyond_a_float_or_a_clock_are_refused_where_they_are_given(tmp_path, capsys, assignment, expected):
    path = tmp_path / "s.toml"
    path.write_text(scenario_text().replace("interval_s = 0.001\n", ""))  # a rate instead, in one case
    line = one_line(capsys, ["run", str(path), "--set", assignment], 2)
    assert line.startswith(expected), line
    assert len(line) < 400


def test_a_toml_integer_beyond_64_bits_is_refused_in_any_file(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(scenario_text().replace("count = 20", "count = 1" + "0" * 400))
    line = one_line(capsys, ["run", str(path)], 2)
    assert line == f"zsim: {path}: holds an integer beyond 64 bits (TOML integers are from -2^63 to 2^63 - 1)"


def test_derived_values_near_the_largest_float_are_compared_not_crashed(tmp_path, capsys):
    """Two runs of 1.5e308 each: their sum is no float (statistics.fmean raised OverflowError)."""
    assert main(compare_argv(tmp_path, "--derive", "x=sent / sent * 1.5e308", "--metric", "x")) == 0
    assert "x: identical in every run of every design: 1.5e+308\n" in capsys.readouterr().out


def parse_error(capsys, argv: list[str]) -> str:
    """The one line argparse gives for ``argv``: the command never starts (``--jobs 100000``
    must not, on a zsim that would obey it)."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("argv, expected", [
    (["sweep", "s.toml", "--jobs", "100000"], "argument --jobs: must be at most 1,024 (zsim.limits.MAX_JOBS), got '100000'"),
    (["compare", "a.toml", "b.toml", "--jobs", "1" + "0" * 400], "argument --jobs: must be at most 1,024 (zsim.limits.MAX_JOBS)"),
    (["search", "s.toml", "--workers", "5000"], "argument --workers: must be at most 1,024 (zsim.limits.MAX_JOBS), got '5000'"),
    (["compare", "a.toml", "b.toml", "--run-timeout", "1e308"],
     "argument --run-timeout: must be at most 1e+09 s (about 32 years; zsim.limits.MAX_SECONDS); 0 for no limit, got '1e308'"),
    (["run", "s.toml", "--max-wall-s", "1e308"],
     "argument --max-wall-s: must be at most 1e+09 s (about 32 years; zsim.limits.MAX_SECONDS); 0 for no limit, got '1e308'"),
])
def test_counts_and_seconds_on_the_command_line_are_bounded(capsys, argv, expected):
    """``--jobs 10**400`` started worker processes without end (thousands before it was
    stopped); ``--run-timeout 1e308`` failed every run (a timer the OS cannot set)."""
    line = parse_error(capsys, argv)
    assert line.startswith(f"zsim {argv[0]}: error: {expected}"), line


def test_validate_replications_are_bounded_before_any_list_is_made():
    """``zsim validate -n 10**400`` built a list of seeds until memory ran out (12 GB)."""
    from validation.cli import check_run_options
    from zsim.errors import ScenarioError

    with pytest.raises(ScenarioError, match=r"^--replications: must be at most 10,000 \(validation.compare.MAX_REPLICATIONS\), got "):
        check_run_options(10**400, None)


# -- finding 8: names that are no metric, columns that run together ----------------------------


def test_a_derived_metric_reading_no_metric_is_refused(tmp_path, capsys):
    """``--derive x=...`` was accepted and x silently had no value."""
    line = one_line(capsys, compare_argv(tmp_path, "--derive", "x=..."), 2)
    assert line.startswith("zsim: --derive x: reads ...: unknown metric (no metric's name starts with '.'); ")
    line = one_line(capsys, compare_argv(tmp_path, "--derive", "x=sokcet.pull.received"), 2)
    assert line.startswith("zsim: --derive x: reads sokcet.pull.received: unknown metric (no metric's name starts with "
                           "'sokcet.'); did you mean 'socket.pull.received'")


def test_a_derived_metric_reading_a_name_no_run_has_is_said(tmp_path, capsys):
    """A pipe's name is made by the model, so it is checked against the runs' rows."""
    assert main(compare_argv(tmp_path, "--derive", "x=pipe.nothere.dropped")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("zsim: --derive x: reads 'pipe.nothere.dropped', which no run has; did you mean "
                       "'pipe.push->pull.dropped', 'pipe.pull->push.dropped'?")


def test_table_columns_stay_apart_at_latencies_of_a_billion_milliseconds(tmp_path, capsys):
    """A receiver that takes 10^5 s a message: latencies near 10^9 ms ran together
    (``0.00949999990.5001880999981.19...``). With ordinary values the widths are the
    fixed ones (docs and tests show these lines)."""
    path = tmp_path / "s.toml"
    path.write_text(scenario_text())
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("socket                 type      sent    again  received  dropped  discard   lost  blocked s\n"
            "--------------------------------------------------------------------------------------------\n"
            "push                   PUSH        20        0         0        0        0      0          0\n"
            "pull                   PULL         0        0        20        0        0      0          0\n") in out
    assert ("receiver             copies in delivered  dropped   lost  at end  loss %    p50 ms    p99 ms  p99.9 ms    max ms\n"
            "----------------------------------------------------------------------------------------------------------------\n"
            "pull                        20        20        0      0       0    0.00") in out
    path.write_text(scenario_text() + "service_s = 100000\n")
    assert main(["run", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("receiver "))
    assert lines[head].split() == ["receiver", "copies", "in", "delivered", "dropped", "lost", "at", "end", "loss", "%", "p50",
                                   "ms", "p99", "ms", "p99.9", "ms", "max", "ms"]
    assert lines[head + 1] == "-" * len(lines[head])
    row = lines[head + 2].split()
    assert row[:7] == ["pull", "20", "20", "0", "0", "0", "0.00"]
    assert [float(v) for v in row[7:]] == pytest.approx([949999990.5, 1880999981.19, 1898099981.019, 1899999981.0], rel=1e-6)
    # each value ends where its header does, as in any table
    for header, value in zip(("p50 ms", "p99 ms", "p99.9 ms", "max ms"), row[7:], strict=True):
        assert lines[head].index(header) + len(header) == lines[head + 2].index(value) + len(value)


def test_an_error_line_that_repeats_a_huge_input_keeps_its_field_and_its_reason(tmp_path, capsys):
    """A line that repeated a 100,000-character --metric was 100,000 characters long."""
    line = one_line(capsys, compare_argv(tmp_path, "--metric", "socket." + "a" * 100_000), 2)
    assert len(line) <= 1010
    assert line.startswith("zsim: --metric socket.aaaa") and " characters ...] " in line
    assert line.endswith("metrics are pooled names (delivered, pooled_loss_fraction, ...) and sender.send.*, socket.pull.*, "
                         "socket.push.*")
