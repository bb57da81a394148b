"""The sandbox on its own: isolation, limits and clean-up, with small hand-written notebooks.

Each notebook's "attack" cells are expected to RAISE inside the sandbox; the driver records the
error type of every cell that raises, which is what these tests read. Requests are written with
the harness's own Writer, so no probe module is needed.
"""

import os
import socket
from pathlib import Path

import nbformat
import numpy as np
import pytest

import autograder
from autograder.harness.wire import Reader, Writer
from autograder.sandbox import Limits, NotebookJob, Sandbox

REPO = Path(autograder.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(Limits(timeout=30, memory_bytes=2 * 2**30, startup_seconds=60))
    yield box
    box.close()


def needs_bwrap(box):
    if box.mode != "bwrap":
        pytest.skip("bubblewrap cannot create namespaces here: the isolation is not in force")


def notebook(folder, name, *cells):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)
    return folder


def call_request(root, function, *args, seconds=5):
    writer = Writer(root / function / "000_00")
    writer.write_json(
        "request.json",
        {
            "op": "call",
            "target": function,
            "args": [writer.encode(a) for a in args],
            "seconds": seconds,
        },
    )


def run_one(box, tmp_path, folder, stem="01_soft_lookup", requests=None):
    request_dir = tmp_path / "requests"
    request_dir.mkdir(exist_ok=True)
    for function, args in (requests or {}).items():
        call_request(request_dir, function, *args)
    serve = {name: 15.0 for name in (requests or {})}
    job = NotebookJob(stem, f"{stem}.ipynb", request_dir, serve)
    runs = box.run(folder, [job], tmp_path / "work")
    return runs[stem]


def errors_by_cell(run):
    return {e["cell"]: e["type"] for e in run.cell_errors}


def answer(run, function):
    folder = run.responses / function / "000_00"
    raw = Reader(folder).read_json("response.json")
    return raw, Reader(folder)


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
    reference = REPO / "autograder" / "reference" / "soft_lookup.py"
    assert reference.exists()
    cells = [
        f"open({str(reference)!r}).read()",
        "import autograder.reference",
        "from autograder.probes import base",
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
    marker = "987654.321"
    folder = notebook(
        tmp_path / "jack",
        "01_soft_lookup.ipynb",
        f"import subprocess\np = subprocess.Popen(['sleep', '{marker}'], start_new_session=True)",
        f"import os\nif os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '{marker}'])",
    )
    run = run_one(sandbox, tmp_path, folder)
    assert run.cell_errors == []
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                alive.append(proc.name)
        except OSError:
            continue
    if sandbox.mode != "bwrap":
        for pid in alive:  # without a pid namespace, clean up what the test started
            os.kill(int(pid), 9)
        pytest.skip("without a pid namespace, detached processes can outlive the run")
    assert alive == []
