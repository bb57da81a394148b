"""Students the class run refuses before grading are in every report an instructor reads.

A class of one honest student and three the run refuses from their names alone: an id holding
a right-to-left override (written as a formula and as HTML too), an id that is not UTF-8, and
one student with two submissions (`bob/` and `bob.zip`). Grading is stood in
(fixtures.stand_in_grading: no sandbox, no kernel); discovery, the class report and the LMS
exports are the real ones. The expected cells and reasons are written out here by hand.
"""

import csv
import io
import json
import os
import re
import zipfile
from argparse import Namespace
from html.parser import HTMLParser

from fixtures import one_cell_notebook, stand_in_grading

from autograder.__main__ import main
from autograder.curriculum import NOTEBOOKS
from autograder.grading import command
from autograder.report import SavedResult, grades_csv, not_graded
from autograder.report.class_page import HELP_ORDER, class_data

NB1 = "01_soft_lookup.ipynb"
HOSTILE = '=HYPERLINK("x")<img src=x onerror=alert(1)>\u202egpj'  # refused: U+202E
NOT_UTF8 = os.fsdecode(b"caf\xff<b>x")  # refused: not UTF-8
# the ids as every report shows them: each invisible character as its escape
HOSTILE_SHOWN = '=HYPERLINK("x")<img src=x onerror=alert(1)>\\u202egpj'
NOT_UTF8_SHOWN = "caf\\udcff<b>x"
REASONS = {  # the run's words, from names only
    "bob": "NOT GRADED: 2 submissions for one student (bob/, bob.zip); keep one and grade again.",
    HOSTILE_SHOWN: "NOT GRADED: its name holds the control or invisible character U+202E; "
    "rename it to the student's id as the roster writes it.",
    NOT_UTF8_SHOWN: "NOT GRADED: its name is not UTF-8 text; rename the folder or file in UTF-8.",
}
ROSTER = """\
name,submission,email,canvas_id
Ann,ann,ann@example.org,501
Bob,bob,bob@example.org,502
Carl,carl,carl@example.org,503
"""


def ann_scores():
    """{stem: (points, of)}: notebook i scores i + 1 of i + 2."""
    return {nb.stem: (float(i + 1), float(i + 2)) for i, nb in enumerate(NOTEBOOKS)}


def payload(student):
    tests = [
        {"name": f"{nb.graded[0]}: a case", "score": got, "max_score": of, "status": "failed",
         "output": "", "notebook": nb.stem, "function": nb.graded[0], "misconceptions": [],
         "reason": "failed"}
        for nb in NOTEBOOKS
        for got, of in [ann_scores()[nb.stem]]
    ]  # fmt: skip
    return {"score": sum(t["score"] for t in tests), "max_score": sum(t["max_score"] for t in tests),
            "notebooks": {}, "tests": tests}  # fmt: skip


def build_class(root):
    for name in ("ann", "bob", HOSTILE, NOT_UTF8):
        (root / name).mkdir(parents=True)
        (root / name / NB1).write_text(one_cell_notebook("x = 1"))
    with zipfile.ZipFile(root / "bob.zip", "w") as archive:
        archive.writestr(NB1, one_cell_notebook("x = 2"))
    return root


def grade(path, out, capsys, **more):
    options = dict(secret="s", timeout=10, workers=1, force=False, quiet=True, skip_selftest=True)
    status = command.grade_command(Namespace(path=str(path), out=str(out), **(options | more)))
    return status, capsys.readouterr()


class Table(HTMLParser):
    """The rows of the "students to help first" table: [(cells' text, has a link)]."""

    def __init__(self):
        super().__init__()
        self.rows, self.cell, self.inside = [], None, False

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self.inside = dict(attrs).get("id") == "help-first"
        elif self.inside and tag == "tr":
            self.rows.append(([], False))
        elif self.inside and tag == "td":
            self.cell = ""
        elif self.inside and tag == "a" and self.cell is not None and self.rows:
            self.rows[-1] = (self.rows[-1][0], True)

    def handle_endtag(self, tag):
        if self.inside and tag == "td" and self.rows:
            self.rows[-1][0].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def help_first(html):
    table = Table()
    table.feed(html)
    return [(cells, linked) for cells, linked in table.rows if cells]


def read_page(out):
    raw = (out / "class.html").read_bytes()
    return raw.decode("utf-8")  # strict: nothing that is not UTF-8 reached the page


def rows_of(path):
    text = path.read_bytes().decode("utf-8")
    return text, list(csv.reader(io.StringIO(text, newline="")))


# -- the class run ------------------------------------------------------------------------------
def test_refused_students_are_named_first_in_help_first_with_the_runs_reason(
    tmp_path, monkeypatch, capsys
):
    cls, out = build_class(tmp_path / "class"), tmp_path / "out"
    graded = stand_in_grading(monkeypatch, payload)
    status, said = grade(cls, out, capsys)
    assert status == 1 and graded == ["ann"]
    html = read_page(out)
    rows = help_first(html)
    shown = {cells[0]: (cells, linked) for cells, linked in rows}
    assert [cells[0] for cells, _ in rows[:3]] == sorted(REASONS)  # first, by id
    assert rows[3][0][0] == "ann" and rows[3][1]  # graded: after them, with her page's link
    for student, reason in REASONS.items():
        cells, linked = shown[student]
        assert cells[1:] == ["not graded", reason]
        assert not linked  # no feedback page to link to
    data = json.loads((out / "class.json").read_text())
    assert data["graded"] == 1 and data["not_graded"] == 3
    assert data["mean_total"] == sum(got for got, _ in ann_scores().values())
    assert "1 student graded, 3 NOT GRADED" in re.sub(r"<[^>]+>", "", html)
    assert [h["kinds"] for h in data["help_first"][:3]] == [["not-graded"]] * 3


def test_hostile_refused_ids_reach_no_page_or_file_raw(tmp_path, monkeypatch, capsys):
    cls, out = build_class(tmp_path / "class"), tmp_path / "out"
    stand_in_grading(monkeypatch, payload)
    _, said = grade(cls, out, capsys)
    html = read_page(out)
    for raw in ("<img", "<b>", "\u202e", "\udcff", "\x1b", 'HYPERLINK("'):
        assert raw not in html, raw
    assert "&lt;img src=x onerror=alert(1)&gt;\\u202egpj" in html  # text, seen as written
    assert "caf\\udcff&lt;b&gt;x" in html
    for name in ("grades.csv", "summary.md", "summary.json", "class.json", "not_graded.json"):
        text = (out / name).read_bytes().decode("utf-8")
        assert "\u202e" not in text and "\udcff" not in text, name
    for stream in (said.out, said.err):
        assert "\u202e" not in stream and "\x1b" not in stream
    # the terminal names each refused student once, as the page does
    assert said.err.count("NOT GRADED bob: not graded: 2 submissions for one student") == 1
    assert f"NOT GRADED {HOSTILE_SHOWN}: not graded: its name holds" in said.err
    assert f"NOT GRADED {NOT_UTF8_SHOWN}: not graded: its name is not UTF-8" in said.err
    assert "error: 3 student(s) not graded" in said.err


def test_grades_csv_shows_refused_students_as_not_graded_never_as_zero(
    tmp_path, monkeypatch, capsys
):
    cls, out = build_class(tmp_path / "class"), tmp_path / "out"
    stand_in_grading(monkeypatch, payload)
    grade(cls, out, capsys)
    text, rows = rows_of(out / "grades.csv")
    assert rows[0] == ["student", *(nb.stem for nb in NOTEBOOKS), "total"]
    by_student = {r[0]: r[1:] for r in rows[1:]}
    blank = [""] * len(NOTEBOOKS)
    assert by_student == {
        "ann": [f"{got:g}" for got, _ in ann_scores().values()]
        + [f"{sum(got for got, _ in ann_scores().values()):g}"],
        "bob": [*blank, "NOT GRADED"],
        "'" + HOSTILE_SHOWN: [*blank, "NOT GRADED"],  # a formula start made text
        NOT_UTF8_SHOWN: [*blank, "NOT GRADED"],
    }
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["students"], summary["graded"], summary["not_graded"]) == (4, 1, 3)
    assert summary["mean_total"] == sum(got for got, _ in ann_scores().values())
    assert "NOT GRADED: 3 student(s)" in (out / "summary.md").read_text()


def test_the_exports_hold_no_grade_for_refused_students(tmp_path, monkeypatch, capsys):
    cls, out = build_class(tmp_path / "class"), tmp_path / "out"
    stand_in_grading(monkeypatch, payload)
    # bob was graded by an earlier run; two submissions now: that grade is not what is true
    (out / "bob").mkdir(parents=True)
    (out / "bob" / "results.json").write_text(json.dumps({**payload("bob"), "student": "bob"}))
    grade(cls, out, capsys)
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    assert main(["export", "--roster", str(roster), "--grades", str(out), "--format", "moodle",
                 "--columns", "total"]) == 0  # fmt: skip
    said = capsys.readouterr().out
    _, rows = rows_of(out / "moodle_grades.csv")
    total = sum(got for got, _ in ann_scores().values())
    assert rows[1:] == [["ann@example.org", f"{total:g}"], ["bob@example.org", "-"],
                        ["carl@example.org", "-"]]  # fmt: skip
    assert "Bob (roster" not in said  # matched: exported, with no grade, and said so
    assert "bob: not graded: 2 submissions for one student (bob/, bob.zip)" in said
    assert "Exported with no grade" in said
    _, unmatched = rows_of(out / "export_unmatched.csv")
    reasons = {r[0]: r[1] for r in unmatched[1:]}
    assert "not graded: its name holds the control" in reasons["'" + HOSTILE_SHOWN]
    assert "not graded: its name is not UTF-8" in reasons[NOT_UTF8_SHOWN]
    assert "\u202e" not in said and "\udcff" not in said

    assert main(["export", "--roster", str(roster), "--grades", str(out), "--format",
                 "canvas"]) == 0  # fmt: skip
    capsys.readouterr()
    _, rows = rows_of(out / "canvas_grades.csv")
    by_id = {r[1]: r[5:] for r in rows[2:]}
    assert by_id["501"][-1] == f"{total:g}"
    assert by_id["502"] == [""] * len(by_id["502"]) and by_id["503"] == by_id["502"]
    # class.html and grades.csv agree: the old grade is not shown
    _, grades = rows_of(out / "grades.csv")
    assert {r[0]: r[-1] for r in grades[1:]}["bob"] == "NOT GRADED"


def test_a_regrade_of_one_student_keeps_them_and_a_fixed_class_drops_them(
    tmp_path, monkeypatch, capsys
):
    cls, out = build_class(tmp_path / "class"), tmp_path / "out"
    graded = stand_in_grading(monkeypatch, payload)
    grade(cls, out, capsys)
    status, _ = grade(cls / "ann", out, capsys, force=True)  # one student, graded again
    assert status == 0 and graded == ["ann", "ann"]
    assert sorted(cells[0] for cells, _ in help_first(read_page(out))[:3]) == sorted(REASONS)
    assert sorted(r.student for r in not_graded.read(out)) == sorted(["bob", HOSTILE, NOT_UTF8])
    # the instructor fixes the class: one submission for bob, ids renamed
    (cls / "bob.zip").unlink()
    (cls / HOSTILE).rename(cls / "eve")
    (cls / NOT_UTF8).rename(cls / "cafe")
    status, _ = grade(cls, out, capsys)
    assert status == 0 and sorted(graded[2:]) == ["bob", "cafe", "eve"]
    assert not_graded.read(out) == []
    _, rows = rows_of(out / "grades.csv")
    assert [r[0] for r in rows[1:]] == ["ann", "bob", "cafe", "eve"]
    assert "NOT GRADED" not in (out / "grades.csv").read_text()


def test_an_upload_whose_files_could_not_be_read_is_listed_with_the_error_escaped(
    tmp_path, monkeypatch, capsys
):
    from autograder import submissions

    real = submissions.gather

    def gather(student, *args, **kwargs):
        if student == "dee":
            raise OSError("disk said \x1b[2Jno")
        return real(student, *args, **kwargs)

    monkeypatch.setattr(submissions, "gather", gather)
    cls, out = tmp_path / "class", tmp_path / "out"
    for name in ("ann", "dee"):
        (cls / name).mkdir(parents=True)
        (cls / name / NB1).write_text(one_cell_notebook("x = 1"))
    stand_in_grading(monkeypatch, payload)
    status, said = grade(cls, out, capsys)
    assert status == 1
    why = "NOT GRADED: their files could not be read (OSError: disk said \\x1b[2Jno)."
    assert help_first(read_page(out))[0][0] == ["dee", "not graded", why]
    assert "\x1b" not in read_page(out) and "\x1b" not in said.err
    _, rows = rows_of(out / "grades.csv")
    assert {r[0]: r[-1] for r in rows[1:]}["dee"] == "NOT GRADED"


# -- the report alone ---------------------------------------------------------------------------
def test_not_graded_comes_before_a_crash_and_an_internal_error_is_not_a_zero():
    died = [{"cell": 3, "type": "KernelDied", "message": "died", "line": "x"}]
    crash = {**payload("crash"), "student": "crash"}
    crash["notebooks"] = {NOTEBOOKS[0].stem: {"cell_errors": died}}
    lost = {"score": 0.0, "max_score": 0.0, "student": "lost", "internal_error": True,
            "output": "NOT GRADED", "notebooks": {}, "tests": []}  # fmt: skip
    students = [
        SavedResult("crash", crash),
        SavedResult("lost", lost),
        not_graded.record("zed", "not graded: its name starts or ends with a space; rename it."),
    ]
    data = class_data(students)
    said = {h["student"]: h["reasons"] for h in data["help_first"]}
    order = [h["student"] for h in data["help_first"]]
    assert order == ["lost", "zed", "crash"]  # the not graded, then the crash
    assert said["zed"] == ["NOT GRADED: its name starts or ends with a space; rename it."]
    assert said["lost"] == ["NOT GRADED: the grader could not grade this submission"]
    kinds = [h["kinds"][0] for h in data["help_first"]]
    assert kinds == sorted(kinds, key=HELP_ORDER.index)
    assert data["mean_total"] == crash["score"]  # over the one student graded
    rows = list(csv.reader(io.StringIO(grades_csv(students))))
    assert {r[0]: r[-1] for r in rows[1:]} == {
        "crash": f"{crash['score']:g}",
        "lost": "NOT GRADED",
        "zed": "NOT GRADED",
    }
