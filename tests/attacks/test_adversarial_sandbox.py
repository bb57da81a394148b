"""Attacks on the sandbox, graded as one class next to honest students who must keep full marks.

One class is graded once (module fixture, 2 workers, small per-sandbox caps so the fills are
quick); each attacker holds only notebook 01 (or 02) and reports what it saw by raising in a
cell, so its message lands in its results.json "output". The parent-side attacks (links, FIFOs,
report names, loaders) are tested elsewhere; these are the ones the sandbox itself must stop.
"""

import ast
import hashlib
import importlib
import inspect
import json
import os
import platform
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import numpy as np
import pytest
from processes import marker, processes_with

import autograder
from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.config import Config
from autograder.course.probes import build_cases, load_all
from autograder.curriculum import BY_STEM
from autograder.grading.classrun import grade_class
from autograder.sandbox import Limits, Sandbox

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
NB1, NB2 = "01_soft_lookup", "02_dot_product_softmax"
MARKER = marker("4242")  # the argument of every sleeper an attacker leaves behind
UID_MARKER = marker("4343")
MB = 2**20
LIMITS = Limits(
    timeout=25,
    memory_bytes=2 * 2**30,
    processes=256,
    tmp_bytes=24 * MB,
    shm_bytes=8 * MB,
    home_bytes=16 * MB,
    submission_bytes=12 * MB,
)
# keyring system calls per machine: add_key, request_key, keyctl
KEY_CALLS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}

load_all()
reference = importlib.import_module(BY_STEM[NB1].reference_path)


def source(fn):
    return inspect.getsource(getattr(reference, fn))


CORRECT = ["import numpy as np", *(source(f) for f in BY_STEM[NB1].graded)]
BLANK = ["import numpy as np"] + [
    f"def {name}(*args, **kwargs):\n    raise NotImplementedError()" for name in BY_STEM[NB1].graded
]


def keyring_cell(action):
    add_key, request_key, keyctl = KEY_CALLS.get(platform.machine(), (248, 249, 250))
    prelude = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "found = []\n"
    )
    if action == "write":
        body = (
            f"blob = {source('similarity')!r}.encode()\n"
            "for ring in (-3, -4, -5):  # session, user, user-session keyrings\n"
            f"    r = libc.syscall({add_key}, b'user', b'answers', blob, len(blob), ring)\n"
            "    found.append((ring, r, ctypes.get_errno()))\n"
            "raise RuntimeError(f'keyring write {found}')"
        )
    else:
        body = (
            "buf = ctypes.create_string_buffer(1 << 16)\n"
            "for ring in (-3, -4, -5):\n"
            f"    key = libc.syscall({request_key}, b'user', b'answers', None, 0)\n"
            f"    key2 = libc.syscall({keyctl}, 10, ring, b'user', b'answers', 0)  # SEARCH\n"
            "    for k in (key, key2):\n"
            "        if k > 0:\n"
            f"            n = libc.syscall({keyctl}, 11, k, buf, len(buf))  # READ\n"
            "            if n > 0:\n"
            "                exec(buf.raw[:n].decode(), globals())\n"
            "                found.append(ring)\n"
            "raise RuntimeError(f'keyring read found={found}')"
        )
    return prelude + body


FORK_BOMB = (
    "import subprocess\n"
    "children = []\n"
    "try:\n"
    "    while len(children) < 5000:\n"
    f"        children.append(subprocess.Popen(['sleep', '{MARKER}']))\n"
    "except OSError as exc:\n"
    "    stopped = type(exc).__name__\n"
    "else:\n"
    "    stopped = 'unbounded'\n"
    "for child in children:  # so that its own answers can still be served\n"
    "    child.kill()\n"
    "    child.wait()\n"
    "raise RuntimeError(f'spawned {len(children)} then {stopped}')"
)

FILL = (
    "import os\n"
    "chunk = b'x' * 2**20\n"
    "written = {}\n"
    "for name, folder in (('shm', '/dev/shm'), ('tmp', '/tmp'), ('home', os.path.expanduser('~')),\n"
    "                     ('sub', os.getcwd()), ('root', '/'), ('grader', '/grader')):\n"
    "    n = 0\n"
    "    try:\n"
    "        while n < 4096:\n"
    "            with open(os.path.join(folder, f'fill{n}'), 'wb') as f:\n"
    "                f.write(chunk)\n"
    "            n += 1\n"
    "    except OSError:\n"
    "        pass\n"
    "    written[name] = n\n"
    "    for i in range(n):\n"
    "        os.remove(os.path.join(folder, f'fill{i}'))\n"
    "os.write(2, b'z' * 50 * 2**20)  # a flood on the kernel's stderr (the sandbox log)\n"
    "raise RuntimeError('fill ' + ' '.join(f'{k}={v}' for k, v in written.items()))"
)

ORPHANS = (
    "import os, subprocess\n"
    f"subprocess.Popen(['sleep', '{MARKER}'], start_new_session=True)\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    f"        os.execvp('sleep', ['sleep', '{MARKER}'])\n"
    "    os._exit(0)\n"
    "os.wait()"
)

UID_REPORT = (
    "import os, subprocess, time\n"
    f"p = subprocess.Popen(['sleep', '{UID_MARKER}'])\n"
    "time.sleep(4)\n"
    "p.kill()\n"
    "uid_map = open('/proc/self/uid_map').read().split()\n"
    "raise RuntimeError(f'uid inside={os.getuid()} map={uid_map}')"
)

PAYLOAD = (
    "import os, sys\n"
    "if 'driver' in (sys.argv[0] if sys.argv else '') or 'zygote' in ' '.join(sys.argv):\n"
    "    os._exit(3)\n"
    "for path in {host!r}:\n"
    "    try:\n"
    "        open(path, 'w').write('pwned')\n"
    "    except OSError:\n"
    "        pass\n"
)


def pth_cells(host_markers):
    payload = PAYLOAD.format(host=[str(p) for p in host_markers])
    return [
        "import os, sys\n"
        f"payload = {payload!r}\n"
        "home = os.path.expanduser('~')\n"
        "site = f'{home}/.local/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages'\n"
        "startup = f'{home}/.ipython/profile_default/startup'\n"
        "for folder in (os.getcwd(), home, '/tmp', site, startup):\n"
        "    os.makedirs(folder, exist_ok=True)\n"
        "    for name in ('sitecustomize.py', 'usercustomize.py', '00-evil.py', 'json.py',\n"
        "                 'nbformat.py', 'zmq.py', 'jupyter_client.py'):\n"
        "        open(os.path.join(folder, name), 'w').write(payload)\n"
        "    open(os.path.join(folder, 'evil.pth'), 'w').write('import os; ' + payload.replace(chr(10), '; '))\n"
        "for lib in ('/opt/grader/lib/autograder/harness/__init__.py', '/opt/grader/driver.py'):\n"
        "    try:\n"
        "        open(lib, 'a').write(payload)\n"
        "    except OSError as exc:\n"
        "        print(type(exc).__name__)\n",
        # the harness's compiled serve.py replaced by the payload, with its source's hash: the
        # hidden tests, served after these cells, would load it (sandbox/bytecode.py)
        "import importlib.util, marshal\n"
        "src = '/opt/grader/lib/autograder/harness/serve.py'\n"
        "header = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, 'little')\n"
        "header += importlib.util.source_hash(open(src, 'rb').read())\n"
        "try:\n"
        "    with open(importlib.util.cache_from_source(src), 'wb') as pyc:\n"
        "        pyc.write(header + marshal.dumps(compile(payload, src, 'exec')))\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__)\n",
    ]


def signal_cells(host_pid):
    return [
        "import os, signal\n"
        "seen = []\n"
        f"for pid in ({host_pid}, 1, os.getppid()):\n"
        "    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n"
        "        seen.append((pid, 'sent'))\n"
        "    except OSError as exc:\n"
        "        seen.append((pid, type(exc).__name__))\n"
        "print(seen)",
        "import os, signal\nos.kill(-1, signal.SIGKILL)",
    ]


def snoop_cells(host_paths, secret):
    return [
        "import os\n"
        "allowed = {'PATH', 'HOME', 'TMPDIR', 'PYTHONPATH', 'PYTHONDONTWRITEBYTECODE',\n"
        "    'PYTHONNOUSERSITE', 'MPLBACKEND', 'MPLCONFIGDIR', 'NBGRADER_EXECUTION',\n"
        "    'JUPYTER_PLATFORM_DIRS', 'JUPYTER_CONFIG_DIR', 'JUPYTER_DATA_DIR', 'JUPYTER_RUNTIME_DIR',\n"
        "    'IPYTHONDIR', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'LANG',\n"
        "    'LC_ALL', 'USER', 'LOGNAME', 'JPY_PARENT_PID', 'PYDEVD_USE_FRAME_EVAL', 'TERM',\n"
        "    'CLICOLOR', 'CLICOLOR_FORCE', 'FORCE_COLOR', 'PAGER', 'GIT_PAGER', 'PWD'}\n"
        "leaks = sorted(k for k in os.environ if k not in allowed)\n"
        f"leaks += [k for k, v in os.environ.items() if any(h in v for h in {host_paths!r})]\n"
        f"leaks += [k for k, v in os.environ.items() if {secret!r} in v]\n"
        "fds = []\n"
        "for fd in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        target = os.readlink(f'/proc/self/fd/{fd}')\n"
        "    except OSError:\n"
        "        continue\n"
        "    if target.startswith('/') and not target.startswith(('/dev/', '/grader/', '/tmp/', '/proc/')):\n"
        "        fds.append(target)\n"
        "procs = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "raise RuntimeError(f'snoop leaks={leaks} fds={fds} procs={len(procs)} '\n"
        "                   f'sys={os.path.exists(\"/sys/fs\")} cwd={os.getcwd()}')",
        f"open({str(REPO / 'solutions' / (NB1 + '.ipynb'))!r}).read()",
        f"open({str(REPO / 'autograder' / 'course' / 'n01_soft_lookup' / 'reference.py')!r}).read()",
    ]


def hard_coded_similarity():
    """similarity that answers the public visible checks from a table and nothing else."""
    table = {}
    for case in build_cases(NB1, VISIBLE_SEED, functions={"similarity"}):
        for request in case.requests:
            if request.get("op") == "call":
                q, k = request["args"]
                key = hashlib.sha256(np.asarray(q).tobytes() + np.asarray(k).tobytes()).hexdigest()
                table[key] = reference.similarity(q, k).tolist()
    return (
        "import hashlib\n"
        f"TABLE = {table!r}\n"
        "def similarity(query, keys):\n"
        "    key = hashlib.sha256(np.asarray(query).tobytes() + np.asarray(keys).tobytes()).hexdigest()\n"
        "    return np.array(TABLE.get(key, np.zeros(len(keys))))"
    )


FORGED_EQ = (
    "class Anything(np.ndarray):\n"
    "    def __eq__(self, other):\n"
    "        return True\n"
    "    __ne__ = lambda self, other: False\n"
    "class Liar:\n"
    "    def __eq__(self, other):\n"
    "        return True\n"
    "    def __array__(self, *a, **k):\n"
    "        return np.zeros(3)\n"
    "def percentages(scores):\n"
    "    return np.zeros_like(scores).view(Anything)\n"
    "def soft_lookup(query, keys, values):\n"
    "    return Liar(), Liar()"
)


def write_notebook(folder, cells, stem=NB1):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / f"{stem}.ipynb")


def build_class(root, host_markers, host_pid, secret):
    subs = root / "submissions"
    (subs / "honest01").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / f"{NB1}.ipynb", subs / "honest01")
    (subs / "honest02").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / f"{NB2}.ipynb", subs / "honest02")
    write_notebook(subs / "keywriter", [*CORRECT, keyring_cell("write")])
    write_notebook(subs / "keyreader", [*BLANK, keyring_cell("read")])
    write_notebook(subs / "forkbomb", [*CORRECT, FORK_BOMB])
    write_notebook(subs / "filler", [*CORRECT, FILL])
    write_notebook(subs / "orphans", [*CORRECT, ORPHANS, UID_REPORT])
    write_notebook(subs / "pth", [*CORRECT, *pth_cells(host_markers)])
    write_notebook(subs / "signals", [*CORRECT, *signal_cells(host_pid)])
    host_paths = [str(root)]
    write_notebook(subs / "snoop", [*CORRECT, *snoop_cells(host_paths, secret)])
    write_notebook(subs / "forger", [*CORRECT, FORGED_EQ, hard_coded_similarity()])
    write_notebook(subs / "exits", [*CORRECT, "import os\nos._exit(0)", "after = 1"])
    return subs


def watch_uids(stop, seen):
    """From the host: the Uid line of every process carrying UID_MARKER, while grading runs."""
    while not stop.is_set():
        for proc in Path("/proc").iterdir():
            try:
                if UID_MARKER in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    status = (proc / "status").read_text()
                    seen.add(next(x for x in status.splitlines() if x.startswith("Uid:")))
            except (OSError, StopIteration):
                continue
        time.sleep(0.2)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    box = Sandbox(LIMITS)
    mode, identity = box.mode, box.identity
    box.close()
    if mode != "bwrap":
        pytest.skip("bubblewrap cannot create namespaces here: the sandbox is not in force")
    root = tmp_path_factory.mktemp("attacks")
    host_markers = [root / "pwned-host", REPO / "pwned-host"]
    secret = "adversarial-secret"
    subs = build_class(root, host_markers, os.getpid(), secret)
    out = root / "out"
    stop, uids = threading.Event(), set()
    watcher = threading.Thread(target=watch_uids, args=(stop, uids), daemon=True)
    watcher.start()
    # one NumPy notebook per student: a cold kernel is cheaper than a torch-laden zygote
    cold = replace(Config().switches, warm_kernels=False)  # AUTOGRADER_WARM_KERNELS=0
    settings = Config(out=out, secret=secret, limits=LIMITS, workers=2, force=True, switches=cold)
    try:
        done, _summary = grade_class(subs, settings, progress=False)
    finally:
        stop.set()
        watcher.join()
    return {
        "root": root,
        "out": out,
        "done": {r.student: r for r in done},
        "uids": uids,
        "identity": identity,
        "host_markers": host_markers,
        "sleepers": processes_with(MARKER) + processes_with(UID_MARKER),
    }


def results(graded, student):
    return json.loads((graded["out"] / student / "results.json").read_text())


def score(graded, student, stem=NB1, function=None):
    tests = [
        t
        for t in results(graded, student)["tests"]
        if t["notebook"] == stem and function in (None, t["function"])
    ]
    return sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)


def said(graded, student):
    return results(graded, student)["output"]


def test_the_class_completes_and_honest_students_keep_full_marks(graded):
    assert not [r.student for r in graded["done"].values() if r.error]
    for student, stem in (("honest01", NB1), ("honest02", NB2)):
        got, best = score(graded, student, stem)
        assert best > 0 and got == pytest.approx(best), student


def test_the_kernel_keyring_carries_nothing_to_the_next_student(graded):
    text = said(graded, "keywriter")
    writes = ast.literal_eval(text.split("keyring write ")[1].split("]")[0] + "]")
    assert len(writes) == 3
    assert all(result == -1 for _ring, result, _errno in writes), writes
    assert "keyring read found=[]" in said(graded, "keyreader")
    assert score(graded, "keyreader")[0] == 0


def test_a_fork_bomb_is_capped_by_the_sandbox(graded):
    text = said(graded, "forkbomb")
    assert "spawned " in text and "unbounded" not in text
    spawned = int(text.split("spawned ")[1].split()[0])
    assert 0 < spawned < LIMITS.processes
    got, best = score(graded, "forkbomb")
    assert got == pytest.approx(best)  # defined before the bomb, answered after it


def test_every_writable_place_is_a_small_tmpfs(graded):
    text = said(graded, "filler")
    assert "fill " in text
    written = dict(kv.split("=") for kv in text.split("fill ")[1].split()[:6])
    written = {k: int(v.rstrip(".,'\"")) for k, v in written.items()}
    assert 0 < written["shm"] <= LIMITS.shm_bytes // MB
    assert 0 < written["tmp"] <= LIMITS.tmp_bytes // MB
    assert 0 < written["home"] <= LIMITS.home_bytes // MB
    assert 0 < written["sub"] <= LIMITS.submission_bytes // MB + 1
    assert written["root"] == written["grader"] == 0
    log = graded["out"] / "filler" / "sandbox.log"
    assert not log.exists() or log.stat().st_size < 2 * MB
    got, best = score(graded, "filler")
    assert got == pytest.approx(best)


def test_no_process_outlives_the_run(graded):
    assert graded["sleepers"] == []
    assert processes_with(MARKER) == []


def test_sandbox_processes_are_not_root_on_the_host(graded):
    if graded["identity"] == "root":
        pytest.skip("this machine gives the sandbox no user namespace (warned at start)")
    assert graded["uids"], "the sleeper was never seen from the host"
    for line in graded["uids"]:  # "Uid: real effective saved filesystem"
        assert "0" not in line.split()[1:], line
    inside = said(graded, "orphans").split("uid inside=")[1]
    assert not inside.startswith("0 ")


def test_code_planted_in_writable_places_runs_nowhere_but_the_students_own_kernel(graded):
    got, best = score(graded, "pth")
    assert got == pytest.approx(best)
    assert not any(p.exists() for p in graded["host_markers"])
    assert "stopped" not in said(graded, "pth")


def test_signals_reach_nothing_outside_the_sandbox(graded):
    assert results(graded, "signals")  # graded (its own notebook may score 0)
    assert score(graded, "honest01")[0] == pytest.approx(score(graded, "honest01")[1])


def test_the_grader_is_detectable_but_leaks_nothing(graded):
    text = said(graded, "snoop")
    assert "snoop leaks=[] fds=[]" in text
    procs = int(text.split("procs=")[1].split()[0])
    assert procs < 30  # its own pid namespace: not the host's hundreds of processes
    assert "sys=False" in text
    assert text.count("FileNotFoundError") >= 2  # solutions/ and the reference are not there


def test_forged_equality_and_hard_coded_visible_answers_fail_under_a_secret(graded):
    assert score(graded, "forger", function="percentages")[0] == 0
    assert score(graded, "forger", function="soft_lookup")[0] == 0
    got, best = score(graded, "forger", function="similarity")
    assert got < best
    assert score(graded, "forger", function="lookup")[0] > 0


def test_the_hard_coded_answers_do_pass_the_public_checks():
    namespace = {"np": np}
    exec(hard_coded_similarity(), namespace)  # noqa: S102 - the test's own student code
    results = run_in_process("similarity", namespace["similarity"])
    assert results and all(r.status == "passed" for r in results)


def test_os_exit_scores_zero_with_a_message(graded):
    assert score(graded, "exits")[0] == 0
    assert "died" in said(graded, "exits")
