"""`python -m autograder export`: the graded class's scores in an LMS's own import format.

    python -m autograder export --roster roster.csv --format canvas|moodle --grades OUT
        [--out FILE] [--columns both|notebooks|total] [--identifier email|idnumber|username]

Reads every OUT/<student>/results.json, matches the submissions to the roster (autograder/
roster.py: GitHub user with or without GitHub Classroom's `assignment-` prefix, e-mail, student
number), and writes one row per person of the roster: the points of each notebook and the total
(`--columns`), with the points possible (Canvas's "Points Possible" row; for Moodle, set each
new grade item's maximum). A person with no submission gets blank grades (no grade, not 0).
Submissions that match nobody are printed and written to OUT/export_unmatched.csv; they are in
no export. A conflict stops the export before anything is written, named with what to do: two
results in OUT that are one student (student_ids.key: `Ada/` and `ada/`, or one name in two
Unicode forms), a submission that several people match, or a person several submissions match.
A blank cell would not do: Canvas and Moodle read a blank as "no change", so the old grade
would stay. A student the grading run refused before
grading (OUT/not_graded.json: an id that is not one, two submissions for one student) is
matched like any submission and exported with no grade, named with the run's reason; an older
results.json of theirs is not exported. Files: OUT/canvas_grades.csv or OUT/moodle_grades.csv
unless --out says otherwise.
"""

import argparse
import sys
import types
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from autograder import student_ids
from autograder.curriculum import NOTEBOOKS
from autograder.escaping import csv_row, terminal
from autograder.platforms import canvas, moodle
from autograder.report import atomic_write, collect_results, not_graded
from autograder.results import ReportedStudent, ResultsJson
from autograder.roster import RosterError, match_submissions, read_roster

FORMATS = ("canvas", "moodle")
TOTAL = "total"
DEFAULT_FILES = {"canvas": "canvas_grades.csv", "moodle": "moodle_grades.csv"}
UNMATCHED_FILE = "export_unmatched.csv"


def add_arguments(commands: argparse._SubParsersAction) -> None:
    cmd = commands.add_parser(
        "export", help="write the grades in Canvas's or Moodle's import format, by roster"
    )
    cmd.add_argument("--roster", required=True, help="roster CSV (see autograder/roster.py)")
    cmd.add_argument("--format", required=True, choices=FORMATS)
    cmd.add_argument(
        "--grades", default="grades", help="the folder `grade` wrote (default: grades)"
    )
    cmd.add_argument("--out", help="the file to write (default: GRADES/<format>_grades.csv)")
    cmd.add_argument(
        "--columns",
        choices=("both", "notebooks", "total"),
        default="both",
        help="one column per notebook, the total, or both (default). In the LMS each column "
        "is a graded item: with both, keep one of them out of the course's final grade",
    )
    cmd.add_argument(
        "--identifier",
        choices=tuple(moodle.IDENTIFIERS),
        default="email",
        help="Moodle: the user field the first column holds (email from the roster's email, "
        "idnumber from student_number, username from username; default: email)",
    )
    cmd.add_argument(
        "--lms-users",
        help="a CSV of the LMS's own users, to name every roster row it does not know before "
        "writing: Canvas's gradebook export, or Moodle's grade export or participants download",
    )
    cmd.add_argument(
        "--moodle-max-grade",
        type=float,
        default=moodle.GRADEPOINTMAX,
        help="Moodle: the site's largest grade (gradepointmax, default 100); a column worth "
        "more (the total) is scaled to it, since Moodle refuses the whole import otherwise",
    )
    cmd.add_argument(
        "--only-matched",
        action="store_true",
        help="write only the roster rows the LMS will match (the others are named); without "
        "it, any such row stops the export before anything is written",
    )


def grade_columns(students: Sequence[ReportedStudent], which: str) -> list[tuple[str, float]]:
    """[(title, points possible)]: the notebooks in course order, then the total."""
    possible: defaultdict[str | None, float] = defaultdict(float)
    for s in students:
        per: defaultdict[str | None, float] = defaultdict(float)
        for t in s.results.get("tests", []):
            per[t.get("notebook")] += float(t.get("max_score", 0.0))
        for stem, points in per.items():
            possible[stem] = max(possible[stem], points)
    columns = []
    if which in ("both", "notebooks"):
        columns += [
            (nb.stem, round(possible[nb.stem], 4)) for nb in NOTEBOOKS if nb.stem in possible
        ]
    if which in ("both", "total"):
        columns.append((TOTAL, round(sum(possible.values()), 4)))
    return columns


def grades_of(
    results: ResultsJson, columns: Sequence[tuple[str, float]]
) -> dict[str, float] | None:
    """{title: points} of one student, or None when grading failed (no grade to export).

    Each notebook's points are results.json's `notebooks.<stem>.score` (late penalty included),
    the total its `score`: exactly what the student's page and grades.csv show. A notebook with
    tests but no entry there (an older results.json) is the sum of its tests' points."""
    if results.get("internal_error") or not results.get("tests"):
        return None
    per: defaultdict[str | None, float] = defaultdict(float)
    for t in results["tests"]:
        per[t.get("notebook")] += float(t.get("score", 0.0))
    notebooks = results.get("notebooks")
    if not isinstance(notebooks, dict):
        notebooks = {}
    for stem, info in notebooks.items():
        if isinstance(info, dict) and isinstance(info.get("score"), int | float):
            per[stem] = float(info["score"])
    grades = {title: round(per[title], 4) for title, _ in columns if title != TOTAL}
    if any(title == TOTAL for title, _ in columns):
        grades[TOTAL] = round(float(results.get("score", sum(per.values()))), 4)
    return grades


class ExportRefused(Exception):
    """Rows the LMS would not match: nothing written; the lines say which and what to do."""

    def __init__(self, lines) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _same_student(students):
    """[(name, reason)] for results in OUT that are one student under two spellings."""
    by_key = defaultdict(list)
    for s in students:
        by_key[student_ids.key(s.student)].append(s)
    found = []
    for same in by_key.values():
        if len(same) > 1:
            folders = ", ".join(f"{s.folder}/" for s in same)
            for s in same:
                found.append((s.student, f"one student graded in several folders ({folders})"))
    return found


def _refuse_conflicts(conflicts, grades_dir: Path) -> None:
    if not conflicts:
        return
    raise ExportRefused(
        [
            f"nothing written: {len(conflicts)} submission(s) cannot be given to one person "
            "(a blank cell would leave the LMS's old grade standing):",
            *(f"  {name}: {reason}" for name, reason in conflicts),
            f"Keep one result per person in {grades_dir} (grading the class again moves the "
            "earlier folder of a renamed student to .superseded/; remove any other stale "
            "folder), or give each person their own roster line; then export again.",
        ]
    )


def _lms(fmt) -> types.ModuleType:
    return canvas if fmt == "canvas" else moodle


def export(
    roster_path: Path | str,
    fmt: str,
    grades_dir: Path | str,
    out: Path | str | None = None,
    which: str = "both",
    identifier: str = "email",
    lms_users: Path | str | None = None,
    only_matched: bool = False,
    moodle_max_grade: int = moodle.GRADEPOINTMAX,
) -> tuple[list[str], int]:
    """Write the export and the unmatched list; returns (lines for the terminal, exit status).

    Before anything is written, every roster row the LMS would not match (no identity it reads;
    with `lms_users`, a file of the LMS's own users, one it does not list) is named, and the
    export is refused (ExportRefused) unless only_matched, which writes the other rows only."""
    grades_dir = Path(grades_dir)
    people = read_roster(roster_path)
    refused = not_graded.unique(not_graded.read(grades_dir))  # refused before grading
    students = not_graded.without_stale(collect_results(grades_dir), refused)
    if not students:
        raise RosterError(f"no results.json under {grades_dir}: run `grade` first")
    lms = _lms(fmt)
    known = lms.read_users(lms_users, identifier) if lms_users else None
    by_name = {s.student: s for s in students}
    why_refused: dict[str, str] = {}
    for r in refused:
        why_refused.setdefault(r.student, r.refused)
    _refuse_conflicts(_same_student(students), grades_dir)
    match = match_submissions(people, [*by_name, *(n for n in why_refused if n not in by_name)])
    _refuse_conflicts(match.conflicts, grades_dir)
    columns = grade_columns(students, which)
    rows, notes, left_out = [], [], []
    for person in people:
        name = match.by_person.get(person.row)
        grades = grades_of(by_name[name].results, columns) if name in by_name else None
        if name in why_refused and name not in by_name:
            notes.append(f"{person.label}: {name}: {why_refused[name]} Exported with no grade.")
        elif name and grades is None:
            notes.append(f"{person.label}: grading failed for {name}; exported with no grade")
        matched, reason = lms.identify(person, identifier, known)
        if matched is None:
            left_out.append(f"  {person.label} (roster line {person.row}): {reason}")
            continue
        if reason:
            notes.append(f"{person.label} (roster line {person.row}): {reason}")
        rows.append((matched, grades))
    if left_out and not only_matched:
        raise ExportRefused(
            [
                f"nothing written: {len(left_out)} roster row(s) {fmt.capitalize()} would not "
                f"match{lms.CONSEQUENCE}:",
                *left_out,
                f"Fix the roster, or add --only-matched to write only the other {len(rows)} "
                "row(s).",
            ]
        )
    fits = {"max_grade": moodle_max_grade} if lms is moodle else {}
    text = lms.import_csv(rows, columns, identifier, **fits)
    target = Path(out) if out else grades_dir / DEFAULT_FILES[fmt]
    atomic_write(target, text)
    unmatched = [csv_row(["submission", "reason"])]
    unmatched_now = [
        (name, f"{reason}; {why_refused[name]}" if name in why_refused else reason)
        for name, reason in match.unmatched
    ]
    unmatched += [csv_row([name, reason]) for name, reason in unmatched_now]
    atomic_write(grades_dir / UNMATCHED_FILE, "\n".join(unmatched) + "\n")

    graded = sum(1 for _, g in rows if g is not None)
    lines = [
        f"wrote {len(rows)} roster entries ({graded} with grades, {len(rows) - graded} with "
        f"none) in {fmt}'s format -> {target}"
    ]
    if left_out:
        lines.append(f"left out (--only-matched), {fmt.capitalize()} would not match them:")
        lines += left_out
    lines += notes
    if match.unmatched:
        lines.append(
            f"{len(match.unmatched)} submission(s) are in no export (listed in "
            f"{grades_dir / UNMATCHED_FILE}):"
        )
        lines += [f"  {name}: {reason}" for name, reason in unmatched_now]
    lines += lms.import_steps(columns, identifier, **fits)
    return [terminal(line) for line in lines], 0


def run(args: argparse.Namespace) -> int:
    if not 0 < args.moodle_max_grade < 1e9:  # nan fails too
        print("error: --moodle-max-grade must be a number of points > 0", file=sys.stderr)
        return 2
    try:
        lines, status = export(
            args.roster,
            args.format,
            args.grades,
            args.out,
            args.columns,
            args.identifier,
            args.lms_users,
            args.only_matched,
            args.moodle_max_grade,
        )
    except RosterError as exc:
        print(f"error: {terminal(str(exc))}", file=sys.stderr)
        return 2
    except ExportRefused as exc:
        print("\n".join(terminal(line) for line in exc.lines), file=sys.stderr)
        return 2
    print("\n".join(lines))
    return status
