"""The bulk downloads of Canvas ("Download Submissions": one flat folder of
`name_userid_attachmentid_file`, `LATE_` before the user id, `-1` on a file uploaded again) and
Moodle ("Download all submissions": `Full Name_participant_assignsubmission_file_/` folders, or
flat files) are graded with the ids those systems know: Canvas's user id (the roster's
canvas_id) and Moodle's `Full Name_participant`. The latest upload wins; the others are named."""

import csv
import zipfile

from fixtures import graded_files as graded
from fixtures import one_cell_notebook as notebook

from autograder.__main__ import main
from autograder.bulk_downloads import canvas_file, moodle_file, moodle_folder
from autograder.report import write_student
from autograder.submissions import discover

A, B = "01_soft_lookup.ipynb", "02_dot_product_softmax.ipynb"


def write(path, code):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook(code))


def canvas_download(root):
    """A Canvas download: unzipped as the instructor gets it (one flat folder)."""
    write(root / f"lovelaceada_1001_50001_{A}", "ada = 1")
    write(root / f"lovelaceada_1001_50002_{B}", "ada_old = 2")
    write(root / "lovelaceada_1001_50007_02_dot_product_softmax-1.ipynb", "ada_new = 2")
    write(root / f"hopper_LATE_1002_50003_{A}", "grace = 1")
    with zipfile.ZipFile(root / "turingalan_1003_50004_homework.zip", "w") as archive:
        archive.writestr(f"homework/{A}", notebook("alan = 1"))
    return root


def test_canvas_names_are_read_as_canvas_writes_them():
    entry = canvas_file("hopper_LATE_1002_50003_01_soft_lookup-1.ipynb")
    assert (entry.student, entry.name, entry.order, entry.late) == (
        "1002",
        "01_soft_lookup-1.ipynb",
        50003,
        True,
    )
    assert canvas_file("notes_1_2_readme.txt") is None
    assert canvas_file("01_soft_lookup.ipynb") is None


def test_a_canvas_download_is_graded_by_canvas_user_id(tmp_path):
    subs = {s.student: s for s in discover(canvas_download(tmp_path / "canvas"))}
    assert sorted(subs) == ["1001", "1002", "1003"]  # not one empty student
    assert not any(s.refused for s in subs.values())
    ada = subs["1001"]
    assert graded(ada) == {A: notebook("ada = 1"), B: notebook("ada_new = 2")}
    said = " ".join(ada.messages["02_dot_product_softmax"])
    assert f"An earlier upload was not graded: {B}" in said  # the latest wins, the other named
    assert ada.messages.graded_as == {"02_dot_product_softmax": "02_dot_product_softmax-1.ipynb"}
    assert graded(subs["1002"]) == {A: notebook("grace = 1")}
    assert graded(subs["1003"]) == {A: notebook("alan = 1")}
    # hand-in times come from each student's own file
    assert ada.messages.sources["01_soft_lookup"] == tmp_path / f"canvas/lovelaceada_1001_50001_{A}"


def test_a_canvas_download_exports_to_the_roster_by_canvas_id(tmp_path, capsys):
    out = tmp_path / "grades"
    for student, points in (("1001", 6.5), ("1002", 2.0)):
        tests = [{"notebook": "01_soft_lookup", "function": "lookup", "name": "lookup: x",
                  "score": points, "max_score": 6.5, "status": "passed", "output": "",
                  "misconceptions": []}]  # fmt: skip
        write_student(out / student, {"score": points, "max_score": 6.5, "student": student,
                                      "output": "", "tests": tests, "notebooks": {}})  # fmt: skip
    roster = tmp_path / "roster.csv"
    roster.write_text("name,canvas_id\nAda Lovelace,1001\nGrace Hopper,1002\n")
    status = main(["export", "--roster", str(roster), "--grades", str(out), "--format", "canvas"])
    assert status == 0, capsys.readouterr()
    rows = list(csv.reader((out / "canvas_grades.csv").open()))
    assert {r[1]: float(r[-1]) for r in rows[2:]} == {"1001": 6.5, "1002": 2.0}


def test_moodle_names_are_read_as_moodle_writes_them():
    assert moodle_folder("Ada Lovelace_123456_assignsubmission_file_") == (
        "Ada Lovelace_123456",
        "",
    )
    student, why = moodle_folder("Ada Lovelace_123456_assignsubmission_onlinetext_")
    assert student is None and "onlinetext" in why
    assert moodle_folder("ada") == (None, "")
    entry = moodle_file(f"Grace Hopper_654321_assignsubmission_file_{A}")
    assert (entry.student, entry.name) == ("Grace Hopper_654321", A)


def test_a_moodle_download_is_graded_by_its_participant(tmp_path):
    root = tmp_path / "moodle"
    write(root / "Ada Lovelace_123456_assignsubmission_file_" / A, "ada = 1")
    write(root / "Ada Lovelace_123456_assignsubmission_file_" / "work" / B, "ada = 2")
    (root / "Ada Lovelace_123456_assignsubmission_onlinetext_").mkdir()
    (root / "Ada Lovelace_123456_assignsubmission_onlinetext_" / "onlinetext.html").write_text(
        "<p>done</p>"
    )
    write(root / "José Núñez_222222_assignsubmission_file_" / f"Copy of {A}", "jose = 1")
    notices = []
    subs = {s.student: s for s in discover(root, notices=notices)}
    assert sorted(subs) == ["Ada Lovelace_123456", "José Núñez_222222"]
    assert graded(subs["Ada Lovelace_123456"]) == {A: notebook("ada = 1"), B: notebook("ada = 2")}
    assert graded(subs["José Núñez_222222"]) == {A: notebook("jose = 1")}
    assert any("onlinetext" in line for line in notices)


def test_a_flat_moodle_download_is_graded_by_its_participant(tmp_path):
    root = tmp_path / "moodle"
    write(root / f"Ada Lovelace_123456_assignsubmission_file_{A}", "ada = 1")
    write(root / f"Ada Lovelace_123456_assignsubmission_file_{B}", "ada = 2")
    write(root / f"Grace Hopper_654321_assignsubmission_file_{A}", "grace = 1")
    subs = {s.student: s for s in discover(root)}
    assert sorted(subs) == ["Ada Lovelace_123456", "Grace Hopper_654321"]
    assert graded(subs["Ada Lovelace_123456"]) == {A: notebook("ada = 1"), B: notebook("ada = 2")}


def test_a_class_run_over_a_canvas_download_lists_each_student_by_id(tmp_path, monkeypatch):
    from fixtures import stand_in_todo

    from autograder.config import Config
    from autograder.grading import classrun
    from autograder.grading.stopping import Stopping
    from autograder.sandbox import Limits

    root, out = canvas_download(tmp_path / "canvas"), tmp_path / "grades"
    graded_now = stand_in_todo(monkeypatch)
    with Stopping() as stop:
        classrun._grade_class(
            discover(root, out=out, staging=tmp_path / "st"),
            Config(out=out, secret="s", limits=Limits()),
            False,
            stop,
        )
    assert sorted(graded_now) == ["1001", "1002", "1003"]
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [r["student"] for r in rows] == ["1001", "1002", "1003"]
