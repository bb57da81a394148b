"""The limits of one sandbox: time, CPU, memory, processes, file and tmpfs sizes.

Limits holds the numbers; preexec applies the per-process ones (rlimits) and attaches the
cgroup that holds the per-sandbox ones (cgroups.py); budget is the sandbox's overall deadline.

Time limits are CPU seconds of the sandbox (the driver charges each cell to them, read from the
sandbox's cgroup where there is one); the wall clock is a backstop of wall_factor times each limit,
so a notebook slowed down by a busy machine is not cut short, and one that sleeps still ends.
Each notebook has two CPU budgets, one for its own cells and one shared by all of its hidden tests
(notebook_budgets), each with a wall budget of wall_factor times as much; a sandbox (one student)
has the sum of its notebooks' budgets and slacks, in CPU (cpu_budget, enforced by the grading
parent from the cgroup) and on the wall (budget). bound_workers keeps workers x memory within the
machine's available memory.
"""

import resource
from dataclasses import dataclass, field

from .notices import warn_once


@dataclass
class Limits:
    timeout: float = 300.0  # CPU seconds for a notebook's own cells (the wall: wall_factor x),
    # and at most as much for all of its hidden tests together (notebook_budgets)
    # {stem: CPU seconds} measured by the self-test (grading/selftest.py, derived_budgets): when
    # set, each notebook's cells and tests get its own figure instead of `timeout`
    measured: dict = field(default_factory=dict)
    timeout_given: bool = True  # False: `timeout` is the static default, measured figures win
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
    # per notebook in the sandbox's whole CPU budget (cpu_budget): the kernel's start, the
    # harness's prelude and probe cells, the watchdog's grace; past it the parent kills
    cpu_slack_seconds: float = 30.0
    grace_cpu_seconds: float = 5.0  # after the watchdog's SIGINT: CPU s before SIGKILL
    grace_wall_seconds: float = 120.0  # ... or these wall seconds (a wait deaf to signals)
    iopub_seconds: float = 4.0  # after a cell: wall s for the kernel's last output messages
    zygote_ready_seconds: float = 40.0  # a warm kernel's waiter: wall s for the zygote to answer
    zygote_stop_seconds: float = 5.0  # at the driver's end: wall s for the zygote to exit
    output_stop_seconds: float = 2.0  # ... and for the sandbox's output (OutputCap) to end
    handshake_slack_seconds: float = 30.0  # the driver's mounts ready: startup_seconds + this
    drain_join_seconds: float = 30.0  # after a sandbox: wait this long for the end of its output
    # the self-test's measured budgets (derived_budgets): this x the solutions' CPU seconds of a
    # notebook (cells and tests), and never less than the floor
    measured_factor: float = 10.0
    measured_floor_seconds: float = 10.0

    def driver_times(self):
        """The budgets the sandbox's driver applies, as job.json carries them."""
        return {
            "request_wall_factor": self.request_wall_factor,
            "serve_prelude_seconds": self.serve_prelude_seconds,
            "quiet_cell_seconds": self.quiet_cell_seconds,
            "recover_cpu_seconds": self.recover_cpu_seconds,
            "recover_wall_seconds": self.recover_wall_seconds,
            "grace_cpu_seconds": self.grace_cpu_seconds,
            "grace_wall_seconds": self.grace_wall_seconds,
            "iopub_seconds": self.iopub_seconds,
            "zygote_ready_seconds": self.zygote_ready_seconds,
            "zygote_stop_seconds": self.zygote_stop_seconds,
            "output_stop_seconds": self.output_stop_seconds,
        }

    def notebook_budgets(self, stem, serve_seconds):
        """(CPU s of the notebook's cells, CPU s of all its hidden tests together): the measured
        figure of the notebook when there is one and --timeout was not given, else `timeout`;
        the tests never more than the sum of their names' own budgets (serve_seconds)."""
        cells = self.timeout
        if not self.timeout_given and stem in self.measured:
            cells = float(self.measured[stem])
        return cells, min(cells, float(sum(serve_seconds.values())))

    def derive(self, cpu_per_notebook):
        """Use the self-test's measured CPU seconds of the solutions, per notebook: each
        notebook's budget becomes measured_factor x its figure (at least the floor), unless
        --timeout was given. Returns the budgets (empty when --timeout wins)."""
        if self.timeout_given:
            return {}
        self.measured = {
            stem: round(max(self.measured_floor_seconds, self.measured_factor * float(cpu)), 1)
            for stem, cpu in cpu_per_notebook.items()
        }
        return dict(self.measured)

    @property
    def cgroup_memory(self):
        return self.sandbox_memory_bytes or self.memory_bytes


def preexec(limits, cgroup, cpu_seconds=None):
    """In the child between fork and exec (plain syscalls only): cgroup first, then rlimits.
    Without a cgroup (nothing then counts the sandbox's processes together), every process of
    the sandbox is also held to `cpu_seconds`, the whole sandbox's CPU budget (RLIMIT_CPU)."""
    if cgroup is not None:
        cgroup.attach_self()
    lim = limits
    rlimits = [
        (resource.RLIMIT_AS, lim.memory_bytes),
        (resource.RLIMIT_NPROC, lim.processes),
        (resource.RLIMIT_FSIZE, lim.file_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if cgroup is None and cpu_seconds:
        rlimits.append((resource.RLIMIT_CPU, int(cpu_seconds) + 1))
    for which, value in rlimits:
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
    """Wall-clock seconds the whole sandbox may take for the NotebookJobs `pending`: each
    notebook's two budgets (cells, tests) and its start-up, times the wall factor, and some room
    for starting and stopping."""
    lim = limits
    total = 0.0
    for j in pending:
        cells, tests = lim.notebook_budgets(j.stem, j.serve_seconds)
        per_job = cells + tests + lim.startup_seconds + lim.budget_slack_seconds
        total += per_job * (j.wall_factor or lim.wall_factor)
    return total


def cpu_budget(limits, pending):
    """CPU seconds the whole sandbox may use for the NotebookJobs `pending` (every process of it,
    read from its cgroup by the parent): each notebook's two budgets and a slack."""
    lim = limits
    return sum(
        sum(lim.notebook_budgets(j.stem, j.serve_seconds)) + lim.cpu_slack_seconds for j in pending
    )


def cpu_clock(cgroup, own_pid_namespace, fd=None):
    """How the driver measures the sandbox's CPU time (driver.CpuClock): the sandbox's cgroup
    (every process it ever had, reaped or not), through `fd` (its accounting file opened by the
    parent, read-only, passed into the sandbox) or its path; else, in the sandbox's own pid
    namespace, every process of it (a child whose parent ignores SIGCHLD is not counted once it
    has ended); else the driver's own descendants."""
    found = cgroup.cpu_usage_file() if cgroup is not None else None
    if found and fd is not None:
        return {"kind": "cgroup-fd", "fd": fd, "unit": found[1]}
    if found and not own_pid_namespace:
        return {"kind": "cgroup", "path": found[0], "unit": found[1]}
    if own_pid_namespace:
        return {"kind": "namespace"}
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
