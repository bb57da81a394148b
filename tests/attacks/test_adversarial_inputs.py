"""What a student controls before any notebook runs: the name of their upload, its count of
files, the size of its JSON in values rather than bytes. One test per class (issue 18, items 2
and 3): ids with control characters or bytes that are not UTF-8, CSV formula cells (whatever the
spreadsheet's separator), two submissions of one student, entries that are not submissions,
JSON object-count and depth bombs, zip directory and ratio bombs. Nothing here runs a notebook.
"""

import csv
import io
import json
import os
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import student_ids
from autograder.escaping import csv_row, terminal
from autograder.report import grades_csv
from autograder.submissions import discover

REPO = Path(__file__).resolve().parents[2]
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


# -- HTML ------------------------------------------------------------------------------------------
def test_feedback_html_escapes_a_student_id_through_jinja2s_autoescape():
    from autograder.grading.payload import build_results
    from autograder.report import render_feedback
    from autograder.report.rendering import environment

    template = environment().get_template("feedback.html.j2")
    assert template.environment.autoescape(template.name)
    html = render_feedback(build_results('<img src=x onerror="alert(1)">', [], {}, 1.0))
    assert "<img" not in html and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html


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


class NoSandbox:
    """grade_class's sandbox, for classes whose grading is faked (nothing runs)."""

    def __init__(self, *args, **kwargs):
        from autograder.sandbox import Limits
        from autograder.sandbox.processes import Running

        self.running = Running()  # none ever runs
        self.limits = Limits()

    def stop(self):
        self.running.stop()

    def close(self):
        pass


def fake_grading(monkeypatch, grade_one=None):
    """grade_student replaced: each student scores 1/1 (or what grade_one does first)."""
    from autograder.grading import classrun, command, pool
    from autograder.grading import student as grade_module
    from autograder.report import write_student

    def fake_grade(
        student, folder, settings, sandbox, placement=None, kept=None, source=None, run=None
    ):
        if grade_one is not None:
            grade_one(student)
        payload = {"score": 1.0, "max_score": 1.0, "student": student, "tests": []}
        write_student(grade_module.output_folder(settings.out, student), payload)
        return grade_module.StudentResult(student, payload)

    monkeypatch.setattr(pool, "grade_student", fake_grade)
    monkeypatch.setattr(classrun, "open_sandbox", NoSandbox)
    return command


def grade_args(cls, out, **more):
    from argparse import Namespace

    options = dict(secret="s", timeout=10, workers=1, force=False, quiet=True, skip_selftest=True)
    return Namespace(path=str(cls), out=str(out), **(options | more))


def test_a_refused_or_duplicate_student_ends_grade_non_zero_naming_them(
    tmp_path, monkeypatch, capsys
):
    """A class of one good student and two that cannot be graded: the good one is written,
    grade's status is 1 and stderr names the others with their reasons, escaped."""
    cls = tmp_path / "class"
    for name in ["ann", "bob", "eve\x1b[2J"]:
        (cls / name).mkdir(parents=True)
        (cls / name / NB1).write_bytes(notebook_bytes())
    with zipfile.ZipFile(cls / "bob.zip", "w") as archive:
        archive.writestr(NB1, notebook_bytes())
    (cls / "roster\x1b[2J.csv").write_text("not a submission")
    grade_module = fake_grading(monkeypatch)
    assert grade_module.grade_command(grade_args(cls, tmp_path / "out")) == 1
    rows = list(csv.reader((tmp_path / "out" / "grades.csv").open()))
    totals = {r[0]: r[-1] for r in rows[1:]}  # the refused: in it, with no grade
    assert totals == {"ann": "1", "bob": "NOT GRADED", "eve\\x1b[2J": "NOT GRADED"}
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "NOT GRADED eve\\x1b[2J: not graded: its name holds the control" in err
    assert "NOT GRADED bob: not graded: 2 submissions for one student (bob/, bob.zip)" in err
    assert "error: 2 student(s) not graded: bob, eve\\x1b[2J" in err  # bob once
    assert "skipped entry roster\\x1b[2J.csv: a file that is not a submission" in err


def test_the_parent_memory_ceiling_fails_one_student_and_grades_the_rest(
    tmp_path, monkeypatch, capsys
):
    """A student whose files make the parent allocate past its ceiling (here: a grading step
    that asks for 1 GB more than a 0.5 GB budget) is that student's internal error, named with
    the ceiling; the others are graded; the limit is lifted after the run."""
    import resource

    def greedy(student):
        if student == "bob":
            bytearray(3 * 2**30)

    cls = tmp_path / "class"
    for name in ["ann", "bob", "cat"]:
        (cls / name).mkdir(parents=True)
        (cls / name / NB1).write_bytes(notebook_bytes())
    before = resource.getrlimit(resource.RLIMIT_AS)
    grade_module = fake_grading(monkeypatch, greedy)
    status = grade_module.grade_command(grade_args(cls, tmp_path / "out", parent_memory=0.5))
    assert status == 1
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    rows = {r[0]: r[-1] for r in csv.reader((tmp_path / "out" / "grades.csv").open())}
    assert rows["ann"] == rows["cat"] == "1" and rows["bob"] == "NOT GRADED"  # never a 0
    err = capsys.readouterr().err
    assert "INTERNAL ERROR grading bob" in err and "MemoryError" in err
    assert "The grading parent reached its memory ceiling" in err
    bob = json.loads((tmp_path / "out" / "bob" / "results.json").read_text())
    assert bob["internal_error"]


# -- parser bombs: the grading parent's memory ---------------------------------------------------
def _benchmark():
    """benchmarks/parent_memory.py: the adversarial class's generators (one definition)."""
    import importlib.util

    path = REPO / "benchmarks" / "parent_memory.py"
    spec = importlib.util.spec_from_file_location("parent_memory_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The parent's growth over grading the honest student alone, on this branch: ~40-100 MB
# (numbers in docs/grader.md). Before bounded parsing the 5 MB object bomb alone added 2.2 GB,
# the 4-million-string notebook 300 MB, the zip directory bomb 230 MB.
PARENT_GROWTH_MB = 150


@pytest.fixture(scope="module")
def bombed(tmp_path_factory):
    """The small adversarial class (every kind of bomb and an honest student) graded once by
    `python -m autograder grade` in a child: its own VmHWM is the parent's peak; and the
    honest student graded alone, for the parent's peak without any bomb."""
    bench = _benchmark()
    root = tmp_path_factory.mktemp("bombs")
    cls = bench.build(root, small=True)
    run, _ = bench.grade(cls, root / "out", extra=["--workers", "1", "--timeout", "60"])
    (root / "alone").mkdir()
    (cls / "honest").rename(root / "alone" / "honest")
    alone, _ = bench.grade(root / "alone", root / "out-alone", extra=["--timeout", "60"])
    payloads = {}
    for path in (root / "out").glob("*/results.json"):
        payloads[path.parent.name] = json.loads(path.read_text())
    return {
        "run": run,
        "peak_mb": bench.peak_mb(run.stderr),
        "honest_alone_mb": bench.peak_mb(alone.stderr),
        "results": payloads,
    }


def _said(bombed, student, words):
    payload = bombed["results"][student]
    assert payload["score"] == 0
    assert words in payload["output"], payload["output"][:2000]


@pytest.mark.slow  # grades in a real sandbox
def test_the_bombed_class_is_graded_with_the_parent_under_its_bound(bombed):
    run = bombed["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    honest = bombed["results"]["honest"]["notebooks"]["01_soft_lookup"]
    assert honest["score"] == honest["max_score"] > 0
    growth = bombed["peak_mb"] - bombed["honest_alone_mb"]
    print(f"parent peak {bombed['peak_mb']:.0f} MB, honest alone {bombed['honest_alone_mb']:.0f}")
    assert growth < PARENT_GROWTH_MB, (bombed["peak_mb"], bombed["honest_alone_mb"])


@pytest.mark.slow  # grades in a real sandbox
def test_an_object_count_bomb_is_refused_by_its_count(bombed):
    _said(bombed, "objects_5mb", "JSON values, more than the 1,000,000 allowed")
    _said(bombed, "output_lines_19mb", "JSON values, more than the 1,000,000 allowed")


@pytest.mark.slow  # grades in a real sandbox
def test_deeply_nested_json_is_refused(bombed):
    _said(bombed, "deep_json", "nested too deeply")


@pytest.mark.slow  # grades in a real sandbox
def test_a_zip_directory_bomb_is_refused_from_its_end_record(bombed):
    _said(bombed, "zip_members", "zip_members.zip was not read: its directory is 59,000,000 bytes")


@pytest.mark.slow  # grades in a real sandbox
def test_a_zip_ratio_bomb_stops_at_the_notebook_cap(bombed):
    _said(bombed, "zip_ratio", "is larger than 20 MB unpacked")


@pytest.mark.slow  # grades in a real sandbox
def test_a_zip_of_many_different_copies_is_not_graded(bombed):
    _said(bombed, "zip_copies", "it was found 40 times with different contents")
    assert "and 30 more" in bombed["results"]["zip_copies"]["output"]  # 10 named, not 40


def test_a_folder_of_too_many_files_is_listed_only_up_to_the_cap(tmp_path, monkeypatch):
    """A student's folder of more files than MAX_FILES: the listing stops at the cap (a folder
    of a million files is never read whole), the student is told, their notebook in a
    sub-folder searched before the flood is still found."""
    from autograder import submissions

    monkeypatch.setattr(submissions, "MAX_FILES", 100)
    student = tmp_path / "ann"
    (student / "a_work").mkdir(parents=True)
    (student / "a_work" / NB1).write_bytes(notebook_bytes())
    (student / "flood").mkdir()
    for i in range(500):
        (student / "flood" / f"{i}.txt").touch()
    listed = []
    real = submissions._listing
    monkeypatch.setattr(
        submissions, "_listing", lambda folder, limit: listed.append(limit) or real(folder, limit)
    )
    [sub] = discover(student, tmp_path / "out", tmp_path / "staging", layout="student")
    assert (sub.folder / NB1).is_file()
    assert "more than 100 files: the rest were not searched." in sub.messages["*"]
    assert max(listed) <= 100


# -- zip directories, one by one -------------------------------------------------------------------
@pytest.mark.slow  # builds large archives and documents
def test_zip_directories_are_judged_by_their_end_record(tmp_path):
    from autograder import zip_directory

    bench = _benchmark()
    lying = tmp_path / "lying.zip"  # its end record says 1 member; the directory holds 5,000
    bench.zip_directory_bomb(lying, 5_000)
    many = tmp_path / "many.zip"  # 70,000 members: past 65,535, so zip64 records
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(70_000):
            archive.writestr(f"{i}.txt", "")
    fine = tmp_path / "fine.zip"
    with zipfile.ZipFile(fine, "w") as archive:
        archive.comment = b"a comment: the end record is found before it"
        for i in range(3):
            archive.writestr(f"{i}/{NB1}", notebook_bytes(str(i)))
    cut = tmp_path / "cut.zip"
    cut.write_bytes(fine.read_bytes()[:-100])  # into the directory

    def problem(path, cap=2_000):
        with open(path, "rb") as handle:
            return zip_directory.problem(handle, cap)

    assert "its directory is 295,000 bytes for 1 files" in problem(lying)
    few = tmp_path / "few.zip"  # 10 members, small enough a directory for the 1 it claims
    bench.zip_directory_bomb(few, 10)
    assert "its directory lists more files than the 1 its end record says" in problem(few)
    assert "it holds 70,000 files (at most 2,000 are read)" in problem(many)
    assert problem(many, cap=100_000) is None  # zip64 read right
    assert problem(fine) is None and "it holds 3 files" in problem(fine, cap=2)
    assert problem(cut) is not None


# -- the count of values, against json's own ------------------------------------------------------
def _values(value):
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    return 1


_TEXT = st.text(alphabet=st.sampled_from(list('ab,[]{}:"\\\né\u2028')), max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=30,
)


@pytest.mark.slow  # builds large archives and documents
@settings(max_examples=300, deadline=None)
@given(value=_JSON, ascii_only=st.booleans(), chunk=st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_the_value_count_bounds_what_json_decodes(value, ascii_only, chunk):
    """json_values_bound, read in chunks of any size, is at least the number of values json
    decodes (strings full of commas, brackets, quotes and backslashes included) and at most
    about twice it (empty containers count their bracket)."""
    from autograder import safe_files

    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    original = safe_files._CHUNK
    safe_files._CHUNK = chunk
    try:
        bound = safe_files.json_values_bound(text)
    finally:
        safe_files._CHUNK = original
    assert _values(value) <= bound <= 2 * _values(value) + 1


# -- what comes out of the sandbox -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[" + ",".join(["[]"] * 1_200_000) + "]", "too-many"),  # 3.6 MB: within the byte cap
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "too-deep"),
        ('["' + "x" * 1_000_000 + '"]', None),  # large, one value: read
    ],
)
def test_status_and_answer_files_are_parsed_under_a_value_bound(tmp_path, text, kind):
    """Status and answer files a sandbox wrote go through safe_files.read_json, which counts
    values on the bytes before decoding (the harness's answers reader, wire.Reader, too)."""
    from autograder.harness.wire import MAX_JSON_BYTES
    from autograder.safe_files import UnsafeFile, read_json

    (tmp_path / "response.json").write_text(text)
    if kind is None:
        assert len(read_json(tmp_path, "response.json", MAX_JSON_BYTES)[0]) == 1_000_000
        return
    with pytest.raises(UnsafeFile) as refused:
        read_json(tmp_path, "response.json", MAX_JSON_BYTES)
    assert refused.value.kind == kind
