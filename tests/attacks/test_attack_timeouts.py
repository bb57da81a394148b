"""Attacks on the driver's timeout paths by a student's own code (the kernel is theirs).

A driver cell hit by a KeyboardInterrupt the watchdog did not send runs once more; the student
can raise that interrupt on purpose, so the second run must not bring a second budget.
"""

import numpy as np
import pytest
from fixtures import call_request, notebook

from autograder.sandbox import Limits, NotebookJob, Sandbox

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

BURN_THEN_INTERRUPT_ONCE = """\
import time
calls = []
def similarity(query, keys):
    calls.append(1)
    end = time.process_time() + 2.0
    while time.process_time() < end:
        pass
    if len(calls) == 1:
        raise KeyboardInterrupt
    return keys @ query
"""


def test_an_interrupt_raised_on_purpose_does_not_buy_the_tests_a_second_budget(tmp_path):
    """The tests of a name have 3 CPU seconds; the student's function uses 2 of them, raises
    KeyboardInterrupt (the serve cell then runs again), and uses 2 more: 4 in all, which is
    more than the name's budget, so its answer must not be taken."""
    folder = notebook(tmp_path / "mal", "01_soft_lookup.ipynb", BURN_THEN_INTERRUPT_ONCE)
    request_dir = tmp_path / "requests"
    call_request(request_dir, "similarity", np.ones(2), np.eye(2), seconds=10)
    box = Sandbox(Limits(timeout=30, startup_seconds=60))
    try:
        job = NotebookJob(
            "01_soft_lookup", "01_soft_lookup.ipynb", request_dir, {"similarity": 3.0}
        )
        run = box.run(folder, [job], tmp_path / "work")["01_soft_lookup"]
    finally:
        box.close()
    assert "3 s in total" in run.notes.get("similarity", "")
    assert not (run.responses / "similarity" / "000_00" / "response.json").exists()
