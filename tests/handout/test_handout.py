"""The student handout (`python -m autograder handout`): what it holds, that it holds no answer,
that its visible checks say what the full package says, and that it works installed alone.

The leak test's rules are tests/handout/leaks.py's docstring: normalised code blocks (ast, docstrings
dropped, names alpha-renamed) of the model answers, the probes, the variants and the solution
regions, looked for among the bundle's blocks, plus a plain-text scan for long identical lines.
The detector itself is tested by planting answers in a copy of the bundle.
"""

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
import tomllib
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

import autograder.checks as checks
from autograder.course import model_answers as R
from autograder.curriculum import BY_STEM, FOLLOWS, GRADED_NAMES, NOTEBOOKS, OPTIONAL, handed_out
from autograder.handout import SHIPPED, STUDENT_PACKAGES, build_handout
from autograder.release import REPO, SOLUTIONS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leaks  # noqa: E402 - the detector, beside this file

# Nothing is allowed to leak (the harness trains on batches the parent chose, so it holds no
# get_batch, and its loss is not written as the lm_loss answer).
KNOWN_LEAKS = set()
# Where the tests' handouts say they are published (the pyproject's Handout is a placeholder,
# which build_handout refuses).
PUBLISHED = "https://github.com/some-school/attention-handout"
# Answers too small to tell from honest code (`return table[query]`, `return keys @ query`):
# below leaks.MIN_ANSWER nodes, so the detector does not look for them.
TOO_SMALL = {"lookup", "similarity"}
# Exercises with a solution region but no auto-graded name: notebook 06's training loop.
UNGRADED_EXERCISES = {
    "train",
    "half_split_to_interleaved",
}  # 06's loop; 08's load_hf_llama's helper


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout") / "course"
    build_handout(out, repository=PUBLISHED)
    return out


@pytest.fixture(scope="module")
def secrets():
    return leaks.collect_secrets()


# -- what is in it ---------------------------------------------------------------------------
@pytest.mark.slow  # builds the whole handout
def test_the_handout_holds_the_notebooks_the_data_and_a_checker_without_answers(handout):
    assert sorted(p.name for p in (handout / "notebooks").iterdir()) == sorted(
        nb.filename for nb in handed_out()
    )
    for nb in (
        handed_out()
    ):  # the released notebooks, exactly (the optional ones too), after the Colab cell
        cells = nbformat.read(handout / "notebooks" / nb.filename, as_version=4).cells
        released = nbformat.read(REPO / "notebooks" / nb.filename, as_version=4).cells
        assert cells[0].id == "colab-setup" and cells[1:] == released
    package = handout / "checker" / "autograder"
    shipped = {str(p.relative_to(package)) for p in package.rglob("*.py")}
    expected = {"__init__.py"} | {
        str(p.relative_to(REPO / "autograder"))
        for pattern in SHIPPED
        for p in (REPO / "autograder").glob(pattern)
    }
    assert shipped == expected
    assert not {"reference", "probes", "sandbox", "report"} & {p.name for p in package.iterdir()}
    assert not list(package.rglob("*_variants.py"))
    data = handout / "checker" / "coursedata"
    assert (data / "fruit.json").is_file() and (data / "shakespeare.py").is_file()
    files = [p for p in handout.rglob("*") if p.is_file() and p.parent.name != "checker-wheel"]
    assert max(p.stat().st_size for p in files) < 1_000_000  # no corpus
    # the wheel the Colab cell installs is checker/'s packages, byte for byte, and nothing else
    (wheel,) = (handout / "checker-wheel").iterdir()
    with zipfile.ZipFile(wheel) as built:
        packaged = [n for n in built.namelist() if n.split("/")[0] in ("autograder", "coursedata")]
        others = {n.split("/")[0] for n in built.namelist()} - {"autograder", "coursedata"}
        assert all(o.endswith((".dist-info", ".data")) for o in others), others
        for name in packaged:
            assert built.read(name) == (handout / "checker" / name).read_bytes(), name
    assert {n for n in packaged if n.startswith("autograder/visible/")} == {
        str(p.relative_to(handout / "checker"))
        for p in (package / "visible").rglob("*")
        if p.is_file()
    }
    stored = json.loads((package / "visible" / "index.json").read_text())
    assert stored == list(GRADED_NAMES)


@pytest.mark.slow  # builds the whole handout
def test_the_checker_accepts_ranges_that_hold_the_courses_pins(handout):
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = [p for p in project["dependencies"] if p.split("==")[0] in STUDENT_PACKAGES]
    checker = tomllib.loads((handout / "checker" / "pyproject.toml").read_text())["project"]
    assert checker["requires-python"] == project["requires-python"] == ">=3.11,<3.14"
    ranges = [Requirement(r) for r in checker["dependencies"]]
    # the kernel is the lab extra's: Colab's own kernel (which the checker never imports) is not
    # upgraded under the running notebook
    assert not {"ipykernel", "jupyterlab"} & {r.name for r in ranges}
    ranges += [Requirement(r) for r in checker["optional-dependencies"]["lab"]]
    assert {r.name for r in ranges} == set(STUDENT_PACKAGES)
    for pin in pins:  # every course version is inside the checker's range ...
        name, version = pin.split("==")
        assert next(r for r in ranges if r.name == name).specifier.contains(version), pin
    torch = next(r for r in ranges if r.name == "torch").specifier
    assert not torch.contains("2.5.1") and torch.contains("2.6.0") and torch.contains("2.9.1")
    assert not torch.contains("3.0.0")  # ... and an older or a newer major torch is refused
    # the handout's requirements.txt keeps the course's exact pins (the course's environment)
    requirements = (handout / "requirements.txt").read_text().splitlines()
    assert sorted(line for line in requirements if "==" in line) == sorted(pins)
    assert "torch==2.13.0" in requirements and "./checker" in requirements
    readme = (handout / "README.md").read_text()
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in readme
    assert "pip install -r requirements.txt" in readme and "jupyter lab notebooks/" in readme
    assert 'pip install "./checker[lab]"' in readme and "3.11, 3.12 or 3.13" in readme


@pytest.mark.slow  # builds a handout
def test_the_readme_opens_each_notebook_in_colab_from_the_handouts_repository(tmp_path):
    out = tmp_path / "h"
    build_handout(out, stage=2, repository="https://github.com/some-school/attention-2027")
    links = re.findall(r"\[Open in Colab\]\((\S+)\)", (out / "README.md").read_text())
    assert links == [
        "https://colab.research.google.com/github/some-school/attention-2027/blob/main/"
        f"notebooks/{nb.filename}"
        for nb in NOTEBOOKS[:2]
    ]
    # the checker this handout was built with, by its hash: never the branch as it is later
    cell = nbformat.read(out / "notebooks" / NOTEBOOKS[1].filename, as_version=4).cells[0]
    (wheel,) = (out / "checker-wheel").iterdir()
    assert wheel.name.endswith("-py3-none-any.whl")
    assert (
        f"https://github.com/some-school/attention-2027/raw/HEAD/checker-wheel/{wheel.name}"
        in cell.source
    )
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() in cell.source
    assert "git+" not in cell.source


def test_the_handout_refuses_the_placeholder_address(tmp_path, capsys):
    """Built with pyproject's `YOUR-ORG` Handout, every Colab cell installed from an account
    anyone could register."""
    from autograder.__main__ import main
    from autograder.handout import PlaceholderRepository, handout_repository

    assert "YOUR-ORG" in handout_repository()  # this repository's, until a course sets it
    with pytest.raises(PlaceholderRepository, match="placeholder"):
        build_handout(tmp_path / "h")
    with pytest.raises(PlaceholderRepository, match="placeholder"):
        build_handout(tmp_path / "h", repository="https://github.com/your-org/attention")
    with pytest.raises(SystemExit, match=r"Handout in pyproject.toml .* --repository URL"):
        main(["handout", "--out", str(tmp_path / "h")])
    assert not (tmp_path / "h").exists()  # refused before anything is written


def _run_colab_cell(source, env, python=sys.executable, wheels=None, before="", during=""):
    """Run a Colab cell in `python` with subprocess.run recorded (and not run): the commands.
    Downloads are answered from the folder `wheels`; `before` runs first, `during` in the
    recorded call (as pip would change the disk)."""
    script = (
        "import json, os, subprocess, sys, urllib.request\n"
        f"{before}\n"
        "calls = []\n"
        "class Done:\n    returncode = 0\n    stderr = ''\n"
        f"def record(args, **kw):\n    calls.append(list(args))\n{textwrap.indent(during or 'pass', '    ')}\n    return Done()\n"
        "subprocess.run = record\n"
        f"def fetch(url, timeout=None):\n    calls.append(['fetch', url])\n    return open(os.path.join({str(wheels)!r}, url.rsplit('/', 1)[1]), 'rb')\n"
        "urllib.request.urlopen = fetch\n"
        f"try:\n    exec(compile({source!r}, 'colab cell', 'exec'), {{}})\n"
        "except RuntimeError as error:\n    print('RAISED', error)\n"
        "print('CALLS' + json.dumps(calls))\n"
    )  # fmt: skip
    done = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.split("CALLS", 1)[1]), done.stdout


@pytest.mark.slow  # builds the whole handout
def test_the_colab_cell_does_nothing_outside_colab(handout):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLAB_")}
    for nb in NOTEBOOKS:
        source = nbformat.read(handout / "notebooks" / nb.filename, as_version=4).cells[0].source
        calls, printed = _run_colab_cell(source, env)
        assert calls == [] and printed.strip() == "CALLS[]", nb.filename


@pytest.mark.slow  # builds the whole handout
def test_on_colab_the_cell_installs_the_checker_with_every_installed_package_kept(handout):
    from importlib.metadata import version

    source = nbformat.read(handout / "notebooks" / "04_multihead_attention.ipynb", as_version=4)
    env = {**os.environ, "COLAB_RELEASE_TAG": "simulated"}
    calls, printed = _run_colab_cell(source.cells[0].source, env, wheels=handout / "checker-wheel")
    (wheel,) = (handout / "checker-wheel").iterdir()
    assert calls[0] == ["fetch", f"{PUBLISHED}/raw/HEAD/checker-wheel/{wheel.name}"]
    assert len(calls) == 2
    command = calls[1]
    assert command[1:4] == ["-m", "pip", "install"] and "--upgrade" not in command
    constraints = Path(command[command.index("-c") + 1]).read_text().split()
    assert f"torch=={version('torch')}" in constraints  # the installed torch is kept
    assert f"numpy=={version('numpy')}" in constraints
    assert Path(command[-1]).name == wheel.name  # the wheel it fetched and checked
    assert "the course's checks are installed" in printed
    # notebook 04 reads the student's 02 and 03: the cell says to upload them when absent
    assert "upload it next to this notebook" in printed


def _colab_with_tqdm(tmp_path, version):
    """(its dist-info folder, the environment of a simulated Colab) where tqdm's metadata says
    `version` (the module itself is the installed tqdm)."""
    info = tmp_path / "site" / f"tqdm-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tqdm\nVersion: {version}\n")
    path = os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))
    return info, {**os.environ, "COLAB_RELEASE_TAG": "simulated", "PYTHONPATH": path}


@pytest.mark.slow  # builds the whole handout
def test_on_colab_the_cell_leaves_to_pip_a_package_outside_the_checkers_range(handout, tmp_path):
    from importlib.metadata import version

    # Ubuntu 24.04's own tqdm (python3-tqdm 4.66.2) says its version is 0.0.0: kept as
    # tqdm==0.0.0 beside the checker's tqdm>=4.64 it made pip's resolution impossible
    _, env = _colab_with_tqdm(tmp_path, "0.0.0")
    source = nbformat.read(handout / "notebooks" / "01_soft_lookup.ipynb", as_version=4)
    (_, command), printed = _run_colab_cell(
        source.cells[0].source, env, wheels=handout / "checker-wheel"
    )
    constraints = Path(command[command.index("-c") + 1]).read_text().split()
    assert not [c for c in constraints if c.startswith("tqdm")]
    assert f"torch=={version('torch')}" in constraints  # what fits is still kept
    assert f"numpy=={version('numpy')}" in constraints
    assert "so pip installs another: tqdm 0.0.0" in printed


@pytest.mark.slow  # builds the whole handout
def test_on_colab_a_checker_that_is_not_the_released_one_is_never_installed(handout, tmp_path):
    """The cell installed whatever the repository's default branch held when it ran."""
    (wheel,) = (handout / "checker-wheel").iterdir()
    (tmp_path / wheel.name).write_bytes(wheel.read_bytes() + b"pushed later")
    env = {**os.environ, "COLAB_RELEASE_TAG": "simulated"}
    source = nbformat.read(handout / "notebooks" / "01_soft_lookup.ipynb", as_version=4)
    calls, printed = _run_colab_cell(source.cells[0].source, env, wheels=tmp_path)
    assert [c[0] for c in calls] == ["fetch"]  # and no pip
    assert "RAISED The course's checks downloaded from" in printed
    assert "not the ones this notebook was released with" in printed
    assert "are installed" not in printed


@pytest.mark.slow  # builds the whole handout
@pytest.mark.parametrize("imported", [True, False])
def test_on_colab_replacing_a_loaded_package_says_to_restart_the_runtime(
    handout, tmp_path, imported
):
    """numpy imported before the cell ran, then replaced on disk by pip: the cell said the checks
    were installed, and the next cell failed with an AttributeError, every later one with a
    NameError. Here pip (recorded) moves tqdm from 4.65.0 to 4.99.0 on disk."""
    info, env = _colab_with_tqdm(tmp_path, "4.65.0")
    source = nbformat.read(handout / "notebooks" / "01_soft_lookup.ipynb", as_version=4)
    calls, printed = _run_colab_cell(
        source.cells[0].source,
        env,
        wheels=handout / "checker-wheel",
        before="import tqdm" if imported else "",
        during=f"open({str(info / 'METADATA')!r}, 'w').write("
        "'Metadata-Version: 2.1\\nName: tqdm\\nVersion: 4.99.0\\n')",
    )
    assert [c[0] for c in calls][:1] == ["fetch"] and len(calls) == 2  # it did install
    if imported:
        assert "RAISED The course's checks are on disk, but pip replaced a package" in printed
        assert "(tqdm 4.65.0 -> 4.99.0)" in printed and "Restart the runtime now" in printed
        assert "are installed" not in printed
    else:  # nothing in memory to disagree with the disk
        assert "RAISED" not in printed and "the course's checks are installed" in printed


@pytest.mark.slow  # builds the whole handout
def test_on_colab_replacing_any_loaded_dependency_says_to_restart(handout, tmp_path):
    """Not only the checker's own requirements: pip may replace one of their dependencies
    (here `plotdep`, whose module `plotdep_mod` the session imported) on disk as well."""
    site = tmp_path / "site"
    info = site / "plotdep-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plotdep\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("plotdep_mod\n")
    (site / "plotdep_mod.py").write_text("")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "COLAB_RELEASE_TAG": "simulated", "PYTHONPATH": path}
    source = nbformat.read(handout / "notebooks" / "01_soft_lookup.ipynb", as_version=4)
    _, printed = _run_colab_cell(
        source.cells[0].source,
        env,
        wheels=handout / "checker-wheel",
        before="import plotdep_mod",
        during=f"open({str(info / 'METADATA')!r}, 'w').write("
        "'Metadata-Version: 2.1\\nName: plotdep\\nVersion: 2.0\\n')",
    )
    assert "(plotdep 1.0 -> 2.0)" in printed and "Restart the runtime now" in printed
    assert "are installed" not in printed


@pytest.mark.slow  # builds the whole handout
def test_a_weekly_stage_holds_its_notebooks_and_only_their_cases(handout, tmp_path, secrets):
    build_handout(tmp_path / "week3", stage=3, repository=PUBLISHED)
    notebooks = sorted(p.name for p in (tmp_path / "week3" / "notebooks").iterdir())
    assert notebooks == [nb.filename for nb in NOTEBOOKS[:3]]
    for name in notebooks:  # the same, but for the Colab cell: it installs week 3's checker
        week3 = nbformat.read(tmp_path / "week3" / "notebooks" / name, as_version=4).cells
        assert week3[1:] == nbformat.read(handout / "notebooks" / name, as_version=4).cells[1:]
        (wheel,) = (tmp_path / "week3" / "checker-wheel").iterdir()
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() in week3[0].source
    index = tmp_path / "week3" / "checker" / "autograder" / "visible" / "index.json"
    assert json.loads(index.read_text()) == [n for nb in NOTEBOOKS[:3] for n in nb.graded]
    assert set(leaks.leaks(tmp_path / "week3", secrets)) == KNOWN_LEAKS
    with pytest.raises(FileExistsError):
        build_handout(tmp_path / "week3", stage=3, repository=PUBLISHED)


@pytest.mark.slow  # builds the whole handout
def test_an_optional_notebook_ships_with_the_notebook_it_follows_and_is_never_graded(
    handout, tmp_path
):
    readme = (handout / "README.md").read_text()
    for extra in OPTIONAL:
        assert extra.graded == () and extra.stem not in BY_STEM  # nothing grades it
        assert f"| `{extra.filename}` | optional, not graded |" in readme
        released = nbformat.read(handout / "notebooks" / extra.filename, as_version=4)
        assert not [c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade")]
    shipped = {}
    for stage in (4, 5, 6):
        build_handout(tmp_path / f"week{stage}", stage=stage, repository=PUBLISHED)
        shipped[stage] = {p.name for p in (tmp_path / f"week{stage}" / "notebooks").iterdir()}
        graded = {nb.filename for nb in NOTEBOOKS[:stage]}
        assert graded <= shipped[stage], stage
    # each optional notebook arrives with the one it follows, never before
    assert shipped[4] == {nb.filename for nb in NOTEBOOKS[:4]}
    assert shipped[5] == {nb.filename for nb in NOTEBOOKS[:5]} | {"05b_encoder_decoder.ipynb"}
    assert shipped[6] == {nb.filename for nb in NOTEBOOKS[:6]} | {
        "05b_encoder_decoder.ipynb",
        "06b_inside_the_lm.ipynb",
    }
    assert {FOLLOWS[x.stem] for x in OPTIONAL} <= set(BY_STEM)


# -- no answers in it --------------------------------------------------------------------------
@pytest.mark.slow  # builds the whole handout
def test_no_answer_is_anywhere_in_the_handout(handout, secrets):
    assert set(leaks.leaks(handout, secrets)) == KNOWN_LEAKS


@pytest.mark.slow  # collects every answer of the course
def test_the_secrets_cover_every_answer(secrets):
    """Every graded name's model answer, and every solution region, is among what is looked for."""
    wheres = set().union(*secrets.blocks.values())
    for name in GRADED_NAMES:
        module = BY_STEM[checks.NOTEBOOK_OF[name].stem].reference_path
        assert f"{module.replace('.', '/')}.py: {name}" in wheres, name
    regions = {w.rsplit(" of ", 1)[-1] for w in wheres if "solution region" in w}
    # ungraded exercises the release stubs like the graded ones: notebook 05's bridge and
    # notebook 06's training loop
    practice = {"softmax_t", "split_heads_t"} | UNGRADED_EXERCISES
    assert regions == (set(GRADED_NAMES) | practice) - TOO_SMALL
    assert any(w.startswith("autograder/course/probes.py") for w in wheres)
    for folder in {nb.package for nb in NOTEBOOKS}:
        assert any(w.startswith(f"autograder/course/{folder}/cases") for w in wheres), folder
        assert any(w.startswith(f"autograder/course/{folder}/variants") for w in wheres), folder


PLANTED_RENAMED = '''
def helper_for_plots(values, dim=-1):
    """Normalise values: a docstring nothing in the course has."""
    values = np.asarray(values, dtype=float)
    top = np.exp(values - np.max(values, axis=dim, keepdims=True))
    return top / top.sum(axis=dim, keepdims=True)
'''


def _plant(bundle, tmp_path, relative, text):
    """A copy of the bundle with `text` appended to (or written as) one file."""
    copy = tmp_path / "planted"
    shutil.copytree(bundle, copy)
    target = copy / relative
    target.write_text((target.read_text() if target.exists() else "") + text)
    return copy


def _plant_cell(bundle, tmp_path, notebook, source):
    copy = tmp_path / "planted"
    shutil.copytree(bundle, copy)
    nb = nbformat.read(copy / "notebooks" / notebook, as_version=4)
    nb.cells.insert(5, nbformat.v4.new_code_cell(source))
    nbformat.write(nb, copy / "notebooks" / notebook)
    return copy


def _found(bundle, secrets):
    return set(leaks.leaks(bundle, secrets)) - KNOWN_LEAKS


@pytest.mark.slow  # builds the whole handout
def test_the_detector_finds_a_reference_function_pasted_verbatim(handout, secrets, tmp_path):
    import inspect

    source = inspect.getsource(R.scaled_dot_product_attention)
    planted = _plant(handout, tmp_path, "checker/autograder/judging/extra.py", source)
    found = _found(planted, secrets)
    assert any(
        f.startswith(
            "checker/autograder/judging/extra.py: code of autograder/course/"
            "n03_matrix_attention/reference.py: scaled_dot_product_attention"
        )
        for f in found
    ), found


@pytest.mark.slow  # builds the whole handout
def test_the_detector_finds_an_answer_renamed_and_redocumented(handout, secrets, tmp_path):
    planted = _plant(handout, tmp_path, "checker/coursedata/fruit.py", PLANTED_RENAMED)
    found = _found(planted, secrets)
    assert any(
        f.startswith("checker/coursedata/fruit.py: code of ") and "softmax" in f for f in found
    ), found
    # and not by its text: every line differs from the model answer's
    assert not any(f.startswith("checker/coursedata/fruit.py: the line") for f in found), found


@pytest.mark.slow  # builds the whole handout
def test_the_detector_finds_a_solution_region_pasted_into_a_notebook(handout, secrets, tmp_path):
    solution = nbformat.read(SOLUTIONS / "04_multihead_attention.ipynb", as_version=4)
    (cell,) = [
        c for c in solution.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "split_heads"
    ]
    (first, last), *_ = leaks.solution_regions(cell.source)
    region = textwrap.dedent("\n".join(cell.source.splitlines()[first - 1 : last]))
    pasted = "def my_heads(Y, heads):\n" + textwrap.indent(
        region.replace("X", "Y").replace("n_heads", "heads"), "    "
    )
    planted = _plant_cell(handout, tmp_path, "03_matrix_attention.ipynb", pasted)
    found = _found(planted, secrets)
    assert any(
        f.startswith(
            "notebooks/03_matrix_attention.ipynb, cell 5: code of solutions/"
            "04_multihead_attention.ipynb: solution region of split_heads"
        )
        for f in found
    ), found


@pytest.mark.slow  # builds the whole handout
def test_the_detector_finds_a_probe_line_in_a_text_file(handout, secrets, tmp_path):
    probe = (REPO / "autograder" / "course" / "n02_dot_product_softmax" / "cases.py").read_text()
    line = max(leaks.secret_lines(probe, ast.parse(probe)), key=len)
    planted = _plant(handout, tmp_path, "README.md", f"\nA note:\n\n    {line}\n")
    found = _found(planted, secrets)
    assert any(f.startswith("README.md: the line ") for f in found), found


@pytest.mark.slow  # builds the whole handout
def test_the_detector_ignores_honest_code(handout, secrets, tmp_path):
    honest = "def mean_of_rows(table):\n    return [sum(row) / len(row) for row in table]\n"
    planted = _plant(handout, tmp_path, "checker/autograder/judging/extra.py", honest)
    assert _found(planted, secrets) == set()


# -- the same checks, from stored data -----------------------------------------------------------
def _results(function, obj, stored, **namespace):
    saved = checks.STORED
    checks.STORED = stored
    try:
        results = checks.run_in_process(function, obj, namespace=namespace)
    finally:
        checks.STORED = saved
    return [r.to_json() for r in results]


def _wrong_answers():
    from autograder.course.numpy_shared.variants import variants_of

    answers = []
    for name in GRADED_NAMES:
        answers += [(name, id_, fn) for id_, fn in variants_of(name)[:2]]

    def unbiased_layer_norm(x, weight, bias, eps=1e-5):
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(
            x.var(-1, keepdim=True) + eps
        ) * weight + bias

    def summed_loss(logits, targets):
        return torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), reduction="sum"
        )

    def stub(*args, **kwargs):
        raise NotImplementedError()

    answers += [("layer_norm", "unbiased", unbiased_layer_norm), ("lm_loss", "sum", summed_loss)]
    answers += [("attend", "stub", stub), ("make_examples", "stub", stub)]
    return answers


@pytest.mark.slow  # builds the whole handout
@pytest.mark.parametrize("name", [n for n in GRADED_NAMES if n != "GPT"])
def test_a_stored_check_says_what_the_probes_say_on_the_model_answer(handout, name):
    stored = handout / "checker" / "autograder" / "visible"
    answer = getattr(R, name)
    assert _results(name, answer, stored) == _results(name, answer, handout / "absent")


@pytest.mark.parametrize(
    "name,mistake,answer", _wrong_answers(), ids=lambda x: getattr(x, "__name__", x)
)
@pytest.mark.slow  # builds the whole handout
def test_a_stored_check_says_what_the_probes_say_on_a_wrong_answer(handout, name, mistake, answer):
    stored = handout / "checker" / "autograder" / "visible"
    with np.errstate(all="ignore"):
        from_store = _results(name, answer, stored)
        from_probes = _results(name, answer, handout / "absent")
    assert from_store == from_probes
    assert any(r["status"] == "failed" for r in from_store), mistake


# -- installed alone, run through a real kernel ------------------------------------------------
def _pip(venv, *args):
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", *args],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _git_repository(folder):
    """Make `folder` a git repository with one commit, as a course would publish the handout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "c", "GIT_AUTHOR_EMAIL": "c@example.org"}
    env |= {"GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@example.org"}
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "h"]):
        subprocess.run(["git", "-C", str(folder), *command], check=True, env=env, timeout=60)


@pytest.fixture(scope="module")
def installed(handout, tmp_path_factory):
    """A fresh venv (no system site-packages) with the course's packages, where the checker is
    installed by the handout notebooks' own Colab cell, Colab faked by its environment variable:
    the handout published as a git repository on this disk, the cell run by the venv's python.
    torch is there first, as on Colab, and must come out untouched."""
    root = tmp_path_factory.mktemp("installed")
    published = root / "published"
    build_handout(published, repository=f"file://{published}")
    _git_repository(published)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # the course's pins from the handout's requirements.txt; JupyterLab is not needed to run
    # notebooks through a kernel, so it is left out to keep the install small
    pins = [
        line
        for line in (handout / "requirements.txt").read_text().splitlines()
        if "==" in line and not line.startswith("jupyterlab")
    ]
    started = time.perf_counter()
    _pip(venv, *pins)
    torch_before = _python(venv, TORCH_FILES).stdout
    cell = nbformat.read(published / "notebooks" / NOTEBOOKS[0].filename, as_version=4).cells[0]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", cell.source],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=root,
        env={**env, "COLAB_RELEASE_TAG": "simulated"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "the course's checks are installed" in done.stdout
    assert f"torch=={torch.__version__}" in done.stdout  # the cell named the torch it keeps
    assert _python(venv, TORCH_FILES).stdout == torch_before  # ... and kept it, file for file
    print(f"installed the handout's venv in {time.perf_counter() - started:.0f} s")
    kernels = root / "jupyter" / "kernels" / "handout-venv"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    str(venv / "bin" / "python"),
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                ],
                "display_name": "the handout's venv",
                "language": "python",
            }
        )
    )
    return venv, root / "jupyter"


# torch's version, where it is, and its files' sizes and times: any reinstall changes them
TORCH_FILES = """
import importlib.metadata as m, os
d = m.distribution("torch")
files = sorted(str(f) for f in d.files if str(f).endswith((".py", ".so")))[:400]
print(d.version, d.locate_file(""))
for f in files:
    s = os.stat(d.locate_file(f))
    print(f, s.st_size, s.st_mtime_ns)
"""


def _python(venv, code):
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )


def _execute(path, jupyter_dir, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_dir))
    nb = nbformat.read(path, as_version=4)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("TINYSHAKESPEARE_PATH", None)
    env["NBGRADER_EXECUTION"] = "autograde"  # the notebooks' quick mode: short training runs
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="handout-venv",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute(env=env)
    return nb


def _outputs(nb):
    """({grade_id of a check cell: its stdout}, [errors])"""
    checks_out, errors = {}, []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors.append(f"cell {cell.get('id')}: {out.ename}: {out.evalue}")
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("test_"):
            checks_out[grade_id.removeprefix("test_")] = "".join(
                o.get("text", "") for o in cell.outputs if o.output_type == "stream"
            )
    return checks_out, errors


@pytest.mark.slow
def test_the_installed_handout_has_no_course_package(installed):
    venv, _ = installed
    for module in (
        "autograder.course.model_answers",
        "autograder.course.probes",
        "autograder.course.numpy_shared.variants",
        "autograder.course.n03_matrix_attention.reference",
    ):
        done = _python(venv, f"import {module}")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, module
    done = _python(venv, "import autograder.checks, coursedata; print(autograder.checks.__file__)")
    assert done.returncode == 0, done.stderr
    assert str(venv) in done.stdout


@pytest.mark.slow
def test_the_released_notebooks_run_installed_and_every_check_waits(
    installed, handout, tmp_path, monkeypatch
):
    venv, jupyter_dir = installed
    work = tmp_path / "notebooks"
    shutil.copytree(handout / "notebooks", work)
    started = time.perf_counter()
    for nb in NOTEBOOKS:
        outputs, errors = _outputs(_execute(work / nb.filename, jupyter_dir, monkeypatch))
        assert not errors, f"{nb.filename}: " + "\n".join(errors)
        assert set(outputs) == set(nb.graded)
        for name, out in outputs.items():
            assert f"{name} is not implemented yet" in out, (nb.filename, name, out)
    print(f"ran the six released notebooks in {time.perf_counter() - started:.0f} s")


def _with_answers(solution):
    """The solution notebook as a student who solved everything would hand it in."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput

    nb = nbformat.read(solution, as_version=4)
    for step in (ClearHiddenTests, ClearOutput):
        nb, _ = step().preprocess(nb, {})
    return nb


@pytest.mark.slow
def test_the_solutions_pass_installed_with_the_full_packages_messages(
    installed, tmp_path, monkeypatch
):
    venv, jupyter_dir = installed
    work = tmp_path / "solved"
    work.mkdir()
    for nb in NOTEBOOKS:
        nbformat.write(_with_answers(SOLUTIONS / nb.filename), work / nb.filename)
    started = time.perf_counter()
    for nb in NOTEBOOKS:
        outputs, errors = _outputs(_execute(work / nb.filename, jupyter_dir, monkeypatch))
        assert not errors, f"{nb.filename}: " + "\n".join(errors)
        for name in nb.graded:
            # what the full package prints for the model answer, in this process, beside the
            # notebook's other answers as check() sees them (load_hf_llama builds a Llama)
            answers = {other: getattr(R, other) for other in nb.graded}
            expected = checks.report(
                name, checks.run_in_process(name, getattr(R, name), namespace=answers)
            )
            assert expected.startswith(f"✓ {name} passes all")
            assert outputs[name].strip() == expected, (nb.filename, name, outputs[name])
    print(f"ran the six solved notebooks in {time.perf_counter() - started:.0f} s")


# -- a later notebook uses the student's own earlier answers ---------------------------------------
def _notebook(path, *cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def test_import_earlier_links_the_notebooks_like_one_module(tmp_path, monkeypatch, capsys):
    from coursedata import import_earlier

    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "02_a.ipynb", "def double(x):\n    return 2 * x", "print('not run')")
    _notebook(tmp_path / "03_b.ipynb", "def quadruple(x):\n    return double(double(x))")
    _notebook(
        tmp_path / "04_c.ipynb",
        "def double(x):\n    return -1",
        "def twice(x):\n    return double(x)",
    )
    namespace = {}
    found = import_earlier({"02_a.ipynb": ["double"], "03_b.ipynb": ["quadruple"]}, namespace)
    assert namespace["quadruple"](3) == 12 and found["double"](3) == 6  # 03 calls 02's double
    assert "Using your own double (notebook 02); quadruple (notebook 03)" in capsys.readouterr().out
    # a notebook's own definition wins over the earlier one's
    assert import_earlier({"02_a.ipynb": ["double"], "04_c.ipynb": ["twice"]})["twice"](3) == -1


def test_import_earlier_turns_what_is_missing_into_an_unfinished_exercise(
    tmp_path, monkeypatch, capsys
):
    from coursedata import import_earlier

    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "03_b.ipynb", "def quadruple(x):\n    return double(double(x))")
    found = import_earlier({"02_a.ipynb": ["double"], "03_b.ipynb": ["quadruple", "half"]})
    out = capsys.readouterr().out
    assert "cannot find 02_a.ipynb" in out and "03_b.ipynb does not define half" in out
    for name in ("double", "quadruple", "half"):  # quadruple calls the missing double
        with pytest.raises(NotImplementedError, match="notebook 0[23]"):
            found[name](1)
    assert found["half"].__name__ == "half"


@pytest.mark.slow  # builds the whole handout
def test_the_build_refuses_a_checker_that_would_import_what_it_lacks(handout, tmp_path):
    from autograder.handout import check_self_contained

    checker = tmp_path / "checker"
    shutil.copytree(handout / "checker" / "autograder", checker / "autograder")
    check_self_contained(checker)  # the real one imports only what it ships
    (checker / "autograder" / "judging" / "sneaky.py").write_text(
        "def later():\n    import autograder.course.model_answers  # only when called: allowed\n\n"
        "try:\n    from autograder import optional  # may be absent: allowed\n"
        "except ImportError:\n    optional = None\n\n"
        "from autograder.course.probes import build_cases\n"
    )
    with pytest.raises(RuntimeError, match=r"sneaky.py imports autograder.course.probes$"):
        check_self_contained(checker)


@pytest.mark.slow  # builds the whole handout
def test_the_handouts_check_fails_under_nbgrader_validate_and_only_prints_in_jupyter(handout):
    """The students' Validate button runs the notebook with NBGRADER_EXECUTION=validate: the
    handout's checker (not the full package) then raises on a failing or unfinished exercise."""
    code = """
import os, numpy as np
import autograder.checks as checks
assert "checker" in checks.__file__, checks.__file__
def unnormalised(scores):
    return np.exp(scores)
def unfinished(scores):
    raise NotImplementedError
def right(scores):
    e = np.exp(scores - scores.max())
    return e / e.sum()
for fn in (unnormalised, unfinished, right):
    checks.check("percentages", fn)  # in Jupyter: prints, never raises
os.environ["NBGRADER_EXECUTION"] = "validate"
for fn in (unnormalised, unfinished):
    try:
        checks.check("percentages", fn)
    except checks.ChecksFailed as exc:
        print("RAISED", fn.__name__, str(exc).splitlines()[0])
checks.check("percentages", right)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NBGRADER_EXECUTION")}
    # -S: no site, so no .pth finder of this repository's editable install shadows the checker
    env["PYTHONPATH"] = os.pathsep.join([str(handout / "checker"), sysconfig.get_path("purelib")])
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd="/",  # not the repository, whose autograder/ would come first
    )
    assert done.returncode == 0, done.stderr
    raised = [line for line in done.stdout.splitlines() if line.startswith("RAISED")]
    assert len(raised) == 2
    assert raised[0].startswith("RAISED unnormalised ✗ percentages: ")  # "k of n checks pass"
    assert raised[1] == (
        "RAISED unfinished … percentages is not implemented yet: fill in the exercise, then run "
        "this cell again."
    )
    assert done.stdout.count("✓ percentages passes all") == 2


# -- the checker's Jupyter configuration -------------------------------------------------------
def _kernel_start_log(tmp_path, *server_args):
    """Start a Jupyter server with `server_args`, start one kernel through its REST API (the
    installed python3 kernel, logging at INFO), and return what the server printed once the
    kernel has said whether its connections are encrypted."""
    import socket
    import urllib.request

    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3").to_dict()
    spec["argv"] = [sys.executable, *spec["argv"][1:], "--IPKernelApp.log_level=INFO"]
    (tmp_path / "kernels" / "probe").mkdir(parents=True, exist_ok=True)
    (tmp_path / "kernels" / "probe" / "kernel.json").write_text(json.dumps(spec))

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / f"server-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "no-user-config")  # no ~/.jupyter of the tester
    env["JUPYTER_PATH"] = str(tmp_path)  # the probe kernel
    token, base = "t0ken", f"http://127.0.0.1:{port}/api"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}",
             f"--IdentityProvider.token={token}", "--allow-root", f"--ServerApp.root_dir={tmp_path}",
             *server_args],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:

        def call(method, path, body=None):
            request = urllib.request.Request(
                base + path, data=body, method=method, headers={"Authorization": f"token {token}"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")

        for _ in range(120):
            try:
                call("GET", "")
                break
            except OSError:
                time.sleep(0.5)
        call("POST", "/kernels", json.dumps({"name": "probe"}).encode())
        said = ("without encryption", "using transport encryption")
        for _ in range(240):
            if any(words in log.read_text() for words in said):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the kernel never started:\n" + log.read_text()[-3000:])
    finally:
        server.terminate()
        server.wait(timeout=60)
    return log.read_text()


@pytest.mark.slow
def test_the_checker_encrypts_kernel_connections_so_jupyter_does_not_warn(
    handout, installed, tmp_path
):
    config = handout / "checker" / "jupyter" / "jupyter_server_config.py"
    checker = tomllib.loads((handout / "checker" / "pyproject.toml").read_text())
    data_files = checker["tool"]["setuptools"]["data-files"]
    assert data_files["etc/jupyter"] == ["jupyter/jupyter_server_config.py"]
    assert (installed[0] / "etc" / "jupyter" / "jupyter_server_config.py").read_text() == (
        config.read_text()
    )  # pip put it where `jupyter lab` in the student's venv reads its configuration
    warning = "Kernel is running over TCP without encryption"
    assert warning in _kernel_start_log(tmp_path)  # without the checker's configuration
    assert warning not in _kernel_start_log(tmp_path, f"--config={config}")
