"""Demonstration cells: which cells of a submitted notebook the grader may leave out.

The course's notebooks plot, time and train things to show an idea; those cells decide no
verdict, yet they were most of the grading time. In `solutions/` such a cell carries the tag
`demo` in its metadata, and the release keeps the tag in `notebooks/`.

Students control every byte of their notebooks, metadata included, so the submission's tags are
never read. The grader (the trusted parent, before the sandbox starts) skips a submitted cell
only when its source, normalised, is the source of a `demo` cell of the RELEASED notebook of the
same name: a student cannot mark their own code as skippable, and a demo cell they edited simply
runs. The driver in the sandbox receives {cell index: sha256 of that cell's exact source} and
skips a cell only when both still match (docs/grader.md, "Speed").

A `demo` tag is only allowed on a cell whose names nothing else needs: `demo_tag_problems`
(run by tests/demo_cells/test_demo_cells.py over every solution) checks that the names a tagged cell binds
or changes are no graded name and that no untagged cell reads them before binding them itself.

AUTOGRADER_SKIP_DEMOS=0 runs every cell.
"""

import ast
import functools
import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path
from symtable import SymbolTable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

TAG = "demo"
EVERYTHING = "*"  # what a cell binds when it calls globals(), exec, ...: any name at all
DYNAMIC = {"globals", "vars", "locals", "exec", "eval", "setattr", "delattr", "__import__"}
COMPREHENSIONS = {"listcomp", "setcomp", "dictcomp", "genexpr"}
RELEASED = Path(__file__).resolve().parent.parent / "notebooks"


def is_demo(cell: Mapping[str, Any]) -> bool:
    return cell.get("cell_type") == "code" and TAG in cell.get("metadata", {}).get("tags", [])


def normalise(source: str) -> str:
    """Line endings and trailing blanks do not matter; anything else does."""
    lines = str(source).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def fingerprint(source: str) -> str:
    return hashlib.sha256(normalise(source).encode("utf-8")).hexdigest()


@functools.cache
def released_demo_fingerprints(stem: str, released: Path = RELEASED) -> frozenset[str]:
    """Fingerprints of the `demo` cells of the released notebook `stem` (empty if none)."""
    import nbformat

    path = Path(released) / f"{stem}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return frozenset()
    return frozenset(fingerprint(cell.source) for cell in nb.cells if is_demo(cell))


def skip_plan(
    notebook_path: Path, stem: str, released: Path = RELEASED, enabled: bool = True
) -> dict[str, str]:
    """{str(cell index): sha256 of the exact source} for the cells of the submitted notebook at
    `notebook_path` that are released demo cells. Empty when skipping is off (`enabled`: the
    run's AUTOGRADER_SKIP_DEMOS, from its Config) or unreadable."""
    if not enabled:
        return {}
    demos = released_demo_fingerprints(stem, released)
    if not demos:
        return {}
    from autograder.notebook_files import load_notebook

    path = Path(notebook_path)
    # the sandbox's working folder: without bubblewrap, earlier notebooks could write there, so
    # it is read as a student's file (bounded bytes and values, no link followed)
    nb, _ = load_notebook(path.parent, path.name)
    if nb is None:
        return {}
    return {
        str(index): hashlib.sha256(cell.source.encode("utf-8")).hexdigest()
        for index, cell in enumerate(nb.cells)
        if cell.get("cell_type") == "code" and fingerprint(cell.source) in demos
    }


# -- the safety analysis (for the tags in solutions/) ------------------------------------------
def _tree(source: str) -> ast.Module:
    from IPython.core.inputtransformer2 import TransformerManager

    return ast.parse(TransformerManager().transform_cell(source))


def _base_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def bound_names(source: str) -> set[str]:
    """Global names a cell binds or changes: assignments (also of an attribute or an item of a
    name), augmented assignments, deletions, imports, def/class, for/with targets, globals;
    EVERYTHING when it uses globals(), vars(), exec, eval, setattr, ... at all."""
    names = set()
    tree = _tree(source)

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if top:
                names.add(node.name)
            for decorator in node.decorator_list:
                visit(decorator, top)
            if isinstance(node, ast.ClassDef):
                return  # its body binds class attributes, not globals
            for stmt in node.body:  # a function body binds locals, except declared globals
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.Global):
                        names.update(sub.names)
            return
        if isinstance(node, ast.Name) and node.id in DYNAMIC:
            names.add(EVERYTHING)  # e.g. import_definitions(..., globals())
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            base = _base_name(node)
            if base:
                names.add(base)
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)):
            return  # their own scope
        elif isinstance(node, ast.GeneratorExp):
            return
        for child in ast.iter_child_nodes(node):
            visit(child, top)

    for stmt in tree.body:
        visit(stmt, True)
    return names


def _nested_global_reads(table: SymbolTable) -> set[str]:
    """Globals that the functions, classes, lambdas and comprehensions of a scope read."""
    found = set()
    for child in table.get_children():
        if table.get_type() == "module" and child.get_name() in COMPREHENSIONS:
            continue  # run in order with their statement: free_reads walks them there
        for symbol in child.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() and not symbol.is_assigned()):
                found.add(symbol.get_name())
        found |= _nested_global_reads(child)
    return found


def free_reads(source: str) -> set[str]:
    """The names a cell reads that it has not bound itself first: what it needs from the cells
    before it. Functions and classes count with every global they read (when they are called
    is unknown); a compound statement's own bindings count as made before its reads."""
    import symtable

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(source)
    needed = _nested_global_reads(symtable.symtable(code, "<cell>", "exec"))
    bound: set[str] = set()
    for stmt in ast.parse(code).body:
        loads = set()
        stack: list[ast.AST] = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loads.add(node.id)
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                targets = {
                    n.id
                    for g in node.generators
                    for n in ast.walk(g.target)
                    if isinstance(n, ast.Name)
                }
                loads |= {
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                } - targets
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # their bodies count through the symbol table; these run here and now
                stack += node.decorator_list
                if isinstance(node, ast.ClassDef):
                    stack += node.bases
                else:
                    stack += node.args.defaults + [d for d in node.args.kw_defaults if d]
                continue
            if isinstance(node, ast.Lambda):
                stack += node.args.defaults + [d for d in node.args.kw_defaults if d]
                continue
            stack.extend(ast.iter_child_nodes(node))
        own = bound_names(ast.unparse(stmt))
        compound = isinstance(stmt, (ast.For, ast.While, ast.If, ast.With, ast.Try))
        needed |= loads - bound - (own if compound else set())
        bound |= own
    return needed


def demo_tag_problems(nb: "NotebookNode", graded: Collection[str]) -> list[str]:
    """Why the `demo` tags of a (solution) notebook are unsafe: [] when every tagged cell binds
    or changes only names that no untagged cell reads and that are no graded name."""
    needed = set(graded)
    for cell in nb.cells:
        if cell.get("cell_type") == "code" and not is_demo(cell):
            needed |= free_reads(cell.source)
    problems = []
    for index, cell in enumerate(nb.cells):
        if is_demo(cell):
            bound = bound_names(cell.source)
            clash = (bound & needed) | (bound & {EVERYTHING})
            if clash:
                problems.append(f"cell {index} is tagged {TAG!r} but binds {sorted(clash)}")
    return problems
