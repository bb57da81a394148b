"""Canvas's gradebook import CSV (Grades > Import), as Canvas's own importer reads it.

    text = gradebook_csv(people, columns)   # people: [(Person, {column: points} or None)]

The layout is Canvas's gradebook export, which its importer expects back
(canvas-lms, app/models/gradebook_importer.rb): a header whose first columns are `Student`,
`ID`, `SIS User ID`, `SIS Login ID`, `Section` (the importer requires `Student` and `ID` first
and `Section` last of these), then one column per assignment; a second row whose first cell
is `Points Possible` and whose assignment cells give each assignment's points; then one row
per student. Canvas finds the student by `ID` (its numeric user id), else `SIS User ID`, else
`SIS Login ID`, else the name in `Student`. An assignment column whose title matches no
assignment of the course creates one. A blank grade changes nothing (a student in the roster
with no submission gets blank cells). Comma-separated, UTF-8, every text cell quoted and
formula-free (autograder/escaping.py).
"""

from autograder.escaping import csv_row

IDENTITY_HEADER = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"  # as Canvas's own export writes it


def gradebook_csv(people, columns):
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
