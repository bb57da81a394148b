"""The students a class run refused before grading, kept in OUT/not_graded.json so that every
report of OUT names them: class.html ("students to help first"), grades.csv and the LMS exports.

    records = read(out)                          # [Refused], as last written
    why = why_not_graded(student)                # refused, the grader failed, or "" (graded)
    records = in_report(out, refused_now, seen, path)   # what a run over PATH reports
    text = dumps(records)                        # what write_class writes

A submission is refused (autograder/submissions.py) when its id is one student_ids refuses (not
UTF-8, a control or invisible character, ...), when two submissions are one student's, or when
its files could not be read at all. Such a student has no OUT/<student>/ folder (a refused id
may not even be a file name), so without this file they would be in no report. Each record is
{"student": the id as found, "reason": the run's words, "path": the PATH that run graded}; the
reason was made by the parent from names (and, for files that could not be read, the error
that reading raised), escaped for a terminal there; each medium escapes it again as it shows
it. Nothing is read from the refused student's folder to report them.

A run over PATH replaces the records that came from PATH (a renamed folder is no longer
refused) and drops any record of a student it graded now; the others (refused by a run over
another PATH, say the class when this run regrades one student) are carried over.
"""

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from autograder import student_ids
from autograder.results import ReportedStudent, ResultsJson
from autograder.safe_files import MB, UnsafeFile, read_json


class _Refusal(Protocol):
    """What unique() reads of a record: who, and why not graded."""

    @property
    def student(self) -> str: ...
    @property
    def refused(self) -> str: ...


T = TypeVar("T", bound=_Refusal)

FILE = "not_graded.json"  # in OUT, beside grades.csv (a class file: report/__init__.py)
NOT_GRADED = "NOT GRADED"  # grades.csv's total for a student with no grade (never a 0)
GRADER_FAILED = "the grader could not grade this submission"


def why_not_graded(student: ReportedStudent) -> str:
    """Why this student of the report has no grade: refused before grading (`refused`), or an
    internal error of the grader; "" for a graded student."""
    if getattr(student, "refused", ""):
        return student.refused
    return GRADER_FAILED if student.results.get("internal_error") else ""


@dataclass
class Refused:
    """A student refused before grading, as the class report reads a student (report.SavedResult:
    .student, .results, .folder), with why (`refused`) and the PATH of the run that said so."""

    student: str
    refused: str
    path: str = ""
    results: ResultsJson = field(default_factory=lambda: ResultsJson())  # none: never graded
    folder: None = None  # no OUT/<student>/ (a refused id may not be a file name)


def record(student: str, reason: str, path: str | None = "") -> Refused:
    return Refused(student, reason, "" if path is None else str(path))


def in_report(
    out: Path, refused_now: Iterable[tuple[str, str]], seen: Collection[str], path: str | None
) -> list[Refused]:
    """The refused students a class run over `path` reports: this run's (`refused_now`,
    [(student, reason)]) and the earlier ones it keeps (carried_over; `seen`: every student it
    found), one record per student and reason."""
    now = [record(student, reason, path) for student, reason in refused_now]
    return unique([*now, *carried_over(read(out), path, seen)])


def without_stale(saved: Iterable[T], refused: Iterable[Refused]) -> list[T]:
    """`saved` (results.json read from OUT) but those of a student refused now: bob graded once,
    now `bob/` and `bob.zip`, has no grade (the refusal is what is true now)."""
    keys = {student_ids.key(r.student) for r in refused}
    return [s for s in saved if student_ids.key(s.student) not in keys]


def read(out: Path) -> list[Refused]:
    """The records OUT/not_graded.json holds; [] when there is none or it cannot be read."""
    try:
        data = read_json(out, [FILE], 4 * MB)
    except (UnsafeFile, OSError, ValueError, RecursionError):
        return []
    entries = data.get("students") if isinstance(data, dict) else None
    records = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        student, reason, path = (entry.get(k) for k in ("student", "reason", "path"))
        if isinstance(student, str) and student and isinstance(reason, str) and reason:
            records.append(record(student, reason, path if isinstance(path, str) else ""))
    return records


def carried_over(
    records: Iterable[Refused], path: str | None, seen: Collection[str]
) -> list[Refused]:
    """The earlier records a run over `path` keeps: not refused by a run over the same PATH, and
    not of a student this run saw (`seen`: the ids of every student it found)."""
    path = str(path) if path is not None else None
    seen = {student_ids.key(student) for student in seen}
    return [r for r in records if r.path != path and student_ids.key(r.student) not in seen]


def unique(records: Iterable[T]) -> list[T]:
    """One record per (student, reason): `bob/` and `bob.zip` are one student, named once."""
    found: dict[tuple[str, str], T] = {}
    for r in records:
        found.setdefault((r.student, r.refused), r)
    return list(found.values())


def dumps(records: Iterable[Refused]) -> str:
    """OUT/not_graded.json's text (JSON escapes what it needs: ids that are not UTF-8 too)."""
    entries = [{"student": r.student, "reason": r.refused, "path": r.path} for r in records]
    return json.dumps({"students": entries}, indent=1) + "\n"
