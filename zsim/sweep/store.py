"""Sweep results on disk: Parquet partitioned by sweep and point, written so that a crash
loses nothing finished and a re-run duplicates nothing.

Layout (Hive-style partitions, readable by pyarrow, pandas, Spark, DuckDB)::

    OUT/sweep=<name>/_sweep.json                      the plan (axes, points, seeds), for reports
    OUT/sweep=<name>/point=<id>/part-<hash>.parquet   rows of finished runs of that point

One row per (point, replication). ``sweep`` and ``point`` are partition columns (in the
path, not in the files). Each file is written to a dot-file first, fsynced and renamed
into place (``zsim.files.ResultsFolder.write``), so a reader never sees half a file; files
starting with ``.`` or ``_`` are ignored by every Parquet reader. Resuming reads the
(point, replication) keys already present and runs only the others.

A results folder is data from elsewhere (``zsim.files.ResultsFolder``): no symbolic link
below ``sweep=<name>`` is followed, for a write, a rename, a delete or a read. A
``point=<id>`` folder that is a link is refused (``LinkFound``, exit 2); so is a link at
``_sweep.json`` or ``.lock``. The manifest is checked field by field
(``zsim.sweep.manifest``).

A part file that cannot be read (truncated, empty, not Parquet, or Parquet without the
``replication`` and ``ok`` columns, a symbolic link, a value no run gives: a float beyond
``MAX_VALUE`` in size, a replication number of ``MAX_REPLICATIONS`` or more) is named in
one warning line and its rows count as not done; a sweep (which holds the lock) moves it
aside to ``_<name>.damaged`` (ignored by Parquet readers, kept for inspection) and runs its
rows again, a report leaves it out.

A (point, replication) is one run, however many rows name it: the first row read (part
files in name order, rows in file order) is the run; others are left out, silently when
they are the same run again (equal but for ``wall_s``), with one warning naming the files
when they differ.

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
import math
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import files
from ..errors import EnvironmentFault, ScenarioError, ZsimError
from ..metrics import FLOAT_SUFFIXES

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


def _write_parquet(folder: files.ResultsFolder, parts: Sequence[str], table: Any) -> None:
    """Write a Parquet file atomically: temporary dot-file, fsync, rename, fsync folder."""
    _, pq = _pyarrow()
    folder.write(*parts, content=lambda out: pq.write_table(table, out, compression="zstd"))


def results_folder(directory: Path) -> files.ResultsFolder:
    """One sweep's results folder, every entry below it reached without following a link."""
    return files.ResultsFolder(directory, "a results folder")


def write_manifest(directory: Path, plan: Plan, counts: Mapping[str, int] | None = None) -> Path:
    """``_sweep.json``; ``counts``: the points that have more replications than the plan's
    (``zsim sweep --precision``), point id -> replications."""
    directory.mkdir(parents=True, exist_ok=True)
    manifest = plan.manifest()
    more = {point: int(n) for point, n in (counts or {}).items() if n > plan.sweep.replications}
    if more:
        manifest["point_replications"] = more
    return results_folder(directory).write(MANIFEST, content=json.dumps(manifest, indent=1, default=str).encode())


def point_replications(manifest: Mapping[str, Any]) -> dict[str, int]:
    """Each point's replications in a manifest: the plan's, or more (``--precision``)."""
    more = manifest.get("point_replications") or {}
    return {p["id"]: int(more.get(p["id"], manifest["replications"])) for p in manifest["points"]}


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The plan written next to the results, or None if there is none; a manifest that is
    not one (damaged, not JSON, not a zsim plan, a field of the wrong kind: ``zsim.sweep.
    manifest.check``) is a ``ScenarioError`` naming it and the field."""
    from .manifest import check

    label = str(directory / MANIFEST)
    try:
        data = results_folder(directory).read_bytes(MANIFEST, what="sweep manifest", max_bytes=MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    text = files.decode_text(data, label, "sweep manifest")
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise ScenarioError(label, f"is not valid JSON ({str(exc)[:200]}); run the sweep again to rewrite it") from None
    except RecursionError:
        raise ScenarioError(label, "nests lists or tables too deeply to be a zsim sweep manifest; run the sweep again to "
                                   "rewrite it") from None
    return check(manifest, label)


def _is_leftover(name: str) -> bool:
    # ``.tmp-<pid>-<name>`` (older zsim) and ``.<name>.<random>.tmp`` (zsim.files.atomic_write)
    return name.startswith(".tmp-") or (name.startswith(".") and name.endswith(".tmp"))


def _point_folders(folder: files.ResultsFolder) -> list[str]:
    """The ``point=<id>`` folders of a results folder; one that is a link is refused
    (``LinkFound``): what it points to is no part of these results."""
    found = []
    for name, mode in folder.entries():
        if not name.startswith("point="):
            continue
        if stat.S_ISLNK(mode):
            raise files.LinkFound(folder.path(name), folder.what)
        if stat.S_ISDIR(mode):
            found.append(name)
    return found


def cleanup_tmp(directory: Path, warn: Warn | None = None) -> int:
    """Remove half-written files a crashed run left; return how many. Only regular files
    are removed: an entry with a leftover's name that is a link is left (and named)."""
    folder = results_folder(directory)
    removed = 0
    for parts in [(), *((name,) for name in _point_folders(folder))]:
        for name, mode in folder.entries(*parts):
            if not _is_leftover(name):
                continue
            if stat.S_ISREG(mode):
                folder.remove(*parts, name)
                removed += 1
            elif stat.S_ISLNK(mode):
                (warn or _stderr_warning)(f"{folder.path(*parts, name)}: a symbolic link where zsim leaves temporary files; "
                                          "left alone (zsim follows no link inside a results folder)")
    return removed


def _parts(folder: files.ResultsFolder) -> list[tuple[str, str, int]]:
    """(point folder, file name, lstat mode) of every finished result file, in name order."""
    found = []
    for point in _point_folders(folder):
        for name, mode in folder.entries(point):
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                found.append((point, name, mode))
    return found


def _point_of(path: Path) -> str:
    return path.parent.name.split("=", 1)[1]


#: Largest size of a float zsim accepts in a row read back: no run gives more (counts,
#: seconds, rates, fractions), and arithmetic on such values (a variance, a sum of squares
#: over a million replications) stays finite. Beyond it the file is damaged.
MAX_VALUE = 1e100


def _impossible_value(parquet: Any, label: str) -> str | None:
    """What is wrong with the first float column holding a finite value beyond
    ``MAX_VALUE`` in size (a crafted or corrupted file), or None. The row groups'
    statistics tell, without reading the column, unless they are missing or show an
    infinite value (which a run can give: an offered utilisation with no capacity)."""
    import numpy as np

    pa, _ = _pyarrow()
    schema = parquet.schema_arrow
    metadata = parquet.metadata
    flat = metadata.num_columns == len(schema)  # a leaf per field: statistics by field index
    for index, field in enumerate(schema):
        if not pa.types.is_floating(field.type):
            continue
        suspect = not flat
        for group in range(metadata.num_row_groups if flat else 0):
            statistics = metadata.row_group(group).column(index).statistics
            if statistics is None or not statistics.has_min_max:
                suspect = True
                break
            if any(not math.isfinite(v) or abs(v) > MAX_VALUE for v in (float(statistics.min), float(statistics.max))):
                suspect = True
                break
        if not suspect:
            continue
        values = parquet.read(columns=[field.name]).column(0).to_numpy(zero_copy_only=False).astype(float)
        beyond = np.flatnonzero(np.isfinite(values) & (np.abs(values) > MAX_VALUE))
        if len(beyond):
            return (f"column {field.name!r} holds {values[beyond[0]]:.6g} in its row {int(beyond[0])}, beyond any value a run "
                    f"gives (at most {MAX_VALUE:g} in size)")
    return None


def _read_part(folder: files.ResultsFolder, point: str, name: str, mode: int, columns: Sequence[str] | None = None) -> Any:
    """Part file ``point/name`` as a pyarrow table (``columns`` only, if given), checked to
    be zsim rows: ``replication`` (integers from 0 below ``MAX_REPLICATIONS``), ``ok``
    (booleans), no float beyond ``MAX_VALUE``. ``DamagedFile`` if not (a symbolic link
    included: it is never opened); ``EnvironmentFault`` if the OS refuses to read it."""
    pa, pq = _pyarrow()
    import pyarrow.compute as pc

    from .plan import MAX_REPLICATIONS

    if stat.S_ISLNK(mode):
        raise DamagedFile("a symbolic link: zsim reads no link inside a results folder")
    if not stat.S_ISREG(mode):
        raise DamagedFile("not a regular file")
    label = str(folder.path(point, name))
    try:
        with folder.open_file(point, name, what="result file") as stream:
            if os.fstat(stream.fileno()).st_size == 0:
                raise DamagedFile("empty file")
            parquet = pq.ParquetFile(stream)
            schema = parquet.schema_arrow
            for column, check, what in (("replication", pa.types.is_integer, "integers"), ("ok", pa.types.is_boolean, "booleans")):
                index = schema.get_field_index(column)
                if index < 0:
                    raise DamagedFile(f"no {column!r} column: not a zsim result file")
                if not check(schema.field(index).type):
                    raise DamagedFile(f"column {column!r} holds {schema.field(index).type}, not {what}: not a zsim result file")
            impossible = _impossible_value(parquet, label)
            if impossible:
                raise DamagedFile(impossible)
            if columns is not None:  # a metric no row of this file has (a socket that got nothing) is simply absent
                columns = [c for c in columns if schema.get_field_index(c) >= 0]
            table = parquet.read(columns=list(columns) if columns is not None else None)
        replication = table.column("replication")
        if replication.null_count or table.column("ok").null_count or (len(replication) and pc.min(replication).as_py() < 0):
            raise DamagedFile("missing or negative replication numbers or ok flags")
        if len(replication) and pc.max(replication).as_py() >= MAX_REPLICATIONS:
            raise DamagedFile(f"replication {pc.max(replication).as_py()}: a sweep has at most {MAX_REPLICATIONS:,}")
        return table
    except files.LinkFound:
        raise DamagedFile("a symbolic link: zsim reads no link inside a results folder") from None
    except (DamagedFile, EnvironmentFault):
        raise
    except ScenarioError as exc:
        raise DamagedFile(exc.reason) from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's many ways of saying "not a Parquet file"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DamagedFile(text[:200]) from None


def _move_aside(folder: files.ResultsFolder, parts: Sequence[str]) -> str:
    """Rename entry ``parts`` to ``_<name>.damaged`` (or ``.damaged.2``, ...) beside it; the
    new name. A link is renamed itself, never what it points to."""
    name = parts[-1]
    stem = f"{name if name.startswith('_') else '_' + name}{DAMAGED_SUFFIX}"
    target, n = stem, 1
    while folder.mode(*parts[:-1], target) is not None:
        n += 1
        target = f"{stem}.{n}"
    folder.rename(parts, target)
    return target


def set_aside(path: Path, reason: str, warn: Warn | None = None) -> Path | None:
    """Move a damaged part file (``sweep=<name>/point=<id>/<file>``) out of the results (to
    ``_<name>.damaged``, kept for inspection) and say so in one line; return where it went
    (None if it could not move)."""
    try:
        target = _move_aside(results_folder(path.parent.parent), (path.parent.name, path.name))
    except (OSError, ZsimError) as exc:
        why = exc.strerror or exc if isinstance(exc, OSError) else exc
        (warn or _stderr_warning)(f"{path}: damaged result file ({reason}); it could not be moved aside "
                                  f"({why}), its rows are left out and will be run again")
        return None
    (warn or _stderr_warning)(f"{path}: damaged result file ({reason}); moved to {target}, its runs will be run again")
    return path.with_name(target)


def read_earlier_manifest(directory: Path, warn: Warn | None = None) -> dict[str, Any] | None:
    """The manifest a sweep about to rewrite it finds (None if there is none). One that is
    damaged (``read_manifest``'s error) is moved aside to ``_sweep.json.damaged``, kept for
    inspection, and said in one line: the sweep writes it again from its file. Call with
    the lock held."""
    try:
        return read_manifest(directory)
    except files.LinkFound:
        raise
    except ScenarioError as exc:
        try:
            target = _move_aside(results_folder(directory), (MANIFEST,))
        except OSError as fault:
            raise EnvironmentFault(str(directory / MANIFEST), f"is damaged ({exc.reason}) and cannot be moved aside: "
                                                              f"{fault.strerror or fault}") from None
        (warn or _stderr_warning)(f"{exc}; moved to {target}, and written again from the sweep file (the replications an "
                                  "earlier --precision run added beyond the plan are no longer counted)")
        return None


def _usable_parts(directory: Path, warn: Warn | None, move: bool, columns: Sequence[str] | None) -> Iterator[tuple[Path, Any]]:
    """(path, table) of every readable part file; damaged ones are reported (and moved)."""
    folder = results_folder(directory)
    for point, name, mode in _parts(folder):
        path = directory / point / name
        try:
            table = _read_part(folder, point, name, mode, columns)
        except DamagedFile as exc:
            if move:
                set_aside(path, str(exc), warn)
            else:
                (warn or _stderr_warning)(f"{path}: damaged result file ({exc}); its rows are left out "
                                          "(the next zsim sweep moves it aside and runs them again)")
            continue
        yield path, table


def _same_run(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two rows of one (point, replication) are the same run: equal in every column
    both have but the run's wall time (NaN equal to NaN)."""
    for key in a.keys() & b.keys():
        if key == "wall_s":
            continue
        x, y = a[key], b[key]
        if x != y and not (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
            return False
    return True


class _Runs:
    """The first row of each (point, replication) among the part files read in order, and
    the keys whose later rows differ from it (with the files involved)."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, int], tuple[Path, Any, int]] = {}
        self.conflicts: dict[tuple[str, int], list[Path]] = {}

    def keep(self, path: Path, point: str, table: Any) -> list[int]:
        """Which rows of ``table`` (part file ``path`` of ``point``) are runs not seen before."""
        kept = []
        for i, replication in enumerate(table.column("replication").to_pylist()):
            key = (point, int(replication))
            seen = self.first.get(key)
            if seen is None:
                self.first[key] = (path, table, i)
                kept.append(i)
            elif not _same_run(seen[1].slice(seen[2], 1).to_pylist()[0], table.slice(i, 1).to_pylist()[0]):
                self.conflicts.setdefault(key, [seen[0]]).append(path)
        return kept

    def warn(self, warn: Warn | None) -> None:
        if not self.conflicts:
            return
        (point, replication), paths = next(iter(self.conflicts.items()))
        others = f" (and {len(self.conflicts) - 1} more runs)" if len(self.conflicts) > 1 else ""
        shown = ", ".join(dict.fromkeys(str(p) for p in paths))
        (warn or _stderr_warning)(f"point {point} replication {replication}{others}: rows that differ in {shown}; "
                                  "each run counts once, as its first row (files in name order)")


def done_keys(directory: Path, warn: Warn | None = None, *, move_damaged: bool = True) -> dict[tuple[str, int], bool]:
    """(point id, replication) -> ok, for every run already written (a run with several
    rows: its first, as ``read_table``).

    A damaged part file is reported through ``warn`` and, with ``move_damaged`` (only with
    the lock held), moved aside; its rows are not done.
    """
    keys: dict[tuple[str, int], bool] = {}
    runs = _Runs()
    for path, table in _usable_parts(directory, warn, move_damaged, ["replication", "ok"]):
        point = _point_of(path)
        oks = table.column("ok").to_pylist()
        replications = table.column("replication").to_pylist()
        for i in runs.keep(path, point, table):
            keys[(point, int(replications[i]))] = bool(oks[i])
    runs.warn(warn)
    return keys


def code_versions(directory: Path) -> dict[str, int]:
    """How many rows each zsim code fingerprint computed (rows from before fingerprints: "?")."""
    counts: dict[str, int] = {}
    for path, table in _usable_parts(directory, lambda text: None, False, ["replication", "ok", "zsim_code"]):
        del path
        values = table.column("zsim_code").to_pylist() if "zsim_code" in table.column_names else [None] * table.num_rows
        for value in values:
            code = str(value) if value else "?"  # a crafted file's column may hold numbers
            counts[code] = counts.get(code, 0) + 1
    return counts


def remove_failed(directory: Path, warn: Warn | None = None) -> int:
    """Drop the rows of failed runs (so they run again); return how many were dropped.
    Call with the lock held: a damaged part file is moved aside."""
    import pyarrow.compute as pc

    dropped = 0
    folder = results_folder(directory)
    for path, table in _usable_parts(directory, warn, True, None):
        failed = int(pc.sum(pc.invert(table.column("ok"))).as_py() or 0)
        if not failed:
            continue
        kept = table.filter(table.column("ok"))
        dropped += failed
        if kept.num_rows == 0:
            folder.remove(path.parent.name, path.name)
        else:
            _write_parquet(folder, (path.parent.name, path.name), kept)
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
    folder = results_folder(directory)
    for point, point_rows in by_point.items():
        point_rows = sorted(point_rows, key=lambda r: r["replication"])
        key = hashlib.sha256(",".join(str(r["replication"]) for r in point_rows).encode()).hexdigest()[:16]
        parts = (point_dir(directory, point).name, f"part-{key}.parquet")
        _write_parquet(folder, parts, rows_table(point_rows, axis_kinds))
        written.append(folder.path(*parts))
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
    # never through a link, never a file with other names: the pid written below cannot
    # land anywhere but in this folder's own lock file
    fd = results_folder(directory).open_lock(LOCK)
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
    found = []
    for path in sorted(root.glob("sweep=*")):
        files.check_not_link(path, root, "the results folder")  # what a link points to is no part of these results
        if path.is_dir():
            found.append(path)
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
    runs = _Runs()
    for path, table in _usable_parts(directory, warn, False, wanted):
        point = _point_of(path)
        if counts is not None:
            if point not in counts:
                continue
            import pyarrow.compute as pc

            table = table.filter(pc.less(table.column("replication"), counts[point]))
        kept = runs.keep(path, point, table)
        if len(kept) < table.num_rows:  # a run already read: counted once
            table = table.take(pa.array(kept, type=pa.int64()))
        table = table.append_column("point", pa.array([point] * table.num_rows, type=pa.string()))
        table = table.append_column("sweep", pa.array([name] * table.num_rows, type=pa.string()))
        tables.append(table)
    runs.warn(warn)
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
