"""The class at a glance: OUT/class.html for the instructor, and its data as OUT/class.json.

    data = class_data(students)         # plain data (students: SavedResult-like, .student .results)
    html = render_class_page(data)      # templates/class.html.j2, jinja2 autoescape

What it holds, in reading order: the distribution of totals and of each notebook's score
(histograms drawn as inline SVG, no script or font from the network), per notebook how many
students did not submit it or did not start it, the students to help first (in this order:
not graded (refused before grading, with the run's reason, or failed in the grader), a crashed
kernel, a timeout, a missing, misnamed or unreadable notebook, a notebook handed in untouched,
the lowest totals; each entry named for what it is, from the results'
structured fields and reasons, never their messages), each misconception with its
students and the section of the notebook that teaches it, the success rate of every graded
function and of every hidden test under its own name, and the integrity flags: what the grader
saw a notebook do that a human should look at (never a verdict: scores come from the judges).

Student ids and every other student-derived string reach the page only through the template,
where jinja2's HTML autoescape escapes them; links to a student's feedback page are
percent-encoded here. A refused student's id (which may hold control characters, a
right-to-left override or bytes that are not UTF-8) and reason are shown as escaping.terminal
writes them first, so every invisible character is seen as its escape; they have no feedback
page, hence no link. Totals, means and histograms are over the students graded.
"""

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard
from urllib.parse import quote

from autograder.course.misconceptions import CATALOGUE
from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS, Notebook
from autograder.deadlines import GATHER_FLAGS, late_line
from autograder.escaping import terminal
from autograder.harness.watch import ANSWER_FILES
from autograder.integrity import INTEGRITY_FACTS
from autograder.report.feedback import notebook_state
from autograder.report.not_graded import GRADER_FAILED, NOT_GRADED, why_not_graded
from autograder.report.rendering import environment
from autograder.report.sections import Section, teaching_sections
from autograder.results import (
    CORRUPT,
    MISNAMED,
    MISSING_NOTEBOOK,
    NOT_IMPLEMENTED,
    NOT_RUN,
    TIMEOUT,
    ReportedStudent,
    reason_of,
)
from autograder.roster import Person

BINS = 10  # bars of each histogram
# what the "every student" table shows of each (not_graded: why a student has no grade, or "")
EVERY_STUDENT_SHOWS = (
    "student",
    "href",
    "score",
    "max_score",
    "states",
    "per_notebook",
    "not_graded",
)
LOWEST = (3, 15)  # "help first" lists the lowest tenth of totals, at least 3, at most 15
# "help first", in its order: what puts a student there (each entry's `kind`)
HELP_ORDER = (
    "not-graded",  # the grader could not grade them: nothing they did is scored
    "crashed",  # a notebook's kernel died
    "timed-out",  # a notebook, or a function on a test, ran past its time limit
    "file",  # a notebook missing (most of the class handed it in), misnamed or unreadable
    "untouched",  # a notebook handed in as released: no exercise attempted
    "lowest",  # among the lowest totals
)

# What the grader sees of a notebook reaching for the answers, in the student's own errors and
# in the tests' messages (an import of the model answers fails in the sandbox, and so does
# opening their files): the error text names the module or the path it looked for.
_ANSWER_LOOKUP = re.compile(  # a path or module of what holds an answer (harness/watch.py's)
    rf"autograder[./\\]course[./\\]{ANSWER_FILES}|solutions[/\\]\d\d_"
)
FLAG_NOTE = (
    "Verdicts are computed outside the student's process, so none of this changed a score by "
    "itself. It may be an experiment, a copied snippet or an attempt to pass the tests: look "
    "at the notebook before drawing any conclusion."
)


def feedback_href(folder: str) -> str:
    """The relative link from OUT/class.html to OUT/<folder>/feedback.html, percent-encoded
    (an id such as `javascript:x` or `a/../b` stays one path segment)."""
    return quote(folder, safe="") + "/feedback.html"


def _histogram(values: list[float], top: float):
    """BINS equal bins over [0, top]; the last one includes `top` (full marks)."""
    counts = [0] * BINS
    width = top / BINS if top > 0 else 1.0
    for v in values:
        counts[min(BINS - 1, max(0, int(v / width)))] += 1
    tallest = max(counts) or 1
    return {
        "top": top,
        "bins": [
            {
                "low": round(i * width, 2),
                "high": round((i + 1) * width, 2),
                "count": c,
                "height": round(c / tallest, 4),
            }
            for i, c in enumerate(counts)
        ],
    }


def _median(values):
    ordered = sorted(values)
    if not ordered:
        return 0.0
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _number(value: object) -> TypeGuard[int | float]:
    """An int or a float read from results.json (never a bool)."""
    return type(value) in (int, float)


def _notebook_state(info, tests):
    """'not-submitted' | 'misnamed' | 'unreadable' | 'not-started' | 'complete' | 'in-progress'
    | 'not-graded'."""
    if not tests:
        return "not-graded"
    reasons = {reason_of(t) for t in tests}
    if reasons == {MISNAMED}:
        return "misnamed"
    if reasons <= {CORRUPT, NOT_RUN}:
        return "unreadable"
    if info.get("submitted") is False or reasons == {MISSING_NOTEBOOK}:
        return "not-submitted"
    state, _ = notebook_state(tests)  # the feedback page's own reading of the tests
    return "in-progress" if state == "one-reason" else state


def _run_troubles(results, by_notebook) -> list[tuple[str, str]]:
    """[(kind, notebook stem)] for a student not graded, a crashed kernel or a timeout (of a
    notebook's cell, or of a function on a test), from the results' structured fields."""
    troubles = []
    if results.get("internal_error"):
        troubles.append(("not-graded", ""))
    for stem, info in (results.get("notebooks") or {}).items():
        if not isinstance(info, dict):
            continue
        kinds = {e.get("type") for e in info.get("cell_errors", []) if isinstance(e, dict)}
        if "KernelDied" in kinds or info.get("kernel_died"):
            troubles.append(("crashed", stem))
        slow = any(reason_of(t) == TIMEOUT for t in by_notebook.get(stem, []))
        if "Timeout" in kinds or info.get("timed_out") or slow:
            troubles.append(("timed-out", stem))
    return troubles


def _file_troubles(results, by_notebook, states):
    """{stem: {"state", "candidates", "needed_by"}} of the notebooks whose file could not be
    graded (not submitted, misnamed, unreadable): what the class page says of each."""
    needed_by = defaultdict(set)  # earlier stem -> the notebooks whose tests waited for it
    for stem, tests in by_notebook.items():
        for t in tests:
            if isinstance(t.get("depends_on"), str) and t["depends_on"] in states:
                needed_by[t["depends_on"]].add(stem)
    out = {}
    for stem, state in states.items():
        if state in ("not-submitted", "misnamed", "unreadable"):
            info = (results.get("notebooks") or {}).get(stem) or {}
            candidates = info.get("candidates") if state == "misnamed" else None
            out[stem] = {
                "state": state,
                "candidates": [str(c)[:200] for c in (candidates or [])][:5],
                "needed_by": sorted(needed_by.get(stem, ())),
            }
    return out


def _untouched(by_notebook, states):
    """The notebooks handed in as released: they ran, and every test met a graded name that
    itself still raises NotImplementedError (no exercise attempted)."""
    return [
        stem
        for stem, tests in by_notebook.items()
        if tests
        and states.get(stem) == "not-started"
        and all(reason_of(t) == NOT_IMPLEMENTED for t in tests)
    ]


def _integrity(results):
    """[{notebook, what}] of one student: the grader's own words, never the student's text."""
    seen: dict[tuple[str, str], bool] = {}
    for stem, info in (results.get("notebooks") or {}).items():
        if not isinstance(info, dict):
            continue
        for fact in info.get("integrity", []) or []:
            if fact in INTEGRITY_FACTS:
                seen.setdefault((stem, fact), True)
        texts = [
            str(e.get("message", "")) for e in info.get("cell_errors", []) if isinstance(e, dict)
        ]
        texts += [str(m) for m in info.get("messages", [])]
        if any(_ANSWER_LOOKUP.search(text) for text in texts):
            seen.setdefault((stem, "answers-looked-up"), True)
    for t in results.get("tests", []):
        if _ANSWER_LOOKUP.search(str(t.get("output", ""))):
            seen.setdefault((t.get("notebook", ""), "answers-looked-up"), True)
    order = {nb.stem: i for i, nb in enumerate(NOTEBOOKS)}
    found = [
        {"notebook": stem, "fact": fact, "what": INTEGRITY_FACTS[fact]}
        for stem, fact in sorted(seen, key=lambda k: (order.get(k[0], 99), k[1]))
    ]
    # what `classroom gather` saw of the repository (grade --handed-in): by token, in our words
    for entry in results.get("handed_in_flags", []) or []:
        flag = entry.get("flag") if isinstance(entry, dict) else None
        if flag in GATHER_FLAGS:
            found.append({"notebook": "the repository", "fact": flag, "what": GATHER_FLAGS[flag]})
    return found


def _section(function: str, sections):
    s = sections.get(function)
    return None if s is None else {"filename": s.filename, "title": s.title, "href": s.href}


def class_data(
    students: Sequence[ReportedStudent],
    sections: Mapping[str, Section] | None = None,
    roster: Sequence[Person] | None = None,
) -> dict[str, Any]:
    """Everything the class page shows, as plain data (the content of class.json). roster:
    [roster.Person]; when any has a section, the page shows each section's means and help list."""
    sections = teaching_sections() if sections is None else sections
    n = len(students)
    max_score = max((float(s.results.get("max_score", 0.0) or 0.0) for s in students), default=0)
    per_notebook: dict[str, dict[str, Any]] = {
        nb.stem: {"scores": [], "states": Counter()} for nb in NOTEBOOKS
    }
    nb_max: defaultdict[str, float] = defaultdict(float)
    functions: defaultdict[Any, dict[str, float]] = defaultdict(
        lambda: {"students": 0, "complete": 0, "score": 0.0, "max": 0.0}
    )
    tests: dict[
        str, dict[str, Any]
    ] = {}  # name -> counts, in the order first seen (the notebooks' order)
    misconceptions: defaultdict[str, dict[str, Any]] = defaultdict(
        lambda: {"students": [], "functions": set()}
    )
    rows = []
    for s in students:
        if getattr(s, "refused", ""):
            rows.append(_refused_row(s))
            continue
        results = s.results
        by_notebook: defaultdict[Any, list[dict[str, Any]]] = defaultdict(list)
        by_function: defaultdict[Any, list[dict[str, Any]]] = defaultdict(list)
        for t in results.get("tests", []):
            by_notebook[t.get("notebook")].append(t)
            by_function[t.get("function")].append(t)
            entry = tests.setdefault(
                t["name"],
                {"name": t["name"], "function": t.get("function"), "notebook": t.get("notebook"),
                 "max_score": t.get("max_score", 0.0), "students": 0, "passed": 0, "score": 0.0},
            )  # fmt: skip
            entry["students"] += 1
            entry["passed"] += t.get("status") == "passed"
            entry["score"] += float(t.get("score", 0.0))
        states = {}
        for nb in NOTEBOOKS:
            mine = by_notebook.get(nb.stem, [])
            info = (results.get("notebooks") or {}).get(nb.stem) or {}
            state = _notebook_state(info, mine)
            states[nb.stem] = state
            if mine:
                per_notebook[nb.stem]["scores"].append(sum(t.get("score", 0.0) for t in mine))
                per_notebook[nb.stem]["states"][state] += 1
                nb_max[nb.stem] = max(nb_max[nb.stem], sum(t.get("max_score", 0) for t in mine))
        for function, mine in by_function.items():
            f = functions[function]
            f["students"] += 1
            f["complete"] += all(t.get("status") == "passed" for t in mine)
            f["score"] += sum(float(t.get("score", 0.0)) for t in mine)
            f["max"] += sum(float(t.get("max_score", 0.0)) for t in mine)
        seen: dict[str, set[Any]] = {}  # misconception -> the functions it was seen in
        for t in results.get("tests", []):
            for m in t.get("misconceptions", []):
                seen.setdefault(m, set()).add(t.get("function"))
        for m, where in seen.items():
            misconceptions[m]["students"].append(s.student)
            misconceptions[m]["functions"] |= where
        rows.append(
            {
                "student": s.student,
                "href": feedback_href(getattr(s, "folder", None) or s.student),
                "score": float(results.get("score", 0.0) or 0.0),
                "max_score": float(results.get("max_score", 0.0) or 0.0),
                "states": states,
                "per_notebook": {
                    stem: round(sum(t.get("score", 0.0) for t in mine), 4)
                    for stem, mine in by_notebook.items()
                },
                "troubles": _run_troubles(results, by_notebook),
                "files": _file_troubles(results, by_notebook, states),
                "untouched": _untouched(by_notebook, states),
                "flags": _integrity(results),
                "not_graded": terminal(why_not_graded(s)),
                "refused": "",
                "late": _late_of(results),
            }
        )

    course_order = {name: i for i, name in enumerate(NOTEBOOK_OF)}
    totals = [r["score"] for r in rows if not r["not_graded"]]
    return {
        "students": n,
        "graded": len(totals),
        "not_graded": n - len(totals),
        "max_score": max_score,
        "mean_total": round(sum(totals) / len(totals), 3) if totals else 0.0,
        "median_total": round(_median(totals), 3),
        "totals": _histogram(totals, max_score),
        "notebooks": [
            _notebook_view(nb, per_notebook[nb.stem], nb_max[nb.stem]) for nb in NOTEBOOKS
        ],
        "help_first": _help_first(rows),
        "misconceptions": _misconceptions_view(misconceptions, course_order, sections),
        "functions": [
            {
                "function": name,
                "notebook": NOTEBOOK_OF[name].stem,
                "students": functions[name]["students"],
                "complete": functions[name]["complete"],
                "rate": round(functions[name]["complete"] / functions[name]["students"], 4),
                "mean_fraction": round(functions[name]["score"] / functions[name]["max"], 4)
                if functions[name]["max"]
                else 0.0,
                "section": _section(name, sections),
            }
            for name in sorted(functions, key=lambda f: course_order.get(f, len(course_order)))
            if name in NOTEBOOK_OF
        ],
        "tests": [
            {**t, "score": round(t["score"], 4), "rate": round(t["passed"] / t["students"], 4)}
            for t in tests.values()
        ],
        "flags": [
            {"student": r["student"], "href": r["href"], "flags": r["flags"]}
            for r in rows
            if r["flags"]
        ],
        "flag_note": FLAG_NOTE,
        "expensive": most_expensive(students),
        "all_students": [
            {k: r[k] for k in EVERY_STUDENT_SHOWS}
            for r in sorted(rows, key=lambda r: (r["score"], r["student"]))
        ],
        **_lateness_and_sections(rows, roster),
    }


EXPENSIVE_SHOWN = 5  # the most expensive students listed on the class page


def most_expensive(
    students: Sequence[ReportedStudent], shown: int = EXPENSIVE_SHOWN
) -> list[dict[str, Any]]:
    """The students whose grading cost the most CPU (results.json's `cpu_seconds`: every
    sandbox of theirs, counted by the grading parent from its cgroup), most first, each with its
    wall seconds and how many times the class's median CPU it is; [] where nothing was counted
    (no cgroups). What a class of 200 spends on a few students shows here, whatever the cause:
    a loop, a sleeper, a student spending each budget."""
    import math

    measured = []
    for s in students:
        results = None if getattr(s, "refused", "") else getattr(s, "results", None)
        if not isinstance(results, dict):
            continue
        cpu = results.get("cpu_seconds")
        if _number(cpu) and math.isfinite(cpu) and cpu > 0:
            wall = results.get("execution_time")
            wall = float(wall) if _number(wall) and math.isfinite(wall) else None
            measured.append((float(cpu), s, wall))
    if not measured:
        return []
    median = _median([cpu for cpu, _, _ in measured])
    measured.sort(key=lambda m: (-m[0], m[1].student))
    return [
        {
            "student": s.student,
            "href": feedback_href(getattr(s, "folder", None) or s.student),
            "cpu_seconds": round(cpu, 1),
            "wall_seconds": round(wall, 1) if wall is not None else None,
            "times_median": round(cpu / median, 1) if median else None,
        }
        for cpu, s, wall in measured[:shown]
    ]


def _refused_row(s):
    """A student the run refused before grading: no results, no feedback page; named (escaped
    for a terminal, then by the template for HTML) with the reason the run gave."""
    reason = str(s.refused).strip()
    if reason.lower().startswith("not graded:"):
        reason = reason[len("not graded:") :].strip()
    return {
        "student": terminal(s.student),
        "href": None,
        "score": 0.0,
        "max_score": 0.0,
        "states": {nb.stem: "not-graded" for nb in NOTEBOOKS},
        "per_notebook": {},
        "troubles": [],
        "files": {},
        "untouched": [],
        "flags": [],
        "not_graded": terminal(reason),
        "refused": terminal(reason),
        "late": None,
    }


def _notebook_view(nb: Notebook, entry, top: float):
    scores, states = entry["scores"], entry["states"]
    return {
        "stem": nb.stem,
        "title": nb.title,
        "max_score": top,
        "graded": len(scores),
        "mean": round(sum(scores) / len(scores), 3) if scores else 0.0,
        "median": round(_median(scores), 3),
        "not_submitted": states["not-submitted"],
        "not_started": states["not-started"],
        "complete": states["complete"],
        "histogram": _histogram(scores, top),
    }


def _numbers(stems):
    return ", ".join(stem[:2] for stem in stems)


def _quoted(names) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _file_entry(stem, trouble) -> str:
    """One notebook whose file could not be graded, named for what it is."""
    number = stem[:2]
    if trouble["state"] == "misnamed":
        names = trouble["candidates"]
        own = f"{stem}.ipynb"
        if len(names) > 1 and all(n.replace("!", "/").rsplit("/", 1)[-1] == own for n in names):
            text = f"{number} handed in {len(names)} times, as different files: {_quoted(names)}"
        elif len(names) == 1:
            text = f"{number} misnamed as {_quoted(names)}"
        else:
            text = f"{number} misnamed: {len(names)} files could each be it ({_quoted(names)})"
    else:
        text = f"{number} is not a readable notebook"
    return text + _used_by(trouble["needed_by"])


def _used_by(stems) -> str:
    """' (03, 04 use it)': the later notebooks whose tests waited for this one."""
    if not stems:
        return ""
    return f" ({_numbers(stems)} use{'s' if len(stems) == 1 else ''} it)"


def _help_first(rows):
    """The students to help first, in HELP_ORDER: each with `reasons` (the page's words, most
    urgent first) and `kinds` (their HELP_ORDER kinds); students by their most urgent kind, then
    by total. A missing notebook counts when most of the class handed it in (a notebook not yet
    assigned is missing for everyone, and says nothing about one student)."""
    handed_in: Counter[str] = Counter()
    graded = [r for r in rows if any(v != "not-graded" for v in r["states"].values())]
    for r in graded:
        handed_in.update(stem for stem, v in r["states"].items() if v != "not-submitted")
    assigned = {stem for stem, count in handed_in.items() if 2 * count > len(graded)}

    chosen = {}  # student -> [(kind, text)]
    for r in rows:
        entries: list[tuple[str, str]] = []
        where: dict[str, list[str]] = {}  # kind -> the notebooks it happened in
        for kind, stem in r["troubles"]:
            stems = where.setdefault(kind, [])
            if stem and stem not in stems:
                stems.append(stem)
        if r["refused"]:  # refused before grading: the run's reason, named for what it is
            entries.append(("not-graded", f"{NOT_GRADED}: {r['refused']}"))
        elif "not-graded" in where:
            entries.append(("not-graded", f"{NOT_GRADED}: {GRADER_FAILED}"))
        if where.get("crashed"):
            stems = where["crashed"]
            many = "s" if len(stems) > 1 else ""
            entries.append(("crashed", f"notebook{many} {_numbers(stems)} crashed"))
        if where.get("timed-out"):
            entries.append(("timed-out", f"timed out in {_numbers(where['timed-out'])}"))
        files = r["files"]
        graded_states = [v for v in r["states"].values() if v != "not-graded"]
        if graded_states and all(v == "not-submitted" for v in graded_states):
            entries.append(("file", "submitted no notebook"))
        else:
            missing = [
                stem
                for stem, t in files.items()
                if t["state"] == "not-submitted" and (stem in assigned or t["needed_by"])
            ]
            if missing:
                needed = sorted({n for stem in missing for n in files[stem]["needed_by"]})
                entries.append(("file", f"{_numbers(missing)} missing{_used_by(needed)}"))
            for stem, t in files.items():
                if t["state"] != "not-submitted":
                    entries.append(("file", _file_entry(stem, t)))
        if r["untouched"]:
            entries.append(("untouched", f"{_numbers(r['untouched'])} handed in untouched"))
        if entries:
            chosen[r["student"]] = entries
    submitted = [
        r
        for r in rows
        if any(v not in ("not-submitted", "not-graded") for v in r["states"].values())
    ]
    least, most = LOWEST
    lowest = min(most, max(least, len(rows) // 10))
    for r in sorted(submitted, key=lambda r: (r["score"], r["student"]))[:lowest]:
        chosen.setdefault(r["student"], []).append(("lowest", "among the lowest totals"))
    rank = {kind: i for i, kind in enumerate(HELP_ORDER)}

    def urgency(r):
        return (min(rank[k] for k, _ in chosen[r["student"]]), r["score"], r["student"])

    listed = sorted((r for r in rows if r["student"] in chosen), key=urgency)
    return [
        {"student": r["student"], "href": r["href"], "score": r["score"],
         "max_score": r["max_score"], "not_graded": r["not_graded"],
         "kinds": list(dict.fromkeys(k for k, _ in chosen[r["student"]])),
         "reasons": [text for _, text in chosen[r["student"]]]}
        for r in listed
    ]  # fmt: skip


def _misconceptions_view(misconceptions, course_order: dict[str, int], sections):
    out = []
    for m, entry in misconceptions.items():
        where = sorted(entry["functions"], key=lambda f: course_order.get(f, len(course_order)))
        known = CATALOGUE.get(m)
        out.append(
            {
                "id": m,
                "count": len(entry["students"]),
                "students": sorted(entry["students"]),
                "functions": where,
                "mistake": known.mistake if known else "",
                "hint": known.hint if known else "",
                # the section teaching the earliest function in which the class showed it
                "section": next((_section(f, sections) for f in where if f in sections), None),
            }
        )
    out.sort(key=lambda m: (-m["count"], m["id"]))
    return out


# -- lateness and sections (their own block of the page) --------------------------------------
HELP_CSV = "help_first.csv"  # the help list, for a spreadsheet (write_class writes it)
NO_SECTION = "(no section in the roster)"


def _late_of(results):
    """One student's lateness from results.json's `late` block: None when they have none (no
    deadlines, or on time everywhere with no extension), else what was late and by how much,
    the points taken and the notebooks an extension moved."""
    late = results.get("late")
    if not isinstance(late, dict) or not isinstance(late.get("notebooks"), dict):
        return None
    notebooks: list[dict[str, Any]] = []
    extended: list[str] = []
    for stem, entry in late["notebooks"].items():
        if not isinstance(entry, dict):
            continue
        seconds = entry.get("seconds_late") or 0
        penalty = entry.get("penalty") or 0
        if not isinstance(seconds, int | float) or not isinstance(penalty, int | float):
            continue
        if entry.get("extended") is True:
            extended.append(str(stem))
        if seconds > 0 or isinstance(entry.get("marked_late"), str):  # marked: time unknown
            notebooks.append({"notebook": str(stem), "late": late_line(stem, late),
                              "seconds_late": seconds, "penalty": round(float(penalty), 4)})  # fmt: skip
    if not notebooks and not extended:
        return None
    return {
        "notebooks": notebooks,
        "seconds_late": max((n["seconds_late"] for n in notebooks), default=0),
        "penalty": round(sum(n["penalty"] for n in notebooks), 4),
        "extended": extended,
    }


def _lateness_and_sections(rows, roster):
    """The page's `lateness` (who, how late, points taken, extensions used) and `sections`
    (per roster section: the means and the help list; [] when the roster has no section)."""
    late = [r for r in rows if r.get("late")]
    lateness = {
        "students": [
            {"student": r["student"], "href": r["href"], **r["late"]}
            for r in sorted(
                late,
                key=lambda r: (-r["late"]["penalty"], -r["late"]["seconds_late"], r["student"]),
            )
        ],  # fmt: skip
        "late": sum(1 for r in late if r["late"]["notebooks"]),
        "points_taken": round(sum(r["late"]["penalty"] for r in late), 4),
        "extended": sum(1 for r in late if r["late"]["extended"]),
    }
    section_of = _sections_of([r["student"] for r in rows], roster)
    help_first = _help_first(rows)
    sections = []
    if section_of:
        names = sorted(set(section_of.values()) | {NO_SECTION}, key=lambda n: (n == NO_SECTION, n))
        for name in names:
            mine = [r for r in rows if section_of.get(r["student"], NO_SECTION) == name]
            if not mine:
                continue
            totals = [r["score"] for r in mine if not r["not_graded"]]
            who = {r["student"] for r in mine}
            sections.append({
                "section": name,
                "students": len(mine),
                "graded": len(totals),
                "mean_total": round(sum(totals) / len(totals), 3) if totals else 0.0,
                "median_total": round(_median(totals), 3),
                "late": sum(1 for r in mine if r.get("late") and r["late"]["notebooks"]),
                "help_first": [h for h in help_first if h["student"] in who],
            })  # fmt: skip
    return {"lateness": lateness, "sections": sections, "help_csv": HELP_CSV}


def _sections_of(students, roster):
    """{student: section} for the students the roster matches to a person with a section; {}
    when no person of the roster has one (roster.match_submissions: the export's matching)."""
    from autograder.roster import match_submissions

    people = list(roster or [])
    if not any(p.get("section") for p in people):
        return {}
    rows = {p.row: p for p in people}
    match = match_submissions(people, students)
    return {name: rows[row].get("section") or NO_SECTION for row, name in match.by_person.items()}


def help_first_csv(data: Mapping[str, Any]) -> str:
    """OUT/help_first.csv: the class page's help list, one row a student, in its order."""
    from autograder.escaping import csv_row

    section_of = {h["student"]: s["section"] for s in data["sections"] for h in s["help_first"]}
    with_sections = bool(section_of)
    header = ["student", *(["section"] * with_sections), "total", "max_score", "not_graded", "why"]
    lines = [csv_row(header)]
    for h in data["help_first"]:
        total = "" if h["not_graded"] else h["score"]
        lines.append(csv_row([h["student"], *([section_of.get(h["student"])] * with_sections), total,
                              h["max_score"], "yes" if h["not_graded"] else "",
                              "; ".join(h["reasons"])]))  # fmt: skip
    return "\n".join(lines) + "\n"


def render_class_page(data: Mapping[str, Any]) -> str:
    return environment().get_template("class.html.j2").render(**data)
