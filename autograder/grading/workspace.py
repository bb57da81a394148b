"""Where a grading run works: OUT's lock (one run at a time), the scratch folder, the run's
work folders (marked by a held flock, so those of runs that died are removed by the next), and
the students a stopped run left unfinished (OUT/.unfinished.json, graded again by the next).

    fd = lock_output(out) ... release_output(fd)
    root, fd = start_work_root(False, scratch_folder(config))
    end_work_root(root, fd, keep=False)             # on every way out of the run
    unfinished = read_unfinished(out); write_unfinished(out, students)
"""

import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from autograder.config import Config
from autograder.grading.student import LOCK_NAME, remove_quietly
from autograder.report import TEMP_PREFIX, atomic_write
from autograder.safe_files import MB, UnsafeFile, printable, read_json, walk

RUN_PREFIX = "autograder-run-"  # per-run work folder in the temp dir; stale ones are removed
MEMORY_FS = Path("/dev/shm")  # preferred for the scratch files when it is a roomy tmpfs
MEMORY_FS_MIN_FREE = 2 * 2**30  # a Docker container's default 64 MB /dev/shm is not used
UNFINISHED_NAME = ".unfinished.json"  # in OUT: the students a stopped run did not finish

__all__ = [
    "LOCK_NAME",
    "end_work_root",
    "lock_output",
    "read_unfinished",
    "release_output",
    "scratch_folder",
    "start_work_root",
    "write_unfinished",
]


def lock_output(out: Path) -> int:
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


def release_output(fd: int) -> None:
    os.close(fd)  # closing the last descriptor releases the flock


def clean_interrupted_writes(out: Path) -> None:
    """Temporary files of atomic writes interrupted by a killed run (never the real files)."""
    for parts, name, info in walk(out, max_depth=2):
        if name and name.startswith(".") and TEMP_PREFIX in name and stat.S_ISREG(info.st_mode):
            try:
                Path(out).joinpath(*parts, name).unlink()
            except OSError:
                pass


def scratch_folder(config: Config) -> Path:
    """Where this run's work folder goes (from its Config): $AUTOGRADER_WORK_DIR, else
    $TMPDIR if it is set, else
    /dev/shm when it is a memory file system (tmpfs) with MEMORY_FS_MIN_FREE to spare, else the
    usual temp folder.

    Grading writes and removes some thousand small files per student (hidden-test requests, the
    sandbox's copies, its answers). On a disk file system that churn cost the parent 0.5-1 CPU-s
    of kernel time per student (ext4 allocating inodes beside recently deleted ones), on tmpfs
    about 0.1. The files live only while their student is graded."""
    work_dir = config.switches.work_dir
    if work_dir:
        return Path(work_dir)
    if not config.tmpdir_set and _roomy_memory_fs(MEMORY_FS):
        return MEMORY_FS
    return Path(tempfile.gettempdir())


def _roomy_memory_fs(path: Path) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            kinds = {f[1]: f[2] for f in map(str.split, mounts) if len(f) > 2}
        if kinds.get(str(path)) != "tmpfs" or not os.access(path, os.W_OK | os.X_OK):
            return False
        free = os.statvfs(path)
        return free.f_bavail * free.f_frsize >= MEMORY_FS_MIN_FREE
    except OSError:
        return False


def remove_stale_work(temp: Path) -> list[Path]:
    """The work folders in `temp` of runs that died (killed with SIGKILL: nothing of theirs could
    clean up): those whose lock no process holds. A live run holds its folder's flock for its
    whole life, so its folder is never taken; folders kept with --keep-work stay. Returns them."""
    removed = []
    for stale in sorted(Path(temp).glob(f"{RUN_PREFIX}*")):
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
        removed.append(stale)
    return removed


def start_work_root(keep: bool, folder: Path) -> tuple[Path, int]:
    """This run's work folder in `folder` (scratch_folder(), or the usual temp folder), marked
    by a held flock; work folders of runs that died (lock free) are removed first."""
    temp = Path(folder)
    temp.mkdir(parents=True, exist_ok=True)
    remove_stale_work(temp)
    root = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=temp))
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    if keep:
        (root / "keep").touch()
    return root, fd


def end_work_root(root: Path, fd: int, keep: bool = False) -> None:
    """The run's work folder removed (unless kept), then its lock released: a run that is still
    removing its folder is never taken for a dead one."""
    try:
        if not keep:
            remove_quietly(root)
    finally:
        os.close(fd)


# -- a stopped run's unfinished students ---------------------------------------------------------
def read_unfinished(out: Path) -> set[str]:
    """The students a stopped run left unfinished, as it wrote them; an empty set when there is
    no such file (or it cannot be read: then the usual up-to-date rule alone decides)."""
    try:
        data = read_json(out, [UNFINISHED_NAME], MB)
    except (UnsafeFile, OSError):
        return set()
    students = data.get("students") if isinstance(data, dict) else None
    if not isinstance(students, list):
        return set()
    return {s for s in students if isinstance(s, str)}


def write_unfinished(out: Path, students: Iterable[str]) -> None:
    """Written whole (atomic_write) by a stopped run; removed by a run that finished."""
    path = Path(out) / UNFINISHED_NAME
    if students:
        atomic_write(path, json.dumps({"students": sorted(students)}, indent=1) + "\n")
    else:
        try:
            path.unlink()
        except OSError:  # none there (or not a file: then it is not read either)
            pass
