"""More attacks on the grader, found by a red-team pass (docs/grader.md, "Attack classes (more)").

One small class is graded once (module fixture) by `python -m autograder grade` in a subprocess
whose peak memory is measured: an honest student (solutions/01) who must keep full marks, and
attackers who hold only notebook 01, each patching the harness in their own kernel or planting
files where the grader copies the answers out. The other attacks need no sandbox: they go
straight at the parent's code (submissions, judges) with what a student controls.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from fixtures import PEAK_RSS_KB_LINE, peak_rss_mb, reset_peak_rss

import autograder
from autograder.checks import run_in_process
from autograder.sandbox.pull import Folder
from autograder.submissions import discover

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
NB1 = "01_soft_lookup.ipynb"
REFERENCE = (REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py").read_text()
PLANTED = "PLANTED-BY-A-STUDENT"

# Notebook cells of the attackers. The driver loads a fresh copy of the harness after the
# student's cells (patching `autograder.harness` changes nothing), but the harness writes its
# answers with the standard library the student's cells share: a patched Path.write_text edits
# every answer before it is written.
ALIAS_ONE_ARRAY = """
import json, pathlib
import numpy as np
_write_text = pathlib.Path.write_text

def write_text(self, text, *args, **kwargs):
    if self.name == ".response.json.tmp" and "/lookup/" in str(self):
        (self.parent / "arrays").mkdir(exist_ok=True)
        np.save(self.parent / "arrays" / "big.npy", np.zeros(6 * 2**20))  # 48 MB
        answer = json.loads(text)
        answer["value"] = [{"$array": "big"}] * 50  # 2.4 GB if every reference is loaded
        text = json.dumps(answer)
    return _write_text(self, text, *args, **kwargs)

pathlib.Path.write_text = write_text
"""

IN_PLACE_PERCENTAGES = """
import json, pathlib

def percentages(scores):
    scores -= scores.max()  # changes the caller's array, and hides it (below)
    e = np.exp(scores)
    return e / e.sum()

_write_text = pathlib.Path.write_text

def write_text(self, text, *args, **kwargs):
    if self.name == ".response.json.tmp":
        answer = json.loads(text)
        answer.pop("args_after", None)
        text = json.dumps(answer)
    return _write_text(self, text, *args, **kwargs)

pathlib.Path.write_text = write_text
"""

# What a terminal would run if an instructor printed the sandbox log: a clear-screen, a window
# title, and an OSC 52 clipboard write.
TERMINAL_ESCAPES = (
    "import os\n"
    "os.write(2, b'\\x1b[2J\\x1b]0;owned\\x07\\x1b]52;c;ZWNobyBvd25lZA==\\x07 \\xe2\\x80\\xae')"
)


def plant_part_links(host_target):
    """A cell that leaves, where the answers are copied out of the sandbox, a link `x.part` to a
    host path next to a file `x` (in both creation orders, whatever order the folder lists)."""
    return f"""
import os
answers = os.path.abspath(os.path.join(os.getcwd(), "..", "responses"))
for k, link_first in enumerate((True, False, True, False)):
    folder = os.path.join(answers, f"zz{{k}}")
    os.makedirs(folder, exist_ok=True)
    def link():
        os.symlink({str(host_target)!r}, os.path.join(folder, "x.part"))
    def plain():
        with open(os.path.join(folder, "x"), "w") as f:
            f.write({PLANTED!r})
    for step in ((link, plain) if link_first else (plain, link)):
        step()
"""


def notebook(folder, name, *cells):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)


WRAPPER = (
    "import sys\n"
    "from autograder.__main__ import main\n"
    "code = main(sys.argv[1:])\n" + PEAK_RSS_KB_LINE + "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("more")
    host_target = root / "host" / "written-by-the-grader.txt"
    host_target.parent.mkdir()
    subs = root / "submissions"
    (subs / "honest").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / NB1, subs / "honest" / NB1)
    notebook(subs / "aliaser", NB1, REFERENCE, ALIAS_ONE_ARRAY)
    notebook(subs / "argsdropper", NB1, REFERENCE, "import numpy as np\n" + IN_PLACE_PERCENTAGES)
    notebook(subs / "partlinker", NB1, REFERENCE, plant_part_links(host_target), TERMINAL_ESCAPES)
    out, temp = root / "out", root / "tmp"
    temp.mkdir()
    argv = [str(subs), "--out", str(out), "--workers", "2", "--timeout", "60", "--quiet"]
    argv += ["--secret", "red-team", "--memory", "2"]
    run = subprocess.run(
        [sys.executable, "-c", WRAPPER, "grade", *argv],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=REPO,
        env=dict(os.environ, TMPDIR=str(temp)),
    )
    return {"run": run, "out": out, "host_target": host_target}


def results(graded, student):
    return json.loads((graded["out"] / student / "results.json").read_text())


def cases_of(payload, function):
    found = [t for t in payload["tests"] if t["function"] == function]
    assert found
    return found


def test_the_class_is_graded_and_the_honest_student_keeps_full_marks(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    info = results(graded, "honest")["notebooks"]["01_soft_lookup"]
    assert info["score"] == info["max_score"] > 0


# -- one array named many times in an answer ------------------------------------------------------
def test_an_answer_naming_one_array_many_times_is_refused(graded):
    payload = results(graded, "aliaser")
    for test in cases_of(payload, "lookup"):
        assert test["score"] == 0
        assert "more array data than one answer may hold" in test["output"], test["output"]
    assert all(t["status"] == "passed" for t in cases_of(payload, "similarity"))


def test_the_parent_never_loads_the_aliased_arrays(graded):
    line = next(x for x in graded["run"].stderr.splitlines() if x.startswith("PEAK_RSS_KB"))
    peak_mb = int(line.split()[1]) / 1024
    assert peak_mb < 1500, peak_mb  # 2.4 GB per answer before the aliases were counted


def test_the_sandbox_log_carries_no_terminal_escape_sequence(graded):
    log = (graded["out"] / "partlinker" / "sandbox.log").read_text()
    assert "owned" in log  # the flood arrived, escaped
    assert "\x1b" not in log and "\x07" not in log and "\u202e" not in log
    assert "\\x1b]52;c;" in log


# -- a harness patched to hide what the call did to its inputs -------------------------------------
def test_an_answer_without_the_inputs_after_the_call_fails_the_unmodified_case(graded):
    payload = results(graded, "argsdropper")
    [case] = [t for t in cases_of(payload, "percentages") if "unmodified" in t["name"]]
    assert case["score"] == 0
    assert "could not see the input" in case["output"]
    values = [t for t in cases_of(payload, "percentages") if "unmodified" not in t["name"]]
    assert all(t["status"] == "passed" for t in values)  # its values are right: only that case


# -- the copy of the answers out of the sandbox (autograder/sandbox/pull.py) ----------------------
def test_a_planted_part_link_does_not_make_the_grader_write_a_host_file(graded):
    assert not graded["host_target"].exists(), graded["host_target"].read_text()


def _planted_source(tmp_path, fifo=False):
    source = tmp_path / "inside"
    source.mkdir()
    target = tmp_path / "host-file"
    target.write_text("the grader's own file\n")
    for k in range(8):  # both creation orders, whatever order the folder lists them in
        folder = source / f"zz{k}"
        folder.mkdir()
        steps = [
            lambda f=folder: os.mkfifo(f / "x.part") if fifo else (f / "x.part").symlink_to(target),
            lambda f=folder: (f / "x").write_text(PLANTED),
        ]
        for step in steps if k % 2 == 0 else steps[::-1]:
            step()
    return source, target


def test_the_copy_out_never_writes_through_a_link(tmp_path):
    source, target = _planted_source(tmp_path)
    folder = Folder(os.open(source, os.O_RDONLY | os.O_DIRECTORY))
    try:
        folder.copy_to(tmp_path / "copied", max_bytes=2**20)
    finally:
        folder.close()
    assert target.read_text() == "the grader's own file\n"


def test_the_copy_out_never_blocks_on_a_planted_fifo(tmp_path):
    source, _ = _planted_source(tmp_path, fifo=True)
    code = (
        "import os, sys\n"
        "from autograder.sandbox.pull import Folder\n"
        "folder = Folder(os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY))\n"
        "folder.copy_to(sys.argv[2], max_bytes=2**20)\n"
    )
    try:
        subprocess.run(
            [sys.executable, "-c", code, str(source), str(tmp_path / "copied")],
            timeout=30,
            check=True,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the copy of the answers blocked on a FIFO")


def test_the_copy_out_counts_folders_against_its_cap(tmp_path):
    """A sandbox that leaves a flood of empty folders does not make the grader re-create them
    all on the host: folders count against max_files like files."""
    source = tmp_path / "inside"
    source.mkdir()
    for k in range(50):
        (source / f"d{k}").mkdir()
    (source / "answer").write_text("kept")
    folder = Folder(os.open(source, os.O_RDONLY | os.O_DIRECTORY))
    try:
        folder.copy_to(tmp_path / "copied", max_bytes=2**20, max_files=10)
    finally:
        folder.close()
    assert len(list((tmp_path / "copied").iterdir())) <= 10


# -- discovery: whose notebooks are graded under whose name ----------------------------------------
def _notebook_bytes(tag):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"# {tag}", id="only-cell")]
    return nbformat.writes(nb).encode()


def test_two_students_whose_names_look_alike_keep_their_own_notebooks(tmp_path):
    """'john smith.zip' and 'john_smith.zip' were staged into one folder (john_smith): the
    first was graded with the second's notebooks, so a student could take a classmate's work by
    naming their upload like theirs."""
    (tmp_path / "class").mkdir()
    names = ["john smith", "john_smith", "john?smith", "x" * 90 + "a", "x" * 90 + "b"]
    for name in names:
        with zipfile.ZipFile(tmp_path / "class" / f"{name}.zip", "w") as archive:
            archive.writestr(NB1, _notebook_bytes(name))
    found = discover(tmp_path / "class", tmp_path / "out", tmp_path / "staging")
    assert sorted(s.student for s in found) == sorted(names)
    for sub in found:
        assert (sub.folder / NB1).read_bytes() == _notebook_bytes(sub.student), sub.student
    assert len({s.folder for s in found}) == len(names)


def test_many_large_copies_of_a_notebook_are_not_held_in_memory(tmp_path):
    """Copies of one notebook in sub-folders were all read into a set to compare them: 40
    sparse 100 MB copies that differ in their last byte held 4 GB in the grading parent. (Now
    20 MB is the largest notebook read: 40 copies just under it.)"""
    from autograder.submissions import MAX_NOTEBOOK_BYTES

    student = tmp_path / "class" / "ann"
    for k in range(40):
        folder = student / f"copy{k}"
        folder.mkdir(parents=True)
        with open(folder / NB1, "wb") as handle:
            handle.truncate(MAX_NOTEBOOK_BYTES - 1)
            handle.write(bytes([k]))
    code = (
        "import sys\n"
        "from autograder.submissions import discover\n"
        "[sub] = discover(sys.argv[1], sys.argv[2], sys.argv[3], layout='student')\n"
        "print(sub.messages)\n" + PEAK_RSS_KB_LINE
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(student), str(tmp_path / "out"), str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "found 40 times" in run.stdout and "not graded" in run.stdout
    peak_mb = int(run.stderr.split("PEAK_RSS_KB")[1]) / 1024
    assert peak_mb < 600, peak_mb


def test_a_few_identical_copies_are_still_graded_as_one(tmp_path):
    student = tmp_path / "ann"
    for where in ("a", "b", "c"):
        (student / where).mkdir(parents=True)
        (student / where / NB1).write_bytes(_notebook_bytes("same"))
    [sub] = discover(student, tmp_path / "out", tmp_path / "staging", layout="student")
    assert (sub.folder / NB1).read_bytes() == _notebook_bytes("same")
    assert not sub.messages


# -- property cases and degenerate answers ---------------------------------------------------------
def identity_attention(X, W_q, W_k, W_v, mask=None):
    """Each token 'attends' only to itself: Z = V, A = I. Not attention, but permutation
    equivariant and causal."""
    n = X.shape[-2]
    return X @ W_v, np.broadcast_to(np.eye(n), (*X.shape[:-2], n, n)).copy()


def test_identity_attention_earns_no_property_points():
    results = run_in_process("self_attention", identity_attention, seed="red-team")
    properties = [r for r in results if "permut" in r.name or "later tokens" in r.name]
    assert len(properties) == 2
    assert all(r.score == 0 and "exactly 0" in r.output for r in properties), properties
    values = [r for r in results if r.name.split(": ", 1)[1].startswith(("no mask", "a "))]
    assert values and all(r.score == 0 for r in values)  # its values are wrong too


def test_a_real_attention_with_a_wrong_scale_keeps_its_property_points():
    def unscaled(X, W_q, W_k, W_v, mask=None):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        scores = Q @ np.swapaxes(K, -1, -2)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        return weights @ V, weights

    results = run_in_process("self_attention", unscaled, seed="red-team")
    properties = [r for r in results if "permut" in r.name or "later tokens" in r.name]
    assert len(properties) == 2 and all(r.status == "passed" for r in properties)
    assert any(r.status == "failed" for r in results)  # the values are wrong


def test_a_patched_harness_cannot_drop_the_inputs_after_the_call(monkeypatch):
    """In-process twin of the sandboxed argsdropper: same judge, no sandbox."""
    import importlib

    serve_module = importlib.import_module("autograder.harness.serve")
    original = serve_module.Session.op_call

    def op_call(self, request):
        answer = original(self, request)
        answer.pop("args_after", None)
        return answer

    def in_place(scores):
        scores -= scores.max()
        e = np.exp(scores)
        return e / e.sum()

    monkeypatch.setattr(serve_module.Session, "op_call", op_call)
    results = run_in_process("percentages", in_place, seed="red-team")
    [case] = [r for r in results if "unmodified" in r.name]
    assert case.score == 0 and "could not see the input" in case.output


def test_judging_many_aliased_answers_at_once_stays_small(tmp_path):
    """In-process twin of the aliaser: the judge refuses before it decodes."""

    from autograder.course.probes import build_cases
    from autograder.judging.answers import judge_cases
    from autograder.judging.base import request_folder

    cases = build_cases("01_soft_lookup", 7, functions={"lookup"})
    for i, case in enumerate(cases):
        for j, _ in enumerate(case.requests):
            folder = tmp_path / "lookup" / request_folder(i, j)
            (folder / "arrays").mkdir(parents=True)
            np.save(folder / "arrays" / "a0.npy", np.zeros(2**20))  # 8 MB, named 100 times
            answer = {"value": [{"$array": "a0"}] * 100, "args_after": []}
            (folder / "response.json").write_text(json.dumps(answer))
    reset_peak_rss()
    before = peak_rss_mb()
    done = []
    thread = threading.Thread(target=lambda: done.append(judge_cases(cases, tmp_path)))
    thread.start()
    thread.join(120)
    grown_mb = peak_rss_mb() - before
    assert done, "judging did not finish"
    assert all(r.score == 0 and "more array data" in r.output for r in done[0])
    assert grown_mb < 200, grown_mb  # 800 MB per answer when every reference was loaded


# -- a language model that knew the text before its training run ----------------------------------
def _training_answer(tmp_path, logits_before, logits_after):
    """The training case of GPT with one answer written as the harness writes it."""
    from autograder.course.probes import build_cases
    from autograder.harness.wire import Writer
    from autograder.judging.answers import judge_cases
    from autograder.judging.base import request_folder

    cases = build_cases("06_autoregressive_lm", 11, functions={"GPT"})
    [i] = [k for k, c in enumerate(cases) if "training run" in c.name]
    targets = cases[i].judge.params["targets"]
    writer = Writer(tmp_path / "GPT" / request_folder(0, 0))  # the only case judged below
    value = {"logits_before": logits_before(targets), "logits_after": logits_after(targets)}
    writer.write_json("response.json", {"value": writer.encode(value)})
    [result] = judge_cases([cases[i]], tmp_path)
    return result


def _knowing(targets, V=8):
    logits = np.full((*targets.shape, V), -20.0, dtype=np.float32)
    np.put_along_axis(logits, targets[..., None], 20.0, axis=-1)
    return logits


def _untrained(targets, V=8):
    return np.zeros((*targets.shape, V), dtype=np.float32)


def test_a_model_that_knew_the_text_before_training_fails_the_training_case(tmp_path):
    """A model that reads the text from elsewhere (the request files are readable in the
    sandbox) predicts it before any training: it learned nothing, and used to pass."""
    result = _training_answer(tmp_path, _knowing, _knowing)
    assert result.score == 0
    assert "before training" in result.output


def test_a_model_that_learns_the_text_passes_the_training_case(tmp_path):
    result = _training_answer(tmp_path, _untrained, _knowing)
    assert result.score == result.max_score, result.output


# -- odd objects returned, odd arrays written: the parent reads plain data only --------------------
class _Liar(np.ndarray):
    """Equal to everything, close to everything, and its ufuncs answer zeros."""

    def __eq__(self, other):
        return np.ones(self.shape, dtype=bool)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(self.shape)


class _Convertible:
    """Not an array, but says it is one (and a float) when asked."""

    def __init__(self, shape):
        self.shape = shape

    def __array__(self, dtype=None, copy=None):
        return np.zeros(self.shape)

    def __float__(self):
        return 0.0

    def __eq__(self, other):
        return True


def _liar(x, axis=-1):
    return np.zeros(np.shape(x)).view(_Liar)


def _masked(x, axis=-1):  # the right answer under a mask, zeros in the data
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return np.ma.masked_array(np.zeros_like(e), mask=np.ones(e.shape, dtype=bool))


ODD_SOFTMAX = {
    "ndarray subclass with a forged __eq__ and __array_ufunc__": _liar,
    "masked array hiding zeros": _masked,
    "object with __array__, __float__ and __eq__": lambda x, axis=-1: _Convertible(np.shape(x)),
    "all NaN": lambda x, axis=-1: np.full(np.shape(x), np.nan),
    "object dtype": lambda x, axis=-1: np.full(np.shape(x), 0.5, dtype=object),
    "structured dtype": lambda x, axis=-1: np.zeros(np.shape(x), dtype=[("a", "f8")]),
    "negative zeros": lambda x, axis=-1: np.full(np.shape(x), -0.0),
}


@pytest.mark.parametrize("kind", list(ODD_SOFTMAX))
def test_an_odd_object_returned_scores_nothing(kind):
    results = run_in_process("softmax", ODD_SOFTMAX[kind], seed="red-team")
    values = [r for r in results if "unmodified" not in r.name]
    assert values and all(r.score == 0 for r in values), [(r.name, r.output) for r in values]


@pytest.mark.parametrize(
    "array",
    [
        np.zeros(5, dtype=[("a", "<f8")]),  # structured
        np.zeros(5, dtype=">c16"),  # complex, big-endian
        np.array(["1.0"] * 5),  # strings
        np.zeros((2**40, 0)),  # a huge shape with no data
        np.full(5, np.inf),
    ],
    ids=["structured", "complex", "strings", "huge-empty", "inf"],
)
def test_an_odd_array_file_written_into_an_answer_scores_nothing(tmp_path, array):
    """Arrays written straight into the answer (not through the harness's Writer)."""
    from autograder.course.probes import build_cases
    from autograder.judging.answers import judge_cases
    from autograder.judging.base import request_folder

    cases = build_cases("01_soft_lookup", 3, functions={"percentages"})
    for i, case in enumerate(cases):
        for j, _ in enumerate(case.requests):
            folder = tmp_path / "percentages" / request_folder(i, j)
            (folder / "arrays").mkdir(parents=True)
            np.save(folder / "arrays" / "a0.npy", array, allow_pickle=False)
            answer = {"value": {"$array": "a0"}, "args_after": [{"$array": "a0"}]}
            (folder / "response.json").write_text(json.dumps(answer))
    results = judge_cases(cases, tmp_path)
    assert results and all(r.score == 0 and r.output for r in results)


# -- without bubblewrap: what an earlier notebook leaves where the grader reads later ones --------
SKIP_PLAN = (
    "import sys\n"
    "from autograder.demo_cells import skip_plan\n"
    "print('PLAN', len(skip_plan(sys.argv[1], '02_dot_product_softmax')))\n"
)


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_the_demo_cells_of_a_retried_notebook_are_read_without_following_anything(tmp_path, kind):
    """Without bubblewrap (`--sandbox none`, Gradescope's unprivileged-user fallback) the
    kernel's working folder is the grader's own copy on the host, and a notebook can replace a
    later one there (seen: a FIFO in place of 02) and kill its driver: the grader retries the
    notebooks not yet run, and first lists their demo cells (demo_cells.skip_plan). That read
    followed links (to /dev/zero: unbounded) and blocked on a FIFO, forever."""
    path = tmp_path / "02_dot_product_softmax.ipynb"
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a link to a real notebook with demo cells: followed, it gave a plan
        path.symlink_to(REPO / "notebooks" / "02_dot_product_softmax.ipynb")
    try:
        run = subprocess.run(
            [sys.executable, "-c", SKIP_PLAN, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading the notebook's demo cells blocked on a FIFO")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "PLAN 0" in run.stdout


def test_the_demo_cells_of_a_regular_notebook_are_still_found(tmp_path):
    shutil.copy(REPO / "notebooks" / "02_dot_product_softmax.ipynb", tmp_path)
    from autograder.demo_cells import skip_plan

    assert skip_plan(tmp_path / "02_dot_product_softmax.ipynb", "02_dot_product_softmax")


def test_a_torch_answer_without_the_inputs_after_the_call_fails_the_unchanged_case(monkeypatch):
    import importlib

    from autograder.course.n05_transformer_block.reference import layer_norm

    serve_module = importlib.import_module("autograder.harness.serve")
    original = serve_module.Session.op_call

    def op_call(self, request):
        answer = original(self, request)
        answer.pop("args_after", None)
        return answer

    monkeypatch.setattr(serve_module.Session, "op_call", op_call)
    results = run_in_process("layer_norm", layer_norm, seed="red-team")
    [case] = [r for r in results if "unchanged" in r.name]
    assert case.score == 0 and "could not see the inputs" in case.output
    assert all(r.status == "passed" for r in results if r is not case)
