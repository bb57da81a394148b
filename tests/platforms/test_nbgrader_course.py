"""An nbgrader course of this course, set up, graded and exported the documented way (README,
"For instructors: nbgrader"): `python -m autograder nbgrader init`, students' submissions in
nbgrader's submitted/ tree, `python -m autograder nbgrader grade`, `nbgrader export`.

One course holds both layouts: one assignment per notebook, and one assignment ("attention")
holding all six. Few notebooks per student keep it fast."""

import csv
import html
import importlib.util
import json
import os
import shutil
import sys

import nbformat
import pytest
from fixtures import (
    NB01,
    NB02,
    NB03,
    REPO,
    TIMESTAMP,
    UNNORMALISED,
    formgrader_api,
    formgrader_server,
    read,
    released_with,
    run,
    without_venv_on_path,
)

from autograder.course.probes import build_cases
from autograder.curriculum import BY_STEM
from autograder.platforms.nbgrader import FAILED_COLOUR

pytestmark = (
    pytest.mark.slow
)  # grades an nbgrader course in the sandbox (`pytest -m "not slow"` skips it)

SECRET = "nbgrader-test-secret"
PLANTED = "<img src=x onerror=alert(1)><b id=planted>bold</b>"  # a student's exception text
SUBMISSION_SECRET = "5ec7e7" * 20  # what `nbgrader submit` writes (the cheater's only)


def build_class_module():
    spec = importlib.util.spec_from_file_location(
        "build_class", REPO / "examples" / "build_class.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def max_points(stem):
    """The automatic points: the hidden tests' (the probes')."""
    return sum(case.points for case in build_cases(stem, seed="points"))


def manual_points(stem):
    """The written answers' points: nbgrader's manual grading only (markdown solution cells)."""
    path = REPO / "solutions" / f"{stem}.ipynb"
    if not path.exists():
        return 0.0
    cells = nbformat.read(path, as_version=4).cells
    return sum(
        c.metadata["nbgrader"]["points"]
        for c in cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    )


def written_answers(stem):
    """The grade ids of the notebook's written answers (graded by hand in formgrader)."""
    cells = nbformat.read(REPO / "solutions" / f"{stem}.ipynb", as_version=4).cells
    return {
        c.metadata["nbgrader"]["grade_id"]
        for c in cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    }


# Students whose files or ids must cost only themselves: (folder name as bytes, what they hold).
# Each submits 01_soft_lookup with no notebook (graded in no time) and a timestamp.txt.
DATE = TIMESTAMP.encode()


def plant_bad_students(course, elsewhere):
    """The bad inputs of issue 18 (our own instances); returns {label: (shown id, reason)}."""
    submitted = os.fsencode(course / "submitted")

    def folder(name, assignment=NB01):
        path = os.path.join(submitted, name, assignment.encode())
        os.makedirs(path)
        return path

    # a timestamp.txt that is not a date nbgrader can read
    open(os.path.join(folder(b"words_for_a_date"), b"timestamp.txt"), "wb").write(
        b"last Tuesday, honest"
    )
    # a link to a device (the read would never end) and a link to a valid date elsewhere
    os.symlink("/dev/zero", os.path.join(folder(b"zero_link"), b"timestamp.txt"))
    ok = os.path.join(folder(b"zero_link", NB02), b"timestamp.txt")
    open(ok, "wb").write(DATE)  # the same student's other assignment is fine
    (elsewhere / "date.txt").write_bytes(DATE)
    os.symlink(elsewhere / "date.txt", os.path.join(folder(b"linked_date"), b"timestamp.txt"))
    # a FIFO: opening it would block until a writer comes
    os.mkfifo(os.path.join(folder(b"pipe_stamp"), b"timestamp.txt"))
    # a huge file (sparse: 3 GB on paper)
    with open(os.path.join(folder(b"huge_stamp"), b"timestamp.txt"), "wb") as handle:
        handle.truncate(3 * 2**30)
    # a student "folder" that is a FIFO, and one that is a link to a folder elsewhere
    os.mkfifo(os.path.join(submitted, b"fifo_folder"))
    (elsewhere / "theirs" / NB01).mkdir(parents=True)
    (elsewhere / "theirs" / NB01 / "timestamp.txt").write_bytes(DATE)
    os.symlink(elsewhere / "theirs", os.path.join(submitted, b"linked_folder"))
    # ids: not UTF-8, control characters, formulas and separators for `nbgrader export`
    for name in (
        b"caf\xe9_latin1",
        b"title\x1b]0;pwned\x07",
        b"two\nlines",
        b"=2+5",
        b"+SUM(1)",
        b"-1",
        b"@cmd",
        b"x,=1+2",
        b'"quoted"',
        b"<b>tag",
    ):
        open(os.path.join(folder(name), b"timestamp.txt"), "wb").write(DATE)


def submit(course, student, assignment, stem, nb):
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{stem}.ipynb")
    (folder / "timestamp.txt").write_text(TIMESTAMP)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course after init (both layouts), submissions, grade and export."""
    course = tmp_path_factory.mktemp("nbgrader") / "attention_course"
    course.mkdir()
    # what `nbgrader quickstart` leaves: a config with a header notebook the course must not get
    (course / "nbgrader_config.py").write_text(
        'c = get_config()  #noqa\nc.CourseDirectory.course_id = "attention_course"\n'
        'c.IncludeHeaderFooter.header = "source/header.ipynb"\n'
    )
    (course / "source").mkdir()
    header = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# HEADER")])
    nbformat.write(header, course / "source" / "header.ipynb")
    for layout in ("per-notebook", "single"):
        done = run(  # the venv's python by path, the venv not activated
            [sys.executable, "-m", "autograder", "nbgrader", "init", str(course)]
            + ["--layout", layout],
            env=without_venv_on_path(),
        )
        assert done.returncode == 0, done.stdout + done.stderr

    bc = build_class_module()
    solution = {s: read(REPO / "solutions" / f"{s}.ipynb") for s in (NB01, NB02, NB03)}
    released = {s: read(course / "release" / s / f"{s}.ipynb") for s in (NB01, NB02, NB03)}
    two_mistakes = bc.Student(
        "two_mistakes",
        "02 forgets the scale in scaled_scores; 03 masks after the softmax",
        mistakes=(
            bc.Body(NB02, "scaled_scores", bc.NO_SCALE_02),
            bc.Body(NB03, "scaled_dot_product_attention", bc.MASK_AFTER_SOFTMAX),
        ),
    )
    for stem in (NB01, NB02, NB03):  # 03 uses the student's own softmax from 02
        submit(course, "solutions", stem, stem, solution[stem])
    for stem in (NB01, NB03):
        submit(course, "stubs", stem, stem, released[stem])
    for stem in (NB02, NB03):
        submit(
            course,
            "two_mistakes",
            stem,
            stem,
            bc.student_notebook(solution[stem], two_mistakes, stem),
        )
    cheater = bc.BY_NAME["cheater"]
    submit(course, "cheater", NB03, NB03, bc.student_notebook(solution[NB03], cheater, NB03))
    (course / "submitted" / "cheater" / NB03 / "submission_secret.txt").write_text(
        SUBMISSION_SECRET
    )
    submit(course, "single", "attention", NB01, solution[NB01])  # the six-in-one assignment
    submit(course, "single", "attention", NB02, released[NB02])
    plant_bad_students(course, tmp_path_factory.mktemp("elsewhere"))
    raiser = read(course / "release" / NB01 / f"{NB01}.ipynb")
    raiser.cells.append(nbformat.v4.new_code_cell(f"raise ValueError({PLANTED!r})"))
    submit(course, "html_raiser", NB01, NB01, raiser)
    # the six-in-one assignment was due before "single" submitted it; nbgrader's "zero" method
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention_course") as gb:
        gb.update_or_create_assignment("attention", duedate="2026-02-01 00:00:00 UTC")
    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')

    graded = run(
        [sys.executable, "-m", "autograder", "nbgrader", "grade", str(course)]
        + ["--secret", SECRET, "--workers", "2", "--quiet"],
        env=without_venv_on_path(),
    )
    assert graded.returncode == 1, graded.stdout + graded.stderr  # the bad students, named
    exported = run(["nbgrader", "export", "--to", "grades.csv"], cwd=course)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    with open(course / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    scores = {(r["student_id"], r["assignment"]): float(r["raw_score"]) for r in rows}
    penalties = {
        (r["student_id"], r["assignment"]): float(r["late_submission_penalty"]) for r in rows
    }
    maxima = {r["assignment"]: float(r["max_score"]) for r in rows}
    with open(course / "grades.csv", newline="") as handle:
        raw_rows = list(csv.reader(handle))
    return {
        "path": course,
        "scores": scores,
        "maxima": maxima,
        "bc": bc,
        "log": graded.stdout,
        "errors": graded.stderr,
        "raw_rows": raw_rows,
        "penalties": penalties,
    }


def test_init_generates_the_student_notebooks_exactly(course):
    path = course["path"]
    for stem in BY_STEM:
        generated = (path / "release" / stem / f"{stem}.ipynb").read_text()
        assert generated.strip() == (REPO / "notebooks" / f"{stem}.ipynb").read_text().strip()
        in_single = path / "release" / "attention" / f"{stem}.ipynb"
        assert in_single.read_text().strip() == generated.strip()
    assert "HEADER" not in (path / "release" / NB01 / f"{NB01}.ipynb").read_text()


def test_export_max_scores_are_the_hidden_tests_points_plus_the_written_answers(course):
    """nbgrader's maximum adds the manually graded written answers; the automatic scores below
    (solutions get exactly the probes' points) stay those of every other platform."""
    for stem in (NB01, NB02, NB03):
        assert manual_points(stem) > 0
        assert course["maxima"][stem] == pytest.approx(max_points(stem) + manual_points(stem))
    assert course["maxima"]["attention"] == pytest.approx(
        sum(max_points(s) + manual_points(s) for s in BY_STEM)
    )


def test_solutions_full_marks_stubs_zero(course):
    scores = course["scores"]
    for stem in (NB01, NB02, NB03):
        assert scores[("solutions", stem)] == pytest.approx(max_points(stem))
    for stem in (NB01, NB03):
        assert scores[("stubs", stem)] == 0
    # the six-in-one assignment: the solution of 01 and the stub of 02
    assert scores[("single", "attention")] == pytest.approx(max_points(NB01))


def test_two_mistakes_score_as_the_standalone_grader_does(course, tmp_path):
    folder = tmp_path / "class" / "two_mistakes"
    for stem in (NB02, NB03):
        source = course["path"] / "submitted" / "two_mistakes" / stem / f"{stem}.ipynb"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, folder)
    done = run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
        + ["--out", str(tmp_path / "grades"), "--secret", SECRET, "--workers", "1", "--quiet"]
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "grades" / "grades.csv") as handle:
        [row] = list(csv.DictReader(handle))
    for stem in (NB02, NB03):
        nbgrader_score = course["scores"][("two_mistakes", stem)]
        assert nbgrader_score == pytest.approx(float(row[stem]))
        assert 0 < nbgrader_score < max_points(stem)  # partial credit, not all or nothing


def test_the_cheat_scores_zero_on_the_attacked_function(course):
    from nbgrader.api import Gradebook

    path = course["path"]
    with Gradebook(f"sqlite:///{path / 'gradebook.db'}", "attention_course") as gb:
        attacked = gb.find_grade("test_scaled_dot_product_attention", NB03, NB03, "cheater")
        assert attacked.score == 0 and attacked.max_score > 0
        honest = gb.find_grade("test_attention_scores", NB03, NB03, "cheater")
        assert honest.score == honest.max_score  # the rest of its notebook is right
        submission = gb.find_submission(NB03, "cheater")
        assert submission.timestamp is not None
    assert 0 < course["scores"][("cheater", NB03)] < max_points(NB03)


def test_nbgrader_autograde_refuses_to_run_student_code(course):
    """The configuration `init` writes makes `nbgrader autograde` stop before executing."""
    path = course["path"]
    marker = path / "student-code-ran"
    canary = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('ran')")]
    )
    submit(path, "canary", NB01, NB01, canary)
    done = run(["nbgrader", "autograde", NB01, "--student", "canary"], cwd=path)
    assert done.returncode != 0
    assert "python -m autograder nbgrader grade" in done.stdout + done.stderr
    assert not marker.exists()


def test_notebook_06_finds_the_students_05_next_to_it(tmp_path, monkeypatch):
    """One assignment per notebook: the student's own 05 sits in a sibling assignment folder
    (their work tree, nbgrader's submitted/ tree); in the grader's folder it is inside."""
    from coursedata import import_definitions

    from autograder.submissions import discover

    ada = REPO / "examples" / "class" / "ada"
    course = tmp_path / "submitted" / "ada"
    for stem in ("05_transformer_block", "06_autoregressive_lm"):
        (course / stem).mkdir(parents=True)
        shutil.copy2(ada / f"{stem}.ipynb", course / stem)
    monkeypatch.chdir(course / "06_autoregressive_lm")
    found = import_definitions("05_transformer_block.ipynb", ["TransformerBlock"])
    import torch

    block = found["TransformerBlock"](8, 2, 16)
    assert block(torch.zeros(1, 3, 8)).shape == (1, 3, 8)

    [sub] = discover(
        tmp_path / "submitted", staging=tmp_path / "staging", graded_groups={"06_autoregressive_lm"}
    )
    assert sorted(p.name for p in sub.folder.glob("*.ipynb")) == ["06_autoregressive_lm.ipynb"]
    monkeypatch.chdir(sub.folder)
    assert "TransformerBlock" in import_definitions("05_transformer_block.ipynb")

    # copies in folders named otherwise are not the student's notebook 05: never picked up
    (course / "backup").mkdir()
    shutil.copy2(ada / "05_transformer_block.ipynb", course / "backup")
    shutil.rmtree(course / "05_transformer_block")
    monkeypatch.chdir(course / "06_autoregressive_lm")
    with pytest.raises(FileNotFoundError, match="cannot find 05_transformer_block.ipynb"):
        import_definitions("05_transformer_block.ipynb")


def test_results_and_feedback_are_kept_in_the_course(course):
    results = course["path"] / "autograder_grades" / "all" / "two_mistakes" / "results.json"
    payload = json.loads(results.read_text())
    assert {t["notebook"] for t in payload["tests"] if t["score"] > 0} == {NB02, NB03}
    assert (results.parent / "feedback.html").exists()


# -- one student's bad files or id never stop the class (issue 18) -------------------------------
WRITTEN = {  # (student, assignment) the fixture's good students submitted
    ("solutions", NB01),
    ("solutions", NB02),
    ("solutions", NB03),
    ("stubs", NB01),
    ("stubs", NB03),
    ("two_mistakes", NB02),
    ("two_mistakes", NB03),
    ("cheater", NB03),
    ("single", "attention"),
    ("zero_link", NB02),  # a bad student's other, good, assignment
    ("html_raiser", NB01),
}
BAD = [  # (student id, as the terminal shows it, the reason given, not in the gradebook at all)
    pytest.param("words_for_a_date", "words_for_a_date", "not a date", id="timestamp-not-a-date"),
    pytest.param("zero_link", "zero_link", "symbolic link", id="timestamp-link-to-dev-zero"),
    pytest.param("linked_date", "linked_date", "symbolic link", id="timestamp-link-elsewhere"),
    pytest.param("pipe_stamp", "pipe_stamp", "named pipe (FIFO)", id="timestamp-fifo"),
    pytest.param("huge_stamp", "huge_stamp", "3.0 GB, more than", id="timestamp-huge"),
    pytest.param("caf\udce9_latin1", "caf\\udce9_latin1", "not UTF-8", id="id-not-utf8"),
    pytest.param("title\x1b]0;pwned\x07", "title\\x1b]0;pwned\\x07", "U+001B", id="id-escape"),
    pytest.param("two\nlines", "two\\x0alines", "U+000A", id="id-newline"),
    pytest.param("=2+5", "=2+5", "starts with '='", id="id-formula-equals"),
    pytest.param("+SUM(1)", "+SUM(1)", "starts with '+'", id="id-formula-plus"),
    pytest.param("-1", "-1", "starts with '-'", id="id-formula-minus"),
    pytest.param("@cmd", "@cmd", "starts with '@'", id="id-formula-at"),
    pytest.param("x,=1+2", "x,=1+2", "holds ','", id="id-csv-separator"),
    pytest.param('"quoted"', '"quoted"', "holds '\"'", id="id-csv-quote"),
    pytest.param("<b>tag", "<b>tag", "holds '<'", id="id-html"),
]


def gradebook(course):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course['path'] / 'gradebook.db'}", "attention_course")


def test_every_good_submission_is_in_the_gradebook_and_autograded(course):
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        for student, assignment in WRITTEN:
            try:
                gb.find_submission(assignment, student)
            except MissingEntry:
                pytest.fail(f"{student}/{assignment} is not in the gradebook")
            assert (course["path"] / "autograded" / student / assignment).is_dir()
        students = {s.id for s in gb.students} - {"canary"}  # `nbgrader autograde` adds it
        assert students == {s for s, _ in WRITTEN}


@pytest.mark.parametrize("student,shown,why", BAD)
def test_a_bad_file_or_id_is_named_and_costs_only_that_student(course, student, shown, why):

    lines = [
        line
        for line in course["errors"].splitlines()
        if line.startswith(f"NOT IN THE GRADEBOOK {shown}")
    ]
    assert len(lines) == 1 and why in lines[0], course["errors"]
    assert shown in course["errors"].splitlines()[-1]  # the closing line names them all
    with gradebook(course) as gb:
        assert student not in {s.student.id for s in gb.find_assignment(NB01).submissions}
    assert not os.path.lexists(
        os.path.join(
            os.fsencode(course["path"]), b"autograded", os.fsencode(student), NB01.encode()
        )
    )
    test_every_good_submission_is_in_the_gradebook_and_autograded(course)


def test_no_student_text_reaches_the_terminal_raw(course):
    out = course["log"] + course["errors"]
    assert "\x1b" not in out and "\x07" not in out
    assert not any(line.startswith("lines") for line in out.splitlines())


def test_nbgrader_export_has_one_row_per_student_and_assignment_and_no_formula(course):
    header, *rows = course["raw_rows"]
    assert all(len(row) == len(header) for row in rows)
    ids = {row[header.index("student_id")] for row in rows}
    assert ids == {s for s, _ in WRITTEN}
    assert not any(i[:1] in "=+-@" for i in ids)


# -- what formgrader and the feedback route see (issue 17) --------------------------------------
def test_autograded_notebooks_hold_our_verdicts_in_the_grade_cells(course):
    nb = read(course["path"] / "autograded" / "cheater" / NB03 / f"{NB03}.ipynb")
    outputs = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("test_"):
            outputs[grade_id] = cell.outputs
            assert "BEGIN HIDDEN TESTS" not in cell.source  # nbgrader's own hidden tests never ran
    assert set(outputs) == {f"test_{n}" for n in BY_STEM[NB03].graded}
    [attacked] = outputs["test_scaled_dot_product_attention"]
    assert "✗" in attacked.data["text/plain"] and "✗" in attacked.data["text/html"]
    assert FAILED_COLOUR in html.unescape(attacked.data["text/html"])  # seen: test_nbgrader_hostile
    [honest] = outputs["test_attention_scores"]
    assert "✗" not in honest.data["text/plain"]
    assert FAILED_COLOUR not in html.unescape(honest.data["text/html"])
    assert "Graded by the course's autograder" in nb.cells[0].source


def test_report_files_are_readable_by_the_course_group_only(course):
    import stat as st

    folder = course["path"] / "autograder_grades" / "all" / "cheater"
    for name in ("results.json", "feedback.html"):
        mode = (folder / name).stat().st_mode
        assert mode & st.S_IRGRP and not mode & st.S_IROTH, oct(mode)
    mode = (folder.parent / "gradebook.csv").stat().st_mode  # what was written, not a line each
    assert mode & st.S_IRGRP and not mode & st.S_IROTH, oct(mode)
    assert "gradebook.csv" in course["log"] and "\ngradebook: " not in course["log"]


def test_generate_and_release_feedback_pair_each_page_with_the_students_secret(course, tmp_path):
    from nbgrader.utils import notebook_hash

    path = course["path"]
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    done = run(["nbgrader", "generate_feedback", NB03], cwd=path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (path / "feedback" / "cheater" / NB03 / f"{NB03}.html").read_text()
    shown = html.unescape(page)
    assert "points from the course's hidden tests" in shown and "✗" in shown
    done = run(["nbgrader", "release_feedback", NB03, f"--Exchange.root={exchange}"], cwd=path)
    assert done.returncode == 0, done.stdout + done.stderr
    secret = (path / "autograded" / "cheater" / NB03 / "submission_secret.txt").read_text()
    assert secret == SUBMISSION_SECRET  # the one the student's own submission holds
    released = exchange / "attention_course" / "feedback"
    # the name `nbgrader fetch_feedback` computes on the student's side, from their secret
    assert (released / f"{notebook_hash(secret=secret, notebook_id=NB03)}.html").read_text() == page


# -- formgrader, served by Jupyter and read by a real browser ------------------------------------
@pytest.fixture(scope="module")
def formgrader(course, tmp_path_factory):
    """A Jupyter server with nbgrader's formgrader in the course folder: (base url, token)."""
    with formgrader_server(course["path"], tmp_path_factory.mktemp("formgrader-home")) as served:
        yield served


def test_formgrader_lists_the_graded_submissions_with_failed_tests(course, formgrader):
    submissions = {s["student"]: s for s in formgrader_api(formgrader, f"submissions/{NB03}")}
    for student in ("solutions", "stubs", "two_mistakes", "cheater"):
        assert submissions[student]["autograded"], submissions[student]
        assert submissions[student]["score"] == pytest.approx(course["scores"][(student, NB03)])
    notebooks = {
        nb["student"]: nb for nb in formgrader_api(formgrader, f"submitted_notebooks/{NB03}/{NB03}")
    }
    assert set(notebooks) == {"solutions", "stubs", "two_mistakes", "cheater"}
    assert {s for s, nb in notebooks.items() if nb["failed_tests"]} == {
        "stubs",
        "two_mistakes",
        "cheater",
    }
    # our test cells never wait for a person; only the written answer (graded by hand) does
    with gradebook(course) as gb:
        for student in notebooks:
            for grade in gb.find_submission_notebook(NB03, NB03, student).grades:
                assert grade.needs_manual_grade == (grade.name in written_answers(NB03)), grade


def test_formgrader_shows_each_grade_cells_score_in_a_browser(course, formgrader, tmp_path):
    """The page a TA grades on (/formgrader/submissions/<id>), rendered by Chromium: each grade
    cell's score box shows our score (formgrader's script puts it in the box's placeholder)."""
    from html.parser import HTMLParser

    from headless_chromium import run_chromium

    [cheater_nb] = [
        nb
        for nb in formgrader_api(formgrader, f"submitted_notebooks/{NB03}/{NB03}")
        if nb["student"] == "cheater"
    ]
    base, token = formgrader
    dom = run_chromium(
        ["--virtual-time-budget=30000", "--dump-dom"]
        # logged in by Jupyter's login page (it sets the cookie formgrader's own requests need)
        + [f"{base}/login?token={token}&next=/formgrader/submissions/{cheater_nb['id']}/"],
        tmp_path,
    )

    class Scores(HTMLParser):
        shown = {}

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "input" and "score" in (attrs.get("class") or "").split():
                self.shown[attrs["id"]] = attrs.get("placeholder")

    Scores().feed(dom)
    with gradebook(course) as gb:
        expected = {
            g.name: g.auto_score
            for g in gb.find_submission_notebook(NB03, NB03, "cheater").grades
            if g.name not in written_answers(NB03)  # graded by hand: its box stays empty
        }
    assert set(Scores.shown) == set(expected) | written_answers(NB03)
    Scores.shown = {k: v for k, v in Scores.shown.items() if k in expected}
    assert {k: float(v) for k, v in Scores.shown.items()} == pytest.approx(expected)
    assert expected["test_scaled_dot_product_attention"] == 0
    assert expected["test_attention_scores"] > 0
    assert "points from the course's hidden tests" in dom  # our verdicts, in the cells


def validate(nb, tmp_path, name):
    from nbgrader.validator import Validator

    path = tmp_path / name / f"{NB01}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return Validator().validate(str(path))


def test_validate_fails_a_blank_notebook_and_a_wrong_one_and_passes_a_solved_one(tmp_path):
    solved = {name: "solution" for name in BY_STEM[NB01].graded}
    failed = validate(released_with(NB01, {}), tmp_path, "blank")["failed"]
    checks = [f for f in failed if f["source"].startswith("check(")]
    assert len(checks) == len(BY_STEM[NB01].graded)
    assert all("not implemented yet" in f["raw_error"] for f in checks)
    # and the written answer, left as "YOUR ANSWER HERE": nbgrader's own rule
    assert [f["source"] for f in failed if f not in checks] == ["YOUR ANSWER HERE"]

    wrong = validate(released_with(NB01, {**solved, "percentages": UNNORMALISED}), tmp_path, "x")
    failing = {f["source"] for f in wrong["failed"]}
    assert 'check("percentages", percentages)' in failing
    assert 'check("lookup", lookup)' not in failing
    answered = {
        **solved,
        **{w: "Because the weights are a softmax." for w in written_answers(NB01)},
    }
    assert validate(released_with(NB01, answered), tmp_path, "solved") == {}


def test_in_jupyter_a_failing_check_only_prints(tmp_path):
    from nbclient import NotebookClient

    nb = released_with(NB01, {"percentages": UNNORMALISED})
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBGRADER")}
    NotebookClient(nb, timeout=300, allow_errors=True).execute(env=env)
    for cell in nb.cells:
        assert not any(o.output_type == "error" for o in cell.get("outputs", [])), cell.source
    [check_cell] = [c for c in nb.cells if c.source == 'check("percentages", percentages)']
    assert "✗ percentages" in check_cell.outputs[0].text


def test_nbgrader_late_penalty_applies_to_our_scores(course):
    """nbgrader's LateSubmissionPlugin, as the course configures it ("zero": a late submission
    scores 0), on the score we wrote; on time, no penalty."""
    late = ("single", "attention")
    assert course["scores"][late] > 0
    assert course["penalties"][late] == pytest.approx(course["scores"][late])
    assert course["penalties"][("solutions", NB01)] == 0


def test_a_students_text_in_formgraders_notebook_and_feedback_stays_text(course):
    """An exception message of the student's, shown under the cell that raised it while graded,
    is escaped in the HTML nbgrader makes from the autograded notebook (formgrader's and the
    feedback page's templates render outputs alike)."""
    path = course["path"]
    nb = read(path / "autograded" / "html_raiser" / NB01 / f"{NB01}.ipynb")
    [raised] = [c for c in nb.cells if c.source.startswith("raise ValueError")]
    assert PLANTED in raised.outputs[0].data["text/plain"]
    done = run(["nbgrader", "generate_feedback", NB01, "--student", "html_raiser"], cwd=path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (path / "feedback" / "html_raiser" / NB01 / f"{NB01}.html").read_text()
    assert PLANTED in html.unescape(page)  # shown, as text
    assert "<b id=planted>" not in page and "<img src=x" not in page


@pytest.mark.parametrize("entry", ["fifo_folder", "linked_folder"])
def test_a_student_entry_that_is_not_a_folder_is_named_and_skipped(course, entry):
    lines = [line for line in course["errors"].splitlines() if line.startswith("skipped entry")]
    assert any(line.startswith(f"skipped entry {entry}: ") for line in lines), lines
    with gradebook(course) as gb:
        assert entry not in {s.id for s in gb.students}


def cheaters_autograded_notebook(course, nb, tmp_path):
    """The autograded notebook 03 formgrader shows for the cheater had they handed in `nb`."""
    from autograder.platforms.nbgrader import autograded_notebook, load_course

    folder = tmp_path / "cheater"
    folder.mkdir()
    nbformat.write(nb, folder / f"{NB03}.ipynb")
    payload = json.loads(
        (course["path"] / "autograder_grades" / "all" / "cheater" / "results.json").read_text()
    )
    config, coursedir = load_course(course["path"])
    return autograded_notebook(
        coursedir, config, "cheater", NB03, NB03, payload, folder, 20 * 2**20
    )


def test_a_notebook_with_altered_nbgrader_metadata_is_still_shown_with_its_code(course, tmp_path):
    """A cell added with made-up grade metadata (100 points), a test cell copied with its
    grade id, an old schema: nbgrader's sanitisers refuse such a notebook; the autograded copy
    then takes each cell's metadata from the released notebook and still shows the student's
    code, with one verdict per real grade cell."""
    nb = read(course["path"] / "submitted" / "cheater" / NB03 / f"{NB03}.ipynb")
    fake = nbformat.v4.new_code_cell("print('a test cell of my own')")
    fake.metadata["nbgrader"] = {"grade": True, "grade_id": "test_mine", "points": 100}
    copied = nbformat.v4.new_code_cell("print('a copy of a test cell')")
    copied.metadata["nbgrader"] = {"grade": True, "grade_id": "test_causal_mask", "points": 9}
    nb.cells += [fake, copied]
    for cell in nb.cells:
        if "nbgrader" in cell.metadata:
            cell.metadata["nbgrader"]["schema_version"] = 1
    shown = cheaters_autograded_notebook(course, nb, tmp_path)
    sources = [c.source for c in shown.cells]
    assert "print('a test cell of my own')" in sources  # the student's code, shown
    assert "not be shown here" not in shown.cells[0].source
    grade_ids = [
        c.metadata["nbgrader"]["grade_id"]
        for c in shown.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    ]
    expected = [f"test_{n}" for n in BY_STEM[NB03].graded] + sorted(written_answers(NB03))
    assert sorted(grade_ids) == sorted(expected)


def test_a_written_answer_with_its_flags_unset_keeps_its_score_box(course, tmp_path):
    """A student who unsets the grade and solution flags of the written answer's cell (its grade
    id kept) would hide formgrader's score and comment boxes for it: every cell's nbgrader
    metadata comes from the released notebook by grade id, whatever the student's says."""
    nb = read(course["path"] / "submitted" / "cheater" / NB03 / f"{NB03}.ipynb")
    written = sorted(written_answers(NB03))
    assert written, "notebook 03 has a written answer"
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") in written:
            meta.update({"grade": False, "solution": False, "points": 0})
    shown = cheaters_autograded_notebook(course, nb, tmp_path)
    released = read(course["path"] / "release" / NB03 / f"{NB03}.ipynb")
    want = {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]
        for c in released.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") in written
    }
    got = {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]
        for c in shown.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") in written
    }
    assert set(got) == set(written)
    for grade_id, meta in got.items():
        assert meta["grade"] and meta["solution"], grade_id
        assert meta["points"] == want[grade_id]["points"] > 0
