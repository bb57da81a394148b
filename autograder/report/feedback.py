"""The feedback page's content, arranged for a student who reads from the top.

    feedback_context(payload) -> dict for templates/feedback.html.j2

1. the total and one row per notebook (score, and "all tests pass", "not started", or how many
   functions need work);
2. "fix these first": per notebook, its first failing function (in the order the notebook
   teaches them) with one hint and a link to the section of the notebook that teaches it;
3. per notebook, per function: the failing tests, each message once; the passing tests folded
   away; each misconception explained once on the page (its hint is cut out of the test
   messages that carry it, and later functions showing it point back to the first).

A notebook whose every test fails for one reason (not started, not submitted, misnamed,
unreadable) is one line. A notebook graded from a file under a near name says which file
("graded from ..."); one whose tests waited for an earlier notebook that is missing says which.
States are read from the tests' structured reasons (autograder.results), never from their
messages. Only the report's own words are written here; the tests' messages come from the judges.
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from autograder.course.misconceptions import CATALOGUE
from autograder.curriculum import BY_STEM, NOTEBOOKS, Notebook
from autograder.deadlines import late_line
from autograder.judging.dependencies import IMPORTS
from autograder.report.sections import Section, teaching_sections
from autograder.results import (
    DEPENDENCY_MISSING,
    DEPENDENCY_NOT_IMPLEMENTED,
    MISSING_NOTEBOOK,
    UNFINISHED,
    ResultsJson,
    reason_of,
)

NOT_IMPLEMENTED = "not implemented yet"  # the page's own words for a stub
SENTENCE_ENDS = (". ", "? ", "! ", "; ", "\n")  # what ends the sentence before a hint's lead-in


def strip_hints(output: str, ids: Iterable[str]) -> str:
    """`output` without the sentences that restate the catalogue's mistake and hint for `ids`
    ("It looks like <mistake>: <hint>"): the page states each hint once, in its own box."""
    text = output
    for id_ in ids:
        m = CATALOGUE.get(id_)
        if m is None:
            continue
        for phrase in (f"{m.mistake}: {m.hint}", m.hint):
            at = text.find(phrase)
            if at < 0:
                continue
            end = at + len(phrase)
            # the lead-in of the same sentence ("It looks like ", "This is what happens with ")
            start = max(text.rfind(end_, 0, at) for end_ in SENTENCE_ENDS)
            start = 0 if start < 0 else start + 2
            lead = text[start:at]
            if len(lead) > 40 or any(ch in lead for ch in ".:;"):
                start = at  # not a short lead-in of this sentence: cut the phrase only
            text = (text[:start].rstrip() + " " + text[end:].lstrip()).strip()
            break
    text = re.sub(r" +([,;:]|\.(?!\.))", r"\1", text)
    return text.strip(" ;:") or output


def _misconception(id_):
    m = CATALOGUE.get(id_)
    return {"id": id_, "mistake": m.mistake if m else "", "hint": m.hint if m else ""}


def _function_view(name: str, tests, section, explained):
    failed = [t for t in tests if t["status"] != "passed"]
    passed = [t for t in tests if t["status"] == "passed"]
    ids = []
    for t in failed:
        for id_ in t.get("misconceptions", []):
            if id_ not in ids:
                ids.append(id_)
    messages: dict[str, list[str]] = {}  # message -> names of the tests that gave it, in order
    for t in failed:
        message = strip_hints(t["output"], t.get("misconceptions", [])) if t["output"] else ""
        messages.setdefault(message, []).append(_short(t["name"], name))
    misconceptions = []
    for id_ in ids:
        entry = _misconception(id_)
        entry["explained_in"] = explained.get(id_)  # None: explained here
        explained.setdefault(id_, name)
        misconceptions.append(entry)
    not_implemented = bool(failed) and all(reason_of(t) in UNFINISHED for t in failed)
    reasons = {reason_of(t) for t in failed}
    return {
        "name": name,
        "score": round(sum(t["score"] for t in tests), 4),
        "max_score": round(sum(t["max_score"] for t in tests), 4),
        "ok": not failed,
        "not_implemented": not_implemented and not passed,
        "failures": [{"message": msg, "tests": names} for msg, names in messages.items()],
        "failed_count": len(failed),
        "passed": [
            {"name": _short(t["name"], name), "score": t["score"], "max_score": t["max_score"]}
            for t in passed
        ],
        "misconceptions": misconceptions,
        "section": section,
        "reasons": sorted(reasons),
        # the earlier notebooks its dependency-missing tests waited for
        "waits_for": sorted({t["depends_on"] for t in failed if _depends_on(t)}),
    }


def _depends_on(test):
    return reason_of(test) == DEPENDENCY_MISSING and test.get("depends_on") in BY_STEM


def _short(test_name, function):
    """A test's name without the function's name in front: it stands under that name."""
    prefix = f"{function}: "
    return test_name[len(prefix) :] if test_name.startswith(prefix) else test_name


def _one_hint(function):
    """The one thing to say about a failing function in "fix these first"."""
    for m in function["misconceptions"]:
        if m["mistake"]:
            return f"Likely mistake: {m['mistake']}. Hint: {m['hint']}"
    if function["not_implemented"]:
        return f"{function['name']} is {NOT_IMPLEMENTED}."
    return function["failures"][0]["message"] if function["failures"] else ""


def _earlier_cause(function, notebook: Notebook, states):
    """Why `function` fails when the cause is an earlier notebook, read from its tests' reasons:
    an earlier notebook it uses is missing, misnamed or unreadable (dependency-missing: its
    message says so), or something it calls is not implemented and an earlier notebook it uses
    is not started. '' otherwise."""
    if function["waits_for"] and function["reasons"] == [DEPENDENCY_MISSING]:
        return function["failures"][0]["message"] if function["failures"] else ""
    if DEPENDENCY_NOT_IMPLEMENTED not in function["reasons"]:
        return ""
    if not set(function["reasons"]) <= set(UNFINISHED):
        return ""
    for stem in sorted(IMPORTS.get(notebook.stem, {}), reverse=True):  # the nearest first
        state, _ = states.get(stem, ("missing", ""))
        if state == "not-started":
            earlier = BY_STEM[stem]
            return (
                f"{function['name']} uses your work from {earlier.filename}, which is not "
                f"started yet: finish {earlier.stem} first, and hand in both notebooks together."
            )
    return ""


def notebook_state(tests: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """('complete' | 'not-started' | 'one-reason' | 'in-progress', the one reason or '')."""
    failed = [t for t in tests if t.get("status") != "passed"]
    if not failed:
        return "complete", ""
    if len(failed) < len(tests):
        return "in-progress", ""
    if all(reason_of(t) in UNFINISHED for t in failed):
        return "not-started", ""
    reasons = {t["output"] for t in failed}
    if len(reasons) == 1:
        return "one-reason", reasons.pop()
    return "in-progress", ""


def feedback_context(
    payload: ResultsJson, sections: Mapping[str, Section] | None = None
) -> dict[str, Any]:
    """Everything the template shows, in reading order (see the module's docstring)."""
    sections = teaching_sections() if sections is None else sections
    by_notebook = defaultdict(list)
    for test in payload.get("tests", []):
        by_notebook[test["notebook"]].append(test)
    explained: dict[str, str] = {}  # misconception id -> the function whose box explains it
    notebooks, fix_first, states = [], [], {}
    for nb in NOTEBOOKS:
        tests = by_notebook.get(nb.stem, [])
        if not tests:
            continue
        info = payload.get("notebooks", {}).get(nb.stem, {})
        state, reason = notebook_state(tests)
        missing = all(reason_of(t) == MISSING_NOTEBOOK for t in tests)
        states[nb.stem] = ("missing", reason) if missing else (state, reason)
        functions = []
        if state in ("complete", "in-progress"):
            for name in nb.graded:
                mine = [t for t in tests if t["function"] == name]
                if mine:
                    functions.append(_function_view(name, mine, sections.get(name), explained))
        todo = [f for f in functions if not f["ok"]]
        if todo:
            first = todo[0]
            fix_first.append(
                {"notebook": nb.stem, "function": first["name"],
                 "hint": _earlier_cause(first, nb, states) or _one_hint(first),
                 "section": first["section"]}
            )  # fmt: skip
        first_exercise = next((sections[n] for n in nb.graded if n in sections), None)
        waits_for = sorted(
            {t["depends_on"] for t in tests if t.get("status") != "passed" and _depends_on(t)}
        )
        notebooks.append(
            {
                "stem": nb.stem,
                "filename": nb.filename,
                "title": nb.title,
                "state": state,
                "reason": reason,
                "info": info,
                "functions": functions,
                "to_fix": len(todo),
                "first_exercise": first_exercise,
                "late": late_line(nb.stem, payload.get("late")),
                "graded_from": info.get("graded_from") if isinstance(info, dict) else None,
                "waits_for": [BY_STEM[stem].filename for stem in waits_for],
                "score": info.get("score", round(sum(t["score"] for t in tests), 4)),
                "max_score": info.get("max_score", round(sum(t["max_score"] for t in tests), 4)),
            }
        )
    start_with = next((n for n in notebooks if n["state"] == "not-started"), None)
    return {
        "payload": payload,
        "student": payload.get("student", ""),
        "notebooks": notebooks,
        "fix_first": fix_first,
        "start_with": start_with,
        "all_pass": bool(notebooks) and all(n["state"] == "complete" for n in notebooks),
    }
