"""The sandboxes' share of the CPU and of the memory (issue 18, item 1): cgroups give each
sandbox the same weight and a cap of one CPU (v1 and v2), their CPU time is read back, the
driver's clock counts processes that have ended, and --workers x --memory is bounded by the
memory the machine has. Fake cgroup file systems in tmp_path; no sandbox is started.
"""

import os
import subprocess
import sys
import warnings

import pytest

from autograder.sandbox import Limits, cgroups, notices
from autograder.sandbox.inside.driver import CpuClock
from autograder.sandbox.limits import bound_workers, warn_about_cpu


def fake_v1(tmp_path):
    for name in ("pids", "memory", "cpu,cpuacct"):
        (tmp_path / name / "me").mkdir(parents=True)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        f"30 20 0:26 / {tmp_path}/pids rw,relatime - cgroup cgroup rw,pids\n"
        f"31 20 0:27 / {tmp_path}/memory rw,relatime - cgroup cgroup rw,memory\n"
        f"33 20 0:29 / {tmp_path}/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    )
    own = tmp_path / "cgroup"
    own.write_text("8:pids:/me\n4:memory:/me\n3:cpu,cpuacct:/me\n0::/\n")
    return mountinfo, own


def test_v1_gives_every_sandbox_the_same_weight_and_one_cpu(tmp_path):
    mountinfo, own = fake_v1(tmp_path)
    tree = cgroups.find_tree(mountinfo, own)
    assert {"cpu", "cpuacct"} <= tree.controllers and tree.cpu_capped
    group = tree.create(pids=10, memory_bytes=2**30, cpus=1.0)
    cpu = group.dirs["cpu"]
    assert cpu == group.dirs["cpuacct"] == tmp_path / "cpu,cpuacct" / "me" / cpu.name  # one dir
    assert (cpu / "cpu.shares").read_text() == "1024"
    assert (cpu / "cpu.cfs_quota_us").read_text() == (cpu / "cpu.cfs_period_us").read_text()
    (cpu / "cpuacct.usage").write_text("2500000000\n")  # nanoseconds
    assert group.cpu_seconds() == pytest.approx(2.5)
    half = tree.create(pids=10, memory_bytes=2**30, cpus=0.5).dirs["cpu"]
    assert int((half / "cpu.cfs_quota_us").read_text()) * 2 == int(
        (half / "cpu.cfs_period_us").read_text()
    )


def fake_v2(tmp_path, controllers):
    base = tmp_path / "unified"
    base.mkdir()
    (base / "cgroup.controllers").write_text(controllers)
    (base / "cgroup.subtree_control").write_text("memory pids\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"32 20 0:28 / {base} rw - cgroup2 cgroup2 rw\n")
    own = tmp_path / "cgroup"
    own.write_text("0::/\n")
    return cgroups.find_tree(mountinfo, own), base


def test_v2_enables_the_cpu_controller_and_caps_each_sandbox(tmp_path):
    tree, base = fake_v2(tmp_path, "cpu memory pids\n")
    assert tree.cpu_capped and "cpu" in tree.controllers
    assert "+cpu" in (base / "cgroup.subtree_control").read_text()
    group = tree.create(pids=10, memory_bytes=2**30)
    d = group.dirs[""]
    assert (d / "cpu.weight").read_text() == "100"
    assert (d / "cpu.max").read_text() == "100000 100000"
    (d / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    assert group.cpu_seconds() == pytest.approx(1.5)


def test_without_the_cpu_controller_the_cap_is_missing_and_said_once(tmp_path, monkeypatch):
    tree, _ = fake_v2(tmp_path, "memory pids\n")
    assert not tree.cpu_capped
    group = tree.create(pids=10, memory_bytes=2**30)
    assert not (group.dirs[""] / "cpu.max").exists()
    monkeypatch.setattr(notices, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_about_cpu(tree)
        warn_about_cpu(tree)
    assert [("cpu controller" in str(w.message)) for w in caught] == [True]


def test_the_drivers_clock_counts_a_child_that_has_ended(tmp_path):
    clock = CpuClock({"kind": "process"})
    before = clock(os.getpid())
    burn = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # ended and reaped: our cutime
    assert clock(os.getpid()) - before >= 0.5
    usage = tmp_path / "cpuacct.usage"
    usage.write_text("3000000000\n")
    assert CpuClock({"kind": "cgroup", "path": str(usage), "unit": 1e-9})() == pytest.approx(3.0)


def test_workers_are_bounded_by_the_available_memory():
    limits = Limits(memory_bytes=6 * 2**30)
    assert bound_workers(4, limits, available=13 * 2**30)[0] == 2
    workers, message = bound_workers(4, limits, available=13 * 2**30)
    assert "--workers 4" in message and "2 worker" in message
    assert bound_workers(2, limits, available=64 * 2**30) == (2, "")
    assert bound_workers(3, limits, available=2**30)[0] == 1  # never fewer than one
