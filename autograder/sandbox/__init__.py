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

Where things are: isolation.py (the bwrap command line: namespaces, mounts, tmpfs sizes; which
defences this machine allows), limits.py (Limits, the rlimits, the cgroup and the time budget;
cgroups.py creates the cgroups), copying.py (copy_submission, tree sizes and modes), status.py
(reading, cleaning and applying a notebook's status file), inside/driver.py and inside/zygote.py
(what runs inside), pull.py (copying the answers out). This file: the Sandbox class's launch and run loop.
"""

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from autograder.safe_files import remove_tree

from . import fontcache
from .bytecode import compile_tree
from .copying import copy_submission, share_read_only
from .isolation import (
    INSIDE_LIB,
    INSIDE_OPT,
    INSIDE_ROOT,
    Isolation,
    bwrap_works,
    child_pid,
    kill_namespace,
)
from .limits import (
    Limits,
    budget,
    cpu_budget,
    cpu_clock,
    make_cgroup,
    preexec,
    warn_about_cpu,
)
from .notices import warn_once
from .processes import Running, SandboxStopped, kill_group
from .pull import Folder
from .starvation import Sampler, rerun_wall_factor
from .status import apply_status, read_status, suspicion, window
from .userns import UID_BASE, make_userns

__all__ = [
    "CourseFiles",
    "Limits",
    "NotebookJob",
    "NotebookRun",
    "Sandbox",
    "SandboxFailure",
    "SandboxStopped",
    "copy_submission",
]

# a control run's one-cell notebook (Sandbox.control_works)
CONTROL_NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "control",
            "metadata": {},
            "outputs": [],
            "source": "1 + 1",
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}
# what failed twice, in the words of a NOT GRADED report (status.suspicion's kinds)
DESCRIBE = {
    "never-ran": "the grading sandbox stopped before the notebook could run",
    "kernel-start": "the notebook's kernel did not start",
    "died": "the grading sandbox stopped while the notebook ran",
}

HERE = Path(__file__).resolve().parent
INSIDE = HERE / "inside"  # what runs inside the sandbox, copied there on its own
HARNESS = HERE.parent / "harness"

# the package the harness sits in (a regular package: an installed `autograder` cannot shadow it)
STUB_INIT = '''"""A stand-in for the course package inside the grading sandbox: no reference, no tests."""
'''


@dataclass(frozen=True)
class CourseFiles:
    """What a course hands the sandbox (grading/course_files.py builds this course's): the
    sandbox itself knows no course. Everything is read-only inside."""

    modules: tuple[tuple[str, str], ...] = ()  # (path under the sandbox's lib, its text)
    packages: tuple[tuple[str, Path], ...] = ()  # (folder under the lib, the folder copied there)
    data: tuple[Path, ...] = ()  # files shown at their own paths (e.g. a data set a loader reads)


@dataclass
class NotebookJob:
    """One notebook to run: its file in the submission and the requests per graded name."""

    stem: str
    filename: str
    request_dir: Path  # holds <graded name>/<case>_<request>/ folders (write_requests)
    serve_seconds: dict[str, float]  # graded name -> time limit of its serve cell
    wall_factor: float | None = None  # the wall-clock backstop, if not Limits.wall_factor
    skip: dict[str, str] = field(default_factory=dict)  # cell index -> sha256: demo cells to skip


@dataclass
class NotebookRun:
    stem: str
    executed_ok: bool = False
    cell_errors: list[dict] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # graded name (or "*") -> why lost
    messages: list[str] = field(default_factory=list)  # for the student, about the whole run
    responses: Path | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # on the sandbox's clock, as the driver reported it (a figure only)
    cells_cpu_seconds: float = 0.0  # of that, its cells' (the rest: its hidden tests')
    # every sandbox this student's notebooks ran in (first runs and second), read by the parent
    # from their cgroups: what the student cost, whatever the sandbox says
    sandbox_cpu_seconds: float = 0.0
    timed_out: bool = False
    kernel_died: bool = False
    not_graded: str = ""  # the sandbox failed, not the student: why (the grader's words)
    integrity: list[str] = field(default_factory=list)  # autograder/integrity.py's tokens


class SandboxFailure(Exception):
    """The sandbox failed on a student's notebooks for reasons that are not theirs (twice, and
    on the grader's own control run too, or starved twice): that student is not graded."""


class Sandbox(Isolation):
    """Settings shared by every run of a grading session, and the files the sandbox exposes.

    The isolation (which defences this machine allows, the bwrap command line) is inherited
    from isolation.Isolation; limits.py, copying.py and status.py hold the rest."""

    def __init__(
        self,
        limits: Limits | None = None,
        mode: str = "auto",
        lib_root: Path | str | None = None,
        warm: bool = True,
        course: CourseFiles | None = None,
        *,
        userns: bool = True,
        cgroups: bool = True,
        cache: Path | None = None,
    ) -> None:
        """The switches come from the grader's Config (grading/sandboxes.py): `warm`, `userns`
        and `cgroups` (AUTOGRADER_WARM_KERNELS, _USERNS, _CGROUPS), `cache` (the grader's cache
        folder, for the font cache; None: none kept)."""
        self.limits = limits or Limits()
        self.course = course or CourseFiles()
        # Warm kernels (zygote.py): each notebook's kernel is forked from one pre-loaded process
        # per student instead of started cold. AUTOGRADER_WARM_KERNELS=0 turns them off.
        self.warm = bool(warm)
        self.use_userns, self.use_cgroups, self.cache = bool(userns), bool(cgroups), cache
        self.bwrap = shutil.which("bwrap")
        if mode == "auto":
            mode = "bwrap" if self.bwrap and bwrap_works(self.bwrap) else "none"
        if mode == "bwrap" and not (self.bwrap and bwrap_works(self.bwrap)):
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
        self._slots: list[int] = []  # free uid slots (one uid per concurrent sandbox)
        self._next_slot = 0
        self._slot_lock = threading.Lock()
        self.running = Running()  # the sandboxes running now (processes.py): stop() kills them
        self._isolate()
        warn_about_cpu(self.cgroups)

    def _take_slot(self):
        with self._slot_lock:
            if self._slots:
                return self._slots.pop()
            self._next_slot += 1
            return self._next_slot - 1

    def _give_slot(self, slot) -> None:
        with self._slot_lock:
            self._slots.append(slot)

    # -- the read-only files the sandbox sees -------------------------------------------------
    def _build_lib(self) -> None:
        lib = self.lib / "lib"
        stub = lib / "autograder"
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "__init__.py").write_text(STUB_INIT)
        for rel, text in self.course.modules:
            (lib / rel).parent.mkdir(parents=True, exist_ok=True)
            (lib / rel).write_text(text)
        shutil.copytree(
            HARNESS,
            stub / "harness",
            ignore=shutil.ignore_patterns("__pycache__"),
            dirs_exist_ok=True,
        )
        shutil.copy2(INSIDE / "driver.py", self.lib / "driver.py")
        shutil.copy2(INSIDE / "zygote.py", self.lib / "zygote.py")
        # a copy, not a bind mount: where the course lives may be closed to the sandbox's uid
        # (Gradescope's setup.sh makes /autograder/source root's alone)
        for name, folder in self.course.packages:
            shutil.copytree(
                folder,
                lib / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
        self.extra_data = list(self.course.data)
        self.mplconfig = self.lib / "mplconfig"
        self._warm_matplotlib()
        compile_tree(self.lib)  # once per grading run, before the tree is shared (bytecode.py)
        share_read_only(self.lib)  # the sandbox's unprivileged uid must read all of it

    def _warm_matplotlib(self) -> None:
        """matplotlib's font cache, built once per machine (fontcache.py); each sandbox gets a
        copy (saves seconds per kernel)."""
        fontcache.warm(self.mplconfig, fontcache.kept_folder(self.cache) if self.cache else False)

    def stop(self) -> None:
        """The grading run is stopping: kill every running sandbox now and start no other (their
        workers' run() raises SandboxStopped). Safe in a signal handler."""
        self.running.stop()

    def close(self) -> None:
        if self._owned_lib:
            shutil.rmtree(self.lib, ignore_errors=True)

    # -- one student's run --------------------------------------------------------------------
    def run(
        self,
        submission: Path | str,
        jobs: list[NotebookJob],
        work: Path | str,
        log_path: Path | str | None = None,
    ) -> dict[str, NotebookRun]:
        """Run `jobs` (NotebookJobs) on a copy of `submission`; returns {stem: NotebookRun}.

        `work` is a fresh private directory (outside the submission and the output folder).
        The driver is restarted on the remaining notebooks if the sandbox dies part way. A
        notebook whose outcome may be the sandbox's failure (status.suspicion: it never ran,
        its kernel did not start, the sandbox died under it, or its time ran out while the
        sandbox was starved of CPU) is run once more in a new sandbox. If that fails the same
        way, the grader checks itself on an empty submission (control_works): when that fails
        too, or the notebook was starved twice, the run's not_graded says why; else the
        student's own outcome stands.
        """
        work = Path(work)
        dirs = self._prepare(submission, jobs, work)
        runs = {
            job.stem: NotebookRun(job.stem, responses=dirs["responses"] / job.stem) for job in jobs
        }
        log = open(log_path or (work / "sandbox.log"), "ab")  # noqa: SIM115
        launched: list[
            Sampler
        ] = []  # every Sampler of this student's sandboxes: what they cost, read here
        try:
            found = self._run_pending(work, jobs, dirs, log, launched)
            suspects = {job.stem: self._suspect(job, found.get(job.stem)) for job in jobs}
            again = [job for job in jobs if suspects[job.stem]]
            if again:
                names = ", ".join(job.stem for job in again)
                log.write(f"\n[autograder] running {names} again in a new sandbox\n".encode())
                # starved: again with a backstop far enough for its CPU seconds on a machine as
                # busy as the first run found it
                factors = {
                    job.stem: self._rerun_factor(job, found.get(job.stem))
                    for job in again
                    if suspects[job.stem] == "starved"
                }
                for job in again:
                    self._forget(dirs, job)
                    found.pop(job.stem, None)
                rerun = [
                    replace(job, wall_factor=factors[job.stem]) if job.stem in factors else job
                    for job in again
                ]
                found.update(self._run_pending(work, rerun, dirs, log, launched))
            failed = {job.stem: self._suspect(job, found.get(job.stem)) for job in again}
            failed = {stem: why for stem, why in failed.items() if why}
            if any(why in DESCRIBE for why in failed.values()) and self.control_works(work, log):
                # the grader's own notebook runs: the failure is the submission's, and stands
                failed = {stem: why for stem, why in failed.items() if why not in DESCRIBE}
            spent = sum(sampler.cpu_used() or 0.0 for sampler in launched)
            for job in jobs:
                apply_status(runs[job.stem], found.get(job.stem, (None, None))[0], job)
                runs[job.stem].sandbox_cpu_seconds = spent
                if job.stem in failed:
                    runs[job.stem].not_graded = DESCRIBE.get(
                        failed[job.stem],
                        "its time ran out twice while other programs held the machine's CPU",
                    )
        finally:
            log.close()
        return runs

    def _rerun_factor(self, job, found):
        """The wall factor of a starved notebook's second run (starvation.rerun_wall_factor)."""
        status, sampler = found or (None, None)
        lim = self.limits
        share = sampler.share(*window(status, job), lim.cpus) if sampler is not None else None
        least, most = lim.starved_wall_factor, lim.starved_wall_most
        return lim.wall_factor * rerun_wall_factor(share, least, most)

    def _suspect(self, job, found):
        """status.suspicion, with "wall" kept (as "starved") only when this parent measured
        that the sandbox was starved of CPU over the notebook's time. A sandbox this parent
        killed because it used up its whole CPU budget gets no second run (its CPU is its own,
        whatever the machine's load); one killed at its wall budget, only when it was starved."""
        status, sampler = found or (None, None)
        why = suspicion(status, job)
        over = getattr(sampler, "over", "")
        if over == "cpu" or (over == "wall" and why in ("died", "wall")):
            why = "wall" if over == "wall" else ""
        if why != "wall":
            return why
        starved = sampler is not None and sampler.starved(*window(status, job), self.limits.cpus)
        return "starved" if starved else ""

    @staticmethod
    def _forget(dirs, job) -> None:
        """Before a notebook runs again: the answers and status of its first run are dropped."""
        answers = dirs["responses"] / job.stem
        if answers.exists():
            remove_tree(answers)
        answers.mkdir()
        (dirs["status"] / f"{job.stem}.json").unlink(missing_ok=True)

    def control_works(self, work: Path, log: BinaryIO) -> bool:
        """The grader's own check: a one-cell notebook in an empty submission runs in a sandbox
        made like the students' (a kernel starts, the cell runs, the status comes back)."""
        control = Path(tempfile.mkdtemp(prefix="control-", dir=work.parent))
        try:
            source = control / "submission-src"
            source.mkdir()
            (source / "control.ipynb").write_text(json.dumps(CONTROL_NOTEBOOK))
            (control / "requests-src").mkdir()
            job = NotebookJob("control", "control.ipynb", control / "requests-src", {})
            dirs = self._prepare(source, [job], control / "run")
            status = self._run_pending(control / "run", [job], dirs, log).get("control")
            run = NotebookRun("control")
            if status is not None:
                apply_status(run, status[0], job)
            works = status is not None and run.executed_ok and not suspicion(status[0], job)
            log.write(f"\n[autograder] control run: {'works' if works else 'FAILED'}\n".encode())
            return works
        finally:
            remove_tree(control)

    def _prepare(self, submission: Path | str, jobs: list[NotebookJob], work: Path):
        """The run's folders in `work`: the submission's copy, $HOME, requests, answers, status."""
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
        return dirs

    def _run_pending(self, work: Path, jobs, dirs, log: BinaryIO, launched=None):
        """{stem: (status as read, the Sampler of its sandbox)} for the jobs whose status came
        back; a sandbox that stops part way is restarted on the rest while it makes progress.
        Each launch's Sampler is appended to `launched`."""
        found, pending = {}, list(jobs)
        for _attempt in range(len(jobs)):
            if not pending:
                break
            sampler = self._launch(work, pending, log)
            if launched is not None:
                launched.append(sampler)
            still = []
            for job in pending:
                status = read_status(dirs["status"] / f"{job.stem}.json")
                if status is None:
                    still.append(job)  # never started: try again in a new sandbox
                else:
                    found[job.stem] = (status, sampler)
            pending = still if len(still) < len(pending) else []
        return found

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
        job: dict[str, Any] = {  # job.json, as inside/driver.py reads it
            "workdir": f"{root}/submission",
            "status_dir": f"{root}/status",
            "timeout": self.limits.timeout,
            "memory_gb": round(self.limits.memory_bytes / 2**30, 2),
            "startup_timeout": self.limits.startup_seconds,
            "warm": self.warm,
            "times": self.limits.driver_times(),  # Limits' budgets the driver applies
            "log_bytes": self.limits.log_bytes,  # the driver's OutputCap keeps head and tail
            "harness": f"{p['lib']}/autograder/harness",
            "notebooks": [
                {
                    "stem": j.stem,
                    "path": f"{root}/submission/{j.filename}",
                    "requests": f"{root}/requests/{j.stem}",
                    "responses": f"{root}/responses/{j.stem}",
                    "serve": {k: float(v) for k, v in j.serve_seconds.items()},
                    **dict(
                        zip(
                            ("cells_seconds", "tests_seconds"),
                            self.limits.notebook_budgets(j.stem, j.serve_seconds),
                            strict=True,
                        )
                    ),
                    "wall_factor": j.wall_factor,
                    "skip": dict(j.skip),
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
        return budget(self.limits, pending)

    def _preexec(self, cgroup, cpu_seconds=None) -> None:
        preexec(self.limits, cgroup, cpu_seconds)

    def _cgroup(self):
        return make_cgroup(self.cgroups, self.limits)

    def _env(self, work) -> dict[str, str]:
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

    def _take_folders(
        self, proc: subprocess.Popen[bytes], handshake: socket.socket, info_read: int, log
    ):
        """Once the driver says its mounts are set up: hold its answers and status folders."""
        deadline = (
            time.monotonic() + self.limits.startup_seconds + self.limits.handshake_slack_seconds
        )
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
        child, folders = child_pid(info_read), {}  # info_read is closed from here on
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

    def _hand_over(self, work, pending, uid) -> None:
        """The folders the sandbox writes (answers, status) belong to its uid, the rest it reads."""
        if not self.pull:
            for path in [work / "responses", work / "status"]:
                path.chmod(0o755)
                os.chown(path, uid, uid)
            for job in pending:
                os.chown(work / "responses" / job.stem, uid, uid)
        for path in (work / "requests", work / "submission"):
            share_read_only(path)

    def _launch(self, work, pending, log):
        self.running.check()  # a stopping run starts no sandbox
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
            command += [python, p["driver"], *self.driver_options(work)]
            if userns_fd is not None:
                command += ["--as", f"{uid}:{uid}"]
            command += [f"{INSIDE_ROOT}/job.json"]
        else:
            command = [python, p["driver"], str(job_path)]
        handshake = None
        cgroup = self._cgroup()
        job = json.loads(job_path.read_text())
        # the driver's clock: the cgroup's own accounting file, opened here read-only and passed
        # in (the sandbox has no cgroup file system), so every process the sandbox ever had
        # counts, reaped or not
        clock_fd = _open_cpu_usage(cgroup)
        if clock_fd is not None:
            fds.append(clock_fd)
        job["cpu_clock"] = cpu_clock(cgroup, self.mode == "bwrap", clock_fd)
        cpu_limit = cpu_budget(self.limits, pending)
        job["wall_factor"] = self.limits.wall_factor
        job["startup_timeout"] = self.limits.startup_seconds * self.limits.wall_factor
        if self.pull:
            handshake, inside_end = socket.socketpair()
            fds.append(inside_end.fileno())
            job["handshake_fd"] = inside_end.fileno()
        job_path.write_text(json.dumps(job))
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
                preexec_fn=lambda: self._preexec(cgroup, cpu_limit),  # noqa: PLW1509 - before exec
                start_new_session=True,
            )
        finally:
            for fd in [info_write, out_write, userns_fd, seccomp_fd, clock_fd]:
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
        sampler = Sampler(cgroup)
        launch = self.running.add(proc, cgroup, pending, work / "status")
        try:
            if handshake is not None:
                child, folders = self._take_folders(proc, handshake, info_read, log)
                if "status" in folders:
                    self.running.watch(launch, folders["status"].fd)
            sampler.over = _wait(proc, budget, cpu_limit, sampler)
            if sampler.over == "wall":
                log.write(f"\n[autograder] sandbox exceeded {budget:.0f} s: killed\n".encode())
            elif sampler.over == "cpu":
                log.write(
                    f"\n[autograder] sandbox used more than {cpu_limit:.0f} CPU seconds (its "
                    "cgroup's count): killed\n".encode()
                )
        finally:
            self.running.discard(launch)  # before its folders are closed
            if handshake is not None:
                handshake.close()
            kill_group(proc)
            kill_namespace(child_pid(info_read) if child is None else child)
            sampler.stop()
            for name, folder in folders.items():
                try:
                    folder.copy_to(work / name, max_bytes=self.limits.answers_bytes)
                finally:
                    folder.close()
            self._release(cgroup, slot, drain, log)
        return sampler

    def _release(self, cgroup, slot, drain: threading.Thread, log=None) -> None:
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
        drain.join(timeout=self.limits.drain_join_seconds)
        if slot is not None:
            self._give_slot(slot)


def _open_cpu_usage(cgroup) -> int | None:
    """A read-only descriptor of the cgroup's CPU accounting file (cpu.stat or cpuacct.usage),
    or None."""
    found = cgroup.cpu_usage_file() if cgroup is not None else None
    if not found:
        return None
    try:
        return os.open(found[0], os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _wait(proc: subprocess.Popen[bytes], seconds, cpu_seconds, sampler) -> str:
    """Wait for the sandbox: "" when it ended by itself; "wall" when `seconds` passed first;
    "cpu" when its cgroup counted more than `cpu_seconds` of CPU first (read by this parent, so
    nothing in the sandbox can hide it)."""
    end = time.monotonic() + seconds
    while True:
        try:
            proc.wait(timeout=max(0.0, min(1.0, end - time.monotonic())))
            return ""
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= end:
            return "wall"
        used = sampler.cpu_used()
        if used is not None and used > cpu_seconds:
            return "cpu"


def _drain(fd, log, keep) -> None:
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
