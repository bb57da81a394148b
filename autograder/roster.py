"""The course roster: who the graded submissions are, in the LMS's own identities.

    roster = read_roster("roster.csv")        # [Person], or RosterError saying what is wrong
    match = match_submissions(roster, names)  # Match: person -> submission, and the leftovers

The roster is a CSV file (UTF-8, a byte-order mark allowed) with a header row. Column names are
matched without regard to case, spaces or dashes; every column is optional except that each row
needs at least one identity a submission can be matched on:

    submission      the submission's name exactly as graded (OUT/<name>/), when you know it
    github          GitHub user name: matches a submission named `user` or, as GitHub
                    Classroom names repositories, `assignment-name-user` (case-insensitive)
    email           e-mail: matches a submission named like it (Gradescope, an LMS export)
    student_number  the institution's student number: matches a submission named like it;
                    Moodle's `idnumber`
    name            the display name (Canvas's "Student" column)
    canvas_id       Canvas's numeric user ID (its gradebook's "ID" column): matches a
                    submission named like it (a Canvas bulk download is graded by it)
    sis_user_id     Canvas's "SIS User ID"
    sis_login_id    Canvas's "SIS Login ID"
    section         Canvas's "Section"
    username        Moodle's username

Every comparison is student_ids.key's: it ignores case (GitHub's user names, e-mail addresses and
the student numbers of an LMS do: `S1001` and `s1001` are one student) and Unicode's two ways of
writing an accent (macOS names a folder `José` with a combining accent). A submission is matched to the person whose
`submission`, `email`, `student_number` or `canvas_id` equals its name, else whose `github` equals it, else whose `github` is the longest one it ends with
after a dash (a user `ann-lee` and a user `lee` both end `hw1-ann-lee`: `ann-lee` is chosen).
Anything else is not guessed: a submission two people match equally, and a person two
submissions match, are conflicts (Match.conflicts), and the export stops on them: a blank grade
would leave the LMS's old one standing.
"""

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autograder import student_ids

COLUMNS = (
    "submission",
    "github",
    "email",
    "student_number",
    "name",
    "canvas_id",
    "sis_user_id",
    "sis_login_id",
    "section",
    "username",
)
IDENTITIES = ("submission", "github", "email", "student_number", "canvas_id")  # matched on
EXACT = ("submission", "email", "student_number", "canvas_id")  # matched whole before github
ALIASES = {"studentnumber": "student_number", "idnumber": "student_number", "login": "github"}
MAX_ROSTER_BYTES = 20 * 2**20


class RosterError(ValueError):
    """A roster file that cannot be used, with the reason in the instructor's words."""


@dataclass
class Person:
    row: int  # line of the roster file (the header is line 1)
    fields: dict = field(default_factory=dict)  # column -> value (stripped; "" when absent)

    def get(self, column: str) -> str:
        return self.fields.get(column, "")

    @property
    def label(self) -> str:
        """How the person is named in messages: the first identity the roster gives."""
        for column in ("name", *IDENTITIES, "username", "canvas_id"):
            if self.get(column):
                return self.get(column)
        return f"roster line {self.row}"


def _column(header: str) -> str:
    key = header.strip().lower().replace(" ", "_").replace("-", "_")
    return ALIASES.get(key.replace("_", ""), key)


def read_roster(path: Path | str) -> list[Person]:
    """[Person] from a roster CSV; RosterError for an unreadable file or a row with no identity."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_ROSTER_BYTES + 1)
    except OSError as exc:
        raise RosterError(f"cannot read the roster {path}: {exc.strerror}") from None
    if len(raw) > MAX_ROSTER_BYTES:
        raise RosterError(f"the roster {path} is larger than {MAX_ROSTER_BYTES // 2**20} MB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RosterError(
            f"the roster {path} is not UTF-8 (byte {exc.start}): save it as CSV UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:  # a cell past csv's field limit, a broken quote
        raise RosterError(
            f"the roster {path}, line {reader.line_num}: not a CSV row the grader can read ({exc})"
        ) from None
    if not rows:
        raise RosterError(f"the roster {path} is empty: it needs a header row")
    columns = [_column(h) for h in rows[0]]
    known = [c for c in columns if c in COLUMNS]
    if not any(c in IDENTITIES for c in known):
        raise RosterError(
            f"the roster {path} has none of the columns a submission is matched on "
            f"({', '.join(IDENTITIES)}); its header is: {', '.join(rows[0])}"
        )
    doubled = sorted({c for c in known if known.count(c) > 1})
    if doubled:
        raise RosterError(f"the roster {path} has the column(s) {', '.join(doubled)} twice")
    people, problems = [], []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        values = {c: (row[i].strip() if i < len(row) else "") for i, c in enumerate(columns)}
        person = Person(line, {c: values.get(c, "") for c in COLUMNS})
        if not any(person.get(c) for c in IDENTITIES):
            problems.append(f"line {line} has no {', '.join(IDENTITIES)}")
            continue
        people.append(person)
    seen: dict[tuple[str, str], int] = {}
    for person in people:
        for column in IDENTITIES:
            value = student_ids.key(person.get(column))
            if value and (column, value) in seen:
                problems.append(
                    f"lines {seen[(column, value)]} and {person.row} have the same {column} "
                    f"{person.get(column)!r}"
                )
            elif value:
                seen[(column, value)] = person.row
    if problems:
        raise RosterError(f"the roster {path}: " + "; ".join(problems))
    return people


@dataclass
class Match:
    by_person: dict  # Person.row -> submission name
    unmatched: list  # [(submission, reason)]: no roster entry, or a conflict
    conflicts: list = field(default_factory=list)  # [(submission, reason)]: the conflicts


def _candidates(name: str, people: Sequence[Person]) -> list[Person]:
    """The people a submission's name points to, best rule first (see the module's docstring)."""
    key = student_ids.key
    folded = key(name)
    exact = [p for p in people if any(p.get(c) and key(p.get(c)) == folded for c in EXACT)]
    if exact:
        return exact
    github = [p for p in people if p.get("github") and key(p.get("github")) == folded]
    if github:
        return github
    suffixes = [
        p for p in people if p.get("github") and folded.endswith("-" + key(p.get("github")))
    ]
    if not suffixes:
        return []
    longest = max(len(p.get("github")) for p in suffixes)
    return [p for p in suffixes if len(p.get("github")) == longest]


def match_submissions(people: Sequence[Person], names: Iterable[str]) -> Match:
    """Match every submission name to at most one person, and every person to at most one name."""
    claims: dict[int, list[str]] = {}  # person row -> [names]
    unmatched, conflicts = [], []
    for name in names:
        found = _candidates(name, people)
        if not found:
            unmatched.append((name, "no roster entry matches this name"))
        elif len(found) > 1:
            who = ", ".join(f"line {p.row}" for p in found)
            conflicts.append((name, f"matches several roster entries ({who})"))
        else:
            claims.setdefault(found[0].row, []).append(name)
    by_person = {}
    for row, claimed in claims.items():
        if len(claimed) == 1:
            by_person[row] = claimed[0]
        else:
            for name in claimed:
                others = ", ".join(n for n in claimed if n != name)
                conflicts.append((name, f"roster line {row} is also matched by {others}"))
    return Match(by_person, unmatched + conflicts, conflicts)
