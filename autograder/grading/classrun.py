"""The class run: every student of PATH graded into OUT, one grading run at a time.

    done, summary = grade_class(path, config)

In order: OUT's lock and a memory ceiling for the parent; the submissions discovered
(autograder.submissions); the students already up to date kept as they are; the self-test
(grading/selftest.py) before anyone is graded; each other student graded by grading/student.py
in a pool of workers (late penalties applied there, before results.json's single write); the
students kept from earlier runs brought up to the current late policy; then the class report
(autograder.report.write_class) from the results in memory, reading from disk only the students
of OUT this run did not see. The students refused before grading (an id student_ids refuses, two
submissions for one student, files that could not be read) are in it too, as NOT GRADED with
the reason, and kept in OUT/not_graded.json for later reports and the LMS exports
(report/not_graded.py).

Stopping (grading/stopping.py): at Ctrl-C, SIGTERM or SIGHUP the running sandboxes are killed and
no student is started any more; the students whose results.json was written are kept, the class
report is written from what is finished, the others are listed in OUT/.unfinished.json (graded
again by the next run, whatever their files' times) and the work folders and cgroups are
removed; the process then exits with 128 + the signal (130 for Ctrl-C). While grading, the
progress line names the notebooks running over their budget (grading/progress.py).
"""

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

from autograder import memory_ceiling, student_ids, submissions
from autograder.config import Config
from autograder.grading import selftest
from autograder.grading.fingerprint import fingerprint
from autograder.grading.payload import apply_late
from autograder.grading.pool import grade_pool
from autograder.grading.run_state import RunState
from autograder.grading.sandboxes import open_sandbox
from autograder.grading.saved import Sorted, class_results, keep_up_to_date, named, supersede
from autograder.grading.stopping import Interrupted, RunStopped, Stopping, signal_name
from autograder.grading.student import StudentResult, graded_files, output_folder
from autograder.grading.workspace import (
    UNFINISHED_NAME,
    clean_interrupted_writes,
    end_work_root,
    lock_output,
    release_output,
    scratch_folder,
    start_work_root,
    write_unfinished,
)
from autograder.platforms import gather_refusals
from autograder.report import (
    write_class,
    write_student,
)
from autograder.safe_files import printable
from autograder.sandbox import Sandbox, SandboxStopped
from autograder.sandbox.bubblewrap import BubblewrapUnsupported
from autograder.sandbox.limits import bound_workers
from autograder.submissions import Submission

Result = tuple[list[StudentResult], dict[str, Any]]  # (the students, the class summary)
T = TypeVar("T")


def preflight(mode: str) -> str | None:
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


def grade_class(
    path: Path | str,
    config: Config,
    progress: bool = True,
    layout: str = "auto",
    graded_groups: set[str] | None = None,
) -> Result:
    """(StudentResults, the class summary); RunStopped (a SystemExit: 128 + the signal) when a
    signal stopped the run, after it kept what was finished and cleaned up."""
    problem = preflight(config.sandbox_mode)
    if problem:
        raise SystemExit(problem)
    with Stopping() as stop:
        result = None
        try:
            result = _class_run(Path(path), config, progress, layout, graded_groups, stop)
        except Interrupted:
            pass  # before any student was graded, or while cleaning up: see below
        if stop.signum is None:
            assert result is not None  # Interrupted comes with a signal
            return result
        stop.raising = False  # from here on a signal only says that the run is stopping
        say_stopped(stop.signum, config, result)
        raise RunStopped(stop.signum)


# -- the steps, in order -------------------------------------------------------------------------
def _class_run(
    path: Path,
    config: Config,
    progress: bool,
    layout: str,
    graded_groups: set[str] | None,
    stop: Stopping,
) -> Result:
    """The class run's steps, entered in order. Each step that holds something (OUT's lock, the
    parent's memory ceiling, the work folders, the sandbox) registers its own clean-up as it is
    entered; on every way out they run in the reverse order, none cut short by a signal."""
    run = RunState()
    with ExitStack() as steps:
        # 1. OUT's lock: one grading run at a time
        _step(steps, stop, lambda: lock_output(config.out), release_output)
        # 2. the parent's memory ceiling (RLIMIT_AS), restored on the way out
        budget = config.parent_memory or memory_ceiling.default_budget(config.workers)
        run.memory_ceiling = steps.enter_context(memory_ceiling.memory_ceiling(budget))
        clean_interrupted_writes(config.out)
        # 3. the work folders: the students' work (made and removed one student at a time) in
        # the scratch folder; the gathered submissions (the whole class's, for the whole run)
        # in the usual temp folder: a class of large notebooks must not fill a memory file system
        run.work_root = _work_folder(steps, stop, config, None)
        disk = Path(tempfile.gettempdir())
        gathered = run.work_root if run.work_root.parent == disk else None
        staging = (gathered or _work_folder(steps, stop, config, disk)) / "submissions"
        staging.mkdir()
        # 4. discovery
        notices: list[str] = []
        found = submissions.discover(
            path,
            config.out,
            staging,
            layout=layout,
            graded_groups=graded_groups,
            notices=notices,
        )
        # the students a classroom gather could not gather: refused, with the gather's reason
        found = with_not_gathered(path, found)
        done, summary = _grade_class(found, config, progress, stop, os.path.abspath(path), run)
    mine = f"{gather_refusals.FILE}:"  # the gather's own file: read above, not a student's
    summary["skipped_entries"] = [n for n in notices if not n.startswith(mine)]
    return done, summary


def with_not_gathered(path: Path, found: list[Submission]) -> list[Submission]:
    """`found` with the students a classroom gather could not gather (platforms/
    gather_refusals.py) as refused submissions, when PATH is a class folder a gather wrote. A
    student whose folder an earlier gather left is graded from it, and named in a warning."""
    if not Path(path).is_dir() or not (Path(path) / gather_refusals.FILE).exists():
        return found
    entries = gather_refusals.read(path)
    root = Path(os.path.abspath(path))
    # a gathered class folder is never one student's: with every student refused it is empty,
    # and discover would take the folder itself for a student with nothing
    found = [s for s in found if Path(os.path.abspath(s.source)) != root]
    have = {student_ids.key(s.student) for s in found}
    for student, reason in entries:
        why = student_ids.problem(student)  # an id no student folder could have had
        reason = f"not graded: {why}." if why else reason
        if student_ids.key(student) in have:
            print(
                f"warning: {printable(student)} is graded from an earlier gather's folder; the "
                f"last gather could not update it: {reason}",
                file=sys.stderr,
            )
            continue
        have.add(student_ids.key(student))
        found.append(submissions.Submission(student, root, root, refused=reason))
    return found


def _grade_class(
    found: list[Submission],
    config: Config,
    progress: bool,
    stop: Stopping,
    path: str | None = None,
    run: RunState | None = None,
) -> Result:
    """Steps 5 to 7, for the submissions found: the students up to date kept as they are; the
    sandbox, the self-test and the others graded; the class report."""
    run = run or RunState()
    run.fingerprint = run.fingerprint or fingerprint(config)  # how they are graded, once
    sorted_ = keep_up_to_date(found, config, run)
    done: list[StudentResult] = list(sorted_.done)
    unfinished: list[str] = []
    if sorted_.todo:
        graded, unfinished = _grade_todo(sorted_, config, run, progress, stop)
        done += graded
    return done, _report(found, done, unfinished, sorted_, config, stop, path)


def _step(
    steps: ExitStack, stop: Stopping, enter: Callable[[], T], leave: Callable[[T], object]
) -> T:
    """enter() now, and leave(what it made) on the way out: made and noted together, or not at
    all (a signal meanwhile stops the run after it is noted); left without interruption."""

    def left(made: T) -> None:
        with stop.deferred():
            leave(made)

    with stop.deferred(raise_after=True):
        made = enter()
        steps.callback(left, made)
    return made


def _work_folder(steps: ExitStack, stop: Stopping, config: Config, folder: Path | None) -> Path:
    """A work folder of this run in `folder` (default: the scratch folder), removed on the way
    out (unless --keep-work) once its sandboxes are done."""
    scratch = scratch_folder(config) if folder is None else folder
    root, _ = _step(
        steps,
        stop,
        lambda: start_work_root(config.keep_work, scratch),
        lambda made: end_work_root(*made, config.keep_work),
    )
    return root


def _report(
    found: list[Submission],
    done: list[StudentResult],
    unfinished: list[str],
    sorted_: Sorted,
    config: Config,
    stop: Stopping,
    path: str | None,
) -> dict[str, Any]:
    """Step 7: what is finished, written whole even when a signal comes now: the students kept
    from earlier runs under the current late policy, the class report, OUT/.unfinished.json."""
    with stop.deferred():
        done.sort(key=lambda r: r.student)
        moved = supersede(config.out, done)
        subs = {s.student: s for s in found}
        for result in done:  # the students kept from earlier runs: under the current late policy
            sub = subs[result.student]
            if result.skipped and apply_late(
                result.results, config, result.student, graded_files(sub.folder, sub.messages)
            ):
                write_student(output_folder(config.out, result.student), result.results)
        folders = {s.student: s.folder for s in found if not s.refused}  # report/similarity.py
        summary = write_class(
            config.out,
            class_results(config.out, done, path),
            folders=folders if config.similarity else None,
            roster=list(config.roster),
        )
        write_unfinished(config.out, unfinished)  # [] (the file removed) when none is left
    summary["unfinished"] = sorted(unfinished)
    summary["superseded"] = moved
    summary["other_configuration"] = sorted(sorted_.elsewhere)
    summary["not_in_record"] = sorted_.not_in_record
    return summary


def _open_sandbox(config: Config, run: RunState) -> Sandbox:
    assert run.work_root is not None  # step 3 made it
    try:
        return open_sandbox(config, lib_root=run.work_root / "lib")
    except BubblewrapUnsupported as exc:  # too old for the sandbox: never silently none
        raise SystemExit(f"error: {exc}.") from None
    except RuntimeError as exc:  # --sandbox bwrap where bubblewrap cannot run
        raise SystemExit(
            f"error: {exc}. Install bubblewrap (apt-get install bubblewrap) and allow user "
            "namespaces, or use --sandbox auto to grade without isolation after a warning."
        ) from None


def _grade_todo(
    sorted_: Sorted, config: Config, run: RunState, progress: bool, stop: Stopping
) -> tuple[list[StudentResult], list[str]]:
    """Step 6: the students to grade, graded in a pool of workers after the self-test passed
    in the run's sandbox: (StudentResults, the students not finished because the run was
    stopped). The sandbox is a step of its own: closed on every way out."""
    todo = sorted_.todo
    workers, message = bound_workers(max(1, config.workers), config.limits)
    if message and len(todo) > 1:
        print(f"note: {message}", file=sys.stderr)
    everyone = [s.student for s in todo]
    with ExitStack() as steps:
        try:
            sandbox = _step(
                steps, stop, lambda: _open_sandbox(config, run), lambda box: box.close()
            )
            stop.on_stop(sandbox.stop)  # at a signal: the sandboxes killed, none started
            try:  # the solutions score full marks here and a blank 0, or nobody is graded
                selftest.guard(sandbox, config, workers, run.work_root)
            except selftest.SelfTestFailed as exc:
                raise SystemExit(f"error: {exc}") from None
            return grade_pool(
                sorted_.todo, sorted_.kept, config, run, progress, sandbox, workers, stop
            )
        except (Interrupted, SandboxStopped):  # opening the sandbox, or in the self-test
            return [], everyone


def say_stopped(signum: int, config: Config, result: Result | None) -> None:
    """What a stopped run kept, what it did not finish, and how to go on (stdout)."""
    out = printable(config.out)
    if result is None:
        lines = [
            f"stopped by {signal_name(signum)} before any student was graded in this run: "
            f"{out} is as the last run left it."
        ]
    else:
        done, summary = result
        graded = [r.student for r in done if not r.skipped and not r.refused]
        earlier = [r.student for r in done if r.skipped]
        unfinished = summary.get("unfinished", [])
        lines = [
            f"stopped by {signal_name(signum)}: kept {len(graded)} student(s) graded in this "
            f"run{named(graded)} and {len(earlier)} up to date from earlier runs; "
            f"{len(unfinished)} not finished{named(unfinished)}.",
            f"The class report ({out}/class.html, grades.csv) holds the students graded so far"
            + (f"; {out}/{UNFINISHED_NAME} lists the others." if unfinished else "."),
        ]
    again = " without --force" if config.force else ""
    lines.append(
        f"To resume, run the same command again{again}: the students kept are not graded again, "
        "the others are, and the class report is rebuilt."
    )
    try:
        print("\n".join(lines), flush=True)
    except OSError:  # SIGHUP: the terminal may be gone
        pass
