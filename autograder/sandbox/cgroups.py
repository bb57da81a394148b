"""One cgroup per sandbox: hard caps on the number of processes and on the memory of ALL of them,
and its share of the CPU.

    tree = find_tree()                       # once per grading run; None: no usable cgroups
    group = tree.create(pids=512, memory_bytes=6 * 2**30, cpus=1.0)
    ... Popen(..., preexec_fn=group.attach_self)   # the sandbox starts inside it
    group.kill(); group.remove()             # after the run: nothing survives, nothing is left

Each cgroup is named after the grading process that made it: autograder-PID-N-START.PIDNS (its
pid, a counter, the process's start time in clock ticks and its pid namespace's inode). A run
killed with SIGKILL cannot remove its cgroups; the next run's find_tree() kills what is left in
them and removes them (Tree.remove_stale), but only those of a dead run: made in this pid
namespace by a pid that is gone, or now held by another process (another start time).

rlimits are per process (address space) or per uid (RLIMIT_NPROC, void for root); a cgroup
counts every process, thread and page (tmpfs included) of one sandbox together. cgroup v2 is used
where our own cgroup may have children with the memory and pids controllers; else cgroup v1
(the pids and memory hierarchies, each where it is mounted writable); else none: the caller
falls back to rlimits and says so once. AUTOGRADER_CGROUPS=0 disables them (to test the fallback):
Sandbox(cgroups=False), from the Config.

The CPU: where the cpu controller is available (v2: enabled beside memory and pids; v1: its own
hierarchy), every sandbox gets the same weight (v2 cpu.weight 100, v1 cpu.shares 1024) and a cap
of `cpus` CPUs (cpu.max / cfs quota), so a sandbox full of busy processes takes no more than its
share. Its CPU time is read back from cpu.stat (v2, with or without the controller) or cpuacct
(v1): cpu_seconds(). Tree.cpu_capped says whether the cap is in force.
"""

import itertools
import os
import signal
import time
from pathlib import Path
from typing import Literal, overload

V1_CONTROLLERS = ("pids", "memory", "freezer", "cpu", "cpuacct")
CPU_PERIOD_US = 100_000
_names = itertools.count()


def _mounts(mountinfo="/proc/self/mountinfo"):
    """(mount point, fs type, super options) of every mount."""
    found: list[tuple[str, str, set[str]]] = []
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            point = fields[4].replace("\\040", " ")
            found.append((point, tail[0], set(tail[2].split(","))))
    return found


def _own_paths(cgroup_file="/proc/self/cgroup"):
    """{controller or "" (v2): our cgroup's path in that hierarchy}."""
    paths: dict[str, str] = {}
    try:
        lines = Path(cgroup_file).read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller.removeprefix("name=")] = parts[2]
    return paths


def _write(path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _start_ticks(pid) -> int | None:
    """The start time of process `pid` (clock ticks since boot, /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        return int(fields[19])  # field 22 of stat: the 20th after the command's name
    except (OSError, ValueError, IndexError):
        return None


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_tag(pid: int | None = None) -> str:
    """START.PIDNS of process `pid` (default: this one): with its pid, what names a run."""
    return f"{_start_ticks(pid or os.getpid()) or 0}.{_pid_namespace()}"


def stale(name: str) -> bool:
    """True when the cgroup `name` (one of ours) belongs to a run that is gone; False for a live
    run's, another pid namespace's, or a name that is not one of ours."""
    parts = name.split("-")
    if parts[:2] == ["autograder", "probe"]:
        parts = parts[:1] + parts[2:]
    if len(parts) not in (3, 4) or parts[0] != "autograder" or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    start, namespace = parts[3].partition(".")[::2] if len(parts) == 4 else ("0", "")
    if namespace and namespace != str(_pid_namespace()):
        return False  # a pid of another namespace: this one cannot tell whether it lives
    ticks = _start_ticks(pid)
    if ticks is None or start == "0":  # an older name, or a start time that could not be read
        return not Path(f"/proc/{pid}").exists()
    return str(ticks) != start


class Cgroup:
    """The cgroup(s) of one sandbox: one directory (v2) or one per controller (v1)."""

    def __init__(self, version: int, dirs: dict[str, Path]) -> None:
        self.version = version
        self.dirs = dirs  # {controller (v1) or "" (v2): Path}
        # opened now, written in the child between fork and exec: no Python-level I/O there
        # (v1 hierarchies mounted together, cpu,cpuacct, share one directory)
        self._procs = sorted({str(d / "cgroup.procs") for d in dirs.values()})

    def attach_self(self) -> None:
        """Move the calling process into the cgroup(s). Safe in a preexec_fn (plain syscalls)."""
        for path in self._procs:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def pids(self) -> set[int]:
        found = set()
        for d in self.dirs.values():
            try:
                found |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def _freeze(self, frozen: bool) -> None:
        if self.version == 2:
            path, text = self.dirs[""] / "cgroup.freeze", "1" if frozen else "0"
        elif "freezer" in self.dirs:
            path, text = self.dirs["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED"
        else:
            return
        try:
            _write(path, text)
        except OSError:
            pass

    def kill(self, patience: float = 10.0) -> bool:
        """SIGKILL every process in the cgroup (frozen first, so none can fork); wait until empty."""
        if self.version == 2 and (self.dirs[""] / "cgroup.kill").exists():
            try:
                _write(self.dirs[""] / "cgroup.kill", "1")
            except OSError:
                pass
        deadline = time.monotonic() + patience
        while True:
            pids = self.pids()
            if not pids:
                return True
            self._freeze(True)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self._freeze(False)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def cpu_usage_file(self) -> tuple[str, float] | None:
        """(path, unit in seconds) of the file holding the cgroup's CPU time, or None. In v1,
        cpuacct.stat (user and system, in clock ticks) where it exists: cpuacct.usage can be
        reset by whoever may write it, which a sandbox running as root could try through the
        descriptor it is handed (a write to cpuacct.usage leaves cpuacct.stat alone)."""
        if self.version == 2:
            return str(self.dirs[""] / "cpu.stat"), 1e-6  # usage_usec; read-only
        if "cpuacct" in self.dirs:
            stat = self.dirs["cpuacct"] / "cpuacct.stat"
            if stat.exists():
                return str(stat), 1.0 / os.sysconf("SC_CLK_TCK")
            return str(self.dirs["cpuacct"] / "cpuacct.usage"), 1e-9
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process of the cgroup so far, or None when not accounted."""
        found = self.cpu_usage_file()
        return read_cpu_usage(*found) if found else None

    @overload
    def wait_seconds(self, with_priority: Literal[False] = False) -> float | None: ...
    @overload
    def wait_seconds(self, with_priority: Literal[True]) -> tuple[float | None, bool]: ...
    def wait_seconds(self, with_priority: bool = False) -> float | tuple[float | None, bool] | None:
        """Seconds the cgroup's live threads have spent runnable but waiting for a CPU (the
        scheduler's run_delay in /proc/TID/schedstat), or None where it is not reported. With
        with_priority: (that, whether any of them has lowered its own priority: lowered_priority)."""
        tids = set()
        for d in dict.fromkeys(self.dirs.values()):
            for name in ("cgroup.threads", "tasks"):
                try:
                    tids |= {int(t) for t in (d / name).read_text().split()}
                except (OSError, ValueError):
                    pass
        total, seen, slowed = 0, False, False
        for tid in tids:
            try:
                with open(f"/proc/{tid}/schedstat") as handle:
                    total += int(handle.read().split()[1])
                seen = True
            except (OSError, ValueError, IndexError):
                pass
            if with_priority and not slowed:
                slowed = lowered_priority(tid)
        waited = total / 1e9 if seen or not tids else None
        return (waited, slowed) if with_priority else waited

    def peak_pids(self) -> int | None:
        folder = self.dirs.get("pids", self.dirs.get(""))
        if folder is None:
            return None
        try:
            return int((folder / "pids.peak").read_text())
        except (OSError, ValueError, TypeError):
            return None

    def remove(self, attempts: int = 50) -> None:
        """Remove the directories (after kill); a few retries while the kernel reaps."""
        for d in dict.fromkeys(self.dirs.values()):
            for _ in range(attempts):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


class Tree:
    """Where this process may create cgroups, and how to cap them."""

    def __init__(self, version: int, bases: dict[str, Path], cpu: bool = False) -> None:
        self.version = version
        self.bases = bases  # {controller (v1) or "" (v2): Path of our own cgroup}
        self.cpu_capped = cpu or "cpu" in bases  # v2: the cpu controller is enabled

    def remove_stale(self, patience: float = 5.0) -> list[str]:
        """The cgroups a grading run killed with SIGKILL left behind (stale()): what still runs
        in them is killed, and they are removed. Returns the names removed."""
        names = set()
        for base in dict.fromkeys(self.bases.values()):
            try:
                names |= {child.name for child in base.iterdir() if stale(child.name)}
            except OSError:
                continue
        removed = []
        for name in sorted(names):
            dirs = {c: base / name for c, base in self.bases.items() if (base / name).is_dir()}
            group = Cgroup(self.version, dirs)
            if name.split("-")[1] != "probe" and len(name.split("-")) == 4:
                group.kill(patience)  # an older name: left alone while processes are inside
            group.remove(attempts=5)
            if not any(d.exists() for d in dirs.values()):
                removed.append(name)
        return removed

    def describe(self) -> str:
        if self.version == 2:
            return f"cgroup v2 at {self.bases['']}"
        return "cgroup v1 (" + ", ".join(sorted(c for c in self.bases if c != "freezer")) + ")"

    def create(self, pids: int, memory_bytes: int, cpus: float = 1.0) -> Cgroup:
        name = f"autograder-{os.getpid()}-{next(_names)}-{_owner()}"
        made: dict[str, Path] = {}
        try:
            for controller, base in self.bases.items():
                path = base / name
                if path not in made.values():  # co-mounted v1 hierarchies share it
                    path.mkdir()
                made[controller] = path
            group = Cgroup(self.version, made)
            self._cap(group, pids, memory_bytes)
            self._cap_cpu(group, cpus)
        except OSError:
            Cgroup(self.version, made).remove()
            raise
        return group

    def _cap(self, group: Cgroup, pids, memory_bytes) -> None:
        if self.version == 2:
            d = group.dirs[""]
            _write(d / "pids.max", str(pids))
            _write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
            return
        if "pids" in group.dirs:
            _write(group.dirs["pids"] / "pids.max", str(pids))
        if "memory" in group.dirs:
            d = group.dirs["memory"]
            _write(d / "memory.limit_in_bytes", str(memory_bytes))
            if (d / "memory.memsw.limit_in_bytes").exists():  # no swapping past the cap
                try:
                    _write(d / "memory.memsw.limit_in_bytes", str(memory_bytes))
                except OSError:
                    pass

    def _cap_cpu(self, group: Cgroup, cpus) -> None:
        """The same weight for every sandbox, and at most `cpus` CPUs."""
        if not self.cpu_capped:
            return
        quota = max(1000, int(cpus * CPU_PERIOD_US))
        if self.version == 2:
            writes = [("cpu.weight", "100"), ("cpu.max", f"{quota} {CPU_PERIOD_US}")]
        else:
            writes = [("cpu.shares", "1024"), ("cpu.cfs_period_us", str(CPU_PERIOD_US))]
            writes.append(("cpu.cfs_quota_us", str(quota)))
        d = group.dirs["" if self.version == 2 else "cpu"]
        try:
            for name, value in writes:
                _write(d / name, value)
        except OSError:  # e.g. a kernel without CFS bandwidth control: the weight alone
            self.cpu_capped = False

    @property
    def controllers(self) -> set[str]:
        if self.version == 2:
            return {"pids", "memory"} | ({"cpu"} if self.cpu_capped else set())
        return {c for c in self.bases if c != "freezer"}


def _try_v2(mounts, own) -> Tree | None:
    if "" not in own:
        return None
    for point, fstype, _options in mounts:
        if fstype != "cgroup2":
            continue
        base = Path(point) / own[""].lstrip("/")
        try:
            available = set((base / "cgroup.controllers").read_text().split())
            enabled = set((base / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if not {"memory", "pids"} <= available:
            continue
        if not {"memory", "pids"} <= enabled:
            try:  # refused (EBUSY) when our cgroup holds processes and is not the root
                _write(base / "cgroup.subtree_control", "+memory +pids")
            except OSError:
                continue
        if _can_make_child(base):
            return Tree(2, {"": base}, cpu=_enable_cpu(base, available))
    return None


def _enable_cpu(base, available) -> bool:
    """Enable the cpu controller for our children if we may; False when it stays off."""
    if "cpu" not in available:
        return False
    try:
        if "cpu" not in (base / "cgroup.subtree_control").read_text().split():
            _write(base / "cgroup.subtree_control", "+cpu")
        return True
    except OSError:
        return False


def _try_v1(mounts, own) -> Tree | None:
    bases = {}
    for controller in V1_CONTROLLERS:
        if controller not in own:
            continue
        for point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options:
                base = Path(point) / own[controller].lstrip("/")
                if _can_make_child(base):
                    bases[controller] = base
                    break
    if "pids" in bases or "memory" in bases:
        return Tree(1, bases)
    return None


SCHED_BATCH, SCHED_IDLE = 3, 5


def lowered_priority(tid: int) -> bool:
    """True when thread `tid` runs with a nice value above this process's own (the grader may
    run under `nice`; a sandbox cannot raise its priority, only lower it) or under SCHED_BATCH
    or SCHED_IDLE."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as handle:
            data = handle.read()
        fields = data[data.rfind(b")") + 2 :].split()
        own = os.getpriority(os.PRIO_PROCESS, 0)
        return int(fields[16]) > own or int(fields[38]) in (SCHED_BATCH, SCHED_IDLE)
    except (OSError, ValueError, IndexError):
        return False


def read_cpu_usage(path: str | Path, unit: float) -> float | None:
    """Seconds of CPU in a cgroup's cpu.stat (usage_usec), cpuacct.usage (ns) or cpuacct.stat
    (user + system, in clock ticks); None if unread.
    (inside/driver.py reads the same files with its own copy, _file_cpu: it imports nothing of
    the grader; tests/sandbox/test_inside_constants.py pins the two together.)"""
    try:
        with open(path) as handle:
            text = handle.read(4096)
    except OSError:
        return None
    ticks = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 1 and parts[0].isdigit():
            return int(parts[0]) * unit
        if len(parts) == 2 and parts[0] == "usage_usec" and parts[1].isdigit():
            return int(parts[1]) * unit
        if len(parts) == 2 and parts[0] in ("user", "system") and parts[1].isdigit():
            ticks = (ticks or 0) + int(parts[1])  # v1 cpuacct.stat
    return None if ticks is None else ticks * unit


_OWNERS: dict[int, str] = {}  # pid -> owner_tag (per process: a forked child has a pid of its own)


def _owner() -> str:
    pid = os.getpid()
    if pid not in _OWNERS:
        _OWNERS[pid] = owner_tag(pid)
    return _OWNERS[pid]


def _can_make_child(base) -> bool:
    probe = base / f"autograder-probe-{os.getpid()}-{next(_names)}-{_owner()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        probe.rmdir()
    except OSError:
        pass
    return True


def find_tree(
    mountinfo: str = "/proc/self/mountinfo", cgroup_file: str = "/proc/self/cgroup"
) -> Tree | None:
    """The best usable cgroup tree here, or None (not mounted, or not writable)."""
    mounts, own = _mounts(mountinfo), _own_paths(cgroup_file)
    tree = _try_v2(mounts, own) or _try_v1(mounts, own)
    if tree is not None:
        tree.remove_stale()
    return tree
