"""Moodle's grade import CSV (Grades > Import > CSV file), as Moodle's importer reads it.

    text = import_csv(people, columns, identifier="email")
    person, note = identify(person, identifier, known=None)   # (None, reason): not written
    known = read_users("moodle_users.csv", identifier)        # Moodle's own users, to check

Moodle (grade/import/csv/classes/load_data.php) maps each row to a user by one column the
teacher picks in "Map from", matched against a user field picked in "Map to": `email`,
`idnumber`, `username` or Moodle's numeric `id` (one database lookup of the value as written:
whether case matters is the database's collation, so with --lms-users the export writes
Moodle's own spelling; Moodle keeps usernames in lower case, so they are written lower-cased).
Every other column is mapped to a grade item: an existing one, where a blank or `-` cell is
"no grade", or "new grade item", where only `-` is (a blank becomes 0), so a person with no
grade gets `-`. A new grade item gets Moodle's default maximum of 100, which the CSV cannot
change: the export prints each item's maximum, to create the items first. A grade above 100
(the site's gradepointmax) aborts the import, so a column whose points possible are above the
site's maximum grade (`--moodle-max-grade`, default 100: the course's total) is written scaled
to it, titled so ("total (scaled to 100)"), and the steps printed say from what. A row whose user is not found aborts the whole
import, and a row with a blank user field is skipped without resetting the user, so its grades
would go to the row above: the export names every such row before writing anything. UTF-8
without a byte-order mark (Moodle's default encoding), comma-separated, text cells quoted and
formula-free (autograder/escaping.py).
"""

from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.escaping import csv_row
from autograder.platforms.canvas import _read_csv
from autograder.roster import Person, RosterError

IDENTIFIERS = {  # Moodle's user field -> the roster column holding it
    "email": "email",
    "idnumber": "student_number",
    "username": "username",
}
# the column of Moodle's own exports (grade export, participants download) for each field
EXPORT_HEADERS = {
    "email": ("email address", "email"),
    "idnumber": ("id number", "idnumber"),
    "username": ("username",),
}
CASE_FREE = ("email", "username")  # compared ignoring case with --lms-users
NO_GRADE = "-"
GRADEPOINTMAX = 100  # Moodle's default largest grade
CONSEQUENCE = (
    " (one unknown row aborts Moodle's whole import; a row with a blank user field gets its "
    "grades put on the row above)"
)


def fitted(
    columns: Sequence[tuple[str, float]], max_grade: float = GRADEPOINTMAX
) -> list[tuple[str, str, float, float]]:
    """[(title, title written, points possible written, factor)]: a column whose points possible
    are above the site's largest grade is scaled down to it (Moodle aborts the whole import on
    one grade above it), and its title says so."""
    out = []
    for title, points in columns:
        if points > max_grade:
            out.append((title, f"{title} (scaled to {max_grade:g})", max_grade, max_grade / points))
        else:
            out.append((title, title, points, 1.0))
    return out


def _scaled(grade: float, factor: float, top: float) -> float:
    return grade if factor == 1.0 else min(round(grade * factor, 4), top)


def import_csv(
    people: Sequence[tuple[Person, Mapping[str, float] | None]],
    columns: Sequence[tuple[str, float]],
    identifier: str = "email",
    max_grade: int = GRADEPOINTMAX,
) -> str:
    """columns: [(grade item name, points possible)]; people: [(Person, grades or None)] as
    identify returned them. Columns above `max_grade`: scaled (fitted)."""
    source = IDENTIFIERS[identifier]
    written = fitted(columns, max_grade)
    lines = [csv_row([identifier, *(shown for _, shown, _, _ in written)])]
    for person, grades in people:
        cells = [
            NO_GRADE if grades is None else csv_row([_scaled(grades[t], factor, top)])
            for t, _, top, factor in written
        ]
        # a lone "-" is no formula (a spreadsheet reads it as text): written as Moodle expects
        lines.append(",".join([csv_row([person.get(source)]), *cells]))
    return "\n".join(lines) + "\n"


def missing_identifier(person: Person, identifier: str) -> bool:
    # PHP's empty(): "" and "0" are both blank to Moodle's importer
    return person.get(IDENTIFIERS[identifier]) in ("", "0")


def read_users(path: Path | str, identifier: str = "email") -> dict[str, str]:
    """The values of Moodle's user field `identifier` in a CSV Moodle exported (its grade
    export, or a participants download): {folded value: Moodle's own spelling}."""
    rows = _read_csv(path)
    header = [h.strip().casefold() for h in rows[0]] if rows else []
    wanted = [i for i, h in enumerate(header) if h in EXPORT_HEADERS[identifier]]
    if not wanted:
        names = " or ".join(repr(h) for h in EXPORT_HEADERS[identifier])
        raise RosterError(f"{path} has no {names} column for Moodle's {identifier}")
    fold = str.casefold if identifier in CASE_FREE else str
    values = (row[wanted[0]].strip() for row in rows[1:] if len(row) > wanted[0])
    return {fold(value): value for value in values if value}


def identify(
    person: Person, identifier: str = "email", known: Mapping[str, str] | None = None
) -> tuple[Person, str] | tuple[None, str]:
    """(the Person as Moodle will find it, a note or ""), or (None, why it would not)."""
    source = IDENTIFIERS[identifier]
    value = person.get(source)
    if missing_identifier(person, identifier):
        return None, f"no {identifier} (the roster's {source} column)"
    if known is not None:
        fold = str.casefold if identifier in CASE_FREE else str
        if fold(value) not in known:
            return None, f"its {identifier} {value!r} is not in the --lms-users file"
        value = known[fold(value)]
    elif identifier == "username":
        value = value.lower()
    return Person(person.row, {**person.fields, source: value}), ""


def import_steps(
    columns: Sequence[tuple[str, float]], identifier: str = "email", max_grade: int = GRADEPOINTMAX
) -> list[str]:
    lines = [
        f"In Moodle: Grades > Import > CSV file; Map from `{identifier}` to the user field "
        f"`{identifier}`; a `-` is no grade. Map each column to a grade item. A column mapped to "
        '"new grade item" gets a maximum of 100: to show the right maximum, first create '
        "each item (Gradebook setup > Add grade item) with these maximum grades, then map "
        "each column to its item:"
    ]
    for _, shown, points, factor in fitted(columns, max_grade):
        lines.append(f"  {shown}: maximum grade {points:g}")
        if factor != 1.0:
            possible = points / factor
            lines.append(
                f"    (its {possible:g} points are scaled to {max_grade:g}, the largest grade a "
                "default Moodle site accepts; a site whose gradepointmax is raised: "
                f"--moodle-max-grade {possible:g} writes them as they are)"
            )
    return lines
