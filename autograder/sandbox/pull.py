"""Take the sandbox's answers and status out of its private tmpfs mounts, with caps.

    folder = Folder.open(pid, "/grader/responses")  # while the sandbox runs (after set-up)
    folder.copy_to(host_dir, max_bytes=...)         # after it ended (the mount lives on in the fd)
    folder.close()

The folders a sandbox writes are size-capped tmpfs mounts inside it, so what it writes never
reaches the host disk. The grader opens them through /proc/PID/root once bwrap has set them up
(the driver waits for that, see driver.handshake) and keeps the descriptors: the mounts outlive
the sandbox as long as they are open. The copy walks iteratively and never follows a link or
opens anything but a regular file; it copies at most max_file_bytes per file and max_bytes in
all. What it does not copy keeps its kind, so that the grader's own reader (which opens nothing
it should not) can say what the student left there: a link is re-created as the same link (not
followed), a FIFO as an empty FIFO, a file over a budget as a sparse file of the same apparent
size holding nothing (no disk used); devices and sockets are left out.
"""

import os
import stat
from pathlib import Path
from typing import Self

FLAGS_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FLAGS_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Every file the copy writes on the host is new: never through a link or into a FIFO the student
# planted under a name the copy would use (a `.part` link next to a file once made the grader,
# as root, write a host file of the student's choosing).
FLAGS_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _create(path: str, size: int = 0) -> int:
    """A new regular file at path (refused if anything is there), truncated to size."""
    fd = os.open(path, FLAGS_NEW, 0o600)
    if size:
        os.ftruncate(fd, size)
    return fd


class Folder:
    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    @classmethod
    def open(cls, pid: int, inside_path: str) -> Self:
        root = os.open(f"/proc/{int(pid)}/root", FLAGS_DIR & ~os.O_NOFOLLOW)
        try:
            fd = root
            for part in inside_path.strip("/").split("/"):
                nxt = os.open(part, FLAGS_DIR, dir_fd=fd)
                if fd != root:
                    os.close(fd)
                fd = nxt
            return cls(fd)
        finally:
            os.close(root)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def copy_to(
        self,
        target: Path,
        max_bytes: int,
        max_file_bytes: int = 64 * 2**20,
        max_files: int = 100_000,
        max_depth: int = 32,
    ) -> tuple[int, int, int]:
        """Copy into `target` (created); returns (files copied, bytes copied, entries not copied)."""
        files = total = skipped = folders = 0
        assert self.fd is not None, "copy_to after close"
        stack = [(os.dup(self.fd), str(target), 0)]
        while stack:
            dir_fd, out, depth = stack.pop()
            try:
                os.makedirs(out, exist_ok=True)
                names = _names(dir_fd, max_files + 1 - (files + skipped + folders))
            except OSError:
                os.close(dir_fd)
                continue
            for name in names:
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode) and depth < max_depth:
                    if files + skipped + folders >= max_files:  # a million empty folders
                        skipped += 1
                        continue
                    try:
                        sub = os.open(name, FLAGS_DIR, dir_fd=dir_fd)
                    except OSError:
                        continue
                    folders += 1
                    stack.append((sub, os.path.join(out, name), depth + 1))
                    continue
                destination = os.path.join(out, name)
                skipped += 1
                if files + skipped + folders > max_files:
                    continue
                try:
                    if stat.S_ISLNK(info.st_mode):
                        os.symlink(os.readlink(name, dir_fd=dir_fd), destination)
                    elif stat.S_ISFIFO(info.st_mode):
                        os.mkfifo(destination, 0o600)
                    elif not stat.S_ISREG(info.st_mode):
                        continue
                    elif info.st_size > max_file_bytes or total + info.st_size > max_bytes:
                        os.close(_create(destination, info.st_size))
                    else:
                        total += _copy_file(dir_fd, name, destination, max_bytes - total)
                        files, skipped = files + 1, skipped - 1
                except OSError:
                    continue
            os.close(dir_fd)
        return files, total, skipped


def _names(dir_fd: int, limit: int) -> list[str]:
    """At most `limit` names of the folder (a student can make a million empty files on a
    tmpfs capped in bytes: they are never all listed, nor stat'ed one by one)."""
    names: list[str] = []
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            if len(names) >= max(limit, 0):
                break
            names.append(entry.name)
    return names


def _copy_file(dir_fd: int, name: str, destination: str, budget: int) -> int:
    try:
        src = os.open(name, FLAGS_FILE, dir_fd=dir_fd)
    except OSError:
        return 0
    copied = 0
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            return 0
        out = _create(destination)
        try:
            while copied < budget:
                chunk = os.read(src, min(1 << 20, budget - copied))
                if not chunk:
                    break
                copied += len(chunk)
                while chunk:
                    chunk = chunk[os.write(out, chunk) :]
        finally:
            os.close(out)
    except OSError:
        pass
    finally:
        os.close(src)
    return copied
