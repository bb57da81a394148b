"""Each student's own code for each graded name, read from their notebooks in the trusted
parent (report/similarity.py compares it across the class).

    answers = class_answers({student: folder})    # {graded name: [Answer]}

A student's notebooks are read as grading reads them (notebook_files.code_sources: bounded,
no link followed) and parsed with `ast`, never run; a cell that does not parse gives nothing
(a magic or shell line is read as blank), a notebook that cannot be read gives no answer, and
neither is an error for the class. A graded name's answer is its last top-level definition
(parsed from its own lines, or its cell's when they alone do not parse), with the student's
own top-level functions it calls (not those the released notebook gave), fingerprinted by
report/fingerprints.py, less every k-gram of the released notebook's own definitions (the
stub and the given helpers): an answer handed in as released has none. A text met again (a
released helper, the common answer) is parsed and normalised once; a large class is read by
several processes.
"""

import ast
import functools
import multiprocessing
import os
import re
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.curriculum import NOTEBOOKS, Notebook
from autograder.demo_cells import RELEASED  # notebooks/, as release.py writes it
from autograder.notebook_files import code_sources
from autograder.report.fingerprints import (
    TooLarge,
    kgram_hashes,
    names_read,
    normalised_tokens,
    prune_deep,
    winnow,
)

MAX_CELL_CHARS = 200_000  # a cell longer than this is not parsed
MAX_CACHED = 8_000  # characters of a definition whose parse is kept for the next student
PARALLEL_FROM = 40  # students per process, at least, when a class is read in parallel
MAX_WORKERS = 8  # processes reading a class, at most
CACHED = 256  # definitions kept (the released helpers, the common answers)
MAX_HELPERS = 20  # the student's own functions followed from one answer
_MAGIC = re.compile(r"^\s*[%!]")  # IPython magics and shell lines, read as blank
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_GOES_ON = " \t#)]}"  # a line starting so is still the definition above (black's `):` too)
_DEFINED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)  # top level


@dataclass
class Answer:
    """One student's own code for one graded name."""

    student: str
    code: str  # the definition and the student's helpers it calls, as written
    prints: dict[int, frozenset[int]] = field(
        default_factory=dict
    )  # fingerprint -> the lines of `code` it covers
    size: int = 0  # tokens (report/fingerprints.py) of the definition and its helpers


# -- reading a notebook's definitions --------------------------------------------------------------
@dataclass(frozen=True)
class Definition:
    """One top-level function or class, as its own text."""

    name: str
    text: str  # its lines, decorators first
    node: ast.AST
    uses: frozenset  # the names it reads
    facts: tuple = field(default=(), compare=False)  # what normalised_tokens needs of its tree


class Definitions:
    """The top-level functions and classes of a notebook's code cells, the last definition of a
    name winning (as the kernel ends up with). Cells are indexed by the names they define at
    the start of a line; a definition is parsed only when it is asked for, from its own lines
    (the cell's, when they alone do not parse), and a text met again (the released helpers,
    the common answer) is parsed once."""

    def __init__(self, sources) -> None:
        self.sources: list[str] = []
        self.where: dict[str, tuple[int, int]] = {}
        for source in sources:
            if isinstance(source, str) and len(source) <= MAX_CELL_CHARS:
                for match in _DEFINED.finditer(source):
                    self.where[match.group(1)] = (len(self.sources), match.start())
                self.sources.append(source)

    def names(self) -> set[str]:
        return set(self.where)

    def get(self, name: str) -> Definition | None:
        """The Definition of `name`, or None."""
        if name not in self.where:
            return None
        index, start = self.where[name]
        source = self.sources[index]
        found = _definition(_own_lines(source, start), name)
        if found is None:  # its lines alone are not Python (an unindented string): the cell
            found = _cell_definition(source, name)
        return found


def _own_lines(source, start):
    """The lines of the top-level definition starting at `start` in a cell: its decorators,
    then every line up to the next one that starts a new top-level statement."""
    before = source[:start].split("\n")[:-1]
    decorators: list[str] = []
    while before and before[-1].startswith("@"):
        decorators.insert(0, before.pop())
    lines = source[start:].split("\n")
    end = 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in _GOES_ON):
        end += 1
    while end > 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return "\n".join(decorators + lines[:end])


def _definition(text, name) -> Definition | None:
    """The Definition of `name` when `text` is that definition alone, else None (a text of
    at most MAX_CACHED characters is kept for the next student)."""
    if len(text) > MAX_CELL_CHARS:
        return None
    if len(text) <= MAX_CACHED:
        return _definition_cached(text, name)
    return _read_definition(text, name)


def _read_definition(text, name) -> Definition | None:
    tree = _parse(text)
    if tree is None or len(tree.body) != 1:
        return None
    node = tree.body[0]
    if not isinstance(node, _DEFINITIONS) or node.name != name:
        return None
    try:
        uses, facts = names_read(prune_deep(node))
    except (RecursionError, MemoryError):
        return None
    return Definition(name, text, node, uses, facts)


_definition_cached = functools.lru_cache(maxsize=CACHED)(_read_definition)


def _cell_definition(source, name) -> Definition | None:
    """The Definition of `name` from its whole cell, or None."""
    tree = _parse(source)
    found = None
    for node in tree.body if tree is not None else ():
        if isinstance(node, _DEFINITIONS) and node.name == name:
            found = node
    if found is None:
        return None
    first = min([found.lineno, *(d.lineno for d in found.decorator_list)])
    text = "\n".join(source.split("\n")[first - 1 : found.end_lineno])
    return _definition(text, name)


def _parse(source):
    text = "\n".join("" if _MAGIC.match(line) else line for line in source.split("\n"))
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _tokens(definition: Definition, helpers):
    """normalised_tokens of a Definition, with the student's helpers it reads (a short one
    cached: the common answer is normalised once); None past the bounds."""
    if len(definition.text) <= MAX_CACHED:
        return _tokens_cached(definition, helpers)
    return _read_tokens(definition, helpers)


def _read_tokens(definition, helpers):
    try:
        return normalised_tokens(definition.node, helpers=helpers, facts=definition.facts)
    except (TooLarge, RecursionError, MemoryError):
        return None


_tokens_cached = functools.lru_cache(maxsize=CACHED)(_read_tokens)


def answer(
    student: str,
    name: str,
    defined: Definitions,
    given: Collection[str],
    released_prints: Collection[int],
) -> Answer | None:
    """The Answer of `name` in a student's Definitions, or None (not defined, or nothing of
    the student's own once the released notebook's fingerprints are taken away)."""
    first = defined.get(name)
    if first is None:
        return None
    own = {n for n in defined.names() if n not in given}  # the student's own functions
    chosen, todo = {name: first}, [first]
    while todo and len(chosen) <= MAX_HELPERS:
        for callee in sorted(todo.pop().uses & own - set(chosen))[:MAX_HELPERS]:
            found = defined.get(callee)
            if found is not None and len(chosen) <= MAX_HELPERS:
                chosen[callee] = found
                todo.append(found)
    code_lines: list[str] = []
    prints: dict[int, frozenset[int]] = {}
    size = 0
    for callee, definition in chosen.items():
        if code_lines:
            code_lines.append("")
        offset = len(code_lines)  # a line of the definition -> a line of `code`
        code_lines += definition.text.split("\n")
        tokens = _tokens(definition, frozenset(definition.uses & own - {callee}))
        if tokens is None:
            return None
        size += len(tokens)
        for value, lines in winnow(tokens, skip=released_prints).items():
            prints.setdefault(value, frozenset(line + offset for line in lines))
    if not prints:
        return None
    return Answer(student, "\n".join(code_lines), prints, size)


def released_fingerprints(sources: Iterable[str]) -> tuple[set[str], set[int]]:
    """({names defined}, {every k-gram hash}) of the released notebook's own definitions."""
    defined = Definitions(sources)
    names: set[str] = set()
    every: set[int] = set()
    for name in defined.names():
        found = defined.get(name)
        tokens = _tokens(found, frozenset()) if found is not None else None
        if tokens is not None:
            names.add(name)
            every.update(h for h, _ in kgram_hashes(tokens))
    return names, every


def class_answers(
    folders: Mapping[str, Path],
    released: Mapping[str, tuple[set[str], set[int]]] | None = None,
    workers: int | None = None,
) -> dict[str, list[Answer]]:
    """{graded name: [Answer]} of the students `folders` names ({student: folder}), in the
    notebooks whose released version `released` holds (default: notebooks/). A class of at
    least PARALLEL_FROM students is read by `workers` processes (default: the cores this
    process may use, at most MAX_WORKERS); each student's answers are the same either way."""
    released = released_notebooks() if released is None else released
    students = sorted(folders)
    if workers is None:
        usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        workers = min(MAX_WORKERS, len(usable) if usable else os.cpu_count() or 1)
    workers = max(1, min(workers, len(students) // PARALLEL_FROM))
    jobs = [({s: folders[s] for s in students[i::workers]}, released) for i in range(workers)]
    if workers == 1:
        parts = [_answers_of(jobs[0])]
    else:  # spawned: nothing of this process (its threads, its locks) is copied
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            parts = list(pool.map(_answers_of, jobs))
    out: dict[str, list[Answer]] = {
        name: [] for nb in NOTEBOOKS if nb.stem in released for name in nb.graded
    }
    for part in parts:
        for name, answers in part.items():
            out[name] += answers
    for answers in out.values():
        answers.sort(key=lambda a: a.student)
    return out


def _answers_of(job):
    """{graded name: [Answer]} of some students (class_answers' work for one process)."""
    folders, released = job
    out = {}
    for nb in NOTEBOOKS:
        if nb.stem not in released:
            continue
        given, skip = released[nb.stem]
        per_name: dict[str, list[Answer]] = {name: [] for name in nb.graded}
        for student in sorted(folders):
            try:
                found = _notebook_answers(student, folders[student], nb, given, skip)
            except Exception:  # noqa: BLE001 - one student's files, never the class's error
                found = {}
            for name, one in found.items():
                per_name[name].append(one)
        out.update(per_name)
    return out


def _notebook_answers(student, folder, nb: Notebook, given, skip):
    """{graded name: Answer} of one student's notebook."""
    defined = Definitions(code_sources(folder, nb.filename))
    found = {name: answer(student, name, defined, given, skip) for name in nb.graded}
    return {name: one for name, one in found.items() if one is not None}


def released_notebooks() -> dict[str, tuple[set[str], set[int]]]:
    """{stem: (names the released notebook defines, its fingerprints)} from notebooks/."""
    out = {}
    for nb in NOTEBOOKS:
        sources = code_sources(RELEASED, nb.filename)
        if sources:
            out[nb.stem] = released_fingerprints(sources)
    return out
