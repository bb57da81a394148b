"""Which answers were shared: per graded name, the pairs of students whose own code is alike,
weighted by how unusual what they share is (OUT/similarity.csv and a section of class.html).

    report = class_similarity(students, folders)   # students: SavedResult-like; folders:
                                                    # {student: the folder graded}
    text = similarity_csv(report)                   # OUT/similarity.csv
    section = similarity_view(report)               # class.html's (templates/similarity.html.j2)

Each student's own code for each graded name, fingerprinted, is report/own_code.py's.

Per graded name, an inverted index from fingerprint to the students who have it. A fingerprint
more than a tenth of the answers share (and at least COMMON_FLOOR) is the class's common answer
and weighs nothing; below that, N students sharing it weigh log((L + 1) / N) / log((L + 1) / 2)
for that limit L (an IDF: 1 when two students alone share it). Only the pairs of a rare
fingerprint are ever formed, so the cost grows with the fingerprints and a tenth of the class,
not with every pair of answers compared in full. A pair's score is the weight of what they share
over the mean number of their fingerprints (1: the same unusual code; 0: nothing unusual in
common), times their mean length in tokens over MIN_TOKENS when they are shorter: there are
few ways to write four lines, so two short answers alike are weak evidence. A pair is listed
from THRESHOLD, or from SHARED_WRONG when the grader also judged both answers wrong the same
way (the same tests failed, with the same misconceptions or the same messages): the same
mistake is strong evidence, shown as such.

Similarity is a reason to look, never a verdict: NOTE says so on the page.
"""

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, TypedDict

from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS
from autograder.escaping import csv_row, terminal
from autograder.report.own_code import Answer, class_answers
from autograder.results import FAILED, ReportedStudent, reason_of

THRESHOLD = 0.5  # a pair's score from which it is listed
SHARED_WRONG = 0.25  # ... or from which, when both answers are wrong the same way
COMMON_FLOOR = 4  # a fingerprint more students share is common, whatever the class's size
MIN_TOKENS = 80  # an answer shorter (about eight lines) scores less: see score_pairs
MAX_SHOWN_LINES = 400  # of one answer on the page
MAX_PAIRS_SHOWN = 60  # per notebook on the page (similarity.csv has them all)
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


def common_limit(answers: int) -> int:
    """How many students may share a fingerprint before it is the class's common answer and
    weighs nothing: a tenth of the answers, at least COMMON_FLOOR."""
    return max(COMMON_FLOOR, math.ceil(answers / 10))


def rarity(holders: int, limit: int) -> float:
    """The weight of a fingerprint `holders` students share: 1 for two, falling as log(1 / the
    number) does (an IDF), to 0 past `limit`."""
    if holders < 2 or holders > limit:
        return 0.0
    return math.log((limit + 1) / holders) / math.log((limit + 1) / 2)


# -- comparing the class ----------------------------------------------------------------------------
def _wrong_ways(results: Mapping[str, Any]) -> dict[Any, tuple]:
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


def _evidence(mine: tuple | None, theirs: tuple | None) -> str:
    if not mine or not theirs:
        return ""
    if mine == theirs:
        return "same-wrong-results"
    return "same-mistake" if mine[:2] == theirs[:2] and mine[1] else ""


def score_pairs(answers: Sequence[Answer]) -> dict[tuple[str, str], tuple[float, list[int]]]:
    """{(student a, student b): (score, shared fingerprints)} of the pairs that share a rare
    fingerprint, a < b."""
    count = len(answers)
    if count < 2:
        return {}
    holders: defaultdict[int, list[str]] = defaultdict(list)
    for answer in answers:
        for value in answer.prints:
            holders[value].append(answer.student)
    limit = common_limit(count)
    shared: defaultdict[tuple[str, str], list[Any]] = defaultdict(
        lambda: [0.0, []]
    )  # weight, values
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


def class_similarity(
    students: Sequence[ReportedStudent],
    folders: Mapping[str, Path],
    released: Mapping[str, tuple[set[str], set[int]]] | None = None,
) -> dict[str, Any]:
    """The similarity report of the students (SavedResult-like: .student, .results, .folder)
    whose graded folders `folders` names: {"pairs", "compared", "students"}."""
    results = {s.student: (getattr(s, "results", None) or {}) for s in students}
    links = {s.student: getattr(s, "folder", None) or s.student for s in students}
    mine = {student: folder for student, folder in folders.items() if student in results}
    wrong_ways = {student: _wrong_ways(results[student]) for student in mine}
    pairs: list[dict[str, Any]] = []
    compared: dict[str, int] = {}
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


# -- what is written --------------------------------------------------------------------------------
def similarity_csv(report: Mapping[str, Any]) -> str:
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


class MarkedLine(TypedDict):
    """One line of an answer on the similarity page (the template reads these keys)."""

    n: int | str  # its number; "" on the line saying how many more were left out
    text: str
    hit: bool  # a shared fingerprint lies on it


def _marked(one: Answer, shared: list[int]) -> list[MarkedLine]:
    """[{"n", "text", "hit"}] of an answer's lines, `hit` where a shared fingerprint lies; every
    invisible or control character shown as its escape (escaping.terminal), HTML escaping left
    to the template."""
    hits: set[int] = set()
    for value in shared:
        hits |= one.prints[value]
    lines = one.code.split("\n")
    shown: list[MarkedLine] = [
        {"n": i, "text": terminal(line.expandtabs(4)), "hit": i in hits}
        for i, line in enumerate(lines[:MAX_SHOWN_LINES], start=1)
    ]
    if len(lines) > MAX_SHOWN_LINES:
        shown.append(
            {"n": "", "text": f"… {len(lines) - MAX_SHOWN_LINES} more lines", "hit": False}
        )
    return shown


def similarity_view(report: Mapping[str, Any]) -> dict[str, Any]:
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


def _root(parent: dict[str, str], x: str) -> str:
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _clusters(pairs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """[{"function", "students"}] of the groups of three or more students linked by pairs."""
    out = []
    for function in dict.fromkeys(p["function"] for p in pairs):
        parent: dict[str, str] = {}
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
