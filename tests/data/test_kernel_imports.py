"""What importing an earlier notebook costs a kernel: import_definitions (coursedata) reads a
notebook of format 4 as JSON, without importing nbformat (whose schema validation cost each
graded notebook that calls import_earlier about 3 CPU-seconds), and still reads older formats."""

import json
import subprocess
import sys

import nbformat
from coursedata import import_definitions
from nbformat import v3

NOTEBOOK_CELLS = ["import math", "def area(r):\n    return math.pi * r * r", "print(area(1))"]


def test_a_format_4_notebook_is_imported_without_nbformat(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title")]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in NOTEBOOK_CELLS]
    path = tmp_path / "05_transformer_block.ipynb"
    nbformat.write(nb, path)
    program = (
        "import sys; from coursedata import import_definitions\n"
        f"found = import_definitions({str(path)!r}, ['area'])\n"
        "print(round(found['area'](2), 4), 'nbformat' in sys.modules, 'jsonschema' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["12.5664", "False", "False"]


def test_a_format_4_notebook_whose_sources_are_lists_of_lines(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in NOTEBOOK_CELLS]
    data = json.loads(nbformat.writes(nb))
    for cell in data["cells"]:  # as Jupyter saves them
        cell["source"] = "".join(cell["source"]).splitlines(keepends=True)
    assert any(len(cell["source"]) > 1 for cell in data["cells"])
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(data))
    assert import_definitions(path, ["area"])["area"](1) == 3.141592653589793


def test_a_format_3_notebook_is_still_converted(tmp_path):
    cells = [v3.new_code_cell(input=src) for src in NOTEBOOK_CELLS]
    nb = v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)])
    path = tmp_path / "old.ipynb"
    path.write_text(nbformat.writes(nb, version=3))
    assert json.loads(path.read_text())["nbformat"] == 3
    assert import_definitions(path, ["area"])["area"](1) == 3.141592653589793
