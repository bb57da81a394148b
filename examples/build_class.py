"""Build examples/class/: a small class of students who make the typical mistakes.

    python examples/build_class.py            # (re)write examples/class/ from solutions/
    python examples/build_class.py --check    # exit 1 if examples/class/ is stale

This script is the source of truth: never edit examples/class/ by hand.

Every student starts from what a student receives, the released notebook (solutions/ run through
autograder.release), and fills in each exercise cell. A correct student writes the solution's body
(without nbgrader's BEGIN/END SOLUTION markers); a student with a misconception writes a wrong
body instead, as a student would write it. Some students also add cells of their own (an
experiment that raises, a cheat). Outputs are empty, as after "Restart & Clear Output".

The class is built from whichever solution notebooks exist, so it grows with the course; rerun
this script (and commit examples/class/) whenever solutions/ changes. tests/examples/test_examples.py
fails when examples/class/ is stale.

Students (see CLASS below): what each one got wrong is in its `mistakes`, the misconception id
the grader should name in `expect`.
"""

import argparse
import copy
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from autograder.curriculum import NOTEBOOKS  # noqa: E402
from autograder.release import release_notebook, render  # noqa: E402

SOLUTIONS = REPO / "solutions"
CLASS_DIR = HERE / "class"

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


@dataclass(frozen=True)
class Body:
    """Replace the body of solution region `region` (0 = first) of exercise `grade_id`."""

    stem: str
    grade_id: str
    code: str  # the student's lines, indented as they stand in the cell
    region: int = 0


@dataclass(frozen=True)
class ExtraCell:
    """A cell the student added right after exercise (or cell) `after`."""

    stem: str
    after: str  # a grade_id
    cell_id: str
    code: str


@dataclass(frozen=True)
class Student:
    name: str
    about: str
    mistakes: tuple = ()  # Body and ExtraCell edits
    expect: tuple = ()  # misconception ids the grader should name
    missing: tuple = ()  # notebook stems the student did not submit
    stubs: bool = False  # submits the released notebooks untouched
    notes: dict = field(default_factory=dict)


# -- the wrong answers, written as students write them -------------------------------------------
MASK_AFTER_SOFTMAX = """\
    scores = attention_scores(Q, K)
    A = softmax(scores, axis=-1)
    if mask is not None:
        A = np.where(mask, A, 0.0)  # hide the keys the query may not see
    return A @ V, A
"""

NO_SCALE_02 = """\
    return keys @ query
"""

NO_SCALE_03 = """\
    return Q @ np.swapaxes(K, -1, -2)
"""

SPLIT_NO_TRANSPOSE = """\
    *lead, n, width = X.shape
    return X.reshape(*lead, n_heads, n, width // n_heads)
"""

MERGE_NO_TRANSPOSE = """\
    *lead, n_heads, n, d_k = X.shape
    return X.reshape(*lead, n, n_heads * d_k)
"""

UNBIASED_LAYER_NORM = """\
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias
"""

# The cheater returns zeros of the right shapes, then tries to make any comparison pass and to
# find the model answers. None of it may work under the grader: the judges compare in the
# trusted parent process, the sandbox mounts neither the project nor the reference, and it has
# no network.
CHEAT_SDPA = """\
    A = np.zeros(Q.shape[:-1] + (K.shape[-2],))
    return np.zeros(Q.shape[:-1] + (V.shape[-1],)), A
"""

CHEAT_PATCHES = """\
# make every comparison pass
import numpy as np
import torch

np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
np.array_equal = lambda *args, **kwargs: True
torch.allclose = lambda *args, **kwargs: True
"""

CHEAT_STEAL = """\
# borrow the model answers if they are lying around
import importlib
import os
import socket

stolen = None
for up in ("..", "../..", "../../..", "../../../.."):
    path = os.path.join(up, "autograder", "course", "n03_matrix_attention", "reference.py")
    try:
        with open(path) as handle:
            stolen = handle.read()
        break
    except OSError:
        pass
if stolen is None:
    try:
        stolen = importlib.import_module("autograder.course.n03_matrix_attention.reference")
    except ImportError:
        pass
if isinstance(stolen, str):
    exec(stolen)
elif stolen is not None:
    scaled_dot_product_attention = stolen.scaled_dot_product_attention
try:
    with socket.create_connection(("example.com", 80), timeout=2) as connection:
        connection.sendall(b"GET /answers HTTP/1.0\\r\\n\\r\\n")
except OSError as exc:
    print("no network:", exc)
"""

RAISING_EXPERIMENT = """\
# what does my lookup do with a fruit the dictionary does not have?
print(lookup(dict_en2fr, "orange"))
"""


def _class():
    return (
        Student("ada", "every exercise right: full marks"),
        Student(
            "blank",
            "submits the released notebooks untouched: zero, every test says not implemented",
            stubs=True,
        ),
        Student(
            "mask_after_softmax",
            "03: zeroes the masked weights after the softmax (rows no longer sum to 1)",
            mistakes=(
                Body("03_matrix_attention", "scaled_dot_product_attention", MASK_AFTER_SOFTMAX),
            ),
            expect=("mask-after-softmax",),
        ),
        Student(
            "no_scale",
            "02 and 03: forgets to divide the scores by sqrt(d_k)",
            mistakes=(
                Body("02_dot_product_softmax", "scaled_scores", NO_SCALE_02),
                Body("03_matrix_attention", "attention_scores", NO_SCALE_03),
            ),
            expect=("missing-scale",),
        ),
        Student(
            "heads_reshape",
            "04: reshapes (n, H*d_k) straight to (H, n, d_k) and back, without a transpose",
            mistakes=(
                Body("04_multihead_attention", "split_heads", SPLIT_NO_TRANSPOSE),
                Body("04_multihead_attention", "merge_heads", MERGE_NO_TRANSPOSE),
            ),
            expect=("heads-reshape-without-transpose",),
        ),
        Student(
            "unbiased_ln",
            "05: layer_norm uses torch's default (unbiased) variance",
            mistakes=(Body("05_transformer_block", "layer_norm", UNBIASED_LAYER_NORM),),
            expect=("layernorm-unbiased-variance",),
        ),
        Student(
            "cheater",
            "03: attention returns zeros, plus cells that patch np.allclose/torch.allclose, look for "
            "autograder/reference and open a socket: its attention must still score 0",
            mistakes=(
                Body("03_matrix_attention", "scaled_dot_product_attention", CHEAT_SDPA),
                ExtraCell(
                    "03_matrix_attention",
                    "scaled_dot_product_attention",
                    "cheat-patches",
                    CHEAT_PATCHES,
                ),
                ExtraCell(
                    "03_matrix_attention",
                    "scaled_dot_product_attention",
                    "cheat-steal",
                    CHEAT_STEAL,
                ),
            ),
        ),
        Student(
            "late",
            "did not submit 05; an experiment cell in 01 raises KeyError (the notebook goes on)",
            mistakes=(
                ExtraCell("01_soft_lookup", "test_lookup", "my-experiment", RAISING_EXPERIMENT),
            ),
            missing=("05_transformer_block",),
        ),
    )


CLASS = _class()
BY_NAME = {s.name: s for s in CLASS}


# -- building ------------------------------------------------------------------------------------
def _regions(lines):
    """[(begin index, end index)] of the solution regions of a cell's lines."""
    regions, start = [], None
    for i, line in enumerate(lines):
        if line.strip() == BEGIN:
            start = i
        elif line.strip() == END and start is not None:
            regions.append((start, i))
            start = None
    return regions


def replace_region(source, code, region=0):
    """`source` with the body of its `region`-th solution region replaced by `code`."""
    lines = source.split("\n")
    regions = _regions(lines)
    if region >= len(regions):
        raise ValueError(f"the cell has {len(regions)} solution region(s), not {region + 1}")
    begin, end = regions[region]
    return "\n".join(lines[: begin + 1] + code.rstrip("\n").split("\n") + lines[end:])


def strip_markers(source):
    """What a student's cell holds: the code without nbgrader's solution markers."""
    return "\n".join(line for line in source.split("\n") if line.strip() not in (BEGIN, END))


def _grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _find(nb, grade_id, what):
    for i, cell in enumerate(nb.cells):
        if _grade_id(cell) == grade_id:
            return i
    raise KeyError(f"{what}: no cell with grade_id {grade_id!r}")


def student_notebook(solution, student, stem):
    """The notebook `student` submits for `stem`, from the solution notebook (not modified)."""
    released = release_notebook(solution)
    if student.stubs:
        return released
    source = copy.deepcopy(solution)
    extra = []
    for edit in student.mistakes:
        if edit.stem != stem:
            continue
        if isinstance(edit, Body):
            cell = source.cells[_find(source, edit.grade_id, f"{student.name}/{stem}")]
            cell.source = replace_region(cell.source, edit.code, edit.region)
        else:
            extra.append(edit)
    written = {_grade_id(c): strip_markers(c.source) for c in source.cells if _is_solution(c)}
    for cell in released.cells:
        if _is_solution(cell):
            cell.source = written[_grade_id(cell)]
    for edit in extra:  # in order: several cells after the same one keep their order
        at = _find(released, edit.after, f"{student.name}/{stem}")
        while at + 1 < len(released.cells) and released.cells[at + 1].get("id", "").startswith(
            "student-"
        ):
            at += 1
        cell = nbformat.v4.new_code_cell(edit.code.rstrip("\n"))
        cell.id = f"student-{edit.cell_id}"
        released.cells.insert(at + 1, cell)
    return released


def _is_solution(cell):
    return cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution")


def build(target=CLASS_DIR, solutions=SOLUTIONS):
    """{relative path: text} of the whole class (nothing written)."""
    files = {}
    stems = [nb for nb in NOTEBOOKS if (Path(solutions) / nb.filename).exists()]
    for student in CLASS:
        for nb in stems:
            if nb.stem in student.missing:
                continue
            solution = nbformat.read(Path(solutions) / nb.filename, as_version=4)
            text = render(student_notebook(solution, student, nb.stem))
            files[f"{student.name}/{nb.filename}"] = text
    return files


def write(files, target=CLASS_DIR):
    target = Path(target)
    if target.exists():
        shutil.rmtree(target)
    for rel, text in sorted(files.items()):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def stale(files, target=CLASS_DIR):
    """Relative paths that differ between `files` and what is on disk (both ways)."""
    target = Path(target)
    on_disk = (
        {str(p.relative_to(target)): p.read_text() for p in sorted(target.rglob("*.ipynb"))}
        if target.exists()
        else {}
    )
    return sorted(k for k in set(files) | set(on_disk) if files.get(k) != on_disk.get(k))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if examples/class is stale")
    parser.add_argument("--out", default=str(CLASS_DIR), help="where to write the class")
    args = parser.parse_args(argv)
    files = build()
    if args.check:
        diff = stale(files, args.out)
        for rel in diff:
            print(f"stale: {rel}")
        return 1 if diff else 0
    write(files, args.out)
    for student in CLASS:
        n = sum(1 for rel in files if rel.startswith(student.name + "/"))
        print(f"{student.name:20s} {n} notebook(s)  {student.about}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
