"""A regrade is keyed by what was graded and how: after the secret, the limits, the course or
the grader's version changes, every student is graded again and the run says how many were
graded under another configuration (grading/fingerprint.py). The secret itself is never
written: only a slow, salted hash of it goes into the fingerprint."""

import json

from fixtures import put_notebook as put
from fixtures import stand_in_todo

import autograder
from autograder.config import Config
from autograder.grading import classrun, fingerprint
from autograder.grading.stopping import Stopping
from autograder.sandbox import Limits
from autograder.submissions import discover

SECRET = "a-course-secret-nobody-guesses"


def settings(out, secret=SECRET, **limits):
    return Config(out=out, secret=secret, limits=Limits(**limits))


def test_the_fingerprint_changes_with_each_part_and_only_with_them(tmp_path, monkeypatch):
    base = fingerprint.fingerprint(settings(tmp_path), course="c")
    assert base == fingerprint.fingerprint(settings(tmp_path), course="c")
    assert base != fingerprint.fingerprint(settings(tmp_path, secret="another"), course="c")
    assert base != fingerprint.fingerprint(settings(tmp_path, memory_bytes=2**30), course="c")
    assert base != fingerprint.fingerprint(settings(tmp_path, timeout=30.0), course="c")
    assert base != fingerprint.fingerprint(settings(tmp_path), course="d")
    measured = settings(tmp_path)
    measured.limits.measured = {"01_soft_lookup": 12.5}  # the self-test's, at each run
    assert base == fingerprint.fingerprint(measured, course="c")
    monkeypatch.setattr(autograder, "__version__", "99.0.0")
    assert base != fingerprint.fingerprint(settings(tmp_path), course="c")


def test_the_course_digest_follows_the_files_that_decide_a_verdict(tmp_path):
    probes = tmp_path / "probes"
    probes.mkdir()
    (probes / "soft_lookup.py").write_text("CASES = 3\n")
    first = fingerprint.course_digest([probes])
    assert first == fingerprint.course_digest([probes])
    (probes / "soft_lookup.py").write_text("CASES = 4\n")  # a hidden test fixed
    assert fingerprint.course_digest([probes]) != first
    assert fingerprint.course_digest() == fingerprint.course_digest()  # the real one: stable


def test_the_secret_is_hashed_slowly_and_never_kept():
    digest = fingerprint.secret_hash(SECRET)
    assert digest == fingerprint.secret_hash(SECRET) != fingerprint.secret_hash(SECRET + "x")
    assert SECRET not in digest and fingerprint.SECRET_ROUNDS >= 100_000


def test_a_changed_secret_or_limit_regrades_everyone_and_says_so(tmp_path, monkeypatch, capsys):
    cls, out = tmp_path / "class", tmp_path / "grades"
    graded_now = stand_in_todo(monkeypatch)

    def run(**changes):
        graded_now.clear()
        with Stopping() as stop:
            _, summary = classrun._grade_class(
                discover(cls, out=out, staging=tmp_path / "st"),
                settings(out, **changes),
                False,
                stop,
            )
        return sorted(graded_now), summary

    for student in ("ada", "bob"):
        put(cls / student, "01_soft_lookup.ipynb", f"{student} = 1")
    assert run()[0] == ["ada", "bob"]
    assert run()[0] == []  # the same content, the same configuration: up to date
    capsys.readouterr()
    graded, summary = run(secret="the leaked one replaced")
    assert graded == ["ada", "bob"] and summary["other_configuration"] == ["ada", "bob"]
    assert "2 student(s) (ada, bob) were graded under another configuration" in (
        capsys.readouterr().err
    )
    assert run(secret="the leaked one replaced")[0] == []
    assert run(secret="the leaked one replaced", timeout=30.0)[0] == ["ada", "bob"]
    saved = (out / "ada" / "results.json").read_text()
    assert "leaked" not in saved and json.loads(saved)["grading_fingerprint"].startswith("sha256:")


def test_one_notebook_regraded_under_a_new_configuration_leaves_the_rest_to_grade_again(
    tmp_path, monkeypatch, capsys
):
    """`--notebook` keeps the other notebooks' verdicts: graded under the old configuration, so
    the student is not recorded as up to date, and the next full run grades them whole."""
    cls, out = tmp_path / "class", tmp_path / "grades"
    graded_now = stand_in_todo(monkeypatch)
    put(cls / "ada", "01_soft_lookup.ipynb", "ada = 1")

    def run(secret, notebooks=()):
        graded_now.clear()
        with Stopping() as stop:
            _, summary = classrun._grade_class(
                discover(cls, out=out, staging=tmp_path / "st"),
                Config(out=out, secret=secret, limits=Limits(), notebooks=notebooks),
                False,
                stop,
            )
        return list(graded_now), summary

    run("old")
    graded, summary = run("new", notebooks=("01_soft_lookup",))
    assert graded == ["ada"] and summary["other_configuration"] == ["ada"]
    assert "their other notebooks keep it" in capsys.readouterr().err
    assert json.loads((out / "ada/results.json").read_text())["submission_digest"] is None
    assert run("new")[0] == ["ada"]  # graded whole under the new configuration
    assert run("new")[0] == []
