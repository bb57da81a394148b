"""Stopping a class run (Ctrl-C, SIGTERM, SIGHUP) keeps what is finished, leaves nothing behind,
and the next run resumes; the leftovers of a run killed with SIGKILL are removed by the next run,
never a live run's; the progress line names the notebooks running over their budget."""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from fixtures import StandInSandbox, stand_in_grading
from processes import marker, processes_with

import autograder
from autograder.grading import workspace
from autograder.grading.progress import OverBudget, notebook_budget
from autograder.grading.stopping import Interrupted, Stopping
from autograder.report import TEMP_PREFIX
from autograder.sandbox import NotebookJob, cgroups
from autograder.sandbox.limits import Limits
from autograder.sandbox.processes import Running, SandboxStopped

REPO = Path(autograder.__file__).resolve().parent.parent
SOLVED_01 = REPO / "solutions" / "01_soft_lookup.ipynb"
LIVENESS = 120  # seconds: a guard against a hung process, never a measure
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
SIGNAL_NAMES = [s.name for s in SIGNALS]


@pytest.fixture(autouse=True)
def signals_as_a_terminal_leaves_them():
    """These tests send the signals a terminal sends. A run of pytest started under nohup (or in
    the background by a shell) ignores SIGHUP (SIGINT), which the class run rightly keeps
    ignoring, and its children inherit that: each test starts from the dispositions a terminal
    gives (the test of nohup sets its own)."""
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                signal.SIGHUP: signal.SIG_DFL}  # fmt: skip
    before = {signum: signal.getsignal(signum) for signum in defaults}
    for signum, default in defaults.items():
        if before[signum] is signal.SIG_IGN:
            signal.signal(signum, default)
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


# -- the signal handlers -------------------------------------------------------------------------
@pytest.mark.parametrize("signum", SIGNALS, ids=SIGNAL_NAMES)
def test_the_first_signal_stops_the_sandboxes_then_raises_and_a_second_only_says_so(signum):
    calls, previous = [], signal.getsignal(signum)
    with Stopping() as stop:
        stop.on_stop(lambda: calls.append("stop"))
        with pytest.raises(Interrupted) as raised:
            os.kill(os.getpid(), signum)
            time.sleep(LIVENESS)  # the handler raises here
        assert raised.value.signum == signum and stop.signum == signum
        assert calls == ["stop"]  # the sandboxes are told before the main thread unwinds
        os.kill(os.getpid(), signum)  # a second signal: noted, nothing raised, nobody called
        time.sleep(0.01)
        assert calls == ["stop"]
    assert signal.getsignal(signum) == previous  # the previous handler is back


def test_a_signal_inside_a_deferred_block_lets_the_block_complete():
    with Stopping() as stop:
        with stop.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
            completed = True
        assert completed and stop.signum == signal.SIGTERM


def test_a_signal_while_a_step_is_set_up_is_raised_once_the_step_is_whole():
    made = []
    with Stopping() as stop:
        with pytest.raises(Interrupted):
            with stop.deferred(raise_after=True):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)
                made.append("work folder")
        assert made == ["work folder"] and stop.signum == signal.SIGINT


def test_a_signal_the_run_was_started_with_ignored_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with Stopping() as stop:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.01)
            assert stop.signum is None
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


# -- the running sandboxes -----------------------------------------------------------------------
def session(*command):
    return subprocess.Popen(list(command), start_new_session=True)


def test_stop_kills_every_running_sandboxs_process_group_and_starts_no_other():
    tag = marker(3)
    running = Running()
    # a sandbox's leader with a child in its process group
    first = session("sh", "-c", f"sleep {tag} & sleep {tag}; :")
    deadline = time.monotonic() + LIVENESS
    while len(processes_with(tag)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(processes_with(tag)) == 3
    launch = running.add(first, None, [])
    running.stop()
    assert first.wait(timeout=LIVENESS) == -signal.SIGKILL
    while processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(tag) == []  # the leader's child too
    with pytest.raises(SandboxStopped):
        running.check()
    # one started between check() and add() (a worker racing the stop) is killed at once
    late = session("sleep", "600")
    running.add(late, None, [])
    assert late.wait(timeout=LIVENESS) == -signal.SIGKILL
    running.discard(launch)


# -- the progress line ---------------------------------------------------------------------------
class FakeLaunch:  # as processes.Launch: compared by identity
    def __init__(self, thread, jobs, started, begun_stems):
        self.thread, self.jobs, self.started, self.begun_stems = thread, jobs, started, begun_stems


class FakeRunning:
    def __init__(self, launches):
        self.launches = launches

    def progress(self):
        return [(launch, list(launch.begun_stems)) for launch in self.launches]


def job(stem, serve):
    return NotebookJob(stem, f"{stem}.ipynb", Path("/nonexistent"), serve)


def test_the_progress_line_names_the_student_and_notebook_over_its_budget():
    limits = Limits(timeout=100.0)
    jobs = [job("01_soft_lookup", {"similarity": 10.0}), job("06_autoregressive_lm", {"GPT": 20})]
    assert notebook_budget(limits, jobs[1]) == 120.0  # its cells' 100 s and its tests' 20 s
    now = [1000.0]
    launch = FakeLaunch(7, jobs, 1000.0, ["01_soft_lookup"])
    watch = OverBudget(FakeRunning([launch]), limits, clock=lambda: now[0])
    watch._students[7] = "ada\x1b[2J\nx"  # the worker on thread 7 grades this student
    assert watch.text() == ""
    now[0] = 1000.0 + 111  # notebook 01 (budget 110 s) for 111 s
    assert watch.text() == r"ada\x1b[2J\x0ax 01_soft_lookup: 111 s, over its 110 s budget"
    launch.begun_stems = ["01_soft_lookup", "06_autoregressive_lm"]  # notebook 06 starts
    assert watch.text() == ""
    now[0] += 180
    line = watch.text()
    assert line == r"ada\x1b[2J\x0ax 06_autoregressive_lm: 3 min, over its 2 min budget"
    assert "\n" not in line and "\x1b" not in line


def test_the_progress_line_names_two_students_and_counts_the_others():
    limits = Limits(timeout=60.0)
    launches = [FakeLaunch(i, [job("02_dot_product_softmax", {})], 0.0, []) for i in range(4)]
    watch = OverBudget(FakeRunning(launches), limits, clock=lambda: 200.0)
    for i, name in enumerate(["bo", "al", "cy", "di"]):
        watch._students[i] = name
    assert watch.text() == (
        "al 02_dot_product_softmax: 3 min, over its 60 s budget; "
        "bo 02_dot_product_softmax: 3 min, over its 60 s budget; 2 more over budget"
    )


def test_a_sandboxs_started_notebooks_are_read_from_its_status_folder(tmp_path):
    running = Running()
    proc = SimpleNamespace(returncode=0, pid=0)
    jobs = [job("01_soft_lookup", {}), job("02_dot_product_softmax", {})]
    launch = running.add(proc, None, jobs, tmp_path)
    assert running.progress() == [(launch, [])]
    (tmp_path / "01_soft_lookup.json").write_text("{}")
    (tmp_path / "07_modern_lm.json").write_text("{}")  # not one of its notebooks: not looked up
    assert running.progress() == [(launch, ["01_soft_lookup"])]
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        running.watch(launch, fd)  # the folder as the sandbox's open descriptor (bwrap)
        (tmp_path / "02_dot_product_softmax.json").write_text("{}")
        assert running.progress() == [(launch, ["01_soft_lookup", "02_dot_product_softmax"])]
        running.discard(launch)
        assert running.progress() == []
    finally:
        os.close(fd)


# -- the leftovers of a run killed with SIGKILL --------------------------------------------------
def hold_lock(path):
    """Another process holding `path`'s flock (a live run), until it is killed."""
    code = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"held\n"
    return proc


def test_a_dead_runs_work_folder_is_removed_and_a_live_runs_is_not(tmp_path):
    dead, live, kept = (tmp_path / f"{workspace.RUN_PREFIX}{n}" for n in ("dead", "live", "kept"))
    for folder in (dead, live, kept):
        (folder / "student-ann-x" / "run").mkdir(parents=True)
        (folder / "lock").touch()
    (kept / "keep").touch()  # --keep-work
    holder = hold_lock(live / "lock")
    try:
        root, fd = workspace.start_work_root(False, tmp_path)
        assert not dead.exists()
        assert (live / "student-ann-x" / "run").is_dir() and kept.is_dir()
        with open(root / "lock") as other:  # the new run holds its own lock
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        workspace.end_work_root(root, fd)
        assert not root.exists()
    finally:
        holder.kill()
        holder.wait()
    root, fd = workspace.start_work_root(False, tmp_path)  # the holder gone, that run is dead
    workspace.end_work_root(root, fd)
    assert not live.exists() and kept.is_dir()


def cgroup_tree():
    """The cgroup tree the grader would use here, without find_tree's own clean-up."""
    from autograder.config import Config

    if not Config().switches.cgroups:  # AUTOGRADER_CGROUPS=0
        return None
    mounts, own = cgroups._mounts(), cgroups._own_paths()
    return cgroups._try_v2(mounts, own) or cgroups._try_v1(mounts, own)


def run_cgroup(tree, name, pid=None):
    """A cgroup named `name` in every hierarchy of `tree`, holding process `pid` (or empty)."""
    dirs = {}
    for controller, base in tree.bases.items():
        (base / name).mkdir(exist_ok=True)
        dirs[controller] = base / name
    if pid is not None:
        for path in sorted({d / "cgroup.procs" for d in dirs.values()}):
            path.write_text(str(pid))
    return cgroups.Cgroup(tree.version, dirs)


def test_a_dead_runs_cgroup_is_emptied_and_removed_and_a_live_runs_is_not():
    tree = cgroup_tree()
    if tree is None:
        pytest.skip("no writable cgroup tree here")
    gone = subprocess.Popen(["sleep", "600"])  # a grading run, SIGKILLed below
    dead_name = f"autograder-{gone.pid}-0-{cgroups.owner_tag(gone.pid)}"
    gone.kill()
    gone.wait()
    live_name = f"autograder-{os.getpid()}-9999-{cgroups.owner_tag()}"
    # this pid is alive, but the process that made the cgroup had another start time
    reused_name = f"autograder-{os.getpid()}-9998-1.{cgroups.owner_tag().split('.')[1]}"
    other_ns = f"autograder-{gone.pid}-9997-1.1"  # another pid namespace's: not this run's to judge
    sleepers = {name: subprocess.Popen(["sleep", "600"]) for name in (dead_name, live_name)}
    groups = {name: run_cgroup(tree, name, p.pid) for name, p in sleepers.items()}
    groups[reused_name] = run_cgroup(tree, reused_name)  # empty, as the kernel left it
    groups[other_ns] = run_cgroup(tree, other_ns)
    try:
        assert cgroups.stale(dead_name) and cgroups.stale(reused_name)
        assert not cgroups.stale(live_name) and not cgroups.stale(other_ns)
        tree.remove_stale()
        assert sleepers[dead_name].wait(timeout=LIVENESS) == -signal.SIGKILL
        assert not any(d.exists() for d in groups[dead_name].dirs.values())
        assert not any(d.exists() for d in groups[reused_name].dirs.values())
        assert sleepers[live_name].poll() is None
        assert all(d.is_dir() for d in groups[live_name].dirs.values())
        assert all(d.is_dir() for d in groups[other_ns].dirs.values())
    finally:
        for name in (live_name, other_ns):
            groups[name].kill()
            groups[name].remove()
        for proc in sleepers.values():
            proc.kill()
            proc.wait()


# -- a run that fails part way ------------------------------------------------------------------
def class_args(tmp_path):
    """`grade`'s options for the class in tmp_path/class, graded into tmp_path/out, as a class
    run of stand-in students needs them (one worker, no self-test)."""
    from argparse import Namespace

    return Namespace(
        path=str(tmp_path / "class"),
        out=str(tmp_path / "out"),
        secret="s",
        timeout=10,
        workers=1,
        force=False,
        skip_selftest=True,
    )


def test_a_run_that_fails_part_way_leaves_no_work_folder(tmp_path, monkeypatch):
    from autograder.config import config_from_args
    from autograder.grading import classrun, pool
    from autograder.grading.student import StudentResult

    used = []

    def fake_grade(
        student, folder, settings, sandbox, placement=None, kept=None, source=None, run=None
    ):
        used.append(Path(run.work_root))
        return StudentResult(student, {"score": 1.0, "max_score": 1.0, "tests": []})

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pool, "grade_student", fake_grade)
    monkeypatch.setattr(classrun, "open_sandbox", StandInSandbox)
    monkeypatch.setattr(classrun, "write_class", disk_full)
    monkeypatch.setenv("AUTOGRADER_WORK_DIR", str(tmp_path / "scratch"))
    student_folder(tmp_path / "class", "ann")
    args = class_args(tmp_path)
    with pytest.raises(OSError, match="No space"):
        classrun.grade_class(args.path, config_from_args(args), progress=False)
    assert [folder.parent for folder in used] == [tmp_path / "scratch"]  # there, in use
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_students_a_stopped_run_left_unfinished_are_graded_again_though_up_to_date(
    tmp_path, monkeypatch
):
    """A run stopped under --force leaves older results.json for the students it had not
    finished: they look up to date, yet the next run (without --force) grades them again."""
    from autograder.config import config_from_args
    from autograder.grading import classrun

    graded = stand_in_grading(monkeypatch, lambda student: {"score": 1.0, "max_score": 1.0,
                                                            "tests": []})  # fmt: skip
    monkeypatch.setenv("AUTOGRADER_WORK_DIR", str(tmp_path / "scratch"))
    for name in ("ann", "bob", "cy"):
        student_folder(tmp_path / "class", name)
    args = class_args(tmp_path)
    out = tmp_path / "out"

    def run():
        graded.clear()
        classrun.grade_class(args.path, config_from_args(args), progress=False)
        return sorted(graded)

    assert run() == ["ann", "bob", "cy"]
    assert run() == []  # all up to date
    workspace.write_unfinished(out, {"bob", "cy", "gone"})  # as a run stopped under --force
    assert run() == ["bob", "cy"]
    assert not (out / workspace.UNFINISHED_NAME).exists()  # nothing left unfinished
    assert run() == []


# -- a real class run, stopped and resumed -------------------------------------------------------
def student_folder(root, name, last_cell=None):
    nb = nbformat.read(SOLVED_01, as_version=4)
    if last_cell:
        nb.cells.append(nbformat.v4.new_code_cell(last_cell))
    folder = root / name
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / SOLVED_01.name)
    os.utime(folder / SOLVED_01.name, (1_700_000_000, 1_700_000_000))  # before any results.json


def build_class(root, tag):
    student_folder(root, "ann")
    sleep = (  # a process the test can find, in the sandbox for 10 s
        "import subprocess, sys\n"
        f"subprocess.run([sys.executable, '-c', 'import time; time.sleep(10)', '{tag}'])"
    )
    student_folder(root, "mia", sleep)  # still running when the signal comes
    student_folder(root, "zoe")  # waiting for a worker
    return root


def grade(cls, out, scratch, disk):
    """`grade` in a process of its own; its work folders in `scratch`, its gathered class in
    `disk` (as /dev/shm and /tmp would be)."""
    env = dict(os.environ, AUTOGRADER_WORK_DIR=str(scratch), TMPDIR=str(disk))
    disk.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "autograder", "grade", str(cls), "--out", str(out)]
    command += ["--workers", "1", "--quiet", "--secret", "stop-test", "--timeout", "120"]
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def finish(proc):
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out.decode(), err.decode()


def without_timings(value):
    if isinstance(value, dict):
        return {
            k: without_timings(v)
            for k, v in value.items()
            # and the content digest: each run's class carries its own process marker in mia's
            # notebook (marker(N)), so their contents, and digests, differ by design; and what
            # each student's grading cost (its CPU, and the class page's costliest, ranked by it)
            if k
            not in ("seconds", "execution_time", "submission_digest", "cpu_seconds", "expensive")
        }
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def class_outputs(out):
    """What an instructor reads, without the timings."""
    found = {"grades.csv": (out / "grades.csv").read_text()}
    for name in ("class.json", "summary.json"):
        found[name] = without_timings(json.loads((out / name).read_text()))
    for student in ("ann", "mia", "zoe"):
        found[student] = without_timings(json.loads((out / student / "results.json").read_text()))
    return found


def leftover_cgroups(pid):
    tree = cgroup_tree()
    if tree is None:
        return []
    return [
        child
        for base in tree.bases.values()
        for child in base.iterdir()
        if child.name.startswith((f"autograder-{pid}-", f"autograder-probe-{pid}-"))
    ]


def scratch_folder(name, otherwise):
    """A folder of this test's own in /dev/shm (where the work folders go by default)."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else otherwise
    folder = base / f"autograder-test-{name}-{os.getpid()}"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    cls = build_class(root / "class", marker(5))
    scratch = scratch_folder("reference", root)
    try:
        code, _out, err = finish(grade(cls, root / "out", scratch, root / "disk"))
        assert code == 0, err[-3000:]
        assert list(scratch.iterdir()) == []
    finally:
        for leftover in scratch.iterdir():
            workspace.remove_quietly(leftover)
        scratch.rmdir()
    return class_outputs(root / "out")


def start_and_wait_for_the_second_student(cls, out, scratch, disk, tag):
    """A class run, once ann is graded and mia's notebook is running in its sandbox."""
    run = grade(cls, out, scratch, disk)
    deadline = time.monotonic() + 600
    while not ((out / "ann" / "results.json").exists() and processes_with(tag)):
        assert run.poll() is None, finish(run)[2][-3000:]
        assert time.monotonic() < deadline, "the run never reached the second student"
        time.sleep(0.1)
    return run


@pytest.mark.slow  # grades in a real sandbox
@pytest.mark.parametrize("signum", SIGNALS, ids=SIGNAL_NAMES)
def test_a_stopped_run_keeps_the_finished_cleans_up_and_the_next_run_resumes(
    tmp_path, signum, uninterrupted
):
    tag = marker({signal.SIGINT: 4, signal.SIGTERM: 6, signal.SIGHUP: 8}[signum])
    cls = build_class(tmp_path / "class", tag)
    out, disk = tmp_path / "out", tmp_path / "disk"
    scratch = scratch_folder(signal.Signals(signum).name, tmp_path)
    try:
        run = start_and_wait_for_the_second_student(cls, out, scratch, disk, tag)
        kept = (out / "ann" / "results.json").read_bytes()
        run.send_signal(signum)  # once
        code, stdout, stderr = finish(run)
        assert code == 128 + signum, stderr[-3000:]
        assert f"stopped by {signal.Signals(signum).name}" in stdout
        assert "kept 1 student(s) graded in this run (ann)" in stdout
        assert "2 not finished (mia, zoe)" in stdout and "To resume" in stdout
        # what was finished is kept whole, nothing is half-written
        assert (out / "ann" / "results.json").read_bytes() == kept
        assert json.loads(kept)["student"] == "ann"
        assert not (out / "mia" / "results.json").exists()
        assert not (out / "zoe").exists()
        assert [p for p in out.rglob("*") if TEMP_PREFIX in p.name] == []
        assert json.loads((out / workspace.UNFINISHED_NAME).read_text()) == {
            "students": ["mia", "zoe"]
        }
        grades = (out / "grades.csv").read_text().splitlines()  # the class page: the finished
        assert [line.split(",")[0] for line in grades[1:]] == ['"ann"']
        # nothing left behind: its sandboxes, work folders, cgroups
        assert processes_with(tag) == []
        assert list(scratch.iterdir()) == []
        assert list(disk.iterdir()) == []
        assert leftover_cgroups(run.pid) == []

        again = grade(cls, out, scratch, disk)
        code, stdout, stderr = finish(again)
        assert code == 0, stderr[-3000:]
        assert "graded 2 student(s), skipped 1 up to date" in stdout
        assert (out / "ann" / "results.json").read_bytes() == kept
        assert not (out / workspace.UNFINISHED_NAME).exists()
        assert class_outputs(out) == uninterrupted
        assert list(scratch.iterdir()) == []
        assert leftover_cgroups(again.pid) == []
    finally:
        for leftover in scratch.iterdir():
            workspace.remove_quietly(leftover)
        scratch.rmdir()


@pytest.mark.slow  # grades in a real sandbox
def test_a_run_killed_with_sigkill_leaves_what_the_next_run_removes(tmp_path, uninterrupted):
    """Nothing can clean up after SIGKILL: the sandbox dies with its parent (bubblewrap's
    --die-with-parent, else the cgroup), the work folder stays until the next run removes it
    (its lock is free) with the dead run's cgroups, and grades the students without results."""
    tag = marker(9)
    cls = build_class(tmp_path / "class", tag)
    out, disk = tmp_path / "out", tmp_path / "disk"
    scratch = scratch_folder("SIGKILL", tmp_path)
    try:
        run = start_and_wait_for_the_second_student(cls, out, scratch, disk, tag)
        kept = (out / "ann" / "results.json").read_bytes()
        run.kill()
        finish(run)
        [left] = scratch.iterdir()  # the dead run's work folder
        assert left.name.startswith(workspace.RUN_PREFIX)
        again = grade(cls, out, scratch, disk)
        code, stdout, stderr = finish(again)
        assert code == 0, stderr[-3000:]
        assert "graded 2 student(s), skipped 1 up to date" in stdout
        assert (out / "ann" / "results.json").read_bytes() == kept
        assert class_outputs(out) == uninterrupted
        assert list(scratch.iterdir()) == [] and list(disk.iterdir()) == []
        assert leftover_cgroups(run.pid) == [] and leftover_cgroups(again.pid) == []
        assert processes_with(tag) == []
    finally:
        for leftover in scratch.iterdir():
            workspace.remove_quietly(leftover)
        scratch.rmdir()
