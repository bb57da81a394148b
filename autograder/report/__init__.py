"""What grading writes: results.json and feedback.html per student, grades.csv and a class summary.

    write_student(out / student, payload)   # payload built by grading/payload.py
    write_class(out, student_results)       # grades.csv, summary.md/.json, class.html/.json,
                                            # not_graded.json (report/not_graded.py)

Every file is written atomically (a temporary file renamed into place), so an interrupted run
never leaves half a results.json behind, and a rerun can trust the files it finds.
"""

import json
import os
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from autograder.course.misconceptions import CATALOGUE
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.escaping import csv_row
from autograder.report import not_graded
from autograder.report.class_page import HELP_CSV, class_data, help_first_csv, render_class_page
from autograder.report.feedback import feedback_context
from autograder.report.not_graded import NOT_GRADED, why_not_graded
from autograder.report.rendering import environment
from autograder.report.similarity import class_similarity, similarity_csv, similarity_view
from autograder.results import ReportedStudent, ResultsJson
from autograder.roster import Person

REPORT_FILES = (
    "grades.csv",
    "summary.md",
    "summary.json",
    "class.html",
    "class.json",
    "canvas_grades.csv",  # autograder/export.py
    "moodle_grades.csv",
    "export_unmatched.csv",
    "not_graded.json",  # autograder/report/not_graded.py
    "similarity.csv",  # autograder/report/similarity.py
)  # the class's files in OUT: a student folder named like one is graded into OUT/_<name>
TEMP_PREFIX = ".partial-"  # in the names of files being written (a killed run may leave one)


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, flush it to disk, rename it into place:
    a reader (or a rerun after a crash) sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_PREFIX}", dir=path.parent)
    try:
        # backslashreplace: a folder name that is not UTF-8 (surrogate escapes) stays readable
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def render_feedback(payload: ResultsJson) -> str:
    template = environment().get_template("feedback.html.j2")
    return template.render(**feedback_context(payload))


def write_student(folder: Path | str, payload: Mapping[str, Any]) -> None:
    """Write a results.json payload (a ResultsJson, built as a plain dict) and its page."""
    folder = Path(folder)
    atomic_write(folder / "feedback.html", render_feedback(cast(ResultsJson, payload)))
    atomic_write(folder / "results.json", json.dumps(payload, indent=1))  # last: marks done


# -- the class ----------------------------------------------------------------------------------
def grades_csv(students: Sequence[ReportedStudent]) -> str:
    """grades.csv: one quoted, formula-free text cell per student id (autograder/escaping.py).
    A student with no grade (why_not_graded) is a row too: blank notebook cells and NOT GRADED
    as the total, never a 0 a spreadsheet would average."""
    lines = [csv_row(["student", *(nb.stem for nb in NOTEBOOKS), "total"])]
    for s in students:
        if why_not_graded(s):
            lines.append(csv_row([s.student, *("" for _ in NOTEBOOKS), NOT_GRADED]))
            continue
        per: defaultdict[str, float] = defaultdict(float)
        for t in s.results.get("tests", []):
            per[t["notebook"]] += t["score"]
        for stem, entry in (s.results.get("late") or {}).get("notebooks", {}).items():
            per[stem] -= entry.get("penalty", 0.0)  # autograder/deadlines.py
        total = s.results.get("score", 0.0)
        lines.append(csv_row([s.student, *(per[nb.stem] for nb in NOTEBOOKS), total]))
    return "\n".join(lines) + "\n"


def summarise(students: Sequence[ReportedStudent]) -> dict[str, Any]:
    """Class means per notebook and per test, and the misconceptions most students showed, over
    the students graded; `not_graded` counts the others (no score in any mean)."""
    everyone = students
    students = [s for s in everyone if not why_not_graded(s)]
    n = len(students)
    per_test: defaultdict[str, list[float]] = defaultdict(
        lambda: [0.0, 0.0, 0]
    )  # name -> [score sum, max, count]
    per_notebook: defaultdict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    misconceptions: Counter[str] = Counter()  # id -> number of students
    functions_of = defaultdict(set)
    for s in students:
        seen = set()
        for t in s.results.get("tests", []):
            entry = per_test[t["name"]]  # one name for every student: see test_test_names
            entry[0] += t["score"]
            entry[1] = t["max_score"]
            entry[2] += 1
            per_notebook[t["notebook"]][0] += t["score"]
            per_notebook[t["notebook"]][1] += t["max_score"]
            for m in t.get("misconceptions", []):
                seen.add(m)
                functions_of[m].add(t["function"])
        misconceptions.update(seen)
    notebooks = {
        stem: {
            "title": BY_STEM[stem].title,
            "mean": round(total / n, 3) if n else 0.0,
            "max_score": round(maximum / n, 3) if n else 0.0,
        }
        for stem, (total, maximum) in per_notebook.items()
    }
    tests = {
        name: {"mean": round(total / count, 3), "max_score": maximum, "students": count}
        for name, (total, maximum, count) in per_test.items()
    }
    top = [
        {
            "id": m,
            "students": count,
            "functions": sorted(functions_of[m]),
            "mistake": CATALOGUE[m].mistake if m in CATALOGUE else "",
            "hint": CATALOGUE[m].hint if m in CATALOGUE else "",
        }
        for m, count in misconceptions.most_common()
    ]
    totals = [s.results.get("score", 0.0) for s in students]
    max_score = max((s.results.get("max_score", 0.0) for s in students), default=0.0)
    return {
        "students": len(everyone),
        "graded": n,
        "not_graded": len(everyone) - n,
        "mean_total": round(sum(totals) / n, 3) if n else 0.0,
        "max_score": max_score,
        "notebooks": notebooks,
        "tests": tests,
        "misconceptions": top,
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    lines = [
        "# Class summary",
        "",
        f"{summary['graded']} student(s); mean total {summary['mean_total']:g} / "
        f"{summary['max_score']:g}."
        + (
            f" NOT GRADED: {summary['not_graded']} student(s), named with why in class.html."
            if summary["not_graded"]
            else ""
        ),
        "",
        "## Per notebook (mean score)",
        "",
        "| notebook | mean | max |",
        "|---|---:|---:|",
    ]
    for stem in (nb.stem for nb in NOTEBOOKS):
        if stem in summary["notebooks"]:
            nb = summary["notebooks"][stem]
            lines.append(f"| {stem} | {nb['mean']:g} | {nb['max_score']:g} |")
    hardest = sorted(
        summary["tests"].items(),
        key=lambda kv: kv[1]["mean"] / kv[1]["max_score"] if kv[1]["max_score"] else 1.0,
    )
    lines += ["", "## Hardest tests (lowest mean fraction of points)", ""]
    for name, t in hardest[:10]:
        frac = t["mean"] / t["max_score"] if t["max_score"] else 1.0
        lines.append(f"- {frac:.0%} - {name}")
    lines += ["", "## Most common misconceptions: what to re-teach", ""]
    if not summary["misconceptions"]:
        lines.append("- none recognised")
    for m in summary["misconceptions"][:10]:
        lines.append(
            f"- **{m['id']}** ({m['students']} student(s); in {', '.join(m['functions'])}): "
            f"{m['mistake']}. {m['hint']}"
        )
    return "\n".join(lines) + "\n"


class SavedResult:
    refused = ""  # graded (a ReportedStudent, as not_graded.Refused is)

    def __init__(self, student: str, results: ResultsJson, folder: str | None = None) -> None:
        self.student, self.results = student, results
        self.folder = folder  # OUT/<folder>/ holds it (None: named like the student)


def collect_results(out: Path, skip: Collection[str] = ()) -> list[SavedResult]:
    """Every OUT/<student>/results.json, including students graded by earlier runs, but those
    of the folders in `skip` (the grading run has them in memory). The student is the one named
    inside (OUT/_grades.csv holds the student whose folder is grades.csv)."""
    saved = []
    for path in sorted(Path(out).glob("*/results.json")):
        if path.parent.name in skip:
            continue
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(payload, dict):
            continue
        student = payload.get("student")
        saved.append(
            SavedResult(
                student if isinstance(student, str) else path.parent.name,
                cast(ResultsJson, payload),  # a JSON object; each key is checked where read
                folder=path.parent.name,
            )
        )
    saved.sort(key=lambda s: s.student)
    return saved


def write_similarity(
    out: Path, students: Sequence[ReportedStudent], folders: Mapping[str, Path]
) -> dict[str, Any] | None:
    """OUT/similarity.csv and the class page's section (None when the comparison failed: the
    class report is written without it, with a warning)."""
    try:
        report = class_similarity(students, folders)
    except Exception as exc:  # noqa: BLE001 - the grades matter more than the comparison
        print(f"warning: the answers could not be compared ({type(exc).__name__})", file=sys.stderr)
        return None
    atomic_write(Path(out) / "similarity.csv", similarity_csv(report))
    return similarity_view(report)


def write_class(
    out: Path | str,
    students: Sequence[ReportedStudent] | None = None,
    folders: Mapping[str, Path] | None = None,
    roster: Sequence[Person] | None = None,
) -> dict[str, Any]:
    """grades.csv, the summary and the class page over `students` (default: every results.json
    under out, and the students not_graded.json names); not_graded.json from those refused;
    with `folders` ({student: the folder graded}), similarity.csv and the class page's
    similarity section over those students (report/similarity.py); help_first.csv (the class
    page's help list). roster: [roster.Person], for its sections."""
    out = Path(out)
    if students is None:
        students = sorted([*collect_results(out), *not_graded.read(out)], key=lambda s: s.student)
    refused = not_graded.unique(
        s for s in students if isinstance(s, not_graded.Refused) and s.refused
    )  # grading's class_results: SavedResults and Refused records
    graded = [s for s in students if not getattr(s, "refused", "")]
    students = sorted([*graded, *refused], key=lambda s: s.student)  # `bob/`, `bob.zip`: once
    atomic_write(out / not_graded.FILE, not_graded.dumps(refused))
    atomic_write(out / "grades.csv", grades_csv(students))
    summary = summarise(students)
    text = summary_markdown(summary)
    atomic_write(out / "summary.md", text)
    atomic_write(out / "summary.json", json.dumps(summary, indent=1))
    page = class_data(students, roster=roster)
    atomic_write(out / HELP_CSV, help_first_csv(page))
    if folders is not None:
        page["similarity"] = write_similarity(out, graded, folders)
    atomic_write(out / "class.json", json.dumps(page, indent=1))
    atomic_write(out / "class.html", render_class_page(page))
    summary["text"] = text
    return summary
