"""What runs inside the sandbox (autograder/sandbox/inside/) imports nothing of the grader, so
it keeps copies of a few things; each copy is pinned here to its original."""

import ast
import dataclasses
from pathlib import Path

import pytest

from autograder.harness.serve import WALL_FACTOR
from autograder.integrity import INTEGRITY_FACTS
from autograder.sandbox import cgroups
from autograder.sandbox.inside import driver
from autograder.sandbox.limits import Limits

INSIDE = Path(driver.__file__).resolve().parent


def test_the_integrity_tokens_are_the_graders():
    assert set(driver.INTEGRITY_TOKENS) == set(INTEGRITY_FACTS)


def test_the_drivers_budgets_default_to_the_limits_and_travel_in_the_job():
    defaults = {f.name: f.default for f in dataclasses.fields(Limits)}
    assert driver.TIMES == {name: defaults[name] for name in driver.TIMES}
    assert set(Limits().driver_times()) == set(driver.TIMES)
    changed = Limits(recover_cpu_seconds=3.0, request_wall_factor=7.0).driver_times()
    assert changed["recover_cpu_seconds"] == 3.0 and changed["request_wall_factor"] == 7.0
    assert WALL_FACTOR == defaults["request_wall_factor"]
    assert driver.Watchdog.GRACE_CPU == defaults["grace_cpu_seconds"]
    assert driver.Watchdog.GRACE_WALL == defaults["grace_wall_seconds"]
    assert driver.LOG_BYTES == defaults["log_bytes"]


def test_the_job_carries_every_budget_the_driver_applies(tmp_path):
    """job.json holds Limits' driver times, the log's size and each notebook's two budgets."""
    from autograder.sandbox import NotebookJob, Sandbox

    limits = Limits(timeout=7, grace_cpu_seconds=2.0, log_bytes=1000)
    box = Sandbox.__new__(Sandbox)
    box.limits, box.mode, box.warm, box.lib = limits, "none", False, tmp_path
    (tmp_path / "submission").mkdir()
    job = NotebookJob("01_soft_lookup", "01_soft_lookup.ipynb", tmp_path, {"similarity": 3.0})
    import json

    written = json.loads(box._job_file(tmp_path, [job]).read_text())
    assert written["times"] == limits.driver_times() and written["times"]["grace_cpu_seconds"] == 2
    assert written["log_bytes"] == 1000
    spec = written["notebooks"][0]
    assert (spec["cells_seconds"], spec["tests_seconds"]) == (7, 3.0)


@pytest.mark.parametrize(
    "text",
    [
        "123456\n",  # cgroup v1 cpuacct.usage (ns)
        "usage_usec 987654\nuser_usec 5\nsystem_usec 6\n",  # cgroup v2 cpu.stat
        "user 150\nsystem 50\n",  # cgroup v1 cpuacct.stat (clock ticks)
        "user_usec 5\n",  # no usage line
        "garbage\n",
        "",
    ],
)
def test_the_drivers_cgroup_cpu_reader_reads_as_the_graders(tmp_path, text):
    path = tmp_path / "cpu.stat"
    path.write_text(text)
    for unit in (1e-6, 1e-9):
        ours = cgroups.read_cpu_usage(path, unit)
        assert driver._file_cpu(path, unit) == (0.0 if ours is None else ours)
    assert driver._file_cpu(tmp_path / "absent", 1e-6) == 0.0
    assert cgroups.read_cpu_usage(tmp_path / "absent", 1e-6) is None


@pytest.mark.parametrize("name", ["driver.py", "zygote.py"])
def test_the_inside_code_imports_nothing_of_the_grader(name):
    tree = ast.parse((INSIDE / name).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
            assert node.level == 0, f"{name}: a relative import"
        else:
            continue
        assert not any(m.split(".")[0] == "autograder" for m in modules), f"{name}: {modules}"


def test_the_drivers_reading_of_a_lowered_priority_is_the_graders():
    """The sleep pool's copy of cgroups.lowered_priority (driver._lowered): a nice value above
    the reader's own, read from /proc/PID/task/TID/stat, is lowered for both; this process is
    lowered for neither."""
    import os
    import subprocess
    import sys

    code = "import os, sys, time; os.nice(5); print(1, flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        own = os.getpriority(os.PRIO_PROCESS, 0)
        pid = str(child.pid)
        assert driver._lowered(pid, pid, own) and cgroups.lowered_priority(child.pid)
        me = str(os.getpid())
        assert not driver._lowered(me, me, own) and not cgroups.lowered_priority(os.getpid())
    finally:
        child.kill()
        child.wait()
