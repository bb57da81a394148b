"""What OUT holds from earlier runs, as a class run reads it: whether a student is up to date,
the verdicts `--notebook` keeps, and the folders of a student now graded under another spelling
of their id, moved aside.

    fresh = up_to_date(digest, OUT/ada/results.json, fingerprint)
    kept = kept_verdicts(saved, ("03_matrix_attention",))
    moved = supersede(out, done)      # [(folder, where it is now, the student now)]
    students = class_results(out, done, path)  # the class report's: this run's and the rest
"""

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import student_ids, submissions
from autograder.config import Config
from autograder.curriculum import GRADED_NAMES, NOTEBOOKS
from autograder.grading.payload import missing_from_record
from autograder.grading.plan import registered_probes
from autograder.grading.run_state import RunState
from autograder.grading.student import Kept, StudentResult, output_folder
from autograder.grading.workspace import read_unfinished
from autograder.report import SavedResult, collect_results, not_graded
from autograder.safe_files import MB, UnsafeFile, printable, read_bytes
from autograder.submissions import Submission


def up_to_date(digest: str | None, results_path: Path, graded_under: str | None = None) -> bool:
    """True when OUT/<student>/results.json was graded from this very content, under this very
    configuration: its `submission_digest` (submissions.content_digest, recorded when it was
    graded) is `digest`, and its `grading_fingerprint` (grading/fingerprint.py: the secret's
    hash, the course, the limits, the grader's version) is `graded_under` (when given).
    File times never decide it: a student sets them (a commit dated in the past, a copy that
    keeps them), so results without a digest, or of other content, are graded again."""
    saved = read_saved(results_path) if digest else None
    return (
        saved is not None
        and saved.get("submission_digest") == digest
        and (graded_under is None or saved.get("grading_fingerprint") == graded_under)
    )


def other_configuration(saved: dict[str, Any] | None, graded_under: str | None) -> bool:
    """True when saved results of this very content were graded under another configuration."""
    return saved is not None and bool(saved) and saved.get("grading_fingerprint") != graded_under


def kept_verdicts(
    saved: dict[str, Any] | None, regrade: Sequence[str]
) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """{stem: (tests, info)} of the notebooks `--notebook` does not name, from the last results;
    {} (grade everything) when there are none, or when they lack a notebook."""
    if not regrade or not saved:
        return {}
    kept: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    for nb in NOTEBOOKS:
        if nb.stem in regrade:
            continue
        tests = [t for t in saved.get("tests", []) if t.get("notebook") == nb.stem]
        info = saved.get("notebooks", {}).get(nb.stem)
        if not tests or not isinstance(info, dict):
            return {}
        kept[nb.stem] = (tests, info)
    return kept


def read_saved(results: Path) -> dict[str, Any] | None:
    try:
        payload = json.loads(read_bytes(results.parent, [results.name], 64 * MB))
    except (UnsafeFile, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) and not payload.get("internal_error") else None


NAMES_SHOWN = 10  # students named in a message (a stopped run, another configuration)
SUPERSEDED = ".superseded"  # OUT's folder for the results of a student now graded under another


def supersede(out: Path, done: Sequence[Any]) -> list[tuple[str, str, str]]:
    """Move aside the results that this run's students supersede: OUT/<folder>/results.json of
    an earlier run whose student is one of this run's under another spelling of the same id
    (student_ids.key: `Ada/` renamed `ada/`, a name macOS wrote in NFD). Each such folder goes
    to OUT/.superseded/ (kept for the instructor, out of every report and export), and is
    named on stderr; [(the folder moved, where it is now, the student now)]."""
    now: dict[str, str] = {}
    for r in done:
        if r.results and not r.refused:
            now.setdefault(student_ids.key(r.student), r.student)
    mine = {output_folder(out, student).name for student in now.values()}
    moved = []
    for saved in collect_results(out, skip=mine):
        student = now.get(student_ids.key(saved.student))
        if student is None or saved.folder is None:  # collect_results names every folder
            continue
        old, new = Path(out) / saved.folder, output_folder(out, student)
        try:
            if new.exists() and os.path.samefile(old, new):
                continue  # one folder on a disk that ignores case: nothing to move
            target = _free_name(Path(out) / SUPERSEDED / saved.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(old, target)
        except OSError as exc:
            print(
                f"warning: {printable(old)} holds an earlier result of {printable(student)} "
                f"and could not be moved aside ({exc.strerror}); it is left out of the report.",
                file=sys.stderr,
            )
            continue
        moved.append((saved.folder, str(target.relative_to(out)), student))
        print(
            f"note: {printable(saved.folder)}/ held an earlier result of the student now graded "
            f"as {printable(student)} (the same id, written differently); it was moved to "
            f"{printable(target.relative_to(out))}/ and is no longer reported.",
            file=sys.stderr,
        )
    return moved


def _free_name(path):
    if not path.exists():
        return path
    number = 2
    while path.with_name(f"{path.name}-{number}").exists():
        number += 1
    return path.with_name(f"{path.name}-{number}")


def class_results(out: Path, done: Sequence[Any], path: str | None = None) -> list[Any]:
    """Every student of OUT for the class report: this run's from memory (as their results.json
    reads back), the others (graded into OUT by earlier runs, not seen now) from disk, and the
    students refused before grading (report/not_graded.py): this run's, and those an earlier
    run refused that this one (over `path`, the PATH it grades) does not contradict. A refused
    student's older results.json (bob graded once, now `bob/` and `bob.zip`) is not reported:
    the refusal is what is true now."""
    now = [(r.student, r.refused) for r in done if r.refused]
    refused = not_graded.in_report(out, now, [r.student for r in done], path)
    mine = {}
    for result in done:
        if result.results and not result.refused:
            folder = output_folder(out, result.student)
            if (folder / "results.json").is_file():  # written (an internal error's may not be)
                payload = json.loads(json.dumps(result.results))
                mine[folder.name] = SavedResult(result.student, payload, folder=folder.name)
    others = not_graded.without_stale(collect_results(out, skip=set(mine)), refused)
    graded_now = {student_ids.key(s.student) for s in mine.values()}
    others = [s for s in others if student_ids.key(s.student) not in graded_now]  # superseded
    return sorted([*mine.values(), *others, *refused], key=lambda s: s.student)


# -- step 5 of the class run: the students up to date kept as they are ---------------------------
@dataclass
class Sorted:
    """Step 5's answer: the students to grade, those done already, and what to keep."""

    todo: list[Submission] = field(default_factory=list)
    done: list[StudentResult] = field(default_factory=list)  # refused, and up to date
    kept: dict[str, Kept] = field(default_factory=dict)  # student -> verdicts kept (--notebook)
    elsewhere: list[str] = field(default_factory=list)  # same content, another configuration
    not_in_record: list[str] = field(default_factory=list)  # --handed-in does not name them


def keep_up_to_date(found: list[Submission], config: Config, run: RunState) -> Sorted:
    """Which students to grade: not the refused, nor (without --force) those whose results.json
    holds this content graded under this configuration; with --notebook, the verdicts kept.
    Records in `run` the digest of each student graded in full (results.json keeps it)."""
    out = Sorted()
    unfinished_before = {student_ids.key(s) for s in read_unfinished(config.out)}
    out.not_in_record = missing_from_record(config, [s.student for s in found if not s.refused])
    for sub in found:
        student = sub.student
        if sub.refused:
            out.done.append(StudentResult(student, {}, refused=sub.refused))
            continue
        results = output_folder(config.out, student) / "results.json"
        digest = submissions.content_digest(sub)
        fresh = (
            not config.force
            and student_ids.key(student) not in unfinished_before
            and up_to_date(digest, results, run.fingerprint)
        )
        saved = read_saved(results) if fresh or config.notebooks else None
        before = saved if saved is not None or config.force else read_saved(results)
        changed = other_configuration(before, run.fingerprint)
        if changed and before is not None and before.get("submission_digest") == digest:
            out.elsewhere.append(student)  # the same content, under another configuration
        in_full = not config.notebooks or (
            (saved or {}).get("submission_digest") == digest and not changed
        )
        if digest and in_full:  # recorded when graded in full, under this configuration
            run.submission_digests[student] = digest
        if saved is not None and not config.notebooks:
            out.done.append(StudentResult(student, saved, skipped=True))
        else:
            out.todo.append(sub)
            out.kept[student] = kept_verdicts(saved, config.notebooks)
    if out.elsewhere:
        again = "their other notebooks keep it" if config.notebooks else "graded again"
        print(
            f"note: {len(out.elsewhere)} student(s){named(out.elsewhere)} were graded under "
            "another configuration (the secret, the course, the limits or the grader's version "
            f"changed): {again}.",
            file=sys.stderr,
        )
    untested = [name for name in GRADED_NAMES if name not in registered_probes()]
    if untested:
        print(f"warning: no hidden tests registered for: {', '.join(untested)}", file=sys.stderr)
    return out


def named(students: list[str]) -> str:
    """ " (ada, bob and 3 more)": the first NAMES_SHOWN students, escaped; "" for none."""
    if not students:
        return ""
    shown = ", ".join(printable(s) for s in students[:NAMES_SHOWN])
    more = len(students) - NAMES_SHOWN
    return f" ({shown}{f' and {more} more' if more > 0 else ''})"
