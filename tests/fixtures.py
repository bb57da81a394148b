"""What several test files share, in one module (a test file imports from here, never from
another test file): small notebooks and requests for the sandbox, and the nbgrader cells that
hold written answers. Catalogues still living in their test files (the NumPy and torch
mutants of test_probes_numpy, test_diagnosis_numpy, test_probes_torch, test_checks_gaps and
test_diagnosis_torch) are the next to move here."""

import nbformat

from autograder.harness.wire import Reader, Writer
from autograder.sandbox import NotebookJob


# -- the sandbox: hand-written notebooks and requests (test_sandbox, test_watchdog, ...) --------
def notebook(folder, name, *cells):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)
    return folder


def call_request(root, function, *args, seconds=5):
    writer = Writer(root / function / "000_00")
    writer.write_json(
        "request.json",
        {
            "op": "call",
            "target": function,
            "args": [writer.encode(a) for a in args],
            "seconds": seconds,
        },
    )


def run_one(box, tmp_path, folder, stem="01_soft_lookup", requests=None):
    request_dir = tmp_path / "requests"
    request_dir.mkdir(exist_ok=True)
    for function, args in (requests or {}).items():
        call_request(request_dir, function, *args)
    serve = {name: 15.0 for name in (requests or {})}
    job = NotebookJob(stem, f"{stem}.ipynb", request_dir, serve)
    runs = box.run(folder, [job], tmp_path / "work")
    return runs[stem]


def answer(run, function):
    folder = run.responses / function / "000_00"
    raw = Reader(folder).read_json("response.json")
    return raw, Reader(folder)


# -- the notebooks' written answers (test_answers, test_answers_05_06) -----------------------
def manual_cells(nb):
    return [
        c
        for c in nb.cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    ]
