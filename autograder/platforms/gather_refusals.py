"""The students a GitHub Classroom gather could not gather, kept in the class folder it wrote, so
that the `grade` run over that folder names them NOT GRADED with the reason instead of leaving
them out without a word.

    write(into, [(student, repository, why)])     # classroom gather, at the end of every gather
    entries = read(path)                           # grade: [(student, reason)], validated

The file is `<class folder>/.not_gathered.json` (hidden: discover never takes it for a
student), plain JSON, rewritten by every gather with that gather's refusals only (and removed by a
gather that refused nobody): a student gathered now is no longer in it. Each entry is {"student", "repository", "reason"}; the student
id is the one gather derives from the repository's name (classroom.student_of), so `grade`
finds the student as it finds their folder (student_ids.key).

What `grade` does with an entry (grading/classrun.py):
- no submission of that student in the folder: NOT GRADED with the gather's reason, in
  class.html, grades.csv's total, the terminal's list and not_graded.json, as every refused
  student is (report/not_graded.py);
- a folder of that student is there (an earlier gather wrote it): that folder is graded, and a
  warning names the student and why this gather could not update it.

The file is the instructor's, yet read as untrusted: at most MAX_BYTES, at most MAX_ENTRIES
entries, and every entry whose fields are not strings of sane length is dropped; a reason is
escaped for a terminal here, as every refused reason is where it is made, and each page escapes
it again as it shows it. A file that cannot be read is named in a warning and read as empty.
"""

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from autograder.safe_files import MB, UnsafeFile, printable, read_json

FILE = ".not_gathered.json"
MAX_BYTES = 4 * MB
MAX_ENTRIES = 100_000
MAX_REASON = 300  # characters of a reason kept, as the terminal's NOT GRADED line keeps
MAX_ID = 255


def write(into, refused, at=None):
    """Write the class folder's file: `refused` is [(student or None, repository, why)]; with
    nobody refused, remove it (an earlier gather's refusals are no longer true)."""
    from autograder.report import atomic_write

    if not refused:
        (Path(into) / FILE).unlink(missing_ok=True)
        return

    entries = [
        {"student": student, "repository": repository, "reason": why}
        for student, repository, why in refused
    ]
    stamp = (at or datetime.now(UTC)).isoformat()
    atomic_write(
        Path(into) / FILE,
        json.dumps({"gathered_at": stamp, "students": entries}, indent=1) + "\n",
    )


def read(folder):
    """[(student, reason)] of the gather that wrote `folder` (a class folder); [] when there
    is no such file. A file that is not the gather's is named in a warning and read as []."""
    folder = Path(folder)
    if not (folder / FILE).is_file() or (folder / FILE).is_symlink():
        return []
    try:
        data = read_json(folder, [FILE], MAX_BYTES)
    except (UnsafeFile, OSError, ValueError, RecursionError) as exc:
        print(
            f"warning: {printable(folder / FILE)} could not be read ({printable(str(exc))[:200]}); "
            "the students the gather could not gather are not named",
            file=sys.stderr,
        )
        return []
    entries = data.get("students") if isinstance(data, dict) else None
    found = []
    for entry in (entries if isinstance(entries, list) else [])[:MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        student, reason = entry.get("student"), entry.get("reason")
        if not (isinstance(student, str) and 0 < len(student) <= MAX_ID):
            continue  # a repository whose student could not be told: gather named it
        if not isinstance(reason, str) or not reason.strip():
            continue
        shown = printable(reason)[:MAX_REASON]
        found.append(
            (student, f"not graded: the gather could not gather their repository ({shown}).")
        )
    return found
