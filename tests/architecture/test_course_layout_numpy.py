"""The NumPy notebooks' code, one folder per notebook (issue 34): for every graded name of
notebooks 01-04, the one folder of autograder/course/ that holds its model answer, its cases, its
judges and its known mistakes; the judges' files import no answer, case or variant, however
indirectly; and the handout ships exactly the judges and what they import.

The folders are listed here by hand, the oracle the curriculum and the files are checked against.
"""

import ast
import importlib
import shutil
from pathlib import Path

import pytest

from autograder import handout
from autograder.checks import VISIBLE_SEED
from autograder.course import model_answers as answers
from autograder.course.misconceptions import CATALOGUE
from autograder.course.numpy_shared.variants import variants_of
from autograder.course.probes import PROBES, build_cases, load
from autograder.curriculum import BY_STEM, NOTEBOOK_OF, NOTEBOOKS
from autograder.grading import fingerprint
from autograder.judging import COURSE_FOLDER, JUDGES, LEGACY_PREFIXES, resolve

PACKAGE = Path(handout.PACKAGE)
COURSE = PACKAGE / "course"
SHARED = "numpy_shared"

FOLDER_OF = {
    "lookup": "n01_soft_lookup",
    "similarity": "n01_soft_lookup",
    "percentages": "n01_soft_lookup",
    "soft_lookup": "n01_soft_lookup",
    "softmax": "n02_dot_product_softmax",
    "scaled_scores": "n02_dot_product_softmax",
    "attend": "n02_dot_product_softmax",
    "attention_for_token": "n02_dot_product_softmax",
    "attention_scores": "n03_matrix_attention",
    "causal_mask": "n03_matrix_attention",
    "scaled_dot_product_attention": "n03_matrix_attention",
    "self_attention": "n03_matrix_attention",
    "mha_shapes": "n04_multihead_attention",
    "split_heads": "n04_multihead_attention",
    "merge_heads": "n04_multihead_attention",
    "multi_head_attention": "n04_multihead_attention",
}
NUMPY_NOTEBOOKS = [nb for nb in NOTEBOOKS if nb.framework == "numpy"]
FOLDERS = sorted(set(FOLDER_OF.values()))


def _module(folder, leaf):
    return f"autograder.course.{folder}.{leaf}"


def _top_level_names(path):
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
    }


def _judge_modules(folder):
    return {_module(folder, p.stem) for p in sorted((COURSE / folder).glob("judges*.py"))}


def test_the_table_covers_every_graded_name_of_the_numpy_notebooks():
    assert len(NUMPY_NOTEBOOKS) == 4
    assert sorted(FOLDER_OF) == sorted(name for nb in NUMPY_NOTEBOOKS for name in nb.graded)


@pytest.mark.parametrize("name", FOLDER_OF)
def test_a_graded_name_has_one_folder_for_its_answer_cases_judges_and_variants(name):
    folder, notebook = FOLDER_OF[name], NOTEBOOK_OF[name]
    assert notebook.package == folder
    assert notebook.reference_path == _module(folder, "reference")
    assert notebook.cases_path == _module(folder, "cases")
    for leaf in ("__init__", "reference", "cases", "judges", "variants"):
        assert (COURSE / folder / f"{leaf}.py").is_file(), leaf
    # the model answer: defined in that folder's reference.py and in no other reference module
    defined_in = [
        path
        for path in [*COURSE.glob("*/reference.py"), *(PACKAGE / "reference").glob("*.py")]
        if name in _top_level_names(path)
    ]
    assert defined_in == [COURSE / folder / "reference.py"]
    assert getattr(answers, name).__module__ == _module(folder, "reference")  # the lazy index
    # the cases: its probe is registered by that folder's cases.py
    load(notebook.stem)
    assert PROBES[name].__module__ == _module(folder, "cases")
    # the variants: those of its folder, each named by a catalogued misconception
    own = importlib.import_module(_module(folder, "variants")).VARIANTS
    assert variants_of(name) == own.get(name, [])
    assert all(id_ in CATALOGUE for id_, _ in variants_of(name))


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folder_holds_variants_of_its_own_notebook_only(folder):
    (notebook,) = [nb for nb in NUMPY_NOTEBOOKS if nb.package == folder]
    own = importlib.import_module(_module(folder, "variants")).VARIANTS
    assert own and set(own) <= set(notebook.graded)


def _judges_used():
    """{judge's module: {stems of the notebooks whose cases use it}} over two seeds."""
    used = {}
    for nb in NUMPY_NOTEBOOKS:
        for seed in (VISIBLE_SEED, 1):
            for case in build_cases(nb.stem, seed):
                used.setdefault(resolve(case.judge.name).__module__, set()).add(nb.stem)
    return used


def test_the_judges_a_notebook_uses_are_its_folders_or_the_shared_ones():
    used = _judges_used()
    shared = _judge_modules(SHARED)
    for module, stems in used.items():
        if module in shared:
            continue
        (stem,) = stems  # a folder's own judges serve its own notebook only
        assert module in _judge_modules(BY_STEM[stem].package), (module, stem)
    # and every judge a folder defines is used by its notebook's cases: none is stray
    for folder in FOLDERS:
        stem = next(nb.stem for nb in NUMPY_NOTEBOOKS if nb.package == folder)
        mine = {n for n, f in JUDGES.items() if f.__module__ in _judge_modules(folder)}
        assert mine, folder
        for name in mine:
            assert stem in used[JUDGES[name].__module__], name


def test_the_moved_judges_keep_their_stored_names():
    """Stored cases (the handout's, results.json's) name them "numpy_judges.<name>"."""
    modules = set(LEGACY_PREFIXES["numpy_judges"])
    assert _module(SHARED, "judges") in modules
    assert {_module(folder, "judges") for folder in FOLDERS} <= modules
    for name in ("value", "unmodified", "lookup_absent", "token_ignores_the_future"):
        assert resolve(f"numpy_judges.{name}").__name__ == name
    for name in ("causal_prefix", "mha_shapes"):
        assert resolve(f"numpy_judges.{name}").__module__.startswith("autograder.course.n0")


# -- what the judges import, however indirectly --------------------------------------------------


def _is_answer_case_or_variant(module):
    parts = module.split(".")
    if module.startswith(("autograder.course.model_answers", "autograder.course.probes")):
        return True
    if parts[:2] == ["autograder", "misconceptions"] and parts[-1].endswith("_variants"):
        return True
    return (
        parts[:2] == ["autograder", "course"]
        and len(parts) >= 4
        and parts[3].startswith(("reference", "cases", "variants"))
    )


def _imports_of(path, module, root):
    """Every module `path` imports, at any depth (a function's import counts): for `from a import
    b`, a.b when that is a module of `root`'s package, else a."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            found.append(base)
            found += [
                f"{base}.{alias.name}"
                for alias in node.names
                if _file_of(f"{base}.{alias.name}", root) is not None
            ]
    return found


def _file_of(module, root):
    target = root.joinpath(*module.split("."))
    for path in (target.with_suffix(".py"), target / "__init__.py"):
        if path.is_file():
            return path
    return None


def import_closure(modules, root, top="autograder"):
    """{module: the module that first imported it} for everything `modules` import inside
    `top`, transitively (the modules themselves map to None)."""
    seen = dict.fromkeys(modules)
    queue = list(modules)
    while queue:
        module = queue.pop()
        path = _file_of(module, root)
        if path is None:
            continue
        for name in _imports_of(path, module, root):
            if name.split(".")[0] == top and name not in seen:
                seen[name] = module
                queue.append(name)
    return seen


def _chain(seen, module):
    out = [module]
    while seen[out[-1]] is not None:
        out.append(seen[out[-1]])
    return " <- ".join(out)


@pytest.mark.parametrize("folder", [SHARED, *FOLDERS])
def test_a_numpy_folders_judges_import_no_answer_case_or_variant_even_indirectly(folder):
    judges = sorted(_judge_modules(folder))
    assert judges
    seen = import_closure(judges, PACKAGE.parent)
    bad = [_chain(seen, m) for m in seen if _is_answer_case_or_variant(m)]
    assert bad == []
    assert _module(SHARED, "signatures") in seen  # the scan does follow the judges' imports


def test_the_import_scan_sees_an_answer_imported_through_a_helper(tmp_path):
    folder = tmp_path / "autograder" / "course" / "n09_planted"
    folder.mkdir(parents=True)
    for package in (tmp_path / "autograder", tmp_path / "autograder" / "course", folder):
        (package / "__init__.py").write_text("")
    (folder / "judges.py").write_text("from autograder.course.n09_planted import helper\n")
    (folder / "helper.py").write_text("def f():\n    from .reference import answer\n")
    (folder / "reference.py").write_text("answer = 42\n")
    seen = import_closure(["autograder.course.n09_planted.judges"], tmp_path)
    bad = [m for m in seen if _is_answer_case_or_variant(m)]
    assert "autograder.course.n09_planted.reference" in bad
    assert _chain(seen, "autograder.course.n09_planted.reference").endswith("judges")


# -- what the handout ships ------------------------------------------------------------------------


def test_the_handout_ships_exactly_the_judges_and_what_they_import(tmp_path):
    copied = handout._copy(handout.SHIPPED, PACKAGE, tmp_path / "autograder")
    shipped = {p.relative_to(tmp_path).with_suffix("").as_posix().replace("/", ".") for p in copied}
    course = {m for m in shipped if m.startswith("autograder.course.")}
    judges = {m for m in course if m.split(".")[-1].startswith("judges")}
    folders = {p.parent.name for p in COURSE.glob("*/__init__.py")}
    notebooks = {f for f in folders if COURSE_FOLDER.fullmatch(f)}
    assert notebooks | {SHARED} <= {m.split(".")[2] for m in judges}  # every folder's judges
    needed = {
        m
        for m in import_closure(sorted(judges), PACKAGE.parent)
        if m.startswith("autograder.course.")
        and (path := _file_of(m, PACKAGE.parent)) is not None
        and path.name != "__init__.py"
    }
    packages = {"autograder.course.__init__"} | {f"autograder.course.{f}.__init__" for f in folders}
    assert course == needed | packages
    assert not [m for m in shipped if _is_answer_case_or_variant(m)]
    assert {
        "autograder.course.numpy_shared.judges",
        "autograder.course.numpy_shared.judges_calls",
        "autograder.course.numpy_shared.signatures",
        *(f"autograder.course.{f}.judges" for f in FOLDERS),
    } <= course
    handout.check_self_contained(tmp_path)  # and the shipped modules import one another only


# -- what decides a verdict ------------------------------------------------------------------------


def test_the_regrade_fingerprint_reads_every_file_of_the_numpy_folders(tmp_path):
    """A changed answer, case, judge or variant of 01-04 must change the course digest, so that a
    rerun regrades instead of keeping verdicts the old code gave."""
    roots = [PACKAGE / part for part in fingerprint.VERDICT_PARTS]
    for folder in [SHARED, *FOLDERS]:
        for path in sorted((COURSE / folder).glob("*.py")):
            assert any(path.is_relative_to(root) for root in roots), path
    # and the digest does read a folder's bytes: a copy with one judge changed hashes otherwise
    copy = tmp_path / "course"
    shutil.copytree(COURSE / "n03_matrix_attention", copy / "n03_matrix_attention")
    first = fingerprint.course_digest([copy])
    judges = copy / "n03_matrix_attention" / "judges.py"
    judges.write_text(judges.read_text().replace("exactly 0", "exactly zero"))
    assert fingerprint.course_digest([copy]) != first
