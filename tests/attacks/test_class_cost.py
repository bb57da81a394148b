"""A class costs what its honest work costs (issue 29, item 2): the attacks that made one student
cost many, each held to its budget, and the pieces that do it.

The sandboxed tests (marked slow) grade one crafted notebook each: children whose CPU a kernel
hides by ignoring SIGCHLD, a helper that loops under every hidden test, a sleeper, a flood of
output. The others check the budgets' arithmetic, the parent's own CPU watch, the starvation
rule and the fallback's per-process limit without a sandbox.
"""

import importlib
import math
import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from fixtures import answer, call_request, notebook

import autograder.sandbox as sandbox_module
from autograder.config import limits_from_args
from autograder.grading import selftest
from autograder.harness.wire import Reader, Writer
from autograder.sandbox import Limits, NotebookJob, Sandbox, cgroups
from autograder.sandbox.inside.driver import CpuClock, _proc_cpu, _tree_cpu
from autograder.sandbox.limits import budget, cpu_budget, cpu_clock, preexec
from autograder.sandbox.starvation import Sampler

harness = importlib.import_module("autograder.harness.serve")  # the module, not its serve()
STEM, FILE = "01_soft_lookup", "01_soft_lookup.ipynb"
SIMILARITY = "def similarity(query, keys):\n    return keys @ query"


# -- the budgets ----------------------------------------------------------------------------------
def test_each_notebook_has_a_cells_and_a_tests_budget_and_the_sandbox_their_sum():
    limits = Limits(timeout=50)
    assert limits.notebook_budgets(STEM, {"a": 30.0, "b": 40.0}) == (50, 50)
    assert limits.notebook_budgets(STEM, {"a": 12.0}) == (50, 12.0)  # never more than asked
    jobs = [NotebookJob(STEM, FILE, None, {"a": 12.0}), NotebookJob("02_x", "x", None, {"b": 99})]
    # and the spare seconds all of a student's notebooks share, once (not once per notebook)
    spare = limits.spare_cpu_seconds
    assert spare > 0
    assert cpu_budget(limits, jobs) == (50 + 12 + 30) + (50 + 50 + 30) + spare
    assert cpu_budget(limits, []) == 0
    # on the wall: the same budgets, the kernel's start and a slack, and 15 s of idle allowance
    # for the cells and 15 s for the tests, not a multiple of the CPU; the spare seconds once
    per_job = [(50 + 12 + 120 + 45) + 30, (50 + 50 + 120 + 45) + 30]
    assert budget(limits, jobs) == pytest.approx(sum(per_job) + spare)
    starved = [NotebookJob(STEM, FILE, None, {"a": 12.0}, wall_factor=4.0)]
    assert budget(limits, starved) == pytest.approx(4 * (50 + 12 + 120 + 45 + spare) + 30)


def test_a_budgets_wall_is_its_cpu_and_a_fixed_idle_allowance():
    limits = Limits()
    assert limits.wall_seconds(2.0) == 17.0 and limits.wall_seconds(100.0) == 115.0
    assert limits.wall_seconds(2.0, factor=4.0) == 23.0  # a starved notebook's second run


def test_the_measured_budgets_are_three_times_the_solutions_cells_and_tests_with_a_floor():
    derived = Limits(timeout_given=False)
    budgets = derived.derive(
        {STEM: 0.4, "06_autoregressive_lm": 6.5}, {STEM: 0.1, "06_autoregressive_lm": 2.5}
    )
    # 01: cells 0.1 s -> 0.3, the 0.5 s floor; tests 0.3 s -> 0.9. 06: 3 x 2.5, 3 x 4.0
    assert budgets == {STEM: (0.5, 0.9), "06_autoregressive_lm": (7.5, 12.0)}
    assert derived.notebook_budgets("06_autoregressive_lm", {"a": 100.0}) == (7.5, 12.0)
    assert derived.notebook_budgets("06_autoregressive_lm", {"a": 3.0}) == (7.5, 3.0)
    assert derived.notebook_budgets("03_matrix_attention", {"a": 100.0}) == (300.0, 100.0)
    # a record without the cells' figures (an older self-test): both get 3x the whole
    older = Limits(timeout_given=False)
    assert older.derive({"06_autoregressive_lm": 6.5}) == {"06_autoregressive_lm": (19.5, 19.5)}
    given = Limits(timeout=60)
    assert given.derive({STEM: 0.4}) == {} and given.notebook_budgets(STEM, {"a": 99}) == (60, 60)


def test_timeout_given_or_not_on_the_command_line():
    assert limits_from_args(SimpleNamespace(timeout=None)).timeout_given is False
    given = limits_from_args(SimpleNamespace(timeout=12.0))
    assert given.timeout_given and given.timeout == 12.0


def test_the_self_tests_measurement_is_read_back_as_numbers_of_known_notebooks_only(capsys):
    report = {
        "cpu": {STEM: 1.5, "02_dot_product_softmax": float("nan"), "nope": 3, "03_x": "9"},
        "04_multihead_attention": -1,
    }
    assert selftest.measured_cpu(report) == {STEM: 1.5}
    assert selftest.measured_cpu({"cpu": [1, 2]}) == {}
    limits = Limits(timeout_given=False)
    assert selftest.apply_budgets(limits, report, sys.stdout) == {STEM: (4.5, 4.5)}  # 3 x 1.5
    assert "01 4.5+4.5" in capsys.readouterr().out
    report["cpu_cells"] = {STEM: 1.0, "02_dot_product_softmax": 2.0}
    assert selftest.apply_budgets(limits, report, sys.stdout) == {STEM: (3.0, 1.5)}
    assert "01 3+1.5" in capsys.readouterr().out
    assert selftest.apply_budgets(Limits(), report, sys.stdout) == {}  # --timeout wins


# -- the parent's own CPU watch, and no second run for what the student spent ------------------
class FakeProc:
    def __init__(self, ends_after=None):
        self.polls, self.ends_after = 0, ends_after

    def wait(self, timeout=None):
        self.polls += 1
        if self.ends_after is not None and self.polls >= self.ends_after:
            return 0
        raise subprocess.TimeoutExpired("sandbox", timeout)


def test_the_parent_kills_a_sandbox_whose_cgroup_counted_more_than_its_cpu_budget():
    used = SimpleNamespace(cpu_used=lambda: 31.0)
    assert sandbox_module._wait(FakeProc(), 3600, 30.0, used) == "cpu"
    under = SimpleNamespace(cpu_used=lambda: 29.0)
    assert sandbox_module._wait(FakeProc(ends_after=3), 3600, 30.0, under) == ""
    unmeasured = SimpleNamespace(cpu_used=lambda: None)
    assert sandbox_module._wait(FakeProc(), 0.0, 30.0, unmeasured) == "wall"


def test_a_sandbox_killed_for_its_cpu_gets_no_second_run():
    job = NotebookJob(STEM, FILE, None, {"similarity": 10.0})
    unfinished = {"started": True, "finished": False}
    box = SimpleNamespace(limits=Limits())
    for over, expected in (("cpu", ""), ("", "died")):
        sampler = SimpleNamespace(over=over, starved=lambda *a: False)
        assert Sandbox._suspect(box, job, (unfinished, sampler)) == expected
    sampler = SimpleNamespace(over="wall", starved=lambda *a: False)
    assert Sandbox._suspect(box, job, (unfinished, sampler)) == ""  # not starved: its own


class FakeGroup:
    def __init__(self, slowed):
        self.cpu, self.wait, self.slowed = 0.0, 0.0, slowed

    def cpu_seconds(self):
        return self.cpu

    def wait_seconds(self, with_priority=False):
        return (self.wait, self.slowed) if with_priority else self.wait


@pytest.mark.parametrize("slowed", [False, True])
def test_a_sandbox_that_lowered_its_own_priority_is_never_starved(slowed):
    """Little CPU while its threads wait for one: starved, unless it niced itself (what a
    student does to look starved next to busy neighbours and buy a longer second run)."""
    group = FakeGroup(slowed)
    sampler = Sampler(group)
    sampler.stop()
    sampler.samples = [(0.0, 0.0, 0.0), (10.0, 1.0, 9.0)]  # 1 CPU-s in 10 s, 9 s waiting
    assert sampler.starved(0.0, 10.0) is (not slowed)


def test_a_thread_that_lowered_its_priority_is_seen():
    niced = subprocess.Popen(
        [sys.executable, "-c", "import os, time; os.nice(5); print(1, flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        niced.stdout.readline()
        assert cgroups.lowered_priority(niced.pid)
        assert not cgroups.lowered_priority(os.getpid())
    finally:
        niced.kill()
        niced.wait()


# -- the clocks ---------------------------------------------------------------------------------
def test_the_cgroup_clock_is_read_through_a_descriptor_the_parent_passes_in(tmp_path):
    usage = tmp_path / "cpuacct.usage"
    usage.write_text("2000000000\n")
    group = SimpleNamespace(cpu_usage_file=lambda: (str(usage), 1e-9))
    fd = os.open(usage, os.O_RDONLY)
    try:
        spec = cpu_clock(group, True, fd)
        assert spec == {"kind": "cgroup-fd", "fd": fd, "unit": 1e-9}
        clock = CpuClock(spec)
        assert clock() == pytest.approx(2.0)
        usage.write_text("5000000000\n")  # read afresh each time, through the same descriptor
        assert clock() == pytest.approx(5.0)
    finally:
        os.close(fd)
    assert cpu_clock(None, True) == {"kind": "namespace"}
    assert cpu_clock(group, False) == {"kind": "cgroup", "path": str(usage), "unit": 1e-9}
    assert cpu_clock(None, False) == {"kind": "process"}


@pytest.mark.slow  # spawns processes that burn CPU
def test_without_a_cgroup_the_driver_counts_its_live_descendants():
    burn = (
        "import sys, time\nsys.stdin.readline()\nend = time.process_time() + 1.0\n"
        "while time.process_time() < end: pass\ntime.sleep(60)"
    )
    burner = subprocess.Popen([sys.executable, "-c", burn], stdin=subprocess.PIPE)
    try:
        before = _tree_cpu(os.getpid())
        burner.stdin.write(b"go\n")
        burner.stdin.flush()
        for _ in range(1200):  # a bound on waiting, not a timed assertion
            if _proc_cpu(burner.pid) >= 0.9:  # the child's own CPU, as /proc counts it
                break
            time.sleep(0.05)
        assert _tree_cpu(os.getpid()) - before >= 0.8
    finally:
        burner.kill()
        burner.wait()


def test_without_a_cgroup_every_process_is_held_to_the_sandboxs_cpu_budget():
    def limit_it():
        preexec(Limits(memory_bytes=2**34), None, 42.0)

    shown = subprocess.run(
        ["sh", "-c", "ulimit -t"], preexec_fn=limit_it, capture_output=True, text=True
    )
    assert shown.stdout.strip() == "43"
    unlimited = subprocess.run(
        ["sh", "-c", "ulimit -t"],
        preexec_fn=lambda: preexec(Limits(memory_bytes=2**34), NoGroup(), 42.0),
        capture_output=True,
        text=True,
    )
    assert unlimited.stdout.strip() != "43"  # a cgroup counts them together instead


class NoGroup:
    def attach_self(self):
        pass


# -- a function that timed out is not called again ------------------------------------------------
def test_a_function_that_timed_out_once_answers_every_later_test_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "TIMED_OUT", {})
    calls = []

    def similarity(query, keys):
        calls.append(1)
        while True:
            pass

    root = tmp_path / "requests" / "similarity"
    for i in range(3):
        writer = Writer(root / f"{i:03d}_00")
        args = [writer.encode(np.ones(2)), writer.encode(np.eye(2))]
        writer.write_json(
            "request.json", {"op": "call", "target": "similarity", "args": args, "seconds": 0.2}
        )
    harness.serve({"similarity": similarity}, root, tmp_path / "responses")
    answers = [
        Reader(tmp_path / "responses" / f"{i:03d}_00").read_json("response.json") for i in range(3)
    ]
    assert len(calls) == 1
    assert [a["error"]["type"] for a in answers] == ["Timeout"] * 3
    assert "after" not in answers[0]["error"]
    assert answers[1]["error"]["after"] == answers[2]["error"]["after"] == "similarity/000_00"


def test_the_later_tests_say_which_test_ran_out_of_time_first(tmp_path):
    from autograder.course.probes import build_cases
    from autograder.judging.answers import judge_cases
    from autograder.judging.base import write_requests
    from autograder.results import TIMEOUT

    cases = [c for c in build_cases(STEM, 7) if c.function == "similarity"][:3]
    assert len(cases) == 3
    write_requests(cases, tmp_path / "requests")
    for i, case in enumerate(cases):
        for j, _ in enumerate(case.requests):
            folder = tmp_path / "responses" / "similarity" / f"{i:03d}_{j:02d}"
            error = {"type": "Timeout", "message": "did not finish"}
            if i:
                error["after"] = "similarity/000_00"
            Writer(folder).write_json("response.json", {"error": error, "seconds": 0.0})
    results = judge_cases(cases, tmp_path / "responses")
    assert [r.reason for r in results] == [TIMEOUT] * 3
    assert "did not finish within" in results[0].output
    for later in results[1:]:
        assert f'"{cases[0].name}"' in later.output and "not called again" in later.output


# -- in a real sandbox ----------------------------------------------------------------------------
def cgroup_cpu_or_skip(box):
    group = box.cgroups.create(8, 2**30) if box.cgroups is not None else None
    accounted = group is not None and group.cpu_usage_file()
    if group is not None:
        group.remove()
    if not accounted:
        pytest.skip("no cgroup CPU accounting here: the fallback cannot see hidden children")


HIDDEN_CHILDREN = """\
import os, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps them: no one's cutime
for _ in range(16):
    if os.fork() == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        os._exit(0)
    try:
        os.wait()  # returns when the child has gone, reaped by the kernel
    except ChildProcessError:
        pass
"""


@pytest.mark.slow
def test_children_hidden_by_ignoring_sigchld_are_charged_to_the_cell(tmp_path):
    """16 children burn 0.5 CPU-s each (8 in all) under a 3-second budget, their parent ignoring
    SIGCHLD. Counted by the sandbox's cgroup, the cell runs out of time and the name defined
    after it is never defined; the wall budget is far (x20), so only CPU can stop it."""
    # no spare seconds: the cell's own budget is what is counted against
    box = Sandbox(Limits(timeout=3, wall_factor=20, startup_seconds=60, spare_cpu_seconds=0))
    try:
        cgroup_cpu_or_skip(box)
        folder = notebook(tmp_path / "hid", FILE, HIDDEN_CHILDREN, SIMILARITY)
        request_dir = tmp_path / "requests"
        call_request(request_dir, "similarity", np.ones(2), np.eye(2), seconds=5)
        job = NotebookJob(STEM, FILE, request_dir, {"similarity": 10.0})
        run = box.run(folder, [job], tmp_path / "work")[STEM]
    finally:
        box.close()
    assert run.timed_out
    assert [e["type"] for e in run.cell_errors] == ["Timeout"]
    response = run.responses / "similarity" / "000_00" / "response.json"
    assert not response.exists() or answer(run, "similarity")[0].get("missing") == "similarity"


BURN = """\
import time
end = time.process_time() + {seconds}
while time.process_time() < end:
    pass
"""


def _two_notebooks_burning(tmp_path, first, second, spare):
    """Notebooks 01 and 02 in one sandbox, under a 1-second cells budget each and `spare`
    seconds they share, their one cell burning `first` and `second` CPU-s: their two runs."""
    box = Sandbox(Limits(timeout=1, wall_factor=20, startup_seconds=60, spare_cpu_seconds=spare))
    try:
        folder = notebook(tmp_path / "slow", FILE, BURN.format(seconds=first), "done = 1")
        notebook(folder, "02_dot_product_softmax.ipynb", BURN.format(seconds=second), "done = 1")
        requests = tmp_path / "requests"
        (requests / "01").mkdir(parents=True)
        (requests / "02").mkdir()
        jobs = [
            NotebookJob(STEM, FILE, requests / "01", {}),
            NotebookJob(
                "02_dot_product_softmax", "02_dot_product_softmax.ipynb", requests / "02", {}
            ),
        ]
        runs = box.run(folder, jobs, tmp_path / "work")
    finally:
        box.close()
    return runs[STEM], runs["02_dot_product_softmax"]


@pytest.mark.slow
def test_a_budget_that_runs_out_draws_on_the_spare_seconds_once_per_student(tmp_path):
    """A right answer slower than its notebook's budget still finishes on the spare seconds all
    of a student's notebooks share; what it took is gone for the next notebook, so an endless
    loop is paid once, not in every notebook. The control: without spare seconds, the same
    cell is stopped at its notebook's budget."""
    slow, later = _two_notebooks_burning(tmp_path / "a", 2.0, 3.5, spare=3.0)
    assert not slow.timed_out and not slow.cell_errors  # 2 s: its 1 s and 1 of the spare 3
    assert later.timed_out  # 3.5 s: its own 1 s and the 2 spare seconds left are not enough
    assert [e["type"] for e in later.cell_errors] == ["Timeout"]
    assert "spare seconds" in later.cell_errors[0]["message"]
    alone, _ = _two_notebooks_burning(tmp_path / "b", 2.0, 0.0, spare=0.0)
    assert alone.timed_out


@pytest.mark.slow
def test_code_that_sleeps_gets_its_own_budgets_wall_not_the_spare_seconds(tmp_path):
    """The spare CPU seconds carry their wall time only for a budget that computes into them: a
    cell that sleeps 12 s under a 2-second budget, a 5-second idle allowance and 20 spare CPU
    seconds is stopped on the wall at about 2 + 5 s, not at 2 + 20 + 5, and the notebook is not
    taken for starved (sleeping is not waiting for a CPU)."""
    box = Sandbox(Limits(timeout=2, startup_seconds=60, idle_seconds=5, spare_cpu_seconds=20))
    try:
        folder = notebook(tmp_path / "nap", FILE, "import time\ntime.sleep(12)", "done = 1")
        (tmp_path / "requests").mkdir()
        job = NotebookJob(STEM, FILE, tmp_path / "requests", {})
        log = tmp_path / "sandbox.log"
        run = box.run(folder, [job], tmp_path / "work", log_path=log)[STEM]
    finally:
        box.close()
    # stopped before its 12 s of sleep could end (the spare seconds' wall would have let it)
    assert run.timed_out and [e["type"] for e in run.cell_errors] == ["Timeout"]
    assert "again in a new sandbox" not in log.read_text(errors="replace")


SLEEPER = """\
import time
def similarity(query, keys):
    time.sleep(2)
    return keys @ query
"""


@pytest.mark.slow
def test_a_sleeper_gets_the_wall_budget_of_its_notebooks_tests_and_no_second_run(tmp_path):
    """Six tests that each sleep 2 s (no CPU), under a 2-second notebook budget and a 5-second
    idle allowance: its tests have 2 + 5 s on the wall together, not 2 s x 4 each, so some are
    never run; and sleeping does not look like starvation, so the notebook is not run again."""
    box = Sandbox(Limits(timeout=2, startup_seconds=60, idle_seconds=5, spare_cpu_seconds=0))
    try:
        folder = notebook(tmp_path / "zzz", FILE, SLEEPER)
        request_dir = tmp_path / "requests"
        for i in range(6):
            writer = Writer(request_dir / "similarity" / f"{i:03d}_00")
            args = [writer.encode(np.ones(2)), writer.encode(np.eye(2))]
            writer.write_json(
                "request.json", {"op": "call", "target": "similarity", "args": args, "seconds": 5}
            )
        job = NotebookJob(STEM, FILE, request_dir, {"similarity": 60.0})
        log = tmp_path / "sandbox.log"
        run = box.run(folder, [job], tmp_path / "work", log_path=log)[STEM]
    finally:
        box.close()
    answered = [
        i
        for i in range(6)
        if (run.responses / "similarity" / f"{i:03d}_00" / "response.json").exists()
    ]
    assert len(answered) < 6
    assert "similarity" in run.notes
    assert "again in a new sandbox" not in log.read_text(errors="replace")


FLOOD = """\
import os
chunk = b"x" * 65536
for _ in range(2000):  # 128 MB to stderr
    os.write(2, chunk)
"""


@pytest.mark.slow
def test_a_flood_of_output_is_cut_inside_the_sandbox(tmp_path, monkeypatch):
    """128 MB written to stderr: the parent reads at most the head and the tail the sandbox
    passes on (2 x log_bytes and a line), so its CPU does not grow with the flood."""
    read = []
    drain = sandbox_module._drain

    def counting(fd, log, keep):
        reader, writer = os.pipe()

        def relay():
            with os.fdopen(fd, "rb", buffering=0) as source, os.fdopen(writer, "wb") as sink:
                while chunk := source.read(65536):
                    read.append(len(chunk))
                    sink.write(chunk)

        thread = threading.Thread(target=relay)
        thread.start()
        drain(reader, log, keep)
        thread.join()

    monkeypatch.setattr(sandbox_module, "_drain", counting)
    keep = 64 * 2**10
    box = Sandbox(Limits(timeout=60, startup_seconds=60, log_bytes=keep))
    try:
        folder = notebook(tmp_path / "flood", FILE, FLOOD, SIMILARITY)
        log = tmp_path / "sandbox.log"
        request_dir = tmp_path / "requests"
        call_request(request_dir, "similarity", np.ones(2), np.eye(2), seconds=5)
        job = NotebookJob(STEM, FILE, request_dir, {"similarity": 10.0})
        run = box.run(folder, [job], tmp_path / "work", log_path=log)[STEM]
    finally:
        box.close()
    assert sum(read) <= 2 * keep + 4096, sum(read)
    text = log.read_text(errors="replace")
    assert "bytes of output dropped" in text and "xxxx" in text
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))
    assert math.isfinite(run.cpu_seconds) and run.cpu_seconds > 0


def test_in_cgroup_v1_the_clock_reads_the_count_a_sandbox_cannot_reset(tmp_path):
    """cpuacct.usage is writable (0 resets it) by its owner, root; cpuacct.stat is not, and a
    reset of cpuacct.usage leaves it alone: the clock reads cpuacct.stat where it exists."""
    folder = tmp_path / "cpuacct" / "sandbox"
    folder.mkdir(parents=True)
    (folder / "cpuacct.usage").write_text("0\n")  # reset
    (folder / "cpuacct.stat").write_text("user 250\nsystem 50\n")
    group = cgroups.Cgroup(1, {"cpuacct": folder})
    path, unit = group.cpu_usage_file()
    assert path.endswith("cpuacct.stat") and unit == pytest.approx(1 / os.sysconf("SC_CLK_TCK"))
    assert group.cpu_seconds() == pytest.approx(300 / os.sysconf("SC_CLK_TCK"))
    (folder / "cpuacct.stat").unlink()  # an old kernel: the usage file, in nanoseconds
    assert group.cpu_usage_file() == (str(folder / "cpuacct.usage"), 1e-9)


BUSY_THREADS = """\
import hashlib, threading
block = b"x" * (1 << 20)
def spin():  # sha256 of a large block lets go of the GIL: every thread busy at once
    while True:
        hashlib.sha256(block).digest()
threads = [threading.Thread(target=spin, daemon=True) for _ in range(4 * (os.cpu_count() or 1))]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


@pytest.mark.slow
def test_a_multi_threaded_cell_on_a_busy_machine_is_graded_not_taken_for_the_graders_failure(
    tmp_path,
):
    """A cell that never ends, with four busy threads per core, while a load generator (this
    test's own busy processes, two per core, stopped by their pids) holds the machine: its
    threads waiting for each other are not starvation, and where the machine did starve the
    sandbox, the second run's wall is far enough for the CPU it gets. The student gets the
    cell's timeout and the names defined before it tested, never NOT GRADED."""
    load = [  # each in a session of its own: the kernel's autogroups share the CPU by session
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    box = Sandbox(Limits(timeout=3, startup_seconds=120))
    try:
        folder = notebook(tmp_path / "threads", FILE, SIMILARITY, "import os\n" + BUSY_THREADS)
        request_dir = tmp_path / "requests"
        call_request(request_dir, "similarity", np.ones(2), np.eye(2), seconds=5)
        job = NotebookJob(STEM, FILE, request_dir, {"similarity": 10.0})
        run = box.run(folder, [job], tmp_path / "work", log_path=tmp_path / "sandbox.log")[STEM]
    finally:
        for process in load:
            os.kill(process.pid, 9)
        for process in load:
            process.wait()
        box.close()
    assert run.not_graded == ""
    assert run.timed_out and [e["type"] for e in run.cell_errors] == ["Timeout"]
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))
    if cgroups.find_tree() is not None:  # what the student cost, counted by this parent
        assert run.sandbox_cpu_seconds >= 3.0  # at least the cells' budget it spent


def test_a_starved_notebooks_second_run_has_the_wall_its_first_runs_share_calls_for():
    from autograder.sandbox.starvation import rerun_wall_factor

    assert rerun_wall_factor(0.5, 4.0, 25.0) == 4.0  # half a CPU: the usual factor
    assert rerun_wall_factor(0.1, 4.0, 25.0) == pytest.approx(20.0)  # a tenth: 2 / 0.1
    assert rerun_wall_factor(0.01, 4.0, 25.0) == 25.0  # never more than the most
    assert rerun_wall_factor(None, 4.0, 25.0) == 25.0  # unmeasured
    box = Sampler(None)
    box.stop()
    box.samples = [(0.0, 0.0, 0.0), (10.0, 2.0, 8.0), (20.0, 3.0, 17.0)]
    assert box.share(0.0, 20.0) == pytest.approx(0.15)
    assert box.share(10.0, 20.0, cpus=2.0) == pytest.approx(0.05)
