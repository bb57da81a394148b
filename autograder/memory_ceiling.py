"""The grading parent's own memory ceiling: a bound on what it may add while it grades.

    with memory_ceiling(budget_bytes):    # RLIMIT_AS (soft) = what the process maps now + budget
        ...                                # past it, allocations fail: MemoryError for one student

Everything a student controls is read under bounds of its own (safe_files, notebook_files,
zip_directory); this is the backstop for a bound someone forgot. The limit is the soft
RLIMIT_AS, relative to the address space already mapped (so a process that has imported torch,
or a test process, is not refused at once), and the previous limit comes back on exit. The hard
limit is left as it is: each sandbox sets its own RLIMIT_AS (soft = hard = --memory) between
fork and exec, which needs the hard limit above it.

A MemoryError in the parent while one student is graded is that student's internal error, with
a message naming the ceiling (grading/student.py); the other students are graded.
"""

import contextlib
import resource
from collections.abc import Iterator

GB = 2**30
BASE_BUDGET = 3 * GB  # the parent's own growth while grading a class: ~0.3-0.5 GB measured
PER_WORKER = GB // 2  # each worker thread: its stack, a malloc arena, one student's answers


def default_budget(workers: int) -> int:
    return BASE_BUDGET + max(1, int(workers)) * PER_WORKER


def mapped_bytes() -> int:
    """The process's address space now (VmSize), or 0 where /proc cannot say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@contextlib.contextmanager
def memory_ceiling(budget: int) -> Iterator[int | None]:
    """Hold the soft RLIMIT_AS at mapped_bytes() + budget (never above the hard limit); yields
    the ceiling in bytes, or None where it could not be set."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = mapped_bytes() + int(budget)
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    if soft != resource.RLIM_INFINITY and soft <= ceiling:
        yield soft  # already lower: keep it
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    except (ValueError, OSError):
        yield None
        return
    try:
        yield ceiling
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def describe(ceiling: int | None) -> str:
    return f"{ceiling / GB:.1f} GB" if ceiling else "its limit"
