"""benchmarks/waiting_variants.py: a student's cases built with the variants worked out at once
or left waiting.

No timing is asserted (the machine decides that), only that both ways were really measured on
the same work: both made the same requests, the variants left waiting were there and equal the
others once worked out, every run's figure is positive, the medians are of those runs and the
ratio is of the medians.
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
def test_both_ways_build_the_same_cases_and_the_ratio_is_of_the_medians():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "waiting_variants.py")]
        + ["--students", "1", "--runs", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["same_cases"] is True and result["same_variants"] is True
    assert result["students"] == 1 and result["waited_per_student"] > 0 and result["nproc"]
    for name, values in result["runs"].items():
        assert len(values) == 2 and all(v > 0 for v in values), name
        assert result[name] == pytest.approx(statistics.median(values), abs=1e-3), name
    ratio = result["at_once_cpu"] / result["waiting_cpu"]
    assert result["cpu_ratio"] == pytest.approx(ratio, rel=0.01)
