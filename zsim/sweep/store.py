"""Sweep results on disk: Parquet partitioned by sweep and point, written so that a crash
loses nothing finished and a re-run duplicates nothing.

Layout (Hive-style partitions, readable by pyarrow, pandas, Spark, DuckDB)::

    OUT/sweep=<name>/_sweep.json                      the plan (axes, points, seeds), for reports
    OUT/sweep=<name>/point=<id>/part-<hash>.parquet   rows of finished runs of that point

One row per (point, replication). ``sweep`` and ``point`` are partition columns (in the
path, not in the files). Each file is written to a dot-file first, fsynced and renamed
into place (``zsim.files.atomic_write``), so a reader never sees half a file; files
starting with ``.`` or ``_`` are ignored by every Parquet reader. Resuming reads the
(point, replication) keys already present and runs only the others.

A part file that cannot be read (truncated, empty, not Parquet, or Parquet without the
``replication`` and ``ok`` columns) is named in one warning line and its rows count as not
done; a sweep (which holds the lock) moves it aside to ``_<name>.damaged`` (ignored by
Parquet readers, kept for inspection) and runs its rows again, a report leaves it out.

A ``.lock`` file (``flock``) keeps two sweeps from writing the same directory at once. The
lock dies with its holder: the descriptor is close-on-exec and is closed in every forked
child (``os.register_at_fork``), so a worker process that outlives a killed sweep cannot
keep the folder locked.

pyarrow is imported lazily: ``import zsim.sweep`` works without it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import files
from ..errors import EnvironmentFault, ScenarioError, ZsimError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .plan import Plan

MANIFEST = "_sweep.json"
LOCK = ".lock"
#: A damaged part file ``part-x.parquet`` is moved to ``_part-x.parquet.damaged``.
DAMAGED_SUFFIX = ".damaged"
#: Largest manifest read back (a million-point plan writes ~150 MB).
MAX_MANIFEST_BYTES = 512 * 1024 * 1024
FIXED_TYPES = {"replication": "int", "seed": "int", "ok": "bool", "error": "str", "scenario_digest": "str", "zsim_version": "str",
               "zsim_code": "str", "wall_s": "float"}
FLOAT_SUFFIXES = ("_s", "_fraction", "_per_s")

#: Receives warning lines (a damaged file); the default prints them to stderr.
Warn = Callable[[str], None]


def _stderr_warning(text: str) -> None:
    print(f"zsim: warning: {text}", file=sys.stderr, flush=True)


class DamagedFile(Exception):
    """A part file that cannot be used as sweep results; the message says why."""


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ZsimError("sweep results are Parquet files and need pyarrow: pip install 'zsim[results]'") from exc
    return pa, pq


def sweep_dir(out: str | Path, name: str) -> Path:
    return Path(out) / f"sweep={name}"


def point_dir(directory: Path, point_id: str) -> Path:
    return directory / f"point={point_id}"


def _write_parquet(path: Path, table: Any) -> None:
    """Write a Parquet file atomically: temporary dot-file, fsync, rename, fsync folder."""
    _, pq = _pyarrow()
    files.atomic_write(path, lambda out: pq.write_table(table, out, compression="zstd"))


def write_manifest(directory: Path, plan: Plan, counts: Mapping[str, int] | None = None) -> Path:
    """``_sweep.json``; ``counts``: the points that have more replications than the plan's
    (``zsim sweep --precision``), point id -> replications."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / MANIFEST
    manifest = plan.manifest()
    more = {point: int(n) for point, n in (counts or {}).items() if n > plan.sweep.replications}
    if more:
        manifest["point_replications"] = more
    files.atomic_write(path, json.dumps(manifest, indent=1, default=str).encode())
    return path


def point_replications(manifest: Mapping[str, Any]) -> dict[str, int]:
    """Each point's replications in a manifest: the plan's, or more (``--precision``)."""
    more = manifest.get("point_replications") or {}
    return {p["id"]: int(more.get(p["id"], manifest["replications"])) for p in manifest["points"]}


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The plan written next to the results, or None if there is none; a manifest that is
    not one (damaged, not JSON, not a zsim plan) is a ``ScenarioError`` naming it."""
    path = directory / MANIFEST
    if not path.exists():
        return None
    text = files.read_text(path, "sweep manifest", MAX_MANIFEST_BYTES)
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise ScenarioError(str(path), f"is not valid JSON ({exc}); run the sweep again to rewrite it") from None
    if not isinstance(manifest, dict) or not all(key in manifest for key in ("name", "axes", "points", "replications")):
        raise ScenarioError(str(path), "is not a zsim sweep manifest (no name, axes, points, replications); "
                                       "run the sweep again to rewrite it")
    return manifest


def _is_leftover(name: str) -> bool:
    # ``.tmp-<pid>-<name>`` (older zsim) and ``.<name>.<random>.tmp`` (zsim.files.atomic_write)
    return name.startswith(".tmp-") or (name.startswith(".") and name.endswith(".tmp"))


def cleanup_tmp(directory: Path) -> int:
    """Remove half-written files a crashed run left; return how many."""
    removed = 0
    if not directory.exists():
        return 0
    for path in list(directory.glob("point=*/.*")) + list(directory.glob(".*")):
        if _is_leftover(path.name) and path.is_file():
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def part_files(directory: Path) -> list[Path]:
    """Every finished result file of one sweep directory."""
    if not directory.exists():
        return []
    return sorted(p for p in directory.glob("point=*/*.parquet") if not p.name.startswith((".", "_")))


def _point_of(path: Path) -> str:
    return path.parent.name.split("=", 1)[1]


def _read_part(path: Path, columns: Sequence[str] | None = None) -> Any:
    """A part file as a pyarrow table (``columns`` only, if given), checked to be zsim rows:
    ``replication`` (integers >= 0) and ``ok`` (booleans). ``DamagedFile`` if not;
    ``EnvironmentFault`` if the OS refuses to read it."""
    pa, pq = _pyarrow()
    import pyarrow.compute as pc

    if not os.access(path, os.R_OK):
        raise EnvironmentFault(str(path), "cannot be read: permission denied")
    try:
        if path.stat().st_size == 0:
            raise DamagedFile("empty file")
        schema = pq.read_schema(path)
        for name, check, what in (("replication", pa.types.is_integer, "integers"), ("ok", pa.types.is_boolean, "booleans")):
            index = schema.get_field_index(name)
            if index < 0:
                raise DamagedFile(f"no {name!r} column: not a zsim result file")
            if not check(schema.field(index).type):
                raise DamagedFile(f"column {name!r} holds {schema.field(index).type}, not {what}: not a zsim result file")
        if columns is not None:  # a metric no row of this file has (a socket that got nothing) is simply absent
            columns = [name for name in columns if schema.get_field_index(name) >= 0]
        table = pq.read_table(path, columns=list(columns) if columns is not None else None)
        replication = table.column("replication")
        if replication.null_count or table.column("ok").null_count or (len(replication) and pc.min(replication).as_py() < 0):
            raise DamagedFile("missing or negative replication numbers or ok flags")
        return table
    except (DamagedFile, EnvironmentFault):
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow's many ways of saying "not a Parquet file"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DamagedFile(text[:200]) from None


def set_aside(path: Path, reason: str, warn: Warn | None = None) -> Path | None:
    """Move a damaged part file out of the results (to ``_<name>.damaged``, kept for
    inspection) and say so in one line; return where it went (None if it could not move)."""
    target = path.with_name(f"_{path.name}{DAMAGED_SUFFIX}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"_{path.name}{DAMAGED_SUFFIX}.{n}")
    try:
        os.replace(path, target)
    except OSError as exc:
        (warn or _stderr_warning)(f"{path}: damaged result file ({reason}); it could not be moved aside "
                                  f"({exc.strerror or exc}), its rows are left out and will be run again")
        return None
    (warn or _stderr_warning)(f"{path}: damaged result file ({reason}); moved to {target.name}, its runs will be run again")
    return target


def _usable_parts(directory: Path, warn: Warn | None, move: bool, columns: Sequence[str] | None) -> Iterator[tuple[Path, Any]]:
    """(path, table) of every readable part file; damaged ones are reported (and moved)."""
    for path in part_files(directory):
        try:
            table = _read_part(path, columns)
        except DamagedFile as exc:
            if move:
                set_aside(path, str(exc), warn)
            else:
                (warn or _stderr_warning)(f"{path}: damaged result file ({exc}); its rows are left out "
                                          "(the next zsim sweep moves it aside and runs them again)")
            continue
        yield path, table


def done_keys(directory: Path, warn: Warn | None = None, *, move_damaged: bool = True) -> dict[tuple[str, int], bool]:
    """(point id, replication) -> ok, for every row already written.

    A damaged part file is reported through ``warn`` and, with ``move_damaged`` (only with
    the lock held), moved aside; its rows are not done.
    """
    keys: dict[tuple[str, int], bool] = {}
    for path, table in _usable_parts(directory, warn, move_damaged, ["replication", "ok"]):
        point = _point_of(path)
        for replication, ok in zip(table.column("replication").to_pylist(), table.column("ok").to_pylist(), strict=True):
            keys[(point, int(replication))] = bool(ok)
    return keys


def code_versions(directory: Path) -> dict[str, int]:
    """How many rows each zsim code fingerprint computed (rows from before fingerprints: "?")."""
    _, pq = _pyarrow()
    counts: dict[str, int] = {}
    for path in part_files(directory):
        try:
            schema = pq.read_schema(path)
            if "zsim_code" in schema.names:
                values = pq.read_table(path, columns=["zsim_code"]).column("zsim_code").to_pylist()
            else:
                values = [None] * pq.read_metadata(path).num_rows
        except Exception:  # noqa: BLE001 - a damaged file is reported by done_keys, not here
            continue
        for value in values:
            counts[value or "?"] = counts.get(value or "?", 0) + 1
    return counts


def remove_failed(directory: Path, warn: Warn | None = None) -> int:
    """Drop the rows of failed runs (so they run again); return how many were dropped.
    Call with the lock held: a damaged part file is moved aside."""
    import pyarrow.compute as pc

    dropped = 0
    for path, table in _usable_parts(directory, warn, True, None):
        failed = int(pc.sum(pc.invert(table.column("ok"))).as_py() or 0)
        if not failed:
            continue
        kept = table.filter(table.column("ok"))
        dropped += failed
        if kept.num_rows == 0:
            path.unlink()
        else:
            _write_parquet(path, kept)
    return dropped


def _column_type(name: str, values: Sequence[Any], axis_kinds: Mapping[str, str]) -> Any:
    pa, _ = _pyarrow()
    kind = FIXED_TYPES.get(name) or axis_kinds.get(name)
    if kind is None:
        present = [v for v in values if v is not None]
        if name.endswith(FLOAT_SUFFIXES) or any(isinstance(v, float) for v in present):
            kind = "float" if all(isinstance(v, (int, float)) for v in present) else "str"
        elif present and all(isinstance(v, bool) for v in present):
            kind = "bool"
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            kind = "int"
        else:
            kind = "str"
    return {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string(), "json": pa.string()}[kind]


def rows_table(rows: Sequence[Mapping[str, Any]], axis_kinds: Mapping[str, str]) -> Any:
    """A pyarrow table of rows (without the partition columns), types fixed by name."""
    pa, _ = _pyarrow()
    names: list[str] = []
    seen: set[str] = set()
    for row in rows:
        for key in row:
            if key not in seen and key not in ("point", "sweep"):
                seen.add(key)
                names.append(key)
    arrays = []
    for name in names:
        values = [row.get(name) for row in rows]
        dtype = _column_type(name, values, axis_kinds)
        if dtype == pa.float64():
            values = [None if v is None else float(v) for v in values]
        elif dtype == pa.string():
            values = [None if v is None else (v if isinstance(v, str) else json.dumps(v, default=str)) for v in values]
        arrays.append(pa.array(values, type=dtype))
    return pa.Table.from_arrays(arrays, names=names)


def write_rows(directory: Path, rows: Sequence[Mapping[str, Any]], axis_kinds: Mapping[str, str]) -> list[Path]:
    """Write finished rows, one file per point touched, each atomically."""
    _, pq = _pyarrow()
    by_point: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_point.setdefault(row["point"], []).append(row)
    written = []
    for point, point_rows in by_point.items():
        point_rows = sorted(point_rows, key=lambda r: r["replication"])
        target_dir = point_dir(directory, point)
        target_dir.mkdir(parents=True, exist_ok=True)
        key = hashlib.sha256(",".join(str(r["replication"]) for r in point_rows).encode()).hexdigest()[:16]
        path = target_dir / f"part-{key}.parquet"
        _write_parquet(path, rows_table(point_rows, axis_kinds))
        written.append(path)
    return written


#: Descriptors of the locks this process holds (closed in forked children).
_HELD_LOCKS: set[int] = set()


def release_inherited_locks() -> None:
    """Close, in a forked child, the lock descriptors it inherited from its parent.

    ``flock`` locks belong to the open file, which a fork shares: a worker that kept the
    descriptor would keep the folder locked after its parent died. Closing the child's copy
    does not release the parent's lock. Runs by itself after every ``os.fork``.
    """
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=release_inherited_locks)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on a sweep directory (one writer at a time).

    An ``EnvironmentFault`` if another process holds it (or the file system refuses locks).
    """
    files.prepare_output_dir(directory, "the sweep's results folder")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    path = directory / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise EnvironmentFault(str(path), f"cannot be opened: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise EnvironmentFault(str(path), f"cannot be locked: {exc.strerror or exc}") from None
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise EnvironmentFault(str(directory), f"another sweep (pid {holder}) is writing here; "
                                                   "wait for it or use another --out") from None
        _HELD_LOCKS.add(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        _HELD_LOCKS.discard(fd)
        os.close(fd)


def sweep_dirs(out: str | Path) -> list[Path]:
    """The sweep directories under ``out`` (or ``out`` itself if it is one)."""
    root = Path(out)
    if not root.exists():
        raise ZsimError(f"{root}: no such results directory")
    if root.name.startswith("sweep="):
        return [root]
    found = sorted(p for p in root.glob("sweep=*") if p.is_dir())
    if not found:
        raise ZsimError(f"{root}: no sweep results here (expected sweep=<name>/ directories written by zsim sweep)")
    return found


def read_table(directory: Path, *, only_planned: bool = True, warn: Warn | None = None,
               columns: Sequence[str] | None = None) -> Any:
    """Every row of one sweep directory as a pyarrow table with ``sweep`` and ``point``
    (and only ``columns`` of its own, with ``replication`` and ``ok``, if given).

    With ``only_planned``, rows that belong to no point (or a replication beyond its count,
    the plan's or a ``--precision`` run's) of the sweep's current plan (``_sweep.json``) are left out: they come from an earlier
    definition of the sweep, kept on disk but not part of these results. A damaged part
    file is named through ``warn`` and left out (not moved: a reader holds no lock).
    """
    pa, _ = _pyarrow()
    manifest = read_manifest(directory) if only_planned else None
    counts = point_replications(manifest) if manifest else None
    name = directory.name.split("=", 1)[1]
    tables = []
    wanted = None if columns is None else sorted({"replication", "ok", *columns})
    for path, table in _usable_parts(directory, warn, False, wanted):
        point = _point_of(path)
        if counts is not None:
            if point not in counts:
                continue
            import pyarrow.compute as pc

            table = table.filter(pc.less(table.column("replication"), counts[point]))
        table = table.append_column("point", pa.array([point] * table.num_rows, type=pa.string()))
        table = table.append_column("sweep", pa.array([name] * table.num_rows, type=pa.string()))
        tables.append(table)
    if not tables:
        return pa.table({"sweep": pa.array([], pa.string()), "point": pa.array([], pa.string()), "replication": pa.array([], pa.int64())})
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except Exception as exc:  # noqa: BLE001 - files whose columns cannot be merged
        raise ZsimError(f"{directory}: result files with incompatible columns ({str(exc).splitlines()[0][:200]})") from None


def read_frame(directory: str | Path, *, only_planned: bool = True, warn: Warn | None = None,
               columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of one sweep directory as a pandas DataFrame, sorted by point, replication
    (``columns``: only those, as ``read_table``)."""
    frame = read_table(Path(directory), only_planned=only_planned, warn=warn, columns=columns).to_pandas()
    columns = ["sweep", "point"] + [c for c in frame.columns if c not in ("sweep", "point")]
    return frame[columns].sort_values(["point", "replication"], kind="stable").reset_index(drop=True)
