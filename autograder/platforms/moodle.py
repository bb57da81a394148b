"""Moodle's grade import CSV (Grades > Import > CSV file), as Moodle's importer reads it.

    text = grade_import_csv(people, columns, identifier="email")

Moodle (grade/import/csv/classes/load_data.php) maps each row to a user by one column the
teacher picks in "Map from", matched against a user field picked in "Map to": `email`,
`idnumber`, `username` or Moodle's numeric `id`; every other column is mapped to a grade item
(an existing one, or a new one named like the column). A blank or `-` grade is "no grade". A
row whose user is not found aborts the whole import, so only people of the roster who have the
chosen identifier are written (the others are reported by the export command). Comma-separated,
UTF-8 without a byte-order mark (Moodle's default encoding), text cells quoted and formula-free
(autograder/escaping.py).
"""

from autograder.escaping import csv_row

IDENTIFIERS = {  # Moodle's user field -> the roster column holding it
    "email": "email",
    "idnumber": "student_number",
    "username": "username",
}


def grade_import_csv(people, columns, identifier="email"):
    """columns: [(grade item name, points possible)]; people: [(Person, grades or None)] whose
    roster entry has the identifier (see missing_identifier)."""
    source = IDENTIFIERS[identifier]
    lines = [csv_row([identifier, *(title for title, _ in columns)])]
    for person, grades in people:
        cells = ["" if grades is None else grades[title] for title, _ in columns]
        lines.append(csv_row([person.get(source), *cells]))
    return "\n".join(lines) + "\n"


def missing_identifier(person, identifier):
    return not person.get(IDENTIFIERS[identifier])
