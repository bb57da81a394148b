"""Canvas's gradebook import CSV (Grades > Import), as Canvas's own importer reads it.

    text = import_csv(people, columns)          # people: [(Person, {column: points} or None)]
    person, note = identify(person, known=None) # (None, reason) when Canvas would not match it
    known = read_users("gradebook_export.csv")  # Canvas's own students, to check the roster

The layout is Canvas's gradebook export, which its importer expects back
(canvas-lms, app/models/gradebook_importer.rb): a header whose first columns are `Student`,
`ID`, `SIS User ID`, `SIS Login ID`, `Section` (the importer requires `Student` and `ID` first
and `Section` last of these), then one column per assignment; a second row whose first cell
is `Points Possible` and whose assignment cells give each assignment's points; then one row
per student. Canvas finds the student by `ID` (its numeric user id), else `SIS User ID`, else
`SIS Login ID`, else the name in `Student`. An assignment column whose title matches no
assignment of the course creates one, with the Points Possible given. A blank grade changes
nothing (a student in the roster with no submission gets blank cells). A row Canvas does not
match is not imported: its import page lists it, to be matched to a student by hand or ignored;
so the export names such rows before writing (a row with no ID, SIS id or name; with
`--lms-users`, one that is not in Canvas's own gradebook export). Comma-separated, UTF-8, every
text cell quoted and formula-free (autograder/escaping.py).

With `--lms-users` (Canvas's gradebook export, Grades > Export), each roster row is found there
by `canvas_id` against `ID` and `sis_user_id` against `SIS User ID` (exactly), `sis_login_id`
against `SIS Login ID` (ignoring case, as Canvas's logins do), else `name` against `Student`,
and written with Canvas's own ID, SIS ids and name.
"""

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.escaping import csv_row
from autograder.roster import Person, RosterError

IDENTITY_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # as Canvas's own export writes it
CONSEQUENCE = " (Canvas leaves such a row out, or asks you on its import page to match it)"
IDS = ("canvas_id", "sis_user_id", "sis_login_id")
HEADER_OF = {"canvas_id": "ID", "sis_user_id": "SIS User ID", "sis_login_id": "SIS Login ID"}


def import_csv(
    people: Sequence[tuple[Person, Mapping[str, float] | None]],
    columns: Sequence[tuple[str, float]],
    identifier: str | None = None,
) -> str:
    """columns: [(assignment title, points possible)], in order; people: [(Person, grades)]."""
    lines = [
        csv_row([*IDENTITY_HEADER, *(title for title, _ in columns)]),
        csv_row([POINTS_POSSIBLE, "", "", "", "", *(points for _, points in columns)]),
    ]
    for person, grades in people:
        identity = [
            person.get("name") or person.label,
            person.get("canvas_id"),
            person.get("sis_user_id"),
            person.get("sis_login_id"),
            person.get("section"),
        ]
        cells = ["" if grades is None else grades[title] for title, _ in columns]
        lines.append(csv_row([*identity, *cells]))
    return "\r\n".join(lines) + "\r\n"


def read_users(path: Path | str, identifier: str | None = None) -> list[dict[str, str]]:
    """Canvas's students from its gradebook export: [{header: value}] (test student and the
    Points Possible row left out). RosterError when the file is not such an export."""
    rows = _read_csv(path)
    header = [h.strip() for h in rows[0]] if rows else []
    if header[:2] != ["Student", "ID"]:
        raise RosterError(
            f"{path} is not Canvas's gradebook export (its header starts {header[:2]})"
        )
    users = []
    for row in rows[1:]:
        entry = {h: (row[i].strip() if i < len(row) else "") for i, h in enumerate(header)}
        if "Points Possible" in entry["Student"] or entry["Student"] == "Student, Test":
            continue
        users.append(entry)
    return users


def identify(
    person: Person, identifier: str | None = None, known: list[dict[str, str]] | None = None
) -> tuple[Person, str] | tuple[None, str]:
    """(the Person as Canvas will match it, a note or ""), or (None, why Canvas would not)."""
    if known is None:
        if any(person.get(c) for c in IDS):
            return person, ""
        if person.get("name"):
            return person, "no Canvas ID or SIS id: Canvas matches it by name, check it there"
        return None, "no canvas_id, sis_user_id, sis_login_id or name"
    for column in IDS:
        value = person.get(column)
        if not value:
            continue
        fold = str.casefold if column == "sis_login_id" else str
        found = [u for u in known if fold(u.get(HEADER_OF[column], "")) == fold(value)]
        if found:
            return _as_canvas_has_it(person, found[0]), ""
    found = [u for u in known if person.get("name") and u["Student"] == person.get("name")]
    if len(found) == 1:
        return _as_canvas_has_it(person, found[0]), ""
    return None, "not among the students of the --lms-users file"


def _as_canvas_has_it(person: Person, user: Mapping[str, str]) -> Person:
    fields = dict(person.fields)
    fields["name"] = user["Student"]
    for column, header in HEADER_OF.items():
        fields[column] = user.get(header, "") or fields.get(column, "")
    return Person(person.row, fields)


def import_steps(columns: Sequence[tuple[str, float]], identifier: str | None = None) -> list[str]:
    return [
        "In Canvas: Grades > Import, choose the file; a column whose title is no assignment of "
        "the course becomes one, with the Points Possible the file gives "
        + ", ".join(f"{title} {points:g}" for title, points in columns)
        + "; a blank cell changes nothing."
    ]


def _read_csv(path: Path | str) -> list[list[str]]:
    try:
        with open(path, "rb") as handle:
            text = handle.read(20 * 2**20).decode("utf-8-sig")
    except OSError as exc:
        raise RosterError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise RosterError(f"{path} is not UTF-8: save it as CSV UTF-8") from None
    return list(csv.reader(io.StringIO(text, newline="")))
