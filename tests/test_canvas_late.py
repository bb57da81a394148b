"""Canvas's bulk download marks a late hand-in with `LATE_` in the file's name, and its files'
dates are the download's. Without --handed-in, that mark is the lateness grading uses: a marked
notebook is "late (Canvas), time unknown" and owes what the deadlines file says for an unknown
lateness; an unmarked one is on time, whatever its file's date. Before, the mark was parsed and
dropped, and the download's dates were taken for hand-in times.

The folder is made as Canvas names its files; discovery, the files' times, the late policy and
the class page are the real ones. The expected penalties are worked by hand from the policy.
"""

import os
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from fixtures import one_cell_notebook

from autograder import submissions
from autograder.deadlines import (
    LmsMark,
    PolicyError,
    apply_late_policy,
    handed_in_from_files,
    parse_policy,
)
from autograder.grading.payload import apply_late
from autograder.grading.student import graded_files
from autograder.report import SavedResult, render_class_page
from autograder.report.class_page import class_data

DUE = datetime(2026, 12, 18, 23, 0, tzinfo=UTC)
DOWNLOADED = DUE + timedelta(days=9)  # the download's date, on every file of it
NB1, NB2 = "01_soft_lookup", "02_dot_product_softmax"


def _policy(**penalty):
    return parse_policy({
        "due": {"all": DUE.isoformat()},
        "penalty": {"method": "per-period", "points": 2, "period_hours": 24} | penalty,
        "extensions": {"103": 48},  # eve, by her Canvas user id
    })  # fmt: skip


def _payload(student, points=(5.0, 10.0)):
    """Full marks on notebooks 01 and 02 (5 and 10 points), both submitted."""
    tests = [
        {"name": f"{stem}: a case", "score": p, "max_score": p, "status": "passed", "output": "",
         "notebook": stem, "function": "f", "misconceptions": [], "reason": ""}
        for stem, p in zip((NB1, NB2), points, strict=True)
    ]  # fmt: skip
    notebooks = {stem: {"submitted": True} for stem in (NB1, NB2)}
    return {"student": student, "score": sum(points), "max_score": sum(points),
            "notebooks": notebooks, "tests": tests}  # fmt: skip


def _canvas_class(root):
    """ada handed 01 in late and 02 on time; bob both on time; eve 01 late (with an extension);
    every file dated by the download, nine days after the due date."""
    root.mkdir()
    names = [
        f"ada_LATE_101_5001_{NB1}.ipynb",
        f"ada_101_5002_{NB2}.ipynb",
        f"bob_102_5003_{NB1}.ipynb",
        f"bob_102_5004_{NB2}-1.ipynb",  # a resubmission under the same name: Canvas's -1
        f"eve_LATE_103_5005_{NB1}.ipynb",
    ]
    for name in names:
        (root / name).write_text(one_cell_notebook("x = 1"))
        os.utime(root / name, (DOWNLOADED.timestamp(), DOWNLOADED.timestamp()))
    return root


def _graded(root, policy):
    found = {s.student: s for s in submissions.discover(root, staging=root.parent / "staging")}
    settings = SimpleNamespace(deadlines=policy, handed_in=None)
    payloads = {}
    for student, sub in found.items():
        payloads[student] = _payload(student)
        apply_late(payloads[student], settings, student, graded_files(sub.folder, sub.messages))
    return payloads


def test_canvas_late_marks_are_the_lateness_and_the_download_dates_are_not(tmp_path):
    payloads = _graded(_canvas_class(tmp_path / "canvas"), _policy())
    assert sorted(payloads) == ["101", "102", "103"]  # Canvas's user ids
    ada, bob, eve = payloads["101"], payloads["102"], payloads["103"]
    # 01 marked late: one period's points (2) of 5; 02 not marked: on time, its date unused
    assert ada["late"]["notebooks"][NB1]["penalty"] == 2.0
    assert ada["late"]["notebooks"][NB1]["marked_late"] == "Canvas"
    assert ada["late"]["notebooks"][NB1]["handed_in"] is None
    assert ada["late"]["notebooks"][NB2]["penalty"] == 0.0
    assert ada["late"]["notebooks"][NB2]["handed_in"] is None
    assert (ada["notebooks"][NB1]["score"], ada["score"]) == (3.0, 13.0)
    assert bob["score"] == 15.0 and bob["late"]["penalty"] == 0.0
    # eve's extension may cover what Canvas marked against its own due date: nothing taken
    assert eve["late"]["notebooks"][NB1]["penalty"] == 0.0
    assert eve["late"]["notebooks"][NB1]["extended"] is True and eve["score"] == 15.0


def test_the_class_page_names_a_canvas_mark_late_with_its_time_unknown(tmp_path):
    payloads = _graded(_canvas_class(tmp_path / "canvas"), _policy())
    data = class_data([SavedResult(s, p) for s, p in sorted(payloads.items())])
    late = {s["student"]: s for s in data["lateness"]["students"]}
    assert late["101"]["penalty"] == 2.0
    assert [n["late"] for n in late["101"]["notebooks"]] == [
        "late (Canvas), time unknown: 2 point(s) off"
    ]
    assert [n["late"] for n in late["103"]["notebooks"]] == ["late (Canvas), time unknown"]
    assert "102" not in late  # on time, no extension: not in the table
    assert (data["lateness"]["late"], data["lateness"]["points_taken"]) == (2, 2.0)
    page = render_class_page(data)
    assert "late (Canvas), time unknown: 2 point(s) off" in page
    assert "time unknown</td>" in page  # the "latest by" column: no hours invented


@pytest.mark.parametrize(
    ("penalty", "taken"),
    [
        ({}, 2.0),  # per-period, one period: 2 points
        ({"unknown_late_periods": 2}, 4.0),  # the instructor's choice: two periods
        ({"unknown_late_periods": 3}, 5.0),  # never more than the notebook's 5 points
        ({"method": "zero"}, 5.0),  # nbgrader's zero: the whole score
        ({"method": "none", "points": 0}, 0.0),
    ],
)
def test_an_unknown_lateness_owes_what_the_policy_says(penalty, taken):
    payload = _payload("ada")
    apply_late_policy(payload, _policy(**penalty), {NB1: LmsMark("Canvas", True)})
    assert payload["late"]["notebooks"][NB1]["penalty"] == taken
    assert payload["score"] == 15.0 - taken


def test_a_record_of_hand_in_times_wins_over_the_mark(tmp_path):
    root = _canvas_class(tmp_path / "canvas")
    sub = next(s for s in submissions.discover(root, staging=tmp_path / "s") if s.student == "101")
    record = {"101": {NB1: DUE + timedelta(hours=30), NB2: DUE - timedelta(hours=1)}}
    settings = SimpleNamespace(deadlines=_policy(), handed_in=record)
    payload = _payload("101")
    apply_late(payload, settings, "101", graded_files(sub.folder, sub.messages))
    entry = payload["late"]["notebooks"][NB1]
    assert entry["penalty"] == 4.0 and entry["seconds_late"] == 30 * 3600.0  # two periods
    assert "marked_late" not in entry


def test_files_of_other_sources_keep_their_own_dates(tmp_path):
    """Only a Canvas file's date is the download's: a student folder's file keeps its time."""
    (tmp_path / "ada").mkdir()
    path = tmp_path / "ada" / f"{NB1}.ipynb"
    path.write_text(one_cell_notebook("x = 1"))
    os.utime(path, (DOWNLOADED.timestamp(), DOWNLOADED.timestamp()))
    times = handed_in_from_files({NB1: path, NB2: LmsMark("Canvas", False)})
    assert times == {NB1: DOWNLOADED}  # the unmarked Canvas file: no time, so on time


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "2", 10_001])
def test_unknown_late_periods_must_be_a_whole_number_of_periods(value):
    with pytest.raises(PolicyError, match="unknown_late_periods"):
        _policy(unknown_late_periods=value)
