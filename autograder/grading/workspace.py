"""Where a grading run works: OUT's lock (one run at a time), the scratch folder, and the run's
work folders (marked by a held flock, so those of runs that died are removed by the next).

    fd = lock_output(out) ... release_output(fd)
    root, fd = start_work_root(keep=False)          # in scratch_folder()
"""

import fcntl
import os
import stat
import tempfile
from pathlib import Path

from autograder.grading.student import LOCK_NAME, remove_quietly
from autograder.report import TEMP_PREFIX
from autograder.safe_files import printable, walk
from autograder.switches import switches

RUN_PREFIX = "autograder-run-"  # per-run work folder in the temp dir; stale ones are removed
MEMORY_FS = Path("/dev/shm")  # preferred for the scratch files when it is a roomy tmpfs
MEMORY_FS_MIN_FREE = 2 * 2**30  # a Docker container's default 64 MB /dev/shm is not used

__all__ = ["LOCK_NAME", "lock_output", "release_output", "scratch_folder", "start_work_root"]


def lock_output(out):
    """Hold OUT/.grading.lock (flock) for this process's lifetime; refuse if another run has it.
    The lock dies with its process, so a run killed with SIGKILL never blocks the next one."""
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise SystemExit(
            f"error: another grading run is using {printable(out)} (pid {printable(holder)}); "
            "wait for it to finish or grade into another --out folder."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def release_output(fd):
    os.close(fd)  # closing the last descriptor releases the flock


def clean_interrupted_writes(out):
    """Temporary files of atomic writes interrupted by a killed run (never the real files)."""
    for parts, name, info in walk(out, max_depth=2):
        if name and name.startswith(".") and TEMP_PREFIX in name and stat.S_ISREG(info.st_mode):
            try:
                Path(out).joinpath(*parts, name).unlink()
            except OSError:
                pass


def scratch_folder():
    """Where this run's work folder goes: $AUTOGRADER_WORK_DIR, else $TMPDIR if it is set, else
    /dev/shm when it is a memory file system (tmpfs) with MEMORY_FS_MIN_FREE to spare, else the
    usual temp folder.

    Grading writes and removes some thousand small files per student (hidden-test requests, the
    sandbox's copies, its answers). On a disk file system that churn cost the parent 0.5-1 CPU-s
    of kernel time per student (ext4 allocating inodes beside recently deleted ones), on tmpfs
    about 0.1. The files live only while their student is graded."""
    work_dir = switches().work_dir
    if work_dir:
        return Path(work_dir)
    if not os.environ.get("TMPDIR") and _roomy_memory_fs(MEMORY_FS):
        return MEMORY_FS
    return Path(tempfile.gettempdir())


def _roomy_memory_fs(path):
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            kinds = {f[1]: f[2] for f in map(str.split, mounts) if len(f) > 2}
        if kinds.get(str(path)) != "tmpfs" or not os.access(path, os.W_OK | os.X_OK):
            return False
        free = os.statvfs(path)
        return free.f_bavail * free.f_frsize >= MEMORY_FS_MIN_FREE
    except OSError:
        return False


def start_work_root(keep=False, folder=None):
    """This run's work folder in `folder` (default: scratch_folder()), marked by a held flock;
    work folders of runs that died (lock free) are removed first."""
    temp = Path(folder) if folder is not None else scratch_folder()
    temp.mkdir(parents=True, exist_ok=True)
    for stale in sorted(temp.glob(f"{RUN_PREFIX}*")):
        if stale.is_symlink() or not stale.is_dir() or (stale / "keep").exists():
            continue
        try:
            fd = os.open(stale / "lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run
        finally:
            os.close(fd)
        remove_quietly(stale)
    root = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=temp))
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    if keep:
        (root / "keep").touch()
    return root, fd
