"""The results payload of one student (results.json): built from the verdicts, then the late
penalties, then written once.

    payload = build_results(student, tests, notebooks, seconds, submission_messages)
    apply_late(payload, config, student, files)      # autograder/deadlines.py, in place
"""

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

from autograder import student_ids
from autograder.config import Config
from autograder.deadlines import apply_late_policy, handed_in_from_files
from autograder.escaping import terminal as printable
from autograder.results import TestResult


def build_results(
    student: str,
    tests: Sequence[TestResult],
    notebooks: Mapping[str, Mapping[str, Any]],
    seconds: float,
    submission_messages: Iterable[str] = (),
) -> dict[str, Any]:
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
        "submission_messages": list(submission_messages),  # also in "output", but apart
        "notebooks": notebooks,
        "tests": [t.to_json() for t in tests],
    }


def apply_late(
    payload: dict[str, Any], config: Config, student: str, files: Mapping[str, Path]
) -> bool:
    """Late penalties (autograder/deadlines.py) on one payload, in place: recomputed from the raw
    verdicts, so a changed policy needs no regrading. True when the payload changed.
    `files`: {stem: the student's file graded as it} (submissions.Placement.sources), whose
    times are the hand-in times without --handed-in. With --handed-in, a student the record
    does not name has no hand-in times (never their files' times: the class run names them)."""
    if payload.get("internal_error") or not payload.get("tests"):
        return False  # an internal error: nothing was graded
    if config.deadlines is None and "late" not in payload:
        return False  # no policy now, none before
    handed_in: Mapping[str, datetime]
    if config.handed_in is not None:
        handed_in = config.handed_in.get(student_ids.key(student), {})
    elif config.deadlines is not None:
        handed_in = handed_in_from_files(files)
    else:
        handed_in = {}
    return bool(apply_late_policy(payload, config.deadlines, handed_in))


def missing_from_record(config: Config, students: Sequence[str], shown: int = 10) -> list[str]:
    """The students (ids) the --handed-in record does not name, when a record is given; named
    in a warning (stderr), since they are graded with no hand-in time."""
    if config.handed_in is None or config.deadlines is None:
        return []
    missing = [s for s in students if student_ids.key(s) not in config.handed_in]
    if missing:
        names = ", ".join(printable(s) for s in missing[:shown])
        more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
        print(
            f"warning: the --handed-in record does not name {len(missing)} student(s) "
            f"({names}{more}): they have no hand-in time, so no late penalty (their files' "
            "times are theirs to set and are not used). Add them to the record and grade again.",
            file=sys.stderr,
        )
    return missing
