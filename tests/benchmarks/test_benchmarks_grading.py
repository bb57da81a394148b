"""benchmarks/grade_vs_nbgrader.py --quick: both graders grade the same two students and the
script ends with its JSON line. No timing is asserted (the machine decides that), only that the
numbers exist, agree with each other and that both graders really graded: the correct student
scores, the one who submitted the released stubs scores 0.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from fixtures import load_script

import autograder

REPO = Path(autograder.__file__).resolve().parent.parent


@pytest.mark.slow
def test_quick_benchmark_grades_with_both_and_ends_with_its_json_line():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "grade_vs_nbgrader.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ, COURSE_SECRET="test-benchmark-secret"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    result = json.loads(last)
    assert result["students"] == 2 and result["notebooks"] == 1
    ours, theirs = result["ours_seconds_per_student"], result["nbgrader_seconds_per_student"]
    assert ours > 0 and theirs > 0 and math.isfinite(ours) and math.isfinite(theirs)
    assert result["ratio"] == pytest.approx(theirs / ours, rel=0.01)
    assert result["nproc"] == os.cpu_count() and result["cpu"]
    # s01 submitted a correct notebook, s02 the released stubs (the script alternates them)
    assert set(result["ours_scores"]) == set(result["nbgrader_scores"]) == {"s01", "s02"}
    assert result["ours_scores"]["s01"] > 0 and result["ours_scores"]["s02"] == 0
    assert result["nbgrader_scores"]["s01"] > 0 and result["nbgrader_scores"]["s02"] == 0
    assert "machine:" in done.stdout and "s/student" in done.stdout
    # CPU time of each grader's whole process tree, per student, and their ratio
    ours_cpu = result["ours_cpu_seconds_per_student"]
    theirs_cpu = result["nbgrader_cpu_seconds_per_student"]
    assert ours_cpu > 0 and theirs_cpu > 0 and math.isfinite(ours_cpu + theirs_cpu)
    assert result["cpu_ratio"] == pytest.approx(theirs_cpu / ours_cpu, rel=0.01)
    assert result["cpu_method"] in {"cgroup v1 cpuacct", "cgroup v2", "rusage"}
    assert result["workers"] == 1  # per CPU, like nbgrader's serial autograde
    assert result["same_fractions"] is True
    assert result["same_verdicts_per_name"] is True
    assert len(result["load_average_at_start"]) == len(result["load_average_at_end"]) == 3


def test_our_points_are_counted_as_nbgrader_counts_them_a_whole_name_or_nothing():
    """nbgrader's test cell of a graded name scores all of its points or none; ours give each
    test its share. Counted nbgrader's way: a name whose every test passed, and nothing else."""
    bench = load_script(REPO / "benchmarks" / "grade_vs_nbgrader.py")
    nb = [SimpleNamespace(stem="08_real_models"), SimpleNamespace(stem="07_modern_lm")]

    def test(notebook, function, score, top):
        return {"notebook": notebook, "function": function, "score": score, "max_score": top}

    payload = {
        "tests": [
            test("08_real_models", "GroupedQueryAttention", 0.0, 2.0),  # one failed: 0 of 2.5
            test("08_real_models", "GroupedQueryAttention", 0.5, 0.5),
            test("08_real_models", "kv_cache_bytes", 1.5, 1.5),  # all passed: 2
            test("08_real_models", "kv_cache_bytes", 0.5, 0.5),
            test("07_modern_lm", "rms_norm", 3.0, 3.0),  # all passed: 3
            test("06_autoregressive_lm", "GPT", 7.0, 7.0),  # not a notebook of this class
        ]
    }
    assert bench.whole_names_score(payload, nb) == 2 + 3


@pytest.mark.slow
def test_one_cpu_grades_one_full_submission_pinned_to_cpu_0_and_ends_with_its_json_line():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "grade_vs_nbgrader.py"), "--one-cpu"]
        + ["--runs", "1"],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ, COURSE_SECRET="test-benchmark-secret"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["student"] == "ada" and result["runs"] == 1
    # ada submitted the six solutions: full marks, on the one run
    assert result["score"] == result["max_score"] > 0 and result["same_score_every_run"]
    (wall,) = result["one_cpu_wall_seconds"]
    (cpu,) = result["one_cpu_cpu_seconds"]
    assert result["one_cpu_wall_seconds_median"] == wall > 0
    assert result["one_cpu_cpu_seconds_median"] == cpu > 0 and math.isfinite(cpu)
    assert result["cpu_method"] in {"cgroup v1 cpuacct", "cgroup v2", "rusage"}
    assert len(result["load_averages"]) == 2 and all(len(x) == 3 for x in result["load_averages"])
    assert "run 1:" in done.stdout and "on CPU 0" in done.stdout
