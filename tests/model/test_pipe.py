"""Pipe (libzmq ``pipe_t`` over ``ypipe_t``) on its own: HWM/LWM accounting, the
commands it posts to the ends, conflation, the delimiter and depth statistics.

Exact (time, event) traces: each step of libzmq's protocol is a line of the trace.
"""

from __future__ import annotations

import pytest

from zsim.model import kernel
from zsim.model.pipe import Pipe, PipeEndpoint


class Clock:
    """What a pipe reads from its environment: the time, in ``clock.now``."""

    def __init__(self) -> None:
        self.clock = kernel.Clock()

    @property
    def now(self) -> float:
        return self.clock.now

    @now.setter
    def now(self, value: float) -> None:
        self.clock.now = value


class End(PipeEndpoint):
    """Records the commands a pipe posts to the object at one of its ends."""

    def __init__(self, clock: Clock, trace: list) -> None:
        self.clock, self.trace = clock, trace

    def post_activate_write(self, pipe, read_count):
        self.trace.append((self.clock.now, "activate_write", read_count))

    def post_activate_read(self, pipe):
        self.trace.append((self.clock.now, "activate_read"))


def make(hwm, conflate=False):
    clock, trace = Clock(), []
    pipe = Pipe(clock, "a->b", hwm, writer=End(clock, trace), reader=End(clock, trace), conflate=conflate)  # type: ignore[arg-type]
    return pipe, clock, trace


def msg(i):
    return (i, 0.0, 1, 3, "", None, 0)


def write_while_room(pipe):
    n = 0
    while pipe.check_write():
        pipe.write(msg(n))
        n += 1
    return n


def test_the_writer_stops_at_hwm_and_resumes_on_the_lwm_report():
    pipe, clock, trace = make(hwm=4)
    assert pipe.lwm == 2  # (hwm + 1) // 2
    assert write_while_room(pipe) == 4 and pipe.out_active is False
    clock.now = 1.0
    assert pipe.read()[0] == 0 and trace == []  # one read: no report yet
    assert pipe.read()[0] == 1
    assert trace == [(1.0, "activate_write", 2)]  # every lwm complete reads
    # the writer's view lags: until it applies the command the pipe stays full for it
    assert not pipe.check_write()
    assert pipe.apply_activate_write(2) is True
    assert write_while_room(pipe) == 2  # written 6 - peers_read 2 = hwm
    assert pipe.depth == 4


def test_a_stale_report_does_not_move_the_writers_view_back():
    pipe, _clock, _trace = make(hwm=4)
    write_while_room(pipe)
    for _ in range(4):
        pipe.read()
    assert pipe.apply_activate_write(4) is True
    assert pipe.apply_activate_write(2) is False and pipe.peers_read == 4


def test_hwm_zero_never_blocks():
    pipe, _clock, trace = make(hwm=0)
    for i in range(10_000):
        assert pipe.check_write()
        pipe.write(msg(i))
    assert pipe.depth == 10_000 and trace == []
    for _ in range(10_000):
        pipe.read()
    assert trace == []  # lwm 0: no reports


def test_an_empty_read_puts_the_reader_to_sleep_and_one_write_wakes_it():
    pipe, clock, trace = make(hwm=10)
    assert pipe.read() is None and pipe.reader_asleep
    clock.now = 0.5
    pipe.write(msg(0))
    pipe.write(msg(1))  # the reader is awake already: no second command
    assert trace == [(0.5, "activate_read")]


def test_conflate_keeps_the_newest_and_hands_over_the_displaced():
    pipe, _clock, _trace = make(hwm=5, conflate=True)
    displaced = []
    pipe.on_displace = displaced.append
    assert pipe.hwm == 0
    for i in range(3):
        pipe.write(msg(i))
    assert [m[0] for m in displaced] == [0, 1]
    assert pipe.read()[0] == 2 and pipe.read() is None


def test_the_delimiter_refuses_writes_and_wakes_a_sleeping_reader():
    pipe, clock, trace = make(hwm=10)
    pipe.write(msg(0))
    assert pipe.read()[0] == 0 and pipe.read() is None  # asleep
    clock.now = 2.0
    pipe.mark_delimited()
    assert not pipe.check_write()
    assert trace[-1] == (2.0, "activate_read")


def test_depth_statistics_are_time_weighted():
    pipe, clock, _trace = make(hwm=0)
    pipe.write(msg(0))  # depth 1 from t = 0
    clock.now = 1.0
    pipe.write(msg(1))  # depth 2 from t = 1
    clock.now = 3.0
    pipe.read()  # depth 1 from t = 3
    assert pipe.max_depth == 2
    assert pipe.mean_depth(4.0) == pytest.approx((1 * 1 + 2 * 2 + 1 * 1) / 4)
    assert [m[0] for m in pipe.drain()] == [1] and pipe.depth == 0


def test_the_level_it_held_is_known_by_time_and_its_payload_in_bytes():
    # depth 1 for 1 s, 2 for 2 s, 1 for 1 s, then 0 for 6 s: half the time empty, 90 % at most 1
    pipe, clock, _trace = make(hwm=0)
    pipe.write((0, 0.0, 100, 103, "", None, 0))
    clock.now = 1.0
    pipe.write((1, 0.0, 300, 303, "", None, 0))
    clock.now = 3.0
    pipe.read()
    clock.now = 4.0
    pipe.read()
    assert (pipe.level_percentile(10.0, 0.5), pipe.level_percentile(10.0, 0.6)) == (0, 0)
    assert (pipe.level_percentile(10.0, 0.61), pipe.level_percentile(10.0, 0.8), pipe.level_percentile(10.0, 0.81)) == (1, 1, 2)
    assert pipe.level_percentile(10.0, 1.0) == 2 == pipe.max_depth
    # payload: 100 B for 1 s, 400 B for 2 s, 300 B for 1 s
    assert pipe.max_bytes == 400 and pipe.bytes == 0
    assert pipe.mean_bytes(10.0) == pytest.approx((100 + 800 + 300) / 10)


def test_deep_levels_are_known_to_an_eighth_of_an_octave_and_never_understated():
    from zsim.model.pipe import bucket_floor, level_bucket

    assert [level_bucket(d) for d in (0, 63, 64, 71, 72, 127, 128, 143, 144)] == [0, 63, 64, 64, 65, 71, 72, 72, 73]
    assert all(bucket_floor(level_bucket(d)) <= d < bucket_floor(level_bucket(d) + 1) for d in range(1, 5000))
    pipe, clock, _trace = make(hwm=0)
    for i in range(1000):  # 1,000 for 1 s, then 100 for 9 s
        pipe.write(msg(i))
    clock.now = 1.0
    for _ in range(900):
        pipe.read()
    assert pipe.level_percentile(10.0, 0.5) == bucket_floor(level_bucket(100) + 1) - 1 >= 100  # 100-103: 103
    assert pipe.level_percentile(10.0, 0.95) == 1000 == pipe.max_depth  # the bucket's top, capped at the deepest


def test_a_pipe_made_late_counts_the_time_before_as_empty():
    # made at 9 s of a 10 s run, 100 messages for its last second: held nothing for 90 % of the
    # run, as its mean (over the run) says
    clock = Clock()
    clock.now = 9.0
    trace: list = []
    pipe = Pipe(clock, "late", 0, writer=End(clock, trace), reader=End(clock, trace))  # type: ignore[arg-type]
    for i in range(100):
        pipe.write(msg(i))
    assert pipe.mean_depth(10.0) == pytest.approx(10.0)
    assert (pipe.level_percentile(10.0, 0.9), pipe.level_percentile(10.0, 0.95)) == (0, 100)
