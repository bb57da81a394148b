"""Faults of the grading run itself: the grading parent killed with SIGKILL half way, two runs
into the same output folder at once, bubblewrap or ipykernel missing.

The killed run is rerun without --force: its results must equal those of an uninterrupted run,
no file may be half-written, and no work folder or process of the killed run may be left.
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from processes import marker, processes_with

import autograder
from autograder.grading.workspace import LOCK_NAME, RUN_PREFIX

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
FILE = "01_soft_lookup.ipynb"
MARKER = marker("4141")  # a sleeper started by a submission carries this in its command line
REFERENCE = (REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py").read_text()
ARGS = ["--workers", "1", "--timeout", "60", "--quiet", "--secret", "faults", "--memory", "2"]


def notebook(folder, *cells):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / FILE)


def build_class(root):
    sleeper = f"import subprocess\nsubprocess.Popen(['sleep', '{MARKER}'], start_new_session=True)"
    notebook(root / "a_honest", REFERENCE)
    notebook(root / "b_sleeper", sleeper, REFERENCE, "import time\ntime.sleep(8)")
    notebook(root / "c_wrong", REFERENCE, "def percentages(scores):\n    return scores")
    return ["a_honest", "b_sleeper", "c_wrong"]


def command(*argv):
    return [sys.executable, "-m", "autograder", "grade", *map(str, argv)]


def grade(*argv, env=None, timeout=600):
    env = env or dict(os.environ, TMPDIR=str(TEMP))
    return subprocess.run(
        command(*argv), capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )


TEMP = Path(tempfile.mkdtemp(prefix="faults-tmp-"))  # the graders' temp folder: theirs only


def run_folders():
    return set(TEMP.glob(f"{RUN_PREFIX}*"))


def graded_tests(out, student):
    payload = json.loads((out / student / "results.json").read_text())
    return [(t["name"], t["score"], t["output"]) for t in payload["tests"]], payload["score"]


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def killed_and_rerun(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    students = build_class(root / "submissions")
    clean, out = root / "clean", root / "out"
    uninterrupted = grade(root / "submissions", "--out", clean, *ARGS)

    before = run_folders()
    proc = subprocess.Popen(
        command(root / "submissions", "--out", out, *ARGS),
        cwd=REPO,
        env=dict(os.environ, TMPDIR=str(TEMP)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    first = out / students[0] / "results.json"
    started = wait_for(first.exists, 300) and wait_for(lambda: processes_with(MARKER), 120)
    mine = run_folders() - before
    second = grade(root / "submissions", "--out", out, *ARGS, timeout=120)  # while it runs
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gone = wait_for(lambda: not processes_with(MARKER), 30)
    after_kill = {
        "files": sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()),
        "sandboxes_gone": gone,
    }
    rerun = grade(root / "submissions", "--out", out, *ARGS)
    left = sorted(p.name for p in TEMP.iterdir())
    yield {
        "out": out,
        "clean": clean,
        "students": students,
        "uninterrupted": uninterrupted,
        "started": started,
        "second": second,
        "after_kill": after_kill,
        "rerun": rerun,
        "run_folders": mine,
        "left_in_temp": left,
    }
    shutil.rmtree(TEMP, ignore_errors=True)


def test_the_kill_happened_in_the_middle_of_the_run(killed_and_rerun):
    assert killed_and_rerun["uninterrupted"].returncode == 0, killed_and_rerun["uninterrupted"]
    assert killed_and_rerun["started"]
    files = killed_and_rerun["after_kill"]["files"]
    done = [f for f in files if f.name == "results.json"]
    assert 1 <= len(done) < len(killed_and_rerun["students"])


def test_no_file_is_half_written_by_the_killed_run(killed_and_rerun):
    out = killed_and_rerun["out"]
    for rel in killed_and_rerun["after_kill"]["files"]:
        if rel.name == "results.json":
            json.loads((out / rel).read_text())  # complete JSON, or the file is not there
        if rel.name == "feedback.html":
            assert (out / rel).read_text().rstrip().endswith("</html>")


def test_a_second_run_into_the_same_folder_is_refused(killed_and_rerun):
    second = killed_and_rerun["second"]
    assert second.returncode != 0
    assert "another grading run is using" in second.stderr
    assert "pid " in second.stderr and "Traceback" not in second.stderr


def test_no_process_of_the_killed_run_is_left(killed_and_rerun):
    assert killed_and_rerun["after_kill"]["sandboxes_gone"]
    assert processes_with(MARKER) == []
    for folder in killed_and_rerun["run_folders"]:
        assert processes_with(str(folder)) == []


def test_the_rerun_equals_an_uninterrupted_run(killed_and_rerun):
    rerun, out, clean = (
        killed_and_rerun["rerun"],
        killed_and_rerun["out"],
        killed_and_rerun["clean"],
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "skipped 1 up to date" in rerun.stdout or "skipped 2 up to date" in rerun.stdout
    for student in killed_and_rerun["students"]:
        assert graded_tests(out, student) == graded_tests(clean, student)
    rows = list(csv.reader((out / "grades.csv").open()))
    assert rows == list(csv.reader((clean / "grades.csv").open()))
    assert [r[0] for r in rows[1:]] == killed_and_rerun["students"]
    scores = {r[0]: float(r[-1]) for r in rows[1:]}
    assert scores["a_honest"] == scores["b_sleeper"] > scores["c_wrong"]


def test_nothing_of_the_killed_run_is_left_after_the_rerun(killed_and_rerun):
    out = killed_and_rerun["out"]
    assert killed_and_rerun["run_folders"], "the killed run made no work folder"
    for folder in killed_and_rerun["run_folders"]:
        assert not folder.exists(), folder
    assert killed_and_rerun["left_in_temp"] == []
    assert [p for p in out.rglob("*") if ".partial-" in p.name] == []
    assert (out / LOCK_NAME).exists()  # the lock file stays; its flock died with the process


# -- missing tools -------------------------------------------------------------------------------
@pytest.fixture
def tiny_class(tmp_path):
    notebook(tmp_path / "subs" / "solo", "x = 1")
    return tmp_path


def test_bubblewrap_requested_but_missing_exits_with_the_fix(tiny_class):
    env = dict(os.environ, PATH=str(tiny_class))  # no bwrap on this PATH
    done = grade(tiny_class / "subs", "--out", tiny_class / "out", "--sandbox", "bwrap", env=env)
    assert done.returncode != 0
    assert "apt-get install bubblewrap" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tiny_class / "out" / "solo").exists()


def test_bubblewrap_missing_in_auto_mode_warns_and_grades(tmp_path):
    (tmp_path / "subs" / "solo").mkdir(parents=True)
    (tmp_path / "subs" / "solo" / FILE).write_text("not a notebook")  # nothing to run: fast
    env = dict(os.environ, PATH=str(tmp_path))
    done = grade(tmp_path / "subs", "--out", tmp_path / "out", "--sandbox", "auto", env=env)
    assert done.returncode == 0, done.stderr
    assert "bubblewrap is unavailable" in done.stderr
    assert (tmp_path / "out" / "solo" / "results.json").exists()


def test_ipykernel_missing_exits_with_the_fix(tiny_class):
    code = (
        "import sys; sys.modules['ipykernel'] = None\n"
        "from autograder.__main__ import main\n"
        f"sys.exit(main(['grade', {str(tiny_class / 'subs')!r}, '--out', "
        f"{str(tiny_class / 'out')!r}, '--quiet']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode != 0
    assert "pip install ipykernel" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unexpected_failure_on_one_student_is_theirs_and_the_run_goes_on(tmp_path, monkeypatch):
    import autograder.grading.student as grade_module
    from autograder.__main__ import main

    for student in ("alice", "bob"):
        (tmp_path / "subs" / student).mkdir(parents=True)  # no notebooks: no sandbox needed
    real = grade_module._grade_student

    def failing(student, *args):
        if student == "bob":
            raise RecursionError("maximum recursion depth exceeded")
        return real(student, *args)

    monkeypatch.setattr(grade_module, "_grade_student", failing)
    out = tmp_path / "out"
    code = main(["grade", str(tmp_path / "subs"), "--out", str(out), "--quiet", "--secret", "s"])
    assert code == 1  # an internal error is reported ...
    rows = list(csv.reader((out / "grades.csv").open()))
    assert [r[0] for r in rows[1:]] == ["alice", "bob"]  # ... and everyone is in the report
    bob = json.loads((out / "bob" / "results.json").read_text())
    assert bob["internal_error"] and "RecursionError" in bob["output"]
    monkeypatch.setattr(grade_module, "_grade_student", real)
    code = main(["grade", str(tmp_path / "subs"), "--out", str(out), "--quiet", "--secret", "s"])
    assert code == 0  # the next run grades bob again, without --force
    assert "internal_error" not in json.loads((out / "bob" / "results.json").read_text())
