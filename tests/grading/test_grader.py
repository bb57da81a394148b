"""`python -m autograder grade` end to end on a small class built here, with the real probes of
notebook 01 (a dictionary as a soft lookup).

One class is graded once (module fixture, 2 workers); each test reads what it wrote. Students:
a correct one, a stub, known-wrong code, broken files, and notebooks that misbehave (raise, loop,
hog memory, kill their kernel, flood output, try to cheat).
"""

import csv
import importlib
import inspect
import json
import os
import time
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.__main__ import main
from autograder.course.misconceptions import CATALOGUE
from autograder.course.probes import PROBES, build_cases, load_all
from autograder.curriculum import BY_STEM, NOTEBOOKS

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

STEM = "01_soft_lookup"
FILE = f"{STEM}.ipynb"
REPO = Path(autograder.__file__).resolve().parent.parent
REFERENCE_FILE = REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py"
TIMEOUT = 10  # seconds per notebook: the looping student uses it up

load_all()
reference = importlib.import_module(BY_STEM[STEM].reference_path)


def source(fn):
    return inspect.getsource(getattr(reference, fn))


CORRECT = ["import numpy as np", *(source(f) for f in BY_STEM[STEM].graded)]
STUB = ["import numpy as np"] + [
    f"def {name}(*args, **kwargs):\n    raise NotImplementedError()"
    for name in BY_STEM[STEM].graded
]
UNSTABLE_PERCENTAGES = "def percentages(scores):\n    e = np.exp(scores)\n    return e / e.sum()"


def write_notebook(folder, cells, name=FILE):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)


def write_v3(folder, cells):
    folder.mkdir(parents=True, exist_ok=True)
    v3 = nbformat.v3
    nb = v3.new_notebook(
        worksheets=[v3.new_worksheet(cells=[v3.new_code_cell(input=c) for c in cells])]
    )
    (folder / FILE).write_text(v3.writes_json(nb))


def build_class(root):
    write_notebook(root / "full", CORRECT)
    write_notebook(root / "stub", STUB)
    write_notebook(root / "unstable", [*CORRECT, UNSTABLE_PERCENTAGES])
    (root / "corrupt").mkdir()
    (root / "corrupt" / FILE).write_text("this is not a notebook {")
    (root / "empty").mkdir()
    (root / "empty" / FILE).write_bytes(b"")
    write_notebook(root / "nocells", [])
    write_v3(root / "v3", CORRECT)
    (root / "missing").mkdir()
    (root / "missing" / "notes.txt").write_text("I forgot to upload my notebook")
    write_notebook(root / "raises", ["1 / 0", *CORRECT])
    write_notebook(root / "loops", [*CORRECT, "while True:\n    pass", "x = 1"])
    write_notebook(root / "hog", [*CORRECT, "hog = np.ones((2**16, 2**16))  # 32 GB", "after = 1"])
    write_notebook(root / "dies", [*CORRECT, "import os\nos.kill(os.getpid(), 9)"])
    write_notebook(root / "flood", ["for i in range(20_000):\n    print(i, 'x' * 300)", *CORRECT])
    write_notebook(
        root / "cheat",
        [
            *CORRECT,
            "def percentages(scores):\n"
            "    from autograder.course.n01_soft_lookup.reference import percentages as answer\n"
            "    return answer(scores)",
            "def similarity(query, keys):\n"
            f"    open({str(REFERENCE_FILE)!r}).read()\n"
            "    return keys @ query",
            "def lookup(table, query):\n"
            f"    open({str(root / 'full' / FILE)!r}).read()\n"
            "    return table[query]",
        ],
    )
    write_notebook(
        root / "patcher",
        [
            *CORRECT,
            "def percentages(scores):\n    return scores",
            "import numpy as np, builtins\n"
            "np.allclose = lambda *a, **k: True\n"
            "np.isclose = lambda *a, **k: True\n"
            "np.array_equal = lambda *a, **k: True\n"
            "np.testing.assert_allclose = lambda *a, **k: None\n"
            "builtins.print = lambda *a, **k: None",
        ],
    )


STUDENTS = [
    "full", "stub", "unstable", "corrupt", "empty", "nocells", "v3", "missing", "raises",
    "loops", "hog", "dies", "flood", "cheat", "patcher",
]  # fmt: skip


def grade(*argv):
    return main(["grade", *map(str, argv), "--secret", "test-secret", "--quiet"])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    build_class(root / "submissions")
    out = root / "out"
    code = grade(
        root / "submissions", "--out", out, "--workers", 2, "--timeout", TIMEOUT, "--memory", 2
    )
    return {"root": root, "out": out, "code": code}


def results(graded, student):
    return json.loads((graded["out"] / student / "results.json").read_text())


def cases_of(payload, notebook=STEM, function=None):
    return [
        t
        for t in payload["tests"]
        if t["notebook"] == notebook and (function is None or t["function"] == function)
    ]


def nb_score(payload, notebook=STEM):
    return sum(t["score"] for t in cases_of(payload, notebook))


def error_types(payload, notebook=STEM):
    return {e["type"] for e in payload["notebooks"][notebook]["cell_errors"]}


def nb_max(notebook=STEM):
    return sum(case.points for case in build_cases(notebook, 0))


def test_grading_completes_with_exit_code_0(graded):
    assert graded["code"] == 0
    for student in STUDENTS:
        assert (graded["out"] / student / "results.json").is_file(), student
        assert (graded["out"] / student / "feedback.html").is_file(), student


def test_results_json_follows_the_schema(graded):
    payload = results(graded, "unstable")
    assert {"score", "max_score", "tests", "output"} <= set(payload)
    assert payload["score"] == pytest.approx(sum(t["score"] for t in payload["tests"]))
    assert payload["max_score"] == pytest.approx(sum(t["max_score"] for t in payload["tests"]))
    for t in payload["tests"]:
        assert set(t) >= {
            "name", "score", "max_score", "status", "output", "notebook", "function",
            "misconceptions",
        }  # fmt: skip
        assert t["status"] == ("passed" if t["score"] >= t["max_score"] else "failed")
        assert 0 <= t["score"] <= t["max_score"]
        assert all(m in CATALOGUE for m in t["misconceptions"])
    functions = {t["function"] for t in payload["tests"]}
    assert functions == {name for nb in NOTEBOOKS for name in nb.graded if name in PROBES}


def test_a_correct_notebook_gets_full_marks_and_a_stub_zero(graded):
    assert nb_score(results(graded, "full")) == pytest.approx(nb_max())
    assert all(t["status"] == "passed" for t in cases_of(results(graded, "full")))
    stub = results(graded, "stub")
    assert nb_score(stub) == 0
    assert all(t["reason"] == "not-implemented" for t in cases_of(stub))


def test_an_unstable_softmax_is_recognised_and_explained(graded):
    payload = results(graded, "unstable")
    failed = [t for t in cases_of(payload, function="percentages") if t["status"] == "failed"]
    assert failed
    ids = {m for t in failed for m in t["misconceptions"]}
    assert "softmax-unstable" in ids
    html = (graded["out"] / "unstable" / "feedback.html").read_text()
    assert "softmax-unstable" in html
    assert CATALOGUE["softmax-unstable"].hint.split(";")[0] in html
    assert all(t["status"] == "passed" for t in cases_of(payload, function="similarity"))


def test_grades_csv_has_a_column_per_notebook(graded):
    with open(graded["out"] / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", *(nb.stem for nb in NOTEBOOKS), "total"]
    assert sorted(r["student"] for r in rows) == sorted(STUDENTS)
    for row in rows:
        payload = results(graded, row["student"])
        assert float(row["total"]) == pytest.approx(payload["score"])
        assert float(row[STEM]) == pytest.approx(nb_score(payload))


def test_the_class_summary_names_what_to_reteach(graded):
    summary = json.loads((graded["out"] / "summary.json").read_text())
    assert summary["students"] == len(STUDENTS)
    assert "softmax-unstable" in {m["id"] for m in summary["misconceptions"]}
    assert "what to re-teach" in (graded["out"] / "summary.md").read_text()


@pytest.mark.parametrize(
    ("student", "words"),
    [
        ("corrupt", "not a valid notebook"),
        ("empty", "empty"),
        ("nocells", "no code cells"),
        ("missing", "was not found"),
    ],
)
def test_unusable_files_score_zero_with_a_message(graded, student, words):
    payload = results(graded, student)
    assert nb_score(payload) == 0
    assert words in payload["output"]
    assert all(words in t["output"] for t in cases_of(payload))


def test_an_old_notebook_format_is_converted(graded):
    payload = results(graded, "v3")
    assert nb_score(payload) == pytest.approx(nb_max())
    assert "converted" in payload["output"]


def test_a_cell_that_raises_is_reported_and_the_rest_graded(graded):
    payload = results(graded, "raises")
    assert nb_score(payload) == pytest.approx(nb_max())
    assert "ZeroDivisionError" in payload["output"]
    assert "ZeroDivisionError" in (graded["out"] / "raises" / "feedback.html").read_text()


def test_an_infinite_loop_is_stopped_and_what_came_before_graded(graded):
    payload = results(graded, "loops")
    assert nb_score(payload) == pytest.approx(nb_max())
    assert "Timeout" in error_types(payload)


def test_a_memory_hog_gets_a_clear_message(graded):
    payload = results(graded, "hog")
    assert "MemoryError" in payload["output"]
    assert "out of memory" in payload["output"]
    assert nb_score(payload) == pytest.approx(nb_max())


def test_a_kernel_that_dies_scores_zero_with_a_message(graded):
    payload = results(graded, "dies")
    assert nb_score(payload) == 0
    assert "KernelDied" in error_types(payload) and payload["output"]
    assert all(t["reason"] == "lost" for t in cases_of(payload))


def test_a_flood_of_output_changes_nothing(graded):
    assert nb_score(results(graded, "flood")) == pytest.approx(nb_max())
    assert (graded["out"] / "flood" / "results.json").stat().st_size < 200_000


def test_reading_the_reference_or_another_student_fails(graded):
    payload = results(graded, "cheat")
    for function in ("percentages", "similarity", "lookup"):
        assert all(t["status"] == "failed" for t in cases_of(payload, function=function))

    def said(function):
        return " ".join(t["output"] for t in cases_of(payload, function=function))

    assert "ModuleNotFoundError" in said("percentages")
    assert "FileNotFoundError" in said("similarity")
    assert "FileNotFoundError" in said("lookup")


def test_monkeypatching_numpy_does_not_change_verdicts(graded):
    payload = results(graded, "patcher")
    assert all(t["status"] == "failed" for t in cases_of(payload, function="percentages"))
    assert all(t["status"] == "passed" for t in cases_of(payload, function="similarity"))


def test_a_rerun_skips_up_to_date_students_and_force_regrades(graded, capsys):
    out, submissions = graded["out"], graded["root"] / "submissions"
    # the options the class was graded with: other limits are another configuration, regraded
    same = ("--out", out, "--workers", 2, "--timeout", TIMEOUT, "--memory", 2)
    before = {s: (out / s / "results.json").stat().st_mtime_ns for s in STUDENTS}
    capsys.readouterr()
    assert grade(submissions, *same) == 0
    assert f"skipped {len(STUDENTS)} up to date" in capsys.readouterr().out
    assert before == {s: (out / s / "results.json").stat().st_mtime_ns for s in STUDENTS}

    later = time.time() + 5  # a newer file time alone is no new work
    os.utime(submissions / "stub" / FILE, (later, later))
    assert grade(submissions, *same) == 0
    assert "graded 0 student(s)" in capsys.readouterr().out
    # new content is, whatever its file time says (a commit dated a year back)
    nb = nbformat.read(submissions / "stub" / FILE, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("edited"))
    nbformat.write(nb, submissions / "stub" / FILE)
    earlier = time.time() - 365 * 86400
    os.utime(submissions / "stub" / FILE, (earlier, earlier))
    assert grade(submissions, *same) == 0
    assert "graded 1 student(s)" in capsys.readouterr().out
    after = {s: (out / s / "results.json").stat().st_mtime_ns for s in STUDENTS}
    assert [s for s in STUDENTS if after[s] != before[s]] == ["stub"]

    # one student's folder as PATH; --force regrades although it is up to date
    assert grade(submissions / "full", *same, "--force") == 0
    assert "graded 1 student(s)" in capsys.readouterr().out
    assert (out / "full" / "results.json").stat().st_mtime_ns != before["full"]


def test_grading_runs_one_student_more_than_the_cpus_it_may_use(monkeypatch):
    """Each sandbox is capped at one CPU and the parent's work for a student leaves it idle, so
    the default is the CPUs this process may use (its affinity, not the machine's count) + 1."""
    import argparse
    import os

    from autograder import __main__ as cli

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})
    parser = argparse.ArgumentParser()
    cli.sandbox_options(parser)
    assert parser.parse_args([]).workers == 4
    assert parser.parse_args(["--workers", "1"]).workers == 1
