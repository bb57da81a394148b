"""The seconds a student's code may spend asleep, for all of their notebooks together
(Limits.asleep_seconds, the driver's Asleep): what counts as asleep, what never does (computing,
waiting for a CPU on a busy machine), and when a budget is stopped.

The unit tests feed Asleep a clock and the run-queue readings as the kernel would give them; the
sandboxed ones (slow) grade notebooks that sleep, and one that computes beside CPU-burning
processes this test starts and stops, with a pool so small that a single interval mistaken for
sleep would stop it."""

import os
import subprocess
import sys

import pytest
from fixtures import notebook

from autograder.sandbox import Limits, NotebookJob, Sandbox
from autograder.sandbox.inside.driver import Asleep, _run_queue_waits

STEM, FILE = "01_soft_lookup", "01_soft_lookup.ipynb"
SECOND = 10**9  # schedstat counts nanoseconds
CPUS = len(os.sched_getaffinity(0))


class Machine:
    """A clock and the threads' run-queue waits, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: dict[str, int] = {"1": 0, "2": 0}
        self.lowered = False

    def read(self):
        return dict(self.waits), self.lowered

    def clock(self) -> float:
        return self.now


def pool(seconds, machine):
    return Asleep(seconds, True, read=machine.read, clock=machine.clock)


def test_sleeping_is_taken_from_the_pool_and_stops_the_budget_once_it_is_spent():
    m = Machine()
    asleep = pool(3.0, m)
    budget = object()
    asleep.begin(0.0, budget)
    stops = []
    for _ in range(10):  # 5 s of sleep, looked at every half second, no CPU, no waiting
        m.now += 0.5
        stops.append(asleep.over(0.0))
    assert stops[:5] == [False] * 5  # 2.5 s: the pool still holds 0.5 s
    assert stops[5] is True  # 3 s asleep: the pool is spent and the budget slept past GRACE
    assert asleep.total == pytest.approx(5.0) and asleep.left == pytest.approx(-2.0)


def test_once_the_pool_is_spent_a_later_budget_gets_a_second_asleep_not_a_fresh_allowance():
    m = Machine()
    asleep = pool(1.0, m)
    asleep.begin(0.0, "cells of 01")
    for _ in range(4):
        m.now += 0.5
        asleep.over(0.0)
    asleep.begin(0.0, "tests of 01")
    m.now += 0.5
    assert not asleep.over(0.0)  # half a second asleep in this budget
    m.now += 0.5
    assert asleep.over(0.0)  # a second: stopped, whatever its own wall would have allowed
    # a cell of the same budget does not start it afresh
    asleep.begin(0.0, "tests of 01")
    m.now += 0.5
    assert asleep.over(0.0)


def test_computing_is_never_asleep():
    m = Machine()
    asleep = pool(0.5, m)
    asleep.begin(0.0, "cells")
    cpu = 0.0
    for _ in range(40):
        m.now += 0.5
        cpu += 0.3  # 60 % of a CPU: a kernel that computes, slowed a little
        assert not asleep.over(cpu)
    assert asleep.total == 0.0


def test_waiting_for_a_cpu_that_others_hold_is_never_asleep():
    """A starved notebook: a tenth of a CPU, its thread on the run queue the rest of the time."""
    m = Machine()
    asleep = pool(0.5, m)
    asleep.begin(0.0, "cells")
    cpu = 0.0
    for _ in range(40):
        m.now += 0.5
        cpu += 0.05
        m.waits["1"] += int(0.45 * SECOND)
        assert not asleep.over(cpu)
    assert asleep.total == 0.0


def test_the_waiting_of_a_thread_that_lowered_its_priority_is_not_counted():
    """nice or SCHED_IDLE makes a thread wait longer: a sleeper must not buy time with it."""
    m = Machine()
    m.lowered = True
    asleep = pool(1.0, m)
    asleep.begin(0.0, "cells")
    stopped = False
    for _ in range(6):
        m.now += 0.5
        m.waits["2"] += int(0.5 * SECOND)
        stopped = stopped or asleep.over(0.0)
    assert stopped


def test_a_thread_that_ended_takes_nothing_and_a_new_one_counts_from_its_start():
    m = Machine()
    asleep = pool(10.0, m)
    asleep.begin(0.0, "cells")
    m.waits["1"] = 9 * SECOND  # a large count in the first reading ...
    m.now += 0.5
    asleep.over(0.0)
    del m.waits["1"]  # ... that ends: its count leaves no negative waiting behind
    m.waits["3"] = int(0.4 * SECOND)  # a thread that started and waited most of the interval
    m.now += 0.5
    before = asleep.total
    asleep.over(0.0)
    assert asleep.total == before  # 0.4 s of waiting in 0.5 s: not asleep


def test_without_schedstat_there_is_no_pool():
    asleep = Asleep(10.0, True, read=lambda: None)
    asleep.begin(0.0, "cells")
    assert not asleep.enabled and not asleep.over(0.0)
    assert not Asleep(10.0, False).enabled  # no pid namespace of the sandbox's own
    assert not Asleep(0.0, True).enabled


def test_this_machine_reports_run_queue_waits():
    """The pool rests on /proc/TID/schedstat; where the kernel has none it is off (above)."""
    read = _run_queue_waits()
    assert read is not None and read[0]


# -- in the sandbox --------------------------------------------------------------------------------
def _grade(tmp_path, name, limits, *cells_per_notebook):
    """Notebooks 01 and 02 with the given cells, graded in one sandbox: their runs."""
    folder = tmp_path / name
    stems = [(STEM, FILE), ("02_dot_product_softmax", "02_dot_product_softmax.ipynb")]
    jobs = []
    for (stem, file), cells in zip(stems, cells_per_notebook, strict=False):
        notebook(folder, file, *cells)
        (tmp_path / name / "requests" / stem).mkdir(parents=True)
        jobs.append(NotebookJob(stem, file, tmp_path / name / "requests" / stem, {}))
    box = Sandbox(limits)
    try:
        return box.run(folder, jobs, tmp_path / name / "work")
    finally:
        box.close()


def _sandbox_with_own_pid_namespace():
    box = Sandbox(Limits())
    try:
        return box.mode == "bwrap"
    finally:
        box.close()


@pytest.mark.slow
def test_a_student_who_sleeps_in_every_notebook_is_held_to_one_pool(tmp_path):
    """Each notebook sleeps 8 s in a cell, under budgets whose own idle allowance (60 s) would
    let both finish: with a 3-second pool the first is stopped when the pool is spent, and the
    second, which sleeps only 2.5 s, after a second asleep. The control: the same notebooks
    with no pool finish."""
    if not _sandbox_with_own_pid_namespace():
        pytest.skip("the pool needs the sandbox's own pid namespace (bubblewrap)")
    sleepy = (["import time\ntime.sleep(8)", "after = 1"], ["import time\ntime.sleep(2.5)"])
    limits = dict(timeout=2, startup_seconds=60, idle_seconds=60, spare_cpu_seconds=0)
    runs = _grade(tmp_path, "pooled", Limits(**limits, asleep_seconds=3), *sleepy)
    first, second = runs[STEM], runs["02_dot_product_softmax"]
    for run in (first, second):
        assert run.timed_out, run.cell_errors
        assert "waited without computing" in run.cell_errors[0]["message"]
    runs = _grade(tmp_path, "unpooled", Limits(**limits, asleep_seconds=0), *sleepy)
    assert not runs[STEM].timed_out and not runs["02_dot_product_softmax"].timed_out


COMPUTES = """\
import threading, time
def work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
threads = [threading.Thread(target=work, args=(0.6,)) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()
work(1.5)
done = 1
"""


@pytest.mark.slow
def test_computing_beside_cpu_burning_neighbours_takes_nothing_from_the_pool(tmp_path):
    """A cell that computes (threads, then one) while three processes per CPU burn outside the
    sandbox, so that it gets about a quarter of a CPU, with a pool of half a second: waiting
    for the CPU is not sleep, so it finishes. Each burner has a session of its own, as a
    neighbour's program would: the kernel's autogroups share the CPU between sessions first,
    and burners in this test's session would take only one session's share from the sandbox."""
    if not _sandbox_with_own_pid_namespace():
        pytest.skip("the pool needs the sandbox's own pid namespace (bubblewrap)")
    burn = [sys.executable, "-c", "while True: pass"]
    burners = [subprocess.Popen(burn, start_new_session=True) for _ in range(3 * CPUS)]
    try:
        limits = Limits(timeout=60, startup_seconds=120, asleep_seconds=0.5, spare_cpu_seconds=0)
        runs = _grade(tmp_path, "busy", limits, [COMPUTES], [COMPUTES])
    finally:
        for b in burners:
            b.kill()
            b.wait()
    for run in runs.values():
        assert not run.timed_out and not run.cell_errors, run.cell_errors
