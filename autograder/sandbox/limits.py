"""The limits of one sandbox: time, CPU, memory, processes, file and tmpfs sizes.

Limits holds the numbers; preexec applies the per-process ones (rlimits) and attaches the
cgroup that holds the per-sandbox ones (cgroups.py); budget is the sandbox's overall deadline.

Time limits are CPU seconds of the sandbox (the driver charges each cell to them); the wall clock
is a backstop of wall_factor times each limit, so a notebook slowed down by a busy machine is not
cut short, and one that sleeps still ends. bound_workers keeps workers x memory within the
machine's available memory.
"""

import resource
from dataclasses import dataclass

from .notices import warn_once


@dataclass
class Limits:
    timeout: float = 300.0  # CPU seconds for a notebook's own cells (the wall: wall_factor x)
    wall_factor: float = 2.0  # the wall-clock backstop of every time limit, as a multiple
    cpus: float = 1.0  # the cgroup's CPU cap (cpu.max / cfs quota); every sandbox the same weight
    memory_bytes: int = 6 * 2**30  # RLIMIT_AS of every process in the sandbox
    # the cgroup's cap on all processes of the sandbox together (RAM + its tmpfs pages);
    # None: the same as memory_bytes
    sandbox_memory_bytes: int | None = None
    processes: int = 512  # pids.max of the cgroup, else RLIMIT_NPROC of the sandbox's uid
    file_bytes: int = 256 * 2**20  # RLIMIT_FSIZE: the largest file a notebook may write
    startup_seconds: float = 60.0  # per kernel start (wall clock, times wall_factor)
    tmp_bytes: int = 512 * 2**20  # size of the sandbox's /tmp (a tmpfs)
    shm_bytes: int = 64 * 2**20  # size of its /dev/shm (a tmpfs)
    home_bytes: int = 128 * 2**20  # size of its $HOME (a tmpfs)
    submission_bytes: int = 256 * 2**20  # room to write in its copy of the folder (a tmpfs)
    answers_bytes: int = 256 * 2**20  # its answers folder (a tmpfs, copied out after the run)
    status_bytes: int = 8 * 2**20  # its status folder (likewise)
    log_bytes: int = 256 * 2**10  # of the sandbox's stdout/stderr: this much head and tail kept
    # -- the time budgets and slacks beside `timeout` (docs/grader.md, "Time limits", one table)
    request_wall_factor: float = 4.0  # a request's wall backstop: this x its CPU seconds (serve)
    starved_wall_factor: float = 4.0  # a starved notebook's re-run: wall_factor x this
    serve_base_seconds: float = 10.0  # a graded name's serve cell: this + its requests' seconds
    serve_prelude_seconds: float = 30.0  # CPU s for the cell that loads the harness
    quiet_cell_seconds: float = 10.0  # wall s for the driver's uncharged cells (the watch)
    recover_cpu_seconds: float = 10.0  # after a timeout, the kernel answers a probe cell within
    recover_wall_seconds: float = 30.0  # ... these (CPU s; wall s x wall_factor)
    budget_slack_seconds: float = 45.0  # per notebook in the sandbox's whole budget: start, stop

    def driver_times(self):
        """The budgets the sandbox's driver applies, as job.json carries them."""
        return {
            "request_wall_factor": self.request_wall_factor,
            "serve_prelude_seconds": self.serve_prelude_seconds,
            "quiet_cell_seconds": self.quiet_cell_seconds,
            "recover_cpu_seconds": self.recover_cpu_seconds,
            "recover_wall_seconds": self.recover_wall_seconds,
        }

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
        return tree.create(limits.processes, limits.cgroup_memory, limits.cpus)
    except OSError as exc:
        warn_once(
            "cgroup-create",
            f"could not create a cgroup for a sandbox ({exc}); this sandbox and later ones "
            "may run without per-sandbox caps.",
        )
        return None


def budget(limits, pending):
    """Wall-clock seconds the whole sandbox may take for the NotebookJobs `pending`: every
    limit's backstop, and some room for starting and stopping."""
    lim = limits
    per_job = lim.timeout + lim.startup_seconds + lim.budget_slack_seconds
    return sum(
        (per_job + sum(j.serve_seconds.values())) * (j.wall_factor or lim.wall_factor)
        for j in pending
    )


def cpu_clock(cgroup, own_pid_namespace):
    """How the driver measures the sandbox's CPU time (driver.CpuClock)."""
    if own_pid_namespace:
        return {"kind": "namespace"}
    found = cgroup.cpu_usage_file() if cgroup is not None else None
    if found:
        return {"kind": "cgroup", "path": found[0], "unit": found[1]}
    return {"kind": "process"}


def warn_about_cpu(tree):
    """Once: where the sandboxes have cgroups but no cpu controller (no CPU cap)."""
    if tree is not None and not tree.cpu_capped:  # no cgroup at all: isolation warns
        warn_once(
            "cpu",
            f"the cgroup cpu controller is not available ({tree.describe()}): sandboxes share "
            "the CPU without a cap, so a student with many busy processes slows the others "
            "down (their time limits still count CPU time only).",
        )


def available_memory():
    """Bytes of memory the machine can give now (MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bound_workers(workers, limits, available=None):
    """(workers, message or ""): at most as many sandboxes as the machine's available memory
    holds at their cap each (at least one)."""
    available = available_memory() if available is None else available
    if not available or workers <= 1:
        return workers, ""
    fits = max(1, int(available // limits.cgroup_memory))
    if fits >= workers:
        return workers, ""
    gib = limits.cgroup_memory / 2**30
    return fits, (
        f"--workers {workers} x {gib:g} GB per sandbox is more than this machine's "
        f"{available / 2**30:.1f} GB of available memory: grading with {fits} worker(s). "
        "Lower --memory to run more at once."
    )
