"""The tests mirror the package: every test file sits in a folder named after the room it tests.

A room is a top-level package or module of autograder/ (tests/grading/ for autograder/grading/,
tests/deadlines/ for autograder/deadlines.py), a folder below one (tests/course/n06_autoregressive_lm/
for autograder/course/n06_autoregressive_lm/), or a folder of the repository that holds code of its
own (tests/data/ for the package coursedata in data/, tests/benchmarks/, tests/examples/). Four
folders are the tests' own: architecture/ (rules over the whole code), attacks/ (hostile students),
catalogues/ (the mutant catalogues and their sweeps) and support/ (helpers, no test).

The course's folders are the curriculum's: a notebook's folder is its `package`, or `n<stem>` for a
notebook still in the older layout, and each framework's notebooks share `<framework>_shared`
(docs/maintainers.md); a folder of autograder/course/ that exists is a room too.
"""

from pathlib import Path

from autograder.curriculum import NOTEBOOKS

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PACKAGE = REPO / "autograder"
OWN = {"architecture", "attacks", "catalogues", "support"}
OTHER_ROOMS = {
    "data": REPO / "data",
    "benchmarks": REPO / "benchmarks",
    "examples": REPO / "examples",
}


def course_folders(notebooks=NOTEBOOKS):
    """The folders of autograder/course/ the curriculum names (they may not all exist yet)."""
    named = {nb.package or f"n{nb.stem}" for nb in notebooks}
    return named | {f"{nb.framework}_shared" for nb in notebooks}


COURSE = frozenset(course_folders())


def is_room(parts, package=PACKAGE, course=COURSE):
    """Whether tests/<parts...>/ names a room: a package or module of autograder/, or one below."""
    if not parts:
        return False
    if len(parts) == 1 and (parts[0] in OWN or OTHER_ROOMS.get(parts[0], Path("/-")).is_dir()):
        return True
    if len(parts) == 2 and parts[0] == "course" and parts[1] in course:
        return True
    *folders, last = parts
    place = package.joinpath(*folders)
    return (place / last / "__init__.py").is_file() or (place / f"{last}.py").is_file()


def misplaced(tests=TESTS, room=is_room):
    """{test file: why} for every test file not in a room's folder."""
    found = {}
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if not room(rel.parts[:-1]):
            found[rel.as_posix()] = "its folder names no package or module of autograder/"
        elif rel.parts[0] == "support":
            found[rel.as_posix()] = "support/ holds helpers, no test"
    return found


def test_every_test_file_sits_in_the_folder_of_a_room():
    assert misplaced() == {}, (
        "move each into tests/<room>/ (the package or module of autograder/ it tests), or into "
        "architecture/, attacks/ or catalogues/ (tests/architecture/test_tests_mirror.py)"
    )


def test_no_two_test_files_share_a_name():
    """pytest imports a test file by its name (the folders are not packages): two of one name in
    two folders would be one module, and the second would fail to collect."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_the_rule_tells_a_room_from_a_folder_that_is_none(tmp_path):
    package = tmp_path / "autograder"
    (package / "grading").mkdir(parents=True)
    (package / "grading" / "__init__.py").write_text("")
    (package / "grading" / "plan.py").write_text("")
    (package / "deadlines.py").write_text("")
    course = frozenset({"n01_soft_lookup", "numpy_shared"})

    def room(parts):
        return is_room(parts, package, course)

    tests = tmp_path / "tests"
    placed = [
        "grading/test_a.py", "grading/plan/test_b.py", "deadlines/test_c.py",
        "course/n01_soft_lookup/test_d.py", "attacks/test_e.py", "data/test_f.py",
    ]  # fmt: skip
    wrong = ["test_top.py", "gradin/test_g.py", "course/n09_nothing/test_h.py", "support/test_i.py"]
    for name in placed + wrong + ["support/fixtures.py"]:
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    assert set(misplaced(tests, room)) == set(wrong)


def test_the_course_folders_follow_the_curriculum():
    names = course_folders()
    assert {"n01_soft_lookup", "n06_autoregressive_lm", "n08_real_models"} <= names
    assert {"numpy_shared", "torch_shared"} <= names
    # every folder of autograder/course/ is one the curriculum names
    made = {p.name for p in (PACKAGE / "course").iterdir() if (p / "__init__.py").is_file()}
    assert made <= names, made - names
