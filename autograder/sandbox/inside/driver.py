"""Runs INSIDE the sandbox: execute a student's notebooks, then let the harness answer the requests.

    python driver.py [--as UID:GID] JOB.json

This file is copied into the sandbox on its own; it imports only the standard library (and
nbformat and nbclient for a cold kernel; never `autograder`). It decides nothing: it runs cells,
records what went wrong (cell errors, timeouts, a dead kernel) as plain data in
STATUS_DIR/<stem>.json, and the trusted parent turns that into messages and scores.

Per notebook: a fresh IPython kernel; every code cell in order with allow_errors (a cell that
raises is recorded and the next one runs); the notebook's cells share one time budget; then
one extra cell per graded name calls the harness's serve() on that name's requests, with its own
time limit. Only error outputs are kept: whatever a notebook prints is dropped, so a flood of
output cannot fill memory or disk.

Time limits are charged to the sandbox's own CPU time (CpuClock, Watchdog), not to the clock on
the wall: a notebook slowed down by other programs on a busy machine is not cut short. The wall
clock is only a backstop (job["wall_factor"] times each limit plus times["idle_seconds"]: Run.wall),
for code that sleeps or waits.

With --as, the driver starts as root of the sandbox's own user namespace holding only
CAP_SETUID/CAP_SETGID (see userns.py) and, before importing anything else, becomes UID:GID with
no supplementary groups, which clears every capability: nothing it starts can get them back.

With --cap-tmpfs PATH=BYTES (repeated; only where bubblewrap is older than 0.7.0 and has no
--size, bubblewrap.py), the driver first remounts each of those tmpfs mounts with that size,
holding CAP_SYS_ADMIN and CAP_SETPCAP of the sandbox for that alone, checks the new size, and
then drops every capability (the bounding set, then, after --as if given, the ambient,
effective, permitted and inheritable sets, checked in /proc/self/status) before anything else
runs. A mount it cannot cap ends the sandbox:
nothing runs on an uncapped tmpfs.
"""

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from typing import Any


def _drop_to(spec: str) -> None:
    uid_text, _, gid_text = spec.partition(":")
    uid, gid = int(uid_text), int(gid_text or uid_text)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getgroups():  # never run on as root
        raise SystemExit("driver: could not drop to the sandbox's uid")


MS_NOSUID, MS_NODEV, MS_REMOUNT = 0x2, 0x4, 0x20  # bubblewrap mounts its tmpfs nosuid, nodev
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPABILITY_V3 = 0x20080522


def _cap_tmpfs(specs: list[str]) -> None:
    """Remount each PATH=BYTES tmpfs with size=BYTES (bubblewrap < 0.7.0 has no --size)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for spec in specs:
        path, _, size_text = spec.rpartition("=")
        size = int(size_text)
        flags = MS_REMOUNT | MS_NOSUID | MS_NODEV
        if libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, f"size={size}".encode()) != 0:
            error = os.strerror(ctypes.get_errno())
            raise SystemExit(f"driver: could not cap the size of the tmpfs {path}: {error}")
        info = os.statvfs(path)
        if info.f_blocks * info.f_frsize > size + info.f_frsize:  # size is rounded up to a page
            raise SystemExit(f"driver: the tmpfs {path} is still larger than {size} bytes")


def _drop_bounding_set() -> None:
    """No capability can come back through an exec (CAP_SETPCAP, held for this, is needed)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # past the last capability: EINVAL, ignored


def _clear_capabilities() -> None:
    """Ambient, effective, permitted and inheritable sets emptied."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_V3, 0)
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        raise SystemExit("driver: could not drop its capabilities")


def _capabilities_left() -> list[str]:
    """The capability sets of this process that are not empty (from /proc/self/status)."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if line.startswith("Cap"))
    return [k for k in ("CapInh", "CapPrm", "CapEff", "CapAmb") if int(fields.get(k, "0"), 16)]


if __name__ == "__main__":
    _capped = []
    while sys.argv[1:2] == ["--cap-tmpfs"]:
        _capped.append(sys.argv[2])
        del sys.argv[1:3]
    if _capped:
        _cap_tmpfs(_capped)
        _drop_bounding_set()
    if sys.argv[1:2] == ["--as"]:
        _drop_to(sys.argv[2])
        del sys.argv[1:3]
    if _capped:
        _clear_capabilities()
        if _capabilities_left():
            raise SystemExit(f"driver: capabilities left after capping: {_capabilities_left()}")

import contextlib  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

# jsonschema imports rfc3987_syntax, which compiles a grammar for seconds at import time, and
# optional format checkers (arrow, isoduration, ...); the driver never validates formats, so they
# are blocked here (this process only; jsonschema skips a checker whose import fails).
BLOCKED_IMPORTS = (
    "rfc3987_syntax",
    "isoduration",
    "arrow",
    "fqdn",
    "uri_template",
    "webcolors",
    "rfc3339_validator",
    "rfc3986_validator",
    "jsonpointer",
)
for _optional in BLOCKED_IMPORTS:
    sys.modules.setdefault(_optional, None)  # type: ignore[arg-type]  # None blocks an import

# nbformat, nbclient and jupyter_client are imported only for a cold ipykernel kernel (no
# zygote: the grader's warm kernels turned off, `_cold_client`): the bare shell needs none of
# them, and importing them cost each student's sandbox about 0.3 CPU-s.


class CellTimeoutError(Exception):
    """A cell's time ran out (its CPU seconds, or the wall-clock backstop)."""


class DeadKernelError(Exception):
    """The kernel's process ended, or its answer was not the kernel's."""


class Node(dict):
    """A notebook's JSON with attribute access, as nbformat's NotebookNode gives it."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value) -> None:
        self[name] = value


def _node(value):
    if isinstance(value, dict):
        return Node((key, _node(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_node(item) for item in value]
    return value


def read_notebook(path) -> Node:
    """The notebook at `path` (version 4, as the parent wrote it with nbformat) as Nodes, each
    cell's source one string, as nbformat.read gives it."""
    with open(path, encoding="utf-8") as file:
        nb = _node(json.load(file))
    if nb.get("nbformat") != 4:
        raise ValueError(f"not a version 4 notebook: {path}")
    for cell in nb.get("cells", []):
        if isinstance(cell.get("source"), list):
            cell.source = "".join(cell.source)
    return nb


def new_code_cell(source: str) -> Node:
    return Node(cell_type="code", source=source, metadata=Node(), outputs=[], execution_count=None)


def error_output(ename: object, evalue: object) -> Node:
    """A cell's error as the driver keeps it: its name and message, shortened; no traceback."""
    return Node(output_type="error", ename=_short(ename, 100), evalue=_short(evalue), traceback=[])


ZYGOTE = Path(__file__).resolve().with_name("zygote.py")

SERVE_PRELUDE = """\
def __autograder_load_harness(path):
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location(
        "__autograder_harness__", path + "/__init__.py", submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules["__autograder_harness__"] = module
    spec.loader.exec_module(module)
    return module.serve
__autograder_serve__ = __autograder_load_harness({harness!r})
del __autograder_load_harness
"""

SERVE_CELL = "__autograder_serve__(globals(), {requests!r}, {responses!r}, {wall_factor!r})"

# the harness's watch.py, loaded on its own (no numpy import) before the notebook's first cell,
# and asked after its last one what it saw (autograder/integrity.py): hints for a human only
WATCH_CELL = """\
def __autograder_watch(path):
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("__autograder_watch__", path + "/watch.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["__autograder_watch__"] = module
    spec.loader.exec_module(module)
    module.install()
__autograder_watch({harness!r})
del __autograder_watch
"""
FACTS_CELL = "__import__('sys').modules['__autograder_watch__'].facts()"
INTEGRITY_TOKENS = ("answers-looked-up", "comparison-patched")  # autograder/integrity.py

MAX_MESSAGE = 400
# The driver's own budgets, sent by the grader in job["times"] (Limits' fields of these names,
# docs/grader.md's table); these defaults, for a job without them, equal Limits' defaults
# (tests/sandbox/test_inside_constants.py). After a timeout, the kernel must answer a probe cell within
# recover_cpu_seconds of CPU and recover_wall_seconds x wall_factor of wall clock.
TIMES = {
    "request_wall_factor": 4.0,
    "serve_prelude_seconds": 30.0,
    "quiet_cell_seconds": 10.0,
    "recover_cpu_seconds": 10.0,
    "recover_wall_seconds": 60.0,
    "grace_cpu_seconds": 5.0,
    "grace_wall_seconds": 120.0,
    "iopub_seconds": 4.0,
    "zygote_stop_seconds": 5.0,
    "output_stop_seconds": 2.0,
    "idle_seconds": 15.0,
    "spare_cpu_seconds": 6.0,
    "asleep_seconds": 10.0,
}
LOG_BYTES = 256 * 2**10  # Limits.log_bytes: of the sandbox's output, this much head and tail
TICKS = os.sysconf("SC_CLK_TCK")


class CpuClock:
    """CPU seconds used so far by the sandbox (a running total: callers take differences).

    "cgroup-fd": the sandbox's cgroup's accounting file, opened read-only by the grading parent
    and passed in as a descriptor (the cgroup file system is not mounted in the sandbox);
    "cgroup": the same file by its path (without bubblewrap). The cgroup counts every process
    the sandbox ever had, so children that ended count, reaped or not (a kernel that sets
    SIGCHLD to SIG_IGN has its children reaped by the kernel, and their time reaches no one's
    cutime). Without a cgroup: "namespace", every process of the sandbox's own pid namespace,
    each one's own time plus that of the children it reaped; "process", the driver and every
    live process descended from it or in its session, likewise. In those two, a child whose
    parent ignores SIGCHLD is no longer counted once it ends (each process is then held to the
    sandbox's CPU budget by RLIMIT_CPU). An unreadable clock reads 0 (the wall budget still
    applies)."""

    def __init__(self, spec: dict | None) -> None:
        spec = spec or {}
        self.kind = spec.get("kind", "process")
        self.path, self.unit = spec.get("path"), float(spec.get("unit", 1e-6))
        self.fd = spec.get("fd")

    def __call__(self, pid: int = 0):
        if self.kind == "cgroup-fd":
            return _fd_cpu(self.fd, self.unit)
        if self.kind == "cgroup":
            return _file_cpu(self.path, self.unit)
        if self.kind == "namespace":
            return sum(_proc_cpu(entry) for entry in os.listdir("/proc") if entry.isdigit())
        return _tree_cpu(os.getpid())


def _fd_cpu(fd, unit: float):
    try:
        text = os.pread(int(fd), 4096, 0).decode("ascii", "replace")
    except (OSError, TypeError, ValueError):
        return 0.0
    return _parse_cpu(text, unit)


def _tree_cpu(root: int):
    """The CPU seconds of `root` and of every live process descended from it or in its session
    (its own time plus its reaped children's)."""
    parents, sessions, cpu = {}, {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        try:
            parents[int(entry)], sessions[int(entry)] = int(fields[1]), int(fields[3])
            cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / TICKS
        except (ValueError, IndexError):
            continue
    session = sessions.get(root)
    total = 0.0
    for pid in cpu:
        ancestor, steps = pid, 0
        while ancestor not in (root, 0, 1) and steps < 4096:
            ancestor, steps = parents.get(ancestor, 0), steps + 1
        if ancestor == root or (session is not None and sessions.get(pid) == session):
            total += cpu[pid]
    return total


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def _proc_cpu(pid: int | str) -> float:
    fields = _stat_fields(pid) or []  # none: 0.0, as before
    try:
        return sum(int(x) for x in fields[11:15]) / TICKS  # utime stime cutime cstime
    except (ValueError, TypeError, IndexError):
        return 0.0


def _file_cpu(path, unit: float) -> float:
    try:
        with open(path) as handle:
            text = handle.read(4096)
    except OSError:
        return 0.0
    return _parse_cpu(text, unit)


def _parse_cpu(text: str, unit):
    """cgroups.read_cpu_usage's reading of cpu.stat, cpuacct.usage or cpuacct.stat (0.0 for
    None; tests/sandbox/test_inside_constants.py pins the two together)."""
    ticks = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 1 and parts[0].isdigit():
            return int(parts[0]) * unit
        if len(parts) == 2 and parts[0] == "usage_usec" and parts[1].isdigit():
            return int(parts[1]) * unit
        if len(parts) == 2 and parts[0] in ("user", "system") and parts[1].isdigit():
            ticks = (ticks or 0) + int(parts[1])
    return 0.0 if ticks is None else ticks * unit


@dataclass(frozen=True)
class Paced:
    """A budget's wall backstop that grows with the CPU it spends: from `started` (monotonic) and
    `cpu_start` (the clock then), the wall may reach wall_factor x the larger of the budget's own
    CPU seconds and the CPU spent so far, plus `idle` seconds. The spare seconds' wall is thus
    given only to a budget that computes into them: code that sleeps gets its own budget's wall
    and its idle allowance, never the spare's."""

    started: float
    cpu_start: float
    own: float
    wall_factor: float
    idle: float

    def past(self, cpu_now: float) -> bool:
        spent = max(self.own, cpu_now - self.cpu_start)
        return time.monotonic() > self.started + self.wall_factor * spent + self.idle


def _lowered(pid: str, tid: str, own: int) -> bool:
    """cgroups.lowered_priority for a thread of this pid namespace: a nice value above the
    driver's own, or SCHED_BATCH / SCHED_IDLE (3, 5)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat", "rb") as handle:
            data = handle.read()
        fields = data[data.rfind(b")") + 2 :].split()
        return int(fields[16]) > own or int(fields[38]) in (3, 5)
    except (OSError, ValueError, IndexError):
        return False


def _run_queue_waits() -> tuple[dict[str, int], bool] | None:
    """{thread: nanoseconds spent runnable but waiting for a CPU} for every thread of this pid
    namespace (run_delay, /proc/TID/schedstat), and whether any of them lowered its own
    priority; None when no schedstat can be read."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    waits: dict[str, int] = {}
    lowered = False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                    waits[tid] = int(handle.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            lowered = lowered or _lowered(pid, tid, own)
    return (waits, lowered) if waits else None


class Asleep:
    """The seconds a student's code may spend asleep, for all of the student's notebooks
    together (Limits.asleep_seconds): time in which the sandbox neither ran on a CPU nor waited
    for one (time.sleep, input(), a lock, a pipe). Over each half second of a budget the driver
    counts the sandbox's CPU seconds and its threads' seconds on the run queue; when together
    they fill less than half of it, what they leave is asleep and is taken from the pool. Once
    the pool is spent, a budget is stopped after GRACE seconds asleep. A machine so busy that a
    notebook waits for a CPU is never taken for sleep (its threads are on the run queue), and
    nor is computing; a thread that lowered its own priority (which makes it wait longer) has
    its waiting not counted. Only in the sandbox's own pid namespace, where /proc holds the
    sandbox's threads alone; without schedstat the pool is off and each budget keeps its own
    idle allowance (Paced)."""

    INTERVAL = 0.5
    GRACE = 1.0
    SHARE = 0.5  # an interval is asleep when CPU and waiting fill less than this part of it

    def __init__(
        self, seconds: float, enabled: bool, read=_run_queue_waits, clock=time.monotonic
    ) -> None:
        self.left = max(0.0, float(seconds))
        self.read, self.clock = read, clock
        self.enabled = enabled and self.left > 0 and read() is not None
        self.used = 0.0  # in the budget now running
        self.total = 0.0  # in all budgets so far
        self._last: tuple[float, float, dict[str, int]] | None = None
        self._budget: object = None

    def begin(self, cpu: float, budget: object) -> None:
        """A cell of `budget` (its Paced: every cell of a budget shares one) starts now, with
        the sandbox's CPU clock at `cpu`; a new budget starts with nothing asleep in it."""
        if budget is not self._budget:
            self._budget, self.used = budget, 0.0
        read = self.read() if self.enabled else None
        self._last = (self.clock(), cpu, read[0]) if read else None

    def over(self, cpu: float) -> bool:
        """Take what the sandbox slept since the last look from the pool; True when the budget
        now running must stop (the pool spent, and GRACE seconds asleep in this budget)."""
        if self._last is None:
            return False
        now = self.clock()
        started, cpu_then, waits_then = self._last
        elapsed = now - started
        if elapsed < self.INTERVAL:
            return False
        read = self.read()
        if read is None:
            self._last = None
            return False
        waits, lowered = read
        self._last = (now, cpu, waits)
        waited = 0
        if not lowered:  # a thread that ended takes its count with it: counted as nothing
            waited = sum(max(0, n - waits_then.get(tid, 0)) for tid, n in waits.items())
        busy = max(0.0, cpu - cpu_then) + waited / 1e9
        if busy < self.SHARE * elapsed:
            asleep = elapsed - busy
            self.used += asleep
            self.total += asleep
            self.left -= asleep
        return self.left <= 0 and self.used >= self.GRACE

    def said(self) -> str:
        return (
            f"waited without computing (sleeping, or waiting for input or another process) for "
            f"longer than grading allows: {self.total:.0f} s asleep in all"
        )


class Watchdog:
    """Ends a cell that has used up its CPU seconds: SIGINT to the kernel, as an interrupt does;
    SIGKILL when it does not stop (nbclient then sees a dead kernel): when the sandbox has used
    GRACE_CPU more CPU seconds since the SIGINT (it kept computing: compiled code that never looks
    at signals), or GRACE_WALL seconds have passed (it waits on something that ignores them).
    Both are measured so that a busy machine, which slows a kernel's way out of the cell, never
    turns an interrupt into a kill."""

    GRACE_CPU = TIMES["grace_cpu_seconds"]  # Limits.grace_cpu_seconds, sent in job["times"]
    GRACE_WALL = TIMES["grace_wall_seconds"]  # Limits.grace_wall_seconds
    TICK = 0.25

    def __init__(
        self, clock: CpuClock, grace_cpu: float | None = None, grace_wall: float | None = None
    ) -> None:
        self.clock = clock
        self._grace = (grace_cpu, grace_wall)  # None: the class's (job["times"] sends both)
        self.lock = threading.Lock()
        self.armed: tuple[int, float] | None = None  # (kernel pid, CPU reading at which it fires)
        self.fired_at: float | None = None
        self.paced: Paced | None = None  # the wall backstop that grows with the CPU spent
        self.fired_on_wall = False  # the last firing was the paced wall backstop's
        self.asleep: Asleep | None = None  # the student's pool of seconds asleep (run_all)
        self.fired_asleep = False  # ... or the pool's, once spent
        threading.Thread(target=self._watch, daemon=True).start()

    @property
    def grace_cpu(self) -> float:
        return self.GRACE_CPU if self._grace[0] is None else float(self._grace[0])

    @property
    def grace_wall(self) -> float:
        return self.GRACE_WALL if self._grace[1] is None else float(self._grace[1])

    def arm(self, pid: int, cpu_seconds: float, paced: "Paced | None" = None) -> None:
        with self.lock:
            self.fired_at = None
            self.fired_on_wall = False
            self.fired_asleep = False
            self.paced = paced
            now = self.clock(pid)
            if paced is not None and self.asleep is not None:
                self.asleep.begin(now, paced)
            self.armed = (pid, now + cpu_seconds)

    @property
    def fired(self) -> bool:
        """True when the watchdog interrupted the cell now running (or the last one)."""
        with self.lock:
            return self.fired_at is not None

    def disarm(self) -> bool:
        """Stop watching; True if the limit was reached."""
        with self.lock:
            self.armed = None
            return self.fired_at is not None

    def _watch(self):
        while True:
            time.sleep(self.TICK)
            with self.lock:
                if self.armed is None:
                    continue
                pid, limit = self.armed
                used = self.clock(pid)
                if self.fired_at is None:
                    over_wall = self.paced is not None and self.paced.past(used)
                    asleep = self.asleep if self.paced is not None else None
                    over_asleep = asleep is not None and asleep.over(used)
                    if used >= limit or over_wall or over_asleep:
                        self.fired_at = time.monotonic()
                        self.fired_on_wall = used < limit
                        self.fired_asleep = over_asleep and not over_wall and used < limit
                        _signal_kernel(pid, signal.SIGINT)
                elif used >= limit + self.grace_cpu or (
                    time.monotonic() > self.fired_at + self.grace_wall
                ):
                    _signal_kernel(pid, signal.SIGKILL)
                    self.armed = None


def _kernel_pid(client: Any):
    """The pid of the kernel's process: the bare shell's, or the one jupyter_client launched
    (0 when it has none)."""
    if isinstance(client, LightClient):
        return client.pid
    return getattr(getattr(client.km, "provisioner", None), "pid", 0) or 0


def _signal_kernel(pid, signum: int) -> None:
    """Like jupyter_client's provisioner: the kernel's process group if it has its own."""
    try:
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, signum)
            return
        os.kill(pid, signum)
    except OSError:
        pass


def _short(text: object, limit: int = MAX_MESSAGE) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + " ..."


def _first_line(source) -> str:
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return _short(line.strip(), 80)
    return ""


def _released_demo(cell, index: int, spec):
    """A cell the parent found to be a released demonstration cell (autograder/demo_cells.py),
    still byte for byte as the parent read it."""
    wanted = spec.get("skip", {}).get(str(index))
    return wanted is not None and hashlib.sha256(cell.source.encode()).hexdigest() == wanted


def _cold_client(nb_path, **options):
    """(the notebook read by nbformat, an nbclient client for it): the cold path, a kernel that
    jupyter_client starts (no zygote). Its client keeps only error outputs (truncated) and counts
    the rest; while `captured` is a list, the plain-text results of the cells the driver itself
    runs are appended to it. nbclient's timeout and dead-kernel errors reach the driver as its
    own (CellTimeoutError, DeadKernelError), as the bare shell's do."""
    import nbclient.exceptions
    import nbformat
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    class QuietClient(NotebookClient):
        printed = 0
        captured: list[str] | None = None

        def output(self, outs, msg, display_id, cell_index):
            if msg["msg_type"] == "execute_result" and self.captured is not None:
                data = msg.get("content", {}).get("data", {})
                self.captured.append(str(data.get("text/plain", ""))[:2000])
                return None
            if msg["msg_type"] != "error":
                content = msg.get("content", {})
                self.printed += len(str(content.get("text", ""))) + len(
                    str(content.get("data", ""))
                )
                return None
            content = msg["content"]
            out = error_output(content.get("ename", "Error"), content.get("evalue", ""))
            if len(outs) < 3:
                outs.append(out)
            return out

        def execute_cell(self, cell, cell_index, *args, **kwargs):
            try:
                return super().execute_cell(cell, cell_index, *args, **kwargs)
            except nbclient.exceptions.CellTimeoutError as exc:
                raise CellTimeoutError(str(exc)) from exc
            except nbclient.exceptions.DeadKernelError as exc:
                raise DeadKernelError(str(exc)) from exc

        def interrupt_kernel(self) -> None:
            from nbclient.util import ensure_async, run_sync

            async def interrupt() -> None:
                assert self.km is not None  # the kernel has started: a cell ran
                await ensure_async(self.km.interrupt_kernel())

            run_sync(interrupt)()

    nb = nbformat.read(nb_path, as_version=4)
    return nb, QuietClient(nb, kernel_manager_class=AsyncKernelManager, **options)


class LightClient:
    """A notebook's kernel as a bare IPython shell that the zygote forks (zygote._shell): the part
    of NotebookClient that Run uses (setup_kernel, execute_cell, timeout, printed, captured, nb,
    km.interrupt_kernel), over one socket, a JSON line each way per cell."""

    def __init__(self, nb, timeout: float, preload: str, startup_timeout: float) -> None:
        self.nb, self.timeout = nb, timeout
        self.preload, self.startup_timeout = preload, startup_timeout
        self.printed, self.captured = 0, None
        self.pid, self.km = 0, self
        self.channel: socket.socket | None = None
        self._pending, self._sent = b"", 0

    @contextlib.contextmanager
    def setup_kernel(self):
        assert Zygote.socket is not None  # used only while the zygote is alive
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours, theirs = socket.socketpair()
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            conn.settimeout(self.startup_timeout)
            conn.connect(Zygote.socket)
            request = {
                "mode": "shell",
                "args": [],
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "preload": self.preload,
            }
            socket.send_fds(conn, [json.dumps(request).encode()], [devnull, 2, 2, theirs.fileno()])
            reply = conn.recv(64)
            self.pid = int(reply.split()[1]) if reply.startswith(b"pid ") else 0
        finally:
            os.close(devnull)
            theirs.close()
        if self.pid <= 0:
            conn.close()
            ours.close()
            raise RuntimeError("the zygote did not start the notebook's kernel")
        self.channel = ours
        try:
            yield self
        finally:
            _signal_kernel(self.pid, signal.SIGKILL)
            conn.close()  # the zygote kills what is left of it, and reaps it
            ours.close()

    def interrupt_kernel(self) -> None:
        _signal_kernel(self.pid, signal.SIGINT)

    def execute_cell(self, cell, index: int):
        """Run `cell`; its outputs become its error (if any). CellTimeoutError after `timeout`
        seconds of wall clock, DeadKernelError if the shell's process ended."""
        assert self.channel is not None  # inside setup_kernel
        self._sent += 1
        request = {"id": self._sent, "code": cell.source, "want_result": self.captured is not None}
        try:
            self.channel.sendall((json.dumps(request) + "\n").encode())
        except OSError:
            raise DeadKernelError("the kernel's process ended") from None
        deadline = time.monotonic() + float(self.timeout)
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._sent:
                break  # (an earlier cell's late answer, after its timeout, is dropped)
        cell.outputs = []
        self.printed += int(reply.get("printed") or 0)
        if reply.get("ename"):
            cell.outputs.append(error_output(reply["ename"], reply.get("evalue") or ""))
        elif reply.get("result") is not None and self.captured is not None:
            self.captured.append(str(reply["result"])[:2000])
        return cell

    def _receive(self, deadline: float) -> dict:
        assert self.channel is not None
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CellTimeoutError("out of wall-clock time")
            ready, _, _ = select.select([self.channel], [], [], left)
            if not ready:
                continue
            try:
                chunk = self.channel.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                raise DeadKernelError("the kernel's process ended")
            self._pending += chunk
            if len(self._pending) > 1 << 20:  # no answer is this long: not the shell's
                raise DeadKernelError("the kernel's answer was garbled")
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # written by the student's code, not the shell
            reply = None
        return reply if isinstance(reply, dict) else {}


class Zygote:
    """Warm kernels: one pre-loaded process that forks a fresh kernel per notebook (zygote.py).

    The zygote is forked from this driver once its own imports are done: jupyter_client, zmq,
    traitlets and the interpreter's start-up, which ipykernel needs as well, are not paid for a
    second time (about 0.3 CPU-s a student). It then runs zygote.serve() and never returns here.

    Off when the job says "warm": false, when zygote.py is missing or when the zygote has died;
    the notebook then gets the usual cold kernel.
    """

    socket: str | None = None
    pid = 0
    alive_fd = -1  # the write end of the zygote's stdin: closing it tells the zygote to exit

    @classmethod
    def start(cls) -> None:
        if not ZYGOTE.exists():
            return
        try:
            folder = tempfile.mkdtemp(prefix="zygote-")
            if len(folder) > 90:  # a unix socket's path must stay short
                folder = tempfile.mkdtemp(prefix="zygote-", dir="/tmp")
            path = os.path.join(folder, "fork.sock")
            # bound and listening before the zygote starts: the first kernel's request can connect
            # at once and queue while the zygote imports
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            listener.bind(path)
            os.chmod(path, 0o600)
            listener.listen(16)
            read_end, cls.alive_fd = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _become_zygote(listener.fileno(), read_end)
            os.close(read_end)
            listener.close()
            cls.pid, cls.socket = pid, path
        except OSError as exc:
            print(f"[driver] warm kernels off: {exc!r}", file=sys.stderr)
            cls.socket, cls.pid = None, 0

    @classmethod
    def alive(cls) -> bool:
        if cls.pid <= 0:
            return False
        try:
            done, _ = os.waitpid(cls.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (by kill_strays, say)
            done = cls.pid
        if done:
            cls.pid = 0
        return cls.pid > 0

    @classmethod
    def stop(cls, patience: float = TIMES["zygote_stop_seconds"]) -> None:
        if cls.alive_fd >= 0:
            os.close(cls.alive_fd)
            cls.alive_fd = -1
        if cls.pid > 0:
            deadline = time.monotonic() + patience
            while cls.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            if cls.pid > 0:
                try:
                    os.kill(cls.pid, signal.SIGKILL)
                    os.waitpid(cls.pid, 0)
                except OSError:
                    pass
                cls.pid = 0


def _become_zygote(listener_fd: int, read_end: int) -> None:
    """In the forked child: load zygote.py and serve (zygote.serve_forked); never returns."""
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("__zygote__", ZYGOTE)
        assert spec is not None and spec.loader is not None  # a .py file always has both
        zygote = sys.modules["__zygote__"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(zygote)
    except BaseException:  # noqa: BLE001 - never return into the driver
        traceback.print_exc()
        os._exit(1)
    zygote.serve_forked(listener_fd, read_end, unblock=BLOCKED_IMPORTS)


class Spare:
    """The spare CPU seconds all of a sandbox's notebooks share (Limits.spare_cpu_seconds): a
    budget that runs out draws on what is left of them before its cell or test is stopped, and
    what a budget used beyond its own seconds is taken from them for good."""

    def __init__(self, seconds: float) -> None:
        self.left = max(0.0, float(seconds))

    def spend(self, used: float, own: float) -> None:
        """A budget of `own` CPU seconds used `used`: take the excess from what is left."""
        self.left = max(0.0, self.left - max(0.0, used - own))

    def said(self, own: float) -> str:
        """A budget's seconds as a student reads them, the spare ones it may draw on included."""
        if self.left <= 0:
            return f"{own:g} s"
        return f"{own:g} s, plus the {self.left:g} spare seconds your notebooks share"


class Run:
    driver_clock = 0.0  # the sandbox's CPU clock when the driver began its first notebook

    def __init__(
        self, job: dict, spec: dict, watchdog: Watchdog, spare: Spare | None = None
    ) -> None:
        self.job = job
        self.spec = spec
        self.watchdog = watchdog
        self.wall_factor = float(spec.get("wall_factor") or job.get("wall_factor", 1.0))
        self.times = {**TIMES, **job.get("times", {})}
        # the notebook's two CPU budgets (Limits.notebook_budgets), each with its wall budget
        # (wall): its own cells, and all of its hidden tests together
        self.cells_seconds = float(spec.get("cells_seconds") or job["timeout"])
        self.tests_seconds = float(spec.get("tests_seconds") or sum(spec["serve"].values()))
        self.spare = spare if spare is not None else Spare(0.0)
        self.status = {
            "stem": spec["stem"],
            "started": True,
            "finished": False,
            "executed_ok": False,
            "cell_errors": [],
            "notes": {},
            "messages": [],
            "timed_out": False,
            "kernel_died": False,
            "seconds": 0.0,
            "started_at": time.monotonic(),  # the clock the parent measures starvation on
        }
        self.path = Path(job["status_dir"]) / f"{spec['stem']}.json"
        self.save()

    def wall(self, cpu_seconds: float) -> float:
        """The wall-clock backstop of a budget of `cpu_seconds`: wall_factor x as many, plus a
        small fixed allowance for waiting (Limits.wall_seconds), not a multiple of the CPU: a
        notebook that sleeps holds a worker little longer than one that computes."""
        return cpu_seconds * self.wall_factor + self.times["idle_seconds"]

    def paced(self, cpu_start: float, own: float) -> Paced:
        """A budget of `own` CPU seconds starting now: its wall grows into the spare seconds'
        only as it spends them (Paced)."""
        return Paced(time.monotonic(), cpu_start, own, self.wall_factor, self.times["idle_seconds"])

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.status))
        tmp.replace(self.path)

    def message(self, text: str) -> None:
        self.status["messages"].append(text)

    def note_all(self, names: Iterable[str], text: str) -> None:
        for name in names:
            self.status["notes"].setdefault(name, text)

    def run_cell(
        self,
        client: Any,
        cell: dict,
        index: int,
        cpu_seconds: float,
        wall_seconds: float,
        paced: Paced | None = None,
    ) -> None:
        """execute_cell with its time charged to CPU seconds and `wall_seconds` as a backstop
        (and `paced`'s, when given: the wall that grows with the CPU spent); CellTimeoutError
        when either runs out."""
        client.timeout = max(1, int(wall_seconds + 0.999))
        pid = _kernel_pid(client)
        self.watchdog.arm(pid, cpu_seconds, paced)
        try:
            client.execute_cell(cell, index)
        except DeadKernelError:
            if self.watchdog.disarm():  # killed by the watchdog: it would not stop
                if self.watchdog.fired_on_wall:
                    self.status["wall_backstop"] = True
                raise CellTimeoutError("out of time; the kernel did not stop") from None
            raise
        except CellTimeoutError:
            self.watchdog.disarm()
            self.status["wall_backstop"] = True
            raise
        if self.watchdog.disarm():
            if self.watchdog.fired_on_wall:  # the paced wall: a wall backstop like nbclient's
                self.status["wall_backstop"] = True
                if self.watchdog.fired_asleep:
                    self.status["asleep"] = True
                    raise CellTimeoutError("asleep for too long")
                raise CellTimeoutError("out of wall-clock time")
            raise CellTimeoutError("out of CPU time")

    def interrupt_and_probe(self, client: Any) -> bool:
        """After a timeout: True if the kernel answers again. When the watchdog stopped the cell
        (its CPU seconds ran out) the kernel has already answered; when the wall-clock backstop
        did, the cell may still run: interrupt it first. Either way a probe cell runs, charged
        like any cell (recover_cpu_seconds, a wall backstop wall_factor x recover_wall_seconds), so
        a slow machine is never taken for a kernel that cannot be stopped."""
        if not self.watchdog.fired:
            try:
                client.interrupt_kernel()
            except Exception:  # noqa: BLE001
                return False
        probe = new_code_cell("pass")
        try:
            times = self.times
            self.run_cell(
                client,
                probe,
                -1,
                times["recover_cpu_seconds"],
                times["recover_wall_seconds"] * self.wall_factor,
            )
            return True
        except Exception:  # noqa: BLE001 - timeout again, dead kernel: unrecoverable
            return False

    def execute(self) -> None:
        spec, job = self.spec, self.job
        started = time.monotonic()
        graded = list(spec["serve"])
        cold = None
        if Zygote.alive():  # the bare shell needs the zygote; a cold kernel is ipykernel's
            nb = read_notebook(spec["path"])
        else:
            nb, cold = _cold_client(
                spec["path"],
                kernel_name="python3",
                timeout=int(self.cells_seconds) + 1,
                allow_errors=True,
                interrupt_on_timeout=False,
                startup_timeout=int(job.get("startup_timeout", 60)),
                resources={"metadata": {"path": job["workdir"]}},
                record_timing=False,
                iopub_timeout=self.times["iopub_seconds"],
                shutdown_kernel="immediate",
            )
        # the zygote imports torch only for a notebook that uses it (zygote.py, ON_DEMAND)
        uses_torch = any(
            "torch" in c.source
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and not _released_demo(c, i, spec)
        )
        client: Any = cold
        if cold is None:
            client = LightClient(
                nb,
                timeout=int(self.cells_seconds) + 1,
                preload="torch" if uses_torch else "",
                startup_timeout=float(job.get("startup_timeout", 60)),
            )
        alive = True
        self.status["kernel_starting"] = True
        # the sandbox's CPU clock at each phase's start (a profile for maintainers: nothing of
        # the grade reads it; benchmarks/student_phases.py does)
        self.status["clock"] = {"driver": Run.driver_clock, "kernel": self.watchdog.clock(0)}
        with client.setup_kernel():
            self.status["kernel_started"] = True
            self.run_quietly(client, WATCH_CELL.format(harness=job["harness"]))  # not charged
            self.status["clock"]["cells"] = self.watchdog.clock(0)
            # the cells share `timeout` CPU seconds (kernel start not counted), and a backstop
            pid = _kernel_pid(client)
            cpu_start = self.watchdog.clock(pid)
            allowed = self.spare.said(self.cells_seconds)  # before any of it is spent
            cells_and_spare = self.cells_seconds + self.spare.left
            cpu_end = cpu_start + cells_and_spare
            deadline = time.monotonic() + self.wall(cells_and_spare)
            paced = self.paced(cpu_start, self.cells_seconds)
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                if _released_demo(cell, index, spec):
                    self.status["skipped_cells"] = self.status.get("skipped_cells", 0) + 1
                    continue
                remaining = deadline - time.monotonic()
                cpu_left = cpu_end - self.watchdog.clock(pid)
                if remaining <= 0 or cpu_left <= 0:
                    break
                try:
                    self.run_cell(client, cell, index, cpu_left, remaining, paced)
                except CellTimeoutError:
                    self.status["timed_out"] = True
                    why = f"still running when the notebook's time ({allowed}) ran out"
                    if self.watchdog.fired_asleep and self.watchdog.asleep is not None:
                        why = f"stopped: your code {self.watchdog.asleep.said()}"
                    self.status["cell_errors"].append(
                        {
                            "cell": index,
                            "type": "Timeout",
                            "message": why,
                            "line": _first_line(cell.source),
                        }
                    )
                    alive = self.interrupt_and_probe(client)
                    if not alive:
                        self.message(
                            f"Cell {index + 1} was still running when the notebook's time ran out "
                            "and could not be interrupted, so nothing could be tested."
                        )
                        self.note_all(
                            graded,
                            "your notebook ran out of time (see the cell errors) and could not be "
                            "stopped, so this could not be tested.",
                        )
                    else:
                        self.message(
                            f"Cell {index + 1} was still running when the notebook's time "
                            f"({allowed}) ran out; it was interrupted and the later "
                            "cells were not run. The names defined before it were tested."
                        )
                    break
                except DeadKernelError:
                    alive = False
                    self.status["kernel_died"] = True
                    self.status["cell_errors"].append(
                        {
                            "cell": index,
                            "type": "KernelDied",
                            "message": "the Python process stopped (os._exit, a crash, or out of memory)",
                            "line": _first_line(cell.source),
                        }
                    )
                    self.message(
                        f"The kernel died while running cell {index + 1} (os._exit, a crash in "
                        "compiled code, or running out of memory), so nothing could be tested."
                    )
                    self.note_all(
                        graded,
                        f"the kernel died while running cell {index + 1} of your notebook, so "
                        "this could not be tested.",
                    )
                    break
                for out in cell.get("outputs", []):
                    if out.get("output_type") == "error":
                        message = out.get("evalue", "")
                        if out.get("ename") == "MemoryError":
                            message += (
                                f" (out of memory: each process may use {job['memory_gb']:g} GB "
                                "while grading)"
                            )
                        self.status["cell_errors"].append(
                            {
                                "cell": index,
                                "type": out.get("ename", "Error"),
                                "message": message,
                                "line": _first_line(cell.source),
                            }
                        )
                        break
                self.save()
            self.status["executed_ok"] = alive and not self.status["cell_errors"]
            self.status["printed_chars"] = client.printed
            self.status["cells_seconds"] = time.monotonic() - started
            # the cells' own CPU seconds (the self-test's measurement of the solutions' cells)
            self.status["cells_cpu_seconds"] = max(0.0, self.watchdog.clock(pid) - cpu_start)
            self.spare.spend(self.status["cells_cpu_seconds"], self.cells_seconds)
            if alive:
                self.status["integrity"] = self.integrity(client)
            self.save()
            self.status["clock"]["tests"] = self.watchdog.clock(0)
            if alive and graded:
                self.serve(client, graded)
            self.status["clock"]["shutdown"] = self.watchdog.clock(0)
            # the notebook's CPU seconds on the sandbox's clock (the self-test's measurement of
            # the solutions: grading/selftest.py; for a student, a figure and nothing more)
            self.status["cpu_seconds"] = max(0.0, self.watchdog.clock(pid) - cpu_start)
        self.status["seconds"] = time.monotonic() - started
        self.status["clock"]["ended"] = self.watchdog.clock(0)
        if self.watchdog.asleep is not None:  # all of the student's notebooks so far
            self.status["asleep_seconds"] = round(self.watchdog.asleep.total, 2)
        self.status["ended_at"] = time.monotonic()
        self.status["finished"] = True
        self.save()

    def run_quietly(self, client: Any, source: str, seconds: float | None = None) -> str | None:
        """Run one cell of the driver's own in the kernel; its text result, or None. The cell is
        appended to the notebook while it runs (nbclient stores a cell at its index: index -1
        would overwrite the notebook's last cell before it has run)."""
        cell = new_code_cell(source)
        client.nb.cells.append(cell)
        client.timeout = seconds if seconds is not None else self.times["quiet_cell_seconds"]  # type: ignore[assignment,unused-ignore]  # nbclient's stub says int; it takes float seconds
        client.captured = []
        try:
            client.execute_cell(cell, len(client.nb.cells) - 1)
        except Exception:  # noqa: BLE001 - a hint lost, nothing more
            return None
        finally:
            captured, client.captured = client.captured, None
            client.nb.cells.pop()
        return captured[0] if captured else None

    def integrity(self, client: Any) -> list[str]:
        """The watch's tokens (autograder/integrity.py); [] when it cannot say."""
        import ast

        text = self.run_quietly(client, FACTS_CELL)
        try:
            tokens = json.loads(ast.literal_eval(text)) if text else []
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return []
        return (
            sorted({t for t in tokens if t in INTEGRITY_TOKENS}) if isinstance(tokens, list) else []
        )

    def run_driver_cell(
        self,
        client: Any,
        source: str,
        cpu_seconds: float,
        wall_seconds: float | None = None,
        paced: Paced | None = None,
    ) -> dict:
        """Run one of the driver's own cells (charged like any cell); the cell, with its outputs.

        A KeyboardInterrupt that the watchdog did not send is a stray: an interrupt meant for an
        earlier cell that was delivered late (a busy machine delays it, the kernel's launcher
        relays it). The cell then runs once more, so a late signal never costs a student the
        tests of a name; one the student's own code raises again is theirs, as before. Both runs
        share the cell's one budget (CPU and wall): an interrupt the student raises on purpose
        does not buy a second one."""
        pid = _kernel_pid(client)
        cpu_end = self.watchdog.clock(pid) + cpu_seconds
        if wall_seconds is None:
            wall_seconds = self.wall(cpu_seconds)
        wall_end = time.monotonic() + wall_seconds
        for attempt in range(2):
            cell = new_code_cell(source)
            cpu_left = cpu_end - self.watchdog.clock(pid)
            self.run_cell(client, cell, -1, cpu_left, wall_end - time.monotonic(), paced)
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            stray = errors and errors[0].get("ename") == "KeyboardInterrupt"
            if not stray or attempt:  # (the watchdog's own interrupt raises CellTimeoutError)
                return cell
            print("[driver] a stray KeyboardInterrupt: the cell runs again", file=sys.stderr)
        return cell

    def serve(self, client: Any, graded: list[str]) -> None:
        source = SERVE_PRELUDE.format(harness=self.job["harness"])
        try:
            prelude = self.run_driver_cell(client, source, self.times["serve_prelude_seconds"])
        except Exception as exc:  # noqa: BLE001
            self.note_all(graded, f"the test harness could not start ({type(exc).__name__}).")
            return
        errors = [o for o in prelude.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            self.note_all(
                graded,
                f"the test harness could not start in your notebook's kernel "
                f"({errors[0].get('ename')}: {errors[0].get('evalue')}).",
            )
            return
        # the tests of all names share the notebook's tests budget, in CPU and on the wall: a
        # name's serve cell gets its own seconds, or what is left of the notebook's if less
        pid = _kernel_pid(client)
        tests_start = self.watchdog.clock(pid)
        try:
            self.serve_names(client, graded, pid, tests_start)
        finally:
            self.spare.spend(self.watchdog.clock(pid) - tests_start, self.tests_seconds)

    def serve_names(self, client: Any, graded: list[str], pid: int, tests_start: float) -> None:
        """Each graded name's serve cell in turn, within the notebook's tests budget."""
        spec = self.spec
        allowed = self.spare.said(self.tests_seconds)
        tests_and_spare = self.tests_seconds + self.spare.left
        tests_cpu_end = tests_start + tests_and_spare
        tests_wall_end = time.monotonic() + self.wall(tests_and_spare)
        paced = self.paced(tests_start, self.tests_seconds)
        for position, name in enumerate(graded):
            cpu_left = tests_cpu_end - self.watchdog.clock(pid)
            wall_left = tests_wall_end - time.monotonic()
            if cpu_left <= 0 or wall_left <= 0:
                self.status["tests_out_of_time"] = list(graded[position:])
                self.note_all(
                    graded[position:],
                    f"not tested: the notebook's hidden tests had {allowed} in "
                    "all, and the earlier names used them up.",
                )
                return
            seconds = min(float(spec["serve"][name]), cpu_left)
            wall = min(self.wall(seconds), wall_left)
            source = SERVE_CELL.format(
                requests=f"{spec['requests']}/{name}",
                responses=f"{spec['responses']}/{name}",
                wall_factor=self.times["request_wall_factor"],
            )
            try:
                cell = self.run_driver_cell(client, source, seconds, wall, paced)
            except CellTimeoutError:
                why = (
                    f"took more than {seconds:g} s in total (look for an infinite loop or very "
                    "slow code)"
                )
                if self.watchdog.fired_asleep and self.watchdog.asleep is not None:
                    why = f"were stopped: your code {self.watchdog.asleep.said()}"
                self.status["notes"][name] = (
                    f"the tests of {name} {why}; the tests that had not finished score 0."
                )
                if not self.interrupt_and_probe(client):
                    self.note_all(
                        graded[position + 1 :],
                        f"not tested: the kernel could not be stopped after the tests of {name} "
                        "ran out of time.",
                    )
                    return
                continue
            except DeadKernelError:
                self.status["kernel_died"] = True
                self.status["notes"][name] = (
                    f"the kernel died while {name} was being tested (os._exit, a crash in compiled "
                    "code, or running out of memory)."
                )
                self.note_all(
                    graded[position + 1 :],
                    f"not tested: the kernel died while {name} was being tested.",
                )
                return
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if errors:
                self.status["notes"][name] = (
                    f"the tests of {name} were interrupted by {errors[0].get('ename')}: "
                    f"{errors[0].get('evalue')}"
                )
            self.save()


def seed(pairs: list[list[str]]) -> None:
    """Fill the size-capped tmpfs mounts (the folder's copy, $HOME) from their read-only sources."""
    for source, target in pairs:
        if not os.path.isdir(source):
            continue
        os.makedirs(target, exist_ok=True)
        for entry in os.scandir(source):  # the target itself is a mount point: never chmod it
            destination = os.path.join(target, entry.name)
            if entry.is_dir(follow_symlinks=False):
                shutil.copytree(entry.path, destination, symlinks=True, dirs_exist_ok=True)
            elif entry.is_file(follow_symlinks=False):
                shutil.copy2(entry.path, destination)


def kill_strays(keep: set[int]) -> None:
    """SIGKILL every process of this pid namespace but pid 1, this one and `keep`.

    Between notebooks: whatever a notebook left running (setsid daemons, a fork bomb's children)
    cannot touch the next notebook's kernel, answers or time. Only used in the sandbox's own pid
    namespace (job["own_pid_namespace"]), never on a shared machine.
    """
    keep = {1, os.getpid(), *keep}
    for _ in range(50):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) not in keep:
                found.append(int(entry))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in found:  # reap our own children; others are reaped by pid 1
            try:
                os.waitpid(pid, os.WNOHANG)
            except OSError:
                pass
        time.sleep(0.01)


class OutputCap:
    """The sandbox's stdout and stderr (the driver's, the zygote's, every kernel's) go through a
    pipe to a small process of the sandbox's own, which passes on the first `keep` bytes and the
    last `keep` and drops the rest: a flood of output (os.write(2, ...) in a loop) is paid for
    in the sandbox's CPU, charged to the student's cell, never by the grading parent, which reads
    at most twice `keep` bytes (Limits.log_bytes)."""

    pid = 0

    class _Stop(Exception):
        pass

    @classmethod
    def start(cls, keep: int) -> None:
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                os.closerange(3, read_end)  # the handshake, the clock: not this process's
                os.closerange(read_end + 1, 1 << 16)
                cls._pass_on(read_end, keep)
            finally:
                os._exit(0)
        os.close(read_end)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
        cls.pid = pid

    @classmethod
    def _pass_on(cls, fd: int, keep) -> None:
        def stop(signum, frame):
            raise cls._Stop()

        signal.signal(signal.SIGTERM, stop)
        head, tail, dropped = 0, bytearray(), 0
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                if head < keep:
                    part = chunk[: keep - head]
                    _write_all(2, part)
                    head += len(part)
                    chunk = chunk[len(part) :]
                if chunk:
                    tail += chunk
                    if len(tail) > keep:
                        dropped += len(tail) - keep
                        del tail[: len(tail) - keep]
        except (cls._Stop, OSError):
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if dropped:
            _write_all(2, f"\n[driver] ... {dropped} bytes of output dropped ...\n".encode())
        _write_all(2, bytes(tail))

    @classmethod
    def stop(cls, patience: float = TIMES["output_stop_seconds"]) -> None:
        """At the driver's end: its own ends of the pipe closed, the tail passed on (a process
        left behind that still holds the pipe only delays this by `patience` seconds)."""
        if cls.pid <= 0:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            if os.waitpid(cls.pid, os.WNOHANG)[0]:
                cls.pid = 0
                return
            time.sleep(0.02)
        try:
            os.kill(cls.pid, signal.SIGTERM)
            os.waitpid(cls.pid, 0)
        except OSError:
            pass
        cls.pid = 0


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            data = data[os.write(fd, data) :]
        except OSError:
            return


def handshake(fd: int) -> None:
    """Tell the grader our mounts are set up; wait until it holds our answer and status folders."""
    try:
        os.write(fd, b"r")
        os.read(fd, 1)
    finally:
        os.close(fd)


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    times = {**TIMES, **job.get("times", {})}
    OutputCap.start(int(job.get("log_bytes", LOG_BYTES)))
    try:
        return _main(job, times)
    finally:
        OutputCap.stop(times["output_stop_seconds"])


def _main(job, times) -> int:

    if job.get("handshake_fd") is not None:
        handshake(int(job["handshake_fd"]))
    seed(job.get("seed", []))
    for folder in job.get("make_dirs", []):
        os.makedirs(folder, exist_ok=True)
    os.chdir(job["workdir"])
    if job.get("warm", True):  # the grader's switch (AUTOGRADER_WARM_KERNELS), sent in job.json
        Zygote.start()
    try:
        run_all(job)
    finally:
        Zygote.stop(times["zygote_stop_seconds"])
    return 0


def run_all(job: dict) -> None:
    times = {**TIMES, **job.get("times", {})}
    watchdog = Watchdog(
        CpuClock(job.get("cpu_clock")), times["grace_cpu_seconds"], times["grace_wall_seconds"]
    )
    spare = Spare(times["spare_cpu_seconds"])  # one student's, shared by all its notebooks
    # likewise the seconds asleep; only where /proc shows the sandbox's threads alone
    watchdog.asleep = Asleep(times["asleep_seconds"], bool(job.get("own_pid_namespace")))
    Run.driver_clock = watchdog.clock(0)  # the sandbox's start and the driver's imports, so far
    for index, spec in enumerate(job["notebooks"]):
        if index and job.get("own_pid_namespace"):
            kill_strays(({Zygote.pid} if Zygote.alive() else set()) | {OutputCap.pid})
        run = Run(job, spec, watchdog, spare)
        try:
            run.execute()
        except Exception as exc:  # noqa: BLE001 - a notebook's failure must not stop the next one
            traceback.print_exc()
            # before any of the notebook's code ran: the parent decides whose fault it was
            starting = run.status.get("kernel_starting") and not run.status.get("kernel_started")
            run.status["kernel_start_failed"] = bool(starting)
            run.status["ended_at"] = time.monotonic()
            run.status["messages"].append(
                f"The notebook could not be run: {type(exc).__name__}: {_short(exc, 200)}"
            )
            run.note_all(spec["serve"], f"your notebook could not be run ({type(exc).__name__}).")
            run.status["finished"] = True
            run.save()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
