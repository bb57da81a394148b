"""The class run: every student of PATH graded into OUT, one grading run at a time.

    done, summary = grade_class(path, settings)

In order: OUT's lock and a memory ceiling for the parent; the submissions discovered
(autograder.submissions); the students already up to date kept as they are; the self-test
(grading/selftest.py) before anyone is graded; each other student graded by grading/student.py
in a pool of workers (late penalties applied there, before results.json's single write); the
students kept from earlier runs brought up to the current late policy; then the class report
(autograder.report.write_class) from the results in memory, reading from disk only the students
of OUT this run did not see.
"""

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from autograder import memory_ceiling, submissions
from autograder.curriculum import GRADED_NAMES, NOTEBOOKS
from autograder.grading import selftest
from autograder.grading.course_files import course_files
from autograder.grading.payload import apply_late
from autograder.grading.plan import registered_probes
from autograder.grading.student import (
    StudentResult,
    grade_student,
    internal_error_result,
    output_folder,
    remove_quietly,
)
from autograder.grading.workspace import (
    clean_interrupted_writes,
    lock_output,
    release_output,
    start_work_root,
)
from autograder.report import SavedResult, collect_results, write_class, write_student
from autograder.safe_files import MB, UnsafeFile, printable, read_bytes, walk
from autograder.sandbox import Sandbox
from autograder.sandbox.bubblewrap import BubblewrapUnsupported
from autograder.sandbox.limits import bound_workers


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


def read_saved(results):
    try:
        payload = json.loads(read_bytes(results.parent, [results.name], 64 * MB))
    except (UnsafeFile, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) and not payload.get("internal_error") else None


def grade_class(path, settings, progress=True, layout="auto", graded_groups=None):
    problem = preflight(settings.sandbox_mode)
    if problem:
        raise SystemExit(problem)
    lock = lock_output(settings.out)
    budget = settings.parent_memory or memory_ceiling.default_budget(settings.workers)
    try:
        with memory_ceiling.memory_ceiling(budget) as ceiling:
            settings.memory_ceiling = ceiling
            return _grade_class_locked(path, settings, progress, layout, graded_groups)
    finally:
        release_output(lock)


def _grade_class_locked(path, settings, progress, layout, graded_groups):
    clean_interrupted_writes(settings.out)
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
        done, summary = _grade_class(found, settings, progress)
        summary["skipped_entries"] = notices  # this run's, not written to summary.json
        return done, summary
    finally:
        for folder, fd in runs:
            os.close(fd)
            if not settings.keep_work:
                remove_quietly(folder)


def _grade_class(found, settings, progress):
    todo, done, kept = [], [], {}
    for sub in found:
        student = sub.student
        if sub.refused:
            done.append(StudentResult(student, {}, refused=sub.refused))
            continue
        results = output_folder(settings.out, student) / "results.json"
        fresh = not settings.force and up_to_date(sub.source, results)
        saved = read_saved(results) if fresh or settings.notebooks else None
        if saved is not None and not settings.notebooks:
            done.append(StudentResult(student, saved, skipped=True))
        else:
            todo.append(sub)
            kept[student] = kept_verdicts(saved, settings.notebooks)

    untested = [name for name in GRADED_NAMES if name not in registered_probes()]
    if untested:
        print(f"warning: no hidden tests registered for: {', '.join(untested)}", file=sys.stderr)
    if todo:
        done += _grade_todo(todo, kept, settings, progress)
    done.sort(key=lambda r: r.student)
    sources = {s.student: s.source for s in found}
    for result in done:  # the students kept from earlier runs: under the current late policy
        if result.skipped and apply_late(
            result.results, settings, result.student, sources[result.student]
        ):
            write_student(output_folder(settings.out, result.student), result.results)
    summary = write_class(settings.out, class_results(settings.out, done))
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


def _grade_todo(todo, kept, settings, progress):
    """The students to grade, graded in a pool of workers after the self-test passed."""
    from tqdm import tqdm

    workers, message = bound_workers(max(1, settings.workers), settings.limits)
    if message and len(todo) > 1:
        print(f"note: {message}", file=sys.stderr)
    sandbox = _open_sandbox(settings)
    done = []
    try:
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
                    s.source,
                ): s.student
                for s in todo
            }
            bar = tqdm(total=len(futures), desc="grading", unit="student", disable=not progress)
            for future in as_completed(futures):
                student = futures[future]
                try:
                    done.append(future.result())
                except Exception as exc:  # noqa: BLE001 - report it, grade the others
                    done.append(
                        internal_error_result(student, exc, settings.out, settings.memory_ceiling)
                    )
                bar.update(1)
            bar.close()
    finally:
        sandbox.close()
    return done


def class_results(out, done):
    """Every student of OUT for the class report: this run's from memory (as their results.json
    reads back), the others (graded into OUT by earlier runs, not seen now) from disk."""
    mine = {}
    for result in done:
        if result.results and not result.refused:
            folder = output_folder(out, result.student)
            if (folder / "results.json").is_file():  # written (an internal error's may not be)
                payload = json.loads(json.dumps(result.results))
                mine[folder.name] = SavedResult(result.student, payload, folder=folder.name)
    others = collect_results(out, skip=set(mine))
    return sorted([*mine.values(), *others], key=lambda s: s.student)
