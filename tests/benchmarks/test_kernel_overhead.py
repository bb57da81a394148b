"""benchmarks/kernel_overhead.py: ipykernel and a bare IPython shell, forked alike, side by side.

No timing is asserted (the machine decides that), only that both were really measured and that
the script's line adds up: every run's figures are positive, the medians are of those runs and
the ratios are of the medians.
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
def test_both_kernels_are_measured_and_the_ratios_are_of_the_medians():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "kernel_overhead.py"), "--cells", "20"]
        + ["--runs", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["cells"] == 20 and result["nproc"] and result["cpu"]
    for name, values in result["runs"].items():
        assert len(values) == 3 and all(v > 0 for v in values), name
        assert result[name] == pytest.approx(statistics.median(values), abs=1e-3), name
    start = result["ipykernel_start_ms"] / result["bare_start_ms"]
    cell = result["ipykernel_cell_ms"] / result["bare_cell_ms"]
    assert result["start_ratio"] == pytest.approx(start, rel=0.01)
    assert result["cell_ratio"] == pytest.approx(cell, rel=0.01)
