"""One student's grading, as steps in order:

    plans = plan_notebooks(...)            # plan.py: cases drawn, notebooks read and prepared
    runs = run_in_sandbox(...)             # the notebooks run, the requests answered as data
    tests, notebooks = judge(...)          # verdicts here, in the trusted parent
    payload = build_results(...)           # payload.py: the results.json payload
    apply_late(payload, ...)               # payload.py: late penalties (--deadlines)
    write_student(OUT/<student>, payload)  # results.json and feedback.html, written once

    result = grade_student(student, folder, settings, sandbox)   # all of it: a StudentResult

The self-test (grading/selftest.py) and Gradescope's runner call grade_student alone; the class
run (grading/classrun.py) calls it once per student, in a pool of workers.
"""

import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from autograder import memory_ceiling, submissions
from autograder.curriculum import NOTEBOOKS
from autograder.grading.payload import apply_late, build_results
from autograder.grading.plan import NOTEBOOK_FILES, plan_notebooks
from autograder.judging.answers import judge_cases
from autograder.judging.dependencies import unavailable_names
from autograder.report import REPORT_FILES, atomic_write, write_student
from autograder.results import UNAVAILABLE, TestResult, reason_of
from autograder.safe_files import UnsafeFile, printable, read_bytes, remove_tree
from autograder.sandbox import SandboxFailure, copy_submission

LOCK_NAME = ".grading.lock"  # in OUT: one grading run at a time
MAX_SUBMISSION_MESSAGES = 20  # files not copied into the sandbox, named one by one


@dataclass
class StudentResult:
    student: str
    results: dict  # the results.json payload
    skipped: bool = False
    error: str = ""  # the traceback of an internal error of the grader
    seconds: float = 0.0
    refused: str = ""  # why this student was not graded (their id, two submissions)
    per_notebook: dict = field(default_factory=dict)  # stem -> {"cpu_seconds": on its clock}


def output_folder(out, student):
    """OUT/<student>, except for a student whose name is one of the class report's files
    (grades.csv, summary.md, ...) once its leading underscores are set aside: one more "_" in
    front (grades.csv -> OUT/_grades.csv, _grades.csv -> OUT/__grades.csv), so no two students
    share a folder and none overwrites the report."""
    reserved = {name.casefold() for name in REPORT_FILES} | {LOCK_NAME}
    bare = student.lstrip("_").casefold()
    return Path(out) / (f"_{student}" if bare in reserved else student)


def grade_student(student, folder, settings, sandbox, placement=None, kept=None, files=None):
    """placement: messages about files that could not be placed (submissions.Submission);
    kept: {stem: (tests as JSON, notebook info)} of notebooks not to grade again (--notebook);
    files: {stem: the student's own file graded as it}, for its time (late penalties; default:
    placement's `sources`, else the notebooks in `folder` by their own names)."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"student-{_safe(student)}-", dir=settings.work_root))
    try:
        return _grade_student(
            student,
            folder,
            settings,
            sandbox,
            work,
            started,
            placement or {},
            kept or {},
            graded_files(folder, placement) if files is None else files,
        )
    finally:
        if not settings.keep_work:
            remove_quietly(work)


def remove_quietly(path):
    try:
        remove_tree(path)
    except OSError as exc:
        print(f"warning: could not remove {printable(path)}: {exc.strerror}", file=sys.stderr)


def graded_files(folder, placement=None):
    """{stem: file} whose times are the hand-in times: the placement's `sources` (the files
    submissions.discover took), else each notebook in `folder` by its own name. A file of an
    LMS's bulk download whose dates are not hand-in times is its mark instead (Canvas's late
    or not: deadlines.LmsMark)."""
    sources = getattr(placement, "sources", None)
    if sources is not None:
        return {**sources, **getattr(placement, "marks", {})}
    return {nb.stem: Path(folder) / nb.filename for nb in NOTEBOOKS}


def _grade_student(student, folder, settings, sandbox, work, started, placement, kept, files):
    plans = plan_notebooks(student, folder, settings, work, placement, kept)
    runs, submission_messages = run_in_sandbox(student, folder, plans, settings, sandbox, work)
    tests, notebooks = judge(plans, runs, kept, work)
    if len(submission_messages) > MAX_SUBMISSION_MESSAGES:
        more = len(submission_messages) - (MAX_SUBMISSION_MESSAGES - 1)
        submission_messages[MAX_SUBMISSION_MESSAGES - 1 :] = [
            f"... and {more} more files were not copied."
        ]
    general = list(placement.get(submissions.GENERAL, [])) + submission_messages
    payload = build_results(student, tests, notebooks, time.monotonic() - started, general)
    if runs:  # what this student's sandboxes cost, as the parent counted it (the class page)
        payload["cpu_seconds"] = round(max(r.sandbox_cpu_seconds for r in runs.values()), 2)
    if student in settings.submission_digests:  # what was graded (grading/classrun.py)
        payload["submission_digest"] = settings.submission_digests[student]
        if settings.fingerprint:  # and how (grading/fingerprint.py)
            payload["grading_fingerprint"] = settings.fingerprint
    apply_late(payload, settings, student, files)
    target = output_folder(settings.out, student)
    write_student(target, payload)
    if (work / "sandbox.log").exists():
        copy_tail(work / "sandbox.log", target / "sandbox.log")
    cpu = {
        stem: {"cpu_seconds": run.cpu_seconds, "cells_cpu_seconds": run.cells_cpu_seconds}
        for stem, run in runs.items()
    }
    return StudentResult(student, payload, seconds=time.monotonic() - started, per_notebook=cpu)


def run_in_sandbox(student, folder, plans, settings, sandbox, work):
    """The planned notebooks run in the sandbox: ({stem: NotebookRun}, messages about files
    that were not copied). Raises SandboxFailure when the sandbox failed, not the student."""
    jobs = [plan.job for plan in plans if plan.job is not None]
    runs, messages = {}, []
    if not jobs:
        return runs, messages
    submission = work / "submission-src"
    for rel, why in copy_submission(folder, submission):
        if rel not in NOTEBOOK_FILES:  # the notebooks have their own message
            messages.append(f"{printable(rel)} was not copied into the grading sandbox: {why}.")
    for plan in plans:  # the normalised notebooks replace the originals
        if plan.job is not None:
            target = submission / plan.notebook.filename
            if target.is_dir() and not target.is_symlink():
                remove_tree(target)
            shutil.copyfile(work / "prepared" / plan.notebook.filename, target)
    runs = sandbox.run(submission, jobs, work / "run", log_path=work / "sandbox.log")
    broken = [f"{stem}: {run.not_graded}" for stem, run in runs.items() if run.not_graded]
    if broken:
        if (work / "sandbox.log").exists():  # for the instructor: what the sandbox said
            target = output_folder(settings.out, student)
            target.mkdir(parents=True, exist_ok=True)
            copy_tail(work / "sandbox.log", target / "sandbox.log")
        raise SandboxFailure("; ".join(broken))
    return runs, messages


def judge(plans, runs, kept, work):
    """(tests in the course's order, {stem: notebook info}) from the answers and kept verdicts.
    A test that fails because it met a name of an earlier notebook this student's submission
    cannot provide (missing, misnamed, unreadable) is dependency-missing (judging.dependencies)."""
    tests, notebooks = [], {}
    not_usable = {p.notebook.stem: p.reason for p in plans if p.job is None}
    for stem, (kept_tests, _) in kept.items():  # --notebook: as the last run found them
        reasons = {reason_of(t) for t in kept_tests}
        if len(reasons) == 1:
            not_usable[stem] = reasons.pop()
    not_usable = {stem: why for stem, why in not_usable.items() if why in UNAVAILABLE}
    for stem, (kept_tests, kept_info) in kept.items():
        tests += [TestResult.from_json(t) for t in kept_tests]
        notebooks[stem] = kept_info
    for plan in plans:
        nb, message = plan.notebook, plan.message
        if plan.job is None:
            results = judge_cases(plan.cases, None, {"*": plan.note}, reason=plan.reason)
            info = {"ran": False, "messages": [message] if message else []}
        else:
            run = runs[nb.stem]
            notes = dict(run.notes)
            # answers are read below work/run/responses, a folder the sandbox cannot replace
            results = judge_cases(
                plan.cases,
                run.responses,
                notes,
                trusted_root=work / "run" / "responses",
                unavailable=unavailable_names(nb.stem, not_usable),
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
        info["submitted"] = plan.submitted
        if plan.graded_from:
            info["graded_from"] = plan.graded_from  # a near name, taken (submissions.py)
        if plan.candidates:
            info["candidates"] = list(plan.candidates)  # misnamed: none of them taken
        notebooks[nb.stem] = info
        tests += results
    order = {nb.stem: i for i, nb in enumerate(NOTEBOOKS)}
    tests.sort(key=lambda t: order[t.notebook])  # stable: each notebook's tests keep their order
    notebooks = {stem: notebooks[stem] for stem in sorted(notebooks, key=order.get)}
    return tests, notebooks


def copy_tail(source, target, limit=20_000):
    source = Path(source)
    try:
        data = read_bytes(source.parent, [source.name], limit, tail=True)
    except UnsafeFile:
        return
    # the student's own stderr: escape sequences (clear screen, clipboard writes) are shown, not
    # sent to the terminal of an instructor who prints the log
    text = data.decode("utf-8", errors="replace")
    atomic_write(target, "\n".join(printable(line) for line in text.split("\n")))


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:40]


def internal_error_result(student, exc, out=None, ceiling=None):
    """A failure of the grader on one student: reported, and that student still appears in
    grades.csv (score 0, marked internal_error, so the next run grades them again)."""
    tb = "".join(traceback.format_exception(exc))
    output = (
        f"The grader failed on this submission ({type(exc).__name__}); nothing was graded. "
        "Your instructor has been told."
    )
    if isinstance(exc, MemoryError):
        tb += (
            f"The grading parent reached its memory ceiling ({memory_ceiling.describe(ceiling)}, "
            "--parent-memory) while grading this student's files; the others were graded.\n"
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
            write_student(output_folder(out, student), payload)
        except Exception:  # noqa: BLE001 - the traceback below is what matters
            pass
    return StudentResult(student, payload, error=tb)
