"""One source of truth: each graded definition in a solution notebook IS the reference's.

For every graded name of every notebook whose solution exists, the top-level def/class of that
name in the solution's code cells must be AST-identical (comments and formatting aside) to the
one in its notebook's reference module (curriculum's Notebook.reference_path). On drift the test shows a unified diff.
"""

import ast
import difflib
import importlib
import inspect
import textwrap
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.curriculum import NOTEBOOKS

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

CASES = [
    (notebook, name)
    for notebook in NOTEBOOKS
    if (SOLUTIONS / notebook.filename).exists()
    for name in notebook.graded
]


def notebook_definitions(path):
    """{name: [top-level def/class nodes]} over the code cells of a notebook, magics allowed."""
    found = {}
    transform = TransformerManager().transform_cell
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.parse(transform(cell.source)).body:
            if isinstance(node, DEFINITIONS):
                found.setdefault(node.name, []).append(node)
    return found


def reference_definition(module_path, name):
    obj = getattr(importlib.import_module(module_path), name)
    (node,) = ast.parse(textwrap.dedent(inspect.getsource(obj))).body
    return node


@pytest.mark.parametrize("notebook,name", CASES, ids=lambda x: getattr(x, "stem", x))
def test_solution_definition_is_the_reference(notebook, name):
    definitions = notebook_definitions(SOLUTIONS / notebook.filename).get(name, [])
    assert len(definitions) == 1, (
        f"solutions/{notebook.filename} should define {name} exactly once at top level "
        f"(found {len(definitions)})"
    )
    ours = definitions[0]
    reference = reference_definition(notebook.reference_path, name)
    if ast.dump(ours, include_attributes=False) != ast.dump(reference, include_attributes=False):
        diff = difflib.unified_diff(
            ast.unparse(reference).splitlines(),
            ast.unparse(ours).splitlines(),
            notebook.reference_path.replace(".", "/") + ".py",
            f"solutions/{notebook.filename}",
            lineterm="",
        )
        pytest.fail(f"{name} drifted from the reference:\n" + "\n".join(diff), pytrace=False)
