"""Sweep results on disk: Parquet partitioned by sweep and point, written so that a crash
loses nothing finished and a re-run duplicates nothing.

Layout (Hive-style partitions, readable by pyarrow, pandas, Spark, DuckDB)::

    OUT/sweep=<name>/_sweep.json                      the plan (axes, points, seeds), for reports
    OUT/sweep=<name>/point=<id>/part-<hash>.parquet   rows of finished runs of that point

One row per (point, replication). ``sweep`` and ``point`` are partition columns (in the
path, not in the files). Each file is written to a dot-file first and renamed into place
(atomic on POSIX), so a reader never sees half a file; files starting with ``.`` or ``_``
are ignored by every Parquet reader. Resuming reads the (point, replication) keys already
present and runs only the others. A ``.lock`` file (``flock``) keeps two sweeps from
writing the same directory at once.

pyarrow is imported lazily: ``import zsim.sweep`` works without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ZsimError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .plan import Plan

MANIFEST = "_sweep.json"
LOCK = ".lock"
FIXED_TYPES = {"replication": "int", "seed": "int", "ok": "bool", "error": "str", "scenario_digest": "str", "zsim_version": "str", "zsim_code": "str", "wall_s": "float"}
FLOAT_SUFFIXES = ("_s", "_fraction", "_per_s")


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


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_manifest(directory: Path, plan: Plan) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / MANIFEST
    _atomic_write_bytes(path, json.dumps(plan.manifest(), indent=1, default=str).encode())
    return path


def read_manifest(directory: Path) -> dict[str, Any] | None:
    path = directory / MANIFEST
    if not path.exists():
        return None
    return json.loads(path.read_text())


def cleanup_tmp(directory: Path) -> int:
    """Remove half-written files a crashed run left (``.tmp-*``); return how many."""
    removed = 0
    if not directory.exists():
        return 0
    for path in directory.glob("point=*/.tmp-*"):
        path.unlink(missing_ok=True)
        removed += 1
    for path in directory.glob(".tmp-*"):
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


def done_keys(directory: Path) -> dict[tuple[str, int], bool]:
    """(point id, replication) -> ok, for every row already written."""
    pa, pq = _pyarrow()
    keys: dict[tuple[str, int], bool] = {}
    for path in part_files(directory):
        table = pq.read_table(path, columns=["replication", "ok"])
        point = _point_of(path)
        for replication, ok in zip(table.column("replication").to_pylist(), table.column("ok").to_pylist()):
            keys[(point, int(replication))] = bool(ok)
    return keys


def code_versions(directory: Path) -> dict[str, int]:
    """How many rows each zsim code fingerprint computed (rows from before fingerprints: "?")."""
    _, pq = _pyarrow()
    counts: dict[str, int] = {}
    for path in part_files(directory):
        schema = pq.read_schema(path)
        if "zsim_code" in schema.names:
            for value in pq.read_table(path, columns=["zsim_code"]).column("zsim_code").to_pylist():
                counts[value or "?"] = counts.get(value or "?", 0) + 1
        else:
            counts["?"] = counts.get("?", 0) + pq.read_metadata(path).num_rows
    return counts


def remove_failed(directory: Path) -> int:
    """Drop the rows of failed runs (so they run again); return how many were dropped."""
    pa, pq = _pyarrow()
    import pyarrow.compute as pc

    dropped = 0
    for path in part_files(directory):
        table = pq.read_table(path)
        failed = int(pc.sum(pc.invert(table.column("ok"))).as_py() or 0)
        if not failed:
            continue
        kept = table.filter(table.column("ok"))
        dropped += failed
        if kept.num_rows == 0:
            path.unlink()
        else:
            tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
            pq.write_table(kept, tmp, compression="zstd")
            os.replace(tmp, path)
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
        tmp = target_dir / f".tmp-{os.getpid()}-{path.name}"
        pq.write_table(rows_table(point_rows, axis_kinds), tmp, compression="zstd")
        os.replace(tmp, path)
        written.append(path)
    return written


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on a sweep directory (one writer at a time)."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    handle = open(directory / LOCK, "a+")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise ZsimError(f"{directory}: another sweep (pid {holder}) is writing here; wait for it or use another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


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


def read_table(directory: Path, *, only_planned: bool = True) -> Any:
    """Every row of one sweep directory as a pyarrow table with ``sweep`` and ``point``.

    With ``only_planned``, rows that belong to no point (or a replication beyond the count)
    of the sweep's current plan (``_sweep.json``) are left out: they come from an earlier
    definition of the sweep, kept on disk but not part of these results.
    """
    pa, pq = _pyarrow()
    manifest = read_manifest(directory) if only_planned else None
    planned = {p["id"] for p in manifest["points"]} if manifest else None
    replications = manifest["replications"] if manifest else None
    name = directory.name.split("=", 1)[1]
    tables = []
    for path in part_files(directory):
        point = _point_of(path)
        if planned is not None and point not in planned:
            continue
        table = pq.read_table(path)
        if replications is not None:
            import pyarrow.compute as pc

            table = table.filter(pc.less(table.column("replication"), replications))
        table = table.append_column("point", pa.array([point] * table.num_rows, type=pa.string()))
        table = table.append_column("sweep", pa.array([name] * table.num_rows, type=pa.string()))
        tables.append(table)
    if not tables:
        return pa.table({"sweep": pa.array([], pa.string()), "point": pa.array([], pa.string()), "replication": pa.array([], pa.int64())})
    return pa.concat_tables(tables, promote_options="permissive")


def read_frame(directory: str | Path, *, only_planned: bool = True) -> pd.DataFrame:
    """The rows of one sweep directory as a pandas DataFrame, sorted by point, replication."""
    frame = read_table(Path(directory), only_planned=only_planned).to_pandas()
    columns = ["sweep", "point"] + [c for c in frame.columns if c not in ("sweep", "point")]
    return frame[columns].sort_values(["point", "replication"], kind="stable").reset_index(drop=True)
