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

import contextlib
import errno
import io
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO, NoReturn, cast

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
    return decode_text(read_bytes(path, what, max_bytes), str(path), what)


def decode_text(data: bytes, label: str, what: str = "file") -> str:
    """The bytes of a file as UTF-8 text (a leading BOM dropped); a byte that is not UTF-8,
    or a NUL, is a ``ScenarioError`` naming ``label``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(label, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); a {what} is a UTF-8 "
                                   "file") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        raise ScenarioError(label, f"contains a NUL byte (offset {text.index(chr(0))}): a binary file, not a {what}")
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


def integer_out_of_range(value: Any) -> bool:
    """Whether ``value`` holds an integer TOML cannot hold (beyond 64 bits, TOML 1.0 "Integer";
    Python's parser reads 10**400 anyway, which no float holds: ``float()`` overflows)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**63:
            return True
    return False


def parse_toml(text: str, where: str, max_nesting: int = MAX_NESTING) -> dict[str, Any]:
    """Parse TOML text; a syntax error, excessive nesting or an integer beyond 64 bits is one
    ``ScenarioError`` line."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(where, f"TOML syntax error: {exc}") from None
    except ValueError:  # int() of a number written with more than 4,300 digits (sys.get_int_max_str_digits)
        raise ScenarioError(where, "holds an integer beyond 64 bits (TOML integers are from -2^63 to 2^63 - 1)") from None
    except RecursionError:
        raise ScenarioError(where, f"nests tables or arrays too deeply (more than {max_nesting} levels are refused)") from None
    if nesting_depth(raw) > max_nesting:
        raise ScenarioError(where, f"nests tables or arrays {nesting_depth(raw)} levels deep; at most {max_nesting} are accepted")
    if integer_out_of_range(raw):
        raise ScenarioError(where, "holds an integer beyond 64 bits (TOML integers are from -2^63 to 2^63 - 1)")
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
    is untouched; an OS error becomes an ``EnvironmentFault`` naming ``path``. The rename
    replaces a symbolic link at ``path`` rather than writing through it to its target. The
    temporary name, ``.<name>.<pid>.<random>.tmp``, lets a later run tell a killed writer's
    leftover (``cleanup_leftovers``) from a live one's.
    """
    p = Path(path)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        handle, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise EnvironmentFault(str(path), f"cannot be written: {_os_reason(exc)}") from None
    tmp = Path(tmp_name)
    try:
        os.fchmod(handle, _new_file_mode())  # mkstemp's 0600 would hide results from others
        with os.fdopen(handle, "wb") as out:
            _write_durably(out, write)
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


# -- what an output may be --------------------------------------------------------------------


def plain_name(name: Any, field: str, what: str = "the report folder") -> str:
    """A file name taken from a file someone else wrote (a saved manifest, a ``[report]``
    table): a plain name inside ``what``, never a path. ``ScenarioError`` otherwise."""
    bad = (not isinstance(name, str) or not name or name in (".", "..") or name.startswith(".") or len(name) > 200
           or any(ch in name for ch in "/\\\0") or any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in name)
           or Path(name).name != name)
    if bad:
        raise ScenarioError(field, f"must be a plain file name (it is written into {what}, nowhere else), got {name!r}")
    return str(name)


def check_inside(path: str | Path, folder: str | Path, what: str) -> Path:
    """``path`` if it resolves (symbolic links followed) inside ``folder``; else ScenarioError."""
    real, root = Path(path).resolve(), Path(folder).resolve()
    if real != root and root not in real.parents:
        raise ScenarioError(str(path), f"resolves to {str(real)!r}, outside {what} {str(root)!r}: zsim writes only inside the "
                                       "folder you named")
    return Path(path)


class LinkFound(ScenarioError):
    """A symbolic link inside a folder someone else filled (a results folder), where zsim
    follows none: ``path`` names it."""

    def __init__(self, path: str | Path, what: str = "a results folder") -> None:
        super().__init__(str(path), f"is a symbolic link inside {what}; zsim follows no link there (it could lead a write, a "
                                    "rename or a delete elsewhere, or a read of another file): remove it")


def check_not_link(path: str | Path, folder: str | Path, what: str) -> Path:
    """``path``, an entry of ``folder`` that someone else may have made: a link pointing out
    of ``folder`` is refused as one (``check_inside``), any other link as ``LinkFound``."""
    if os.path.islink(path):
        check_inside(path, folder, what)
        raise LinkFound(path, what)
    return Path(path)


#: open() flags: never follow a link in the last component; never block on a FIFO
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: whether entries can be reached relative to an open folder (openat, renameat, unlinkat)
_AT = all(f in os.supports_dir_fd for f in (os.open, os.stat, os.mkdir, os.unlink, os.replace)) and os.listdir in os.supports_fd


class ResultsFolder:
    """A folder whose contents came from elsewhere (a sweep's or a search's results folder),
    read and written by zsim without following any symbolic link below it.

    ``root`` is the folder the user named, or one checked to lie inside it (``check_inside``);
    every entry below it is reached one name at a time from the descriptor of the folder
    above it: ``openat`` with ``O_NOFOLLOW`` (and ``O_DIRECTORY`` for a folder), ``fstatat``
    without following, and created, renamed and removed relative to that descriptor
    (``mkdirat``, ``renameat``, ``unlinkat``). So neither a link planted in the folder, at
    any depth, nor one swapped in while zsim works, can lead a write, a rename, a delete or
    a read out of it. A link where zsim needs an entry is ``LinkFound`` (exit 2), naming it.
    (Where the OS cannot work relative to a folder, each folder on the way is checked with
    ``lstat`` instead.)
    """

    def __init__(self, root: str | Path, what: str = "a results folder") -> None:
        self.root = Path(root)
        self.what = what

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def _walk(self, parts: Sequence[str], create: bool = False) -> tuple[int | None, str]:
        """The folder ``parts`` as ``(dir_fd, prefix)``: names inside it are ``prefix + name``
        relative to ``dir_fd`` (an open descriptor the caller closes; None without ``openat``)."""
        if not _AT:
            return None, self._walk_by_path(parts, create)
        try:
            fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        except FileNotFoundError:
            raise
        except NotADirectoryError:
            raise ScenarioError(str(self.root), f"is not a folder ({self.what} must be one)") from None
        except OSError as exc:
            raise EnvironmentFault(str(self.root), f"cannot be opened: {_os_reason(exc)}") from None
        try:
            for i, name in enumerate(parts):
                if create:
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise EnvironmentFault(str(self.path(*parts[: i + 1])), f"cannot be created: {_os_reason(exc)}") from None
                try:
                    inner = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    self._refuse(fd, "", parts[: i + 1], exc, "folder")
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd, ""

    def _walk_by_path(self, parts: Sequence[str], create: bool) -> str:
        here = self.root
        for i, name in enumerate(parts):
            here = here / name
            if create and not os.path.lexists(here):
                try:
                    here.mkdir()
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise EnvironmentFault(str(here), f"cannot be created: {_os_reason(exc)}") from None
            mode = self._lstat_mode(None, str(here), parts[: i + 1])
            if mode is None:
                raise FileNotFoundError(errno.ENOENT, "no such folder", str(here))
            if stat.S_ISLNK(mode):
                raise LinkFound(here, self.what)
            if not stat.S_ISDIR(mode):
                raise ScenarioError(str(here), f"is not a folder (zsim expects one here in {self.what})")
        return str(here) + os.sep

    def _lstat_mode(self, fd: int | None, name: str, parts: Sequence[str]) -> int | None:
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise EnvironmentFault(str(self.path(*parts)), f"cannot be read: {_os_reason(exc)}") from None

    def _refuse(self, fd: int | None, prefix: str, parts: Sequence[str], exc: OSError, kind: str) -> NoReturn:
        """Raise what an ``open`` of ``parts[-1]`` in ``fd`` failing with ``exc`` means."""
        path = self.path(*parts)
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(errno.ENOENT, f"no such {kind}", str(path))
        mode = self._lstat_mode(fd, prefix + parts[-1], parts)
        if mode is not None and stat.S_ISLNK(mode):
            raise LinkFound(path, self.what) from None
        if mode is not None and (kind == "folder") != stat.S_ISDIR(mode):
            raise ScenarioError(str(path), f"is not a {kind} (zsim expects one here in {self.what})") from None
        raise EnvironmentFault(str(path), f"cannot be opened: {_os_reason(exc)}") from None

    @contextlib.contextmanager
    def folder(self, *parts: str, create: bool = False) -> Iterator[tuple[int | None, str]]:
        """The folder ``parts`` (created with ``create``), as ``(dir_fd, prefix)`` for the
        ``dir_fd`` arguments of ``os`` functions."""
        fd, prefix = self._walk(parts, create)
        try:
            yield fd, prefix
        finally:
            if fd is not None:
                os.close(fd)

    def entries(self, *parts: str) -> list[tuple[str, int]]:
        """The names in folder ``parts`` and their modes (``lstat``: a link is a link),
        sorted by name; [] if the folder does not exist."""
        try:
            with self.folder(*parts) as (fd, prefix):
                try:
                    names = os.listdir(fd if fd is not None else prefix)
                except OSError as exc:
                    raise EnvironmentFault(str(self.path(*parts)), f"cannot be read: {_os_reason(exc)}") from None
                found = []
                for name in sorted(names):
                    mode = self._lstat_mode(fd, prefix + name, (*parts, name))
                    if mode is not None:
                        found.append((name, mode))
                return found
        except FileNotFoundError:
            return []

    def mode(self, *parts: str) -> int | None:
        """The ``lstat`` mode of entry ``parts`` (None if there is none)."""
        try:
            with self.folder(*parts[:-1]) as (fd, prefix):
                return self._lstat_mode(fd, prefix + parts[-1], parts)
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def open_file(self, *parts: str, what: str = "file") -> Iterator[BinaryIO]:
        """Regular file ``parts`` open for reading (``O_NOFOLLOW``: a link is ``LinkFound``;
        ``O_NONBLOCK``: a FIFO does not block). ``FileNotFoundError`` if missing."""
        with self.folder(*parts[:-1]) as (fd, prefix):
            try:
                handle = os.open(prefix + parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=fd)
            except OSError as exc:
                self._refuse(fd, prefix, parts, exc, what)
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                os.close(handle)
                raise ScenarioError(str(self.path(*parts)), f"is not a regular file (a {what} must be one)")
            with os.fdopen(handle, "rb") as stream:
                yield stream

    def read_bytes(self, *parts: str, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> bytes:
        """The contents of regular file ``parts`` (see ``open_file``), at most ``max_bytes``."""
        label = str(self.path(*parts))
        with self.open_file(*parts, what=what) as stream:
            try:
                data = stream.read(max_bytes + 1)
            except OSError as exc:
                raise EnvironmentFault(label, f"cannot be read: {_os_reason(exc)}") from None
        if len(data) > max_bytes:
            raise ScenarioError(label, f"is larger than {max_bytes:,} bytes, the most a {what} may be")
        return data

    def write(self, *parts: str, content: Callable[[BinaryIO], Any] | bytes | str) -> Path:
        """Write file ``parts`` all at once, as ``atomic_write`` does (a temporary
        ``.<name>.<pid>.<random>.tmp`` beside it, fsync, rename, fsync the folder), its
        folders created as needed; a link at its name is replaced, never written through."""
        *folders, name = parts
        label = str(self.path(*parts))
        with self.folder(*folders, create=True) as (fd, prefix):
            tmp = f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
            try:
                # O_EXCL | O_NOFOLLOW: a name planted in the meantime is never opened
                handle = os.open(prefix + tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=fd)
            except OSError as exc:
                raise EnvironmentFault(label, f"cannot be written: {_os_reason(exc)}") from None
            try:
                with os.fdopen(handle, "wb") as out:
                    _write_durably(out, content)
                os.replace(prefix + tmp, prefix + name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException as exc:
                with contextlib.suppress(OSError):
                    os.unlink(prefix + tmp, dir_fd=fd)
                if isinstance(exc, OSError):
                    if exc.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                        raise ScenarioError(label, "is a folder, not a file") from None
                    raise EnvironmentFault(label, f"cannot be written: {_os_reason(exc)}") from None
                raise
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
        return self.path(*parts)

    def remove(self, *parts: str) -> None:
        """Remove entry ``parts`` (``unlinkat``: a link is removed, never what it points to)."""
        with self.folder(*parts[:-1]) as (fd, prefix):
            try:
                os.unlink(prefix + parts[-1], dir_fd=fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise EnvironmentFault(str(self.path(*parts)), f"cannot be removed: {_os_reason(exc)}") from None

    def rename(self, parts: Sequence[str], new_name: str) -> None:
        """Rename entry ``parts`` to ``new_name`` in the same folder (``renameat``: a link is
        renamed itself); an existing ``new_name`` is never replaced (``OSError`` EEXIST)."""
        with self.folder(*parts[:-1]) as (fd, prefix):
            if self._lstat_mode(fd, prefix + new_name, (*parts[:-1], new_name)) is not None:
                raise FileExistsError(errno.EEXIST, "exists", str(self.path(*parts[:-1], new_name)))
            os.rename(prefix + parts[-1], prefix + new_name, src_dir_fd=fd, dst_dir_fd=fd)

    def open_lock(self, name: str) -> int:
        """A descriptor (read-write, close-on-exec) of lock file ``name`` in the root, created
        if missing. Only a regular file with no other name is opened: a link (``O_NOFOLLOW``),
        a FIFO, a device or a file with hard links elsewhere is refused (``ScenarioError``),
        so writing the holder's pid into it cannot change anything outside the folder."""
        label = str(self.path(name))
        with self.folder() as (fd, prefix):
            mode = self._lstat_mode(fd, prefix + name, (name,))
            if mode is not None and stat.S_ISLNK(mode):
                raise LinkFound(label, self.what)
            if mode is not None and not stat.S_ISREG(mode):  # not opened at all: opening a device can act
                raise ScenarioError(label, "is not a regular file; zsim locks the folder with a file of its own there: remove it")
            try:
                handle = os.open(prefix + name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise LinkFound(label, self.what) from None
                raise EnvironmentFault(label, f"cannot be opened: {_os_reason(exc)}") from None
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(handle)
            raise ScenarioError(label, "is not a regular file of this folder alone (it has other names: hard links); zsim locks "
                                       "the folder with a file of its own there: remove it")
        return handle


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file (the same inode: hard links, symlinks, ``./x``)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_overwriting_inputs(outputs: Iterable[str | Path], inputs: Iterable[str | Path], flag: str) -> None:
    """An output that is one of the inputs is bad input (exit 2): zsim never overwrites what it reads."""
    sources = [Path(p) for p in inputs]
    for out in outputs:
        for source in sources:
            if same_file(out, source):
                raise ScenarioError(flag, f"{str(out)!r} is the input {str(source)!r} itself; zsim does not overwrite a file it "
                                          "reads (name another output)")


# -- leftovers of killed writers ------------------------------------------------------------

#: ``atomic_write``'s temporary files, and the scratch folders of a run report's figures and
#: of a set of outputs being replaced, each with the pid of the process writing it
_TMP = re.compile(r"^\..+\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")
_FIGURES = re.compile(r"^\.zsim-figures-(?P<pid>\d+)-")
_SET = re.compile(r"^\.(?P<folder>.+)\.zsim-(?P<kind>new|old)-(?P<pid>\d+)-")
#: Leftovers of an older zsim (no pid in the name) are removed when older than this.
LEGACY_LEFTOVER_AGE_S = 3600.0


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OSError:
        return True
    return True


def _old(path: Path) -> bool:
    try:
        return time.time() - path.lstat().st_mtime > LEGACY_LEFTOVER_AGE_S
    except OSError:
        return False


def _leftover(path: Path, names: Sequence[str]) -> bool:
    """Whether ``path`` is a dead writer's scratch file or folder for one of ``names``."""
    name = path.name
    for pattern in (_TMP, _FIGURES):
        found = pattern.match(name)
        if found:
            return not _alive(int(found.group("pid")))
    if name.startswith(".zsim-figures-"):  # an older zsim's, no pid
        return _old(path)
    if name.endswith(".tmp") and any(name.startswith(f".{n}.") for n in names):
        return _old(path)
    return False


def cleanup_leftovers(folder: str | Path, names: Sequence[str] = ()) -> list[Path]:
    """Remove what killed zsim writers left in ``folder``: temporary files of
    ``atomic_write``, a run report's ``.zsim-figures-*`` folder, and (beside ``folder``) a
    set of outputs half replaced (``replace_set``). A live writer's are left alone. Entries
    of the user's that a killed ``replace_set`` had moved are put back first. Returns what
    was removed."""
    root = Path(folder)
    removed: list[Path] = []
    if root.is_dir():
        for path in list(root.iterdir()):
            if _leftover(path, names):
                _remove(path)
                removed.append(path)
    parent = root.parent
    if parent.is_dir():
        for path in list(parent.iterdir()):
            found = _SET.match(path.name)
            if (not found or found.group("folder") != root.name or _alive(int(found.group("pid"))) or path.is_symlink()
                    or not path.is_dir()):
                continue  # a link is no scratch folder of zsim's: what it points to is never moved or removed
            if not root.exists() and found.group("kind") == "old":  # killed between two renames: the old folder comes back
                os.replace(path, root)
                continue
            _restore(path, root, names)
            _remove(path)
            removed.append(path)
    return removed


def _restore(scratch: Path, root: Path, names: Sequence[str]) -> None:
    """Move back into ``root`` the user's entries a killed swap left in ``scratch``."""
    if not root.is_dir():
        return
    for entry in scratch.iterdir():
        if entry.name in names or _leftover(entry, names) or (root / entry.name).exists() or (root / entry.name).is_symlink():
            continue
        os.replace(entry, root / entry.name)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# -- a set of outputs, replaced as a set --------------------------------------------------------

_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    if not os.uname().sysname == "Linux":
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _can_swap(real: Path) -> bool:
    """The folder may be replaced by a sibling: not the working folder (a shell would be left
    in a deleted one), not a mount point, not the root."""
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        cwd = None
    return real.is_dir() and real != real.parent and not os.path.ismount(real) and cwd != real


def _write_durably(out: BinaryIO, write: Callable[[BinaryIO], Any] | bytes | str) -> None:
    """Write text (UTF-8), bytes or what ``write(out)`` writes, and have it on disk."""
    if isinstance(write, str):
        out.write(write.encode("utf-8"))
    elif isinstance(write, (bytes, bytearray)):
        out.write(write)
    else:
        write(out)
    out.flush()
    os.fsync(out.fileno())


def _write_file(path: Path, write: Callable[[BinaryIO], Any] | bytes | str, label: str) -> None:
    try:
        with open(path, "xb") as out:
            _write_durably(out, write)
    except OSError as exc:
        raise EnvironmentFault(label, f"cannot be written: {_os_reason(exc)}") from None


def replace_set(folder: str | Path, contents: Mapping[str, Callable[[BinaryIO], Any] | bytes | str],
                what: str = "the output folder") -> list[Path]:
    """Write the files of ``contents`` (name -> content, as ``atomic_write`` takes it) into
    ``folder`` so that a reader sees the old set or the new one, never a mix.

    The new files are written into a temporary sibling folder together with the folder's
    other entries (files hard-linked, folders moved), which is then swapped with ``folder``
    in one rename (Linux ``renameat2``; elsewhere two renames, which a later run completes)
    and the old one removed. A killed write leaves a scratch folder that the next call (or
    ``cleanup_leftovers``) removes, putting back any entry of the user's first. When
    ``folder`` is the working folder or a mount point, it cannot be swapped: each file is
    then replaced on its own (``atomic_write``). An OS error is an ``EnvironmentFault``
    naming the path (a full disk included).
    """
    target = Path(folder)
    real = target.resolve()
    names = list(contents)
    try:
        cleanup_leftovers(real, names)
    except OSError as exc:
        raise EnvironmentFault(str(target), f"cannot clean up an interrupted write: {_os_reason(exc)}") from None
    if not _can_swap(real):
        return [atomic_write(target / name, write) for name, write in contents.items()]
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{real.name}.zsim-new-{os.getpid()}-", dir=real.parent))
    except OSError:  # the parent folder is not ours to write in: one file at a time instead
        return [atomic_write(target / name, write) for name, write in contents.items()]
    moved: list[str] = []
    swapped = False
    try:
        for name, write in contents.items():
            _write_file(stage / name, write, str(target / name))
        try:
            os.chmod(stage, stat.S_IMODE(real.stat().st_mode))
            for entry in real.iterdir():
                if entry.name in contents or _leftover(entry, names):
                    continue
                if entry.is_symlink():
                    os.symlink(os.readlink(entry), stage / entry.name)
                elif entry.is_dir():
                    moved.append(entry.name)
                else:
                    try:
                        os.link(entry, stage / entry.name, follow_symlinks=False)
                    except OSError:
                        shutil.copy2(entry, stage / entry.name)
            for name in moved:
                os.replace(real / name, stage / name)
            _fsync_dir(stage)
            if not _exchange(stage, real):
                old = Path(tempfile.mkdtemp(prefix=f".{real.name}.zsim-old-{os.getpid()}-", dir=real.parent))
                os.rmdir(old)
                os.replace(real, old)
                try:
                    os.replace(stage, real)
                except OSError:
                    os.replace(old, real)
                    raise
                stage = old
            swapped = True
            _fsync_dir(real.parent)
        except OSError as exc:
            raise EnvironmentFault(str(target), f"cannot be written: {_os_reason(exc)}") from None
    finally:
        if not swapped:
            for name in moved:
                if (stage / name).exists() and not (real / name).exists():
                    os.replace(stage / name, real / name)
        shutil.rmtree(stage, ignore_errors=True)
    return [target / name for name in names]


class _Stderr(io.TextIOBase):
    """``sys.stderr`` as it is when written to. A default argument ``stream=sys.stderr``
    binds the stream of the moment zsim was imported; a test harness (pytest's capture) or
    a notebook that replaces ``sys.stderr`` later would then see nothing, or see a write to
    a stream it has closed fail."""

    def write(self, text: str) -> int:
        if sys.stderr is None:  # pythonw, some embedders: no stream, nothing to say it on
            return len(text)
        return sys.stderr.write(text)

    def flush(self) -> None:
        if sys.stderr is not None:
            sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr is not None and sys.stderr.isatty()


#: The default progress stream of ``run_sweep``, ``compare`` and ``run_search``.
STDERR = cast(IO[str], _Stderr())
