"""The package's import graph has no cycle, and the case model stays the bottom layer; and no
test file imports another test file (or conftest.py).

An AST walk over autograder/: every `import` and `from ... import` in a module, at any depth (an
import inside a function is still a dependency, only a later one), is an edge to the module it
names (`from autograder.x import y` names autograder.x.y when y is a module, else autograder.x).
A cycle fails the test with its modules in order, so whoever adds one sees where it closes.
"""

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


@functools.cache  # each test walks the same files: parse each once
def tree_of(path):
    return ast.parse(path.read_text(encoding="utf-8"))


def module_files(package=PACKAGE):
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def import_graph(modules):
    """{module: {modules of the package it imports}}."""

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = set()
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            edges.update(n for n in map(known, names) if n and n != module)
        graph[module] = edges
    return graph


def find_cycle(graph):
    """One cycle as [a, b, ..., a], or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_finder_names_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_walk_sees_imports_inside_functions(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text("from .a import f\n")
    graph = import_graph(module_files(package))
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.a"]


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph(module_files()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_case_model_imports_nothing_above_it():
    """judging.base (Case, Judgement, verdict, write_requests, VISIBLE_SEED) sits on the wire
    format, the judge registry and the TestResult's reasons only."""
    graph = import_graph(module_files())
    allowed = {
        "autograder.harness.wire",
        "autograder.judging",
        "autograder.harness",
        "autograder.results",
    }
    assert graph["autograder.judging.base"] <= allowed
    assert graph["autograder.judging"] == set()


def test_the_sandbox_knows_no_course():
    """The sandbox runs what grading hands it (grading/course_files.py, each job's skip plan):
    nothing under autograder/sandbox/ imports the course's modules, nor coursedata."""
    graph = import_graph(module_files())
    course = {
        "autograder.demo_cells",
        "autograder.curriculum",
        "autograder.checks",
        "autograder.course.model_answers",
        "autograder.course.probes",
        "autograder.judging",
        "autograder.course",
        "autograder.grading",
    }
    for module, edges in graph.items():
        if module == "autograder.sandbox" or module.startswith("autograder.sandbox."):
            assert not {e for e in edges for c in course if e == c or e.startswith(c + ".")}, module
    for path in sorted((PACKAGE / "sandbox").rglob("*.py")):
        tree = tree_of(path)
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if n.split(".")[0] == "coursedata"], path


# -- the tests' own imports ------------------------------------------------------------------------
TESTS = Path(__file__).resolve().parents[1]


def imports_between_test_files(folder=TESTS):
    """{(file, test module or conftest it imports)} over tests/**/*.py, at any depth."""
    test_modules = {p.stem for p in folder.rglob("test_*.py")} | {"conftest"}
    found = set()
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(tree_of(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            found.update(
                (path.relative_to(folder).as_posix(), n.split(".")[0])
                for n in names
                if n.split(".")[0] in test_modules
            )
    return found


def test_no_test_file_imports_another_test_file_or_conftest():
    """Shared catalogues and helpers live in tests/support/fixtures.py and the data modules beside it
    (tests/catalogues/*_mutants.py, tests/support/browser_cdp.py, headless_chromium.py, processes.py, ...); a test file
    imports those only."""
    assert imports_between_test_files() == set()


def test_the_import_rule_sees_an_import_of_a_test_file(tmp_path):
    (tmp_path / "test_a.py").write_text("X = 1\n")
    (tmp_path / "test_b.py").write_text("def f():\n    from test_a import X\n")
    (tmp_path / "helper.py").write_text("import conftest\nimport fixtures\n")
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "room").mkdir()  # tests/<room>/: a folder below is read too
    (tmp_path / "room" / "test_c.py").write_text("import test_b\n")
    assert imports_between_test_files(tmp_path) == {
        ("test_b.py", "test_a"),
        ("helper.py", "conftest"),
        ("room/test_c.py", "test_b"),
    }


def test_no_file_of_the_grading_steps_is_over_400_lines():
    """grade.py once did seven jobs in one file; its successor stays in small modules."""
    grading = PACKAGE / "grading"
    sizes = {p.name: len(p.read_text().splitlines()) for p in grading.glob("*.py")}
    assert len(sizes) >= 10, sizes
    assert not {name: n for name, n in sizes.items() if n > 400}, sizes
