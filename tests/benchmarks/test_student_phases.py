"""benchmarks/student_phases.py: one student's grading CPU split by the sandbox's own clock.

No timing is asserted, only that the split is one: every phase the driver's readings bound is a
non-negative span in the order the driver runs them (a reading moved out of its place shows as a
negative phase), the readings account for the sandbox's CPU, and the hidden tests really ran.
"""

import shutil
from pathlib import Path

import pytest
from fixtures import load_script

import autograder

REPO = Path(autograder.__file__).resolve().parent.parent
PHASES = load_script(REPO / "benchmarks" / "student_phases.py")


@pytest.mark.slow
def test_a_correct_students_cpu_is_split_into_ordered_phases_of_every_notebook(tmp_path):
    student = tmp_path / "ada"
    student.mkdir()
    for name in ("01_soft_lookup.ipynb", "05_transformer_block.ipynb"):  # NumPy, then torch
        shutil.copy(REPO / "examples" / "class" / "ada" / name, student / name)
    row = PHASES.grade_one(student, tmp_path / "run")
    assert row["notebooks"] == 2 and len(row["kernel_by_notebook"]) == 2
    assert row["score"] > 0  # her hidden tests ran and passed
    assert row["total"] > row["sandbox"] > 0 and row["parent"] > 0
    for phase in ("start", *PHASES.PHASES):
        assert row[phase] >= 0, (phase, row)
    assert row["start"] > 0 and row["cells"] > 0 and row["tests"] > 0
    # the readings cover the sandbox: what they miss is the driver's end (results.json rounds
    # its CPU to 0.01 s)
    assert -0.02 <= row["rest"] < 0.5 * row["sandbox"], row
