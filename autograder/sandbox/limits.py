"""The limits of one sandbox: time, CPU, memory, processes, file and tmpfs sizes.

Limits holds the numbers; preexec applies the per-process ones (rlimits) and attaches the
cgroup that holds the per-sandbox ones (cgroups.py); budget is the sandbox's overall deadline.

Time limits are CPU seconds of the sandbox (the driver charges each cell to them, read from the
sandbox's cgroup where there is one); the wall clock is a backstop of each limit plus a small
fixed allowance for waiting (wall_factor x the CPU seconds + idle_seconds), so a notebook that
sleeps or waits ends soon after its CPU budget would have, and one slowed down by a busy machine
is run again with a far wall (the starvation rule, starvation.py: starved_wall_factor).
Each notebook has two CPU budgets, one for its own cells and one shared by all of its hidden tests
(notebook_budgets), each with its wall budget; a sandbox (one student) has the sum of its
notebooks' budgets and slacks, in CPU (cpu_budget, enforced by the grading parent from the
cgroup) and on the wall (budget). bound_workers keeps workers x memory within the
machine's available memory.
"""

import resource
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .cgroups import Cgroup, Tree
from .notices import warn_once


class Pending(Protocol):
    """What the budgets read of a NotebookJob (sandbox/__init__.py)."""

    @property
    def stem(self) -> str: ...
    @property
    def serve_seconds(self) -> Mapping[str, float]: ...
    @property
    def wall_factor(self) -> float | None: ...


@dataclass
class Limits:
    timeout: float = 300.0  # CPU seconds for a notebook's own cells (the wall: wall_seconds),
    # and at most as much for all of its hidden tests together (notebook_budgets)
    # {stem: CPU seconds} of a notebook's cells, and of its hidden tests together, derived from
    # the self-test's measurement (grading/selftest.py, derive): when set, each notebook gets its
    # own figures instead of `timeout`
    measured: dict[str, float] = field(default_factory=dict)
    measured_tests: dict[str, float] = field(default_factory=dict)
    timeout_given: bool = True  # False: `timeout` is the static default, measured figures win
    wall_factor: float = 1.0  # the wall-clock backstop of every time limit: this x its CPU s
    idle_seconds: float = 15.0  # ... plus these wall seconds (sleeping, waiting) per budget
    cpus: float = 1.0  # the cgroup's CPU cap (cpu.max / cfs quota); every sandbox the same weight
    memory_bytes: int = 6 * 2**30  # RLIMIT_AS of every process in the sandbox
    # the cgroup's cap on all processes of the sandbox together (RAM + its tmpfs pages);
    # None: the same as memory_bytes
    sandbox_memory_bytes: int | None = None
    processes: int = 512  # pids.max of the cgroup, else RLIMIT_NPROC of the sandbox's uid
    file_bytes: int = 256 * 2**20  # RLIMIT_FSIZE: the largest file a notebook may write
    startup_seconds: float = 120.0  # per kernel start (wall clock, times wall_factor)
    tmp_bytes: int = 512 * 2**20  # size of the sandbox's /tmp (a tmpfs)
    shm_bytes: int = 64 * 2**20  # size of its /dev/shm (a tmpfs)
    home_bytes: int = 128 * 2**20  # size of its $HOME (a tmpfs)
    submission_bytes: int = 256 * 2**20  # room to write in its copy of the folder (a tmpfs)
    answers_bytes: int = 256 * 2**20  # its answers folder (a tmpfs, copied out after the run)
    status_bytes: int = 8 * 2**20  # its status folder (likewise)
    log_bytes: int = 256 * 2**10  # of the sandbox's stdout/stderr: this much head and tail kept
    # -- the time budgets and slacks beside `timeout` (docs/grader.md, "Time limits", one table)
    request_wall_factor: float = 4.0  # a request's wall backstop: this x its CPU seconds (serve)
    starved_wall_factor: float = 4.0  # a starved notebook's re-run: wall_factor x at least this,
    starved_wall_most: float = 25.0  # ... 2 / the share of a CPU its first run got, at most this
    serve_base_seconds: float = 10.0  # a graded name's serve cell: this + its requests' seconds
    serve_prelude_seconds: float = 30.0  # CPU s for the cell that loads the harness
    quiet_cell_seconds: float = 10.0  # wall s for the driver's uncharged cells (the watch)
    recover_cpu_seconds: float = 10.0  # after a timeout, the kernel answers a probe cell within
    recover_wall_seconds: float = 60.0  # ... these (CPU s; wall s x wall_factor)
    budget_slack_seconds: float = 45.0  # per notebook in the sandbox's whole budget: start, stop
    # per notebook in the sandbox's whole CPU budget (cpu_budget): the kernel's start, the
    # harness's prelude and probe cells, the watchdog's grace; past it the parent kills
    cpu_slack_seconds: float = 30.0
    grace_cpu_seconds: float = 5.0  # after the watchdog's SIGINT: CPU s before SIGKILL
    grace_wall_seconds: float = 120.0  # ... or these wall seconds (a wait deaf to signals)
    iopub_seconds: float = 4.0  # after a cell: wall s for the kernel's last output messages
    zygote_stop_seconds: float = 5.0  # at the driver's end: wall s for the zygote to exit
    output_stop_seconds: float = 2.0  # ... and for the sandbox's output (OutputCap) to end
    handshake_slack_seconds: float = 30.0  # the driver's mounts ready: startup_seconds + this
    drain_join_seconds: float = 30.0  # after a sandbox: wait this long for the end of its output
    # the self-test's measured budgets (derive): this x the solutions' CPU seconds of a
    # notebook's cells, and of its tests, each never less than the floor. 3 = the seed sweep's
    # margin (notebook 06's hidden tests cost up to 1.53x under 30 other seeds than under the
    # self-test's) times the CPU seconds' growth on a busy machine (load 14 on 2 cores: 2x at
    # 2 budgets lost honest students points; docs/grader.md, "Time limits"); the floor covers a
    # cell's fixed costs: the cheapest notebooks' cells and tests, fixed costs included, cost
    # 0.03-0.11 CPU-s (docs/maintainers.md, "Performance"), so half a second is over four times
    # them, where 1 s let a budget-maxer spend ten to thirty times what they need. A right answer slower than ours (loops, its own helpers, a BPE ten
    # times slower than ours on grading's 10,000 characters) draws on the spare seconds below.
    measured_factor: float = 3.0
    measured_floor_seconds: float = 0.5
    # CPU seconds one sandbox (one student) may spend beyond its notebooks' budgets, in all: a
    # budget that runs out draws on what is left of them before its cell or test is stopped. A
    # right answer slower than the solutions (a student's BPE several times slower than ours,
    # anywhere in the course) still finishes, and an endless loop spends the spare once, not in
    # every notebook: the room the floor used to give each budget, given once per student
    # (a budget-maxer's cost is the sum of the budgets plus this, benchmarks/class_cost.py).
    spare_cpu_seconds: float = 6.0
    # wall seconds one sandbox (one student) may spend asleep, in all: neither on a CPU nor
    # waiting for one (time.sleep, input(), a lock), read from its threads' schedstat by the
    # driver (inside/driver.py, Asleep). Once spent, a budget stops after a second asleep: code
    # that sleeps in every notebook holds a worker for these seconds once, not for each
    # budget's idle allowance. A busy machine's waiting is never counted; without schedstat
    # (or the sandbox's own pid namespace) each budget keeps idle_seconds alone.
    asleep_seconds: float = 10.0

    def driver_times(self) -> dict[str, float]:
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
            "zygote_stop_seconds": self.zygote_stop_seconds,
            "output_stop_seconds": self.output_stop_seconds,
            "idle_seconds": self.idle_seconds,
            "spare_cpu_seconds": self.spare_cpu_seconds,
            "asleep_seconds": self.asleep_seconds,
        }

    def wall_seconds(self, cpu_seconds: float, factor: float | None = None) -> float:
        """The wall-clock backstop of a budget of `cpu_seconds` (the driver's Run.wall)."""
        return cpu_seconds * (factor or self.wall_factor) + self.idle_seconds

    def notebook_budgets(
        self, stem: str, serve_seconds: Mapping[str, float]
    ) -> tuple[float, float]:
        """(CPU s of the notebook's cells, CPU s of all its hidden tests together): the measured
        figure of the notebook when there is one and --timeout was not given, else `timeout`;
        the tests never more than the sum of their names' own budgets (serve_seconds)."""
        cells = tests = self.timeout
        if not self.timeout_given and stem in self.measured:
            cells = float(self.measured[stem])
            tests = float(self.measured_tests.get(stem, cells))
        return cells, min(tests, float(sum(serve_seconds.values())))

    def derive(
        self,
        cpu_per_notebook: Mapping[str, float],
        cells_per_notebook: Mapping[str, float] | None = None,
    ) -> dict[str, tuple[float, float]]:
        """Use the self-test's measured CPU seconds of the solutions, per notebook (all of it,
        and of its cells alone when measured): the notebook's cells get measured_factor x their
        figure, and its tests together as much of theirs (each at least the floor), unless
        --timeout was given. Without the cells' figure, both get measured_factor x the whole.
        Returns {stem: (cells, tests)} (empty when --timeout wins)."""
        if self.timeout_given:
            return {}

        def scaled(cpu: float) -> float:
            return round(max(self.measured_floor_seconds, self.measured_factor * float(cpu)), 1)

        cells_per_notebook = cells_per_notebook or {}
        self.measured, self.measured_tests = {}, {}
        for stem, cpu in cpu_per_notebook.items():
            cells = cells_per_notebook.get(stem)
            if cells is None or not 0 <= cells <= cpu:
                self.measured[stem] = self.measured_tests[stem] = scaled(cpu)
            else:
                self.measured[stem] = scaled(cells)
                self.measured_tests[stem] = scaled(cpu - cells)
        return {stem: (self.measured[stem], self.measured_tests[stem]) for stem in self.measured}

    @property
    def cgroup_memory(self) -> int:
        return self.sandbox_memory_bytes or self.memory_bytes


def preexec(limits: Limits, cgroup: Cgroup | None, cpu_seconds: float | None = None) -> None:
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


def make_cgroup(tree: Tree | None, limits: Limits) -> Cgroup | None:
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


def budget(limits: Limits, pending: Iterable[Pending]) -> float:
    """Wall-clock seconds the whole sandbox may take for the NotebookJobs `pending`: each
    notebook's two budgets (cells, tests) and its start-up, times the wall factor, each budget's
    idle allowance, and some room for starting and stopping; and the spare CPU seconds once."""
    lim = limits
    total = 0.0
    for j in pending:
        cells, tests = lim.notebook_budgets(j.stem, j.serve_seconds)
        per_job = cells + tests + lim.startup_seconds + lim.budget_slack_seconds
        total += per_job * (j.wall_factor or lim.wall_factor) + 2 * lim.idle_seconds
    factors = [j.wall_factor or lim.wall_factor for j in pending]
    return total + lim.spare_cpu_seconds * max(factors, default=0.0)


def cpu_budget(limits: Limits, pending: Iterable[Pending]) -> float:
    """CPU seconds the whole sandbox may use for the NotebookJobs `pending` (every process of it,
    read from its cgroup by the parent): each notebook's two budgets and a slack, and the spare
    seconds all its notebooks share (spare_cpu_seconds), once."""
    lim = limits
    jobs = list(pending)
    spare = lim.spare_cpu_seconds if jobs else 0.0
    return spare + sum(
        sum(lim.notebook_budgets(j.stem, j.serve_seconds)) + lim.cpu_slack_seconds for j in jobs
    )


def cpu_clock(
    cgroup: Cgroup | None, own_pid_namespace: bool, fd: int | None = None
) -> dict[str, str | int | float]:
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


def warn_about_cpu(tree: Tree | None) -> None:
    """Once: where the sandboxes have cgroups but no cpu controller (no CPU cap)."""
    if tree is not None and not tree.cpu_capped:  # no cgroup at all: isolation warns
        warn_once(
            "cpu",
            f"the cgroup cpu controller is not available ({tree.describe()}): sandboxes share "
            "the CPU without a cap, so a student with many busy processes slows the others "
            "down (their time limits still count CPU time only).",
        )


def available_memory() -> int | None:
    """Bytes of memory the machine can give now (MemAvailable), or None."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def bound_workers(workers: int, limits: Limits, available: float | None = None) -> tuple[int, str]:
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
