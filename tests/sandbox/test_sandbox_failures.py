"""A sandbox that fails is never the student's fault (issue 17, item 3).

Faults are injected from outside the student's code: a kernel that cannot start (the grader's
own library path holds a broken ipykernel_launcher), a sandbox killed from outside. A failure is
retried once in a new sandbox; when it fails again and the grader's own control run (a one-cell
notebook in an empty submission) fails too, the student is NOT GRADED. A student who causes the
same failures themselves (their file stops the kernel, their code kills the sandbox, forging a
status that claims the kernel did not start) keeps their own verdict: the control run works.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.harness.wire import Writer
from autograder.sandbox import Limits, NotebookJob, Sandbox
from autograder.sandbox.starvation import Sampler, others_held

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
STEM = "01_soft_lookup"
HONEST = "def similarity(query, keys):\n    return keys @ query"


class Faulty(Sandbox):
    """Counts its launches; the first `kernel_failures` get a kernel that cannot start and the
    first `kills` are killed from outside (SIGKILL to bubblewrap) once the sandbox is up."""

    kernel_failures = 0
    kills = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.launches = 0

    def _launch(self, work, pending, log):
        self.launches += 1
        broken = self.lib / "lib" / "ipykernel_launcher.py"  # first on the kernel's PYTHONPATH
        if self.kernel_failures > 0:
            self.kernel_failures -= 1
            broken.write_text("raise SystemExit('injected: the kernel cannot start')\n")
            broken.chmod(0o644)
        try:
            return super()._launch(work, pending, log)
        finally:
            broken.unlink(missing_ok=True)

    def _take_folders(self, proc, handshake, info_read, log):
        found = super()._take_folders(proc, handshake, info_read, log)
        if self.kills > 0:
            self.kills -= 1
            # at once: a control run of one cell may finish within a second on a quiet machine
            threading.Timer(0.1, _kill_group, [proc.pid]).start()
        return found


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


@pytest.fixture
def faulty():
    box = Faulty(Limits(timeout=30, memory_bytes=2 * 2**30, startup_seconds=30), warm=False)
    if box.mode != "bwrap":
        box.close()
        pytest.skip("bubblewrap cannot create namespaces here")
    yield box
    box.close()


def submission(folder, *cells, extra=None):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / f"{STEM}.ipynb")
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    return folder


def run(box, tmp_path, folder):
    requests = tmp_path / "requests"
    writer = Writer(requests / "similarity" / "000_00")
    args = [writer.encode([1.0, 2.0]), writer.encode([[1.0, 0.0], [0.0, 1.0]])]
    writer.write_json(
        "request.json", {"op": "call", "target": "similarity", "args": args, "seconds": 10}
    )
    job = NotebookJob(STEM, f"{STEM}.ipynb", requests, {"similarity": 20.0})
    result = box.run(folder, [job], tmp_path / "work", log_path=tmp_path / "sandbox.log")[STEM]
    return result, (tmp_path / "sandbox.log").read_text(errors="replace")


def answered(result):
    return (result.responses / "similarity" / "000_00" / "response.json").exists()


def test_a_kernel_that_fails_to_start_once_is_retried_and_graded(faulty, tmp_path):
    faulty.kernel_failures = 1
    result, log = run(faulty, tmp_path, submission(tmp_path / "s", HONEST))
    assert faulty.launches == 2 and "again in a new sandbox" in log
    assert not result.not_graded and result.executed_ok and answered(result)


def test_a_kernel_that_never_starts_is_not_graded(faulty, tmp_path):
    faulty.kernel_failures = 99
    result, log = run(faulty, tmp_path, submission(tmp_path / "s", HONEST))
    assert faulty.launches == 3 and "control run: FAILED" in log  # first, again, control
    assert "kernel did not start" in result.not_graded


def test_a_sandbox_killed_from_outside_once_is_retried_and_graded(faulty, tmp_path):
    faulty.kills = 1
    folder = submission(tmp_path / "s", "import time\ntime.sleep(3)", HONEST)
    result, log = run(faulty, tmp_path, folder)
    assert faulty.launches == 2 and "again in a new sandbox" in log
    assert not result.not_graded and result.executed_ok and answered(result)


def test_a_sandbox_killed_from_outside_every_time_is_not_graded(faulty, tmp_path):
    faulty.kills = 99
    folder = submission(tmp_path / "s", "import time\ntime.sleep(3)", HONEST)
    result, log = run(faulty, tmp_path, folder)
    assert faulty.launches == 3 and "control run: FAILED" in log
    assert "grading sandbox stopped" in result.not_graded


FORGE = (
    "import json, os, signal\n"
    "json.dump({'kernel_start_failed': True, 'finished': True},"
    " open('/grader/status/01_soft_lookup.json', 'w'))\n"
    "os.kill(-1, signal.SIGKILL)"
)


@pytest.mark.parametrize(
    "attack, says",
    [
        ("import os, signal\nos.kill(-1, signal.SIGKILL)", "stopped while this notebook"),
        (FORGE, "kernel could not start"),
    ],
)
def test_a_student_who_kills_their_own_sandbox_keeps_their_verdict(faulty, tmp_path, attack, says):
    """Their code kills every process it may (the driver too), after forging a status that
    blames the kernel's start: retried once, then the control run works, so the outcome is
    theirs (graded, nothing answered), never an endless NOT GRADED."""
    result, log = run(faulty, tmp_path, submission(tmp_path / "s", HONEST, attack))
    assert faulty.launches == 3 and "control run: works" in log
    assert not result.not_graded and not answered(result)
    assert says in " ".join(result.messages)


def test_a_student_file_that_stops_the_kernel_keeps_their_verdict(faulty, tmp_path):
    folder = submission(
        tmp_path / "s", HONEST, extra={"ipykernel_launcher.py": "raise SystemExit(1)\n"}
    )
    result, log = run(faulty, tmp_path, folder)
    assert faulty.launches == 3 and "control run: works" in log
    assert not result.not_graded and not answered(result)
    assert "kernel could not start" in " ".join(result.messages)


# -- starvation, decided on the parent's own samples ----------------------------------------------
def sampler(*rows):
    """A stopped Sampler holding (seconds, CPU seconds, seconds waiting for a CPU) rows."""
    box = Sampler(None)
    box.stop()
    box.samples = [(float(t), cpu, wait) for t, cpu, wait in rows]
    return box


def test_starved_means_little_cpu_while_waiting_for_one():
    starved = sampler((0, 0.0, 0.0), (10, 1.0, 8.0), (20, 2.0, 16.0))
    assert starved.starved(0, 20)
    sleeping = sampler((0, 0.0, 0.0), (10, 0.1, 0.1), (20, 0.2, 0.2))  # neither runs nor waits
    assert not sleeping.starved(0, 20)
    busy = sampler((0, 0.0, 0.0), (10, 9.0, 30.0), (20, 18.0, 60.0))  # its own share, used
    assert not busy.starved(0, 20)
    unmeasured = sampler((0, None, None), (20, None, None))
    assert not unmeasured.starved(0, 20)
    emptied = sampler((0, 0.0, 0.0), (10, 1.0, 8.0), (20, 2.0, 16.0), (21, 2.0, None))
    assert emptied.starved(0, 30)  # the last sample, of a cgroup already emptied, is no evidence


def test_a_students_own_threads_waiting_for_each_other_are_not_starvation():
    """Eight busy threads in a sandbox of one CPU: each waits seven eighths of the time, for its
    siblings. Summed over the threads that is 70 s of waiting in 10 s, but the sandbox ran its
    whole share, so nobody else held it back."""
    own_threads = sampler((0, 0.0, 0.0), (10, 9.8, 70.0), (20, 19.6, 140.0))
    assert not own_threads.starved(0, 20)
    # the same eight threads where other programs took half of the sandbox's CPU: starved, and
    # by as much as one thread would be (its threads' waiting counts up to the share it lost)
    held_back = sampler((0, 0.0, 0.0), (10, 5.0, 75.0), (20, 10.0, 150.0))
    one_thread = sampler((0, 0.0, 0.0), (10, 5.0, 5.0), (20, 10.0, 10.0))
    assert held_back.starved(0, 20) and one_thread.starved(0, 20)


def test_only_the_share_a_sandbox_lost_counts_as_waiting_for_others():
    assert others_held(waited=70.0, ran=9.8, share=10.0) == pytest.approx(0.2)
    assert others_held(waited=3.0, ran=2.0, share=10.0) == 3.0  # one thread, held back 3 s
    assert others_held(waited=5.0, ran=10.0, share=10.0) == 0.0  # its share, used
    # two CPUs' share, one thread waiting: the waiting counts, whatever the share
    assert others_held(waited=4.0, ran=5.0, share=20.0) == 4.0


def test_starvation_is_judged_over_the_notebooks_own_time():
    rows = [(0, 0.0, 0.0), (10, 10.0, 0.0), (20, 11.0, 9.0), (30, 12.0, 18.0)]
    assert sampler(*rows).starved(10, 30)
    assert not sampler(*rows).starved(0, 10)
    assert sampler(*rows).starved(1e9, 2e9) == sampler(*rows).starved(0, 30)  # outside: all


# -- the grade command: NOT GRADED, non-zero, regraded by the next run ---------------------------
BROKEN_BWRAP = """#!/bin/sh
# bubblewrap that starts no sandbox for the grader's driver (as a too-old version would not)
case "$*" in
  *driver.py*) echo "bwrap: Unknown option --size" >&2; exit 1 ;;
esac
exec {real} "$@"
"""


def test_a_broken_sandbox_means_not_graded_and_the_next_run_grades(tmp_path):
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("bubblewrap is not installed")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(BROKEN_BWRAP.format(real=real))
    (fake / "bwrap").chmod(0o755)
    reference = (REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py").read_text()
    submission(tmp_path / "class" / "ann", reference)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "autograder", "grade", tmp_path / "class", "--out", out]
    argv += ["--workers", "1", "--quiet", "--secret", "failures", "--memory", "2"]
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", AUTOGRADER_WARM_KERNELS="0")
    broken = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert broken.returncode != 0
    assert any("NOT GRADED" in line and "ann" in line for line in broken.stdout.splitlines())
    payload = json.loads((out / "ann" / "results.json").read_text())
    assert payload["internal_error"] and "NOT GRADED" in payload["output"]
    assert "without errors" not in payload["output"]
    env["PATH"] = os.environ["PATH"]
    fixed = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    payload = json.loads((out / "ann" / "results.json").read_text())
    assert not payload.get("internal_error") and payload["score"] > 0
