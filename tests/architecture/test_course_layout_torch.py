"""The one-folder-per-notebook layout of the PyTorch notebooks (05-08, autograder/course/).

For every graded name, the one folder holding its model answer, its cases, its judges and its
known mistakes, read from the curriculum and checked against the files; the judges a folder
ships import no model answer, case or variant, even through what they import; and the handout
copies the judges and nothing of the rest.
"""

import ast
import functools
import importlib
from pathlib import Path

import pytest

from autograder import handout
from autograder.course.probes import PROBES, build_cases, load
from autograder.curriculum import NOTEBOOKS
from autograder.judging import LEGACY_PREFIXES, Judgement, resolve

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder"
COURSE = PACKAGE / "course"
TORCH = [nb for nb in NOTEBOOKS if nb.stem[:2] in {"05", "06", "07", "08"}]
KINDS = ("reference", "cases", "judges", "variants")


def _module(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _file(module):
    """The file of an autograder module, or None when there is none (a name in a package)."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.cache  # the scans of every judge file follow the same modules
def _imports(path):
    """Every autograder module `path` imports, at import time or in a function body, with the
    packages a submodule's import runs first."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            # `from package import submodule` imports the submodule
            names = [source] + [
                f"{source}.{a.name}" for a in node.names if _file(f"{source}.{a.name}")
            ]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "autograder":
                found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return {m for m in found if _file(m)}


def _closure(paths):
    """The autograder modules importing `paths` may run, transitively."""
    seen, todo = set(), []
    for path in paths:  # a module and the packages its import runs first
        parts = _module(path).split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo += sorted(_imports(_file(module)) - seen)
    return seen


def _answer_modules():
    """What computes an answer: every notebook's model answers and cases (the curriculum's
    modules, with their topic siblings), every known-wrong variant, and what builds torch cases."""
    out = {nb.reference_path for nb in NOTEBOOKS} | {nb.cases_path for nb in NOTEBOOKS}
    for folder in COURSE.iterdir():
        for kind in ("reference", "cases", "variants"):
            out |= {_module(p) for p in folder.glob(f"{kind}*.py")}
    out |= {_module(p) for p in (PACKAGE / "misconceptions").glob("*_variants.py")}
    out |= {_module(p) for p in (PACKAGE / "probes").glob("*.py")} - {
        "autograder.course.probes",
    }
    return out | {"autograder.course.torch_shared.tools", "autograder.course.model_answers"}


def _defined(path):
    tree = ast.parse(path.read_text())
    return {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
    }


@pytest.mark.parametrize("nb", TORCH, ids=[nb.stem for nb in TORCH])
def test_each_graded_name_has_one_folder_with_its_reference_cases_judges_and_variants(nb):
    folder = COURSE / nb.package
    assert nb.package.startswith(f"n{nb.stem[:2]}_") and folder.is_dir()
    assert all((folder / f"{kind}.py").is_file() for kind in KINDS)
    assert nb.reference_path == f"autograder.course.{nb.package}.reference"
    assert nb.cases_path == f"autograder.course.{nb.package}.cases"
    others = [COURSE / o.package / "reference.py" for o in NOTEBOOKS if o.package and o is not nb]
    load(nb.stem)
    reference = importlib.import_module(nb.reference_path)
    for name in nb.graded:
        # its answer: defined in this folder's reference.py, and in no other folder's
        assert name in _defined(folder / "reference.py"), name
        assert not [p for p in others if name in _defined(p)], name
        assert getattr(reference, name).__module__ == nb.reference_path
        # its probe: registered, and built by code of this folder's cases
        assert PROBES[name].__module__.startswith(f"{nb.cases_path}"), (name, PROBES[name])


@pytest.mark.parametrize("nb", TORCH, ids=[nb.stem for nb in TORCH])
@pytest.mark.slow  # builds every case of 05-08
def test_the_judges_a_notebooks_cases_name_are_in_a_folders_judges(nb):
    """Each judge its cases name by a stored name is defined in judges*.py of a notebook folder
    (its own, or an earlier one's it reuses, as 07's rms_norm reuses 05's layer_norm judge), and
    that name's prefix is the folder, or the older prefix LEGACY_PREFIXES lists the module under."""
    names = {
        j.name
        for case in build_cases(nb.stem, 1234)
        for j in vars(case).values()
        if isinstance(j, Judgement)
    }
    assert names
    folders = {f"autograder.course.{o.package}." for o in TORCH}
    own = 0
    for name in names:
        module = resolve(name).__module__
        folder, _, leaf = module.rpartition(".")
        assert folder + "." in folders and leaf.startswith("judges"), (name, module)
        prefix = name.split(".", 1)[0]
        assert module in LEGACY_PREFIXES.get(prefix, ()) or prefix == folder.rsplit(".", 1)[1]
        own += folder == f"autograder.course.{nb.package}"
    assert own >= len(names) / 2  # mostly its own


def _shipped_judges():
    return sorted(
        [p for nb in TORCH for p in (COURSE / nb.package).glob("judges*.py")]
        + list((COURSE / "torch_shared").glob("checks*.py"))
    )


def test_the_judges_of_05_to_08_import_no_answer_case_or_variant_even_indirectly():
    judges = _shipped_judges()
    assert len(judges) >= 4 + 3  # a judges.py per notebook, torch_shared's checks
    forbidden = _answer_modules()
    # the scan sees through one level: a module that imports a model answer is caught
    assert "autograder.course.n07_modern_lm.reference" in _closure(
        [COURSE / "n08_real_models" / "reference.py"]
    )
    reached_all = set()
    for path in judges:
        reached = _closure([path])
        assert sorted(reached & forbidden) == [], path.relative_to(ROOT)
        reached_all |= reached
    # the scan followed the judges' imports into the case model and the misconception catalogue
    assert {"autograder.judging.compare", "autograder.course.misconceptions"} <= reached_all


def test_every_legacy_prefix_of_05_to_07_lists_existing_judges_modules():
    for prefix in ("block_judges", "lm_judges", "training_judges", "modern_lm"):
        for module in LEGACY_PREFIXES[prefix]:
            path = _file(module)
            assert path is not None and path.parent.parent == COURSE, module
            assert path.name.startswith("judges"), module
    listed = {m for ms in LEGACY_PREFIXES.values() for m in ms}
    for nb in TORCH:
        for path in (COURSE / nb.package).glob("judges*.py"):
            # registered under a legacy prefix, or under the folder's name (08's)
            assert _module(path) in listed or nb.package == "n08_real_models", path


def test_the_handout_ships_the_judges_and_nothing_that_computes_an_answer(tmp_path):
    copied = handout._copy(handout.SHIPPED, PACKAGE, tmp_path / "autograder")
    shipped = {p.relative_to(tmp_path / "autograder") for p in copied}
    for path in _shipped_judges():
        assert path.relative_to(PACKAGE) in shipped, path
    for nb in TORCH:
        assert Path("course", nb.package, "__init__.py") in shipped
    forbidden = {Path(*m.split(".")[1:]).with_suffix(".py") for m in _answer_modules()}
    assert not shipped & forbidden
    assert not [p for p in shipped if p.parts[0] in ("reference", "probes")]
    assert not [
        p
        for p in shipped
        if p.parts[0] == "course"
        and not p.name.startswith(("judges", "checks", "signatures", "misconceptions", "__init__"))
    ]
    handout.check_self_contained(tmp_path)  # what ships imports only what ships
