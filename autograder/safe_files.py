"""Reading and walking files a student controls, without ever following them somewhere else.

Everything the grading parent reads from a submission or from a sandbox (notebooks, the
harness's answers and arrays, status files, logs) goes through here:

    data = read_bytes(root, "fn/000_00/response.json", limit=8 * MB)   # UnsafeFile if refused
    value = read_json(root, "status.json", limit=MB)                    # also: depth-limited
    arr = load_npy(root, "arrays/a0.npy", limit=64 * MB)

`root` is a folder the parent made and trusts; every component of the relative path below it is
opened with O_NOFOLLOW (a symbolic link anywhere on the way is refused), the last one with
O_NONBLOCK too (a FIFO cannot block the parent), then fstat'ed: only a regular file no larger than
`limit` is read, and never more than limit + 1 bytes. A component that is empty, ".", "..", or
holds "/" or NUL is refused, so a name from a student's JSON cannot leave its folder.

Tree walks (`walk`, `remove_tree`) are iterative, work on directory file descriptors (no path
grows past PATH_MAX), never follow links, and bound the depth they descend to.
"""

import errno
import io
import json
import os
import stat
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from autograder.escaping import terminal

if TYPE_CHECKING:  # numpy is imported where an array is read
    import numpy as np

RelPath = str | os.PathLike[str] | Sequence[str]  # "a/b", a path, or its components

MB = 2**20
MAX_JSON_DEPTH = 64  # the harness never nests deeper than ~45; nbformat's JSON about 6
MAX_JSON_VALUES = 1_000_000  # values in one JSON file: at most ~100 MB once decoded
MAX_WALK_DEPTH = 32  # folders deeper than this in a submission are not looked into

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFile(ValueError):
    """A file the parent refused to read. `kind` is one of KINDS; str() is for the student."""

    KINDS = (
        "missing",
        "symlink",
        "special",
        "directory",
        "too-large",
        "bad-name",
        "unreadable",
        "not-json",
        "too-deep",
        "too-many",
    )

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def check_name(name: str) -> str:
    """A single path component a student may have chosen; UnsafeFile unless it stays put."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise UnsafeFile("bad-name", f"the name {printable(str(name))[:80]!r} is not allowed")
    return name


def _parts(relpath: RelPath) -> list[str]:
    if isinstance(relpath, str | os.PathLike):
        relpath = os.fspath(relpath).split("/")
    return [check_name(p) for p in relpath]


def _describe(mode: int) -> tuple[str, str]:
    if stat.S_ISLNK(mode):
        return "symlink", "is a symbolic link"
    if stat.S_ISDIR(mode):
        return "directory", "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "special", "is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "special", "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "special", "is a socket, not a regular file"
    return "special", "is not a regular file"


def _open_error(exc: OSError, shown: str) -> UnsafeFile:
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW on a symbolic link
        return UnsafeFile("symlink", f"{shown} is a symbolic link")
    if exc.errno == errno.ENOTDIR:  # a folder on the way is a file or a link to one
        return UnsafeFile("symlink", f"{shown}: a folder on its path is a link or a file")
    if exc.errno == errno.ENOENT:
        return UnsafeFile("missing", f"{shown} does not exist")
    if exc.errno == errno.ENXIO:  # O_NONBLOCK open of a FIFO/socket with no peer
        return UnsafeFile("special", f"{shown} is not a regular file")
    return UnsafeFile("unreadable", f"{shown} could not be opened ({exc.strerror})")


def open_below(root: str | os.PathLike[str], relpath: RelPath, shown: str | None = None) -> int:
    """A read-only fd of the regular file root/relpath, no link followed; UnsafeFile otherwise."""
    parts = _parts(relpath)
    shown = shown or "/".join(parts)
    if not parts:
        raise UnsafeFile("bad-name", "an empty path")
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise _open_error(exc, shown) from None
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeFile(
                        "symlink", f"{shown}: the folder {part} on its path is a link or a file"
                    ) from None
                raise _open_error(exc, shown) from None
            os.close(fd)
            fd = nxt
        try:  # classify without opening: opening a device or a FIFO can have effects
            mode = os.lstat(parts[-1], dir_fd=fd).st_mode
        except OSError as exc:
            raise _open_error(exc, shown) from None
        if not stat.S_ISREG(mode):
            kind, what = _describe(mode)
            raise UnsafeFile(kind, f"{shown} {what}")
        try:
            file_fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise _open_error(exc, shown) from None
    finally:
        os.close(fd)
    info = os.fstat(file_fd)  # the file opened, whatever was swapped in after lstat
    if not stat.S_ISREG(info.st_mode):
        os.close(file_fd)
        kind, what = _describe(info.st_mode)
        raise UnsafeFile(kind, f"{shown} {what}")
    return file_fd


def read_bytes(
    root: str | os.PathLike[str],
    relpath: RelPath,
    limit: int,
    shown: str | None = None,
    tail: bool = False,
) -> bytes:
    """The bytes of a regular file under root, at most `limit` (UnsafeFile beyond, unless tail:
    then its last `limit` bytes)."""
    shown = shown or "/".join(_parts(relpath))
    fd = open_below(root, relpath, shown)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            if not tail:
                raise UnsafeFile(
                    "too-large", f"{shown} is {_size(size)}, more than the {_size(limit)} allowed"
                )
            os.lseek(fd, size - limit, os.SEEK_SET)
        chunks, total = [], 0
        while total <= limit:  # the size may have grown since fstat: read at most limit + 1
            chunk = os.read(fd, min(MB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise UnsafeFile("unreadable", f"{shown} could not be read ({exc.strerror})") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        if not tail:
            raise UnsafeFile("too-large", f"{shown} is more than the {_size(limit)} allowed")
        data = data[-limit:]
    return data


def json_depth(value: object) -> int:
    """Nesting depth of decoded JSON, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (x, depth + 1) for x in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


_CHUNK = 1 << 20


def json_values_bound(data: bytes) -> int:
    """An upper bound on the number of values in the JSON text `data` (bytes), found without
    decoding it: every value but the first opens a container or follows a comma, so commas and
    brackets outside strings are counted (keys are at most as many as values). On the bytes, a
    chunk at a time (numpy; a few MB whatever the file holds): escaped backslashes, then escaped
    quotes are cut out, and a byte is inside a string when an odd number of quotes precede it.
    No UTF-8 sequence holds a quote or a backslash byte."""
    import numpy as np

    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(data, np.uint8)
    count, inside = 1, 0
    for start in range(0, len(codes), _CHUNK):
        part = codes[start : start + _CHUNK]
        quotes = np.cumsum(part == ord('"'), dtype=np.uint8)  # wraps mod 256: parity kept
        outside = ((quotes + inside) & 1) == 0
        opens = (part == ord(",")) | (part == ord("[")) | (part == ord("{"))
        count += int(np.count_nonzero(opens & outside))
        inside = int(quotes[-1] + inside) & 1
    return count


def parse_json(
    data: bytes | str,
    shown: str,
    max_depth: int = MAX_JSON_DEPTH,
    max_values: int = MAX_JSON_VALUES,
) -> Any:
    """Decoded JSON of `data` (bytes or str); UnsafeFile('not-json' / 'too-deep' / 'too-many')
    otherwise. The number of values is bounded before anything is decoded: a file small in
    bytes can hold millions of empty objects, each ~70 bytes once decoded (a 5 MB notebook
    once made the parent peak at 2.4 GB)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    # every value but the first takes at least one byte (a comma or a bracket): a file shorter
    # than the bound is not counted
    count = json_values_bound(data) if len(data) >= max_values else 0
    if count > max_values:
        raise UnsafeFile(
            "too-many",
            f"{shown} holds about {count:,} JSON values, more than the {max_values:,} allowed",
        )
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise UnsafeFile("too-deep", f"{shown} is nested too deeply to be read") from None
    except UnicodeDecodeError as exc:
        raise UnsafeFile(
            "not-json", f"{shown} is not UTF-8 text (byte {exc.start} cannot be decoded)"
        ) from None
    except ValueError as exc:  # json.JSONDecodeError and friends
        raise UnsafeFile("not-json", f"{shown} is not JSON ({str(exc)[:120]})") from None
    except MemoryError:
        raise UnsafeFile("too-large", f"{shown} is too large to be read") from None
    if json_depth(value) > max_depth:
        raise UnsafeFile("too-deep", f"{shown} is nested more than {max_depth} levels deep")
    return value


def read_json(
    root: str | os.PathLike[str],
    relpath: RelPath,
    limit: int,
    shown: str | None = None,
    max_depth: int = MAX_JSON_DEPTH,
    max_values: int | None = None,
) -> Any:
    shown = shown or "/".join(_parts(relpath))
    data = read_bytes(root, relpath, limit, shown)
    return parse_json(data, shown, max_depth, max_values or MAX_JSON_VALUES)


def load_npy(
    root: str | os.PathLike[str], relpath: RelPath, limit: int, shown: str | None = None
) -> "np.ndarray":
    """An array from a .npy file, never a pickle; the header's shape must match the data."""
    import numpy as np

    shown = shown or "/".join(_parts(relpath))
    data = read_bytes(root, relpath, limit, shown)
    stream = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        if dtype.hasobject:
            raise ValueError("object arrays are not plain data")
        count = 1
        for n in shape:
            count *= int(n)
        if count * dtype.itemsize != len(data) - stream.tell():
            raise ValueError("the header's shape does not match the data")
        stream.seek(0)
        return np.load(stream, allow_pickle=False)
    except (ValueError, TypeError, OverflowError, EOFError, SyntaxError) as exc:
        raise UnsafeFile("unreadable", f"{shown} is not a valid array file ({exc})") from None


# -- trees ---------------------------------------------------------------------------------------
def _open_dir(root: str | os.PathLike[str], parts: tuple[str, ...]) -> int:
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def walk(
    root: str | os.PathLike[str], max_depth: int = MAX_WALK_DEPTH, max_entries: int = 100_000
) -> Iterator[tuple[tuple[str, ...], str | None, Any]]:  # Any: a stat_result, or why (str)
    """Yield (relative parts, name, lstat result) for every entry under root, breadth first,
    never following a link (a link, a loop of links, a FIFO, a socket or a device is yielded as
    what it is, never opened) and never deeper than max_depth folders. What is not walked says
    so, with name None: (parts, None, "too-deep") for a folder nested deeper, (parts, None,
    "too-many") where the walk stopped, and (parts, None, "unreadable") for a folder that could
    not be opened or listed, or an entry that could not be looked at (parts then end with it)."""
    queue: list[tuple[str, ...]] = [()]
    seen = 0
    while queue:
        parts = queue.pop(0)
        try:
            fd = _open_dir(root, parts)
        except OSError:
            yield parts, None, "unreadable"
            continue
        try:
            names: list[str] = []
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:  # never listed past the cap: a folder may hold millions
                        if seen + len(names) >= max_entries:
                            yield parts, None, "too-many"
                            return
                        names.append(entry.name)
            except OSError:
                yield parts, None, "unreadable"
                continue
            for name in sorted(names):
                seen += 1
                try:
                    info = os.lstat(name, dir_fd=fd)
                except OSError:
                    yield (*parts, name), None, "unreadable"
                    continue
                yield parts, name, info
                if stat.S_ISDIR(info.st_mode):
                    if len(parts) + 1 >= max_depth:
                        yield (*parts, name), None, "too-deep"
                    else:
                        queue.append((*parts, name))
        finally:
            os.close(fd)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """rm -rf without recursion or long paths: every sub-folder is first moved up into the top
    folder (renamed), then emptied, so a chain of any depth is removed holding two fds. Links are
    removed, never followed."""
    path = os.fspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    top = os.open(path, _DIR_FLAGS)
    counter = 0
    try:
        _make_writable(top)
        pending: list[str | None] = [
            None
        ]  # None: the top folder itself; names: folders directly inside it
        while pending:
            name = pending.pop()
            try:
                fd = top if name is None else os.open(name, _DIR_FLAGS, dir_fd=top)
            except FileNotFoundError:  # removed by someone else meanwhile
                continue
            try:
                _make_writable(fd)
                with os.scandir(fd) as entries:
                    children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                for child, is_dir in children:
                    try:
                        if not is_dir:
                            os.unlink(child, dir_fd=fd)
                        elif fd == top:
                            pending.append(child)
                        else:
                            while True:  # a free name in the top folder (rename would replace)
                                counter += 1
                                target = f".rm-{counter}"
                                try:
                                    os.lstat(target, dir_fd=top)
                                except FileNotFoundError:
                                    break
                            os.rename(child, target, src_dir_fd=fd, dst_dir_fd=top)
                            pending.append(target)
                    except FileNotFoundError:
                        continue
            finally:
                if fd != top:
                    os.close(fd)
            if name is not None:
                try:
                    os.rmdir(name, dir_fd=top)
                except FileNotFoundError:
                    pass
    finally:
        os.close(top)
    os.rmdir(path)


def _make_writable(fd: int) -> None:
    try:
        mode = os.fstat(fd).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(fd, stat.S_IMODE(mode) | 0o700)
    except OSError:
        pass


# -- text for people -----------------------------------------------------------------------------
printable = terminal  # the terminal's escaping (autograder/escaping.py), under its old name


def _size(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
