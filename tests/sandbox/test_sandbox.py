"""The sandbox on its own: isolation, limits and clean-up, with small hand-written notebooks.

Each notebook's "attack" cells are expected to RAISE inside the sandbox; the driver records the
error type of every cell that raises, which is what these tests read. Requests are written with
the harness's own Writer, so no probe module is needed.
"""

import os
import socket
from pathlib import Path

import numpy as np
import pytest
from fixtures import answer, notebook, run_one
from processes import marker, processes_with

import autograder
from autograder.grading.course_files import course_files
from autograder.sandbox import Limits, NotebookJob, Sandbox

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
NB2 = "02_dot_product_softmax"


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(
        Limits(timeout=30, memory_bytes=2 * 2**30, startup_seconds=60), course=course_files()
    )
    yield box
    box.close()


def needs_bwrap(box):
    if box.mode != "bwrap":
        pytest.skip("bubblewrap cannot create namespaces here: the isolation is not in force")


def errors_by_cell(run):
    return {e["cell"]: e["type"] for e in run.cell_errors}


def test_a_notebook_runs_and_the_harness_answers(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "alice",
        "01_soft_lookup.ipynb",
        "import numpy as np",
        "def similarity(query, keys):\n    return keys @ query",
        "from autograder.checks import check, assert_passes\n"
        "assert check('similarity', similarity) is None\n"
        "assert_passes('similarity', similarity)",
        "import os\nassert os.environ['NBGRADER_EXECUTION'] == 'autograde'\n"
        "assert 'COURSE_SECRET' not in os.environ\n"
        "import matplotlib\nassert matplotlib.get_backend().lower() == 'agg'",
        "import coursedata",
    )
    q, k = np.array([1.0, 2.0, 3.0]), np.arange(12.0).reshape(4, 3)
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (q, k)})
    assert run.cell_errors == []
    assert run.executed_ok
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), k @ q)


def test_pyplot_runs_only_in_a_notebook_that_uses_it_and_then_works(sandbox, tmp_path):
    """Every notebook imports pyplot; under grading only demo cells (skipped) plot, so its code
    runs on first use: importing it (even again) leaves matplotlib.figure unimported, and using
    it works whichever way it was imported."""
    not_yet = "if 'matplotlib.figure' in sys.modules:\n    raise LookupError('pyplot ran')"
    folder = notebook(
        tmp_path / "bob",
        "01_soft_lookup.ipynb",
        "import sys\nimport matplotlib.pyplot as plt",
        not_yet,
        # imported again, as import_earlier runs an earlier notebook's import cell
        "import matplotlib.pyplot\nexec('import matplotlib.pyplot as plt', {})\n"
        "from matplotlib import pyplot as also",
        not_yet,
        "import io\nfig, ax = plt.subplots()\nax.plot([1, 2], [3, 4])\n"
        "buffer = io.BytesIO()\nfig.savefig(buffer, format='png')\n"
        "assert buffer.getvalue()[:4] == b'\\x89PNG'",
        "from matplotlib import pyplot\nimport matplotlib.pyplot as again\n"
        "assert pyplot is again is plt and plt.gcf() is fig",
        "if 'matplotlib.figure' not in sys.modules:\n    raise LookupError('pyplot never ran')",
    )
    run = run_one(sandbox, tmp_path, folder)
    assert run.executed_ok
    assert run.cell_errors == []


def test_cells_that_raise_are_recorded_and_the_next_cells_run(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "bob",
        "01_soft_lookup.ipynb",
        "1 / 0",
        "undefined_name",
        "def similarity(query, keys):\n    return keys @ query",
    )
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    assert errors_by_cell(run) == {0: "ZeroDivisionError", 1: "NameError"}
    assert not run.executed_ok
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))


def test_the_project_the_reference_other_students_and_the_network_are_out_of_reach(
    sandbox, tmp_path
):
    needs_bwrap(sandbox)
    other = notebook(tmp_path / "class" / "carol", "01_soft_lookup.ipynb", "secret = 42")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    reference = REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py"
    assert reference.exists()
    cells = [
        f"open({str(reference)!r}).read()",
        "import autograder.course.model_answers",
        "from autograder.course.probes import base",
        f"import os\nos.listdir({str(other)!r})",
        f"open({str(other / '01_soft_lookup.ipynb')!r}).read()",
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)",
        "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)",
        f"open({str(tmp_path / 'written-from-inside')!r}, 'w').write('x')",
        "import sys\nopen(sys.prefix + '/pyvenv.cfg', 'a').write('x')",
        "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')]\n"
        "assert caps[0].split()[1].strip('0') != '', caps",
        "import os\nos.mknod('/tmp/disk', 0o600 | 0o060000, os.makedev(8, 0))",
    ]
    folder = notebook(tmp_path / "class" / "dave", "01_soft_lookup.ipynb", *cells)
    try:
        run = run_one(sandbox, tmp_path, folder)
    finally:
        server.close()
    errors = errors_by_cell(run)
    assert sorted(errors) == list(range(len(cells))), run.cell_errors
    assert errors[1] == errors[2] == "ModuleNotFoundError"
    assert errors[5] in ("ConnectionRefusedError", "OSError", "TimeoutError")
    assert not (tmp_path / "written-from-inside").exists()


def test_a_dead_kernel_loses_the_answers_with_a_message(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "erin",
        "01_soft_lookup.ipynb",
        "def similarity(query, keys):\n    return keys @ query",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        "x = 1",
    )
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    assert run.kernel_died
    assert errors_by_cell(run) == {1: "KernelDied"}
    assert "died" in run.notes["similarity"]
    assert not (run.responses / "similarity" / "000_00" / "response.json").exists()


def test_an_infinite_loop_is_stopped_and_earlier_definitions_are_still_tested(tmp_path):
    box = Sandbox(Limits(timeout=6, startup_seconds=60))
    try:
        folder = notebook(
            tmp_path / "frank",
            "01_soft_lookup.ipynb",
            "def similarity(query, keys):\n    return keys @ query",
            "while True:\n    pass",
            "never = 1",
        )
        run = run_one(box, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    finally:
        box.close()
    assert run.timed_out
    assert errors_by_cell(run) == {1: "Timeout"}
    assert any("interrupted" in m for m in run.messages)
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))


def test_a_function_that_loops_forever_times_out_alone(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "gina",
        "01_soft_lookup.ipynb",
        "def similarity(query, keys):\n    while True:\n        pass",
    )
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    raw, _ = answer(run, "similarity")
    assert raw["error"]["type"] == "Timeout"


def test_a_memory_hog_dies_with_a_memory_error(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "hank",
        "01_soft_lookup.ipynb",
        "import numpy as np\nhog = []\nwhile True:\n    hog.append(np.ones(2**25))",
        "del hog",
        "big = bytearray(64 * 2**30)",
        "def similarity(query, keys):\n    return keys @ query",
    )
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    assert errors_by_cell(run) == {0: "MemoryError", 2: "MemoryError"}
    assert "out of memory" in run.cell_errors[0]["message"]
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))


def test_a_flood_of_output_is_dropped(sandbox, tmp_path):
    folder = notebook(
        tmp_path / "ivy",
        "01_soft_lookup.ipynb",
        "print('x' * 30_000_000)",
        "for i in range(20_000):\n    print(i, 'y' * 200)",
        "import os\nos.write(1, b'z' * 5_000_000)",
        "def similarity(query, keys):\n    return keys @ query",
    )
    run = run_one(sandbox, tmp_path, folder, requests={"similarity": (np.ones(2), np.eye(2))})
    assert run.cell_errors == []
    status = tmp_path / "work" / "status" / "01_soft_lookup.json"
    assert status.stat().st_size < 10_000
    raw, reader = answer(run, "similarity")
    np.testing.assert_allclose(reader.decode(raw["value"]), np.ones(2))


def test_no_process_outlives_the_run(sandbox, tmp_path):
    sleeper = marker("9876")
    folder = notebook(
        tmp_path / "jack",
        "01_soft_lookup.ipynb",
        f"import subprocess\np = subprocess.Popen(['sleep', '{sleeper}'], start_new_session=True)",
        f"import os\nif os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '{sleeper}'])",
    )
    run = run_one(sandbox, tmp_path, folder)
    assert run.cell_errors == []
    alive = processes_with(sleeper)
    if sandbox.mode != "bwrap":
        for pid in alive:  # without a pid namespace, clean up what the test started
            os.kill(pid, 9)
        pytest.skip("without a pid namespace, detached processes can outlive the run")
    assert alive == []


# -- the pieces of the sandbox's isolation, one by one ------------------------------------------
def _fake_cgroup_v1(tmp_path):
    """A /proc/self/mountinfo and /proc/self/cgroup describing v1 hierarchies in plain folders."""
    pids, memory = tmp_path / "pids", tmp_path / "memory"
    (pids / "me").mkdir(parents=True)
    (memory / "me").mkdir(parents=True)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        f"30 20 0:26 / {pids} rw,relatime - cgroup cgroup rw,pids\n"
        f"31 20 0:27 / {memory} rw,relatime - cgroup cgroup rw,memory\n"
        f"32 20 0:28 / {tmp_path}/unified rw - cgroup2 cgroup2 rw\n"
    )
    own = tmp_path / "cgroup"
    own.write_text("8:pids:/me\n4:memory:/me\n0::/\n")
    return mountinfo, own


def test_cgroup_v1_hierarchies_are_found_and_capped(tmp_path):
    from autograder.sandbox import cgroups

    mountinfo, own = _fake_cgroup_v1(tmp_path)
    tree = cgroups.find_tree(mountinfo, own)
    assert tree.version == 1
    assert tree.controllers == {"pids", "memory"}
    group = tree.create(pids=77, memory_bytes=12345)
    assert (group.dirs["pids"] / "pids.max").read_text() == "77"
    assert (group.dirs["memory"] / "memory.limit_in_bytes").read_text() == "12345"
    assert group.dirs["pids"].parent == tmp_path / "pids" / "me"
    for d in group.dirs.values():  # a real cgroup's files vanish with it; plain folders do not
        for f in d.iterdir():
            f.unlink()
    group.remove()
    assert not any(d.exists() for d in group.dirs.values())


def test_cgroups_left_by_a_killed_run_are_removed_and_live_ones_kept(tmp_path):
    from autograder.sandbox import cgroups

    mountinfo, own = _fake_cgroup_v1(tmp_path)
    dead, alive = 2**22 + 17, os.getpid()  # above pid_max: no such process
    for pid in (dead, alive):
        (tmp_path / "pids" / "me" / f"autograder-{pid}-0").mkdir()
    (tmp_path / "pids" / "me" / "someone-else").mkdir()
    cgroups.find_tree(mountinfo, own)
    left = sorted(p.name for p in (tmp_path / "pids" / "me").iterdir())
    assert left == [f"autograder-{alive}-0", "someone-else"]


def test_cgroups_can_be_disabled_and_a_v2_without_controllers_is_skipped(tmp_path):
    from autograder.sandbox import cgroups

    mountinfo, own = _fake_cgroup_v1(tmp_path)
    off = object.__new__(Sandbox)  # its isolation alone, as Sandbox(cgroups=False) decides it
    off.mode, off.limits, off.use_cgroups, off.use_userns = "none", Limits(), False, True
    with pytest.warns(RuntimeWarning, match="no writable cgroup"):
        off._isolate()
    assert off.cgroups is None
    unified = tmp_path / "unified"
    unified.mkdir()
    (unified / "cgroup.controllers").write_text("hugetlb\n")
    (unified / "cgroup.subtree_control").write_text("")
    assert cgroups._try_v2(cgroups._mounts(mountinfo), {"": "/"}) is None
    (unified / "cgroup.controllers").write_text("memory pids\n")
    (unified / "cgroup.subtree_control").write_text("memory pids\n")
    assert cgroups._try_v2(cgroups._mounts(mountinfo), {"": "/"}).version == 2


def test_a_real_cgroup_caps_processes_and_kills_everything_in_it():
    import subprocess
    import sys

    from autograder.sandbox import cgroups

    tree = cgroups.find_tree()
    if tree is None or "pids" not in tree.controllers:
        pytest.skip("no writable cgroup with the pids controller on this machine")
    group = tree.create(pids=12, memory_bytes=2**30)
    spawner = (
        "import subprocess, sys\n"
        "kids = []\n"
        "try:\n"
        "    while len(kids) < 100:\n"
        "        kids.append(subprocess.Popen(['sleep', '300']))\n"
        "except OSError:\n"
        "    pass\n"
        "print(len(kids), flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", spawner],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=group.attach_self,  # noqa: PLW1509
    )
    try:
        spawned = int(proc.stdout.readline())
        assert 0 < spawned < 12
        members = group.pids()
        assert proc.pid in members and len(members) == spawned + 1
        assert group.kill()
        assert group.pids() == set()
        proc.wait(timeout=10)
    finally:
        proc.kill()
        group.kill()
        group.remove()
    assert not any(d.exists() for d in group.dirs.values())


def test_the_seccomp_filter_is_known_per_machine():
    from autograder.sandbox.seccomp import build_filter

    assert build_filter("sparc64") is None
    for machine in ("x86_64", "aarch64"):
        program = build_filter(machine)
        assert program and len(program) % 8 == 0


def test_inside_the_sandbox_no_keyring_no_user_namespace_and_caps_are_gone(sandbox, tmp_path):
    needs_bwrap(sandbox)
    if sandbox.seccomp is None:
        pytest.skip("no seccomp filter for this machine")
    calls = {"x86_64": 250, "aarch64": 219}
    import platform

    keyctl = calls[platform.machine()]
    folder = notebook(
        tmp_path / "kim",
        "01_soft_lookup.ipynb",
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"assert libc.syscall({keyctl}, 0, -3, 0) == -1 and ctypes.get_errno() == 1",
        "assert libc.unshare(0x10000000) == -1",
        "import threading, subprocess\nt = threading.Thread(target=print)\nt.start()\nt.join()\n"
        "subprocess.run(['true'], check=True)",
        "status = open('/proc/self/status').read()\n"
        "caps = [l.split()[1] for l in status.splitlines() if l.startswith(('CapEff', 'CapPrm'))]\n"
        "assert set(caps) == {'0000000000000000'}, caps\n"
        "assert 'NoNewPrivs:\\t1' in status",
        "open('/grader/job.json', 'a')",
    )
    run = run_one(sandbox, tmp_path, folder)
    assert list(errors_by_cell(run)) == [4], run.cell_errors  # only the read-only file


def test_without_cgroups_the_unprivileged_uid_is_capped_by_rlimit_nproc(tmp_path, monkeypatch):
    from autograder.sandbox import notices

    monkeypatch.setattr(notices, "_warned", set())
    with pytest.warns(RuntimeWarning, match="no writable cgroup") as caught:  # AUTOGRADER_CGROUPS=0
        box = Sandbox(
            Limits(timeout=30, processes=48, startup_seconds=60), warm=False, cgroups=False
        )
    try:
        needs_bwrap(box)
        assert box.cgroups is None
        if box.identity == "root":
            pytest.skip("no user namespace here: RLIMIT_NPROC cannot apply to root")
        assert sum("cgroup" in str(w.message) for w in caught) == 1
        folder = notebook(
            tmp_path / "lee",
            "01_soft_lookup.ipynb",
            "import subprocess\nkids = []\ntry:\n    while len(kids) < 500:\n"
            "        kids.append(subprocess.Popen(['sleep', '60']))\nexcept OSError:\n    pass\n"
            "for k in kids:\n    k.kill()\n    k.wait()\n"
            "raise RuntimeError(f'spawned {len(kids)}')",
        )
        run = run_one(box, tmp_path, folder)
    finally:
        box.close()
    spawned = int(run.cell_errors[0]["message"].split()[1])
    assert 0 < spawned < 48


def test_each_missing_defence_is_warned_about_once(monkeypatch):
    import warnings

    from autograder.sandbox import notices

    monkeypatch.setattr(notices, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # AUTOGRADER_CGROUPS=0 and AUTOGRADER_USERNS=0
        boxes = [Sandbox(Limits(), warm=False, cgroups=False, userns=False) for _ in range(2)]
    for box in boxes:
        box.close()
    if boxes[0].mode != "bwrap":
        pytest.skip("bubblewrap cannot create namespaces here")
    texts = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert sum("no writable cgroup" in t for t in texts) == 1
    if os.geteuid() == 0:
        assert boxes[0].identity == "root"
        assert sum("user namespace" in t for t in texts) == 1


def test_the_answers_are_copied_out_within_a_budget_and_never_through_a_link(tmp_path):
    from autograder.sandbox.pull import Folder

    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "ok.json").write_text("{}")
    (src / "big.npy").write_bytes(b"x" * 5000)
    (src / "small.npy").write_bytes(b"y" * 10)
    (src / "link").symlink_to("/etc/passwd")
    (src / "dirlink").symlink_to(src / "a")
    os.mkfifo(src / "fifo")
    folder = Folder(os.open(src, os.O_RDONLY | os.O_DIRECTORY))
    try:
        files, total, skipped = folder.copy_to(tmp_path / "out", max_bytes=1000)
    finally:
        folder.close()
    out = tmp_path / "out"
    assert (out / "a" / "b" / "ok.json").read_text() == "{}"
    assert (out / "small.npy").read_bytes() == b"y" * 10
    big = (out / "big.npy").stat()  # kept as what it was: too big, and nothing of it copied
    assert big.st_size == 5000 and big.st_blocks == 0
    assert os.readlink(out / "link") == "/etc/passwd"  # re-created, never followed
    assert os.readlink(out / "dirlink") == str(src / "a")  # a link, not a copy of the folder
    assert (out / "fifo").is_fifo()
    assert (files, total, skipped) == (2, 12, 4)


def test_the_sandbox_log_keeps_a_head_and_a_tail_of_a_flood(tmp_path):
    import threading

    from autograder.sandbox import _drain

    read, write = os.pipe()
    log_path = tmp_path / "log"
    with open(log_path, "wb") as log:
        thread = threading.Thread(target=_drain, args=(read, log, 1000))
        thread.start()
        os.write(write, b"H" * 1000)
        for _ in range(100):
            os.write(write, b"m" * 50_000)
        os.write(write, b"T" * 1000)
        os.close(write)
        thread.join(timeout=30)
    text = log_path.read_bytes()
    assert text.startswith(b"H" * 1000) and text.endswith(b"T" * 1000)
    assert b"5000000 bytes of output dropped" in text
    assert len(text) < 2100


def test_mount_points_get_parents_the_sandbox_uid_can_walk():
    from autograder.sandbox.isolation import with_parent_dirs

    ops = ["--ro-bind", "/x/y", "/root/.pyenv/v", "--tmpfs", "/grader/home", "--proc", "/proc"]
    out = with_parent_dirs(ops)
    dirs = [out[i + 1] for i in range(len(out)) if out[i] == "--dir"]
    assert dirs == ["/root", "/root/.pyenv", "/grader"]
    assert out.count("0755") == 3
    assert [o for o in out if o.startswith("/x") or o in ("/proc",)] == ["/x/y", "/proc"]


def test_parents_under_a_tmpfs_are_made_after_it():
    """A venv under /tmp (an instructor's clone there) is bound after the tmpfs /tmp: its
    parents must be made inside that tmpfs, or they are hidden by it and bwrap makes them 0700,
    and no notebook can import anything."""
    from autograder.sandbox.isolation import tmpfs as tmpfs_ops
    from autograder.sandbox.isolation import with_parent_dirs

    ops = [*tmpfs_ops("/tmp", 1024), "--ro-bind", "/tmp/ci/repo/.venv", "/tmp/ci/repo/.venv"]
    out = with_parent_dirs(ops)
    tmpfs = out.index("--tmpfs")
    assert out[tmpfs - 4 : tmpfs] == ["--perms", "1777", "--size", "1024"]  # its own modifiers
    made = [i for i in range(len(out)) if out[i] == "--dir"]
    assert [out[i + 1] for i in made] == ["/tmp/ci", "/tmp/ci/repo"]
    assert all(i > tmpfs and out[i - 2 : i] == ["--perms", "0755"] for i in made)


def test_what_a_notebook_leaves_running_is_gone_before_the_next_one(sandbox, tmp_path):
    needs_bwrap(sandbox)
    sleeper = marker("8765")
    folder = notebook(
        tmp_path / "mia",
        "01_soft_lookup.ipynb",
        f"import subprocess\nsubprocess.Popen(['sleep', '{sleeper}'], start_new_session=True)",
    )
    notebook(
        folder,
        "02_dot_product_softmax.ipynb",
        "import os\nseen = []\nfor p in os.listdir('/proc'):\n    try:\n"
        "        seen.append(open(f'/proc/{p}/cmdline', 'rb').read())\n    except OSError:\n"
        "        pass\n"
        f"assert not [c for c in seen if b'{sleeper}' in c], 'still running'",
    )
    request_dir = tmp_path / "requests"
    request_dir.mkdir()
    jobs = [NotebookJob(s, f"{s}.ipynb", request_dir, {}) for s in ("01_soft_lookup", NB2)]
    runs = sandbox.run(folder, jobs, tmp_path / "work")
    assert runs["01_soft_lookup"].executed_ok
    assert runs[NB2].executed_ok, runs[NB2].cell_errors
