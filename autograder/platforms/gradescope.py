"""The course as a Gradescope autograder.

    python -m autograder gradescope --out autograder.zip [--secret S] [--test-visibility V] ...

builds the zip Gradescope asks for: `setup.sh` (runs once, at image build: Python 3.11, the
pinned dependencies, bubblewrap, an unprivileged user `student`), `run_autograder` (runs per
submission) and, readable by root only once installed, the course package (`lib/`), the secret
and the settings.

Per submission, `python -m autograder.platforms.gradescope ROOT` (ROOT = /autograder):
1. locks down what student code must not read: ROOT/source (model answers, hidden tests,
   secret), ROOT/results and the submission metadata (chmod go-rwx);
2. reads the student id from ROOT/submission_metadata.json (users[0].email, else .id) and seeds
   the hidden inputs with it and the course secret, exactly as `python -m autograder grade`
   does for a folder named like that id;
3. grades ROOT/submission (any layout of autograder.submissions: loose notebooks, sub-folders,
   a zip) in the sandbox: bubblewrap where the container lets it create namespaces, otherwise
   the same driver run as the unprivileged user (`setuid` in the child, like `setpriv`) with the
   rlimits and timeouts, which cannot read ROOT/source, the secret or ROOT/results;
4. writes ROOT/results/results.json in Gradescope's schema: one test per hidden test, top-level
   score, and the visibility settings chosen when the zip was built.
"""

import importlib.metadata
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from pathlib import Path

from autograder import selftest
from autograder.sandbox import Sandbox

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
PACKAGE = HERE.parent  # autograder/
VENV = "/opt/attention-course-venv"
STUDENT_USER = "student"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULTS = {
    "visibility": "visible",  # the whole result (score, output) once graded
    "test_visibility": "after_due_date",  # each hidden test's verdict and message
    "stdout_visibility": "hidden",  # run_autograder's own log: for instructors
    "timeout": 300.0,
    "memory_gb": 6.0,
}


# -- building the zip ----------------------------------------------------------------------------
def pinned_requirements():
    """The course's pinned runtime dependencies, as installed (they mirror pyproject.toml)."""
    pins = []
    for requirement in importlib.metadata.requires("attention-course") or []:
        if ";" in requirement:  # an extra (dev): not needed to grade
            continue
        pins.append(requirement.replace(" ", ""))
    return pins


def render(template, **values):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    return env.get_template(template).render(**values)


def build_zip(out, secret=None, **settings):
    """Write the autograder zip at `out`; returns the secret stored in it."""
    secret = secret or secrets.token_urlsafe(32)
    chosen = {**DEFAULTS, **{k: v for k, v in settings.items() if v is not None}}
    for key in ("visibility", "test_visibility", "stdout_visibility"):
        if chosen[key] not in VISIBILITIES:
            raise ValueError(f"{key} is one of {VISIBILITIES}, not {chosen[key]!r}")
    pins = pinned_requirements()
    torch = [p for p in pins if p.startswith("torch==")]
    if len(torch) != 1:
        raise RuntimeError(f"expected one pinned torch in the course's requirements, got {torch}")
    others = [p for p in pins if not p.startswith("torch==")]
    version = importlib.metadata.version("attention-course")
    files = {
        "setup.sh": render(
            "setup.sh.j2", venv=VENV, torch=torch[0], student_user=STUDENT_USER, version=version
        ),
        "run_autograder": render("run_autograder.j2", venv=VENV),
        "requirements.txt": "\n".join(others) + "\n",
        "settings.json": json.dumps(chosen, indent=1) + "\n",
        "secret": secret + "\n",
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o600
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        for package, folder in (("autograder", PACKAGE), ("coursedata", _coursedata_dir())):
            for path in sorted(folder.rglob("*")):
                if "__pycache__" in path.parts or not path.is_file() or path.is_symlink():
                    continue
                if path.suffix in (".pyc", ".pyo"):
                    continue
                archive.write(path, f"lib/{package}/{path.relative_to(folder)}")
        for path, name in selftest.shipped_files():  # setup.sh's self-test grades them
            if f"lib/{name}" not in archive.namelist():
                archive.write(path, f"lib/{name}")
    return secret


def _coursedata_dir():
    import coursedata

    return Path(coursedata.__file__).resolve().parent


# -- grading one submission ----------------------------------------------------------------------
def student_id(metadata):
    """users[0].email or .id from Gradescope's submission_metadata.json; 'student' if absent."""
    users = (metadata.get("users") or []) if isinstance(metadata, dict) else []
    first = users[0] if users and isinstance(users[0], dict) else {}
    for key in ("email", "id"):
        value = first.get(key)
        if value not in (None, ""):
            return str(value)
    return "student"


def gradescope_results(payload, settings):
    """Gradescope's results.json from our results payload (grade.build_results)."""
    tests = []
    for test in payload.get("tests", []):
        score, max_score = float(test["score"]), float(test["max_score"])
        entry = {
            "name": f"{test.get('notebook', '')}: {test.get('name', test.get('function', ''))}",
            "score": score,
            "max_score": max_score,
            "status": "passed" if score >= max_score else "failed",
            "output": test.get("output", ""),
            "visibility": settings["test_visibility"],
            "extra_data": {
                "notebook": test.get("notebook"),
                "function": test.get("function"),
                "misconceptions": test.get("misconceptions", []),
            },
        }
        if test.get("misconceptions"):
            entry["tags"] = list(test["misconceptions"])
        tests.append(entry)
    lines = []
    for stem, info in payload.get("notebooks", {}).items():
        lines.append(f"{stem}: {info.get('score', 0):g} / {info.get('max_score', 0):g}")
    if payload.get("output"):
        lines += ["", payload["output"]]
    return {
        "score": float(payload.get("score", 0.0)),
        "execution_time": payload.get("execution_time", 0),
        "output": "\n".join(lines),
        "visibility": settings["visibility"],
        "stdout_visibility": settings["stdout_visibility"],
        "extra_data": {"student": payload.get("student"), "max_score": payload.get("max_score")},
        "tests": tests,
    }


class StudentUserSandbox(Sandbox):
    """Where bubblewrap cannot create namespaces: the sandbox's driver, and so the kernels and
    the student's code, run as an unprivileged user (rlimits and timeouts as usual). Its work
    folders are handed to that user; everything else of the grader stays root's."""

    def __init__(self, limits, user=STUDENT_USER):
        if isinstance(user, int):  # a bare uid (gid = uid), e.g. one no other process uses
            self.uid = self.gid = user
            name = f"uid {user}"
        else:
            entry = _user(user)
            self.uid, self.gid, name = entry.pw_uid, entry.pw_gid, entry.pw_name
        with warnings.catch_warnings():  # the generic "no filesystem sandbox" warning: see below
            warnings.simplefilter("ignore", RuntimeWarning)
            super().__init__(limits, mode="none")
        print(
            f"note: bubblewrap cannot create namespaces here; student code runs as the "
            f"unprivileged user {name} (uid {self.uid}), which cannot read the course, "
            "the secret or the results.",
            file=sys.stderr,
        )

    def _build_lib(self):
        super()._build_lib()
        # no bind mounts here: the course data package must be a real copy on the stub's path
        if self.coursedata is not None:
            shutil.copytree(
                self.coursedata,
                self.lib / "lib" / "coursedata",
                ignore=shutil.ignore_patterns("__pycache__"),
                dirs_exist_ok=True,
            )
        _readable_by_all(self.lib)

    def _launch(self, work, pending, log):
        self.hand_over(Path(work))
        try:
            return super()._launch(work, pending, log)
        finally:
            self.kill_leftovers()

    def kill_leftovers(self):
        """Without a pid namespace a student's process can leave the process group (setsid):
        kill every process of the student user, as that user (kill(-1) spares the caller)."""
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only makes system calls
            try:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)

    def hand_over(self, work):
        """The run's folders: writable by the student user; the way to them: traversable only."""
        for name in ("submission", "home", "responses", "status"):
            (work / name).mkdir(parents=True, exist_ok=True)
        (work / "home" / "tmp").mkdir(exist_ok=True)  # TMPDIR without bubblewrap
        for name in ("submission", "home", "responses", "status"):
            for folder, dirs, files in os.walk(work / name, followlinks=False):
                for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.chown(entry, self.uid, self.gid, follow_symlinks=False)
        _readable_by_all(work / "requests")
        if (work / "job.json").exists():
            os.chmod(work / "job.json", 0o644)
        for folder in (work, work.parent):  # x only: no listing of the grader's temp folders
            os.chmod(folder, 0o711)

    def _job_file(self, work, pending):
        path = super()._job_file(work, pending)
        os.chmod(path, 0o644)
        return path

    def _preexec(self, cgroup=None):
        super()._preexec(cgroup)  # the cgroup and the rlimits first, while still root
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)


def _user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return pwd.getpwnam("nobody")


def _readable_by_all(root):
    root = Path(root)
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = 0o555 if path.is_dir() else 0o444
        os.chmod(path, (mode | extra) & 0o7777)


def lock_down(root):
    """What the student's code must never read: root only."""
    for path in (root / "source", root / "results"):
        if path.exists():
            os.chmod(path, 0o700)
    metadata = root / "submission_metadata.json"
    if metadata.exists() and not metadata.is_symlink():
        os.chmod(metadata, 0o600)


def make_sandbox(limits, mode):
    """bubblewrap when it works here; otherwise the unprivileged-user sandbox."""
    if mode in ("bwrap", "auto"):
        try:
            return Sandbox(limits, mode="bwrap")
        except RuntimeError:
            if mode == "bwrap":
                raise
    if os.geteuid() == 0:
        return StudentUserSandbox(limits, os.environ.get("AUTOGRADER_STUDENT_USER", STUDENT_USER))
    return Sandbox(limits, mode="none")  # not root (a test run): nothing to drop


def run_autograder(root):
    """Grade ROOT/submission, write ROOT/results/results.json. Returns the exit status."""
    from autograder import submissions
    from autograder.grade import Settings, grade_student
    from autograder.sandbox import Limits

    root = Path(root).resolve()
    started = time.monotonic()
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    settings_file = root / "source" / "settings.json"
    config = {**DEFAULTS, **json.loads(settings_file.read_text())}
    secret = (root / "source" / "secret").read_text().strip()
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        metadata = {}
    student = student_id(metadata)
    lock_down(root)
    out = Path(tempfile.mkdtemp(prefix="autograder-results-"))
    staging = Path(tempfile.mkdtemp(prefix="autograder-submission-"))
    sandbox = None
    try:
        limits = Limits(timeout=float(config["timeout"]))
        limits.memory_bytes = int(float(config["memory_gb"]) * 2**30)
        settings = Settings(out=out, secret=secret, limits=limits, force=True)
        [sub] = submissions.discover(
            root / "submission", out, staging, layout="student", student=student
        )
        sandbox = make_sandbox(limits, os.environ.get("AUTOGRADER_SANDBOX", "auto"))
        result = grade_student(sub.student, sub.folder, settings, sandbox, sub.messages)
        payload = gradescope_results(result.results, config)
        status = 0
    except Exception:  # noqa: BLE001 - Gradescope must still get a results.json
        payload = {
            "score": 0.0,
            "output": "The autograder failed on this submission; your instructor has the "
            "details. Please tell them.",
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "tests": [],
        }
        traceback.print_exc()
        status = 1
    finally:
        if sandbox is not None:
            sandbox.close()
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    payload["execution_time"] = round(time.monotonic() - started, 2)
    target = results_dir / "results.json"
    partial = results_dir / ".results.json.tmp"
    partial.write_text(json.dumps(payload, indent=1))
    partial.replace(target)
    print(f"{student}: {payload['score']:g} -> {target}")
    return status


# -- the command line ----------------------------------------------------------------------------
def add_arguments(commands):
    cmd = commands.add_parser("gradescope", help="build a Gradescope autograder zip")
    cmd.add_argument("--out", default="autograder.zip", help="the zip to write")
    cmd.add_argument(
        "--secret",
        help="course secret seeding the hidden tests (default: $COURSE_SECRET, else a new "
        "random one, printed once)",
    )
    cmd.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["visibility"],
        help="the whole result: score and summary (default: %(default)s)",
    )
    cmd.add_argument(
        "--test-visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["test_visibility"],
        help="each hidden test's verdict and message (default: %(default)s)",
    )
    cmd.add_argument(
        "--stdout-visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["stdout_visibility"],
        help="the autograder's own log (default: %(default)s)",
    )
    cmd.add_argument("--timeout", type=float, default=DEFAULTS["timeout"])
    cmd.add_argument("--memory", type=float, default=DEFAULTS["memory_gb"])


def run(args):
    given = args.secret or os.environ.get("COURSE_SECRET")
    secret = build_zip(
        args.out,
        secret=given,
        visibility=args.visibility,
        test_visibility=args.test_visibility,
        stdout_visibility=args.stdout_visibility,
        timeout=args.timeout,
        memory_gb=args.memory,
    )
    print(f"wrote {Path(args.out).resolve()}: upload it as the assignment's autograder")
    if not given:
        print(
            f"the course secret stored in it (keep it to regrade the same way): {secret}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_autograder(sys.argv[1] if len(sys.argv) > 1 else "/autograder"))
