"""The arithmetic of ``validation.calibrate``, module by module, without a socket: what each
measurement makes of its timings (quantiles, summaries, rounding, fits, tables, the
profile's TOML). The timings themselves are the machine's and are stubbed here; the
kernel capacities fitted from ``accepted`` are pinned by tests/spec/test_profile.py.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pytest

import validation.calibrate as calibrate
import validation.harness as harness
import validation.timing as timing
from validation.calibrate import app_loop, cli, common, engine, experiments, kernel, latencies, scheduler, wakeups

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


# -- common -------------------------------------------------------------------------------

def test_quantile_interpolates_between_sorted_values():
    assert math.isnan(common._quantile([], 0.5))
    assert common._quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert common._quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert common._quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert common._quantile([0.0, 10.0], 0.25) == 2.5


def test_round_keeps_significant_digits_and_leaves_zero_and_non_finite_alone():
    assert common._round(1.23456789e-6) == 1.23457e-6
    assert common._round(123456.789, 4) == 123500.0
    assert common._round(0) == 0.0 and isinstance(common._round(0), float)
    assert math.isinf(common._round(math.inf)) and math.isnan(common._round(math.nan))


def test_empirical_keeps_few_values_and_takes_evenly_spaced_quantiles_of_many():
    assert common._empirical([3e-6, 1e-6, 2e-6]) == {"dist": "empirical", "values_s": [1e-6, 2e-6, 3e-6]}
    many = [i * 1e-6 for i in range(1001)]
    table = common._empirical(many, points=5)["values_s"]
    assert table == [0.0, 250e-6, 500e-6, 750e-6, 1000e-6]
    assert len(common._empirical(many)["values_s"]) == common.EMPIRICAL_POINTS


def test_summary_scales_then_summarises_to_four_digits():
    assert common._summary([]) == {"n": 0}
    out = common._summary([1e-6, 2e-6, 3e-6, 4e-6, 5e-6], scale=1e6)
    assert out == {"n": 5, "min": 1.0, "p10": 1.4, "median": 3.0, "mean": 3.0, "p90": 4.6, "max": 5.0}
    assert common._summary([1 / 3])["mean"] == 0.3333


def test_median_int_rounds_the_median():
    assert common._median_int([1, 2, 3, 10]) == 2  # median 2.5, rounded half to even
    assert common._median_int([1, 4]) == 2
    assert common._median_int([7]) == 7


# -- engine -------------------------------------------------------------------------------

def test_weighted_linear_fit_recovers_a_line_and_weighs_relative_error():
    sizes = [10, 100, 1000, 10_000, 100_000]
    a, b = engine._weighted_linear_fit(sizes, [5e-7 + 4e-10 * s for s in sizes])
    assert a == pytest.approx(5e-7, rel=1e-9) and b == pytest.approx(4e-10, rel=1e-9)
    # one large point off by 10 %: a relative fit barely moves the small-message cost
    ys = [5e-7 + 4e-10 * s for s in sizes]
    ys[-1] *= 1.1
    a, _b = engine._weighted_linear_fit(sizes, ys)
    assert a == pytest.approx(5e-7, rel=0.02)


# -- kernel -------------------------------------------------------------------------------

def test_accepted_table_takes_the_median_of_each_cell_and_keeps_the_runs():
    runs = [[5, 1, 3], [10, 12], [7], [1, 2, 3, 4], [9, 9, 9], [100, 300]]
    assert kernel._accepted_table(runs) == {
        "payload_bytes": [10, 100, 1000, 10000, 100000, 1000000],
        "accepted": [3, 11, 7, 2, 9, 200],
        "accepted_runs": runs,
    }


def test_ss_output_gives_each_side_its_queues_and_socket_memory():
    text = ("0      2304   127.0.0.1:41000  127.0.0.1:5555\n"
            "\t skmem:(r0,rb131072,t0,tb2626560,f0,w4352,o0,bl0,d0)\n"
            "9280   0      127.0.0.1:5555   127.0.0.1:41000\n"
            "\t skmem:(r18176,rb6291456,t0,tb2626560,f0,w0,o0,bl0,d0)\n")
    assert kernel._parse_ss(text, 5555) == [
        {"role": "sender", "recv_q": 0, "send_q": 2304, "r": 0, "rb": 131072, "t": 0, "tb": 2626560, "w": 4352},
        {"role": "receiver", "recv_q": 9280, "send_q": 0, "r": 18176, "rb": 6291456, "t": 0, "tb": 2626560, "w": 0},
    ]
    assert kernel._parse_ss("", 5555) == []


# -- wakeups ------------------------------------------------------------------------------

def _lateness(monkeypatch, by_wait: dict[float, list[float]]) -> None:
    monkeypatch.setattr(timing, "measure_lateness", lambda waits, repeats, spin_s=None: {w: by_wait[w] for w in waits})


def test_sleep_late_is_a_table_of_mid_point_quantiles_per_sleep_length(monkeypatch):
    by_wait = {wait: [wait * k * 1e-3 for k in range(1, 101)] for wait in wakeups.SLEEP_WAITS_S}
    _lateness(monkeypatch, by_wait)
    out = wakeups.measure_sleep_late(quick=True)
    assert [table["wait_s"] for table in out["tables"]] == list(wakeups.SLEEP_WAITS_S)
    values = out["tables"][1]["values_s"]  # the 1 ms sleeps: 1 us .. 100 us
    assert len(values) == common.EMPIRICAL_POINTS
    # point i stands for the mass around (i + 0.5) / 50: 1.5 us, 3.5 us, ... 99.5 us
    assert values[0] == pytest.approx(1.99e-6) and values[-1] == pytest.approx(99.01e-6)
    assert sorted(out["per_wait"]) == ["0.1ms", "100ms", "10ms", "1ms"]


def test_timer_jitter_pools_every_wait_length_with_the_same_weight(monkeypatch):
    # 1 ms waits measured far more often than 100 ms ones: each still gets a third of the pool
    by_wait = {0.001: [1e-6] * 600, 0.01: [2e-6] * 200, 0.1: [9e-6] * 40}
    _lateness(monkeypatch, by_wait)
    out = wakeups.measure_timer_jitter(quick=False)
    assert len(out["pooled_s"]) == 3 * 40
    assert statistics.mean(out["pooled_s"]) == pytest.approx(4e-6)
    assert len(out["values_s"]) == common.EMPIRICAL_POINTS and out["values_s"] == sorted(out["values_s"])


def test_send_wake_cost_is_the_median_send_call_per_gap_and_zero_where_nothing_was_measured(monkeypatch):
    calls = iter([{"real": {"send_call_s": 3e-6}}, {"real": {"send_call_s": 5e-6}}, {"real": {}}, {}])
    monkeypatch.setattr(harness, "run_real", lambda raw, seed, timeout_s: next(calls))
    out = wakeups.measure_send_wake_cost("tcp", quick=True)
    assert out["idle_s"] == [0.0001, 0.001]
    assert out["cost_s"] == [4e-6, 0.0]
    assert out["per_gap"]["1ms"] == {"median_s": None, "runs_s": []}


# -- latencies ----------------------------------------------------------------------------

def test_hop_latency_is_half_the_round_trip_less_both_calls_never_negative(monkeypatch):
    monkeypatch.setattr(latencies, "_connect_samples", lambda transport, count, endpoints: {"bind_side": [1e-4], "connect_side": [2e-4]})
    monkeypatch.setattr(latencies, "_subscribe_samples", lambda transport, count, endpoints: [3e-4])
    monkeypatch.setattr(latencies, "_rtt_samples", lambda transport, count, endpoints, gap=0.001: [40e-6, 100e-6] if gap else [20e-6])
    section, notes = latencies.measure_latencies("inproc", {"send_call_s": 2e-6, "recv_call_s": 1e-6}, True, lambda _m: None)
    assert section["hop_latency_s"] == {"dist": "empirical", "values_s": [17e-6, 47e-6]}
    assert section["connect_s"]["values_s"] == [1e-4] and section["subscribe_s"]["values_s"] == [3e-4]
    assert notes["subtracted_call_cost_us"] == pytest.approx(3.0)
    monkeypatch.setattr(latencies, "_rtt_samples", lambda transport, count, endpoints, gap=0.001: [4e-6])
    section, _notes = latencies.measure_latencies("inproc", {"send_call_s": 2e-6, "recv_call_s": 1e-6}, True, lambda _m: None)
    assert section["hop_latency_s"]["values_s"] == [0.0]


# -- scheduler ----------------------------------------------------------------------------

class _Hog:
    def kill(self) -> None:
        pass

    def wait(self, timeout: float) -> None:
        pass


def test_scheduler_section_from_its_measurements(monkeypatch):
    late = iter([50e-6, 3.05e-3])  # a 1 ms sleep's lateness: CPU idle, then taken by a busy loop
    monkeypatch.setattr(scheduler, "_spinners", lambda cpus, duration: [{"runs": [3e-3, 4e-3], "cpu_s": 0.9, "wall_s": 2.0},
                                                                        {"runs": [3.5e-3], "cpu_s": 1.0, "wall_s": 2.0}])
    monkeypatch.setattr(scheduler, "_round_trips", lambda cpu_self, cpu_other, count: 4e-6 if cpu_self == cpu_other else 9e-6)
    monkeypatch.setattr(scheduler, "_sleep_lateness", lambda cpu, count: next(late))
    monkeypatch.setattr(scheduler, "_start", lambda code, *args: _Hog())
    monkeypatch.setattr(scheduler, "_go", lambda child: None)
    monkeypatch.setattr(scheduler, "measure_wake_cpu", lambda quick: {"receiver_io_event_s": 20e-6, "sender_io_event_s": 30e-6,
                                                                       "receiver_app_wake_s": 9e-6})
    section, notes = scheduler.measure_scheduler(True, lambda _m: None)
    assert section["timeslice_s"] == 3.5e-3  # the median uninterrupted run
    assert section["context_switch_s"] == 2e-6  # half a round trip on one CPU
    assert section["wakeup_s"] == pytest.approx(3e-3)
    assert section["io_wake_s"] == 25e-6
    assert notes["two_spinners_share_each"] == 0.475
    assert notes["model_share_each"] == common._round(0.5 * 3.5e-3 / (3.5e-3 + 2e-6), 4)


# -- experiments --------------------------------------------------------------------------

def test_gap_analysis_counts_runs_gaps_and_the_lost_tail():
    out = experiments._gap_analysis([0, 1, 2, 5, 6, 9], count=12)
    assert (out["received"], out["lost"], out["in_order"], out["gaps"], out["first_run"], out["tail_lost"]) == (6, 6, True, 2, 3, 2)
    assert out["later_run_lengths_top"] == [[2, 1], [1, 1]]
    assert out["gap_sizes_summary"]["n"] == 2 and out["gap_sizes_summary"]["max"] == 2
    assert experiments._gap_analysis([], 5) == {"received": 0}
    assert experiments._top_counts([3, 1, 3, 2, 3, 1], top=2) == [[3, 3], [1, 2]]


# -- app_loop and the profile's TOML --------------------------------------------------------

def test_harness_program_toml_holds_the_loop_costs_rounded():
    text = app_loop.harness_program_toml({"send_loop_s": 1.40012345678e-6, "recv_loop_s": 1.47e-6, "method": "stubbed"})
    assert text.startswith("# The validation harness's own loop") and "# stubbed.\n" in text
    data = tomllib.loads(text)
    assert data["loop"] == {"send_cpu_s": 1.40012e-6, "recv_cpu_s": 1.47e-6}
    assert set(data["machine"]) == {"measured_on", "machine", "python", "pyzmq"}


def test_profile_header_says_how_to_measure_again_and_lists_the_truncated_cells():
    assert cli._toml_header(False, []) == (
        "# zsim calibration profile, measured with real pyzmq over loopback by\n"
        "#   python -m validation.calibrate --out <file>\n"
        "# Times in seconds, sizes in bytes. Method and raw numbers: validation/calibration-notes.md\n\n")
    header = cli._toml_header(True, [["tcp", "hwm_1_1", 10, 90000]])
    assert "--out <file> --quick\n" in header
    assert header.endswith("# Kernel runs stopped by the time cap before the first Again (counts are lower bounds):\n"
                           "#   tcp hwm_1_1 payload 10: 90000\n\n")
    text = calibrate.to_toml({"profile": {"name": "t"}, "api": {"send_call_s": 1e-6}}, header=header)
    assert text.startswith(header) and tomllib.loads(text)["api"] == {"send_call_s": 1e-6}


def test_every_calibrate_function_the_docs_and_profiles_name_exists():
    named = set()
    for path in [*ROOT.glob("docs/*.md"), *ROOT.glob("validation/*.md"), *ROOT.glob("zsim/profiles/*.toml"), ROOT / "README.md"]:
        named |= set(re.findall(r"validation\.calibrate\.(\w+)", path.read_text()))
    assert named  # the docs do name some
    assert not [name for name in sorted(named) if not hasattr(calibrate, name)]
