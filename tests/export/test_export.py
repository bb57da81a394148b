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
            if cell != "-":  # alone, Moodle's "no grade", which a spreadsheet reads as text
                assert not re.match(r"[=+\-@\t\r]", cell), cell  # no negative numbers here


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
            assert row[5:] == [""] * (len(NOTEBOOKS) + 1), name  # each notebook and the total
        else:
            assert [float(c) for c in row[5:]] == expected_grades(submission), name
    assert by_name["Lovelace, Ada"][1:5] == ["501", "S1001", "ada@example.org", "Sec A"]
    assert '"Chase, Chevy ""The Man"""' in text  # RFC 4180 quoting round-trips the name
    assert_no_formula(rows)
    assert "'=HYPERLINK" in text


def moodle_import(text, users, gradepointmax=100):
    """Moodle's grade/import/csv/classes/load_data.php, for a file mapped to new grade items:
    {user: {item: grade or None}}, or the reason the whole import stops. Written from its code:
    the user column is looked up as written; a blank (PHP empty) user cell is skipped without
    resetting the user of the row above; an unknown user aborts; in a new item only '-' is no
    grade (a blank is stored, and becomes 0); a grade above gradepointmax aborts."""
    header, *rows = list(csv.reader(io.StringIO(text, newline="")))
    gradebook, student = {}, None
    for row in rows:
        if len(row) <= 1:
            continue
        value = row[0].strip()
        if value not in ("", "0"):
            if value not in users:
                return f"user {value!r} not found: import aborted"
            student = value
        if student is None:
            return "no user mapping: import aborted"
        for item, cell in zip(header[1:], row[1:], strict=True):
            cell = cell.strip()
            if cell == "-":
                continue
            grade = float(cell or 0)
            if grade > gradepointmax:
                return f"grade {grade} too big: import aborted"
            gradebook.setdefault(student, {})[item] = grade
    return gradebook


def test_moodle_file_is_what_moodle_imports(graded, capsys):
    out, roster = graded
    # Cy has no e-mail: Moodle would put Cy's grades on the row above, so nothing is written
    code, printed = export(capsys, out, roster, "--format", "moodle")
    assert code == 2 and not (out / "moodle_grades.csv").exists()
    assert "Cy (roster line 6): no email" in printed.err and "--only-matched" in printed.err
    code, printed = export(capsys, out, roster, "--format", "moodle", "--only-matched")
    assert code == 0, printed.err
    assert "Cy (roster line 6): no email" in printed.out
    text, rows = read_csv_file(out / "moodle_grades.csv")
    header, *students = rows
    assert header == ["email", *(nb.stem for nb in NOTEBOOKS), "total"]
    emails = {r[0]: r for r in students}
    assert len(students) == len(EXPECTED) - 1 and "" not in emails
    for row in students:
        for cell in row[1:]:
            assert cell == "-" or re.fullmatch(r"\d+(\.\d+)?", cell), cell  # a number or no grade
    assert [float(c) for c in emails["ada@example.org"][1:]] == expected_grades("attention-hw-ada")
    assert emails["ghost@example.org"][1:] == ["-"] * (len(NOTEBOOKS) + 1)
    assert_no_formula(rows)
    # as Moodle imports it into new grade items: the absent and the broken keep "no grade"
    gradebook = moodle_import(text, users=set(emails))
    assert "ghost@example.org" not in gradebook and "broken@example.org" not in gradebook
    assert gradebook["ada@example.org"]["total"] == 9.0
    # and the maxima to give each new item are printed (Moodle's default would be 100)
    assert "01_soft_lookup: maximum grade 2" in printed.out
    assert f"total: maximum grade {sum(POINTS.values()):g}" in printed.out


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
    assert totals["1007"] == "-"  # no submission: no grade, not 0


MOODLE_USERS = """\
First name,Last name,ID number,Institution,Department,Email address
Ada,Lovelace,1001,,,Ada@Example.org
Ann,Lee,1002,,,ann@example.org
Lee,,1003,,,lee@example.org
Chevy,Chase,1004,,,bo@example.org
F,F,1006,,,f@example.org
Broken,B,1008,,,broken@example.org
"""


def test_moodle_names_the_rows_moodle_does_not_know_and_writes_its_own_spelling(
    graded, tmp_path, capsys
):
    out, roster = graded
    users = tmp_path / "moodle_export.csv"
    users.write_text(MOODLE_USERS)
    code, printed = export(capsys, out, roster, "--format", "moodle", "--lms-users", users)
    assert code == 2 and not (out / "moodle_grades.csv").exists()
    assert "2 roster row(s) Moodle would not match" in printed.err
    assert "Never Came (roster line 8): its email 'ghost@example.org' is not in" in printed.err
    assert "Cy (roster line 6): no email" in printed.err
    code, printed = export(
        capsys, out, roster, "--format", "moodle", "--lms-users", users, "--only-matched"
    )
    assert code == 0, printed.err
    text, rows = read_csv_file(out / "moodle_grades.csv")
    assert [r[0] for r in rows[1:]] == [
        "Ada@Example.org", "ann@example.org", "lee@example.org", "bo@example.org",
        "f@example.org", "broken@example.org",
    ]  # fmt: skip
    known = {line.split(",")[-1] for line in MOODLE_USERS.splitlines()[1:]}
    gradebook = moodle_import(text, users=known)  # a case-sensitive database finds them all
    assert isinstance(gradebook, dict), gradebook


def test_canvas_names_the_rows_canvas_does_not_know_and_writes_its_ids(graded, tmp_path, capsys):
    out, roster = graded
    users = tmp_path / "canvas_export.csv"
    users.write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1\n"
        "    Points Possible,,,,,10\n"
        '"Lovelace, Ada",501,S1001,ADA@example.org,Sec A,\n'
        '"Lee, Ann",502,S1002,ann@example.org,Sec A,\n'
        "Lee,503,S1003,lee@example.org,Sec B,\n"
        '"Chase, Chevy",504,,,Sec B,\n'
        "Cy,505,S1005,,Sec B,\n"
        '"=HYPERLINK(""http://x"")",506,S1006,f@example.org,Sec B,\n'
        "Broken,508,S1008,broken@example.org,Sec C,\n"
        '"Student, Test",999,,,,\n'
    )
    code, printed = export(capsys, out, roster, "--format", "canvas", "--lms-users", users)
    assert code == 2 and not (out / "canvas_grades.csv").exists()
    assert "1 roster row(s) Canvas would not match" in printed.err
    assert "Never Came (roster line 8): not among the students" in printed.err
    code, printed = export(
        capsys, out, roster, "--format", "canvas", "--lms-users", users, "--only-matched"
    )
    assert code == 0, printed.err
    _, rows = read_csv_file(out / "canvas_grades.csv")
    ids = {r[1]: r for r in rows[2:]}
    assert sorted(ids) == ["501", "502", "503", "504", "505", "506", "508"]
    assert ids["501"][3] == "ADA@example.org"  # Canvas's own spelling of the login


def test_canvas_refuses_a_row_it_cannot_match_at_all(graded, tmp_path, capsys):
    out, _ = graded
    roster = tmp_path / "r.csv"
    roster.write_text("github,name,canvas_id\nada,,\nlee,Lee,\nann-lee,,502\n")
    code, printed = export(capsys, out, roster, "--format", "canvas")
    assert code == 2 and "ada (roster line 2): no canvas_id, sis_user_id" in printed.err
    code, printed = export(capsys, out, roster, "--format", "canvas", "--only-matched")
    assert code == 0
    assert "Lee (roster line 3): no Canvas ID or SIS id: Canvas matches it by name" in printed.out
    _, rows = read_csv_file(out / "canvas_grades.csv")
    assert [r[0] for r in rows[2:]] == ["Lee", "ann-lee"]


def test_roster_matching_ignores_case_in_every_identity(tmp_path, capsys):
    out = tmp_path / "grades"
    for name in ("S2024001", "Hw1-ADA", "MySubmission"):
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(json.dumps(results(name, {"01_soft_lookup": 1})))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "name,github,student_number,submission,canvas_id\n"
        "A,ada,,,1\nB,,s2024001,,2\nC,,,mysubmission,3\n"
    )
    code, printed = export(capsys, out, roster, "--format", "canvas")
    assert code == 0 and "in no export" not in printed.out
    _, rows = read_csv_file(out / "canvas_grades.csv")
    assert {r[0]: float(r[5]) for r in rows[2:]} == {"A": 1.0, "B": 1.0, "C": 1.0}


def test_submissions_without_a_roster_entry_are_listed_on_screen_and_in_a_file(graded, capsys):
    out, roster = graded
    _, printed = export(capsys, out, roster, "--format", "canvas")
    assert "2 submission(s) are in no export" in printed.out
    assert "stranger: no roster entry matches this name" in printed.out
    _, rows = read_csv_file(out / "export_unmatched.csv")
    assert rows[0] == ["submission", "reason"]
    assert {r[0] for r in rows[1:]} == {"stranger", "'=evil()"}
    assert "Broken: grading failed for broken; exported with no grade" in printed.out


def test_conflicts_stop_the_export_with_what_to_do(tmp_path, capsys):
    out = tmp_path / "grades"
    for name in ("ada", "hw1-ada", "x@example.org"):
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(json.dumps(results(name, {"01_soft_lookup": 1})))
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "name,github,email,student_number\nAda,ada,,\nXe,,x@example.org,\nYu,,,x@example.org\n"
    )
    code, printed = export(capsys, out, roster, "--format", "canvas")
    # a blank cell is "no change" to Canvas: the old grade would stand; nothing is written
    assert code == 2 and not (out / "canvas_grades.csv").exists()
    assert "nothing written: 3 submission(s) cannot be given to one person" in printed.err
    assert "ada: roster line 2 is also matched by hw1-ada" in printed.err
    assert "x@example.org: matches several roster entries (line 3, line 4)" in printed.err


@pytest.mark.parametrize(
    "content, message",
    [
        ("name,section\nAda,A\n", "none of the columns a submission is matched on"),
        ("github\nada\nADA\n", "have the same github 'ADA'"),
        ("github,name\n,Ann\nbo,Bo\n", "line 2 has no submission, github, email, student_number"),
        ("github,name\n   ,Ann\n", "line 2 has no submission"),  # a blank id is no id
        ("github\nada\n" + "b" * 200_000 + "\n", "line 3: not a CSV row the grader can read"),
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


# -- every cell is what results.json holds, late penalties included --------------------------------
LATE_ROSTER = """\
name,github,email,canvas_id
Ada,ada,ada@example.org,1
Bo,bo,bo@example.org,2
Cy,cy,cy@example.org,3
Dee,dee,dee@example.org,4
"""


def _late_class(out):
    """ada on time, bo late with two notebooks (penalties), cy late beyond a notebook's score,
    dee absent, zed in no roster; results.json written as grading writes them."""
    from datetime import UTC, datetime, timedelta

    from autograder.deadlines import apply_late_policy, parse_policy

    due = datetime(2026, 10, 1, tzinfo=UTC)
    policy = parse_policy(
        {
            "due": {"all": due.isoformat()},
            "penalty": {"method": "per-period", "points": 1.5, "period_hours": 24},
        }
    )
    full = {nb.stem: POINTS[nb.stem] for nb in NOTEBOOKS}
    late = {
        "ada": (full, {}),
        "bo": (full, {"01_soft_lookup": 1, "03_matrix_attention": 25}),  # hours late
        "cy": ({"02_dot_product_softmax": 1.0}, {"02_dot_product_softmax": 100}),
        "zed": (full, {}),
    }
    for student, (scores, hours) in late.items():
        payload = results(student, scores)
        payload["notebooks"] = {nb.stem: {"score": 0.0} for nb in NOTEBOOKS}
        handed_in = {nb.stem: due + timedelta(hours=hours.get(nb.stem, -1)) for nb in NOTEBOOKS}
        apply_late_policy(payload, policy, handed_in)
        (out / student).mkdir(parents=True)
        (out / student / "results.json").write_text(json.dumps(payload))
    bo = json.loads((out / "bo" / "results.json").read_text())
    assert bo["notebooks"]["01_soft_lookup"]["score"] == POINTS["01_soft_lookup"] - 1.5
    assert bo["notebooks"]["03_matrix_attention"]["score"] == POINTS["03_matrix_attention"] - 3
    assert bo["score"] == sum(POINTS.values()) - 4.5  # the penalties are really there


@pytest.mark.parametrize("fmt", ["canvas", "moodle"])
@pytest.mark.parametrize("which", ["both", "notebooks", "total"])
def test_every_cell_is_the_grade_results_json_holds(tmp_path, capsys, fmt, which):
    out = tmp_path / "grades"
    _late_class(out)
    roster = tmp_path / "roster.csv"
    roster.write_text(LATE_ROSTER)
    code, printed = export(capsys, out, roster, "--format", fmt, "--columns", which)
    assert code == 0, printed.err
    _, rows = read_csv_file(out / f"{fmt}_grades.csv")
    header, students = (rows[0], rows[2:]) if fmt == "canvas" else (rows[0], rows[1:])
    first = 5 if fmt == "canvas" else 1
    titles = header[first:]
    expected_titles = {"both": [*(nb.stem for nb in NOTEBOOKS), "total"], "total": ["total"]}
    assert titles == expected_titles.get(which, [nb.stem for nb in NOTEBOOKS])
    blank = "" if fmt == "canvas" else "-"
    by_student = {r[0].split("@")[0].lower(): r for r in students}
    assert sorted(by_student) == ["ada", "bo", "cy", "dee"]  # zed is in no roster: no row
    for student, row in by_student.items():
        path = out / student / "results.json"
        if not path.exists():
            assert row[first:] == [blank] * len(titles), student  # absent: no grade, not 0
            continue
        payload = json.loads(path.read_text())
        for title, cell in zip(titles, row[first:], strict=True):
            held = payload["score"] if title == "total" else payload["notebooks"][title]["score"]
            assert float(cell) == pytest.approx(held, abs=1e-9), (student, title)
    assert "zed: no roster entry matches this name" in printed.out


def test_moodles_default_export_imports_on_a_default_site_when_the_total_passes_100(
    tmp_path, capsys, monkeypatch
):
    """The course's total is above 100: the default (`--columns both`) wrote totals above 100,
    and a default Moodle site (gradepointmax 100) aborts the whole import on one of them."""
    big = {stem: points * 4 for stem, points in POINTS.items()}  # 8, 12, ...: over 100 in all
    monkeypatch.setitem(globals(), "POINTS", big)
    out = tmp_path / "grades"
    scores = {"ada": dict(big), "bo": {"01_soft_lookup": 8.0, "07_modern_lm": 12.0}}
    for name, mine in scores.items():
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(json.dumps(results(name, mine)))
    roster = tmp_path / "roster.csv"
    roster.write_text("name,github,email\nAda,ada,ada@example.org\nBo,bo,bo@example.org\n")
    total = sum(big.values())  # POINTS is `big` from here on
    assert total == 4 * sum(range(2, 2 + len(NOTEBOOKS))) > 100
    users = {"ada@example.org", "bo@example.org"}

    code, printed = export(capsys, out, roster, "--format", "moodle")
    assert code == 0, printed.err
    text, rows = read_csv_file(out / "moodle_grades.csv")
    assert rows[0] == ["email", *(nb.stem for nb in NOTEBOOKS), "total (scaled to 100)"]
    gradebook = moodle_import(text, users)  # Moodle's own rule, gradepointmax 100
    assert isinstance(gradebook, dict), gradebook
    assert gradebook["ada@example.org"]["total (scaled to 100)"] == 100.0
    assert gradebook["bo@example.org"]["total (scaled to 100)"] == round(20 * 100 / total, 4)
    assert gradebook["bo@example.org"]["07_modern_lm"] == 12.0  # a notebook is as it is
    assert "total (scaled to 100): maximum grade 100" in printed.out
    assert f"its {total:g} points are scaled to 100" in printed.out

    # a site whose gradepointmax is raised takes the points as they are
    code, printed = export(capsys, out, roster, "--format", "moodle", "--moodle-max-grade", "200")
    assert code == 0, printed.err
    text, rows = read_csv_file(out / "moodle_grades.csv")
    assert rows[0][-1] == "total"
    assert moodle_import(text, users, gradepointmax=200)["ada@example.org"]["total"] == total
    assert isinstance(moodle_import(text, users), str)  # what a default site would refuse
    code, printed = export(capsys, out, roster, "--format", "moodle", "--moodle-max-grade", "nan")
    assert code == 2 and "--moodle-max-grade" in printed.err
