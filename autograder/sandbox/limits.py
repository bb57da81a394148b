"""The limits of one sandbox: time, memory, processes, file and tmpfs sizes.

Limits holds the numbers; preexec applies the per-process ones (rlimits) and attaches the
cgroup that holds the per-sandbox ones (cgroups.py); budget is the sandbox's overall deadline.
"""

import resource
from dataclasses import dataclass

from .notices import warn_once


@dataclass
class Limits:
    timeout: float = 300.0  # wall-clock seconds for a notebook's own cells
    memory_bytes: int = 6 * 2**30  # RLIMIT_AS of every process in the sandbox
    # the cgroup's cap on all processes of the sandbox together (RAM + its tmpfs pages);
    # None: the same as memory_bytes
    sandbox_memory_bytes: int | None = None
    processes: int = 512  # pids.max of the cgroup, else RLIMIT_NPROC of the sandbox's uid
    file_bytes: int = 256 * 2**20  # RLIMIT_FSIZE: the largest file a notebook may write
    startup_seconds: float = 60.0  # per kernel start
    tmp_bytes: int = 512 * 2**20  # size of the sandbox's /tmp (a tmpfs)
    shm_bytes: int = 64 * 2**20  # size of its /dev/shm (a tmpfs)
    home_bytes: int = 128 * 2**20  # size of its $HOME (a tmpfs)
    submission_bytes: int = 256 * 2**20  # room to write in its copy of the folder (a tmpfs)
    answers_bytes: int = 256 * 2**20  # its answers folder (a tmpfs, copied out after the run)
    status_bytes: int = 8 * 2**20  # its status folder (likewise)
    log_bytes: int = 256 * 2**10  # of the sandbox's stdout/stderr: this much head and tail kept

    @property
    def cgroup_memory(self):
        return self.sandbox_memory_bytes or self.memory_bytes


def preexec(limits, cgroup):
    """In the child between fork and exec (plain syscalls only): cgroup first, then rlimits."""
    if cgroup is not None:
        cgroup.attach_self()
    lim = limits
    for which, value in (
        (resource.RLIMIT_AS, lim.memory_bytes),
        (resource.RLIMIT_NPROC, lim.processes),
        (resource.RLIMIT_FSIZE, lim.file_bytes),
        (resource.RLIMIT_CORE, 0),
    ):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass


def make_cgroup(tree, limits):
    """A new cgroup for one sandbox in `tree` (cgroups.find_tree), or None (warned once)."""
    if tree is None:
        return None
    try:
        return tree.create(limits.processes, limits.cgroup_memory)
    except OSError as exc:
        warn_once(
            "cgroup-create",
            f"could not create a cgroup for a sandbox ({exc}); this sandbox and later ones "
            "may run without per-sandbox caps.",
        )
        return None


def budget(limits, pending):
    """Wall-clock seconds the whole sandbox may take for the NotebookJobs `pending`."""
    lim = limits
    return sum(
        lim.timeout + lim.startup_seconds + 45 + sum(j.serve_seconds.values()) for j in pending
    )
