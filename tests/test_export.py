"""`python -m autograder export`: the grades in Canvas's and Moodle's own import formats.

The files are checked against what each LMS's importer reads, written here from their sources
and documentation, independently of autograder/platforms:
- Canvas (canvas-lms app/models/gradebook_importer.rb; "How do I import grades in the
  Gradebook?"): a header with `Student` first, `ID` second, `SIS User ID` and `SIS Login ID`,
  and `Section` as the last identity column; a row whose first cell contains `Points Possible`
  giving each assignment's points; student rows found by ID, SIS ids or name; a blank grade
  changes nothing;
- Moodle (grade/import/csv/classes/load_data.php): one column matched against a user field
  (`email`, `idnumber`, `username`), the others grade items; a grade is a number or blank
  (no grade); a row whose user is not found aborts the whole import.
Both: UTF-8 without a byte-order mark, comma-separated, RFC 4180 quoting, no cell a spreadsheet
would run as a formula. The grades come from results.json files written here.
"""

import csv
import io
import json
import re

import pytest

from autograder.__main__ import main
from autograder.curriculum import NOTEBOOKS

POINTS = {nb.stem: float(2 + i) for i, nb in enumerate(NOTEBOOKS)}  # this class's points


def results(student, scores=None, internal_error=False):
    """A results.json payload: one test per notebook, `scores[stem]` points of POINTS[stem]."""
    if internal_error:
        return {"score": 0.0, "max_score": 0.0, "student": student, "internal_error": True,
                "notebooks": {}, "tests": []}  # fmt: skip
    scores = scores or {}
    tests = [
        {"name": f"{nb.graded[0]}: a case", "score": scores.get(nb.stem, 0.0),
         "max_score": POINTS[nb.stem], "status": "failed", "output": "", "notebook": nb.stem,
         "function": nb.graded[0], "misconceptions": []}
        for nb in NOTEBOOKS
    ]  # fmt: skip
    return {"score": sum(t["score"] for t in tests), "max_score": sum(POINTS.values()),
            "student": student, "notebooks": {}, "tests": tests}  # fmt: skip


SUBMISSIONS = {
    "attention-hw-ada": {"01_soft_lookup": 2.0, "06_autoregressive_lm": 7.0},  # Classroom prefix
    "attention-hw-ann-lee": {"01_soft_lookup": 1.5},  # user ann-lee, not lee
    "lee": {"02_dot_product_softmax": 3.0},
    "Bo@Example.org": {"03_matrix_attention": 4.0},  # e-mail, another case
    "2024001": {"04_multihead_attention": 0.5},  # student number
    "formula": {"05_transformer_block": 6.0},
    "stranger": {"01_soft_lookup": 2.0},  # nobody in the roster
    "=evil()": {"01_soft_lookup": 2.0},  # nobody either: listed, neutralised
}
ROSTER = '''\
name,github,email,student_number,canvas_id,sis_user_id,sis_login_id,section,username
"Lovelace, Ada",ada,ada@example.org,1001,501,S1001,ada@example.org,Sec A,alovelace
"Lee, Ann",ann-lee,ann@example.org,1002,502,S1002,ann@example.org,Sec A,alee
Lee,lee,lee@example.org,1003,503,S1003,lee@example.org,Sec B,lee
"Chase, Chevy ""The Man""",,bo@example.org,1004,504,S1004,bo@example.org,Sec B,cchase
Cy,,,2024001,505,S1005,,Sec B,cy
"=HYPERLINK(""http://x"")",formula,f@example.org,1006,506,S1006,f@example.org,Sec B,f
Never Came,ghost,ghost@example.org,1007,507,S1007,ghost@example.org,Sec C,ghost
Broken,broken,broken@example.org,1008,508,S1008,broken@example.org,Sec C,broken
'''
EXPECTED = {  # roster name -> submission whose grades it gets (None: no submission)
    "Lovelace, Ada": "attention-hw-ada",
    "Lee, Ann": "attention-hw-ann-lee",
    "Lee": "lee",
    'Chase, Chevy "The Man"': "Bo@Example.org",
    "Cy": "2024001",
    '=HYPERLINK("http://x")': "formula",
    "Never Came": None,
    "Broken": None,  # its grading failed: no grade
}


@pytest.fixture
def graded(tmp_path):
    out = tmp_path / "grades"
    for name, scores in SUBMISSIONS.items():
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(json.dumps(results(name, scores)))
    (out / "broken").mkdir()
    (out / "broken" / "results.json").write_text(json.dumps(results("broken", internal_error=True)))
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    return out, roster


def export(capsys, out, roster, *extra):
    code = main(["export", "--roster", str(roster), "--grades", str(out), *map(str, extra)])
    return code, capsys.readouterr()


def read_csv_file(path):
    raw = path.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf"), "a byte-order mark"
    text = raw.decode("utf-8")  # strict: the file is UTF-8
    return text, list(csv.reader(io.StringIO(text, newline="")))


def assert_no_formula(rows):
    for row in rows:
        for cell in row:
            assert not re.match(r"[=+\-@\t\r]", cell), cell  # numbers are never negative here


def expected_grades(submission):
    scores = SUBMISSIONS[submission]
    cells = [scores.get(nb.stem, 0.0) for nb in NOTEBOOKS]
    return [*cells, sum(cells)]


def test_canvas_file_is_what_canvas_imports(graded, capsys):
    out, roster = graded
    code, printed = export(capsys, out, roster, "--format", "canvas")
    assert code == 0, printed.err
    text, rows = read_csv_file(out / "canvas_grades.csv")
    header, points, *students = rows
    # gradebook_importer.rb: row.length > 3, Student then ID, SIS columns, Section last
    assert len(header) > 3 and re.search("Student", header[0]) and re.search("ID", header[1])
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    assert re.search("Section", header[4])
    assert header[5:] == [nb.stem for nb in NOTEBOOKS] + ["total"]
    assert re.search("Points Possible", points[0]) and points[1:5] == ["", "", "", ""]
    assert [float(p) for p in points[5:]] == [*POINTS.values(), sum(POINTS.values())]
    assert all(len(r) == len(header) for r in rows)
    by_name = {r[0].lstrip("'"): r for r in students}
    assert len(students) == len(EXPECTED)  # everyone in the roster, nobody else
    for name, submission in EXPECTED.items():
        row = by_name[name]
        if submission is None:
            assert row[5:] == [""] * 7, name
        else:
            assert [float(c) for c in row[5:]] == expected_grades(submission), name
    assert by_name["Lovelace, Ada"][1:5] == ["501", "S1001", "ada@example.org", "Sec A"]
    assert '"Chase, Chevy ""The Man"""' in text  # RFC 4180 quoting round-trips the name
    assert_no_formula(rows)
    assert "'=HYPERLINK" in text


def test_moodle_file_is_what_moodle_imports(graded, capsys):
    out, roster = graded
    code, printed = export(capsys, out, roster, "--format", "moodle")
    assert code == 0, printed.err
    _, rows = read_csv_file(out / "moodle_grades.csv")
    header, *students = rows
    assert header == ["email", *(nb.stem for nb in NOTEBOOKS), "total"]
    emails = {r[0]: r for r in students}
    # a row whose user Moodle cannot find aborts the import: Cy has no e-mail, so no row
    assert len(students) == len(EXPECTED) - 1 and "" not in emails
    assert "Cy (roster line 6) has no email: left out" in printed.out
    for row in students:
        for cell in row[1:]:
            assert cell == "" or re.fullmatch(r"\d+(\.\d+)?", cell), cell  # a number or no grade
    assert [float(c) for c in emails["ada@example.org"][1:]] == expected_grades("attention-hw-ada")
    assert emails["ghost@example.org"][1:] == [""] * 7
    assert_no_formula(rows)


def test_moodle_by_idnumber_and_only_the_total(graded, capsys):
    out, roster = graded
    code, _ = export(
        capsys, out, roster, "--format", "moodle", "--identifier", "idnumber", "--columns", "total"
    )
    assert code == 0
    _, rows = read_csv_file(out / "moodle_grades.csv")
    assert rows[0] == ["idnumber", "total"]
    totals = {r[0]: r[1] for r in rows[1:]}
    assert float(totals["2024001"]) == 0.5 and float(totals["1002"]) == 1.5
    assert totals["1007"] == ""  # no submission: no grade, not 0


def test_submissions_without_a_roster_entry_are_listed_on_screen_and_in_a_file(graded, capsys):
    out, roster = graded
    _, printed = export(capsys, out, roster, "--format", "canvas")
    assert "2 submission(s) are in no export" in printed.out
    assert "stranger: no roster entry matches this name" in printed.out
    _, rows = read_csv_file(out / "export_unmatched.csv")
    assert rows[0] == ["submission", "reason"]
    assert {r[0] for r in rows[1:]} == {"stranger", "'=evil()"}
    assert "Broken: grading failed for broken; exported with no grade" in printed.out


def test_conflicts_are_reported_and_exported_for_nobody(tmp_path, capsys):
    out = tmp_path / "grades"
    for name in ("ada", "hw1-ada", "x@example.org"):
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(json.dumps(results(name, {"01_soft_lookup": 1})))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "name,github,email,student_number\nAda,ada,,\nXe,,x@example.org,\nYu,,,x@example.org\n"
    )
    code, printed = export(capsys, out, roster, "--format", "canvas")
    assert code == 0
    _, rows = read_csv_file(out / "canvas_grades.csv")
    assert {r[0]: r[5] for r in rows[2:]} == {"Ada": "", "Xe": "", "Yu": ""}
    assert "ada: roster line 2 is also matched by hw1-ada; not exported" in printed.out
    assert "x@example.org: matches several roster entries (line 3, line 4)" in printed.out


@pytest.mark.parametrize(
    "content, message",
    [
        ("name,section\nAda,A\n", "none of the columns a submission is matched on"),
        ("github\nada\nADA\n", "have the same github 'ADA'"),
        ("github,name\n,Ann\nbo,Bo\n", "line 2 has no submission, github, email, student_number"),
    ],
)
def test_a_bad_roster_is_refused_with_the_reason(tmp_path, capsys, content, message):
    out = tmp_path / "grades"
    (out / "ada").mkdir(parents=True)
    (out / "ada" / "results.json").write_text(json.dumps(results("ada")))
    roster = tmp_path / "roster.csv"
    roster.write_text(content)
    code, printed = export(capsys, out, roster, "--format", "canvas")
    assert code == 2 and message in printed.err
    assert not (out / "canvas_grades.csv").exists()


def test_a_roster_that_is_not_utf8_is_refused(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_bytes("github\nJos\xe9\n".encode("latin-1"))
    code, printed = export(capsys, tmp_path, roster, "--format", "moodle")
    assert code == 2 and "is not UTF-8" in printed.err


def test_a_roster_saved_by_excel_with_a_byte_order_mark_reads(graded, capsys):
    out, roster = graded
    roster.write_bytes(b"\xef\xbb\xbf" + ROSTER.replace("name,github", "Name,GitHub").encode())
    code, _ = export(capsys, out, roster, "--format", "canvas")
    assert code == 0
    _, rows = read_csv_file(out / "canvas_grades.csv")
    assert len(rows) == 2 + len(EXPECTED)
