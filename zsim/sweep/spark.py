"""The Spark engine: batches of sweep runs as Spark tasks (the only module importing pyspark).

Local mode (``local[*]``, the default) needs nothing but Java and ``pip install
'zsim[spark]'``; the same code runs on a standalone, YARN or Kubernetes cluster given its
master URL (see docs/sweeps.md).

How work is shipped. The plan's payload (base scenario and every point's overrides) is
broadcast once. Each batch of runs is one Spark job of one task (``parallelize(batch, 1)
.mapPartitions(run_batch).collect()``), and up to two jobs per executor core are in
flight, submitted from driver threads. One job per batch, rather than one job for the
whole sweep, lets the driver write each batch's rows as soon as it finishes: an
interrupted sweep keeps everything that finished, and progress is real. A batch holds many
runs (per-task overhead in PySpark is tens of milliseconds) and batches shrink towards
the end so no core waits long for a straggler (``plan.batches``).

Failures. A model fault inside a run becomes a row with its error (``worker.run_task``);
a task that fails in Spark (an executor lost, a worker killed) leaves its runs unwritten,
and the next run of the same sweep does them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from ..errors import EnvironmentFault
from .local import TICK_S, Completion, task_tuples
from .plan import Task

DEFAULT_MASTER = "local[*]"
#: Seconds ``java -version`` may take before Java is declared not to start.
JAVA_CHECK_TIMEOUT_S = 60.0
JVM_LOCAL_OPTIONS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


def java_executable() -> str | None:
    """The ``java`` Spark will use: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


def check_environment() -> None:
    """Fail with one line (``EnvironmentFault``, exit 1) if pyspark or Java is missing."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise EnvironmentFault("pyspark", "the Spark engine needs pyspark: pip install 'zsim[spark]' "
                                          "(or run with --engine local)") from None
    if java_executable() is None:
        where = f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if os.environ.get("JAVA_HOME") else "no 'java' on PATH"
        raise EnvironmentFault(
            "java",
            f"the Spark engine needs Java 17 or 21 ({where}). Install a JRE "
            "(Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless; macOS: brew install openjdk@17) "
            "or run the sweep without Spark: --engine local",
        )


def check_java(java: str) -> None:
    """``java -version`` must succeed: a JVM that does not start (a broken JAVA_HOME, too
    little memory, a wrong architecture) is one line now, not Spark's stack traces later."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=JAVA_CHECK_TIMEOUT_S,
                                stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        raise EnvironmentFault("java", f"{java} -version did not finish in {JAVA_CHECK_TIMEOUT_S:g} s; "
                                       "or run the sweep without Spark: --engine local") from None
    except OSError as exc:
        raise EnvironmentFault("java", f"{java} does not start: {exc.strerror or exc}; "
                                       "or run the sweep without Spark: --engine local") from None
    if result.returncode != 0:
        said = [line.strip() for line in (result.stderr + result.stdout).splitlines() if line.strip()]
        reason = said[0][:200] if said else f"exit status {result.returncode}"
        raise EnvironmentFault("java", f"{java} does not start ({reason}); "
                                       "or run the sweep without Spark: --engine local")


def preflight(master: str | None) -> None:
    """Before any work: pyspark, and a Java that starts (unless a running SparkContext
    will be used, as in a notebook)."""
    check_environment()
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None and master is None:
        return
    java = java_executable()
    assert java is not None
    check_java(java)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def _is_loopback_master(master: str) -> bool:
    if master.startswith("local"):
        return True
    if master.startswith("spark://"):
        hosts = master[len("spark://") :].split(",")
        return all(h.split(":")[0] in ("127.0.0.1", "localhost") for h in hosts)
    return False


def _partition(broadcast: Any, tasks: Any) -> list[dict[str, Any]]:
    from zsim.sweep.worker import run_batch

    return run_batch(broadcast.value, tasks)


class SparkEngine:
    """Runs batches as Spark jobs; see the module docstring."""

    name = "spark"

    def __init__(self, payload: Mapping[str, Any], master: str | None = None, conf: Mapping[str, str] | None = None,
                 app_name: str = "zsim sweep") -> None:
        self.payload = payload
        self.master = master
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.sc: Any = None
        self.owned = False
        self.broadcast: Any = None
        self.threads: ThreadPoolExecutor | None = None
        self.slots = 1
        self._log_config: str | None = None

    def describe(self) -> str:
        return f"spark ({self.sc.master}, {self.slots} cores)" if self.sc is not None else "spark"

    def _spark_conf(self, master: str) -> Any:
        from pyspark import SparkConf

        conf = SparkConf()
        conf.setMaster(master).setAppName(self.app_name)
        defaults = {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": "1g",
            "spark.python.worker.reuse": "true",
            # Results come back to the driver; a 10,000-run batch set is a few MB.
            "spark.driver.maxResultSize": "1g",
        }
        if _is_loopback_master(master):
            defaults["spark.driver.host"] = "127.0.0.1"
            defaults["spark.driver.bindAddress"] = "127.0.0.1"
        handle, path = tempfile.mkstemp(prefix="zsim-log4j2-", suffix=".properties")
        with os.fdopen(handle, "w") as out:
            out.write(_LOG4J2)
        self._log_config = path
        java_options = [f"-Dlog4j2.configurationFile=file:{path}"]
        if master.startswith("local"):
            # In local mode the driver JVM is also the executor and shares the cores with
            # the Python workers: the C1 compiler only and the serial collector cut the
            # JVM's own CPU use during a sweep by more than half (measured: ~6 s -> ~2.5 s
            # per 400 runs on 2 cores), time the simulations get instead.
            java_options += JVM_LOCAL_OPTIONS
        if self.conf.get("spark.driver.extraJavaOptions"):
            java_options.append(self.conf["spark.driver.extraJavaOptions"])  # the user's come last and win
        defaults["spark.driver.extraJavaOptions"] = " ".join(java_options)
        for key, value in {**defaults, **{k: v for k, v in self.conf.items() if k != "spark.driver.extraJavaOptions"}}.items():
            conf.set(key, str(value))
        return conf

    def __enter__(self) -> SparkEngine:
        check_environment()
        from pyspark import SparkContext

        active = SparkContext._active_spark_context
        if active is not None and self.master is None:
            self.sc, self.owned = active, False  # a notebook's context: use it, leave it running
        else:
            master = self.master or DEFAULT_MASTER
            if active is not None:
                active.stop()
            if _is_loopback_master(master):
                os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
                if "spark.pyspark.python" not in self.conf:
                    # Executors on this machine run this interpreter, so the same zsim. (The
                    # environment variable, not spark.pyspark.python: that one reaches the
                    # workers with symlinks resolved, which loses a virtualenv.)
                    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.sc = SparkContext(conf=self._spark_conf(master))
            except Exception as exc:  # noqa: BLE001 - Java that does not start, a master that is not there
                self.__exit__(type(exc), exc, None)
                raise EnvironmentFault(f"spark ({master})", f"Spark did not start: {_first_line(exc)} "
                                       f"(java: {java_executable()}; or run the sweep without Spark: --engine local)") from None
            self.owned = True
        self.sc.setLogLevel("ERROR")
        self.slots = max(1, int(self.sc.defaultParallelism))
        self.broadcast = self.sc.broadcast(dict(self.payload))
        self.threads = ThreadPoolExecutor(max_workers=max(2, 2 * self.slots), thread_name_prefix="zsim-spark-job")
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if self.threads is not None:
            if exc_type is not None and self.sc is not None:
                try:
                    self.sc.cancelAllJobs()
                except Exception:  # noqa: BLE001 - the context may already be gone
                    pass
            self.threads.shutdown(wait=exc_type is None, cancel_futures=True)
            self.threads = None
        if self.broadcast is not None:
            try:
                self.broadcast.destroy()
            except Exception:  # noqa: BLE001
                pass
            self.broadcast = None
        if self.owned and self.sc is not None:
            try:
                self.sc.stop()
            except Exception:  # noqa: BLE001
                pass
        self.sc = None
        if self._log_config:
            Path(self._log_config).unlink(missing_ok=True)
            self._log_config = None

    def _job(self, batch: list[Task]) -> list[dict[str, Any]]:
        tasks = task_tuples(batch)
        self.sc.setJobDescription(f"zsim runs {batch[0].point}/{batch[0].replication} .. {batch[-1].point}/{batch[-1].replication}")
        rdd = self.sc.parallelize(tasks, 1)
        return rdd.mapPartitions(functools.partial(_partition, self.broadcast)).collect()

    def run(self, batches: Sequence[list[Task]]) -> Iterator[Completion | None]:
        assert self.threads is not None
        pending: dict[Future[Any], list[Task]] = {self.threads.submit(self._job, batch): batch for batch in batches}
        while pending:
            finished, _ = wait(list(pending), timeout=TICK_S, return_when=FIRST_COMPLETED)
            if not finished:
                yield None
                continue
            for future in finished:
                batch = pending.pop(future)
                error = future.exception()
                yield Completion(batch, None if error else future.result(), error)


def spark_version() -> str | None:
    try:
        import pyspark
    except ImportError:
        return None
    return str(pyspark.__version__)

