"""Run a student's notebooks in a sandbox and collect the harness's answers.

    sandbox = Sandbox(timeout=300)              # once per grading run
    runs = sandbox.run(submission_dir, jobs, work_dir)
    runs["03_matrix_attention"].notes           # why answers were lost, per graded name

The design (see docs/grader.md): bubblewrap builds a new root from read-only system directories,
the Python installation and the venv's site-packages, plus a private working directory holding a
COPY of the student's folder. The project, the reference answers, the hidden tests, the other
students and the output directory are simply not mounted. Inside, driver.py runs nbclient AND the
IPython kernel (they talk over loopback in the sandbox's own network namespace, which has no
other interface). Each sandbox gets its own user namespace (root inside is not root outside:
everything runs as an unprivileged uid, userns.py), a seccomp filter (no kernel keyring, no new
user namespaces: seccomp.py), its own cgroup capping processes and memory together (cgroups.py)
and a size-capped tmpfs for every place it can write (the submission copy, $HOME, /tmp,
/dev/shm), so nothing it writes reaches the host disk except its answers and status. A pid
namespace, --die-with-parent, a process-group kill and the cgroup's kill make sure nothing
outlives the run. Where the machine lacks a piece, the run goes on with the next-best defence
after a one-time warning; where bubblewrap cannot create namespaces the same driver runs with
rlimits only, after a printed warning.
"""

import json
import os
import resource
import select
import shutil
import signal
import site
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograder import demo_cells

from . import fontcache
from .cgroups import find_tree
from .processes import reap
from .pull import Folder
from .seccomp import build_filter
from .userns import UID_BASE, make_userns
from .userns import disabled_by_env as userns_disabled

HERE = Path(__file__).resolve().parent
HARNESS = HERE.parent / "harness"

STUB_INIT = '''"""A stand-in for the course package inside the grading sandbox: no reference, no tests."""
'''
STUB_CHECKS = '''"""Visible checks are silent no-ops while a notebook is being graded."""


def check(function, obj=None, **namespace):
    return None


def assert_passes(function, obj=None, seed=None, **namespace):
    return None


def run_in_process(*args, **kwargs):
    return []
'''

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


@dataclass
class NotebookJob:
    """One notebook to run: its file in the submission and the requests per graded name."""

    stem: str
    filename: str
    request_dir: Path  # holds <graded name>/<case>_<request>/ folders (write_requests)
    serve_seconds: dict[str, float]  # graded name -> time limit of its serve cell


@dataclass
class NotebookRun:
    stem: str
    executed_ok: bool = False
    cell_errors: list[dict] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # graded name (or "*") -> why lost
    messages: list[str] = field(default_factory=list)  # for the student, about the whole run
    responses: Path | None = None
    seconds: float = 0.0
    timed_out: bool = False
    kernel_died: bool = False


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


_warned = set()
_warned_lock = threading.Lock()


def warn_once(key, text):
    """Print `text` as a RuntimeWarning once per grading process (not once per sandbox)."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(text, RuntimeWarning, stacklevel=3)


def _bwrap_works(bwrap):
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


def _within(path, root):
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False


class Sandbox:
    """Settings shared by every run of a grading session, and the files the sandbox exposes."""

    def __init__(self, limits=None, mode="auto", lib_root=None, warm=None):
        self.limits = limits or Limits()
        # Warm kernels (zygote.py): each notebook's kernel is forked from one pre-loaded process
        # per student instead of started cold. AUTOGRADER_WARM_KERNELS=0 turns them off.
        if warm is None:
            warm = os.environ.get("AUTOGRADER_WARM_KERNELS", "1").strip().lower() not in (
                "0",
                "false",
                "no",
                "off",
            )
        self.warm = bool(warm)
        self.bwrap = shutil.which("bwrap")
        if mode == "auto":
            mode = "bwrap" if self.bwrap and _bwrap_works(self.bwrap) else "none"
        if mode == "bwrap" and not (self.bwrap and _bwrap_works(self.bwrap)):
            raise RuntimeError("bubblewrap (bwrap) is not installed or cannot create namespaces")
        self.mode = mode
        if mode == "none":
            warnings.warn(
                "bubblewrap is unavailable: notebooks run WITHOUT a filesystem/network sandbox "
                "(rlimits and timeouts only). Students' code could read files the grader can "
                "read. Install bubblewrap (apt-get install bubblewrap) to grade safely.",
                RuntimeWarning,
                stacklevel=2,
            )
        self._owned_lib = lib_root is None
        self.lib = Path(lib_root or tempfile.mkdtemp(prefix="autograder-lib-"))
        self._build_lib()
        self._slots = []  # free uid slots (one uid per concurrent sandbox)
        self._next_slot = 0
        self._slot_lock = threading.Lock()
        self._isolate()

    # -- what this machine allows: user namespace, seccomp, cgroups ---------------------------
    def _isolate(self):
        """Decide once which defences are in force; warn once about each missing one."""
        self.identity = "none"  # "userns" (own namespace, unprivileged uid) / "user" / "root"
        # answers and status in tmpfs mounts the grader copies out (pull.py); else host folders
        self.pull = self.mode == "bwrap"
        self.seccomp = None
        # cgroups also serve without bubblewrap: caps, and a kill that reaches setsid orphans
        self.cgroups = find_tree()
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

    def _warn_no_cgroups(self):
        limit = (
            f"RLIMIT_NPROC of the sandbox's uid ({self.limits.processes})"
            if self.mode == "bwrap" and (os.geteuid() != 0 or not userns_disabled())
            else "RLIMIT_NPROC, which does not apply to root"
        )
        warn_once(
            "cgroups",
            "no writable cgroup (v2 with the memory and pids controllers, or v1) for the "
            "sandboxes: memory is capped per process (address space) and not per sandbox, "
            f"and the number of processes by {limit}. Run the grader where it may create "
            "cgroups (root, or a delegated cgroup) for hard per-sandbox caps.",
        )

    def _userns_works(self):
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

    def _take_slot(self):
        with self._slot_lock:
            if self._slots:
                return self._slots.pop()
            self._next_slot += 1
            return self._next_slot - 1

    def _give_slot(self, slot):
        with self._slot_lock:
            self._slots.append(slot)

    # -- the read-only files the sandbox sees -------------------------------------------------
    def _build_lib(self):
        lib = self.lib / "lib"
        stub = lib / "autograder"
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "__init__.py").write_text(STUB_INIT)
        (stub / "checks.py").write_text(STUB_CHECKS)
        shutil.copytree(
            HARNESS,
            stub / "harness",
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
        shutil.copy2(HERE / "driver.py", self.lib / "driver.py")
        shutil.copy2(HERE / "zygote.py", self.lib / "zygote.py")
        # a copy, not a bind mount: where the course lives may be closed to the sandbox's uid
        # (Gradescope's setup.sh makes /autograder/source root's alone)
        self.coursedata = self._coursedata_dir()
        if self.coursedata is not None:
            shutil.copytree(
                self.coursedata,
                lib / "coursedata",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
        self.extra_data = self._extra_data()
        self.mplconfig = self.lib / "mplconfig"
        self._warm_matplotlib()
        _share_read_only(self.lib)  # the sandbox's unprivileged uid must read all of it

    @staticmethod
    def _coursedata_dir():
        try:
            import coursedata
        except ImportError:
            return None
        return Path(coursedata.__file__).resolve().parent

    @staticmethod
    def _extra_data():
        """Read-only data files the course loaders look for (e.g. tiny Shakespeare), if any."""
        found = []
        try:
            import coursedata
        except ImportError:
            return found
        for attr in ("SHAKESPEARE_PATH", "shakespeare_path", "tiny_shakespeare_path"):
            value = getattr(coursedata, attr, None)
            try:
                path = Path(value() if callable(value) else value) if value else None
            except Exception:  # noqa: BLE001 - a loader that cannot find its file: nothing to expose
                path = None
            if path and path.exists():
                found.append(path.resolve())
        return found

    def _warm_matplotlib(self):
        """matplotlib's font cache, built once per machine (fontcache.py); each sandbox gets a
        copy (saves seconds per kernel)."""
        fontcache.warm(self.mplconfig)

    def close(self):
        if self._owned_lib:
            shutil.rmtree(self.lib, ignore_errors=True)

    # -- one student's run --------------------------------------------------------------------
    def run(self, submission, jobs, work, log_path=None):
        """Run `jobs` (NotebookJobs) on a copy of `submission`; returns {stem: NotebookRun}.

        `work` is a fresh private directory (outside the submission and the output folder).
        The driver is restarted on the remaining notebooks if the sandbox dies part way.
        """
        work = Path(work)
        dirs = {name: work / name for name in ("submission", "home", "responses", "status")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        copy_submission(submission, dirs["submission"])
        if self.mode != "bwrap":  # in bwrap, $HOME is a tmpfs the driver seeds (_job_file)
            shutil.copytree(
                self.mplconfig, dirs["home"] / ".config" / "matplotlib", dirs_exist_ok=True
            )
        requests = work / "requests"
        requests.mkdir(exist_ok=True)
        for job in jobs:
            target = requests / job.stem
            if job.request_dir.resolve() != target.resolve():
                shutil.copytree(job.request_dir, target, dirs_exist_ok=True)
            (dirs["responses"] / job.stem).mkdir(exist_ok=True)

        runs = {
            job.stem: NotebookRun(job.stem, responses=dirs["responses"] / job.stem) for job in jobs
        }
        pending = list(jobs)
        log = open(log_path or (work / "sandbox.log"), "ab")  # noqa: SIM115
        try:
            for _attempt in range(len(jobs)):
                if not pending:
                    break
                self._launch(work, pending, log)
                still = []
                for job in pending:
                    status = _read_status(dirs["status"] / f"{job.stem}.json")
                    if status is None:
                        still.append(job)  # never started: try again in a new sandbox
                    else:
                        _apply_status(runs[job.stem], status, job)
                pending = still if len(still) < len(pending) else []
                for job in still if not pending else []:
                    _apply_status(runs[job.stem], None, job)
        finally:
            log.close()
        return runs

    def _paths(self, work):
        inside = self.mode == "bwrap"
        root = INSIDE_ROOT if inside else str(work)
        return {
            "root": root,
            "lib": f"{INSIDE_LIB}" if inside else str(self.lib / "lib"),
            "driver": "/opt/grader/driver.py" if inside else str(self.lib / "driver.py"),
        }

    def _job_file(self, work, pending):
        p = self._paths(work)
        root = p["root"]
        job = {
            "workdir": f"{root}/submission",
            "status_dir": f"{root}/status",
            "timeout": self.limits.timeout,
            "memory_gb": round(self.limits.memory_bytes / 2**30, 2),
            "startup_timeout": self.limits.startup_seconds,
            "warm": self.warm,
            "harness": f"{p['lib']}/autograder/harness",
            "notebooks": [
                {
                    "stem": j.stem,
                    "path": f"{root}/submission/{j.filename}",
                    "requests": f"{root}/requests/{j.stem}",
                    "responses": f"{root}/responses/{j.stem}",
                    "serve": {k: float(v) for k, v in j.serve_seconds.items()},
                    "skip": demo_cells.skip_plan(work / "submission" / j.filename, j.stem),
                }
                for j in pending
            ],
        }
        if self.mode == "bwrap":
            # the folder's copy and $HOME are size-capped tmpfs mounts: the driver fills them
            job["seed"] = [
                [f"{INSIDE_ROOT}/submission-src", f"{root}/submission"],
                [f"{INSIDE_OPT}/mplconfig", f"{root}/home/.config/matplotlib"],
            ]
            job["own_pid_namespace"] = True  # the driver may kill strays between notebooks
            job["make_dirs"] = [n["responses"] for n in job["notebooks"]]
        path = work / "job.json"
        path.write_text(json.dumps(job))
        path.chmod(0o644)
        return path

    def _budget(self, pending):
        lim = self.limits
        return sum(
            lim.timeout + lim.startup_seconds + 45 + sum(j.serve_seconds.values()) for j in pending
        )

    def _env(self, work):
        p = self._paths(work)
        home = f"{p['root']}/home"
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": "/tmp" if self.mode == "bwrap" else f"{home}/tmp",
            "PYTHONPATH": p["lib"],
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{home}/.config/matplotlib",
            "NBGRADER_EXECUTION": "autograde",
            "JUPYTER_PLATFORM_DIRS": "1",
            "JUPYTER_CONFIG_DIR": f"{home}/.jupyter",
            "JUPYTER_DATA_DIR": f"{home}/.local/share/jupyter",
            "JUPYTER_RUNTIME_DIR": f"{home}/.local/share/jupyter/runtime",
            "IPYTHONDIR": f"{home}/.ipython",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "USER": "student",
            "LOGNAME": "student",
        }
        if self.mode != "bwrap":
            Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
        return env

    def _bwrap_args(self, work, userns_fd=None, seccomp_fd=None, identity=None):
        lim = self.limits
        identity = identity or self.identity
        args = [self.bwrap]
        if identity == "userns":
            # our own namespace (userns.py): bwrap sets up as root-in-namespace, then the driver
            # uses these two capabilities once to become the unprivileged uid, and loses them
            args += ["--userns", str(userns_fd), "--cap-drop", "ALL"]
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        elif identity == "user":
            args += ["--unshare-user", "--disable-userns"]
        else:
            # No capabilities at all: as root, bwrap would otherwise keep them (mount, mknod, ...).
            args += ["--cap-drop", "ALL"]
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
        args += _tmpfs("/tmp", lim.tmp_bytes) + _tmpfs("/dev/shm", lim.shm_bytes)
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
        room = lim.submission_bytes + _tree_bytes(work / "submission")
        args += ["--ro-bind", str(work / "submission"), f"{INSIDE_ROOT}/submission-src"]
        args += _tmpfs(f"{INSIDE_ROOT}/submission", room)
        args += _tmpfs(f"{INSIDE_ROOT}/home", lim.home_bytes)
        for name, size in (("responses", lim.answers_bytes), ("status", lim.status_bytes)):
            if self.pull:
                args += _tmpfs(f"{INSIDE_ROOT}/{name}", size)
            else:
                args += ["--bind", str(work / name), f"{INSIDE_ROOT}/{name}"]
        args += ["--ro-bind", str(work / "requests"), f"{INSIDE_ROOT}/requests"]
        args += ["--ro-bind", str(work / "job.json"), f"{INSIDE_ROOT}/job.json"]
        args += ["--remount-ro", "/"]  # bwrap's own root tmpfs (mount points) has no size cap
        args += ["--chdir", f"{INSIDE_ROOT}/submission"]
        # bwrap makes missing parents of mount points 0700: the unprivileged uid could not reach
        # /etc, /opt/grader or the Python installation; make them 0755 first
        return args[:flags] + _with_parent_dirs(args[flags:])

    @staticmethod
    def _python_paths():
        """The Python installation and the venv, read-only; never the project directory."""
        paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
        for entry in site.getsitepackages():
            if Path(entry).is_dir():
                paths.add(Path(entry))
        keep = []
        for path in sorted(paths, key=lambda p: len(p.parts)):
            if str(path).startswith(("/usr/", "/bin", "/lib")) or str(path) == "/usr":
                continue
            if any(_within(path, k) for k in keep):
                continue
            keep.append(path)
        return keep

    @staticmethod
    def _editable_hooks():
        """Editable installs point `autograder`/`coursedata` at the project: blank their hooks."""
        hooks = []
        for entry in site.getsitepackages():
            d = Path(entry)
            if d.is_dir():
                hooks += sorted(d.glob("__editable__*"))
                hooks += sorted(d.glob("*.egg-link"))
                hooks += [p for p in (d / "easy-install.pth",) if p.exists()]
        return [h for h in hooks if h.is_file()]

    def _preexec(self, cgroup):
        """In the child between fork and exec (plain syscalls only): cgroup first, then rlimits."""
        if cgroup is not None:
            cgroup.attach_self()
        lim = self.limits
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

    def _cgroup(self):
        if self.cgroups is None:
            return None
        try:
            return self.cgroups.create(self.limits.processes, self.limits.cgroup_memory)
        except OSError as exc:
            warn_once(
                "cgroup-create",
                f"could not create a cgroup for a sandbox ({exc}); this sandbox and later ones "
                "may run without per-sandbox caps.",
            )
            return None

    def _take_folders(self, proc, handshake, info_read, log):
        """Once the driver says its mounts are set up: hold its answers and status folders."""
        deadline = time.monotonic() + self.limits.startup_seconds + 30
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([handshake], [], [], 0.5)
            if ready:
                break
        else:
            return None, {}
        try:
            if handshake.recv(1) != b"r":
                return None, {}
        except OSError:
            return None, {}
        child, folders = _child_pid(info_read), {}  # info_read is closed from here on
        try:
            for name in ("responses", "status"):
                folders[name] = Folder.open(child, f"{INSIDE_ROOT}/{name}")
            handshake.sendall(b"g")
        except (OSError, ValueError) as exc:
            for folder in folders.values():
                folder.close()
            log.write(f"\n[autograder] could not open the sandbox's folders: {exc!r}\n".encode())
            return child, {}
        return child, folders

    def _hand_over(self, work, pending, uid):
        """The folders the sandbox writes (answers, status) belong to its uid, the rest it reads."""
        if not self.pull:
            for path in [work / "responses", work / "status"]:
                path.chmod(0o755)
                os.chown(path, uid, uid)
            for job in pending:
                os.chown(work / "responses" / job.stem, uid, uid)
        for path in (work / "requests", work / "submission"):
            _share_read_only(path)

    def _launch(self, work, pending, log):
        job_path = self._job_file(work, pending)
        p = self._paths(work)
        python = sys.executable
        info_read, info_write = os.pipe()
        fds = [info_write]
        slot = userns_fd = None
        identity = self.identity  # this launch's; "root" if its namespace cannot be made
        if identity == "userns":
            slot = self._take_slot()
            uid = UID_BASE + slot
            userns_fd = make_userns(uid)
            if userns_fd is None:
                warn_once(
                    "userns-late",
                    "a user namespace could not be created for a sandbox: it runs as root "
                    "(without capabilities).",
                )
                identity = "root"
            else:
                fds.append(userns_fd)
                self._hand_over(work, pending, uid)
        seccomp_fd = None
        if self.seccomp is not None and self.mode == "bwrap":
            seccomp_fd, seccomp_write = os.pipe()
            os.write(seccomp_write, self.seccomp)  # a few hundred bytes: fits the pipe buffer
            os.close(seccomp_write)
            fds.append(seccomp_fd)
        if self.mode == "bwrap":
            command = self._bwrap_args(work, userns_fd, seccomp_fd, identity)
            command += ["--info-fd", str(info_write)]
            command += [python, p["driver"]]
            if userns_fd is not None:
                command += ["--as", f"{uid}:{uid}"]
            command += [f"{INSIDE_ROOT}/job.json"]
        else:
            command = [python, p["driver"], str(job_path)]
        handshake = None
        if self.pull:
            handshake, inside_end = socket.socketpair()
            fds.append(inside_end.fileno())
            job = json.loads(job_path.read_text())
            job["handshake_fd"] = inside_end.fileno()
            job_path.write_text(json.dumps(job))
        cgroup = self._cgroup()
        out_read, out_write = os.pipe()
        drain = threading.Thread(target=_drain, args=(out_read, log, self.limits.log_bytes))
        drain.start()
        proc = None
        try:
            proc = subprocess.Popen(
                command,
                env=self._env(work),
                cwd="/" if self.mode == "bwrap" else str(work / "submission"),
                stdin=subprocess.DEVNULL,
                stdout=out_write,
                stderr=out_write,
                pass_fds=tuple(fds),
                preexec_fn=lambda: self._preexec(cgroup),  # noqa: PLW1509 - before exec
                start_new_session=True,
            )
        finally:
            for fd in [info_write, out_write, userns_fd, seccomp_fd]:
                if fd is not None:
                    os.close(fd)
            if handshake is not None:
                inside_end.close()
            if proc is None:
                os.close(info_read)
                if handshake is not None:
                    handshake.close()
                self._release(cgroup, slot, drain)
        budget = self._budget(pending)
        child, folders = None, {}
        try:
            if handshake is not None:
                child, folders = self._take_folders(proc, handshake, info_read, log)
            proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            log.write(f"\n[autograder] sandbox exceeded {budget:.0f} s: killed\n".encode())
        finally:
            if handshake is not None:
                handshake.close()
            _kill_group(proc)
            _kill_namespace(_child_pid(info_read) if child is None else child)
            for name, folder in folders.items():
                try:
                    folder.copy_to(work / name, max_bytes=self.limits.answers_bytes)
                finally:
                    folder.close()
            self._release(cgroup, slot, drain, log)

    def _release(self, cgroup, slot, drain, log=None):
        """After a sandbox, or a launch that failed: kill what is left in its cgroup (saying so
        in the log when it hit its process cap), remove the cgroup, wait for the end of its
        output, and only then free its uid slot for another sandbox."""
        if cgroup is not None:
            cgroup.kill()
            peak = cgroup.peak_pids()
            if log is not None and peak is not None and peak >= self.limits.processes:
                log.write(
                    f"\n[autograder] the sandbox reached its cap of {peak} processes\n".encode()
                )
            cgroup.remove()
        drain.join(timeout=30)
        if slot is not None:
            self._give_slot(slot)


DEST_OPS = {"--ro-bind": 2, "--bind": 2, "--symlink": 2, "--tmpfs": 1, "--proc": 1, "--dev": 1}


MODIFIERS = {"--perms", "--size"}  # each takes one value and applies to the next operation


def _with_parent_dirs(ops):
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


def _tmpfs(path, size):
    return ["--perms", "1777", "--size", str(int(size)), "--tmpfs", path]


def _tree_bytes(root):
    """Total size of the regular files under root (no links followed; iterative)."""
    total, stack = 0, [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def _share_read_only(root):
    """Make a tree the grader wrote readable (not writable) by the sandbox's uid: a+rX."""
    stack = [str(root)]
    while stack:
        path = stack.pop()
        try:
            os.chmod(path, 0o755)
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    os.chmod(entry.path, (mode | 0o444) & 0o755)
                except OSError:
                    pass


def _drain(fd, log, keep):
    """Copy the sandbox's stdout/stderr to the log: the first `keep` bytes and the last `keep`.

    A flood of output (os.write(2, ...) in a kernel) costs CPU only, never disk or memory.
    """
    head, tail, dropped = 0, bytearray(), 0
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            try:
                chunk = pipe.read(65536)
            except OSError:
                break
            if not chunk:
                break
            if head < keep:
                part = chunk[: keep - head]
                log.write(part)
                head += len(part)
                chunk = chunk[len(part) :]
            if chunk:
                tail += chunk
                if len(tail) > keep:
                    dropped += len(tail) - keep
                    del tail[: len(tail) - keep]
    if dropped:
        log.write(f"\n[autograder] ... {dropped} bytes of output dropped ...\n".encode())
    log.write(bytes(tail))
    log.flush()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    reap(proc)


def _child_pid(info_fd):
    """The sandbox's pid-1 as bwrap reports it on --info-fd (read to its end, then closed)."""
    try:
        with os.fdopen(info_fd, "rb") as info:
            return int(json.loads(info.read().decode() or "{}").get("child-pid", 0))
    except (OSError, ValueError):
        return 0


def _kill_namespace(child):
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


def copy_submission(source, target, max_file_bytes=64 * 2**20, max_total_bytes=256 * 2**20):
    """Copy the regular files of a student's folder; returns [(relative path, why skipped)].

    Symbolic links and special files are never followed or copied; nothing deeper than
    safe_files.MAX_WALK_DEPTH folders is copied; a file larger than max_file_bytes, or one that
    would take the copy past max_total_bytes, is skipped (sizes are the files' apparent sizes,
    so a sparse file counts as what it would become). Every file is opened without following
    links (autograder.safe_files), and the walk is iterative.
    """
    from autograder.safe_files import UnsafeFile, open_below, walk

    source, target = Path(source), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    skipped, total = [], 0
    for parts, name, info in walk(source):
        rel = "/".join((*parts, name)) if name else "/".join(parts)
        if name is None:
            skipped.append(
                (
                    rel,
                    "folders nested this deep are not copied"
                    if info == "too-deep"
                    else "the folder holds too many files; the rest were not copied",
                )
            )
            continue
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            (target.joinpath(*parts, name)).mkdir(exist_ok=True)
            continue
        if stat.S_ISLNK(mode):
            skipped.append((rel, "it is a symbolic link"))
            continue
        if not stat.S_ISREG(mode):
            skipped.append((rel, "it is not a regular file"))
            continue
        if info.st_size > max_file_bytes:
            skipped.append((rel, f"it is larger than {max_file_bytes // 2**20} MB"))
            continue
        if total + info.st_size > max_total_bytes:
            skipped.append((rel, f"the submission's files exceed {max_total_bytes // 2**20} MB"))
            continue
        try:
            fd = open_below(source, [*parts, name])
        except UnsafeFile as exc:
            skipped.append((rel, exc.message))
            continue
        copied = 0
        with os.fdopen(fd, "rb") as src, open(target.joinpath(*parts, name), "wb") as dst:
            while copied <= info.st_size:  # never more than it said it was
                chunk = src.read(min(2**20, info.st_size + 1 - copied))
                if not chunk:
                    break
                dst.write(chunk)
                copied += len(chunk)
        total += copied
    return skipped


MAX_STATUS_BYTES = 2**20


def _read_status(path):
    """A notebook's status file as JSON, or None. Read without following links, only a regular
    file under MAX_STATUS_BYTES (autograder.safe_files): code in the sandbox may have replaced it."""
    from autograder.safe_files import UnsafeFile, read_json

    path = Path(path)
    try:
        return read_json(path.parent, [path.name], MAX_STATUS_BYTES)
    except (UnsafeFile, OSError):
        return None


def _clean_status(status, job):
    """The structured facts of a status file, type-checked; its free text is dropped.

    Everything in the sandbox runs as the student (the driver too), so a status file may have
    been written by the student's code: by a later notebook about an earlier one, or by a process
    left behind. The parent therefore believes only plain facts (flags, cell numbers, which graded
    names lost their answers) and the student's own cell errors (shown as theirs), and writes
    every sentence itself: nothing a student writes there is shown as the grader's words.
    """
    if not isinstance(status, dict):
        return None

    def flag(key):
        return status.get(key) is True

    errors = []
    raw_errors = status.get("cell_errors")
    for err in raw_errors[:200] if isinstance(raw_errors, list) else []:
        if not isinstance(err, dict) or type(err.get("cell")) is not int or err["cell"] < 0:
            continue
        errors.append(
            {
                "cell": err["cell"],
                "type": str(err.get("type", "Error"))[:100],
                "message": str(err.get("message", ""))[:500],
                "line": str(err.get("line", ""))[:100],
            }
        )
    notes = status.get("notes")
    lost = sorted(n for n in (notes if isinstance(notes, dict) else {}) if n in job.serve_seconds)
    seconds = status.get("seconds")
    seconds = float(seconds) if type(seconds) in (int, float) and 0 <= seconds < 1e7 else 0.0
    return {
        "finished": flag("finished"),
        "executed_ok": flag("executed_ok"),
        "timed_out": flag("timed_out"),
        "kernel_died": flag("kernel_died"),
        "seconds": seconds,
        "cell_errors": errors,
        "lost": lost,
    }


def _apply_status(run, status, job):
    status = _clean_status(status, job) if status is not None else None
    if status is None:
        run.messages.append(
            "The grading sandbox stopped before this notebook could run, so it could not be tested."
        )
        run.notes["*"] = "not tested: the grading sandbox stopped before this notebook could run."
        return
    run.executed_ok = status["executed_ok"]
    run.cell_errors = status["cell_errors"]
    run.seconds = status["seconds"]
    run.timed_out = status["timed_out"]
    run.kernel_died = status["kernel_died"]
    graded = list(job.serve_seconds)
    lost = status["lost"]
    stuck = run.timed_out and graded and set(lost) == set(graded)
    died_in = next((e["cell"] for e in run.cell_errors if e["type"] == "KernelDied"), None)
    timeout_in = next((e["cell"] for e in run.cell_errors if e["type"] == "Timeout"), None)
    if timeout_in is not None and run.timed_out:
        if stuck:
            run.messages.append(
                f"Cell {timeout_in + 1} was still running when the notebook's time ran out and "
                "could not be interrupted, so nothing could be tested."
            )
        else:
            run.messages.append(
                f"Cell {timeout_in + 1} was still running when the notebook's time ran out; it was "
                "interrupted and the later cells were not run. The names defined before it were "
                "tested."
            )
    if died_in is not None and run.kernel_died:
        run.messages.append(
            f"The kernel died while running cell {died_in + 1} (os._exit, a crash in compiled "
            "code, or running out of memory), so nothing could be tested."
        )
    for name in lost:
        if run.kernel_died and died_in is not None:
            text = (
                f"the kernel died while running cell {died_in + 1} of your notebook, so this "
                "could not be tested."
            )
        elif run.kernel_died:
            text = (
                f"the kernel died while {name} was being tested (os._exit, a crash in compiled "
                "code, or running out of memory); the tests that had not finished score 0."
            )
        elif stuck:
            text = (
                "your notebook ran out of time (see the cell errors) and could not be stopped, "
                "so this could not be tested."
            )
        else:
            text = (
                f"the tests of {name} did not finish (they have {job.serve_seconds[name]:g} s in "
                "total: look for an infinite loop or very slow code), or your notebook's code "
                "stopped them or the test harness; the tests that had not finished score 0."
            )
        run.notes[name] = text
    if not status["finished"]:
        run.executed_ok = False
        text = (
            "the grading sandbox stopped while this notebook was running (it ran out of time or "
            "memory, or killed its own processes), so the remaining tests could not run."
        )
        run.messages.append(text[0].upper() + text[1:])
        run.notes.setdefault("*", text)
        for name in job.serve_seconds:
            run.notes.setdefault(name, text)
