"""The local engine's worker processes (issue 8): a killed worker loses its batch, not the
sweep; a batch that runs far too long is given up and its worker killed; workers die with
the sweep and never keep its folder locked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from test_sweep_support import rows, sweep_dict, write_sweep_files

from zsim.sweep import local, run_sweep, store

ZSIM = [sys.executable, "-m", "zsim"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("reference")
    run_sweep(sweep_dict(), out, engine="serial", stream=None)
    return rows(out).drop(columns=["zsim_code"])


@pytest.fixture
def forked(monkeypatch):
    """Workers forked from this process, so they see this test's monkeypatching."""
    monkeypatch.setattr(local.ProcessEngine, "start_method", "fork", raising=False)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.timeout(120)
def test_a_killed_worker_loses_its_batch_not_the_sweep(tmp_path, reference, forked, monkeypatch):
    real = local.run_batch
    victim = sorted(reference["point"])[0]

    def oom_killed(payload, tasks):
        if tasks[0][0] == victim and tasks[0][1] == 0:
            os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
        return real(payload, tasks)

    monkeypatch.setattr(local, "run_batch", oom_killed)
    outcome = run_sweep(sweep_dict(), tmp_path, engine="local", workers=2, batch_size=3, stream=None)
    assert len(outcome.lost_batches) == 1
    assert "was killed by SIGKILL" in outcome.lost_batches[0]
    assert outcome.ran == 15 and outcome.not_done == 3 and not outcome.complete
    monkeypatch.setattr(local, "run_batch", real)
    again = run_sweep(sweep_dict(), tmp_path, engine="local", workers=2, stream=None)
    assert again.ran == 3 and again.complete
    pd.testing.assert_frame_equal(rows(tmp_path).drop(columns=["zsim_code"]), reference)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_batch_far_beyond_its_time_is_given_up_and_its_worker_killed(tmp_path, reference, forked, monkeypatch):
    real = local.run_batch
    victim = sorted(reference["point"])[-1]

    def stuck(payload, tasks):
        if tasks[0][0] == victim and tasks[0][1] == 1:
            signal.signal(signal.SIGALRM, signal.SIG_IGN)  # nothing inside the run can stop it
            while True:
                time.sleep(1)
        return real(payload, tasks)

    monkeypatch.setattr(local, "run_batch", stuck)
    monkeypatch.setattr(local, "BATCH_GRACE_S", 1.0)
    # one run per batch: a batch may take 1 x 2 s x 2 + 1 s = 5 s; a run takes ~50 ms
    outcome = run_sweep(sweep_dict(run_timeout_s=2), tmp_path, engine="local", workers=2, batch_size=1, stream=None)
    assert len(outcome.lost_batches) == 1
    text = outcome.lost_batches[0]
    assert "ran a batch of 1 runs for more than 5 s" in text and "it was killed" in text
    pid = int(text.split("worker pid ", 1)[1].split()[0])
    assert not _alive(pid)
    assert outcome.ran == 17 and outcome.failed == 0 and outcome.not_done == 1
    monkeypatch.setattr(local, "run_batch", real)
    assert run_sweep(sweep_dict(run_timeout_s=2), tmp_path, engine="local", workers=2, stream=None).complete
    pd.testing.assert_frame_equal(rows(tmp_path).drop(columns=["zsim_code"]), reference)


def test_a_worker_does_not_inherit_the_lock(tmp_path):
    directory = tmp_path / "sweep=x"
    with store.locked(directory):
        pid = os.fork()
        if pid == 0:  # the child: is the lock file among its open files?
            held = any(os.path.realpath(f"/proc/self/fd/{fd}") == str((directory / store.LOCK).resolve())
                       for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))
            os._exit(1 if held else 0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "a forked child holds the sweep's lock"
        with pytest.raises(store.EnvironmentFault, match="another sweep"):  # and the parent still holds it
            with store.locked(directory):
                pass


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.timeout(300)
def test_workers_die_with_a_killed_sweep_and_free_its_folder(tmp_path):
    sweep_file = write_sweep_files(tmp_path / "in")
    # runs of 10^5 simulated seconds: minutes each, so a worker that outlived its sweep
    # would still be busy (and holding the folder) long after the sweep died
    sweep_file.write_text(sweep_file.read_text() + '\n[set]\n"scenario.until_s" = 100000.0\n')
    out = tmp_path / "out"
    command = ZSIM + ["sweep", str(sweep_file), "--engine", "local", "--workers", "2", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(workers) < 2:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            workers = _children(process.pid)
            time.sleep(0.05)
        assert len(workers) == 2
        time.sleep(1.0)  # let them get into their first runs
        os.kill(process.pid, signal.SIGKILL)  # the sweep alone, not its process group
        process.wait(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in workers), "workers outlived their sweep"
        with store.locked(out / "sweep=small"):  # nobody holds the folder any more
            pass
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_sweep_killed_with_its_workers_resumes(tmp_path):
    sweep_file = write_sweep_files(tmp_path / "in", replications=50)  # 300 runs: busy when killed
    out = tmp_path / "out"
    command = ZSIM + ["sweep", str(sweep_file), "--engine", "local", "--workers", "2", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(out.glob("sweep=*/point=*/part-*.parquet")):
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr  # not locked out by an orphan
    assert "already in" in done.stderr
    assert len(rows(out)) == 300


def test_the_engine_refuses_workers_below_one():
    with pytest.raises(local.ScenarioError, match="--workers: must be a whole number >= 1"):
        local.ProcessEngine({}, workers=0)
