"""Which answers were shared: per graded name, the pairs of students whose own code is alike,
weighted by how unusual what they share is (OUT/similarity.csv and a section of class.html).

    report = class_similarity(students, folders)   # students: SavedResult-like; folders:
                                                    # {student: the folder graded}
    text = similarity_csv(report)                   # OUT/similarity.csv

Each student's notebooks are read in the trusted parent as grading reads them
(notebook_files: bounded, no link followed, outputs dropped) and parsed with `ast`, never run;
a cell that does not parse gives nothing (a magic line is read as blank), a notebook that
cannot be read gives no fingerprint, and neither is an error for the class. A graded name's
answer is its last top-level definition, with the student's own top-level functions it calls
(not those the released notebook gave); it is fingerprinted by report/fingerprints.py (names by
role, docstrings, comments and prints dropped, independent statements in one order, winnowed
k-grams), less every fingerprint of the released notebook's own definitions (the stub and the
given helpers), so an answer handed in as released has none.

Per graded name, an inverted index from fingerprint to the students who have it. A fingerprint
more than a tenth of the answers share (and at least COMMON_FLOOR) is the class's common answer
and weighs nothing; below that, N students sharing it weigh log((L + 1) / N) / log((L + 1) / 2)
for that limit L (an IDF: 1 when two students alone share it). Only the pairs of a rare
fingerprint are ever formed, so the cost grows with the fingerprints and a tenth of the class,
not with every pair of answers compared in full. A pair's score is the weight of what they share
over the mean number of their fingerprints (1: the same unusual code; 0: nothing unusual in
common), times their mean length in tokens over MIN_TOKENS when they are shorter: there are
few ways to write four lines, so two short answers alike are weak evidence. A pair is listed from THRESHOLD, or from SHARED_WRONG when the grader also judged
both answers wrong the same way (the same tests failed, with the same misconceptions or the
same messages): the same mistake is strong evidence, shown as such.

Similarity is a reason to look, never a verdict: NOTE says so on the page.
"""

import ast
import functools
import math
import multiprocessing
import os
import re
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import combinations

from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS
from autograder.demo_cells import RELEASED  # notebooks/, as release.py writes it
from autograder.escaping import csv_row, terminal
from autograder.notebook_files import code_sources
from autograder.report.fingerprints import (
    TooLarge,
    kgram_hashes,
    names_read,
    normalised_tokens,
    winnow,
)
from autograder.results import FAILED, reason_of

THRESHOLD = 0.5  # a pair's score from which it is listed
SHARED_WRONG = 0.25  # ... or from which, when both answers are wrong the same way
COMMON_FLOOR = 4  # a fingerprint more students share is common, whatever the class's size
MIN_TOKENS = 80  # an answer shorter than this (about six lines) scores less: see score_pairs
MAX_CELL_CHARS = 200_000  # a cell longer than this is not parsed
MAX_CACHED = 8_000  # characters of a definition whose parse is kept for the next student
PARALLEL_FROM = 40  # students per process, at least, when a class is read in parallel
MAX_WORKERS = 8
CACHED = 256  # definitions kept (the released helpers, the common answers)
MAX_SHOWN_LINES = 400  # of one answer on the page
MAX_PAIRS_SHOWN = 60  # per notebook on the page (similarity.csv has them all)
MAX_HELPERS = 20  # the student's own functions followed from one answer
CSV_COLUMNS = (
    "student_a", "student_b", "notebook", "function", "score",
    "evidence", "shared_fingerprints", "fingerprints_a", "fingerprints_b",
)  # fmt: skip
NOTE = (
    "Similarity is a reason to look, not a verdict: students who studied together, followed "
    "the same lecture example or found the same tutorial write alike. Read both answers, and "
    "talk with the students, before drawing any conclusion."
)
EVIDENCE = {
    "same-wrong-results": "both answers are wrong the same way: the same tests failed with the "
    "same messages",
    "same-mistake": "both answers are wrong the same way: the same tests failed with the same "
    "misconception",
    "": "",
}
_MAGIC = re.compile(r"^\s*[%!]")  # IPython magics and shell lines, read as blank
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_GOES_ON = " \t#)]}"  # a line starting so is still the definition above (black's `):` too)
_DEFINED = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)  # top level


def common_limit(answers):
    """How many students may share a fingerprint before it is the class's common answer and
    weighs nothing: a tenth of the answers, at least COMMON_FLOOR."""
    return max(COMMON_FLOOR, math.ceil(answers / 10))


def rarity(holders, limit):
    """The weight of a fingerprint `holders` students share: 1 for two, falling as log(1 / the
    number) does (an IDF), to 0 past `limit`."""
    if holders < 2 or holders > limit:
        return 0.0
    return math.log((limit + 1) / holders) / math.log((limit + 1) / 2)


@dataclass
class Answer:
    """One student's own code for one graded name."""

    student: str
    code: str  # the definition and the student's helpers it calls, as written
    prints: dict = field(default_factory=dict)  # fingerprint -> (first, last) line of `code`
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

    def __init__(self, sources):
        self.sources, self.where = [], {}
        for source in sources:
            if isinstance(source, str) and len(source) <= MAX_CELL_CHARS:
                for match in _DEFINED.finditer(source):
                    self.where[match.group(1)] = (len(self.sources), match.start())
                self.sources.append(source)

    def names(self):
        return set(self.where)

    def get(self, name):
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
    decorators = []
    while before and before[-1].startswith("@"):
        decorators.insert(0, before.pop())
    lines = source[start:].split("\n")
    end = 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in _GOES_ON):
        end += 1
    while end > 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return "\n".join(decorators + lines[:end])


def _definition(text, name):
    """The Definition of `name` when `text` is that definition alone, else None (a text of
    at most MAX_CACHED characters is kept for the next student)."""
    if len(text) > MAX_CELL_CHARS:
        return None
    if len(text) <= MAX_CACHED:
        return _definition_cached(text, name)
    return _read_definition(text, name)


def _read_definition(text, name):
    tree = _parse(text)
    if tree is None or len(tree.body) != 1:
        return None
    node = tree.body[0]
    if not isinstance(node, _DEFINITIONS) or node.name != name:
        return None
    uses, facts = names_read(node)
    return Definition(name, text, node, uses, facts)


_definition_cached = functools.lru_cache(maxsize=CACHED)(_read_definition)


def _cell_definition(source, name):
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


def _tokens(definition, helpers):
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


def answer(student, name, defined, given, released_prints):
    """The Answer of `name` in a student's Definitions, or None (not defined, or nothing of
    the student's own once the released notebook's fingerprints are taken away)."""
    first = defined.get(name)
    if first is None:
        return None
    own = {n for n in defined.names() if n not in given}  # the student's own functions
    chosen, todo = {name: first}, [first]
    while todo and len(chosen) <= MAX_HELPERS:
        for callee in sorted(todo.pop().uses & own):
            found = defined.get(callee) if callee not in chosen else None
            if found is not None:
                chosen[callee] = found
                todo.append(found)
    code_lines, prints, size = [], {}, 0
    for callee, definition in chosen.items():
        if code_lines:
            code_lines.append("")
        offset = len(code_lines)  # a line of the definition -> a line of `code`
        code_lines += definition.text.split("\n")
        tokens = _tokens(definition, frozenset(definition.uses & own - {callee}))
        if tokens is None:
            return None
        size += len(tokens)
        for value, (low, high) in winnow(tokens, skip=released_prints).items():
            prints.setdefault(value, (low + offset, high + offset))
    if not prints:
        return None
    return Answer(student, "\n".join(code_lines), prints, size)


def released_fingerprints(sources):
    """({names defined}, {every k-gram hash}) of the released notebook's own definitions."""
    defined = Definitions(sources)
    names, every = set(), set()
    for name in defined.names():
        found = defined.get(name)
        tokens = _tokens(found, frozenset()) if found is not None else None
        if tokens is not None:
            names.add(name)
            every.update(h for h, _ in kgram_hashes(tokens))
    return names, every


# -- comparing the class ----------------------------------------------------------------------------
def _wrong_ways(results):
    """{function: (failed tests, misconceptions, messages)} of one student's answers judged
    wrong."""
    failed = defaultdict(list)
    for t in results.get("tests", []) or []:
        if isinstance(t, dict) and reason_of(t) == FAILED:
            failed[t.get("function")].append(t)
    return {
        function: (
            tuple(sorted(str(t.get("name", "")) for t in tests)),
            tuple(sorted({str(m) for t in tests for m in t.get("misconceptions", []) or []})),
            tuple(
                str(t.get("output", "")) for t in sorted(tests, key=lambda t: str(t.get("name")))
            ),
        )
        for function, tests in failed.items()
    }


def _evidence(mine, theirs):
    if not mine or not theirs:
        return ""
    if mine == theirs:
        return "same-wrong-results"
    return "same-mistake" if mine[:2] == theirs[:2] and mine[1] else ""


def score_pairs(answers):
    """{(student a, student b): (score, shared fingerprints)} of the pairs that share a rare
    fingerprint, a < b."""
    count = len(answers)
    if count < 2:
        return {}
    holders = defaultdict(list)
    for a in answers:
        for value in a.prints:
            holders[value].append(a.student)
    limit = common_limit(count)
    shared = defaultdict(lambda: [0.0, []])
    for value, who in holders.items():
        weight = rarity(len(who), limit)
        if not weight:
            continue
        for a, b in combinations(sorted(who), 2):
            entry = shared[(a, b)]
            entry[0] += weight
            entry[1].append(value)
    size = {a.student: len(a.prints) for a in answers}
    tokens = {a.student: a.size for a in answers}
    out = {}
    for (a, b), (total, values) in shared.items():
        overlap = min(1.0, total / ((size[a] + size[b]) / 2))
        length = min(1.0, (tokens[a] + tokens[b]) / 2 / MIN_TOKENS)
        out[(a, b)] = (overlap * length, values)
    return out


def class_answers(folders, released=None, workers=None):
    """{graded name: [Answer]} of the students `folders` names ({student: folder}), in the
    notebooks whose released version `released` holds (default: notebooks/). A class of at
    least PARALLEL_FROM students is read by `workers` processes (default: the cores this
    process may use, at most MAX_WORKERS); each student's answers are the same either way."""
    released = released_notebooks() if released is None else released
    students = sorted(folders)
    if workers is None:
        workers = min(MAX_WORKERS, len(os.sched_getaffinity(0)))
    workers = max(1, min(workers, len(students) // PARALLEL_FROM))
    jobs = [({s: folders[s] for s in students[i::workers]}, released) for i in range(workers)]
    if workers == 1:
        parts = [_answers_of(jobs[0])]
    else:  # spawned: nothing of this process (its threads, its locks) is copied
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            parts = list(pool.map(_answers_of, jobs))
    out = {name: [] for nb in NOTEBOOKS if nb.stem in released for name in nb.graded}
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
        per_name = {name: [] for name in nb.graded}
        for student in sorted(folders):
            defined = Definitions(code_sources(folders[student], nb.filename))
            for name in nb.graded:
                found = answer(student, name, defined, given, skip)
                if found is not None:
                    per_name[name].append(found)
        out.update(per_name)
    return out


def class_similarity(students, folders, released=None):
    """The similarity report of the students (SavedResult-like: .student, .results, .folder)
    whose graded folders `folders` names: {"pairs", "compared", "students"}."""
    results = {s.student: (getattr(s, "results", None) or {}) for s in students}
    links = {s.student: getattr(s, "folder", None) or s.student for s in students}
    mine = {student: folder for student, folder in folders.items() if student in results}
    wrong_ways = {student: _wrong_ways(results[student]) for student in mine}
    pairs, compared = [], {}
    for name, answers in class_answers(mine, released).items():
        compared[name] = len(answers)
        by_student = {a.student: a for a in answers}
        wrong = {a.student: wrong_ways[a.student].get(name) for a in answers}
        for (a, b), (score, values) in score_pairs(answers).items():
            evidence = _evidence(wrong[a], wrong[b])
            if score < THRESHOLD and not (evidence and score >= SHARED_WRONG):
                continue
            pairs.append(
                {
                    "student_a": a,
                    "student_b": b,
                    "notebook": NOTEBOOK_OF[name].stem,
                    "function": name,
                    "score": round(score, 3),
                    "evidence": evidence,
                    "shared": values,
                    "answers": (by_student[a], by_student[b]),
                    "links": (links[a], links[b]),
                }
            )
    order = {name: i for i, name in enumerate(NOTEBOOK_OF)}
    pairs.sort(key=lambda p: (not p["evidence"], -p["score"], order[p["function"]],
                              p["student_a"], p["student_b"]))  # fmt: skip
    return {"pairs": pairs, "compared": compared, "students": len(mine)}


def released_notebooks():
    """{stem: (names the released notebook defines, its fingerprints)} from notebooks/."""
    out = {}
    for nb in NOTEBOOKS:
        sources = code_sources(RELEASED, nb.filename)
        if sources:
            out[nb.stem] = released_fingerprints(sources)
    return out


# -- what is written --------------------------------------------------------------------------------
def similarity_csv(report):
    """OUT/similarity.csv: one row per listed pair and graded name, every cell through
    escaping.csv_row."""
    lines = [csv_row(CSV_COLUMNS)]
    for p in report["pairs"]:
        a, b = p["answers"]
        lines.append(
            csv_row(
                [
                    p["student_a"],
                    p["student_b"],
                    p["notebook"],
                    p["function"],
                    p["score"],
                    p["evidence"],
                    len(p["shared"]),
                    len(a.prints),
                    len(b.prints),
                ]
            )  # fmt: skip
        )
    return "\n".join(lines) + "\n"


def _marked(one, shared):
    """[{"n", "text", "hit"}] of an answer's lines, `hit` where a shared fingerprint lies; every
    invisible or control character shown as its escape (escaping.terminal), HTML escaping left
    to the template."""
    hits = set()
    for value in shared:
        low, high = one.prints[value]
        hits.update(range(low, high + 1))
    lines = one.code.split("\n")
    shown = [
        {"n": i, "text": terminal(line.expandtabs(4)), "hit": i in hits}
        for i, line in enumerate(lines[:MAX_SHOWN_LINES], start=1)
    ]
    if len(lines) > MAX_SHOWN_LINES:
        shown.append(
            {"n": "", "text": f"… {len(lines) - MAX_SHOWN_LINES} more lines", "hit": False}
        )
    return shown


def similarity_view(report):
    """The class page's section: per notebook, its listed pairs (both answers side by side,
    the lines holding a shared fingerprint marked) and its clusters (three or more students
    linked by listed pairs on one graded name)."""
    from autograder.report.class_page import feedback_href

    notebooks = []
    for nb in NOTEBOOKS:
        mine = [p for p in report["pairs"] if p["notebook"] == nb.stem]
        if not mine:
            continue
        shown = []
        for p in mine[:MAX_PAIRS_SHOWN]:
            a, b = p["answers"]
            shown.append(
                {
                    "students": [p["student_a"], p["student_b"]],
                    "hrefs": [feedback_href(link) for link in p["links"]],
                    "function": p["function"],
                    "score": p["score"],
                    "evidence": EVIDENCE[p["evidence"]],
                    "code": [_marked(a, p["shared"]), _marked(b, p["shared"])],
                }
            )
        notebooks.append(
            {
                "stem": nb.stem,
                "title": nb.title,
                "pairs": shown,
                "more": len(mine) - len(shown),
                "clusters": _clusters(mine),
            }
        )
    return {
        "note": NOTE,
        "threshold": THRESHOLD,
        "students": report["students"],
        "notebooks": notebooks,
    }


def _root(parent, x):
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _clusters(pairs):
    """[{"function", "students"}] of the groups of three or more students linked by pairs."""
    out = []
    for function in dict.fromkeys(p["function"] for p in pairs):
        parent = {}
        for p in pairs:
            if p["function"] == function:
                parent[_root(parent, p["student_a"])] = _root(parent, p["student_b"])
        groups = defaultdict(list)
        for student in list(parent):
            groups[_root(parent, student)].append(student)
        for members in groups.values():
            if len(members) >= 3:
                out.append({"function": function, "students": sorted(members)})
    return out
