"""A student the classroom gather could not gather is NOT GRADED, with the gather's reason, in
the grade run over the gathered folder: class.html's help list, grades.csv's total and the
terminal. Before, such a student had no folder and vanished from grading without a word.

The gather is the real one over local git repositories; grading is stood in
(fixtures.stand_in_grading: no sandbox, no kernel); discovery and the class report are real.
"""

import csv
import io
import json
import os
import subprocess
from argparse import Namespace
from datetime import UTC, datetime

import nbformat
from fixtures import stand_in_grading

from autograder.__main__ import main
from autograder.grading import command
from autograder.platforms import gather_refusals

WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
NB1 = "01_soft_lookup.ipynb"


def _repo(root, name, files):
    repo = root / name
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "s", "GIT_AUTHOR_EMAIL": "s@example.org",
           "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@example.org",
           "GIT_AUTHOR_DATE": WHEN.isoformat(), "GIT_COMMITTER_DATE": WHEN.isoformat()}  # fmt: skip
    for path, text in files.items():
        (repo / path).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "w"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def _notebook(text):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(text))
    return nbformat.writes(nb)


def _gather(tmp_path, repos):
    listing = tmp_path / "repos.txt"
    listing.write_text("\n".join(str(r) for r in repos) + "\n")
    into = tmp_path / "class"
    return main(
        ["classroom", "gather", str(listing), "--into", str(into), "--prefix", "attention-"]
    )


def _payload(student):
    return {"score": 1.0, "max_score": 2.0, "notebooks": {},
            "tests": [{"name": "soft_lookup: a case", "score": 1.0, "max_score": 2.0,
                       "status": "failed", "output": "", "notebook": "01_soft_lookup",
                       "function": "soft_lookup", "misconceptions": [], "reason": "failed"}]}  # fmt: skip


def _grade(path, out, capsys):
    options = dict(secret="s", timeout=10, workers=1, force=False, quiet=True, skip_selftest=True)
    status = command.grade_command(Namespace(path=str(path), out=str(out), **options))
    return status, capsys.readouterr()


def _totals(out):
    text = (out / "grades.csv").read_text(encoding="utf-8")
    return {row[0]: row[-1] for row in list(csv.reader(io.StringIO(text)))[1:]}


def _help(out):
    data = json.loads((out / "class.json").read_text(encoding="utf-8"))
    return {h["student"]: h for h in data["help_first"]}


def test_a_student_gather_refused_is_not_graded_with_the_reason(tmp_path, monkeypatch, capsys):
    remote = tmp_path / "remote"
    ada = _repo(remote, "attention-ada", {NB1: _notebook("x = 1")})
    bob = _repo(remote, "attention-bob", {"notes.txt": "no notebook here"})
    cy = remote / "attention-cy"  # no repository at all
    assert _gather(tmp_path, [ada, bob, cy]) == 1
    capsys.readouterr()
    graded = stand_in_grading(monkeypatch, _payload)
    status, said = _grade(tmp_path / "class", tmp_path / "out", capsys)
    assert graded == ["ada"]
    assert status == 1  # someone was not graded: the run says so
    totals = _totals(tmp_path / "out")
    assert totals == {"ada": "1", "bob": "NOT GRADED", "cy": "NOT GRADED"}
    helped = _help(tmp_path / "out")
    assert "holds none of the course's notebooks" in str(helped["bob"]["reasons"])
    assert "could not gather" in str(helped["cy"]["reasons"])
    assert "NOT GRADED bob: not graded: the gather could not gather" in said.err
    assert "2 student(s) not graded: bob, cy" in said.err
    page = (tmp_path / "out" / "class.html").read_text(encoding="utf-8")
    assert "the gather could not gather their repository" in page


def test_a_gather_that_refuses_nobody_leaves_no_stale_refusals(tmp_path, monkeypatch, capsys):
    remote = tmp_path / "remote"
    ada = _repo(remote, "attention-ada", {NB1: _notebook("x = 1")})
    assert _gather(tmp_path, [ada, remote / "attention-bob"]) == 1
    assert (tmp_path / "class" / gather_refusals.FILE).exists()
    _repo(remote, "attention-bob", {NB1: _notebook("y = 2")})  # bob's repository is there now
    assert _gather(tmp_path, [ada, remote / "attention-bob"]) == 0
    assert not (tmp_path / "class" / gather_refusals.FILE).exists()
    capsys.readouterr()
    stand_in_grading(monkeypatch, _payload)
    status, _ = _grade(tmp_path / "class", tmp_path / "out", capsys)
    assert status == 0 and _totals(tmp_path / "out") == {"ada": "1", "bob": "1"}


def test_a_class_where_nobody_was_gathered_is_no_student_of_its_own(tmp_path, monkeypatch, capsys):
    remote = tmp_path / "remote"
    assert _gather(tmp_path, [remote / "attention-ada"]) == 1
    capsys.readouterr()
    graded = stand_in_grading(monkeypatch, _payload)
    status, _ = _grade(tmp_path / "class", tmp_path / "out", capsys)
    assert graded == [] and status == 1
    assert _totals(tmp_path / "out") == {"ada": "NOT GRADED"}  # never a student named "class"


def test_an_earlier_gathers_folder_is_graded_and_the_refusal_named(tmp_path, monkeypatch, capsys):
    into = tmp_path / "class"
    (into / "ada").mkdir(parents=True)
    (into / "ada" / NB1).write_text(_notebook("x = 1"))
    gather_refusals.write(into, [("ada", "r/attention-ada", "git fetch failed: timed out")])
    graded = stand_in_grading(monkeypatch, _payload)
    status, said = _grade(into, tmp_path / "out", capsys)
    assert graded == ["ada"] and status == 0
    assert "ada is graded from an earlier gather's folder" in said.err
    assert "git fetch failed: timed out" in said.err


def test_the_file_is_read_as_untrusted_data(tmp_path, monkeypatch, capsys):
    """Entries that are not (id, reason) strings are dropped; a reason's control characters
    reach no page or terminal raw; a file that is not JSON is named, and grading goes on."""
    into = tmp_path / "class"
    (into / "ada").mkdir(parents=True)
    (into / "ada" / NB1).write_text(_notebook("x = 1"))
    hostile = "<img src=x onerror=alert(1)>\x1b[2J\u202e=1+2"
    entries = [{"student": "eve", "reason": hostile}, {"student": 5, "reason": "x"},
               {"student": "fay"}, "text", {"student": "", "reason": "x"},
               {"student": "mal\x1b[2J", "reason": "x"}]  # fmt: skip
    (into / gather_refusals.FILE).write_text(json.dumps({"students": entries}))
    stand_in_grading(monkeypatch, _payload)
    status, said = _grade(into, tmp_path / "out", capsys)
    assert status == 1
    assert _totals(tmp_path / "out") == {
        "ada": "1",
        "eve": "NOT GRADED",
        "mal\\x1b[2J": "NOT GRADED",  # the id shown escaped, refused for its character
    }
    assert "skipped entry" not in said.err  # the gather's own file is not a stray entry
    assert "U+001B" in said.err
    page = (tmp_path / "out" / "class.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    for text in (page, said.err, said.out, (tmp_path / "out" / "grades.csv").read_text()):
        assert "\x1b" not in text and "\u202e" not in text
    (into / gather_refusals.FILE).write_text("{not json")
    status, said = _grade(into, tmp_path / "out2", capsys)
    assert status == 0 and "could not be read" in said.err
    assert _totals(tmp_path / "out2") == {"ada": "1"}
