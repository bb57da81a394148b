"""One identity everywhere: every lookup by student goes through student_ids.key (case, and
Unicode's two ways of writing an accent), so a grade follows the student whatever the name:
extensions, hand-in records, the roster, the students a stopped run left, OUT's saved folders
and the exports. A student missing from a hand-in record is named, never judged by file times."""

import csv
import json
import os
import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from fixtures import put_notebook as put
from fixtures import stand_in_todo

from autograder.__main__ import main
from autograder.config import Config
from autograder.deadlines import LatePolicy, load_handed_in, parse_policy
from autograder.grading import classrun
from autograder.grading.payload import apply_late, missing_from_record
from autograder.grading.stopping import Stopping
from autograder.report import write_student
from autograder.roster import Person, match_submissions
from autograder.sandbox import Limits
from autograder.submissions import discover

A = "01_soft_lookup.ipynb"
SOFT = "01_soft_lookup"
DUE = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
NFC = unicodedata.normalize("NFC", "José")
NFD = unicodedata.normalize("NFD", "José")


def payload(student, points=4.0):
    tests = [{"notebook": SOFT, "function": "similarity", "name": "similarity: x",
              "score": points, "max_score": 6.5, "status": "passed", "output": "",
              "misconceptions": []}]  # fmt: skip
    return {"score": points, "max_score": 6.5, "student": student, "output": "", "tests": tests,
            "notebooks": {SOFT: {"score": points, "max_score": 6.5, "submitted": True}}}  # fmt: skip


def test_nfc_and_nfd_are_two_strings_one_student():
    assert NFC != NFD  # what makes the tests below mean something


def test_an_extension_written_in_nfc_applies_to_a_folder_macos_named_in_nfd():
    policy = parse_policy(
        {
            "due": {"all": "2026-10-01T12:00:00Z"},
            "penalty": {"method": "zero"},
            "extensions": {NFC: 48},
        }
    )
    late_a_day = {SOFT: DUE + timedelta(days=1)}
    from autograder.deadlines import apply_late_policy

    mine = payload(NFD)
    apply_late_policy(mine, policy, late_a_day)
    assert mine["score"] == 4.0 and mine["late"]["penalty"] == 0  # within the 48 h
    other = payload("Ana")
    apply_late_policy(other, policy, late_a_day)
    assert other["score"] == 0.0  # the class's date: a day late, "zero"


def test_an_extension_given_twice_in_two_unicode_forms_is_refused():
    from autograder.deadlines import PolicyError

    with pytest.raises(PolicyError, match="given twice"):
        parse_policy({"due": {"all": "2026-10-01T12:00:00Z"}, "extensions": {NFC: 1, NFD: 2}})


def test_a_hand_in_record_naming_ada_applies_to_the_folder_ada_and_josé(tmp_path):
    record = tmp_path / "handed_in.csv"
    record.write_text(
        f"student,notebook,handed_in\nada,,2026-10-01T11:00:00Z\n{NFC},,2026-10-01T11:00:00Z\n"
    )
    policy = LatePolicy(due={SOFT: DUE}, method="zero")
    settings = Config(
        out=tmp_path,
        secret="s",
        limits=Limits(),
        deadlines=policy,
        handed_in=load_handed_in(record),
    )
    late_file = put(tmp_path / "Ada", A)
    when = (DUE + timedelta(days=3)).timestamp()
    os.utime(late_file, (when, when))  # the file says late; the record says on time
    for student in ("Ada", NFD):
        mine = payload(student)
        apply_late(mine, settings, student, {SOFT: late_file})
        assert mine["score"] == 4.0, student
        assert mine["late"]["notebooks"][SOFT]["handed_in"] == "2026-10-01T11:00:00+00:00"
    assert missing_from_record(settings, ["Ada", NFD, "bob"]) == ["bob"]


def test_a_student_the_record_does_not_name_is_never_judged_by_file_times(tmp_path):
    record = tmp_path / "handed_in.csv"
    record.write_text("student,notebook,handed_in\nada,,2026-10-01T11:00:00Z\n")
    policy = LatePolicy(due={SOFT: DUE}, method="zero")
    settings = Config(
        out=tmp_path,
        secret="s",
        limits=Limits(),
        deadlines=policy,
        handed_in=load_handed_in(record),
    )
    late_file = put(tmp_path / "bob", A)
    when = (DUE + timedelta(days=3)).timestamp()
    os.utime(late_file, (when, when))
    bob = payload("bob")
    apply_late(bob, settings, "bob", {SOFT: late_file})
    assert bob["score"] == 4.0 and bob["late"]["notebooks"][SOFT]["handed_in"] is None


# -- the class run: stand-in grading (the sandbox is not what these tests are about) -------------
def class_run(cls, out, tmp_path, **settings):
    with Stopping() as stop:
        return classrun._grade_class(
            discover(cls, out=out, staging=tmp_path / "staging"),
            Config(out=out, secret=settings.pop("secret", "s"), limits=Limits(), **settings),
            False,
            stop,
            str(cls),
        )


def test_a_renamed_folder_is_one_student_in_grades_csv_and_the_export(
    tmp_path, monkeypatch, capsys
):
    """`Ada/` graded 6.5, then renamed `ada/` (0 now): grades.csv listed the student twice,
    and the export wrote a blank (Canvas: "no change", so the old 6.5 stayed)."""
    cls, out = tmp_path / "class", tmp_path / "grades"
    graded_now = stand_in_todo(monkeypatch, lambda s: payload(s, {"Ada": 6.5, "ada": 0.0}[s]))
    put(cls / "Ada", A)
    class_run(cls, out, tmp_path)
    (cls / "Ada").rename(cls / "ada")
    done, summary = class_run(cls, out, tmp_path)
    assert graded_now == ["Ada", "ada"]
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [(r["student"], r["total"]) for r in rows] == [("ada", "0")]
    assert summary["superseded"] == [("Ada", ".superseded/Ada", "ada")]
    assert (out / ".superseded/Ada/results.json").is_file() and not (out / "Ada").exists()
    assert "Ada/ held an earlier result of the student now graded as ada" in capsys.readouterr().err
    roster = tmp_path / "roster.csv"
    roster.write_text("name,github,canvas_id\nAda L,ada,7\n")
    assert (
        main(["export", "--roster", str(roster), "--grades", str(out), "--format", "canvas"]) == 0
    )
    rows = list(csv.reader((out / "canvas_grades.csv").open()))
    assert rows[2][0] == "Ada L" and float(rows[2][-1]) == 0.0  # an explicit 0, not a blank


def test_the_export_stops_on_two_results_of_one_student(tmp_path, capsys):
    out = tmp_path / "grades"
    write_student(out / NFC, payload(NFC, 6.5))
    write_student(out / NFD, payload(NFD, 0.0))
    roster = tmp_path / "roster.csv"
    roster.write_text(f"name,github,canvas_id\nJosé,{NFC},7\n")
    status = main(["export", "--roster", str(roster), "--grades", str(out), "--format", "canvas"])
    err = capsys.readouterr().err
    assert status == 2 and not (out / "canvas_grades.csv").exists()
    assert "one student graded in several folders" in err


def test_the_roster_matches_a_name_in_either_unicode_form():
    person = Person(2, {"github": NFC})
    match = match_submissions([person], [NFD])
    assert match.by_person == {2: NFD} and match.unmatched == []


def test_a_stopped_runs_student_is_graded_again_under_another_spelling(tmp_path, monkeypatch):
    from autograder.grading.workspace import write_unfinished

    cls, out = tmp_path / "class", tmp_path / "grades"
    graded_now = stand_in_todo(monkeypatch, payload)
    put(cls / NFD, A)
    class_run(cls, out, tmp_path)
    write_unfinished(out, [NFC])  # a stopped run named the student in the other form
    graded_now.clear()
    class_run(cls, out, tmp_path)
    assert graded_now == [NFD]


def test_the_class_run_names_the_students_the_record_does_not(tmp_path, monkeypatch, capsys):
    cls, out = tmp_path / "class", tmp_path / "grades"
    stand_in_todo(monkeypatch, payload)
    put(cls / "Ada", A)
    put(cls / "bob", A)
    record = tmp_path / "handed_in.csv"
    record.write_text("student,notebook,handed_in\nada,,2026-10-01T11:00:00Z\n")
    _, summary = class_run(
        cls,
        out,
        tmp_path,
        deadlines=LatePolicy(due={SOFT: DUE}, method="zero"),
        handed_in=load_handed_in(record),
    )
    assert summary["not_in_record"] == ["bob"]
    err = capsys.readouterr().err
    assert "the --handed-in record does not name 1 student(s) (bob)" in err


def test_students_are_listed_once_with_their_own_results(tmp_path, monkeypatch):
    """The run's own students never hide one another: ada and bob both stay."""
    cls, out = tmp_path / "class", tmp_path / "grades"
    stand_in_todo(monkeypatch, payload)
    put(cls / "ada", A)
    put(cls / "bob", A)
    class_run(cls, out, tmp_path)
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [r["student"] for r in rows] == ["ada", "bob"]
    assert json.loads((out / "ada/results.json").read_text())["student"] == "ada"
