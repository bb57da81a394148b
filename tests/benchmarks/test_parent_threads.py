"""benchmarks/parent_threads.py: the parent's cases drawn by threads at once and in turns.

No timing is asserted (the machine decides that), only that both ways were really measured on
the same work: both drew the same cases, every run's figures are positive, the medians are of
those runs and the ratios are of the medians.
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import autograder

REPO = Path(autograder.__file__).resolve().parent.parent


@pytest.mark.slow
def test_both_ways_draw_the_same_cases_and_the_ratios_are_of_the_medians():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "parent_threads.py")]
        + ["--students", "2", "--threads", "2", "--runs", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["same_cases"] is True
    assert result["students"] == 2 and result["threads"] == 2 and result["nproc"]
    for name, values in result["runs"].items():
        assert len(values) == 2 and all(v > 0 for v in values), name
        assert result[name] == pytest.approx(statistics.median(values), abs=1e-3), name
    cpu = result["at_once_cpu"] / result["in_turns_cpu"]
    wall = result["at_once_wall"] / result["in_turns_wall"]
    assert result["cpu_ratio"] == pytest.approx(cpu, rel=0.01)
    assert result["wall_ratio"] == pytest.approx(wall, rel=0.01)
