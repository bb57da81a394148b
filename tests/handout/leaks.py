"""Find the course's answers in a folder: the leak detector of tests/handout/test_handout.py.

What counts as an answer (the SECRETS):
- the body of every function and class of autograder/course/*/reference.py (the model answers);
- every probe (autograder/course/probes.py, course/*/cases*.py and tools.py) and variant
  (course/*/variants*.py) source: each function and
  class body, and the module's top-level code;
- every solution region (### BEGIN SOLUTION ... ### END SOLUTION) of every exercise of solutions/.

How a folder is searched: every .py file, every code cell of every .ipynb, and every text file
(markdown cells and .md files also give up their fenced code blocks).

1. Normalised code. Python is parsed with `ast`; docstrings are dropped, and every name (variables,
   arguments, functions, classes: ast.Name, ast.arg and definition names) is renamed to a
   canonical one in order of first appearance (`_0`, `_1`, ...), so renaming variables, changing
   comments, docstrings, formatting or the function's name changes nothing; attributes, keywords,
   constants and operators are kept. Each statement list (a body of a def, class, loop, branch or
   module) gives its BLOCKS: the whole list, and every run of 1 to WINDOW consecutive statements
   holding at least MIN_NODES syntax nodes. A block is dumped (ast.dump) to one canonical string,
   computed afresh for each block, so the same code is the same string wherever it is pasted.
   A folder leaks if one of its blocks equals a block of a secret.
2. Plain text. Every line of a secret (stripped; not a docstring, import, `def`/`class` header
   or a comment) at least MIN_LINE characters long that appears, stripped, as a line of a file or
   cell of the folder.

What a handout is allowed to show (subtracted from the secrets, so it cannot hide an answer):
- an exercise's own released stub (its signature, docstring and the scaffolding nbgrader keeps
  outside the solution region), for that exercise's reference definition only;
- a reference definition that is no exercise at all (not a graded name, e.g. notebook 05's
  given `LayerNorm`), where a released notebook hands it out in a locked cell.
"""

import ast
import copy
import functools
import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

from autograder.curriculum import GRADED_NAMES, NOTEBOOKS

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
RELEASED = REPO / "notebooks"
COURSE = REPO / "autograder" / "course"  # one folder per notebook: reference, cases, variants

MIN_NODES = 12  # structural nodes: a block smaller than this is too common to call a leak
MIN_ANSWER = 4  # but a model answer's whole body counts from this size (one short line)
WINDOW = 3  # runs of up to this many consecutive statements, besides whole bodies
MIN_LINE = 40  # characters, for the plain-text scan
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
TEXT_SUFFIXES = {".py", ".ipynb", ".md", ".txt", ".toml", ".json", ".cfg", ".yml", ".yaml", ""}


# -- normalised code -------------------------------------------------------------------------
def _is_docstring(stmt):
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _without_docstrings(tree):
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, *DEFINITIONS))
            and node.body
            and _is_docstring(node.body[0])
        ):
            node.body = node.body[1:] or [ast.Pass()]
    return tree


def _dump(node, names):
    """ast.dump-like text of node, every name renamed by `names` (first appearance, depth first)."""
    if isinstance(node, list):
        return "[" + ",".join(_dump(item, names) for item in node) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    if isinstance(node, ast.expr_context):
        return ""
    canon = lambda name: names.setdefault(name, f"_{len(names)}")  # noqa: E731
    if isinstance(node, ast.Name):
        return f"Name({canon(node.id)})"
    if isinstance(node, ast.arg):
        return f"arg({canon(node.arg)})"  # annotations dropped
    parts = []
    for field in node._fields:
        value = getattr(node, field, None)
        if field == "name" and isinstance(node, DEFINITIONS):
            parts.append(canon(value))
        elif field not in ("type_comment", "returns"):
            parts.append(_dump(value, names))
    return f"{type(node).__name__}({','.join(parts)})"


def canonical(statements):
    """One canonical string for a run of statements (already without docstrings)."""
    return _dump(list(statements), {})


def size(statements):
    """Syntax nodes that carry structure: names and load/store markers do not count."""
    return sum(
        1 for s in statements for n in ast.walk(s) if not isinstance(n, ast.Name | ast.expr_context)
    )


def statement_lists(tree):
    """Every list of statements in the tree (bodies, else branches, handlers, finally)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def blocks(tree, min_whole=MIN_NODES):
    """{canonical string} of every block of a parsed tree (see the module docstring).

    Runs of up to WINDOW statements count from MIN_NODES nodes; whole statement lists and
    whole definitions from min_whole (smaller for the model answers, whose bodies can be one
    short line).
    """
    tree = _without_docstrings(copy.deepcopy(tree))
    found = set()
    for statements in statement_lists(tree):
        for statement in statements:
            if isinstance(statement, DEFINITIONS) and size([statement]) >= min_whole:
                found.add(canonical([statement]))
        if size(statements) >= min_whole:
            found.add(canonical(statements))
        for width in range(1, WINDOW + 1):
            for start in range(len(statements) - width + 1):
                run = statements[start : start + width]
                if size(run) >= MIN_NODES:
                    found.add(canonical(run))
    return found


def definition_blocks(definition, min_whole=MIN_NODES):
    """The blocks of one def/class: the whole definition, its body and every block inside."""
    return blocks(ast.Module(body=[definition], type_ignores=[]), min_whole)


_transform = TransformerManager().transform_cell


def parse(source, where=""):
    """The AST of Python source (IPython magics allowed), or None if it is not Python."""
    try:
        return ast.parse(_transform(source), filename=where)
    except (SyntaxError, ValueError):
        return None


# -- plain text --------------------------------------------------------------------------------
def _docstring_lines(tree):
    lines = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, *DEFINITIONS))
            and node.body
            and _is_docstring(node.body[0])
        ):
            lines |= {line.strip() for line in node.body[0].value.value.splitlines()}
    return lines


def _code_line(line):
    """A line stripped of surrounding blanks and of a trailing comment."""
    line = line.strip()
    if "#" in line:
        try:
            for token in tokenize.generate_tokens(io.StringIO(line).readline):
                if token.type == tokenize.COMMENT:
                    return line[: token.start[1]].rstrip()
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
    return line


def secret_lines(source, tree):
    """The lines of a secret's source that the plain-text scan looks for."""
    skip = _docstring_lines(tree) if tree is not None else set()
    found = set()
    for line in source.splitlines():
        if line.strip() in skip:
            continue
        line = _code_line(line)
        if len(line) < MIN_LINE:
            continue
        if re.match(r"(async\s+def|def|class|import|from\s+\S+\s+import)\b", line):
            continue
        if line.startswith(('"""', "'''")):
            continue
        found.add(line)
    return found


# -- the secrets -----------------------------------------------------------------------------------
@dataclass
class Secrets:
    blocks: dict  # canonical string -> {where it comes from}
    lines: dict  # stripped line -> {where it comes from}


def solution_regions(source):
    """[(first line, last line)] (1-based, inclusive) of the code inside each solution region."""
    regions, start = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip() == BEGIN:
            start = number + 1
        elif line.strip() == END and start is not None:
            regions.append((start, number - 1))
            start = None
    return regions


def _region_statements(tree, first, last):
    """The statements of the tree lying wholly within lines first..last, as whole lists."""
    found = []
    for statements in statement_lists(tree):
        inside = [s for s in statements if s.lineno >= first and s.end_lineno <= last]
        if inside and len(inside) == len(
            [s for s in statements if s.lineno <= last and s.end_lineno >= first]
        ):
            found.append(inside)
    return found


def released_cells():
    """Every cell of the six released notebooks (notebooks/, which is what the handout ships)."""
    for nb in NOTEBOOKS:
        yield from nbformat.read(RELEASED / nb.filename, as_version=4).cells


def _defined(tree):
    return {node.name: node for node in tree.body if isinstance(node, DEFINITIONS)}


def allowed():
    """{reference name: (blocks, lines) a handout may show for it} (see the module docstring)."""
    shown = {}
    for released in released_cells():
        if released.cell_type != "code":
            continue
        meta = released.metadata.get("nbgrader", {})
        tree = parse(released.source)
        if tree is None:
            continue
        for name, node in _defined(tree).items():
            exercise = meta.get("solution") and meta.get("grade_id") == name
            given = meta.get("locked") and not meta.get("solution") and name not in GRADED_NAMES
            if exercise or given:
                blocks_, lines = shown.setdefault(name, (set(), set()))
                blocks_ |= definition_blocks(node, 0)
                lines |= {_code_line(line) for line in released.source.splitlines()}
    return shown


def collect_secrets():
    found_blocks, found_lines = {}, {}
    shown = allowed()

    def add(where, new_blocks, new_lines):
        for block in new_blocks:
            found_blocks.setdefault(block, set()).add(where)
        for line in new_lines:
            found_lines.setdefault(line, set()).add(where)

    for path in sorted(COURSE.glob("*/reference.py")):
        source = path.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, DEFINITIONS):
                segment = ast.get_source_segment(source, node)
                allowed_blocks, allowed_lines = shown.get(node.name, (set(), set()))
                add(
                    f"{path.relative_to(REPO)}: {node.name}",
                    definition_blocks(node, MIN_ANSWER) - allowed_blocks,
                    secret_lines(segment, parse(segment)) - allowed_lines,
                )
    course = sorted(COURSE.glob("*/cases*.py")) + sorted(COURSE.glob("*/variants*.py"))
    course += sorted(COURSE.glob("*/tools.py"))  # what builds the cases a folder shares
    course.append(COURSE / "probes.py")  # the registry that builds every notebook's cases
    for path in course:
        source = path.read_text()
        tree = ast.parse(source)
        add(str(path.relative_to(REPO)), blocks(tree), secret_lines(source, tree))
    for nb in NOTEBOOKS:
        solution = nbformat.read(SOLUTIONS / nb.filename, as_version=4)
        for cell in solution.cells:
            regions = solution_regions(cell.source) if cell.cell_type == "code" else []
            tree = parse(cell.source) if regions else None
            for first, last in regions:
                where = f"solutions/{nb.filename}: solution region of {cell.metadata.get('nbgrader', {}).get('grade_id')}"
                text = "\n".join(cell.source.splitlines()[first - 1 : last])
                region_blocks = set()
                for statements in _region_statements(tree, first, last) if tree else []:
                    region_blocks |= blocks(
                        ast.Module(body=statements, type_ignores=[]), MIN_ANSWER
                    )
                add(where, region_blocks, secret_lines(text, None))
    return Secrets(found_blocks, found_lines)


# -- searching a folder ----------------------------------------------------------------------
FENCE = re.compile(r"```[a-zA-Z]*\n(.*?)```", re.S)


def units(root):
    """(where, kind, text) for every piece of a folder: kind "code" (Python) or "text"."""
    root = Path(root)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = str(path.relative_to(root))
        if path.suffix not in TEXT_SUFFIXES and path.name != ".gitignore":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if path.suffix == ".ipynb":
            for i, cell in enumerate(json.loads(text)["cells"]):
                source = (
                    cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                )
                kind = "code" if cell["cell_type"] == "code" else "text"
                yield f"{rel}, cell {i}", kind, source
            continue
        yield rel, "code" if path.suffix == ".py" else "text", text


@functools.cache
def _bundle_blocks(source):
    tree = parse(source)
    return frozenset(blocks(tree, 0)) if tree is not None else frozenset()


@functools.cache
def _bundle_lines(text):
    return frozenset(_code_line(line) for line in text.splitlines())


def leaks(root, secrets):
    """Every place in `root` where a secret block or line shows: ['where: what (whose)']."""
    found = []
    for where, kind, text in units(root):
        sources = [text] if kind == "code" else FENCE.findall(text)
        for source in sources:
            for block in _bundle_blocks(source) & secrets.blocks.keys():
                found += [f"{where}: code of {whose}" for whose in sorted(secrets.blocks[block])]
        for line in _bundle_lines(text) & secrets.lines.keys():
            found += [
                f"{where}: the line {line!r} of {whose}" for whose in sorted(secrets.lines[line])
            ]
    return found
