"""Deadlines and late penalties: per-notebook due dates and one penalty policy, applied to a
student's results from the time each notebook was handed in.

    policy = load_policy("deadlines.toml")          # python -m autograder grade ... --deadlines F
    apply_late_policy(payload, policy, handed_in)   # handed_in: {notebook stem: aware datetime}

The policy file (TOML):

    timezone = "Europe/Paris"       # for due dates written without an offset (default UTC)

    [due]                           # per notebook, by stem or file name; "all" for the rest
    "01_soft_lookup" = "2026-10-02T23:59:00+02:00"
    all = "2026-12-18 23:59"

    [penalty]
    method = "per-period"           # "none", "zero" (nbgrader's) or "per-period"
    points = 1.0                    # per-period: points off for each started period late
    period_hours = 24
    grace_minutes = 0               # handed in within this after the due date: not late
    unknown_late_periods = 1        # per-period: periods charged when the lateness is unknown

    [extensions]                    # per student, by the name they are graded under
    ada = 48                        # every due date 48 hours later
    "bo-lee" = { "03_matrix_attention" = "2026-11-06 23:59", all = "2026-12-20 23:59" }

An extension moves that student's due dates only: a number of hours (finite, > 0) for every
notebook, or new dates (a table like [due], whose `all` covers the notebooks it does not name;
a notebook it leaves out keeps the class's date). Student names are compared as
student_ids.key compares them (ignoring case and Unicode's two ways of writing an accent: an
extension for `José` applies to a folder macOS named `José` with a combining accent).
Under nbgrader, give extensions in nbgrader's own gradebook instead (its `extension` per
student and assignment), which its late penalty reads.

**Late by an unknown amount.** Canvas's bulk download ("Download Submissions") marks a late
hand-in with `LATE_` in the file's name (autograder/bulk_downloads.py), and its files' dates are
the download's, not the hand-in's. So, without `--handed-in`, a notebook graded from a Canvas
file has no hand-in time: one Canvas did not mark is on time; one it marked is late by an amount
nobody knows, shown as "late (Canvas), time unknown" on the class page and the student's, with
the policy's penalty for an unknown lateness: "zero" the whole score, "per-period"
`unknown_late_periods` periods (default 1: the least a late notebook owes), "none" nothing.
Canvas marks it against Canvas's own due date; when this file gives the student an extension for
that notebook, the mark alone takes nothing (it may be within the extension): give that student's
times with `--handed-in`, which always wins over the mark.

Every number must be finite: points >= 0, grace_minutes >= 0, period_hours at least a minute
and at most a year; every date must be one UTC can hold; any other file is refused with where
and why, before anything is graded or written.

The rules are nbgrader's (nbgrader.preprocessors.AssignLatePenalties with its
LateSubmissionPlugin): a notebook handed in after its due date gets a penalty from the policy,
never below 0 and never above the notebook's score, and nothing when on time. "zero" is nbgrader's
own method (the whole score); "per-period" takes `points` off for every started period (a
notebook 25 hours late with a 24-hour period has started two periods). The same policy runs
under nbgrader as `PointsPerPeriod` (autograder/platforms/nbgrader.py), where nbgrader's
gradebook keeps the penalty.

The verdicts stay as they are in results.json's tests; the penalty is its own block (`late`),
recomputed from the raw scores whenever grading runs, never compounded, so extending a deadline
needs no regrading.
"""

import json
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, NamedTuple, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder import student_ids
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.escaping import terminal

METHODS = ("none", "zero", "per-period")
ALL = "all"
MAX_HOURS = 24 * 366  # a period, a grace or an extension longer than a year is a typing slip
MIN_PERIOD_HOURS = 1 / 60  # a penalty period shorter than a minute is a typing slip
FILE_TIMES_NOTE = (
    "note: late penalties come from the notebooks' file times, which are the student's to set "
    "(a commit's date, a copy that keeps its times); give trusted hand-in times with "
    "--handed-in (classroom gather --record writes them)."
)


class PolicyError(ValueError):
    """A deadlines file that cannot be used: the message says where and why."""


@dataclass(frozen=True)
class LatePolicy:
    due: dict = field(default_factory=dict)  # notebook stem -> aware datetime
    method: str = "none"
    points: float = 0.0
    period: timedelta = timedelta(hours=1)
    grace: timedelta = timedelta(0)
    extensions: dict = field(default_factory=dict)  # student_ids.key -> {stem: datetime}
    unknown_late_periods: int = 1  # per-period: what a notebook late by an unknown amount owes

    def for_student(self, student: str | None) -> Self:
        """This policy with the student's extended due dates (itself when they have none)."""
        moved = self.extensions.get(student_ids.key(str(student or "")))
        if not moved:
            return self
        return replace(self, due={**self.due, **moved}, extensions={})

    def seconds_late(self, stem: str, handed_in: datetime | None) -> float:
        """Seconds after the due date (0 when on time, within the grace, or no due date)."""
        due = self.due.get(stem)
        if due is None or handed_in is None:
            return 0.0
        late = (handed_in - due).total_seconds()
        return late if late > self.grace.total_seconds() else 0.0

    def penalty(self, score: float, seconds_late: float) -> float | None:
        """nbgrader's rule: None when on time; else the method's penalty in [0, score]."""
        if seconds_late <= 0 or self.method == "none":
            return None
        if self.method == "zero":
            raw = score
        else:
            raw = self.points * math.ceil(seconds_late / self.period.total_seconds())
        return round(min(max(raw, 0.0), max(score, 0.0)), 4)

    def penalty_unknown(self, score: float) -> float | None:
        """The penalty of a notebook an LMS marked late, by an amount not known: what the
        method takes for `unknown_late_periods` started periods (the whole score for "zero")."""
        return self.penalty(score, self.unknown_late_periods * self.period.total_seconds())

    def describe(self) -> str:
        if self.method == "zero":
            return "a late notebook scores 0"
        if self.method == "per-period":
            hours = self.period.total_seconds() / 3600
            return f"{self.points:g} point(s) off per started {hours:g} h late, down to 0"
        return "no penalty"


def _when(text, zone: tzinfo, where: str) -> datetime:
    if isinstance(text, datetime):  # TOML's own datetime values
        moment = text
    elif isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text.strip())
        except ValueError:
            raise PolicyError(f"{where}: {text!r} is not a date and time (ISO 8601)") from None
    else:
        raise PolicyError(f"{where}: expected a date and time, got {type(text).__name__}")
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
    try:
        moment.astimezone(UTC)  # 0001-01-01T00:00+01:00 is before the first UTC date
    except (OverflowError, ValueError):
        raise PolicyError(
            f"{where}: {moment.isoformat()} is outside the dates UTC can hold"
        ) from None
    return moment


def parse_policy(data: Mapping[str, Any], source: str = "the deadlines file") -> LatePolicy:
    """A LatePolicy from the policy's data (a dict, as TOML reads it)."""
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: expected a table")
    unknown = set(data) - {"timezone", "due", "penalty", "extensions"}
    if unknown:
        raise PolicyError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}")
    zone = _zone(data["timezone"], source) if "timezone" in data else UTC
    due = _due_dates(data.get("due", {}), zone, source, "due")
    penalty = data.get("penalty", {})
    if not isinstance(penalty, dict):
        raise PolicyError(f"{source}: [penalty] must be a table")
    method = penalty.get("method", "none")
    if method not in METHODS:
        raise PolicyError(f"{source}: penalty.method must be one of {', '.join(METHODS)}")
    numbers = {}
    unknown = set(penalty) - {
        "method",
        "points",
        "period_hours",
        "grace_minutes",
        "unknown_late_periods",
    }
    if unknown:
        raise PolicyError(f"{source}: unknown key(s) in [penalty]: {', '.join(sorted(unknown))}")
    for key, default in (("points", 0.0), ("period_hours", 1.0), ("grace_minutes", 0.0)):
        value = penalty.get(key, default)
        if not _finite(value) or value < 0:
            raise PolicyError(f"{source}: penalty.{key} must be a finite number >= 0")
        numbers[key] = float(value)
    if numbers["period_hours"] <= 0 or numbers["period_hours"] > MAX_HOURS:
        raise PolicyError(f"{source}: penalty.period_hours must be > 0 and at most {MAX_HOURS}")
    if numbers["period_hours"] < MIN_PERIOD_HOURS:  # 1e-300 hours is a period of 0 seconds
        raise PolicyError(
            f"{source}: penalty.period_hours must be at least {MIN_PERIOD_HOURS:.6g} (a minute); "
            f"got {numbers['period_hours']:g}"
        )
    if numbers["grace_minutes"] > MAX_HOURS * 60:
        raise PolicyError(f"{source}: penalty.grace_minutes must be at most {MAX_HOURS * 60}")
    if method == "per-period" and numbers["points"] <= 0:
        raise PolicyError(f"{source}: per-period needs points > 0 and period_hours > 0")
    periods = penalty.get("unknown_late_periods", 1)
    if isinstance(periods, bool) or not isinstance(periods, int) or not 1 <= periods <= 10_000:
        raise PolicyError(
            f"{source}: penalty.unknown_late_periods must be a whole number from 1 to 10000"
        )
    extensions = _extensions(data.get("extensions", {}), due, zone, source)
    return LatePolicy(
        unknown_late_periods=periods,
        due=due,
        method=method,
        points=numbers["points"],
        period=timedelta(hours=numbers["period_hours"]),
        grace=timedelta(minutes=numbers["grace_minutes"]),
        extensions=extensions,
    )


def _zone(name, source) -> ZoneInfo:
    """The ZoneInfo of the policy's `timezone`; PolicyError naming the file and the key for any
    name the system's zone database cannot give (ZoneInfo raises OSError for a name longer than
    a file name can be, ValueError for one with a NUL or a path in it, TypeError for a number)."""
    text = str(name)
    shown = terminal(text if len(text) <= 80 else f"{text[:80]}... ({len(text):,} characters)")
    if not isinstance(name, str):
        raise PolicyError(f'{source}: timezone must be a name such as "Europe/Paris", not {shown}')
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, OSError, ValueError, TypeError):
        raise PolicyError(
            f'{source}: timezone: unknown timezone "{shown}" (a name such as "Europe/Paris")'
        ) from None


def _finite(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _due_dates(table, zone: tzinfo, source, where: str) -> dict[str | None, datetime]:
    """{stem: aware datetime} from a table of notebook = date, with `all` for the rest."""
    if not isinstance(table, dict):
        raise PolicyError(f"{source}: [{where}] must be a table of notebook = date")
    due = {}
    for key, value in table.items():
        if key == ALL:
            continue
        if notebook_of(key) is None:
            raise PolicyError(f"{source}: [{where}] names no notebook of the course: {key!r}")
        due[notebook_of(key)] = _when(value, zone, f"{source}, {where}.{key}")
    if ALL in table:
        fallback = _when(table[ALL], zone, f"{source}, {where}.all")
        for nb in NOTEBOOKS:
            due.setdefault(nb.stem, fallback)
    return due


def _extensions(table, due: dict[str | None, datetime], zone: tzinfo, source):
    """{student_ids.key: {stem: extended due date}} from [extensions]."""
    if not isinstance(table, dict):
        raise PolicyError(f"{source}: [extensions] must be a table of student = hours or dates")
    extensions = {}
    for student, value in table.items():
        where = f"{source}, extensions.{student}"
        if student_ids.key(student) in extensions:
            raise PolicyError(
                f"{where}: this student is given twice (names ignore case and Unicode form)"
            )
        if isinstance(value, dict):
            moved = _due_dates(value, zone, source, f"extensions.{student}")
        elif _finite(value) and 0 < value <= MAX_HOURS:
            if not due:
                raise PolicyError(f"{where}: hours extend due dates, and [due] gives none")
            try:
                moved = {stem: when + timedelta(hours=value) for stem, when in due.items()}
            except OverflowError:
                raise PolicyError(
                    f"{where}: the due dates moved by {value:g} h are past the year 9999"
                ) from None
        else:
            raise PolicyError(
                f"{where}: expected a number of hours (> 0, at most {MAX_HOURS}) or a table "
                "of notebook = date"
            )
        extensions[student_ids.key(student)] = moved
    return extensions


def load_policy(path: Path | str) -> LatePolicy:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"{path}: cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: not a TOML file ({exc})") from None
    return parse_policy(data, str(path))


def apply_late_policy(
    payload: dict[str, Any], policy: LatePolicy | None, handed_in: Mapping[str, datetime]
) -> bool:
    """Set payload["late"] and the penalised scores from the tests' raw scores (idempotent).
    With policy None, a late block of an earlier run is removed and the raw scores restored.

    handed_in: {stem: aware datetime} (a missing stem: its time is not known, no penalty); a
    HandedIn's flags (gather's) go to payload["handed_in_flags"], as what gather saw.
    Returns True when the payload changed."""
    before = json.dumps([payload.get(k) for k in ("late", "score", "notebooks", "handed_in_flags")])
    if policy is None:
        policy = LatePolicy()  # no due dates: every penalty 0
    course = policy
    policy = policy.for_student(payload.get("student"))
    raw: dict[str, float] = {}
    for test in payload.get("tests", []):
        raw[test["notebook"]] = raw.get(test["notebook"], 0.0) + float(test["score"])
    per_notebook, total = {}, 0.0
    for stem, info in payload.get("notebooks", {}).items():
        score = round(raw.get(stem, 0.0), 4)
        # a notebook that was not handed in has no hand-in time, whatever a record says
        when = None if info.get("submitted") is False else handed_in.get(stem)
        extended = stem in policy.due and policy.due[stem] != course.due.get(stem)
        marked = when.lms if isinstance(when, LmsMark) and when.late else None
        when = None if isinstance(when, LmsMark) else when  # an LMS's mark is no time
        seconds = policy.seconds_late(stem, when)
        if marked and stem in policy.due:  # late by an unknown amount (see the docstring)
            penalty = None if extended else policy.penalty_unknown(score)
        else:
            penalty = policy.penalty(score, seconds)
        info["score"] = round(score - (penalty or 0.0), 4)
        if stem in policy.due:
            per_notebook[stem] = {
                "due": policy.due[stem].isoformat(),
                "handed_in": when.isoformat() if when is not None else None,
                "seconds_late": round(seconds, 1),
                "penalty": penalty or 0.0,
                "extended": extended,  # an extension moved it
            }
            if marked:
                per_notebook[stem]["marked_late"] = marked  # by the LMS, time unknown
            total += penalty or 0.0
    payload["score"] = round(sum(raw.values()) - total, 4)
    flags = [f for f in getattr(handed_in, "flags", ()) if f in GATHER_FLAGS]
    if flags:  # what gather saw (classroom gather --record): for a human, never a penalty
        payload["handed_in_flags"] = [{"flag": f, "what": GATHER_FLAGS[f]} for f in flags]
    else:
        payload.pop("handed_in_flags", None)
    if policy.due:
        payload["late"] = {
            "policy": policy.describe(),
            "penalty": round(total, 4),
            "notebooks": per_notebook,
        }
    else:
        payload.pop("late", None)
    after = json.dumps([payload.get(k) for k in ("late", "score", "notebooks", "handed_in_flags")])
    return after != before


def late_line(stem: str, late: Mapping[str, Any] | None) -> str:
    """'handed in 3 h 20 min late: 4 points off' for a notebook's row, '' when on time."""
    entry = (late or {}).get("notebooks", {}).get(stem)
    took = f": {entry['penalty']:g} point(s) off" if entry and entry.get("penalty") else ""
    if entry and isinstance(entry.get("marked_late"), str):
        return f"late ({entry['marked_late']}), time unknown{took}"
    if not entry or entry.get("seconds_late", 0) <= 0:
        return ""
    minutes = int(entry["seconds_late"] // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"]
    return f"handed in {' '.join(parts[:2])} late{took}"


def notebook_of(name: str) -> str | None:
    """The stem for a notebook's stem or file name (None if it is not one of the course's)."""
    if name in BY_STEM:
        return name
    stem = name.removesuffix(".ipynb")
    return stem if stem in BY_STEM else None


# -- when each notebook was handed in -------------------------------------------------------------
def handed_in_from_files(files: Mapping[str, Path]) -> dict[str, datetime]:
    """{stem: time} from the files graded: `files` is {stem: the student's own file graded as
    that notebook} (submissions.Placement.sources: a near name, a copy in a folder, or the zip
    a notebook came from), each dated by its own modification time, never followed through a
    link. A notebook not in `files` (not handed in, or misnamed) has no hand-in time, and so no
    lateness. A value that is an LmsMark (a Canvas bulk download's file: its date is the
    download's) is no time: marked late, it is kept as the mark (late, time unknown); not
    marked, the notebook has no hand-in time (on time). Use `--handed-in` where file times are not the hand-in times (a copy that did not
    keep them: `python -m autograder classroom gather` keeps them and records each commit's
    time)."""
    times = {}
    for stem, path in (files or {}).items():
        if stem not in BY_STEM or path is None:
            continue
        if isinstance(path, LmsMark):
            if path.late:
                times[stem] = path
            continue
        try:
            times[stem] = datetime.fromtimestamp(os.lstat(path).st_mtime, UTC)
        except (OSError, ValueError, OverflowError):
            continue  # gone since, or a time no datetime holds: not known
    return times


class LmsMark(NamedTuple):
    """What an LMS's bulk download says of a file's hand-in instead of a time: which LMS, and
    whether it marked the hand-in late (Canvas's `LATE_`)."""

    lms: str
    late: bool


HANDED_IN_COLUMNS = ("student", "notebook", "handed_in")
GATHER_FLAGS = {  # token (the `flags` column of gather's record) -> what gather saw
    "backdated": (
        "the commit graded is dated before the deadline, yet a gather at or after the deadline "
        "did not have it: it was pushed after the deadline, whatever its date says, and is "
        "taken as handed in no earlier than that gather"
    ),
    "history-rewritten": (
        "the repository's history was rewritten since an earlier gather: the commit that "
        "gather saw is no longer in it"
    ),
}


class HandedIn(dict):
    """{stem: time} of one student, and `flags`: what gather saw of their repository
    (GATHER_FLAGS tokens), for a human to check; a flag never changes a score."""

    def __init__(self, *args, flags=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.flags = tuple(flags)


def load_handed_in(path: Path | str) -> dict[str, HandedIn]:
    """{student_ids.key(student): HandedIn {stem: time}} from a CSV with the columns student,
    notebook, handed_in (an empty notebook: every notebook of that student), and optionally flags
    (GATHER_FLAGS tokens separated by ";"), as `classroom gather` writes it. A row without a
    student, a notebook or flag the course does not know, or one student and notebook given
    twice is refused with its line."""
    import csv

    path = Path(path)
    times: dict[str, HandedIn] = {}
    given: set[tuple[str, str | None]] = set()
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise PolicyError(f"{path}: cannot be read ({exc})") from None
    for number, row in enumerate(rows, start=2):
        if set(HANDED_IN_COLUMNS) - set(row):
            raise PolicyError(f"{path}: the columns must be {', '.join(HANDED_IN_COLUMNS)}")
        where = f"{path}, line {number}"
        student = (row["student"] or "").strip()
        if not student:
            raise PolicyError(f"{where}: no student")
        moment = _when(row["handed_in"], UTC, where)
        notebook = (row["notebook"] or "").strip()
        if notebook and notebook_of(notebook) is None:
            raise PolicyError(f"{where}: {notebook!r} is not a notebook of the course")
        who = student_ids.key(student)  # `Ada` and `ada` are one student, as everywhere
        if (who, notebook_of(notebook) if notebook else "") in given:
            raise PolicyError(
                f"{where}: {student!r} {notebook or '(all notebooks)'} is given twice"
            )
        given.add((who, notebook_of(notebook) if notebook else ""))
        flags = [f.strip() for f in (row.get("flags") or "").split(";") if f.strip()]
        unknown = [f for f in flags if f not in GATHER_FLAGS]
        if unknown:
            raise PolicyError(f"{where}: unknown flag(s) {', '.join(map(repr, unknown))}")
        stems = [notebook_of(notebook)] if notebook else [nb.stem for nb in NOTEBOOKS]
        mine = times.setdefault(who, HandedIn())
        mine.flags = tuple(dict.fromkeys((*mine.flags, *flags)))
        for stem in stems:
            if notebook or stem not in mine:  # a row for one notebook wins over an empty one
                mine[stem] = moment
    return times
