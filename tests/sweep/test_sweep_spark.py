"""Sweeps on Spark: local mode, and a real standalone cluster (a master and two workers on
localhost, started with pyspark's own ``spark-class``). Rows must be identical to the
serial engine's, whatever the partitioning, the number of executors or the cluster."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from test_sweep_support import rows, sweep_dict, write_sweep_files

from zsim.sweep import run_sweep

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="Spark needs Java"),
]
pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def serial_rows(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("serial")
    run_sweep(sweep_dict(), out, engine="serial", stream=None)
    return rows(out)


@pytest.fixture(scope="module")
def local_spark_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("spark-local")
    outcome = run_sweep(sweep_dict(), out, engine="spark", master="local[2]", stream=None)
    assert outcome.complete and outcome.ran == 18 and outcome.failed == 0
    assert "local[2]" in outcome.engine
    return out


@pytest.mark.timeout(300)
def test_local_mode_rows_equal_serial_rows(local_spark_out, serial_rows):
    pd.testing.assert_frame_equal(rows(local_spark_out), serial_rows)


@pytest.mark.timeout(300)
def test_partitioning_and_core_count_do_not_change_rows(tmp_path, serial_rows):
    outcome = run_sweep(sweep_dict(), tmp_path, engine="spark", master="local[1]", batch_size=1, stream=None)
    assert outcome.complete
    pd.testing.assert_frame_equal(rows(tmp_path), serial_rows)


@pytest.mark.timeout(300)
def test_resume_on_spark(tmp_path, serial_rows):
    first = run_sweep(sweep_dict(), tmp_path, engine="spark", master="local[2]", limit=5, stream=None)
    assert first.ran == 5 and not first.complete
    second = run_sweep(sweep_dict(), tmp_path, engine="spark", master="local[2]", stream=None)
    assert second.already_done == 5 and second.ran == 13 and second.complete
    pd.testing.assert_frame_equal(rows(tmp_path), serial_rows)


@pytest.mark.timeout(300)
def test_cli_default_engine_is_local_spark(tmp_path, serial_rows):
    sweep_file = write_sweep_files(tmp_path / "in")
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "zsim", "sweep", str(sweep_file), "--out", str(out), "--report"],
                            capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "spark (local[*]" in result.stdout
    assert "points 6/6" in result.stderr
    pd.testing.assert_frame_equal(rows(out), serial_rows)
    assert (out / "report" / "small" / "summary.md").exists()


# -- a standalone cluster on localhost ---------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
            state = json.loads(response.read())
    except OSError:
        return -1
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


class StandaloneCluster:
    """``spark-class ...Master`` and two ``...Worker`` processes, each in its own process
    group (so stopping a worker also stops the executors it launched)."""

    def __init__(self, directory: Path, workers: int = 2) -> None:
        self.directory = directory
        self.n_workers = workers
        self.processes: list[subprocess.Popen] = []
        self.spark_home = Path(pyspark.__file__).parent
        self.port = _free_port()
        self.ui_port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, args: list[str]) -> None:
        env = dict(os.environ, SPARK_HOME=str(self.spark_home), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
                   SPARK_LOG_DIR=str(self.directory / "logs"), PYSPARK_PYTHON=sys.executable)
        log = open(self.directory / f"{name}.log", "wb")
        self.processes.append(subprocess.Popen([str(self.spark_home / "bin" / "spark-class"), *args], env=env, stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def start(self, timeout: float = 90) -> None:
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                               "--webui-port", str(self.ui_port)])
        for index in range(self.n_workers):
            work = self.directory / f"worker{index}"
            work.mkdir(parents=True, exist_ok=True)
            self._start(f"worker{index}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", str(_free_port()),
                                           "--webui-port", str(_free_port()), "--cores", "1", "--memory", "1g",
                                           "--work-dir", str(work), self.url])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _alive_workers(self.ui_port) == self.n_workers:
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({process.args[1]}): see {self.directory}")
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not come up in {timeout} s; logs in {self.directory}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()


@pytest.fixture
def cluster(tmp_path):
    cluster = StandaloneCluster(tmp_path / "cluster")
    cluster.directory.mkdir(parents=True)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.timeout(300)
def test_standalone_cluster_rows_equal_local_mode_rows(cluster, local_spark_out, tmp_path):
    out = tmp_path / "on-cluster"
    outcome = run_sweep(sweep_dict(), out, engine="spark", master=cluster.url, conf={"spark.executor.memory": "512m"}, stream=None)
    assert outcome.complete and outcome.ran == 18 and outcome.failed == 0, outcome
    assert cluster.url in outcome.engine
    pd.testing.assert_frame_equal(rows(out), rows(local_spark_out))
    # The work really ran on the cluster's executors, not in the driver.
    app_dirs = list((cluster.directory).glob("worker*/app-*"))
    assert app_dirs, "no executor ran on the workers"
