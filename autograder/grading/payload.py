"""The results payload of one student (results.json): built from the verdicts, then the late
penalties, then written once.

    payload = build_results(student, tests, notebooks, seconds, submission_messages)
    apply_late(payload, settings, student, source)   # autograder/deadlines.py, in place
"""

from autograder.deadlines import apply_late_policy, handed_in_from_files


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
        "submission_messages": list(submission_messages),  # also in "output", but apart
        "notebooks": notebooks,
        "tests": [t.to_json() for t in tests],
    }


def apply_late(payload, settings, student, source):
    """Late penalties (autograder/deadlines.py) on one payload, in place: recomputed from the raw
    verdicts, so a changed policy needs no regrading. True when the payload changed.
    `source`: what the student handed in (its files' times, without --handed-in)."""
    if payload.get("internal_error") or not payload.get("tests"):
        return False  # an internal error: nothing was graded
    if settings.deadlines is None and "late" not in payload:
        return False  # no policy now, none before
    handed_in = settings.handed_in.get(student)
    if handed_in is None and settings.deadlines is not None:
        handed_in = handed_in_from_files(source)
    return bool(apply_late_policy(payload, settings.deadlines, handed_in or {}))
