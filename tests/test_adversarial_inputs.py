"""What a student controls before any notebook runs: the name of their upload, its count of
files, the size of its JSON in values rather than bytes. One test per class (issue 18, items 2
and 3): ids with control characters or bytes that are not UTF-8, CSV formula cells (whatever the
spreadsheet's separator), two submissions of one student, entries that are not submissions,
JSON object-count and depth bombs, zip directory and ratio bombs. Nothing here runs a notebook.
"""

import csv
import io
import os
import zipfile

import nbformat
import pytest

from autograder import student_ids
from autograder.escaping import csv_row, terminal
from autograder.report import grades_csv
from autograder.submissions import discover

NB1 = "01_soft_lookup.ipynb"
FORMULA = tuple("=+-@")


def notebook_bytes(tag="x = 1"):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(tag, id="c")])
    return nbformat.writes(nb).encode()


# -- student ids -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "ann\nbob",  # a newline: a forged row in a gradebook export
        "\x1b]0;owned\x07ann",  # sets the terminal's title
        "ann\x7f",  # DEL
        "ann\u0085",  # C1 next line
        "ann\u202egpj.exe",  # right-to-left override
        "a\u200bnn",  # zero-width space: looks like "ann"
        os.fsdecode(b"ann\xe9"),  # Latin-1 bytes: not UTF-8
        "ann ",  # looks like "ann" in every listing
        "x" * (student_ids.MAX_CHARS + 1),
        "é" * 130,  # 130 characters but 260 bytes: longer than a file name can be
    ],
)
def test_ids_with_control_characters_or_not_utf8_are_refused(name):
    assert student_ids.problem(name)


@pytest.mark.parametrize(
    "name", ["ann", "_ann.lee@uni.example", "José Núñez", "李雷", "o'brien", "=2+5", "x" * 200]
)
def test_ordinary_ids_are_accepted(name):
    assert student_ids.problem(name) is None  # a formula is text to escape, not a bad id


def test_a_refused_id_is_named_for_that_student_and_the_rest_are_found(tmp_path):
    cls = tmp_path / "class"
    for name in ["ann", "bob\x1b[2J", os.fsdecode(b"caf\xff")]:
        (cls / name).mkdir(parents=True)
        (cls / name / NB1).write_bytes(notebook_bytes())
    (tmp_path / "staging").mkdir()
    found = {s.student: s for s in discover(cls, tmp_path / "out", tmp_path / "staging")}
    assert found["ann"].refused == ""
    assert "U+001B" in found["bob\x1b[2J"].refused
    assert "not UTF-8" in found[os.fsdecode(b"caf\xff")].refused
    assert not any(p.name.startswith(("bob", "caf")) for p in (tmp_path / "staging").iterdir())


# -- terminal --------------------------------------------------------------------------------------
def test_terminal_text_holds_no_control_character():
    text = terminal("a\x1b[2J\x1b]0;t\x07\r\n\t\u202e\u0085\x9bZ" + os.fsdecode(b"\xff"))
    assert text.isprintable()
    assert "\\x1b[2J" in text and "\\u202e" in text


# -- CSV -------------------------------------------------------------------------------------------
ATTACKS = [
    "=2+5",
    "x;=2+5;",
    "x,=2+5,",
    "x\t=2+5",
    "x;  -2+3",
    "a|@SUM(1)",
    '=HYPERLINK("http://evil.example","x")',
    'a";=1;"b',
    "ann\n=1+1,5",
    "\r=1",
]


@pytest.mark.parametrize("separator", [",", ";", "\t", "|"])
@pytest.mark.parametrize("name", ATTACKS)
def test_no_csv_cell_is_a_formula_whatever_the_separator(name, separator):
    """The file is written with commas; a spreadsheet may split it on ';', tab or '|', with
    or without honouring quotes. No resulting cell may start (after spaces) like a formula."""
    line = csv_row([name, 1.5, 2])
    assert "\n" not in line and "\r" not in line  # one row, whatever the name holds
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_NONE):
        reader = csv.reader(
            io.StringIO(line), delimiter=separator, quoting=quoting, escapechar="\\"
        )
        for cell in next(reader):
            assert not cell.strip(' "').startswith(FORMULA), (separator, quoting, cell)


def test_csv_text_reads_back_as_the_escaped_text_and_numbers_stay_bare():
    [row] = csv.reader(io.StringIO(csv_row(["x;=2+5;", 1.5, 0])))
    assert row == ["x;'=2+5;", "1.5", "0"]
    assert csv_row(["ann", 3]) == '"ann",3'


def test_grades_csv_quotes_every_student_id():
    class Student:
        def __init__(self, name):
            self.student, self.results = name, {"score": 1.0, "tests": []}

    text = grades_csv([Student("x;=2+5;"), Student("ann")])
    lines = text.splitlines()
    assert lines[1].startswith('"x;\'=2+5;",') and lines[2].startswith('"ann",')
    for line in lines[1:]:  # opened with ';' as the separator
        for cell in next(csv.reader(io.StringIO(line), delimiter=";")):
            assert not cell.strip(' "').startswith(FORMULA), cell


# -- two submissions of one student ----------------------------------------------------------------
def test_two_submissions_of_one_student_are_both_refused_and_the_class_goes_on(tmp_path):
    cls = tmp_path / "class"
    (cls / "bob").mkdir(parents=True)
    (cls / "bob" / NB1).write_bytes(notebook_bytes("folder"))
    with zipfile.ZipFile(cls / "Bob.zip", "w") as archive:  # one student on a Mac's disk
        archive.writestr(NB1, notebook_bytes("zip"))
    (cls / "ann").mkdir()
    (cls / "ann" / NB1).write_bytes(notebook_bytes())
    found = discover(cls, tmp_path / "out", tmp_path / "staging")
    by_name = {s.student: s for s in found}
    assert sorted(by_name) == ["Bob", "ann", "bob"]
    assert by_name["ann"].refused == ""
    for name in ("bob", "Bob"):
        assert "2 submissions for one student (Bob.zip, bob/)" in by_name[name].refused


# -- entries that are not submissions --------------------------------------------------------------
def test_skipped_entries_are_named_one_by_one_and_underscore_names_are_students(tmp_path):
    cls = tmp_path / "class"
    for name in ["ann", "_ann@uni.example", "__MACOSX", ".hidden"]:
        (cls / name).mkdir(parents=True)
    (cls / "ann" / NB1).write_bytes(notebook_bytes())
    (cls / "_ann@uni.example" / NB1).write_bytes(notebook_bytes())
    (cls / "roster.xlsx").write_bytes(b"PK")
    (cls / "link").symlink_to(cls / "ann")
    notices = []
    found = discover(cls, tmp_path / "out", tmp_path / "staging", notices=notices)
    assert sorted(s.student for s in found) == ["_ann@uni.example", "ann"]
    assert len(notices) == 4
    for name, words in [
        ("__MACOSX", "tools make"),
        (".hidden", "hidden"),
        ("roster.xlsx", "not a submission"),
        ("link", "symbolic link"),
    ]:
        assert any(n.startswith(f"{name}: ") and words in n for n in notices), (name, notices)


def test_a_refused_or_duplicate_student_ends_grade_non_zero_naming_them(
    tmp_path, monkeypatch, capsys
):
    """grade_class on a class of one good student and two that cannot be graded: the good
    one is written, the others are in the returned results with their reason, and
    grade_command's status is 1 with their names on stderr."""
    from argparse import Namespace

    from autograder import grade as grade_module

    cls = tmp_path / "class"
    for name in ["ann", "bob", "eve\x1b[2J"]:
        (cls / name).mkdir(parents=True)
        (cls / name / NB1).write_bytes(notebook_bytes())
    with zipfile.ZipFile(cls / "bob.zip", "w") as archive:
        archive.writestr(NB1, notebook_bytes())

    def fake_grade(student, folder, settings, sandbox, placement=None):
        payload = {"score": 1.0, "max_score": 1.0, "student": student, "tests": []}
        from autograder.report import write_student

        write_student(grade_module.output_folder(settings.out, student), payload)
        return grade_module.StudentResult(student, payload)

    class NoSandbox:
        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            pass

    monkeypatch.setattr(grade_module, "grade_student", fake_grade)
    monkeypatch.setattr(grade_module, "Sandbox", NoSandbox)
    args = Namespace(
        path=str(cls),
        out=str(tmp_path / "out"),
        secret="s",
        timeout=10,
        workers=1,
        force=False,
        quiet=True,
    )
    status = grade_module.grade_command(args)
    assert status == 1
    rows = list(csv.reader((tmp_path / "out" / "grades.csv").open()))
    assert [r[0] for r in rows[1:]] == ["ann"]
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "NOT GRADED eve\\x1b[2J: not graded: its name holds the control" in err
    assert "NOT GRADED bob: not graded: 2 submissions for one student (bob/, bob.zip)" in err
    assert "error: 3 student(s) not graded: bob, bob, eve\\x1b[2J" in err
