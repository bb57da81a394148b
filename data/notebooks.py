"""Reuse your own code from an earlier notebook.

Notebook 06 builds its language model from the TransformerBlock you wrote in notebook 05.
Running all of notebook 05 again would redo its plots, checks and training; instead,
import_definitions reads it and runs only what a module would hold: imports, functions,
classes and constants given as plain literals.

Where it looks for the earlier notebook, when given a bare file name: this folder; then a
sub-folder named like the notebook (the grader keeps notebooks it does not grade there:
05_transformer_block/05_transformer_block.ipynb); then a folder of that name next to this one
(nbgrader with one assignment per notebook: ../05_transformer_block/). No other folder is
searched: a copy elsewhere is not the student's notebook for this course.
"""

import ast
import json
import warnings
from pathlib import Path

__all__ = ["import_definitions"]

# Cell magics whose body is still Python, so its definitions count.
_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")


def _code_cells(path):
    """The source of every code cell of the notebook at path.

    A notebook of format 4 (every notebook since Jupyter 4) is read as the JSON it is: importing
    nbformat, with the schema validation it does, costs a kernel about 3 CPU-seconds, which
    every notebook calling import_earlier paid. Older formats go through nbformat's conversion.
    """
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if isinstance(data, dict) and type(data.get("nbformat")) is int and data["nbformat"] >= 4:
        cells = data["cells"]
    else:
        try:
            import nbformat
        except ImportError:
            cells = data["cells"]
        else:
            with warnings.catch_warnings():  # old notebooks warn about missing cell ids: harmless
                warnings.simplefilter("ignore")
                cells = nbformat.reads(text, as_version=4).cells
    sources = []
    for cell in cells:
        if cell["cell_type"] == "code":
            source = cell["source"]
            sources.append(source if isinstance(source, str) else "".join(source))
    return sources


def _without_magics(source):
    """source with IPython magics and shell lines blanked, or None for a non-Python cell."""
    first = source.lstrip().split(None, 1)[0] if source.strip() else ""
    if first.startswith("%%") and first not in _PYTHON_CELL_MAGICS:
        return None
    lines = source.splitlines()
    # blank rather than delete, so line numbers in tracebacks still match the notebook
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def _names(target):
    """The names a target binds when it is NAME or a tuple of NAMEs (A, B = 1, 2), else None."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
        return [t.id for t in target.elts]
    return None


def _is_literal_assignment(node):
    """NAME = <literal>, e.g. D_MODEL = 64, or A, B = 16, 64; anything computed could train or
    plot."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return False
    if any(_names(t) is None for t in targets):
        return False
    try:
        ast.literal_eval(value)
    except ValueError:
        return False
    return True


def _defined_names(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [name for t in node.targets for name in _names(t)]
    if isinstance(node, ast.AnnAssign):
        return [node.target.id]
    return []


def find_notebook(notebook_path):
    """The path of the notebook to import (see the module's docstring); unchanged if absent."""
    path = Path(notebook_path)
    if path.is_file() or path.is_absolute() or len(path.parts) > 1:
        return path
    here = Path.cwd()
    # nbgrader's one assignment per notebook: the student's earlier notebook is in a folder
    # named like it, below this folder (the grader's merged folder) or beside it (the student's
    # own tree). Only such folders are searched: any other folder is someone else's business.
    for folder in (here / path.stem, here.parent / path.stem):
        if folder != here and (folder / path.name).is_file():
            return folder / path.name
    return path


def _notebook_label(path):
    """'notebook 05' for 05_transformer_block.ipynb, else the file name."""
    prefix = path.stem.split("_")[0]
    return f"notebook {prefix}" if prefix.isdigit() else path.name


def import_definitions(notebook_path, names=None, namespace=None):
    """Run the definitions of another notebook and return them as a dict.

    Only top-level imports, def, class and NAME = <literal> statements run; everything else
    (plots, training, checks) is skipped, as are cells that are not valid Python. Pass
    names=["TransformerBlock"] to pick names (all definitions if None) and namespace=globals()
    to put them straight into your notebook:

        import_definitions("05_transformer_block.ipynb", ["TransformerBlock"], globals())
    """
    wanted = [names] if isinstance(names, str) else names
    path = find_notebook(notebook_path)
    label = _notebook_label(path)
    if not path.is_file():
        needed = ", ".join(wanted) if wanted else "the definitions you need"
        raise FileNotFoundError(
            f"cannot find {path.name} (looked for {path.resolve()}, and in a folder named "
            f"{path.stem} inside or next to this one). Keep {label} in the same folder as this "
            f"notebook or in a folder {path.stem} next to it, or paste {needed} into a cell here."
        )

    # The definitions live in their own globals, as a module's would: your notebook's
    # variables cannot leak into them, only the names you ask for come back.
    module_globals = {"__name__": path.stem}
    defined, failed_imports = [], []
    for number, source in enumerate(_code_cells(path), start=1):
        source = _without_magics(source)
        if source is None:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            is_import = isinstance(node, (ast.Import, ast.ImportFrom))
            is_definition = isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ) or _is_literal_assignment(node)
            if not (is_import or is_definition):
                continue
            code = compile(ast.Module([node], []), f"{path.name}, cell {number}", "exec")
            try:
                exec(code, module_globals)
            except ImportError as err:
                # a missing optional package (say, for a plot) should not hide the classes
                failed_imports.append(f"{ast.unparse(node)} ({err})")
                continue
            except Exception as err:
                err.add_note(f"while importing definitions from {path.name}, cell {number}")
                raise
            defined += _defined_names(node)

    if failed_imports:
        warnings.warn(
            f"{path.name}: skipped imports that failed: {'; '.join(failed_imports)}",
            stacklevel=2,
        )
    if wanted is None:
        wanted = list(dict.fromkeys(defined))  # definition order, without repeats
    missing = [name for name in wanted if name not in module_globals]
    if missing:
        available = ", ".join(sorted(set(defined))) or "nothing"
        raise ImportError(
            f"{path.name} does not define {', '.join(missing)} (it defines: {available}). "
            f"Finish {', '.join(missing)} in {label} first, or paste your definition of "
            f"{', '.join(missing)} into a cell here."
        )
    found = {name: module_globals[name] for name in wanted}
    if namespace is not None:
        namespace.update(found)
    return found
