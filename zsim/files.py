"""Files at the edge: read inputs safely, check outputs before any work, write atomically.

Every command that reads a file a user names (a scenario, a sweep, a profile, a results
folder) or writes one (``--out``) goes through here, so bad input and failing OS calls
end the same way everywhere: one line naming the path and the reason.

* Inputs must be regular files (not folders, FIFOs or devices: ``/dev/zero`` would be read
  until memory runs out, a FIFO blocks for ever), at most ``MAX_INPUT_BYTES`` long, UTF-8,
  and a TOML document may nest at most ``MAX_NESTING`` levels (Python's TOML parser
  recurses per level).
* Outputs are created and tested for writing *before* any simulation or measurement, so a
  typo in ``--out`` costs nothing.
* ``atomic_write`` writes to a temporary name in the same folder, fsyncs, renames into
  place and fsyncs the folder: a reader sees the old file or the new one, never half of
  one, even after a crash or power loss.

Errors: ``ScenarioError`` (bad input, exit 2) when the path itself is wrong (a folder
where a file is needed, not UTF-8, too large); ``EnvironmentFault`` (exit 1) when the OS
refuses (permission denied, disk full).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from .errors import EnvironmentFault, ScenarioError

try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

#: Largest input file zsim reads (scenario, sweep, profile, JSON). The largest shipped
#: scenario is about 12 KB; a generated one with thousands of sockets stays far below.
MAX_INPUT_BYTES = 16 * 1024 * 1024
#: Deepest nesting of tables and arrays accepted in a TOML document (the scenario
#: format itself needs four: ``socket -> [i] -> options -> subscribe``).
MAX_NESTING = 32


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def check_input_file(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> Path:
    """``path`` as a ``Path`` if it is a regular, readable file of at most ``max_bytes``."""
    p = Path(path)
    label = str(path)
    try:
        info = p.stat()
    except FileNotFoundError:
        raise ScenarioError(label, f"no such file (a {what} was expected)") from None
    except NotADirectoryError:
        raise ScenarioError(label, "no such file (a part of the path is not a folder)") from None
    except OSError as exc:
        raise EnvironmentFault(label, f"cannot be read: {_os_reason(exc)}") from None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise ScenarioError(label, f"is a folder, not a {what}")
    if stat.S_ISFIFO(mode):
        raise ScenarioError(label, f"is a FIFO (named pipe), not a {what}: reading it could block for ever")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise ScenarioError(label, f"is a device, not a {what}")
    if not stat.S_ISREG(mode):
        raise ScenarioError(label, f"is not a regular file (a {what} must be one)")
    if info.st_size > max_bytes:
        raise ScenarioError(label, f"is {info.st_size:,} bytes; a {what} is at most {max_bytes:,} bytes")
    return p


def read_bytes(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The contents of a regular file of at most ``max_bytes`` (checked again while reading)."""
    p = check_input_file(path, what, max_bytes)
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO after the check, open does not wait.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise EnvironmentFault(str(path), f"cannot be read: {_os_reason(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ScenarioError(str(path), f"is not a regular file (a {what} must be one)")
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise ScenarioError(str(path), f"is larger than {max_bytes:,} bytes, the most a {what} may be")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise EnvironmentFault(str(path), f"cannot be read: {_os_reason(exc)}") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """A regular UTF-8 text file (see ``read_bytes``); a byte that is not UTF-8 is named."""
    data = read_bytes(path, what, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); a {what} is a UTF-8 "
                                       "file") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        raise ScenarioError(str(path), f"contains a NUL byte (offset {text.index(chr(0))}): a binary file, not a {what}")
    return text


def nesting_depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (iterative: any depth is safe)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in item.values())
        elif isinstance(item, (list, tuple)):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in item)
    return deepest


def parse_toml(text: str, where: str, max_nesting: int = MAX_NESTING) -> dict[str, Any]:
    """Parse TOML text; a syntax error or excessive nesting is one ``ScenarioError`` line."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(where, f"TOML syntax error: {exc}") from None
    except RecursionError:
        raise ScenarioError(where, f"nests tables or arrays too deeply (more than {max_nesting} levels are refused)") from None
    if nesting_depth(raw) > max_nesting:
        raise ScenarioError(where, f"nests tables or arrays {nesting_depth(raw)} levels deep; at most {max_nesting} are accepted")
    return raw


def load_toml(path: str | Path, what: str = "file") -> dict[str, Any]:
    """Read and parse a TOML file with every check of ``read_text`` and ``parse_toml``."""
    return parse_toml(read_text(path, what), str(path))


def shown_path(path: str | Path) -> str:
    """A path as a reader of a committed report can use it: relative to the working folder
    when it lies inside it, so no machine's absolute paths end up in the repository."""
    text = str(path)
    try:
        relative = os.path.relpath(text)
    except ValueError:  # another drive (Windows)
        return text
    return relative if not relative.startswith("..") else text


# -- outputs ------------------------------------------------------------------------------


def _probe_write(directory: Path, label: str) -> None:
    try:
        handle, probe = tempfile.mkstemp(prefix=".zsim-write-test-", dir=directory)
    except OSError as exc:
        raise EnvironmentFault(label, f"cannot be written: {_os_reason(exc)}") from None
    os.close(handle)
    try:
        os.unlink(probe)
    except OSError:  # pragma: no cover - we just created it
        pass


def prepare_output_dir(path: str | Path, what: str = "the output folder") -> Path:
    """Create folder ``path`` (and its parents) and check that files can be written in it.

    A path naming an existing file is bad input (exit 2); an OS refusal (permission
    denied, read-only file system, disk full) is an ``EnvironmentFault`` (exit 1).
    """
    p = Path(path)
    label = str(path)
    if p.exists() and not p.is_dir():
        raise ScenarioError(label, f"is a file; {what} must name a folder (or a path that does not exist yet)")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ScenarioError(label, f"a part of this path is a file; {what} must name a folder") from None
    except NotADirectoryError:
        raise ScenarioError(label, f"a part of this path is a file; {what} must name a folder") from None
    except OSError as exc:
        raise EnvironmentFault(label, f"cannot be created: {_os_reason(exc)}") from None
    _probe_write(p, label)
    return p


def prepare_output_file(path: str | Path, what: str = "output file") -> Path:
    """Check that file ``path`` can be written (its folder is created if needed)."""
    p = Path(path)
    label = str(path)
    if p.is_dir():
        raise ScenarioError(label, f"is a folder; the {what} must be a file name")
    if p.exists() and not p.is_file():
        raise ScenarioError(label, f"is not a regular file; the {what} must be one")
    parent = p.parent if str(p.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise ScenarioError(label, f"{parent} is a file, not a folder")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ScenarioError(label, f"a part of this path is a file; the {what} needs a folder") from None
    except OSError as exc:
        raise EnvironmentFault(label, f"cannot be created: {_os_reason(exc)}") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise EnvironmentFault(label, "cannot be written: permission denied")
    _probe_write(parent, label)
    return p


def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0666 less the process umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - some file systems refuse; the rename still happened
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[BinaryIO], Any] | bytes | str) -> Path:
    """Write ``path`` all at once: temporary file in the same folder, fsync, rename, fsync folder.

    ``write`` is the content (bytes or text, UTF-8) or a function that writes to a binary
    file object. On any failure the temporary file is removed and the old ``path`` (if any)
    is untouched; an OS error becomes an ``EnvironmentFault`` naming ``path``.
    """
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        handle, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise EnvironmentFault(str(path), f"cannot be written: {_os_reason(exc)}") from None
    tmp = Path(tmp_name)
    try:
        os.fchmod(handle, _new_file_mode())  # mkstemp's 0600 would hide results from others
        with os.fdopen(handle, "wb") as out:
            if isinstance(write, str):
                out.write(write.encode("utf-8"))
            elif isinstance(write, (bytes, bytearray)):
                out.write(write)
            else:
                write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno == errno.EISDIR:
            raise ScenarioError(str(path), "is a folder, not a file") from None
        raise EnvironmentFault(str(path), f"cannot be written: {_os_reason(exc)}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(directory)
    return p
