"""`python -m autograder grade PATH`: grade one student's folder, or a folder of student folders.

Per student: copy the folder into a private sandbox, run each notebook of SPEC there (a fresh
kernel per notebook), let the harness answer the hidden tests' requests in plain data, and judge
those answers here, in the trusted parent. Writes OUT/<student>/results.json (Gradescope schema
plus SPEC's fields), OUT/<student>/feedback.html, OUT/grades.csv and OUT/summary.{md,json}.
Exit status 0 when grading completed, whatever the scores.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from autograder import submissions
from autograder.curriculum import GRADED_NAMES, NOTEBOOKS
from autograder.probes.base import PROBES, build_cases, derive_seed, judge_cases, write_requests
from autograder.sandbox import Limits, NotebookJob, Sandbox

DEFAULT_SECRET = "course-default-secret"
NOTEBOOK_FILES = {nb.filename for nb in NOTEBOOKS}


@dataclass
class Settings:
    out: Path
    secret: str
    limits: Limits
    workers: int = 1
    force: bool = False
    sandbox_mode: str = "auto"
    keep_work: bool = False


@dataclass
class StudentResult:
    student: str
    results: dict  # the results.json payload
    skipped: bool = False
    error: str = ""
    seconds: float = 0.0
    per_notebook: dict = field(default_factory=dict)


# -- discovery: autograder.submissions turns PATH into students' folders -------------------------
def newest_mtime(folder):
    newest = Path(folder).stat().st_mtime
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                newest = max(newest, (Path(root) / name).lstat().st_mtime)
            except OSError:
                pass
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
def load_notebook(path):
    """(NotebookNode or None, message for the student or ""). Never raises."""
    import nbformat

    name = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"{name} could not be read ({exc.strerror})."
    if not raw.strip():
        return None, f"{name} is empty (0 bytes): save the notebook in Jupyter and submit it again."
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        return None, (
            f"{name} is not a valid notebook file (it is not JSON: {str(exc)[:120]}). "
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
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = []
            cell.execution_count = None
    if not any(c.get("cell_type") == "code" and c.get("source", "").strip() for c in nb.cells):
        return None, f"{name} has no code cells, so none of its functions are defined."
    return nb, message


# -- one student ---------------------------------------------------------------------------------
def grade_student(student, folder, settings, sandbox, placement=None):
    """placement: messages about files that could not be placed (submissions.Submission)."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"autograder-{_safe(student)}-"))
    try:
        return _grade_student(student, folder, settings, sandbox, work, started, placement or {})
    finally:
        if not settings.keep_work:
            shutil.rmtree(work, ignore_errors=True)


def _grade_student(student, folder, settings, sandbox, work, started, placement):
    import nbformat

    from autograder.report import write_student

    plan = []  # (notebook, cases, job or None, note for all tests or None, file message)
    prepared = work / "prepared"
    prepared.mkdir()
    for nb in NOTEBOOKS:
        seed = derive_seed(settings.secret, student, nb.stem)
        cases = build_cases(nb.stem, seed, functions=registered_probes())
        path = folder / nb.filename
        placed = " ".join(placement.get(nb.stem, []))
        if not path.is_file():
            note = (
                placed or f"{nb.filename} was not found in your submission, so its tests score 0."
            )
            plan.append((nb, cases, None, note, note))
            continue
        notebook, message = load_notebook(path)
        message = " ".join(m for m in (placed, message) if m)
        if notebook is None:
            plan.append((nb, cases, None, f"not tested: {message}", message))
            continue
        nbformat.write(notebook, prepared / nb.filename)
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
    runs = {}
    if jobs:
        submission = work / "submission-src"
        from autograder.sandbox import copy_submission

        copy_submission(folder, submission)
        for nb, _, job, _, _ in plan:  # the normalised notebooks replace the originals
            if job is not None:
                shutil.copy2(prepared / nb.filename, submission / nb.filename)
        runs = sandbox.run(submission, jobs, work / "run", log_path=work / "sandbox.log")

    tests, notebooks = [], {}
    for nb, cases, job, note, message in plan:
        run = runs.get(nb.stem)
        if job is None:
            results = judge_cases(cases, None, {"*": note})
            info = {"ran": False, "messages": [message] if message else []}
        else:
            notes = dict(run.notes)
            results = judge_cases(cases, run.responses, notes)
            info = {
                "ran": True,
                "executed_ok": run.executed_ok,
                "cell_errors": run.cell_errors,
                "notes": notes,
                "messages": ([message] if message else []) + run.messages,
                "seconds": round(run.seconds, 2),
            }
        info["score"] = round(sum(r.score for r in results), 4)
        info["max_score"] = round(sum(r.max_score for r in results), 4)
        info["title"] = nb.title
        notebooks[nb.stem] = info
        tests += results

    payload = build_results(
        student, tests, notebooks, time.monotonic() - started, placement.get(submissions.GENERAL)
    )
    write_student(settings.out / student, payload)
    if (work / "sandbox.log").exists():
        _copy_tail(work / "sandbox.log", settings.out / student / "sandbox.log")
    return StudentResult(student, payload, seconds=time.monotonic() - started)


def build_results(student, tests, notebooks, seconds, general=None):
    """The results.json payload: Gradescope's fields, SPEC's test fields, our own extras."""
    lines = list(general or [])
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


def _copy_tail(source, target, limit=20_000):
    data = Path(source).read_bytes()[-limit:]
    target.write_bytes(data)


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]


def internal_error_result(student, exc):
    tb = "".join(traceback.format_exception(exc))
    return StudentResult(student, {}, error=tb)


# -- the class -----------------------------------------------------------------------------------
def grade_class(path, settings, progress=True, layout="auto", graded_groups=None):
    settings.out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="autograder-submissions-"))
    try:
        found = submissions.discover(
            path, settings.out, staging, layout=layout, graded_groups=graded_groups
        )
        return _grade_found(found, settings, progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _grade_found(found, settings, progress):
    from tqdm import tqdm

    from autograder.report import write_class

    todo, done = [], []
    for sub in found:
        student = sub.student
        results = settings.out / student / "results.json"
        if not settings.force and up_to_date(sub.source, results):
            done.append(StudentResult(student, json.loads(results.read_text()), skipped=True))
        else:
            todo.append(sub)

    untested = [name for name in GRADED_NAMES if name not in registered_probes()]
    if untested:
        print(f"warning: no hidden tests registered for: {', '.join(untested)}", file=sys.stderr)
    sandbox = Sandbox(settings.limits, mode=settings.sandbox_mode) if todo else None
    try:
        if todo:
            with ThreadPoolExecutor(max_workers=max(1, settings.workers)) as pool:
                futures = {
                    pool.submit(
                        grade_student, s.student, s.folder, settings, sandbox, s.messages
                    ): (s.student)
                    for s in todo
                }
                bar = tqdm(total=len(futures), desc="grading", unit="student", disable=not progress)
                for future in as_completed(futures):
                    student = futures[future]
                    try:
                        done.append(future.result())
                    except Exception as exc:  # noqa: BLE001 - report it, grade the others
                        done.append(internal_error_result(student, exc))
                    bar.update(1)
                bar.close()
    finally:
        if sandbox is not None:
            sandbox.close()
    done.sort(key=lambda r: r.student)
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
    limits = Limits(timeout=float(args.timeout))
    if getattr(args, "memory", None):
        limits.memory_bytes = int(float(args.memory) * 2**30)
    return Settings(
        out=Path(args.out).resolve(),
        secret=secret,
        limits=limits,
        workers=int(args.workers),
        force=bool(args.force),
        sandbox_mode=getattr(args, "sandbox", None) or "auto",
        keep_work=bool(getattr(args, "keep_work", False)),
    )


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
    graded = [r for r in done if not r.skipped and not r.error]
    skipped = [r for r in done if r.skipped]
    failed = [r for r in done if r.error]
    print(summary["text"])
    print(
        f"graded {len(graded)} student(s), skipped {len(skipped)} up to date, "
        f"{len(failed)} internal error(s) in {elapsed:.1f} s -> {settings.out}"
    )
    for r in failed:
        print(f"INTERNAL ERROR grading {r.student}:\n{r.error}", file=sys.stderr)
    return 1 if failed else 0
