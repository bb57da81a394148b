"""What several test files share, in one module: small notebooks and requests for the sandbox,
the nbgrader cells that hold written answers, the lecture's worked numbers and executed
solutions (test_notebooks, test_nbval, test_notebook06_story), an nbgrader course's helpers
(test_nbgrader_course, test_nbgrader_hostile) and GPT's cheap training case.

The rule (tests/architecture/test_import_graph.py keeps it): a test file imports from here, from the data
modules of mistakes (tests/*_mutants.py) and from the helper modules beside them, never from
another test file nor from conftest.py."""

import ast
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from nbclient import NotebookClient

from autograder.course.n06_autoregressive_lm import cases_gpt as lm_probes
from autograder.course.probes import Case
from autograder.curriculum import NOTEBOOKS
from autograder.harness.wire import Reader, Writer
from autograder.sandbox import NotebookJob

REPO = Path(__file__).resolve().parents[2]


NB01, NB02, NB03 = "01_soft_lookup", "02_dot_product_softmax", "03_matrix_attention"


TIMESTAMP = "2026-03-01 12:00:00.000000 UTC"


VENV_BIN = Path(sys.executable).parent  # the tests find the venv's tools without an activated venv


def run(args, cwd=None, timeout=900, env=None):
    """args[0] a tool of this venv (nbgrader) is run from the venv's bin/, and that bin/ leads
    the default PATH (nbgrader runs `alembic` from PATH), activated or not."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "COURSE_SECRET"}
        env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    if not Path(args[0]).is_absolute() and (VENV_BIN / args[0]).is_file():
        args = [str(VENV_BIN / args[0]), *args[1:]]
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return done


def without_venv_on_path():
    """The environment of a shell where the venv is not activated: its python is called by
    path, and nothing of the venv is on PATH (nbgrader's gradebook runs `alembic` from PATH)."""
    scripts = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_SECRET", "VIRTUAL_ENV")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != scripts]
    env["PATH"] = os.pathsep.join(p for p in path if not (Path(p) / "alembic").exists())
    return env


def read(path):
    return nbformat.read(path, as_version=4)


def formgrader_api(formgrader, route):
    """GET formgrader's JSON API `route` from a server of formgrader_server: (url, token)."""
    import urllib.request

    base, token = formgrader
    with urllib.request.urlopen(f"{base}/formgrader/api/{route}?token={token}", timeout=60) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def formgrader_server(folder, home):
    """A Jupyter server with nbgrader's formgrader in `folder`, HOME at `home`: (url, token)."""
    import secrets
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_hex(16)
    env = {**os.environ, "HOME": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", "--no-browser", "--ip=127.0.0.1"]
        + [
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.port_retries=0",
            "--allow-root",
        ],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # a bound for a server that never comes up, not a timing check
            try:
                urllib.request.urlopen(f"{base}/formgrader/api/status?token={token}", timeout=5)
                break
            except OSError:
                assert server.poll() is None, "the Jupyter server stopped"
                time.sleep(0.5)
        else:
            pytest.fail("formgrader did not answer")
        yield base, token
    finally:
        server.terminate()
        server.wait(timeout=60)


# -- the students' Validate button (issue 17) ----------------------------------------------------
def released_with(stem, bodies):
    """notebooks/<stem> as a student hands it in: each solution cell named in `bodies` holds that
    code ("solution": the model solution's cell)."""
    released = read(REPO / "notebooks" / f"{stem}.ipynb")
    solved = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in read(REPO / "solutions" / f"{stem}.ipynb").cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    for cell in released.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in bodies:
            body = bodies[grade_id]
            cell.source = solved[grade_id] if body == "solution" else body
    return released


UNNORMALISED = "def percentages(scores):\n    return np.exp(scores)\n"


SOLUTIONS = REPO / "solutions"


CELL_TIMEOUT = 300  # seconds; generous for a loaded CI machine, the notebooks need far less


WITH_SOLUTION = [nb for nb in NOTEBOOKS if (SOLUTIONS / nb.filename).exists()]


def _fruit_merge():
    """The lecture's 0.1 pomme + 0.1 banane + 0.8 citron, with the values the course ships."""
    from coursedata import load_fruit

    fruit = load_fruit()
    pomme, banane, citron = (
        fruit.values[fruit.value_words.index(w)] for w in ("pomme", "banane", "citron")
    )
    return (0.1 * pomme + 0.1 * banane + 0.8 * citron).tolist()


def _lecture_masked_softmax():
    """softmax(S + M) for the lecture's S, row by row, written out with math.exp."""
    rows = []
    for i, row in enumerate(LECTURE_SCORES):
        seen = [math.exp(s) for s in row[: i + 1]]
        rows.append([e / sum(seen) for e in seen] + [0.0] * (len(row) - i - 1))
    return rows


LECTURE_SCORES = [[12, 3, 5, 2], [4, 9, 3, 5], [2, 3, 7, 2], [3, 4, 1, 9]]


INF = math.inf


# Notebook 03's hand-worked example (Q, K, V in the notebook's markdown): per query, the scores
# floor(k_j . q_i / 2) are (0,2,2,0), (1,3,2,0), (1,2,3,0), (0,3,2,1); with 3^x they normalise to
# (1,9,9,1)/20, (3,27,9,1)/40, (3,9,27,1)/40, (1,27,9,3)/40 -- one column per query.
HAND_WEIGHTS = np.array(
    [[1, 9, 9, 1], [3, 27, 9, 1], [3, 9, 27, 1], [1, 27, 9, 3]], dtype=float
) / np.array([[20], [40], [40], [40]])


LECTURE = {
    "01_soft_lookup": {
        "fruit_weights": lambda: [0.1, 0.1, 0.8],
        "fruit_output": _fruit_merge,
    },
    "03_matrix_attention": {
        "masked_scores": lambda: [
            [12, -INF, -INF, -INF],
            [4, 9, -INF, -INF],
            [2, 3, 7, -INF],
            [3, 4, 1, 9],
        ],
        "masked_softmax": _lecture_masked_softmax,
        # the UBI lecture's "v1 -> 0.2 v1 + 0.6 v2 + 0.2 v3"
        "ubi_v1_weights": lambda: [0.2, 0.6, 0.2],
        "hand_weights_columns": lambda: HAND_WEIGHTS.T.tolist(),
        # z1 = 0.05 v1 + 0.45 v2 + 0.45 v3 + 0.05 v4 = (1.4, 0.6), and so on; columns = tokens
        "hand_outputs_columns": lambda: [[1.4, 1.15, 1.6, 1.2], [0.6, 0.35, 0.8, 0.4]],
    },
    "04_multihead_attention": {
        # The lecture's table for n=2, d=4, d_k=3, H=5, in SPEC's key order (W_q, W_k, W_v, W_o,
        # input, q, k, v, A, z, concat, output); its W^o is 4x15 in the column convention, so
        # ours is the transpose, 15x4.
        "mha_shapes": lambda: (
            [[4, 3]] * 3 + [[15, 4], [2, 4]] + [[2, 3]] * 3 + [[2, 2], [2, 3], [2, 15], [2, 4]]
        ),
        # Deck 004's training-data and training-compute columns, as the deck prints them (typed
        # in from the deck's text, quoted in the course review, item W1), in the order of the
        # notebook's model table; a dash where the deck gives no figure.
        "training_data": lambda: [
            *["–", "–"],  # Transformer-Base, -Large
            *["13 GB", "13 GB", "126 GB", "160 GB", "40 GB", "174 GB", "–", "694 GB"],
        ],
        "training_compute": lambda: [
            *["8x P100 (12 hours)", "8x P100 (3.5 days)", "–", "–"],
            *["512x TPU-v3 (2.5 days)", "1024x V100 (1 day)", "–", "512x V100 (9 days)"],
            *["256x V100", "–"],
        ],
    },
    "05_transformer_block": {
        # "I am a Robot", d = 4, base 100: the lecture's table, rounded to 2 decimals as printed.
        "robot_pe": lambda: [
            [0.00, 1.00, 0.00, 1.00],
            [0.84, 0.54, 0.10, 1.00],
            [0.91, -0.42, 0.20, 0.98],
            [0.14, -0.99, 0.30, 0.96],
        ],
        # The UBI lecture's second table (base 10000, d = 50): P[0] is (sin 0, cos 0, ...) for
        # any base and d, and its embedding x = [0.1, 0.7, 1.4, 2.1, 0.4] (first five) plus P[0].
        "ubi_p0": lambda: [0.0, 1.0, 0.0, 1.0, 0.0],
        "ubi_x_plus_p0": lambda: [0.1 + 0, 0.7 + 1, 1.4 + 0, 2.1 + 1, 0.4 + 0],
    },
    "06_autoregressive_lm": {
        # The lecture's self-supervised pairs: every prefix from "To date, the" on, and its next word.
        "issac_examples": lambda: [
            ["To date, the", "cleverest"],
            ["To date, the cleverest", "thinker"],
            ["To date, the cleverest thinker", "of"],
            ["To date, the cleverest thinker of", "all"],
            ["To date, the cleverest thinker of all", "time"],
            ["To date, the cleverest thinker of all time", "was"],
            ["To date, the cleverest thinker of all time was", "Issac"],
        ],
    },
}


def execute(path, cwd, env=None):
    """Run a notebook headless (kernel python3, cells in order); returns the executed notebook."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env={**os.environ, "NBGRADER_EXECUTION": "autograde", **(env or {})})
    return nb


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def without_ipywidgets(folder):
    """An environment whose kernel cannot import ipywidgets, as a fresh install of the handout
    (which does not ask for it): a module of that name on PYTHONPATH that refuses to import."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ipywidgets.py").write_text("raise ImportError('ipywidgets is not installed')\n")
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    }


@cache
def executed_solution(stem):
    no_widgets = Path(tempfile.mkdtemp(prefix="no-widgets-"))
    return execute(SOLUTIONS / f"{stem}.ipynb", cwd=SOLUTIONS, env=without_ipywidgets(no_widgets))


def lecture_lines(nb):
    """{key: value} from the 'lecture: key = value' lines of cells tagged lecture-numbers."""
    found = {}
    for cell in nb.cells:
        if "lecture-numbers" not in cell.get("metadata", {}).get("tags", []):
            continue
        for line in stdout(cell).splitlines():
            match = re.fullmatch(r"(?:lecture|checked): (\w+) = (.+)", line.strip())
            if match:
                literal = re.sub(
                    r"\binf\b", "1e999", match.group(2)
                )  # literal_eval reads 1e999 as inf
                found[match.group(1)] = ast.literal_eval(literal)
    return found


TRAIN_CASE = lm_probes._train_case  # the real one, before any test swaps it


def cheap_training(rng):
    """GPT's training case (10-20 s of training in the student's code) swapped for a free one
    worth the same points, for GPTs judged on their other cases."""
    points = TRAIN_CASE(np.random.default_rng(0)).points  # building it costs ~1 ms
    # drawn: a hidden request never equals a visible one (course/torch_shared/tools.py redraws them)
    idx = torch.from_numpy(rng.integers(0, lm_probes.GPT_INIT["vocab_size"], size=(1, 4))).long()
    request = {"op": "module", "init": lm_probes.GPT_INIT, "args": [idx]}
    return Case("GPT", "training (skipped in this test)", points, [request], lambda rs: None)


# -- a student's folder of one-cell notebooks (test_submissions, test_near_names) -------------
def one_cell_notebook(code):
    """The text of a notebook whose one code cell is `code`."""
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code, id="c")])
    )


def put_notebook(root, rel, code="x = 1"):
    """A one-cell notebook at root/rel (its folders made); its path."""
    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(one_cell_notebook(code))
    return path


def graded_files(sub):
    """{file name: its text} of what the grader will grade for this student."""
    return {p.name: p.read_text() for p in sorted(sub.folder.glob("*.ipynb"))}


# -- the sandbox: hand-written notebooks and requests (test_sandbox, test_watchdog, ...) --------
def load_script(path, name=None):
    """A script that is not a package module (benchmarks/*.py, examples/*.py), imported from its
    path: its functions, without running its main."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name or Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def answer(run, function):
    folder = run.responses / function / "000_00"
    raw = Reader(folder).read_json("response.json")
    return raw, Reader(folder)


# -- the notebooks' written answers (test_answers, test_answers_05_06) -----------------------
def manual_cells(nb):
    return [
        c
        for c in nb.cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    ]


# -- a class run whose grading is stood in: no sandbox, no kernel (test_not_graded, test_stopping)------------
class StandInSandbox:
    """The class run's sandbox where grading is stood in (nothing ever runs in it)."""

    def __init__(self, *args, **kwargs):
        from autograder.sandbox import Limits
        from autograder.sandbox.processes import Running

        self.running = Running()
        self.limits = Limits()

    def stop(self):
        self.running.stop()

    def close(self):
        pass


def stand_in_todo(monkeypatch, payload_of=None):
    """grading/classrun.py's _grade_todo replaced (no self-test, no sandbox): each student to
    grade is "graded" by writing payload_of(student) (default: 0 of 1) as their results.json,
    with the content digest and the grading fingerprint as grading/student.py records them.
    Returns the list of the students graded, in the order they were."""
    from autograder.grading import classrun
    from autograder.grading.student import StudentResult, output_folder
    from autograder.report import write_student

    graded = []

    def grade_todo(sorted_, config, run, progress, stop):
        done = []
        for sub in sorted_.todo:
            graded.append(sub.student)
            payload = dict(payload_of(sub.student)) if payload_of else {
                "score": 0.0, "max_score": 1.0, "output": "", "notebooks": {}, "tests": []}  # fmt: skip
            payload["student"] = sub.student
            payload["submission_digest"] = run.submission_digests.get(sub.student)
            payload["grading_fingerprint"] = run.fingerprint
            write_student(output_folder(config.out, sub.student), payload)
            done.append(StudentResult(sub.student, payload))
        return done, []  # (graded, unfinished)

    monkeypatch.setattr(classrun, "_grade_todo", grade_todo)
    return graded


def stand_in_grading(monkeypatch, payload_of):
    """grading/pool.py's grade_student and the class run's sandbox replaced: each student found
    is "graded" by writing payload_of(student) as their results.json, as grading writes it.
    Returns the list of the students graded, in the order they were."""
    from autograder.grading import classrun, pool
    from autograder.grading.student import StudentResult, output_folder
    from autograder.report import write_student

    graded = []

    def grade(student, folder, config, sandbox, placement=None, kept=None, files=None, run=None):
        graded.append(student)
        payload = {**payload_of(student), "student": student}
        payload["submission_digest"] = run.submission_digests.get(student)
        payload["grading_fingerprint"] = run.fingerprint
        write_student(output_folder(config.out, student), payload)
        return StudentResult(student, payload)

    monkeypatch.setattr(pool, "grade_student", grade)
    monkeypatch.setattr(classrun, "open_sandbox", StandInSandbox)
    return graded


# A process's peak resident memory, as its own: ru_maxrss is carried across exec on Linux, so a
# child started by a big pytest worker reports the worker's peak; VmHWM belongs to the process's
# own memory map, new at exec, and writing 5 to clear_refs lowers it to the present size.
PEAK_RSS_KB_LINE = (
    "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status')"
    " if l.startswith('VmHWM:')), file=sys.stderr)\n"
)


def reset_peak_rss() -> None:
    """This process's peak resident memory lowered to its present size (Linux 4.0 and later)."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started or since reset_peak_rss, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")
