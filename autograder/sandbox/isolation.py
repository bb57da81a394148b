"""Isolation: the bubblewrap command line (namespaces, mounts, tmpfs sizes) and the defences
this machine allows (user namespace, seccomp, cgroups), decided once per grading session.

Sandbox (the package's __init__) inherits Isolation; the functions below build and check the
mount operations and end a sandbox's pid namespace.
"""

import json
import os
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

from .bubblewrap import OPTIONS, REPLACEABLE, BubblewrapUnsupported, Features, probe
from .cgroups import Tree, find_tree
from .copying import tree_bytes
from .limits import Limits
from .notices import warn_once
from .seccomp import build_filter
from .userns import UID_BASE, make_userns

ETC_ENTRIES = (
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "localtime",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "fonts",
    "ssl",
    "alternatives",
    "mime.types",
)

INSIDE_ROOT = "/grader"
INSIDE_OPT = "/opt/grader"
INSIDE_LIB = "/opt/grader/lib"


def bwrap_works(bwrap: str) -> bool:
    try:
        done = subprocess.run(
            [bwrap, "--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"]
            + ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _within(path: Path, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False


class Isolation:
    """The isolation half of Sandbox: which defences are in force, and the bwrap arguments.

    What it reads, the subclass sets before it calls _isolate (the first block below); what
    _isolate decides is the second."""

    # -- set by the subclass (Sandbox.__init__) before _isolate
    limits: Limits
    mode: str  # "bwrap" or "none"
    bwrap: str | None  # the bwrap executable, if there is one
    lib: Path  # the read-only files the sandbox sees (driver, zygote, the harness's package)
    mplconfig: Path  # matplotlib's config and font cache, shown read-only
    extra_data: list[Path]  # files shown at their own paths (CourseFiles.data)
    # -- decided by _isolate
    identity: str
    pull: bool
    seccomp: bytes | None
    features: Features | None
    size_by_driver: bool
    cgroups: Tree | None
    use_userns: bool  # AUTOGRADER_USERNS, from the Config
    use_cgroups: bool  # AUTOGRADER_CGROUPS, from the Config

    def close(self) -> None:
        """Release what the subclass holds (Sandbox.close); called when bubblewrap is refused."""
        raise NotImplementedError

    def _isolate(self) -> None:
        """Decide once which defences are in force; warn once about each missing one."""
        self.identity = "none"  # "userns" (own namespace, unprivileged uid) / "user" / "root"
        # answers and status in tmpfs mounts the grader copies out (pull.py); else host folders
        self.pull = self.mode == "bwrap"
        self.seccomp = None
        self.features = None  # what this bwrap supports (bubblewrap.py)
        self.size_by_driver = False  # no --size: the driver caps each tmpfs (driver.py)
        # cgroups also serve without bubblewrap: caps, and a kill that reaches setsid orphans
        self.cgroups = find_tree() if self.use_cgroups else None
        if self.cgroups is None:
            self._warn_no_cgroups()
        if self.mode != "bwrap":
            return
        self.seccomp = build_filter()
        if self.seccomp is None:
            warn_once(
                "seccomp",
                "no seccomp filter for this CPU architecture: the kernel keyring is not blocked "
                "inside the sandbox (each sandbox still gets its own user namespace if possible).",
            )
        self._check_bubblewrap()
        if os.geteuid() != 0:
            self.identity = "user"  # bwrap maps the sandbox to our own (unprivileged) uid
        elif self._userns_works():
            self.identity = "userns"
        else:
            self.identity = "root"
            warn_once(
                "userns",
                "the sandbox cannot get a user namespace of its own here, so notebooks run as "
                "root (without capabilities) and RLIMIT_NPROC does not apply. Enable user "
                "namespaces (sysctl user.max_user_namespaces > 0) to run them as an "
                "unprivileged uid.",
            )

    def _check_bubblewrap(self) -> None:
        """Probe this bwrap's options; refuse one that lacks an option the sandbox cannot do
        without (BubblewrapUnsupported, never a silent fall back to less isolation)."""
        self.features = probe(self.bwrap)
        needed = set(OPTIONS) - REPLACEABLE
        if self.seccomp is None and os.geteuid() != 0:
            needed.add("--disable-userns")  # nothing else would forbid nested user namespaces
        problem = self.features.unsupported(needed)
        if problem:
            self.close()
            raise BubblewrapUnsupported(problem)
        self.size_by_driver = not self.features.has("--size")

    def _tmpfs_sizes(self, work: Path) -> dict[str, int]:
        """{mount point: bytes} of every tmpfs of the sandbox (one place for both ways of
        capping them: bwrap's --size, or the driver's remount)."""
        lim = self.limits
        sizes = {
            "/tmp": lim.tmp_bytes,
            "/dev/shm": lim.shm_bytes,
            f"{INSIDE_ROOT}/submission": lim.submission_bytes + tree_bytes(work / "submission"),
            f"{INSIDE_ROOT}/home": lim.home_bytes,
        }
        if self.pull:
            sizes[f"{INSIDE_ROOT}/responses"] = lim.answers_bytes
            sizes[f"{INSIDE_ROOT}/status"] = lim.status_bytes
        return sizes

    def _tmpfs(self, path: str, sizes: dict[str, int]) -> list[str]:
        return tmpfs(path, None if self.size_by_driver else sizes[path])

    def driver_options(self, work: Path) -> list[str]:
        """The driver's own options before --as: which tmpfs it must cap (bwrap < 0.7.0)."""
        if not self.size_by_driver:
            return []
        sizes = self._tmpfs_sizes(work)
        return [arg for path, size in sizes.items() for arg in ("--cap-tmpfs", f"{path}={size}")]

    def _warn_no_cgroups(self) -> None:
        limit = (
            f"RLIMIT_NPROC of the sandbox's uid ({self.limits.processes})"
            if self.mode == "bwrap" and (os.geteuid() != 0 or self.use_userns)
            else "RLIMIT_NPROC, which does not apply to root"
        )
        warn_once(
            "cgroups",
            "no writable cgroup (v2 with the memory and pids controllers, or v1) for the "
            "sandboxes: memory is capped per process (address space) and not per sandbox, "
            f"and the number of processes by {limit}; the CPU is not shared fairly, children "
            "that ended unreaped (SIGCHLD ignored) are not charged to the time limits (each "
            "process is held to the sandbox's CPU budget instead), and a notebook starved by a "
            "busy machine is not re-run. Run the grader where it may create "
            "cgroups (root, or a delegated cgroup) for hard per-sandbox caps.",
        )

    def _userns_works(self) -> bool:
        if not self.use_userns:  # AUTOGRADER_USERNS=0 (to test the fall back)
            return False
        assert self.bwrap is not None  # asked in mode "bwrap" only
        fd = make_userns(UID_BASE)
        if fd is None:
            return False
        try:
            done = subprocess.run(
                [self.bwrap, "--userns", str(fd), "--cap-drop", "ALL"]
                + ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
                + ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid"]
                + [sys.executable, "-I", "-S", "-c", f"import os; os.setresuid(*[{UID_BASE}] * 3)"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(fd,),
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        finally:
            os.close(fd)
        return done.returncode == 0

    def _bwrap_args(
        self,
        work: Path,
        userns_fd: int | None = None,
        seccomp_fd: int | None = None,
        identity: str | None = None,
    ) -> list[str]:
        identity = identity or self.identity
        sizes = self._tmpfs_sizes(work)
        # without --size the driver remounts each tmpfs with its size, then drops these two
        # (driver.py, --cap-tmpfs) before anything else runs
        capping = ["CAP_SYS_ADMIN", "CAP_SETPCAP"] if self.size_by_driver else []
        assert self.bwrap is not None  # built in mode "bwrap" only
        args = [self.bwrap]
        if identity == "userns":
            # our own namespace (userns.py): bwrap sets up as root-in-namespace, then the driver
            # uses these two capabilities once to become the unprivileged uid, and loses them
            args += ["--userns", str(userns_fd), "--cap-drop", "ALL"]
            capping += ["CAP_SETUID", "CAP_SETGID"]
        elif identity == "user":
            args += ["--unshare-user"]
            if self.features is None or self.features.has("--disable-userns"):
                args += ["--disable-userns"]  # else the seccomp filter forbids them (_check)
            if capping:
                # as uid 0 of its namespace (our own uid outside), else bwrap runs the sandbox in
                # a nested namespace that does not own its mounts, and no tmpfs could be capped
                args += ["--uid", "0", "--gid", "0", "--cap-drop", "ALL"]
        else:
            # No capabilities at all: as root, bwrap would otherwise keep them (mount, mknod, ...).
            args += ["--cap-drop", "ALL"]
        for cap in capping:
            args += ["--cap-add", cap]
        args += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        args += ["--hostname", "sandbox"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        flags = len(args)
        for top in ("usr", "bin", "lib", "lib64", "lib32", "sbin"):
            path = Path("/") / top
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        for name in ETC_ENTRIES:
            path = Path("/etc") / name
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        args += ["--proc", "/proc", "--dev", "/dev"]
        # every place the sandbox can write is a size-capped tmpfs (RAM, charged to its cgroup)
        args += self._tmpfs("/tmp", sizes) + self._tmpfs("/dev/shm", sizes)
        for path in self._python_paths():
            args += ["--ro-bind", str(path), str(path)]
        for pth in self._editable_hooks():
            args += ["--ro-bind", "/dev/null", str(pth)]
        args += ["--ro-bind", str(self.lib / "lib"), INSIDE_LIB]
        args += ["--ro-bind", str(self.lib / "driver.py"), f"{INSIDE_OPT}/driver.py"]
        args += ["--ro-bind", str(self.lib / "zygote.py"), f"{INSIDE_OPT}/zygote.py"]
        args += ["--ro-bind", str(self.mplconfig), f"{INSIDE_OPT}/mplconfig"]
        for path in self.extra_data:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--ro-bind", str(work / "submission"), f"{INSIDE_ROOT}/submission-src"]
        args += self._tmpfs(f"{INSIDE_ROOT}/submission", sizes)
        args += self._tmpfs(f"{INSIDE_ROOT}/home", sizes)
        for name in ("responses", "status"):
            if self.pull:
                args += self._tmpfs(f"{INSIDE_ROOT}/{name}", sizes)
            else:
                args += ["--bind", str(work / name), f"{INSIDE_ROOT}/{name}"]
        args += ["--ro-bind", str(work / "requests"), f"{INSIDE_ROOT}/requests"]
        args += ["--ro-bind", str(work / "job.json"), f"{INSIDE_ROOT}/job.json"]
        args += ["--remount-ro", "/"]  # bwrap's own root tmpfs (mount points) has no size cap
        args += ["--chdir", f"{INSIDE_ROOT}/submission"]
        # bwrap makes missing parents of mount points 0700: the unprivileged uid could not reach
        # /etc, /opt/grader or the Python installation; make them 0755 first
        return args[:flags] + with_parent_dirs(args[flags:])

    @staticmethod
    def _python_paths() -> list[Path]:
        """The Python installation and the venv, read-only; never the project directory."""
        paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
        for entry in site.getsitepackages():
            if Path(entry).is_dir():
                paths.add(Path(entry))
        keep: list[Path] = []
        for path in sorted(paths, key=lambda p: len(p.parts)):
            if str(path).startswith(("/usr/", "/bin", "/lib")) or str(path) == "/usr":
                continue
            if any(_within(path, k) for k in keep):
                continue
            keep.append(path)
        return keep

    @staticmethod
    def _editable_hooks() -> list[Path]:
        """Editable installs point `autograder`/`coursedata` at the project: blank their hooks."""
        hooks = []
        for entry in site.getsitepackages():
            d = Path(entry)
            if d.is_dir():
                hooks += sorted(d.glob("__editable__*"))
                hooks += sorted(d.glob("*.egg-link"))
                hooks += [p for p in (d / "easy-install.pth",) if p.exists()]
        return [h for h in hooks if h.is_file()]


DEST_OPS = {"--ro-bind": 2, "--bind": 2, "--symlink": 2, "--tmpfs": 1, "--proc": 1, "--dev": 1}


MODIFIERS = {"--perms", "--size"}  # each takes one value and applies to the next operation


def with_parent_dirs(ops: list[str]) -> list[str]:
    """`ops` with `--perms 0755 --dir P` put before each operation for every parent P of its
    destination that is not there yet. bwrap would make a missing parent 0700 (unwalkable by
    the sandbox's uid), and a parent made before a later tmpfs over it (a venv under /tmp, the
    tmpfs /tmp) would be hidden by it, so each is made where it is needed: after the mounts
    that cover it."""
    out, made, pending, index = [], set(), [], 0
    while index < len(ops):
        op = ops[index]
        if op in MODIFIERS:
            pending += ops[index : index + 2]
            index += 2
            continue
        arity = DEST_OPS.get(op)
        if not arity:
            out += pending + [op]
            pending = []
            index += 1
            continue
        dest = ops[index + arity]
        for parent in reversed(Path(dest).parents):
            name = str(parent)
            if name != "/" and name not in made:
                out += ["--perms", "0755", "--dir", name]
                made.add(name)
        below = dest.rstrip("/") + "/"
        made = {m for m in made if not m.startswith(below)} | {dest}  # a mount hides what is under
        out += pending + ops[index : index + arity + 1]
        pending = []
        index += arity + 1
    return out + pending


def tmpfs(path: str, size: float | None) -> list[str]:
    """A world-writable (sticky) tmpfs at path; capped by bwrap's --size unless size is None."""
    capped = [] if size is None else ["--size", str(int(size))]
    return ["--perms", "1777", *capped, "--tmpfs", path]


def child_pid(info_fd: int) -> int:
    """The sandbox's pid-1 as bwrap reports it on --info-fd (read to its end, then closed)."""
    try:
        with os.fdopen(info_fd, "rb") as info:
            return int(json.loads(info.read().decode() or "{}").get("child-pid", 0))
    except (OSError, ValueError):
        return 0


def kill_namespace(child: int) -> None:
    """SIGKILL the sandbox's pid-1 (the kernel then kills its whole pid namespace) and wait."""
    if child <= 0:
        return
    try:  # only a process in another pid namespace: the pid may have been reused since
        if os.readlink(f"/proc/{child}/ns/pid") == os.readlink("/proc/self/ns/pid"):
            return
        os.kill(child, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, FileNotFoundError):
        return
    for _ in range(200):  # pid 1's exit waits until every process of its namespace is gone
        if not Path(f"/proc/{child}").exists():
            return
        time.sleep(0.05)
