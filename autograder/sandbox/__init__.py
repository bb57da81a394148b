"""Run a student's notebooks in a sandbox and collect the harness's answers.

    sandbox = Sandbox(timeout=300)              # once per grading run
    runs = sandbox.run(submission_dir, jobs, work_dir)
    runs["03_matrix_attention"].notes           # why answers were lost, per graded name

The design (see docs/grader.md): bubblewrap builds a new root from read-only system directories,
the Python installation and the venv's site-packages, plus a private working directory holding a
COPY of the student's folder. The project, the reference answers, the hidden tests, the other
students and the output directory are simply not mounted. Inside, driver.py runs nbclient AND the
IPython kernel (they talk over loopback in the sandbox's own network namespace, which has no
other interface). rlimits bound memory, processes and file sizes; a pid namespace,
--die-with-parent and a process-group kill make sure nothing outlives the run. Where bubblewrap
cannot create namespaces the same driver runs with rlimits only, after a printed warning.
"""

import json
import os
import resource
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograder import demo_cells

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
    processes: int = 2048  # RLIMIT_NPROC (threads count too; not enforced for root)
    file_bytes: int = 256 * 2**20  # RLIMIT_FSIZE: the largest file a notebook may write
    startup_seconds: float = 60.0  # per kernel start
    tmp_bytes: int = 512 * 2**20  # size of the sandbox's /tmp


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
        self.coursedata = self._coursedata_dir()
        if self.coursedata is not None:
            (lib / "coursedata").mkdir(exist_ok=True)
        self.extra_data = self._extra_data()
        self.mplconfig = self.lib / "mplconfig"
        self._warm_matplotlib()

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
        """Build matplotlib's font cache once; each run gets a copy (saves seconds per kernel)."""
        self.mplconfig.mkdir(exist_ok=True)
        env = dict(os.environ, MPLCONFIGDIR=str(self.mplconfig), MPLBACKEND="Agg")
        try:
            subprocess.run(
                [sys.executable, "-c", "import matplotlib.font_manager"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired):
            pass

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
        shutil.copytree(self.mplconfig, dirs["home"] / ".config" / "matplotlib", dirs_exist_ok=True)
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
        path = work / "job.json"
        path.write_text(json.dumps(job))
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
        }
        if self.mode != "bwrap":
            Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
        return env

    def _bwrap_args(self, work):
        args = [self.bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        # No capabilities at all: as root, bwrap would otherwise keep them (mount, mknod, ...).
        args += ["--cap-drop", "ALL"]
        args += ["--hostname", "sandbox"]
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
        args += ["--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        for path in self._python_paths():
            args += ["--ro-bind", str(path), str(path)]
        for pth in self._editable_hooks():
            args += ["--ro-bind", "/dev/null", str(pth)]
        args += ["--ro-bind", str(self.lib / "lib"), INSIDE_LIB]
        args += ["--ro-bind", str(self.lib / "driver.py"), "/opt/grader/driver.py"]
        args += ["--ro-bind", str(self.lib / "zygote.py"), "/opt/grader/zygote.py"]
        if self.coursedata is not None:
            args += ["--ro-bind", str(self.coursedata), f"{INSIDE_LIB}/coursedata"]
        for path in self.extra_data:
            args += ["--ro-bind", str(path), str(path)]
        for name in ("submission", "home", "responses", "status"):
            args += ["--bind", str(work / name), f"{INSIDE_ROOT}/{name}"]
        args += ["--ro-bind", str(work / "requests"), f"{INSIDE_ROOT}/requests"]
        args += ["--ro-bind", str(work / "job.json"), f"{INSIDE_ROOT}/job.json"]
        args += ["--chdir", f"{INSIDE_ROOT}/submission"]
        return args

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

    def _preexec(self):
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

    def _launch(self, work, pending, log):
        job_path = self._job_file(work, pending)
        p = self._paths(work)
        python = sys.executable
        info_read, info_write = os.pipe()
        if self.mode == "bwrap":
            command = self._bwrap_args(work) + ["--info-fd", str(info_write)]
            command += [python, p["driver"], f"{INSIDE_ROOT}/job.json"]
        else:
            command = [python, p["driver"], str(job_path)]
        try:
            proc = subprocess.Popen(
                command,
                env=self._env(work),
                cwd=str(work / "submission"),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(info_write,),
                preexec_fn=self._preexec,  # noqa: PLW1509 - rlimits must be set before exec
                start_new_session=True,
            )
        finally:
            os.close(info_write)
        budget = self._budget(pending)
        try:
            proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            log.write(f"\n[autograder] sandbox exceeded {budget:.0f} s: killed\n".encode())
        finally:
            _kill_group(proc)
            _kill_namespace(info_read)


def _kill_group(proc):
    for sig in (signal.SIGKILL,):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _kill_namespace(info_fd):
    """SIGKILL the sandbox's pid-1 (the kernel then kills its whole pid namespace) and wait."""
    try:
        with os.fdopen(info_fd, "rb") as info:
            child = int(json.loads(info.read().decode() or "{}").get("child-pid", 0))
    except (OSError, ValueError):
        return
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


def copy_submission(source, target, max_file_bytes=100 * 2**20):
    """Copy regular files only: symlinks and special files are skipped (they could point out)."""
    source, target = Path(source), Path(target)
    for root, dirs, files in os.walk(source, followlinks=False):
        rel = Path(root).relative_to(source)
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            src = Path(root) / name
            if src.is_symlink() or not src.is_file():
                continue
            if src.stat().st_size > max_file_bytes:
                continue
            shutil.copy2(src, target / rel / name)


def _read_status(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _apply_status(run, status, job):
    if status is None:
        run.messages.append(
            "The grading sandbox stopped before this notebook could run, so it could not be tested."
        )
        run.notes["*"] = "not tested: the grading sandbox stopped before this notebook could run."
        return
    run.executed_ok = bool(status.get("executed_ok"))
    run.cell_errors = list(status.get("cell_errors", []))
    run.notes = dict(status.get("notes", {}))
    run.messages = list(status.get("messages", []))
    run.seconds = float(status.get("seconds", 0.0))
    run.timed_out = bool(status.get("timed_out"))
    run.kernel_died = bool(status.get("kernel_died"))
    if not status.get("finished"):
        run.executed_ok = False
        text = (
            "the grading sandbox stopped while this notebook was running (it ran out of time or "
            "memory, or killed its own processes), so the remaining tests could not run."
        )
        run.messages.append(text[0].upper() + text[1:])
        run.notes.setdefault("*", text)
        for name in job.serve_seconds:
            run.notes.setdefault(name, text)
