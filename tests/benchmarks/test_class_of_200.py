"""benchmarks/class_of_200.py builds the class its header describes (built, never graded here)."""

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import nbformat
import pytest
from fixtures import load_script

import autograder
from autograder.curriculum import NOTEBOOKS
from autograder.notebook_files import match_name
from autograder.release import release_notebook

REPO = Path(autograder.__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
STEMS = [nb.stem for nb in NOTEBOOKS if (SOLUTIONS / nb.filename).exists()]
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


@pytest.fixture(scope="module")
def bench():
    return load_script(REPO / "benchmarks" / "class_of_200.py")


@pytest.fixture(scope="module")
def built(bench, tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    return root, bench.build(root, 14, seed=7)  # one whole cycle of the personas


def _solution_code(stem):
    """{grade_id: what a correct student writes}: the solution cell without the markers."""
    nb = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: "\n".join(
            line for line in c.source.split("\n") if line.strip() not in MARKERS
        )
        for c in nb.cells
        if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def _graded_cells(nb):
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    }


def test_fourteen_distinct_students_with_every_variant(bench, built):
    root, members = built
    folders = sorted(p.name for p in root.iterdir())
    assert len(members) == 14 and len(folders) == 14
    assert sorted(m.name for m in members) == folders
    assert len({unicodedata.normalize("NFC", f).casefold() for f in folders}) == 14
    assert {m.variant for m in members} == set(bench.VARIANTS)
    # half the class is a correct persona; every mistaken persona of the examples appears
    assert sum(m.persona == "ada" for m in members) == 7
    assert {m.persona for m in members} == {p.name for p in bench.BUILD.CLASS}


def test_no_two_notebooks_share_their_bytes(built):
    root, _ = built
    files = sorted(root.glob("*/*.ipynb"))
    assert len(files) > 14 * 5
    assert len({p.read_bytes() for p in files}) == len(files)


def test_the_variants_are_on_disk_as_a_real_class_hands_them_in(bench, built):
    root, members = built
    by_variant = {}
    for m in members:
        by_variant.setdefault(m.variant, []).append(m)
    on_disk = {p.name for p in root.iterdir()}
    nfd = by_variant["nfd-name"][0].name
    assert nfd in on_disk and nfd != unicodedata.normalize("NFC", nfd)
    nfc = by_variant["nfc-name"][0].name
    assert "é" in nfc and unicodedata.is_normalized("NFC", nfc)
    for variant, prefix, suffix in (
        ("copy-of", "Copy of ", ".ipynb"),
        ("near-1", "", " (1).ipynb"),
    ):
        names = sorted(p.name for p in (root / by_variant[variant][0].name).iterdir())
        odd = [n for n in names if n not in {f"{s}.ipynb" for s in STEMS}]
        assert len(odd) == 1 and odd[0].startswith(prefix) and odd[0].endswith(suffix)
        assert match_name(odd[0]).stem in STEMS  # a name the grader takes for its notebook
    for m in by_variant["missing"]:
        expected = len(STEMS) - (1 if m.persona == "late" else 0)
        assert expected - 2 <= len(list((root / m.name).iterdir())) < expected
    mine = by_variant["own-cells"][0]
    nb = nbformat.read(next((root / mine.name).glob("*.ipynb")), as_version=4)
    assert any(c.get("id", "").startswith("student-scratch") for c in nb.cells)


def test_the_stub_is_the_released_notebook_with_the_name_note(bench, built):
    root, members = built
    stubbed = next(m for m in members if m.variant == "stub")
    for filename, stem in stubbed.files.items():
        nb = nbformat.read(root / stubbed.name / filename, as_version=4)
        released = release_notebook(nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4))
        if [c.source for c in nb.cells[1:]] == [c.source for c in released.cells]:
            assert nb.cells[0].cell_type == "markdown" and stubbed.name in nb.cells[0].source
            break
    else:
        pytest.fail("no notebook of the stub student is the released one")
    assert not stubbed.correct


def test_correct_complete_students_hand_in_the_solutions_code(bench, built):
    root, members = built
    correct = [m for m in members if m.correct]
    assert correct and all(m.persona == "ada" for m in correct)
    assert not any(m.variant in ("missing", "stub") for m in correct)
    for m in correct:
        assert sorted(m.files.values()) == sorted(STEMS)
        for filename, stem in m.files.items():
            nb = nbformat.read(root / m.name / filename, as_version=4)
            cells = _graded_cells(nb)
            for grade_id, code in _solution_code(stem).items():
                assert cells[grade_id] == code, (m.name, stem, grade_id)
            assert nb.cells[0].cell_type == "markdown" and "nbgrader" not in nb.cells[0].metadata


def test_a_mistaken_student_is_not_counted_correct(bench, built):
    root, members = built
    wrong = next(m for m in members if m.persona == "no_scale")
    nb = nbformat.read(root / wrong.name / "02_dot_product_softmax.ipynb", as_version=4)
    assert (
        _graded_cells(nb)["scaled_scores"]
        != _solution_code("02_dot_product_softmax")["scaled_scores"]
    )
    assert not wrong.correct


def test_the_mix_is_fixed_by_the_seed(bench, built, tmp_path):
    root, members = built
    again = bench.build(tmp_path / "again", 14, seed=7)
    assert [(m.name, m.variant, m.files) for m in again] == [
        (m.name, m.variant, m.files) for m in members
    ]
    for m in again:
        for filename in m.files:
            same = (tmp_path / "again" / m.name / filename).read_bytes()
            assert same == (root / m.name / filename).read_bytes()
    other = bench.build(tmp_path / "other", 14, seed=8)
    assert [m.variant for m in other] != [m.variant for m in members]


@pytest.mark.slow
def test_two_students_graded_by_the_readme_command_end_with_the_json_line():
    """The script end to end on its first two students (seed 200: a correct student with cells
    of her own, and a student with an accented name who hands in the released notebooks untouched): both graded, the correct one at
    full marks, the figures there and consistent. No timing is asserted."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "class_of_200.py"), "--students", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["students"] == result["graded"] == 2 and result["not_graded"] == []
    assert result["correct_complete"] == result["correct_full_marks"] == 1
    assert result["mix"]["personas"] == {"ada": 1, "blank": 1}
    assert 0 < result["sandbox_cpu_s"] < result["cpu_s"]
    assert result["cpu_s_per_student"] == pytest.approx(result["cpu_s"] / 2, abs=0.01)
    assert 0 <= result["tail_s"] < result["wall_s"]
    assert "class.html" in result["class_files_after_last_student_s"]
    assert len(result["load_average_at_start"]) == len(result["load_average_at_end"]) == 3
