"""The Gradescope field test's own logic, cheaply (the test itself needs debootstrap, a network
mirror and minutes: benchmarks/gradescope_field_test.sh, run by hand): the script parses, the
table says what it should, and each sandbox mode takes away what a container would."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "gradescope_field_test.sh"
HELPER = REPO / "benchmarks" / "gradescope_field.py"


def _field():
    spec = importlib.util.spec_from_file_location("gradescope_field", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses_and_documents_its_options():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0
    for option in ("--suite", "--mirror", "--wheels", "--modes", "--runs", "AUTOGRADER_TORCH"):
        assert option in shown.stdout
    refused = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True)
    assert refused.returncode == 2 and "unknown option --bogus" in refused.stderr


def test_scores_read_from_either_results_schema():
    field = _field()
    gradescope = {"score": 72.5, "extra_data": {"max_score": 88.5}, "tests": []}
    standalone = {"score": 0.0, "max_score": 88.5, "tests": []}
    only_tests = {"score": 3, "tests": [{"max_score": 2}, {"max_score": 2.5}]}
    assert field.score_of(gradescope) == "72.5/88.5"
    assert field.score_of(standalone) == "0/88.5"
    assert field.score_of(only_tests) == "3/4.5"
    assert field.score_of(None) == "no results.json"


def test_the_table_has_a_row_per_image_and_mode_with_scores_and_cpu():
    field = _field()
    rows = [
        {
            "image": "Debian 12",
            "mode": "userns",
            "scores": {"solutions": "88.5/88.5", "blank": "0/88.5", "mistake": "72.5/88.5"},
            "cpu": {"solutions": 4.0, "blank": 5.0, "mistake": 6.0},
        },
        {
            "image": "this machine, standalone",
            "mode": "grade --workers 1",
            "scores": {"solutions": "no results.json"},
            "cpu": {"solutions": 5.25},
        },
    ]
    lines = field.table(rows).split("\n")
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1  # aligned columns
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert cells[0] == ["image", "sandbox mode", "solutions", "blank", "mistake"] + [
        "CPU-s per submission"
    ]
    assert cells[2] == ["Debian 12", "userns", "88.5/88.5", "0/88.5", "72.5/88.5"] + [
        "5.0 (4.0 / 5.0 / 6.0)"
    ]
    assert cells[3][2:] == ["no results.json", "-", "-", "5.2 (5.2)"]


def _allowed(mode, *unshare):
    command = [sys.executable, str(HELPER), "confine", "--mode", mode, "--", "unshare", *unshare]
    return subprocess.run(command + ["true"], capture_output=True, timeout=60).returncode == 0


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the modes take away what root may do (needs root and unshare)",
)
def test_each_mode_takes_away_what_a_container_would():
    if not _allowed("userns", "--user"):
        pytest.skip("this machine refuses user namespaces even unconfined: nothing to take away")
    assert _allowed("userns", "--mount")
    assert not _allowed("no-userns", "--user") and _allowed("no-userns", "--mount")
    assert not _allowed("no-namespaces", "--user") and not _allowed("no-namespaces", "--mount")


def test_runs_are_interleaved_and_the_table_shows_medians(monkeypatch, capsys):
    """Run r of every mode and of the standalone grader back to back (load drifts touch all
    rows alike); the table shows each row's median CPU-s and every score seen."""
    field = _field()
    calls, cpu = [], iter([3.0, 9.0, 5.0, 1.0, 4.0, 2.0])  # userns, standalone, userns, ...

    def gradescope_run(root, mode, notebooks, at):
        calls.append(mode)
        return {"score": 88.5, "max_score": 88.5}, next(cpu), 1.0, "", "stub"

    def standalone_run(notebooks, at):
        calls.append("standalone")
        score = 88.5 if len(calls) < 6 else 80  # a score that changed between runs is shown
        return {"score": score, "max_score": 88.5}, next(cpu), 1.0, "", "stub"

    monkeypatch.setattr(field, "gradescope_run", gradescope_run)
    monkeypatch.setattr(field, "standalone_run", standalone_run)
    args = ["grade", "--root", "/none", "--modes", "userns", "--submissions", "solutions"]
    assert field.main([*args, "--runs", "3"]) == 0
    assert calls == ["userns", "standalone"] * 3
    rows = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [row["cpu"]["solutions"] for row in rows] == [4.0, 2.0]
    assert rows[1]["scores"]["solutions"] == "80/88.5 or 88.5/88.5"
