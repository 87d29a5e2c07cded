"""Running sweeps without Spark: determinism across engines and batchings, resume after an
interruption or a crash, failed runs recorded, reports, the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_sweep_support import rows, sweep_dict, write_sweep_files

from zsim.errors import ZsimError
from zsim.sweep import run_sweep, store
from zsim.sweep.plan import expand, from_dict

ZSIM = [sys.executable, "-m", "zsim"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pd.DataFrame:
    """The small sweep, serially, in one go."""
    out = tmp_path_factory.mktemp("reference")
    outcome = run_sweep(sweep_dict(), out, engine="serial", stream=None)
    assert outcome.complete and outcome.ran == 18 and outcome.failed == 0
    return rows(out)


def test_rows_have_axes_seed_and_metrics(reference):
    assert len(reference) == 18
    assert reference[["point", "replication"]].duplicated().sum() == 0
    for column in ("sweep", "point", "replication", "seed", "ok", "socket.publisher.options.sndhwm", "send.publisher.size_bytes",
                   "drop_fraction", "delivered_rate_per_s", "latency_p50_s", "latency_p99_s", "max_pipe_depth", "scenario_digest"):
        assert column in reference.columns, column
    assert reference["ok"].all()
    assert set(reference["socket.publisher.options.sndhwm"]) == {2, 20, 200}


def test_results_are_partitioned_by_sweep_and_point(tmp_path):
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    directory = tmp_path / "sweep=small"
    assert (directory / "_sweep.json").exists()
    points = sorted(p.name for p in directory.glob("point=*"))
    assert len(points) == 6
    import pyarrow.dataset as ds

    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 18 and {"sweep", "point"} <= set(table.column_names)


@pytest.mark.parametrize("batch_size", [1, 5])
def test_batching_does_not_change_rows(tmp_path, reference, batch_size):
    run_sweep(sweep_dict(), tmp_path, engine="serial", batch_size=batch_size, stream=None)
    pd.testing.assert_frame_equal(rows(tmp_path), reference)


def test_process_pool_gives_the_same_rows(tmp_path, reference):
    outcome = run_sweep(sweep_dict(), tmp_path, engine="local", workers=2, stream=None)
    assert outcome.complete
    pd.testing.assert_frame_equal(rows(tmp_path), reference)


def test_order_of_points_does_not_change_rows(tmp_path, reference):
    raw = sweep_dict()
    raw["axes"] = {"send.publisher.size_bytes": [65536, 100], "socket.publisher.options.sndhwm": [200, 20, 2]}
    run_sweep(raw, tmp_path, engine="serial", stream=None)
    got = rows(tmp_path)[reference.columns]
    pd.testing.assert_frame_equal(got, reference)


def test_resume_skips_finished_rows_and_duplicates_nothing(tmp_path, reference):
    first = run_sweep(sweep_dict(), tmp_path, engine="serial", limit=7, stream=None)
    assert first.ran == 7 and first.not_done == 11 and not first.complete
    assert len(rows(tmp_path)) == 7
    second = run_sweep(sweep_dict(), tmp_path, engine="local", workers=2, stream=None)
    assert second.already_done == 7 and second.ran == 11 and second.complete
    pd.testing.assert_frame_equal(rows(tmp_path), reference)
    third = run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    assert third.ran == 0 and third.already_done == 18
    pd.testing.assert_frame_equal(rows(tmp_path), reference)


def test_more_replications_and_values_extend_a_sweep(tmp_path, reference):
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    bigger = sweep_dict(replications=4)
    bigger["axes"]["send.publisher.size_bytes"] = [100, 65536, 4096]
    outcome = run_sweep(bigger, tmp_path, engine="serial", stream=None)
    assert outcome.already_done == 18 and outcome.ran == 9 * 4 - 18
    got = rows(tmp_path)
    old = got.merge(reference[["point", "replication"]], on=["point", "replication"])
    pd.testing.assert_frame_equal(old.reset_index(drop=True), reference.reset_index(drop=True))


def test_rows_of_an_older_definition_are_ignored(tmp_path):
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    changed = sweep_dict()
    changed["base"]["scenario"]["until_s"] = 0.3
    changed["axes"]["send.publisher.size_bytes"] = [100]
    outcome = run_sweep(changed, tmp_path, engine="serial", stream=None)
    assert outcome.already_done == 0 and outcome.ran == 9
    assert len(rows(tmp_path)) == 9  # only the current plan's rows
    assert len(store.read_frame(tmp_path / "sweep=small", only_planned=False)) == 27


def test_failed_runs_are_recorded_and_can_be_retried(tmp_path, reference):
    raw = sweep_dict(run_timeout_s=1e-6)
    outcome = run_sweep(raw, tmp_path, engine="serial", stream=None)
    assert outcome.ran == 18 and outcome.failed == 18 and outcome.complete
    failed = rows(tmp_path)
    assert not failed["ok"].any()
    assert failed["error"].str.contains("RunTimeout").all()
    assert failed["drop_fraction"].isna().all() if "drop_fraction" in failed else True
    again = run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    assert again.ran == 0  # failed rows are results too ...
    retried = run_sweep(sweep_dict(), tmp_path, engine="serial", retry_failed=True, stream=None)
    assert retried.ran == 18 and retried.failed == 0  # ... until asked to retry them
    pd.testing.assert_frame_equal(rows(tmp_path), reference)


def test_a_batch_that_raises_is_lost_not_fatal(tmp_path, monkeypatch):
    from zsim.sweep import local

    calls = {"n": 0}
    real = local.run_batch

    def flaky(payload, tasks):
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("pretend the worker died")
        return real(payload, tasks)

    monkeypatch.setattr(local, "run_batch", flaky)
    outcome = run_sweep(sweep_dict(), tmp_path, engine="serial", batch_size=3, stream=None)
    assert len(outcome.lost_batches) == 1 and outcome.not_done == 3 and outcome.ran == 15
    monkeypatch.setattr(local, "run_batch", real)
    outcome = run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    assert outcome.ran == 3 and outcome.complete


def test_stale_temporary_files_are_removed(tmp_path, reference):
    run_sweep(sweep_dict(), tmp_path, engine="serial", limit=3, stream=None)
    point_dir = next((tmp_path / "sweep=small").glob("point=*"))
    (point_dir / ".tmp-999-part-dead.parquet").write_bytes(b"half a file")
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)
    assert not list(point_dir.glob(".tmp-*"))
    pd.testing.assert_frame_equal(rows(tmp_path), reference)


def test_one_writer_at_a_time(tmp_path):
    directory = tmp_path / "sweep=small"
    with store.locked(directory):
        with pytest.raises(ZsimError, match="another sweep"):
            run_sweep(sweep_dict(), tmp_path, engine="serial", stream=None)


def test_progress_line_shows_points_rate_and_eta(tmp_path):
    import io

    stream = io.StringIO()
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=stream, progress_interval_s=0)
    text = stream.getvalue()
    assert "6 points x 3 replications = 18 runs" in text
    last = [line for line in text.splitlines() if "points " in line and "runs/s" in line][-1]
    assert "points 6/6" in last and "runs 18/18" in last and "ETA 0s" in last


def _wait_for_files(directory: Path, count: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list(directory.glob("sweep=*/point=*/part-*.parquet"))) >= count:
            return
        if process.poll() is not None:
            pytest.fail(f"sweep ended early: {process.returncode}")
        time.sleep(0.05)
    pytest.fail("no results appeared")


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("how", ["interrupt", "kill"])
def test_resume_after_ctrl_c_or_crash_of_the_command(tmp_path, how):
    # enough runs (6 points x 50) that the command is still busy when the signal comes:
    # at ~70 runs/s on 2 cores, 72 runs were sometimes all done before SIGINT arrived
    replications = 50
    total = 6 * replications
    sweep_file = write_sweep_files(tmp_path / "in", replications=replications)
    out = tmp_path / "out"
    reference_out = tmp_path / "reference"
    run_sweep(sweep_file, reference_out, engine="serial", stream=None)
    command = ZSIM + ["sweep", str(sweep_file), "--engine", "local", "--workers", "2", "--out", str(out)]
    # SIGINT back to its default in the child: a shell runs background jobs (CI under
    # nohup/&) with SIGINT ignored, the child would inherit that and, rightly, ignore Ctrl-C
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for_files(out, 2, process)
        if how == "interrupt":
            os.kill(process.pid, signal.SIGINT)  # Ctrl-C
            _, err = process.communicate(timeout=60)
            assert process.returncode == 130, err.decode()
        else:
            os.killpg(process.pid, signal.SIGKILL)  # the whole command dies at once
            process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    partial = len(rows(out))
    assert 0 < partial < total
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{partial} already in" in done.stderr
    pd.testing.assert_frame_equal(rows(out, "small"), rows(reference_out, "small"))


def test_cli_bad_axis_is_one_line_and_exit_2(tmp_path):
    sweep_file = write_sweep_files(tmp_path)
    sweep_file.write_text(sweep_file.read_text().replace("socket.publisher.options.sndhwm = [2, 20, 200]",
                                                         "socket.publisher.options.sndhwm = [2, -20, 200]"))
    result = subprocess.run(ZSIM + ["sweep", str(sweep_file), "--engine", "serial", "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("zsim: axes.socket.publisher.options.sndhwm = -20: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


@pytest.mark.slow
def test_cli_sweep_then_report(tmp_path):
    sweep_file = write_sweep_files(tmp_path / "in", replications=2)
    out = tmp_path / "out"
    # --jobs: the parallelism flag of sweep and compare (--workers, its old name, is the alias the other tests use)
    result = subprocess.run(ZSIM + ["sweep", str(sweep_file), "--engine", "local", "--jobs", "2", "--out", str(out), "--report"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "12 runs done now" in result.stdout
    report_dir = out / "report" / "small"
    assert (report_dir / "summary.md").exists() and (report_dir / "points.csv").exists()
    assert len(list(report_dir.glob("*.png"))) >= 4
    result = subprocess.run(ZSIM + ["report", str(out), "--out", str(tmp_path / "r2")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "r2" / "small" / "summary.md").exists()


def test_master_needs_the_spark_engine(tmp_path):
    with pytest.raises(ZsimError, match="--master is for --engine spark"):
        run_sweep(sweep_dict(), tmp_path, engine="local", master="local[2]", stream=None)


@pytest.mark.spark  # imports pyspark and enters the Spark engine (it stops at the Java check)
def test_missing_java_is_a_clear_error(monkeypatch, tmp_path):
    from zsim.sweep import spark

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(ZsimError, match=r"needs Java 17 or 21 .*no-jdk.*--engine local"):
        spark.check_environment()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ZsimError, match="no 'java' on PATH"):
        spark.check_environment()
    with pytest.raises(ZsimError, match="needs Java"):
        run_sweep(sweep_dict(), tmp_path / "out", engine="spark", stream=None)


def test_import_zsim_and_plan_without_heavy_dependencies():
    code = (
        "import sys, zsim, zsim.sweep, zsim.sweep.plan, zsim.sweep.cli, zsim.cli\n"
        "zsim.sweep.make_plan\n"
        "heavy = [m for m in ('pyspark', 'matplotlib', 'pandas', 'pyarrow') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_expand_is_pure(reference):
    plan = expand(from_dict(sweep_dict()))
    assert {t.seed for t in plan.tasks()} == set(reference["seed"])
    assert set(reference["point"]) == {p.id for p in plan.points}


def test_rows_from_other_zsim_code_are_flagged(tmp_path, monkeypatch):
    import io

    from zsim.sweep import worker

    monkeypatch.setattr(worker, "_CODE", "0ld0ld0ld0ld")
    run_sweep(sweep_dict(), tmp_path, engine="serial", limit=4, stream=None)
    assert set(rows(tmp_path)["zsim_code"]) == {"0ld0ld0ld0ld"}
    monkeypatch.setattr(worker, "_CODE", None)
    stream = io.StringIO()
    run_sweep(sweep_dict(), tmp_path, engine="serial", stream=stream)
    assert "warning: 4 rows" in stream.getvalue() and "other zsim code (0ld0ld0ld0ld" in stream.getvalue()
    from zsim.sweep import report

    written = report.make_report(tmp_path, tmp_path / "report", figures=False)
    summary = next(p for p in written if p.name == "summary.md").read_text()
    assert "rows from different zsim code" in summary
