"""`python -m autograder grade PATH`: grade one student's folder, or a folder of student folders.

Per student: copy the folder into a private sandbox, run each notebook of SPEC there (a fresh
kernel per notebook), let the harness answer the hidden tests' requests in plain data, and judge
those answers here, in the trusted parent. Writes OUT/<student>/results.json (Gradescope schema
plus SPEC's fields), OUT/<student>/feedback.html, OUT/grades.csv and OUT/summary.{md,json}.
Exit status 0 when grading completed, whatever the scores.
"""

import fcntl
import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from autograder import selftest, submissions
from autograder.curriculum import GRADED_NAMES, NOTEBOOKS
from autograder.judging.answers import judge_cases
from autograder.probes.base import PROBES, build_cases, derive_seed, write_requests
from autograder.results import TestResult
from autograder.safe_files import MB, UnsafeFile, printable, read_bytes, remove_tree, walk
from autograder.sandbox import Limits, NotebookJob, Sandbox, SandboxFailure
from autograder.sandbox.bubblewrap import BubblewrapUnsupported
from autograder.sandbox.limits import bound_workers

DEFAULT_SECRET = "course-default-secret"
NOTEBOOK_FILES = {nb.filename for nb in NOTEBOOKS}
MAX_NOTEBOOK_BYTES = 20 * MB  # a notebook larger than this is not read (with a message)
LOCK_NAME = ".grading.lock"  # in OUT: one grading run at a time
RUN_PREFIX = "autograder-run-"  # per-run work folder in the temp dir; stale ones are removed
MEMORY_FS = Path("/dev/shm")  # preferred for the scratch files when it is a roomy tmpfs
MEMORY_FS_MIN_FREE = 2 * 2**30  # a Docker container's default 64 MB /dev/shm is not used


@dataclass
class Settings:
    out: Path
    secret: str
    limits: Limits
    workers: int = 1
    force: bool = False
    sandbox_mode: str = "auto"
    keep_work: bool = False
    max_notebook_bytes: int = MAX_NOTEBOOK_BYTES
    work_root: Path | None = None  # this run's work folder (made by grade_class)
    notebooks: tuple = ()  # --notebook: regrade only these stems, keep the others' verdicts
    deadlines: object = None  # autograder.deadlines.LatePolicy, or None: no late penalties
    handed_in: dict = field(default_factory=dict)  # student -> {stem: time} (--handed-in)
    skip_selftest: bool = False  # emergencies only (autograder/selftest.py): loudly warned


@dataclass
class StudentResult:
    student: str
    results: dict  # the results.json payload
    skipped: bool = False
    error: str = ""  # the traceback of an internal error of the grader
    seconds: float = 0.0
    refused: str = ""  # why this student was not graded (their id, two submissions)
    per_notebook: dict = field(default_factory=dict)


# -- discovery: autograder.submissions turns PATH into students' folders -------------------------
def output_folder(out, student):
    """OUT/<student>, except for a student whose name is one of the class report's files
    (grades.csv, summary.md, ...) once its leading underscores are set aside: one more "_" in
    front (grades.csv -> OUT/_grades.csv, _grades.csv -> OUT/__grades.csv), so no two students
    share a folder and none overwrites the report."""
    from autograder.report import REPORT_FILES

    reserved = {name.casefold() for name in REPORT_FILES} | {LOCK_NAME}
    bare = student.lstrip("_").casefold()
    return Path(out) / (f"_{student}" if bare in reserved else student)


def newest_mtime(folder):
    """The newest modification time in a student's folder (iterative, links not followed)."""
    newest = Path(folder).stat().st_mtime
    for _, name, info in walk(folder):
        if name is not None:
            newest = max(newest, info.st_mtime)
    return newest


def up_to_date(folder, results_path):
    try:
        return results_path.stat().st_mtime > newest_mtime(folder)
    except OSError:
        return False


def registered_probes():
    """The graded names that have hidden tests (probe modules may still be being written)."""
    from autograder.probes import load_all

    load_all()
    return {name for name in GRADED_NAMES if name in PROBES}


# -- one notebook file ---------------------------------------------------------------------------
def load_notebook(folder, filename, max_bytes=MAX_NOTEBOOK_BYTES):
    """(NotebookNode or None, message for the student or ""). Never raises.

    The file is read without following a link (a notebook that is a symbolic link, a FIFO or a
    device scores 0 with a message), only when it is a regular file of at most max_bytes, and
    its JSON may not nest deeper than safe_files.MAX_JSON_DEPTH.
    """
    try:
        return _load_notebook(folder, filename, max_bytes)
    except (RecursionError, MemoryError) as exc:
        return (
            None,
            f"{filename} could not be read: it is too large or too deeply nested ({type(exc).__name__}).",
        )
    except Exception as exc:  # noqa: BLE001 - a file we cannot read is that student's message
        return (
            None,
            f"{filename} could not be read as a notebook ({type(exc).__name__}: {str(exc)[:120]}).",
        )


def _load_notebook(folder, name, max_bytes):
    import nbformat

    from autograder.safe_files import parse_json

    try:
        raw = read_bytes(folder, [name], max_bytes)
    except UnsafeFile as exc:
        if exc.kind == "symlink":
            return None, f"{name} is a symbolic link; upload the file itself."
        if exc.kind == "too-large":
            return None, (
                f"{exc.message}: a notebook this large is not graded. Clear the outputs "
                "(Kernel > Restart & Clear Output), save, and submit it again."
            )
        if exc.kind in ("special", "directory"):
            return None, f"{exc.message}; upload the notebook file itself."
        return None, f"{name} could not be read ({exc.message})."
    if not raw.strip():
        return None, f"{name} is empty (0 bytes): save the notebook in Jupyter and submit it again."
    try:
        data = parse_json(raw.decode("utf-8", errors="replace"), name)
    except UnsafeFile as exc:
        if exc.kind == "too-deep":
            return None, f"{name} is not a notebook Jupyter saved: {exc.message}."
        return None, (
            f"{name} is not a valid notebook file ({exc.message}). "
            "Was it saved from Jupyter, or renamed from another file?"
        )
    if not isinstance(data, dict) or "nbformat" not in data:
        return None, f"{name} is JSON but not a Jupyter notebook (no nbformat field)."
    message = ""
    try:
        version = int(data.get("nbformat", 0))
        nb = nbformat.reads(json.dumps(data), as_version=4)
        if version != 4:
            message = f"{name} was saved in notebook format v{version}; it was converted to v4."
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds
        return (
            None,
            f"{name} could not be read as a notebook ({type(exc).__name__}: {str(exc)[:120]}).",
        )
    try:
        nbformat.validator.normalize(nb)
    except Exception:  # noqa: BLE001
        pass
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return None, f"{name} has no list of cells, so none of its functions are defined."
    for cell in cells:
        if not isinstance(cell, dict):
            return None, f"{name} has a cell that is not a cell object; save it again in Jupyter."
        if cell.get("cell_type") == "code":
            cell.outputs = []
            cell.execution_count = None
            if not isinstance(cell.get("source", ""), str):
                return None, f"{name} has a code cell whose source is not text."
    if not any(c.get("cell_type") == "code" and c.get("source", "").strip() for c in cells):
        return None, f"{name} has no code cells, so none of its functions are defined."
    return nb, message


# -- one student ---------------------------------------------------------------------------------
def grade_student(student, folder, settings, sandbox, placement=None, kept=None):
    """placement: messages about files that could not be placed (submissions.Submission);
    kept: {stem: (tests as JSON, notebook info)} of notebooks not to grade again (--notebook)."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"student-{_safe(student)}-", dir=settings.work_root))
    try:
        return _grade_student(
            student, folder, settings, sandbox, work, started, placement or {}, kept or {}
        )
    finally:
        if not settings.keep_work:
            _remove_quietly(work)


def _remove_quietly(path):
    try:
        remove_tree(path)
    except OSError as exc:
        print(f"warning: could not remove {printable(path)}: {exc.strerror}", file=sys.stderr)


def _notebook_file(folder, filename):
    """'missing' or 'present' (a link, a folder or a FIFO is present: load_notebook says why)."""
    try:
        os.lstat(Path(folder) / filename)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "present"
    return "present"


def _grade_student(student, folder, settings, sandbox, work, started, placement, kept):
    import nbformat

    from autograder.report import write_student

    plan = []  # (notebook, cases, job or None, note for all tests or None, file message)
    prepared = work / "prepared"
    prepared.mkdir()
    not_submitted = set()  # stems whose file is not in the submission (the class page counts them)
    for nb in NOTEBOOKS:
        if nb.stem in kept:
            continue  # --notebook: its verdicts of the last run stand
        seed = derive_seed(settings.secret, _encodable(student), nb.stem)
        cases = build_cases(nb.stem, seed, functions=registered_probes())
        placed = " ".join(placement.get(nb.stem, []))
        if _notebook_file(folder, nb.filename) == "missing":
            note = (
                placed or f"{nb.filename} was not found in your submission, so its tests score 0."
            )
            plan.append((nb, cases, None, note, note))
            not_submitted.add(nb.stem)
            continue
        notebook, message = load_notebook(folder, nb.filename, settings.max_notebook_bytes)
        message = " ".join(m for m in (placed, message) if m)
        if notebook is None:
            plan.append((nb, cases, None, f"not tested: {message}", message))
            continue
        try:
            # nbformat.v4's writer, without nbformat.write's second validation (load_notebook
            # validated it; the sandbox's driver reads it with nbformat again)
            text = nbformat.v4.writes(notebook)
            (prepared / nb.filename).write_text(text, encoding="utf-8")
        except (ValueError, RecursionError) as exc:  # e.g. cell metadata nbformat cannot write
            message = f"{nb.filename} could not be prepared for grading ({type(exc).__name__})."
            plan.append((nb, cases, None, f"not tested: {message}", message))
            continue
        request_dir = work / "run" / "requests" / nb.stem
        write_requests(cases, request_dir)
        serve = {}
        for case in cases:
            seconds = sum(float(r.get("seconds", case.seconds)) for r in case.requests)
            serve[case.function] = serve.get(case.function, 10.0) + seconds
        plan.append(
            (nb, cases, NotebookJob(nb.stem, nb.filename, request_dir, serve), None, message)
        )

    jobs = [job for _, _, job, _, _ in plan if job is not None]
    runs, submission_messages = {}, []
    if jobs:
        submission = work / "submission-src"
        from autograder.sandbox import copy_submission

        for rel, why in copy_submission(folder, submission):
            if rel not in NOTEBOOK_FILES:  # the notebooks have their own message
                submission_messages.append(
                    f"{printable(rel)} was not copied into the grading sandbox: {why}."
                )
        for nb, _, job, _, _ in plan:  # the normalised notebooks replace the originals
            if job is not None:
                target = submission / nb.filename
                if target.is_dir() and not target.is_symlink():
                    remove_tree(target)
                shutil.copyfile(prepared / nb.filename, target)
        runs = sandbox.run(submission, jobs, work / "run", log_path=work / "sandbox.log")
        broken = [f"{stem}: {run.not_graded}" for stem, run in runs.items() if run.not_graded]
        if broken:
            if (work / "sandbox.log").exists():  # for the instructor: what the sandbox said
                target = output_folder(settings.out, student)
                target.mkdir(parents=True, exist_ok=True)
                _copy_tail(work / "sandbox.log", target / "sandbox.log")
            raise SandboxFailure("; ".join(broken))

    tests, notebooks = [], {}
    for stem, (kept_tests, kept_info) in kept.items():
        tests += [TestResult.from_json(t) for t in kept_tests]
        notebooks[stem] = kept_info
    for nb, cases, job, note, message in plan:
        run = runs.get(nb.stem)
        if job is None:
            results = judge_cases(cases, None, {"*": note})
            info = {"ran": False, "messages": [message] if message else []}
        else:
            notes = dict(run.notes)
            # answers are read below work/run/responses, a folder the sandbox cannot replace
            results = judge_cases(
                cases, run.responses, notes, trusted_root=work / "run" / "responses"
            )
            info = {
                "ran": True,
                "executed_ok": run.executed_ok,
                "cell_errors": run.cell_errors,
                "notes": notes,
                "messages": ([message] if message else []) + run.messages,
                "seconds": round(run.seconds, 2),
            }
            if run.integrity:
                info["integrity"] = list(run.integrity)
        info["score"] = round(sum(r.score for r in results), 4)
        info["max_score"] = round(sum(r.max_score for r in results), 4)
        info["title"] = nb.title
        info["submitted"] = nb.stem not in not_submitted
        notebooks[nb.stem] = info
        tests += results

    if len(submission_messages) > 20:
        more = len(submission_messages) - 19
        submission_messages[19:] = [f"... and {more} more files were not copied."]
    general = list(placement.get(submissions.GENERAL, [])) + submission_messages
    order = {nb.stem: i for i, nb in enumerate(NOTEBOOKS)}
    tests.sort(key=lambda t: order[t.notebook])  # stable: each notebook's tests keep their order
    notebooks = {stem: notebooks[stem] for stem in sorted(notebooks, key=order.get)}
    payload = build_results(student, tests, notebooks, time.monotonic() - started, general)
    target = output_folder(settings.out, student)
    write_student(target, payload)
    if (work / "sandbox.log").exists():
        _copy_tail(work / "sandbox.log", target / "sandbox.log")
    return StudentResult(student, payload, seconds=time.monotonic() - started)


def build_results(student, tests, notebooks, seconds, submission_messages=()):
    """The results.json payload: Gradescope's fields, SPEC's test fields, our own extras."""
    lines = list(submission_messages)
    for stem, info in notebooks.items():
        for text in info.get("messages", []):
            lines.append(f"{stem}: {text}")
        for err in info.get("cell_errors", []):
            where = f" (`{err['line']}`)" if err.get("line") else ""
            lines.append(
                f"{stem}: cell {err['cell'] + 1}{where} raised {err['type']}: {err['message']}"
            )
    score = round(sum(t.score for t in tests), 4)
    max_score = round(sum(t.max_score for t in tests), 4)
    return {
        "score": score,
        "max_score": max_score,
        "output": "\n".join(lines) if lines else "All notebooks ran without errors.",
        "execution_time": round(seconds, 2),
        "student": student,
        "notebooks": notebooks,
        "tests": [t.to_json() for t in tests],
    }


def _apply_deadlines(done, sources, settings):
    """Late penalties (autograder/deadlines.py) on every student's results, graded by this run or
    before: recomputed from the raw verdicts, so a changed policy needs no regrading."""
    from autograder.deadlines import apply_late_policy, handed_in_from_files
    from autograder.report import write_student

    for result in done:
        if result.error or not result.results.get("tests"):
            continue  # an internal error: nothing was graded
        if settings.deadlines is None and "late" not in result.results:
            continue  # no policy now, none before
        handed_in = settings.handed_in.get(result.student)
        if handed_in is None and settings.deadlines is not None:
            handed_in = handed_in_from_files(sources[result.student])
        if apply_late_policy(result.results, settings.deadlines, handed_in or {}):
            write_student(output_folder(settings.out, result.student), result.results)


def _copy_tail(source, target, limit=20_000):
    from autograder.report import atomic_write

    source = Path(source)
    try:
        data = read_bytes(source.parent, [source.name], limit, tail=True)
    except UnsafeFile:
        return
    # the student's own stderr: escape sequences (clear screen, clipboard writes) are shown, not
    # sent to the terminal of an instructor who prints the log
    text = data.decode("utf-8", errors="replace")
    atomic_write(target, "\n".join(printable(line) for line in text.split("\n")))


def _encodable(name):
    """The name itself, unless the folder's name is not UTF-8 (surrogate escapes): then a
    stable text that can be encoded (the seed is a hash of it)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]


def internal_error_result(student, exc, out=None):
    """A failure of the grader on one student: reported, and that student still appears in
    grades.csv (score 0, marked internal_error, so the next run grades them again)."""
    tb = "".join(traceback.format_exception(exc))
    output = (
        f"The grader failed on this submission ({type(exc).__name__}); nothing was graded. "
        "Your instructor has been told."
    )
    if isinstance(exc, SandboxFailure):  # a failure of the machine, not of the grader's code
        tb = f"NOT GRADED: the grading sandbox failed ({exc}); the next run grades it again.\n"
        output = (
            "NOT GRADED: the grading sandbox failed on this submission for reasons that are not "
            f"yours ({exc}). Nothing was scored; your instructor will grade it again."
        )
    payload = {
        "score": 0.0,
        "max_score": 0.0,
        "output": output,
        "student": student,
        "internal_error": True,
        "notebooks": {},
        "tests": [],
    }
    if out is not None:
        try:
            from autograder.report import write_student

            write_student(output_folder(out, student), payload)
        except Exception:  # noqa: BLE001 - the traceback below is what matters
            pass
    return StudentResult(student, payload, error=tb)


# -- the class -----------------------------------------------------------------------------------
def lock_output(out):
    """Hold OUT/.grading.lock (flock) for this process's lifetime; refuse if another run has it.
    The lock dies with its process, so a run killed with SIGKILL never blocks the next one."""
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise SystemExit(
            f"error: another grading run is using {printable(out)} (pid {printable(holder)}); "
            "wait for it to finish or grade into another --out folder."
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def release_output(fd):
    os.close(fd)  # closing the last descriptor releases the flock


def _clean_interrupted_writes(out):
    """Temporary files of atomic writes interrupted by a killed run (never the real files)."""
    from autograder.report import TEMP_PREFIX

    for parts, name, info in walk(out, max_depth=2):
        if name and name.startswith(".") and TEMP_PREFIX in name and stat.S_ISREG(info.st_mode):
            try:
                Path(out).joinpath(*parts, name).unlink()
            except OSError:
                pass


def scratch_folder():
    """Where this run's work folder goes: $AUTOGRADER_WORK_DIR, else $TMPDIR if it is set, else
    /dev/shm when it is a memory file system (tmpfs) with MEMORY_FS_MIN_FREE to spare, else the
    usual temp folder.

    Grading writes and removes some thousand small files per student (hidden-test requests, the
    sandbox's copies, its answers). On a disk file system that churn cost the parent 0.5-1 CPU-s
    of kernel time per student (ext4 allocating inodes beside recently deleted ones), on tmpfs
    about 0.1. The files live only while their student is graded."""
    if os.environ.get("AUTOGRADER_WORK_DIR"):
        return Path(os.environ["AUTOGRADER_WORK_DIR"])
    if not os.environ.get("TMPDIR") and _roomy_memory_fs(MEMORY_FS):
        return MEMORY_FS
    return Path(tempfile.gettempdir())


def _roomy_memory_fs(path):
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            kinds = {f[1]: f[2] for f in map(str.split, mounts) if len(f) > 2}
        if kinds.get(str(path)) != "tmpfs" or not os.access(path, os.W_OK | os.X_OK):
            return False
        free = os.statvfs(path)
        return free.f_bavail * free.f_frsize >= MEMORY_FS_MIN_FREE
    except OSError:
        return False


def start_work_root(keep=False, folder=None):
    """This run's work folder in `folder` (default: scratch_folder()), marked by a held flock;
    work folders of runs that died (lock free) are removed first."""
    temp = Path(folder) if folder is not None else scratch_folder()
    temp.mkdir(parents=True, exist_ok=True)
    for stale in sorted(temp.glob(f"{RUN_PREFIX}*")):
        if stale.is_symlink() or not stale.is_dir() or (stale / "keep").exists():
            continue
        try:
            fd = os.open(stale / "lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run
        finally:
            os.close(fd)
        _remove_quietly(stale)
    root = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=temp))
    fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    if keep:
        (root / "keep").touch()
    return root, fd


def preflight(mode):
    """One clear message, with the fix, for a missing tool; None when all is there."""
    try:
        kernel = importlib.util.find_spec("ipykernel")
    except (ImportError, ValueError):
        kernel = None
    if kernel is None:
        return (
            f"error: ipykernel is not installed in {printable(sys.executable)}, so no notebook "
            "can run. Install it: pip install ipykernel (or pip install -e '.[dev]')."
        )
    if mode == "bwrap" and shutil.which("bwrap") is None:
        return (
            "error: --sandbox bwrap was requested but bubblewrap (bwrap) is not installed. "
            "Install it (apt-get install bubblewrap), or use --sandbox auto to grade without "
            "isolation after a warning."
        )
    return None


def kept_verdicts(saved, regrade):
    """{stem: (tests, info)} of the notebooks `--notebook` does not name, from the last results;
    {} (grade everything) when there are none, or when they lack a notebook."""
    if not regrade or not saved:
        return {}
    kept = {}
    for nb in NOTEBOOKS:
        if nb.stem in regrade:
            continue
        tests = [t for t in saved.get("tests", []) if t.get("notebook") == nb.stem]
        info = saved.get("notebooks", {}).get(nb.stem)
        if not tests or not isinstance(info, dict):
            return {}
        kept[nb.stem] = (tests, info)
    return kept


def _read_saved(results):
    try:
        payload = json.loads(read_bytes(results.parent, [results.name], 64 * MB))
    except (UnsafeFile, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) and not payload.get("internal_error") else None


def grade_class(path, settings, progress=True, layout="auto", graded_groups=None):
    from autograder.report import write_class

    problem = preflight(settings.sandbox_mode)
    if problem:
        raise SystemExit(problem)
    lock = lock_output(settings.out)
    try:
        _clean_interrupted_writes(settings.out)
        # the students' work (made and removed one student at a time) in the scratch folder;
        # the gathered submissions (the whole class's, for the whole run) in the usual temp
        # folder: a class of large notebooks must not fill a memory file system
        runs = [start_work_root(settings.keep_work)]  # [(folder, its lock's fd)]
        try:
            disk = Path(tempfile.gettempdir())
            if runs[0][0].parent != disk:
                runs.append(start_work_root(settings.keep_work, disk))
            settings.work_root = runs[0][0]
            staging = runs[-1][0] / "submissions"
            staging.mkdir()
            notices = []
            found = submissions.discover(
                path,
                settings.out,
                staging,
                layout=layout,
                graded_groups=graded_groups,
                notices=notices,
            )
            done, summary = _grade_class(found, settings, progress, write_class)
            summary["skipped_entries"] = notices  # this run's, not written to summary.json
            return done, summary
        finally:
            for folder, fd in runs:
                os.close(fd)
                if not settings.keep_work:
                    _remove_quietly(folder)
    finally:
        release_output(lock)


def _grade_class(found, settings, progress, write_class):
    from tqdm import tqdm

    todo, done, kept = [], [], {}
    for sub in found:
        student = sub.student
        if sub.refused:
            done.append(StudentResult(student, {}, refused=sub.refused))
            continue
        results = output_folder(settings.out, student) / "results.json"
        fresh = not settings.force and up_to_date(sub.source, results)
        saved = _read_saved(results) if fresh or settings.notebooks else None
        if saved is not None and not settings.notebooks:
            done.append(StudentResult(student, saved, skipped=True))
        else:
            todo.append(sub)
            kept[student] = kept_verdicts(saved, settings.notebooks)

    untested = [name for name in GRADED_NAMES if name not in registered_probes()]
    if untested:
        print(f"warning: no hidden tests registered for: {', '.join(untested)}", file=sys.stderr)
    sandbox = None
    workers, message = bound_workers(max(1, settings.workers), settings.limits)
    if message and len(todo) > 1:
        print(f"note: {message}", file=sys.stderr)
    if todo:
        try:
            sandbox = Sandbox(
                settings.limits, mode=settings.sandbox_mode, lib_root=settings.work_root / "lib"
            )
        except BubblewrapUnsupported as exc:  # too old for the sandbox: never silently none
            raise SystemExit(f"error: {exc}.") from None
        except RuntimeError as exc:  # --sandbox bwrap where bubblewrap cannot run
            raise SystemExit(
                f"error: {exc}. Install bubblewrap (apt-get install bubblewrap) and allow user "
                "namespaces, or use --sandbox auto to grade without isolation after a warning."
            ) from None
    try:
        if todo:
            try:  # the solutions score full marks here and a blank 0, or nobody is graded
                selftest.guard(sandbox, workers, settings.work_root, skip=settings.skip_selftest)
            except selftest.SelfTestFailed as exc:
                raise SystemExit(f"error: {exc}") from None
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {
                    pool.submit(
                        grade_student,
                        s.student,
                        s.folder,
                        settings,
                        sandbox,
                        s.messages,
                        kept[s.student],
                    ): (s.student)  # fmt: skip
                    for s in todo
                }
                bar = tqdm(total=len(futures), desc="grading", unit="student", disable=not progress)
                for future in as_completed(futures):
                    student = futures[future]
                    try:
                        done.append(future.result())
                    except Exception as exc:  # noqa: BLE001 - report it, grade the others
                        done.append(internal_error_result(student, exc, settings.out))
                    bar.update(1)
                bar.close()
    finally:
        if sandbox is not None:
            sandbox.close()
    done.sort(key=lambda r: r.student)
    _apply_deadlines(done, {s.student: s.source for s in found}, settings)
    summary = write_class(settings.out)  # every student graded into OUT, by this run or before
    return done, summary


def settings_from_args(args):
    """Settings from the `grade` options (also used by the nbgrader and Gradescope commands)."""
    secret = getattr(args, "secret", None) or os.environ.get("COURSE_SECRET")
    if not secret:
        secret = DEFAULT_SECRET
        print(
            "warning: COURSE_SECRET is not set; using the public default, so students could "
            "predict the hidden tests' inputs. Set COURSE_SECRET (or --secret) for real grading.",
            file=sys.stderr,
        )
    deadlines, handed_in = None, {}
    if getattr(args, "deadlines", None):
        from autograder.deadlines import PolicyError, load_handed_in, load_policy

        try:
            deadlines = load_policy(args.deadlines)
            if getattr(args, "handed_in", None):
                handed_in = load_handed_in(args.handed_in)
        except PolicyError as exc:
            raise SystemExit(f"error: {exc}") from None
    elif getattr(args, "handed_in", None):
        raise SystemExit("error: --handed-in needs --deadlines (the due dates and the penalty)")
    return Settings(
        out=Path(args.out).resolve(),
        secret=secret,
        limits=limits_from_args(args),
        workers=int(args.workers),
        force=bool(args.force),
        sandbox_mode=getattr(args, "sandbox", None) or "auto",
        keep_work=bool(getattr(args, "keep_work", False)),
        notebooks=tuple(getattr(args, "notebook", None) or ()),
        deadlines=deadlines,
        handed_in=handed_in,
        skip_selftest=bool(getattr(args, "skip_selftest", False)),
    )


def limits_from_args(args):
    """The sandbox's Limits from the --timeout and --memory options."""
    limits = Limits(timeout=float(args.timeout))
    if getattr(args, "memory", None):
        limits.memory_bytes = int(float(args.memory) * 2**30)
    return limits


def grade_command(args):
    settings = settings_from_args(args)
    started = time.monotonic()
    done, summary = grade_class(
        args.path,
        settings,
        progress=not getattr(args, "quiet", False),
        layout=getattr(args, "layout", "auto"),
    )
    elapsed = time.monotonic() - started
    graded = [r for r in done if not r.skipped and not r.error and not r.refused]
    skipped = [r for r in done if r.skipped]
    failed = [r for r in done if r.error]
    refused = [r for r in done if r.refused]
    print(summary["text"])
    print(
        f"graded {len(graded)} student(s), skipped {len(skipped)} up to date, "
        f"{len(refused)} not graded, {len(failed)} internal error(s) in {elapsed:.1f} s -> "
        f"{printable(settings.out)}"
    )
    for line in summary.get("skipped_entries", []):  # escaped where they were found
        print(f"skipped entry {line}", file=sys.stderr)
    for r in failed:
        shown = "\n".join(printable(line) for line in r.error.splitlines())
        print(f"INTERNAL ERROR grading {printable(r.student)}:\n{shown}", file=sys.stderr)
    for r in refused:
        print(f"NOT GRADED {printable(r.student)}: {r.refused}", file=sys.stderr)
    if failed or refused:
        names = ", ".join(printable(r.student) for r in failed + refused)
        print(f"NOT GRADED (the next run grades them again): {names}")
        print(
            f"error: {len(failed) + len(refused)} student(s) not graded: {names}", file=sys.stderr
        )
    if settings.skip_selftest or selftest.skipped_by_env():
        print(selftest.skip_banner("these grades were made without it"), file=sys.stderr)
    return 1 if failed or refused else 0
