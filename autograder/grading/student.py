"""One student's grading, as steps in order:

    plans = plan_notebooks(...)            # plan.py: cases drawn, notebooks read and prepared
    runs = run_in_sandbox(...)             # the notebooks run, the requests answered as data
    tests, notebooks = judge(...)          # verdicts here, in the trusted parent
    payload = build_results(...)           # payload.py: the results.json payload
    apply_late(payload, ...)               # payload.py: late penalties (--deadlines)
    write_student(OUT/<student>, payload)  # results.json and feedback.html, written once

    result = grade_student(student, folder, config, sandbox, run=run)   # all of it: a StudentResult

The self-test (grading/selftest.py) and Gradescope's runner call grade_student alone; the class
run (grading/classrun.py) calls it once per student, in a pool of workers.
"""

import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import memory_ceiling, submissions
from autograder.config import Config
from autograder.curriculum import NOTEBOOKS
from autograder.grading.payload import apply_late, build_results
from autograder.grading.plan import NOTEBOOK_FILES, NotebookPlan, plan_notebooks
from autograder.grading.run_state import RunState
from autograder.judging.answers import judge_cases
from autograder.judging.dependencies import unavailable_names
from autograder.report import REPORT_FILES, atomic_write, write_student
from autograder.results import UNAVAILABLE, TestResult, reason_of
from autograder.safe_files import UnsafeFile, printable, read_bytes, remove_tree
from autograder.sandbox import NotebookRun, Sandbox, SandboxFailure, copy_submission

LOCK_NAME = ".grading.lock"  # in OUT: one grading run at a time
MAX_SUBMISSION_MESSAGES = 20  # files not copied into the sandbox, named one by one

# The parent's own work for a student (drawing her cases, judging, writing her reports) is
# Python holding the GIL. Done by three workers' threads at once, it cost 2.6 times the CPU of
# the same work done one thread at a time (benchmarks/parent_threads.py): the threads hand the
# GIL to each other through the kernel. So one worker at a time does it, while the others wait on
# their students' sandboxes, which are other processes.
PARENT_TURN = threading.Lock()


@dataclass
class StudentResult:
    student: str
    results: dict[str, Any]  # the results.json payload
    skipped: bool = False
    error: str = ""  # the traceback of an internal error of the grader
    seconds: float = 0.0
    refused: str = ""  # why this student was not graded (their id, two submissions)
    per_notebook: dict[str, dict[str, float]] = field(
        default_factory=dict
    )  # stem -> {"cpu_seconds": on its clock}


def output_folder(out: Path | str, student: str) -> Path:
    """OUT/<student>, except for a student whose name is one of the class report's files
    (grades.csv, summary.md, ...) once its leading underscores are set aside: one more "_" in
    front (grades.csv -> OUT/_grades.csv, _grades.csv -> OUT/__grades.csv), so no two students
    share a folder and none overwrites the report."""
    reserved = {name.casefold() for name in REPORT_FILES} | {LOCK_NAME}
    bare = student.lstrip("_").casefold()
    return Path(out) / (f"_{student}" if bare in reserved else student)


Kept = Mapping[str, tuple[list[dict[str, Any]], dict[str, Any]]]  # stem -> (tests, info)


def grade_student(
    student: str,
    folder: Path,
    config: Config,
    sandbox: Sandbox,
    placement: Any = None,
    kept: Kept | None = None,
    files: Mapping[str, Path] | None = None,
    run: RunState | None = None,
) -> StudentResult:
    """placement: messages about files that could not be placed (submissions.Submission);
    kept: {stem: (tests as JSON, notebook info)} of notebooks not to grade again (--notebook);
    files: {stem: the student's own file graded as it}, for its time (late penalties; default:
    placement's `sources`, else the notebooks in `folder` by their own names); run: what the
    class run learnt (its work folder, the digest and fingerprint recorded in results.json)."""
    started = time.monotonic()
    run = run or RunState()
    work = Path(tempfile.mkdtemp(prefix=f"student-{_safe(student)}-", dir=run.work_root))
    try:
        return _grade_student(
            student,
            folder,
            config,
            run,
            sandbox,
            work,
            started,
            placement or {},
            kept or {},
            graded_files(folder, placement) if files is None else files,
        )
    finally:
        if not config.keep_work:
            remove_quietly(work)


def remove_quietly(path: Path) -> None:
    try:
        remove_tree(path)
    except OSError as exc:
        print(f"warning: could not remove {printable(path)}: {exc.strerror}", file=sys.stderr)


def graded_files(folder: Path, placement: Any = None) -> dict[str, Path]:
    """{stem: file} whose times are the hand-in times: the placement's `sources` (the files
    submissions.discover took), else each notebook in `folder` by its own name. A file of an
    LMS's bulk download whose dates are not hand-in times is its mark instead (Canvas's late
    or not: deadlines.LmsMark)."""
    sources = getattr(placement, "sources", None)
    if sources is not None:
        return {**sources, **getattr(placement, "marks", {})}
    return {nb.stem: Path(folder) / nb.filename for nb in NOTEBOOKS}


def _grade_student(
    student: str,
    folder: Path,
    config: Config,
    run: RunState,
    sandbox: Sandbox,
    work: Path,
    started: float,
    placement: Any,
    kept: Kept,
    files: Mapping[str, Path],
) -> StudentResult:
    with PARENT_TURN:
        plans = plan_notebooks(student, folder, config, work, placement, kept)
    runs, submission_messages = run_in_sandbox(student, folder, plans, config, sandbox, work)
    with PARENT_TURN:
        return _report(
            student,
            config,
            run,
            work,
            started,
            placement,
            files,
            plans,
            runs,
            kept,
            submission_messages,
        )


def _report(
    student: str,
    config: Config,
    run: RunState,
    work: Path,
    started: float,
    placement: Any,
    files: Mapping[str, Path],
    plans: list[NotebookPlan],
    runs: Mapping[str, NotebookRun],
    kept: Kept,
    submission_messages: list[str],
) -> StudentResult:
    """Judge her answers, and write her results and feedback (under PARENT_TURN)."""
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
    if student in run.submission_digests:  # what was graded (grading/classrun.py)
        payload["submission_digest"] = run.submission_digests[student]
        if run.fingerprint:  # and how (grading/fingerprint.py)
            payload["grading_fingerprint"] = run.fingerprint
    apply_late(payload, config, student, files)
    target = output_folder(config.out, student)
    write_student(target, payload)
    if (work / "sandbox.log").exists():
        copy_tail(work / "sandbox.log", target / "sandbox.log")
    cpu = {
        stem: {"cpu_seconds": done.cpu_seconds, "cells_cpu_seconds": done.cells_cpu_seconds}
        for stem, done in runs.items()
    }
    return StudentResult(student, payload, seconds=time.monotonic() - started, per_notebook=cpu)


def run_in_sandbox(
    student: str,
    folder: Path,
    plans: list[NotebookPlan],
    config: Config,
    sandbox: Sandbox,
    work: Path,
) -> tuple[dict[str, NotebookRun], list[str]]:
    """The planned notebooks run in the sandbox: ({stem: NotebookRun}, messages about files
    that were not copied). Raises SandboxFailure when the sandbox failed, not the student."""
    jobs = [plan.job for plan in plans if plan.job is not None]
    runs: dict[str, NotebookRun] = {}
    messages: list[str] = []
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
            target = output_folder(config.out, student)
            target.mkdir(parents=True, exist_ok=True)
            copy_tail(work / "sandbox.log", target / "sandbox.log")
        raise SandboxFailure("; ".join(broken))
    return runs, messages


def judge(
    plans: list[NotebookPlan], runs: Mapping[str, NotebookRun], kept: Kept, work: Path
) -> tuple[list[TestResult], dict[str, dict[str, Any]]]:
    """(tests in the course's order, {stem: notebook info}) from the answers and kept verdicts.
    A test that fails because it met a name of an earlier notebook this student's submission
    cannot provide (missing, misnamed, unreadable) is dependency-missing (judging.dependencies)."""
    tests: list[TestResult] = []
    notebooks: dict[str, dict[str, Any]] = {}
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
            results = judge_cases(plan.cases, None, {"*": plan.note or ""}, reason=plan.reason)
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
    notebooks = {stem: notebooks[stem] for stem in sorted(notebooks, key=order.__getitem__)}
    return tests, notebooks


def copy_tail(source: Path, target: Path, limit: int = 20_000) -> None:
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


def internal_error_result(
    student: str, exc: BaseException, out: Path | None = None, ceiling: int | None = None
) -> StudentResult:
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
