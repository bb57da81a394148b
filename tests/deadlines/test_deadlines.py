"""Deadlines and late penalties (autograder/deadlines.py): the policy file, nbgrader's rules
compared with nbgrader's own late-submission machinery on the same timestamps, and the penalty
as an instructor sees it after `grade` (results.json, grades.csv, feedback page)."""

import csv
import json
import os
import re
import subprocess
import sys
from argparse import Namespace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from traitlets.config import Config

from autograder.curriculum import NOTEBOOKS
from autograder.deadlines import (
    LatePolicy,
    PolicyError,
    apply_late_policy,
    handed_in_from_files,
    load_handed_in,
    parse_policy,
)

REPO = Path(__file__).resolve().parents[2]
DUE = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)


# -- the policy file ----------------------------------------------------------------------------
def test_a_policy_reads_per_notebook_dates_a_default_and_a_timezone():
    policy = parse_policy(
        {
            "timezone": "Europe/Paris",
            "due": {"01_soft_lookup.ipynb": "2026-10-01T12:00:00Z", "all": "2026-12-18 23:59"},
            "penalty": {"method": "per-period", "points": 2, "period_hours": 24},
        }
    )
    assert policy.due["01_soft_lookup"] == DUE
    # written without an offset: the policy's timezone (Paris is UTC+1 in December)
    assert policy.due["06_autoregressive_lm"] == datetime(2026, 12, 18, 22, 59, tzinfo=UTC)
    assert set(policy.due) == {nb.stem for nb in NOTEBOOKS}


@pytest.mark.parametrize(
    "data, words",
    [
        ({"due": {"07_extra": "2026-10-01T12:00Z"}}, "names no notebook"),
        ({"due": {"all": "next friday"}}, "not a date"),
        ({"penalty": {"method": "half"}}, "penalty.method"),
        ({"penalty": {"method": "per-period", "points": 0}}, "points > 0"),
        ({"penalty": {"method": "per-period", "points": -1}}, ">= 0"),
        ({"timezone": "Mars/Olympus"}, "unknown timezone"),
        # ZoneInfo raised OSError (a file name too long): the run ended with a traceback
        ({"timezone": "Europe/" + "x" * 5000}, r"the deadlines file: timezone: .*5,007 characters"),
        ({"timezone": "Europe/Par\x00is"}, r"the deadlines file: timezone: .*Par\\x00is"),
        ({"timezone": "../../etc/passwd"}, "the deadlines file: timezone: unknown"),
        ({"timezone": 5}, "the deadlines file: timezone must be a name"),
        ({"deadline": {}}, "unknown key"),
    ],
)
def test_a_bad_policy_is_refused_with_what_is_wrong(data, words):
    with pytest.raises(PolicyError, match=words):
        parse_policy(data)


# -- nbgrader's rules -----------------------------------------------------------------------------
def _nbgrader_zero(score, seconds_late):
    """nbgrader's own: LateSubmissionPlugin('zero'), then AssignLatePenalties' bounds."""
    from nbgrader.plugins import LateSubmissionPlugin
    from nbgrader.preprocessors import AssignLatePenalties

    if seconds_late <= 0:
        return None  # AssignLatePenalties asks the plugin only for late submissions
    penalty = LateSubmissionPlugin(penalty_method="zero").late_submission_penalty(
        "s", score, seconds_late
    )

    class Notebook:
        pass

    notebook = Notebook()
    notebook.score = score
    return AssignLatePenalties()._check_late_penalty(notebook, penalty)


@settings(max_examples=100, deadline=None)
@given(
    score=st.floats(0, 30, allow_nan=False).map(lambda x: round(x, 2)),
    seconds=st.floats(-1e6, 1e7, allow_nan=False),
)
def test_zero_is_nbgraders_zero(score, seconds):
    ours = LatePolicy(due={"x": DUE}, method="zero").penalty(score, max(seconds, 0.0))
    assert ours == _nbgrader_zero(score, max(seconds, 0.0))


def test_per_period_counts_started_periods_and_stays_within_the_score():
    policy = LatePolicy(method="per-period", points=1.5, period=timedelta(hours=24))
    hour = 3600.0
    assert policy.penalty(10, 0) is None  # on time
    assert policy.penalty(10, 1) == 1.5  # one second late: one started day
    assert policy.penalty(10, 24 * hour) == 1.5
    assert policy.penalty(10, 25 * hour) == 3.0
    assert policy.penalty(2, 100 * hour) == 2  # never more than the score: floored at 0
    assert policy.penalty(0, 5 * hour) == 0


def test_grace_minutes_are_not_late():
    policy = LatePolicy(due={"a": DUE}, method="zero", grace=timedelta(minutes=10))
    assert policy.seconds_late("a", DUE + timedelta(minutes=9)) == 0
    assert policy.seconds_late("a", DUE + timedelta(minutes=11)) == 11 * 60


HOURS_LATE = (-3, 0.001, 5, 24, 30.5, 200)


def _gradebook_with(tmp_path, score):
    """One assignment due at DUE, one student per entry of HOURS_LATE, handed in that late."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("week1", duedate=DUE.replace(tzinfo=None))
        gb.add_notebook("01_soft_lookup", "week1")
        gb.add_grade_cell("test_similarity", "01_soft_lookup", "week1", max_score=30, cell_type="code")  # fmt: skip
        for number, hours in enumerate(HOURS_LATE):
            student = f"s{number}"
            gb.add_student(student)
            handed_in = DUE + timedelta(hours=hours)
            gb.add_submission("week1", student, timestamp=handed_in.replace(tzinfo=None))
            grade = gb.find_grade("test_similarity", "01_soft_lookup", "week1", student)
            grade.auto_score = score
        gb.db.commit()
    return url


@pytest.mark.slow  # nbgrader's own preprocessor on a real gradebook
@pytest.mark.parametrize("method", ["zero", "per-period"])
def test_nbgraders_own_preprocessor_gives_the_standalone_penalty(tmp_path, method):
    """nbgrader's real AssignLatePenalties on a real gradebook, configured with nbgrader's own
    'zero' or our PointsPerPeriod plugin, against LatePolicy on the same timestamps."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    from autograder.platforms.nbgrader_late import assign_late_penalties

    url = _gradebook_with(tmp_path, score=7.5)
    config = Config()
    if method == "zero":
        config.LateSubmissionPlugin.penalty_method = "zero"
    else:
        config.AssignLatePenalties.plugin_class = (
            "autograder.platforms.nbgrader_late.PointsPerPeriod"
        )
        config.PointsPerPeriod.points = 2.0
        config.PointsPerPeriod.period_hours = 24.0
    policy = LatePolicy(
        due={"01_soft_lookup": DUE}, method=method, points=2.0, period=timedelta(hours=24)
    )
    for number, hours in enumerate(HOURS_LATE):
        student = f"s{number}"
        resources = {
            "nbgrader": {
                "notebook": "01_soft_lookup", "assignment": "week1", "student": student,
                "db_url": url,
            }
        }  # fmt: skip
        AssignLatePenalties(config=config).preprocess(nbformat.v4.new_notebook(), resources)
        with Gradebook(url) as gb:
            nbgraders = gb.find_submission_notebook("01_soft_lookup", "week1", student)
            theirs = nbgraders.late_submission_penalty
            ours_there = assign_late_penalties(gb, config, "week1", student, ["01_soft_lookup"])
        handed_in = DUE + timedelta(hours=hours)
        standalone = policy.penalty(7.5, policy.seconds_late("01_soft_lookup", handed_in))
        assert theirs == standalone, hours
        assert ours_there["01_soft_lookup"] == (standalone or 0.0), hours
        assert (standalone or 0.0) > 0 if hours > 0 else standalone is None


# -- applied to results ---------------------------------------------------------------------------
def _payload():
    tests = [
        {"notebook": "01_soft_lookup", "function": "similarity", "name": "similarity: x",
         "score": 4.0, "max_score": 4.0, "status": "passed", "output": "", "misconceptions": []},
        {"notebook": "02_dot_product_softmax", "function": "softmax", "name": "softmax: x",
         "score": 1.0, "max_score": 5.0, "status": "failed", "output": "", "misconceptions": []},
    ]  # fmt: skip
    notebooks = {
        "01_soft_lookup": {"score": 4.0, "max_score": 4.0},
        "02_dot_product_softmax": {"score": 1.0, "max_score": 5.0},
    }
    return {"score": 5.0, "max_score": 9.0, "tests": tests, "notebooks": notebooks}


def test_penalties_are_recomputed_never_compounded_and_can_be_removed():
    policy = LatePolicy(
        due={"01_soft_lookup": DUE, "02_dot_product_softmax": DUE},
        method="per-period",
        points=3.0,
        period=timedelta(days=1),
    )
    handed_in = {"01_soft_lookup": DUE + timedelta(hours=2), "02_dot_product_softmax": DUE}
    payload = _payload()
    assert apply_late_policy(payload, policy, handed_in)
    assert payload["score"] == 2.0 and payload["late"]["penalty"] == 3.0
    assert payload["notebooks"]["01_soft_lookup"]["score"] == 1.0
    assert payload["late"]["notebooks"]["02_dot_product_softmax"]["penalty"] == 0.0
    assert not apply_late_policy(payload, policy, handed_in)  # the same again: unchanged
    assert payload["score"] == 2.0
    assert apply_late_policy(payload, None, {})  # the policy withdrawn: raw scores back
    assert payload["score"] == 5.0 and "late" not in payload
    assert payload["notebooks"]["01_soft_lookup"]["score"] == 4.0


def test_handed_in_times_come_from_each_file_graded_never_the_folder(tmp_path):
    """A near-named notebook that was on time was penalised as late: its time was read from the
    student's folder. Each notebook's time is its own file's, as discover found it; a notebook
    not handed in has none."""
    from fixtures import put_notebook

    from autograder.submissions import discover

    ada = tmp_path / "ada"
    first = put_notebook(ada, "02_Dot_Product_Softmax.ipynb")
    second = put_notebook(ada, "sub/04_multihead_attention (1).ipynb")
    third = put_notebook(tmp_path / "elsewhere", "05_transformer_block.ipynb")
    os.symlink(third, ada / "05_transformer_block.ipynb")  # a link is never graded nor timed
    for path, when in ((first, DUE), (second, DUE + timedelta(hours=5)), (third, DUE)):
        os.utime(path, (when.timestamp(), when.timestamp()))
    late = DUE + timedelta(days=3)
    os.utime(ada, (late.timestamp(), late.timestamp()))  # the folder's own time: not a hand-in
    [sub] = discover(ada, staging=tmp_path / "staging")
    times = handed_in_from_files(sub.messages.sources)
    assert times == {
        "02_dot_product_softmax": DUE,
        "04_multihead_attention": DUE + timedelta(hours=5),
    }


def test_a_handed_in_file_names_students_and_notebooks(tmp_path):
    path = tmp_path / "handed_in.csv"
    path.write_text(
        "student,notebook,handed_in\n"
        "ada,,2026-10-01T13:00:00+00:00\n"
        "ada,02_dot_product_softmax.ipynb,2026-10-03T12:00:00Z\n"
    )
    times = load_handed_in(path)
    assert times["ada"]["01_soft_lookup"] == DUE + timedelta(hours=1)
    assert times["ada"]["02_dot_product_softmax"] == DUE + timedelta(days=2)
    path.write_text("student,notebook,handed_in\nada,07_extra,2026-10-01T13:00:00Z\n")
    with pytest.raises(PolicyError, match="not a notebook"):
        load_handed_in(path)


@pytest.mark.parametrize(
    "rows, words",
    [
        (",,2026-10-01T13:00:00Z", "line 2: no student"),
        ("ada,,2026-10-01T13:00:00Z\nada,,2026-10-02T13:00:00Z", "line 3: 'ada' (all notebooks) is given twice"),
        ("ada,01_soft_lookup,2026-10-01T13:00:00Z\nada,01_soft_lookup.ipynb,2026-10-01T13:00:00Z", "line 3"),
        ("ada,,yesterday", "line 2: 'yesterday' is not a date"),
        ("ada,,0001-01-01T00:00:00+05:00", "line 2: 0001-01-01T00:00:00+05:00 is outside"),
        ("ada,,2026-10-01T13:00:00Z,,,,,,maybe-late", "line 2: unknown flag(s) 'maybe-late'"),
    ],
)  # fmt: skip
def test_a_bad_handed_in_file_is_refused_with_its_line(tmp_path, rows, words):
    path = tmp_path / "handed_in.csv"
    header = "student,notebook,handed_in"
    if "maybe-late" in rows:
        header += ",repository,commit,author_date,committer_date,first_seen,flags"
    path.write_text(f"{header}\n{rows}\n")
    with pytest.raises(PolicyError, match=re.escape(words)):
        load_handed_in(path)


def test_gathers_flags_reach_results_json_and_never_the_score(tmp_path):
    path = tmp_path / "handed_in.csv"
    path.write_text(
        "student,notebook,handed_in,repository,commit,author_date,committer_date,first_seen,flags\n"
        "ada,,2026-10-01T11:00:00Z,r,c,,,,backdated;history-rewritten\n"
        "bo,,2026-10-01T11:00:00Z,r,c,,,,\n"
    )
    times = load_handed_in(path)
    policy = parse_policy({"due": {"all": "2026-10-01T12:00:00Z"}, "penalty": {"method": "zero"}})
    ada, bo = {**_payload(), "student": "ada"}, {**_payload(), "student": "bo"}
    assert apply_late_policy(ada, policy, times["ada"])
    apply_late_policy(bo, policy, times["bo"])
    assert [f["flag"] for f in ada["handed_in_flags"]] == ["backdated", "history-rewritten"]
    assert "pushed after the deadline" in ada["handed_in_flags"][0]["what"]
    assert "handed_in_flags" not in bo
    assert ada["score"] == bo["score"] == 5.0  # on time by its date: a flag is for a human
    assert not apply_late_policy(ada, policy, times["ada"])  # idempotent
    assert apply_late_policy(ada, policy, times["bo"])  # flags withdrawn: removed
    assert "handed_in_flags" not in ada


def test_a_policy_applied_from_file_times_says_they_are_the_students(tmp_path, capsys):
    from autograder.config import config_from_args

    policy = tmp_path / "deadlines.toml"
    policy.write_text('[due]\nall = 2026-10-01T12:00:00Z\n[penalty]\nmethod = "zero"\n')
    handed = tmp_path / "handed_in.csv"
    handed.write_text("student,notebook,handed_in\nada,,2026-10-01T11:00:00Z\n")
    base = {"out": str(tmp_path / "o"), "secret": "s", "timeout": 30, "workers": 1,
            "force": False, "memory": None}  # fmt: skip
    config_from_args(Namespace(**base, deadlines=str(policy), handed_in=None))
    assert "file times, which are the student's to set" in capsys.readouterr().err
    config_from_args(Namespace(**base, deadlines=str(policy), handed_in=str(handed)))
    assert "file times" not in capsys.readouterr().err


@pytest.mark.slow  # grades in a real sandbox
def test_grade_applies_a_policy_to_students_graded_before_without_regrading(tmp_path):
    """`grade CLASS --deadlines F`: students whose results are up to date are not regraded,
    yet get the penalty in results.json, grades.csv and the feedback page; without the
    policy the next run restores their scores."""
    from autograder.report import write_student

    cls, out = tmp_path / "class", tmp_path / "grades"
    (cls / "ada").mkdir(parents=True)
    notebook = cls / "ada" / "01_soft_lookup.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), notebook)
    late = DUE + timedelta(hours=30)
    os.utime(notebook, (late.timestamp(), late.timestamp()))
    os.utime(cls / "ada", (late.timestamp(), late.timestamp()))
    from autograder.config import Config
    from autograder.grading.fingerprint import fingerprint
    from autograder.sandbox import Limits
    from autograder.submissions import content_digest, discover

    [sub] = discover(cls, staging=tmp_path / "staging")
    limits = Limits()
    limits.timeout_given = False  # `grade` without --timeout
    payload = _payload() | {
        "student": "ada",
        "output": "",
        "submission_digest": content_digest(sub),
        "grading_fingerprint": fingerprint(Config(out=out, secret="s", limits=limits)),
    }
    write_student(out / "ada", payload)  # graded earlier, from this very content
    policy = tmp_path / "deadlines.toml"
    policy.write_text(
        '[due]\n"01_soft_lookup" = 2026-10-01T12:00:00Z\n'
        '[penalty]\nmethod = "per-period"\npoints = 1.0\nperiod_hours = 24\n'
    )
    command = [sys.executable, "-m", "autograder", "grade", str(cls), "--out", str(out)]
    command += ["--quiet", "--secret", "s"]
    done = subprocess.run(
        [*command, "--deadlines", str(policy)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert "skipped 1 up to date" in done.stdout
    assert "file times, which are the student's to set" in done.stderr
    results = json.loads((out / "ada" / "results.json").read_text())
    assert results["late"]["notebooks"]["01_soft_lookup"]["penalty"] == 2.0  # 30 h: 2 days
    assert results["score"] == 3.0
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert rows[0]["01_soft_lookup"] == "2" and rows[0]["total"] == "3"
    page = (out / "ada" / "feedback.html").read_text()
    assert "handed in 1 d 6 h late: 2 point(s) off" in page
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "ada" / "results.json").read_text())["score"] == 5.0


# -- per-student extensions and what a deadlines file may hold ----------------------------------
EXTENDED = {
    "due": {"all": "2026-10-01T12:00:00+00:00"},
    "penalty": {"method": "per-period", "points": 3.0, "period_hours": 24},
    "extensions": {
        "Ada": 48,  # every notebook 48 h later; the name as graded, any case
        "bo": {"01_soft_lookup": "2026-10-05T12:00:00+00:00"},  # one notebook moved
    },
}


@pytest.mark.parametrize(
    "student, hours_late, penalty_01, penalty_02",
    [
        ("cy", 30, 4.0, 1.0),  # no extension: two periods (6 points) capped at 4 and at 1
        ("ada", 30, 0.0, 0.0),  # 48 h more for every notebook: on time
        ("ADA", 60, 3.0, 1.0),  # 12 h past the extended date: one period; names ignore case
        ("bo", 30, 0.0, 1.0),  # 01 moved four days, 02 keeps the class's date
    ],
)
def test_an_extension_moves_only_that_students_due_dates(
    student, hours_late, penalty_01, penalty_02
):
    policy = parse_policy(EXTENDED)
    payload = {**_payload(), "student": student}
    handed_in = {stem: DUE + timedelta(hours=hours_late) for stem in payload["notebooks"]}
    apply_late_policy(payload, policy, handed_in)
    late = payload["late"]["notebooks"]
    assert late["01_soft_lookup"]["penalty"] == penalty_01
    assert late["02_dot_product_softmax"]["penalty"] == penalty_02
    assert payload["score"] == 5.0 - penalty_01 - penalty_02


@pytest.mark.parametrize(
    "change, words",
    [
        ({"penalty": {"method": "per-period", "points": float("nan")}}, "finite number"),
        ({"penalty": {"method": "per-period", "points": float("inf")}}, "finite number"),
        ({"penalty": {"method": "per-period", "points": 1, "period_hours": 0}}, "> 0"),
        ({"penalty": {"method": "per-period", "points": 1, "period_hours": 1e9}}, "at most"),
        ({"penalty": {"method": "zero", "grace_minutes": float("nan")}}, "finite number"),
        ({"penalty": {"method": "zero", "pionts": 2}}, "unknown key"),
        ({"extensions": {"ada": float("nan")}}, "number of hours"),
        ({"extensions": {"ada": -5}}, "number of hours"),
        ({"extensions": {"ada": True}}, "number of hours"),
        ({"extensions": {"ada": {"08_nothing": "2026-11-01"}}}, "names no notebook"),
        ({"extensions": {"ada": {"01_soft_lookup": "soon"}}}, "not a date"),
        ({"extensions": {"ada": 1, "ADA": 2}}, "given twice"),
        ({"extensions": ["ada"]}, "must be a table"),
        # a period that rounds to 0 seconds once failed every run with ZeroDivisionError
        ({"penalty": {"method": "per-period", "points": 1, "period_hours": 1e-300}}, "at least"),
        ({"penalty": {"method": "per-period", "points": 1, "period_hours": 0.001}}, "a minute"),
        ({"penalty": {"method": "per-period", "points": -2}}, ">= 0"),
        ({"penalty": {"method": "per-period", "points": 1, "grace_minutes": -1}}, ">= 0"),
        ({"due": {"all": "0001-01-01T00:00:00+01:00"}}, "outside the dates UTC can hold"),
        ({"due": {"all": "9999-12-31T23:59:00-01:00"}}, "outside the dates UTC can hold"),
        ({"due": {"08_nothing": "2026-11-01T00:00:00Z"}}, "names no notebook"),
        # an extension past the last date a datetime holds: an OverflowError ended the run
        (
            {"due": {"all": "9999-12-31T00:00Z"}, "extensions": {"ada": 48}},
            "extensions.ada: the due dates moved by 48 h are past the year 9999",
        ),  # fmt: skip
    ],
)
def test_a_bad_deadlines_file_is_refused_before_anything_is_graded(tmp_path, change, words):
    with pytest.raises(PolicyError, match=words):
        parse_policy({**EXTENDED, **change})


def test_a_timezone_no_system_has_names_the_file_and_the_key(tmp_path):
    from autograder.deadlines import load_policy

    policy = tmp_path / "deadlines.toml"
    policy.write_text(f'timezone = "{"x" * 5000}"\n[due]\nall = "2026-12-18 23:59"\n')
    with pytest.raises(PolicyError) as refused:
        load_policy(policy)
    assert str(refused.value).startswith(f"{policy}: timezone: unknown timezone")
    assert len(str(refused.value)) < 300
