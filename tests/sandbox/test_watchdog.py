"""The driver's watchdog and its interrupts: a busy machine never turns an interrupt into a kill,
and an interrupt delivered late never costs a student the tests of a name.

The watchdog reads the CPU clock it is given, so these tests drive a clock of their own: the
kernel stand-in is a real process that ignores SIGINT (it records each one in a file).
"""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from fixtures import answer, call_request, notebook, run_one

from autograder.sandbox import Limits, NotebookJob, Sandbox
from autograder.sandbox.inside.driver import Watchdog

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

STAND_IN = """\
import os, signal, sys, time
seen = sys.argv[1]
def note(signum, frame):
    with open(seen, "a") as handle:
        handle.write("INT\\n")
signal.signal(signal.SIGINT, note)
os.setsid()
open(seen, "a").close()
while True:
    time.sleep(0.05)
"""


class Clock:
    """The sandbox's CPU seconds, as the test says."""

    def __init__(self):
        self.now = 0.0

    def __call__(self, pid=0):
        return self.now


def wait_for(predicate, seconds=30.0):
    """Poll until predicate() holds (True) or the time is up (False): not a timed assertion, a
    bound on waiting for something that must happen."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture
def kernel(tmp_path):
    """A kernel stand-in (a process that records each SIGINT and ignores it) and a watchdog on
    the test's own clock: (process, interrupts seen so far, clock, watchdog)."""
    seen = tmp_path / "seen"
    process = subprocess.Popen([sys.executable, "-c", STAND_IN, str(seen)])
    try:
        assert wait_for(seen.exists)
        clock = Clock()
        yield process, lambda: seen.read_text().count("INT"), clock, Watchdog(clock)
    finally:
        process.kill()
        process.wait()


def test_a_kernel_that_uses_no_more_cpu_after_its_interrupt_is_not_killed_however_long_it_takes(
    kernel,
):
    process, interrupts, clock, watchdog = kernel
    watchdog.arm(process.pid, 2.0)
    clock.now = 2.5  # its CPU seconds are used up
    assert wait_for(lambda: interrupts() == 1)
    assert watchdog.fired
    # a busy machine: the kernel takes its time to leave the cell, using no CPU of its own
    time.sleep(3 * Watchdog.TICK + 1.0)
    assert process.poll() is None
    assert interrupts() == 1  # one interrupt, never repeated
    assert watchdog.disarm() is True


def test_a_kernel_that_keeps_computing_after_its_interrupt_is_killed(kernel):
    process, interrupts, clock, watchdog = kernel
    watchdog.arm(process.pid, 2.0)
    clock.now = 2.5
    assert wait_for(lambda: interrupts() == 1)
    clock.now = 2.0 + Watchdog.GRACE_CPU + 0.1  # it computed on, ignoring the interrupt
    assert wait_for(lambda: process.poll() is not None)
    assert process.returncode == -signal.SIGKILL


def test_a_kernel_waiting_on_something_deaf_to_signals_is_killed_after_the_wall_grace(
    kernel, monkeypatch
):
    monkeypatch.setattr(Watchdog, "GRACE_WALL", 1.0)
    process, interrupts, clock, watchdog = kernel
    watchdog.arm(process.pid, 1.0)
    clock.now = 1.5
    assert wait_for(lambda: interrupts() == 1)
    assert wait_for(lambda: process.poll() is not None)
    assert process.returncode == -signal.SIGKILL


def test_a_keyboard_interrupt_the_watchdog_did_not_send_does_not_cost_the_tests(tmp_path):
    """An interrupt that lands while the tests of a name run (a late one, meant for an earlier
    cell) is not a verdict: the tests run again. Here the student's function interrupts its own
    kernel on its first call only."""
    box = Sandbox(Limits(timeout=30, startup_seconds=60))
    try:
        folder = notebook(
            tmp_path / "ivy",
            "01_soft_lookup.ipynb",
            "import os, signal\ncalls = []\n"
            "def similarity(query, keys):\n"
            "    calls.append(1)\n"
            "    if len(calls) == 1:\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "        import time\n"
            "        time.sleep(5)\n"
            "    return keys @ query",
        )
        run = run_one(box, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    finally:
        box.close()
    assert run.cell_errors == []
    assert "similarity" not in run.notes
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))


def test_an_interrupt_the_student_raises_every_time_still_scores_nothing(tmp_path):
    box = Sandbox(Limits(timeout=30, startup_seconds=60))
    try:
        folder = notebook(
            tmp_path / "jay",
            "01_soft_lookup.ipynb",
            "def similarity(query, keys):\n    raise KeyboardInterrupt",
        )
        run = run_one(box, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    finally:
        box.close()
    assert "similarity" in run.notes
    assert not (run.responses / "similarity" / "000_00" / "response.json").exists()


def run_with_seconds(tmp_path, folder, seconds):
    request_dir = tmp_path / "requests"
    call_request(request_dir, "similarity", np.ones(2), np.eye(2), seconds=seconds)
    box = Sandbox(Limits(timeout=30, startup_seconds=60))
    try:
        job = NotebookJob(
            "01_soft_lookup", "01_soft_lookup.ipynb", request_dir, {"similarity": 30.0}
        )
        return box.run(folder, [job], tmp_path / "work")["01_soft_lookup"]
    finally:
        box.close()


def test_a_request_limit_counts_cpu_seconds_and_a_waiting_call_meets_a_wall_backstop(tmp_path):
    """A call that waits 2 s (as one slowed down by a busy machine would take longer) is not
    timed out by a 1-second limit; a call that waits forever is, by the wall-clock backstop."""
    slow = notebook(
        tmp_path / "kim",
        "01_soft_lookup.ipynb",
        "import time\ndef similarity(query, keys):\n    time.sleep(2)\n    return keys @ query",
    )
    raw, reader = answer(run_with_seconds(tmp_path / "slow", slow, 1.0), "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))

    stuck = notebook(
        tmp_path / "lee",
        "01_soft_lookup.ipynb",
        "import time\ndef similarity(query, keys):\n    while True:\n        time.sleep(0.1)",
    )
    raw, _ = answer(run_with_seconds(tmp_path / "stuck", stuck, 1.0), "similarity")
    assert raw["error"]["type"] == "Timeout"
