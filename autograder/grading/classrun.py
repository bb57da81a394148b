"""The class run: every student of PATH graded into OUT, one grading run at a time.

    done, summary = grade_class(path, settings)

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
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from autograder import memory_ceiling, student_ids, submissions
from autograder.curriculum import GRADED_NAMES
from autograder.grading import selftest
from autograder.grading.course_files import course_files
from autograder.grading.fingerprint import fingerprint
from autograder.grading.payload import apply_late, missing_from_record
from autograder.grading.plan import registered_probes
from autograder.grading.progress import OverBudget
from autograder.grading.saved import (
    class_results,
    kept_verdicts,
    other_configuration,
    read_saved,
    supersede,
    up_to_date,
)
from autograder.grading.stopping import Interrupted, RunStopped, Stopping, signal_name
from autograder.grading.student import (
    StudentResult,
    grade_student,
    graded_files,
    internal_error_result,
    output_folder,
)
from autograder.grading.workspace import (
    UNFINISHED_NAME,
    clean_interrupted_writes,
    end_work_root,
    lock_output,
    read_unfinished,
    release_output,
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

PROGRESS_SECONDS = 2.0  # how often the progress line looks at the running notebooks
NAMES_SHOWN = 10  # students named in the message of a stopped run; the others counted


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


def grade_class(path, settings, progress=True, layout="auto", graded_groups=None):
    """(StudentResults, the class summary); RunStopped (a SystemExit: 128 + the signal) when a
    signal stopped the run, after it kept what was finished and cleaned up."""
    problem = preflight(settings.sandbox_mode)
    if problem:
        raise SystemExit(problem)
    with Stopping() as stop:
        result = None
        try:
            result = _grade_class_guarded(path, settings, progress, layout, graded_groups, stop)
        except Interrupted:
            pass  # before any student was graded, or while cleaning up: see below
        if stop.signum is None:
            return result
        stop.raising = False  # from here on a signal only says that the run is stopping
        say_stopped(stop.signum, settings, result)
        raise RunStopped(stop.signum)


def _grade_class_guarded(path, settings, progress, layout, graded_groups, stop):
    lock = lock_output(settings.out)
    budget = settings.parent_memory or memory_ceiling.default_budget(settings.workers)
    try:
        with memory_ceiling.memory_ceiling(budget) as ceiling:
            settings.memory_ceiling = ceiling
            return _grade_class_locked(path, settings, progress, layout, graded_groups, stop)
    finally:
        with stop.deferred():
            release_output(lock)


def _grade_class_locked(path, settings, progress, layout, graded_groups, stop):
    clean_interrupted_writes(settings.out)
    # the students' work (made and removed one student at a time) in the scratch folder;
    # the gathered submissions (the whole class's, for the whole run) in the usual temp
    # folder: a class of large notebooks must not fill a memory file system
    runs = []  # [(folder, its lock's fd)]
    try:
        with stop.deferred(raise_after=True):  # made and noted together, or not at all
            runs.append(start_work_root(settings.keep_work))
        disk = Path(tempfile.gettempdir())
        if runs[0][0].parent != disk:
            with stop.deferred(raise_after=True):
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
        found = with_not_gathered(path, found)
        done, summary = _grade_class(found, settings, progress, stop, os.path.abspath(path))
        mine = f"{gather_refusals.FILE}:"  # the gather's own file: read above, not a student's
        summary["skipped_entries"] = [n for n in notices if not n.startswith(mine)]
        return done, summary
    finally:
        with stop.deferred():  # every way out: the work folders go (their sandboxes are done)
            for folder, fd in reversed(runs):
                end_work_root(folder, fd, settings.keep_work)


def with_not_gathered(path, found):
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


def _grade_class(found, settings, progress, stop, path=None):
    todo, done, kept = [], [], {}
    if settings.fingerprint is None:
        settings.fingerprint = fingerprint(settings)
    elsewhere = []  # graded before from this content, under another configuration
    unfinished_before = {student_ids.key(s) for s in read_unfinished(settings.out)}
    not_in_record = missing_from_record(settings, [s.student for s in found if not s.refused])
    for sub in found:
        student = sub.student
        if sub.refused:
            done.append(StudentResult(student, {}, refused=sub.refused))
            continue
        results = output_folder(settings.out, student) / "results.json"
        digest = submissions.content_digest(sub)
        fresh = (
            not settings.force
            and student_ids.key(student) not in unfinished_before
            and up_to_date(digest, results, settings.fingerprint)
        )
        saved = read_saved(results) if fresh or settings.notebooks else None
        before = saved if saved is not None or settings.force else read_saved(results)
        changed = other_configuration(before, settings.fingerprint)
        if changed and before.get("submission_digest") == digest:
            elsewhere.append(student)  # the same content, graded under another configuration
        in_full = not settings.notebooks or (
            (saved or {}).get("submission_digest") == digest and not changed
        )
        if digest and in_full:  # recorded when graded in full, under this configuration
            settings.submission_digests[student] = digest
        if saved is not None and not settings.notebooks:
            done.append(StudentResult(student, saved, skipped=True))
        else:
            todo.append(sub)
            kept[student] = kept_verdicts(saved, settings.notebooks)

    if elsewhere:
        again = "their other notebooks keep it" if settings.notebooks else "graded again"
        print(
            f"note: {len(elsewhere)} student(s){_names(elsewhere)} were graded under another "
            "configuration (the secret, the course, the limits or the grader's version "
            f"changed): {again}.",
            file=sys.stderr,
        )
    untested = [name for name in GRADED_NAMES if name not in registered_probes()]
    if untested:
        print(f"warning: no hidden tests registered for: {', '.join(untested)}", file=sys.stderr)
    unfinished = []
    if todo:
        graded, unfinished = _grade_todo(todo, kept, settings, progress, stop)
        done += graded
    with stop.deferred():  # what is finished is written whole, even when a signal comes now
        done.sort(key=lambda r: r.student)
        moved = supersede(settings.out, done)
        subs = {s.student: s for s in found}
        for result in done:  # the students kept from earlier runs: under the current late policy
            sub = subs[result.student]
            if result.skipped and apply_late(
                result.results, settings, result.student, graded_files(sub.folder, sub.messages)
            ):
                write_student(output_folder(settings.out, result.student), result.results)
        folders = {s.student: s.folder for s in found if not s.refused}  # report/similarity.py
        summary = write_class(
            settings.out,
            class_results(settings.out, done, path),
            folders=folders if settings.similarity else None,
            roster=settings.roster,
        )
        write_unfinished(settings.out, unfinished)  # [] (the file removed) when none is left
    summary["unfinished"] = sorted(unfinished)
    summary["superseded"] = moved
    summary["other_configuration"] = sorted(elsewhere)
    summary["not_in_record"] = not_in_record
    return done, summary


def _open_sandbox(settings):
    try:
        return Sandbox(
            settings.limits,
            mode=settings.sandbox_mode,
            lib_root=settings.work_root / "lib",
            course=course_files(),
        )
    except BubblewrapUnsupported as exc:  # too old for the sandbox: never silently none
        raise SystemExit(f"error: {exc}.") from None
    except RuntimeError as exc:  # --sandbox bwrap where bubblewrap cannot run
        raise SystemExit(
            f"error: {exc}. Install bubblewrap (apt-get install bubblewrap) and allow user "
            "namespaces, or use --sandbox auto to grade without isolation after a warning."
        ) from None


def _grade_todo(todo, kept, settings, progress, stop):
    """The students to grade, graded in a pool of workers after the self-test passed:
    (StudentResults, the students not finished because the run was stopped)."""
    workers, message = bound_workers(max(1, settings.workers), settings.limits)
    if message and len(todo) > 1:
        print(f"note: {message}", file=sys.stderr)
    everyone = [s.student for s in todo]
    try:
        sandbox = _open_sandbox(settings)
    except Interrupted:
        return [], everyone
    try:
        stop.on_stop(sandbox.stop)  # at a signal: the sandboxes killed, none started
        try:  # the solutions score full marks here and a blank 0, or nobody is graded
            selftest.guard(sandbox, workers, settings.work_root, skip=settings.skip_selftest)
        except selftest.SelfTestFailed as exc:
            raise SystemExit(f"error: {exc}") from None
        return _grade_pool(todo, kept, settings, progress, sandbox, workers, stop)
    except (Interrupted, SandboxStopped):  # in the self-test
        return [], everyone
    finally:
        with stop.deferred():
            sandbox.close()


def _grade_pool(todo, kept, settings, progress, sandbox, workers, stop):
    from tqdm import tqdm

    watch = OverBudget(sandbox.running, settings.limits)
    futures, collected = {}, {}  # future -> student; future -> its StudentResult or None
    bar, shown = None, ""
    try:
        bar = tqdm(total=len(todo), desc="grading", unit="student", disable=not progress)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                for s in todo:
                    args = (s.student, s.folder, settings, sandbox, s.messages, kept[s.student])
                    job = pool.submit(watch.grading, s.student, grade_student, *args)
                    futures[job] = s.student
                waiting = set(futures)
                while waiting:
                    finished, waiting = wait(
                        waiting, timeout=PROGRESS_SECONDS, return_when=FIRST_COMPLETED
                    )
                    for future in finished:
                        collected[future] = _collected(future, futures[future], settings)
                        bar.update(1)
                        failure = failed_now(collected[future]) if progress else ""
                        if failure:
                            bar.write(failure, file=sys.stderr)
                    text = watch.text() if progress else ""
                    if text != shown:  # one line: the bar's end
                        shown = text
                        bar.set_postfix_str(shown)
            except Interrupted:
                # the queue dropped; the pool's exit waits for the students being graded,
                # whose sandboxes the signal killed (they end with SandboxStopped)
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    except Interrupted:
        pass
    finally:
        with stop.deferred():
            if bar is not None:
                bar.close()
    with stop.deferred():
        for future in futures:  # finished while the run was stopping: kept too
            if future not in collected and future.done() and not future.cancelled():
                collected[future] = None if future.exception() else future.result()
        done = [result for result in collected.values() if result is not None]
        finished = {result.student for result in done}
        return done, [s.student for s in todo if s.student not in finished]


def failed_now(result):
    """The line naming a student the grader could not grade, said as soon as it is known (above
    the progress bar), or "": their id through escaping.terminal, and the first line of why."""
    if result is None or not result.error:
        return ""
    why = next((line for line in result.error.splitlines() if line.strip()), "")
    if not why.startswith("NOT GRADED"):
        why = f"internal error: {result.error.strip().splitlines()[-1]}"
    return f"NOT GRADED {printable(result.student)}: {printable(why.removeprefix('NOT GRADED: '))[:300]}"


def _collected(future, student, settings):
    """A worker's StudentResult; its internal error's (written, graded again next run); None
    for a student whose sandbox was stopped (the run is stopping: nothing of it is written)."""
    try:
        return future.result()
    except SandboxStopped:
        return None
    except Exception as exc:  # noqa: BLE001 - report it, grade the others
        return internal_error_result(student, exc, settings.out, settings.memory_ceiling)


def say_stopped(signum, settings, result):
    """What a stopped run kept, what it did not finish, and how to go on (stdout)."""
    out = printable(settings.out)
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
            f"run{_names(graded)} and {len(earlier)} up to date from earlier runs; "
            f"{len(unfinished)} not finished{_names(unfinished)}.",
            f"The class report ({out}/class.html, grades.csv) holds the students graded so far"
            + (f"; {out}/{UNFINISHED_NAME} lists the others." if unfinished else "."),
        ]
    again = " without --force" if settings.force else ""
    lines.append(
        f"To resume, run the same command again{again}: the students kept are not graded again, "
        "the others are, and the class report is rebuilt."
    )
    try:
        print("\n".join(lines), flush=True)
    except OSError:  # SIGHUP: the terminal may be gone
        pass


def _names(students):
    if not students:
        return ""
    shown = ", ".join(printable(s) for s in students[:NAMES_SHOWN])
    more = len(students) - NAMES_SHOWN
    return f" ({shown}{f' and {more} more' if more > 0 else ''})"
