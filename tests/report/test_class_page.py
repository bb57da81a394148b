"""The class page (OUT/class.html, OUT/class.json) as an instructor of 250 reads it.

A synthetic class is built here as results.json payloads (no grading): 250 students whose
notebooks are complete, in progress, not started or not submitted, some with a timeout, a
crashed kernel or an internal error, misconceptions, integrity facts, a 200-character id and
ids written as HTML or script. The counts the page must show are tallied here, from the choices
the builder made, never from the code under test. The example class (examples/class) is graded
for real once. Both pages are opened in headless Chromium (like tests/report/test_feedback_browser.py)
with a script that records what a reader meets: the visible text, whether anything is wider
than the window, whether a click on a column's title sorts the table, and whether a student's
id became markup.
"""

import functools
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from headless_chromium import run_chromium

from autograder.course.probes import build_cases
from autograder.curriculum import NOTEBOOKS
from autograder.integrity import INTEGRITY_FACTS
from autograder.report import SavedResult, render_class_page, write_class
from autograder.report.class_page import HELP_ORDER, class_data

REPO = Path(__file__).resolve().parents[2]
NOT_IMPLEMENTED = "softmax is not implemented yet (it raises NotImplementedError)."
LONG_ID = "a" * 120 + "-" + "b" * 79  # 200 characters, no space to break at
HOSTILE = [
    "<img src=x onerror=\"document.title='pwned'\">",
    "</script><script>document.title='pwned'</script>",
    "javascript:document.title='pwned'",
    "&amp; <b>bold</b>",
    LONG_ID,
]


# -- a synthetic class -------------------------------------------------------------------------
@functools.cache  # building every notebook's cases takes seconds; the course does not change
def course_tests():
    """((notebook, function, name, points), ...) of the real course (names as the grader gives)."""
    points = {}
    for nb in NOTEBOOKS:
        for case in build_cases(nb.stem, 1):
            points[(nb.stem, case.function, f"{case.function}: {case.name}")] = case.points
    return tuple((*k, v) for k, v in points.items())


def synthetic_class(n=250, seed=20):
    """(payloads, tally): tally holds what the page must count, from the builder's choices."""
    rng = random.Random(seed)
    tests = course_tests()
    functions = sorted({f for _, f, _, _ in tests})
    tally = {
        "not_submitted": Counter(),
        "not_started": Counter(),
        "complete_function": Counter(),
        "passed_test": Counter(),
        "misconception": {},
        "troubled": set(),
        "gaps": set(),  # a notebook missing or handed in untouched
        "flagged": set(),
    }
    payloads = []
    for i in range(n):
        student = HOSTILE[i] if i < len(HOSTILE) else f"student{i:03d}"
        if i == 7:  # the grader failed on this one: no tests
            payloads.append(
                {"score": 0.0, "max_score": 0.0, "student": student, "internal_error": True,
                 "output": "The grader failed", "notebooks": {}, "tests": []}
            )  # fmt: skip
            tally["troubled"].add(student)
            continue
        skill = rng.random()
        notebooks, out = {}, []
        for nb in NOTEBOOKS:
            state = rng.choices(["missing", "stub", "work"], [0.08, 0.07, 0.85])[0]
            mine = [t for t in tests if t[0] == nb.stem]
            info = {"ran": state != "missing", "submitted": state != "missing", "messages": [],
                    "cell_errors": [], "executed_ok": True}  # fmt: skip
            if state == "missing":
                tally["not_submitted"][nb.stem] += 1
                tally["gaps"].add(student)
                info["messages"] = [f"{nb.filename} was not found in your submission."]
            elif state == "stub":
                tally["not_started"][nb.stem] += 1
                tally["gaps"].add(student)
            bad_functions = {f for _, f, _, _ in mine if rng.random() > skill}
            for _, function, name, points in mine:
                passed = state == "work" and (function not in bad_functions or rng.random() < 0.5)
                output = "" if passed else "wrong values"
                reason = "passed" if passed else "failed"
                ids = []
                if state == "missing":
                    output = (
                        f"{nb.filename} was not found in your submission, so its tests score 0."
                    )
                    reason = "missing-notebook"
                elif state == "stub":
                    output = NOT_IMPLEMENTED
                    reason = "not-implemented"
                elif not passed and function == "scaled_scores":
                    ids = ["missing-scale"]
                    tally["misconception"].setdefault("missing-scale", set()).add(student)
                if passed:
                    tally["passed_test"][name] += 1
                out.append({"name": name, "score": points if passed else 0.0, "max_score": points,
                            "status": "passed" if passed else "failed", "output": output,
                            "notebook": nb.stem, "function": function, "misconceptions": ids,
                            "reason": reason})  # fmt: skip
            if state == "work" and i % 50 == 3:
                info["cell_errors"] = [{"cell": 4, "type": "Timeout", "message": "still running",
                                        "line": "while True:"}]  # fmt: skip
                tally["troubled"].add(student)
            if state == "work" and i % 50 == 4:
                info["cell_errors"] = [{"cell": 2, "type": "KernelDied", "message": "died",
                                        "line": "os._exit(0)"}]  # fmt: skip
                tally["troubled"].add(student)
            if state == "work" and i % 40 == 5:
                info["integrity"] = ["comparison-patched", "not-a-known-token"]
                tally["flagged"].add(student)
            notebooks[nb.stem] = info
        for function in functions:
            mine = [t for t in out if t["function"] == function]
            if mine and all(t["status"] == "passed" for t in mine):
                tally["complete_function"][function] += 1
        payloads.append(
            {"score": sum(t["score"] for t in out), "max_score": sum(t["max_score"] for t in out),
             "student": student, "notebooks": notebooks, "tests": out}
        )  # fmt: skip
    return payloads, tally


def saved(payloads):
    return [SavedResult(p["student"], p) for p in payloads]  # feedback links from the ids


@pytest.fixture(scope="module")
def synthetic():
    payloads, tally = synthetic_class()
    return payloads, tally, class_data(saved(payloads))


# -- the data ----------------------------------------------------------------------------------
def test_each_notebook_counts_its_missing_and_untouched_files(synthetic):
    _, tally, data = synthetic
    for nb in data["notebooks"]:
        assert nb["not_submitted"] == tally["not_submitted"][nb["stem"]], nb["stem"]
        assert nb["not_started"] == tally["not_started"][nb["stem"]], nb["stem"]
    assert sum(tally["not_submitted"].values()) > 0 and sum(tally["not_started"].values()) > 0


def test_success_rates_are_per_function_and_per_test_under_real_names(synthetic):
    payloads, tally, data = synthetic
    graded = sum(1 for p in payloads if p["tests"])
    by_function = {f["function"]: f for f in data["functions"]}
    for function, count in tally["complete_function"].items():
        assert by_function[function]["complete"] == count
        assert by_function[function]["students"] == graded
    names = {t["name"] for t in data["tests"]}
    assert names == {name for _, _, name, _ in course_tests()}
    assert not any("N-D" in n or "=-N" in n for n in names)  # the old digit-blanking
    for t in data["tests"]:
        assert t["passed"] == tally["passed_test"][t["name"]], t["name"]


def test_misconceptions_name_their_students_and_the_section_that_teaches_them(synthetic):
    _, tally, data = synthetic
    (entry,) = [m for m in data["misconceptions"] if m["id"] == "missing-scale"]
    assert set(entry["students"]) == tally["misconception"]["missing-scale"]
    assert entry["count"] == len(tally["misconception"]["missing-scale"])
    assert entry["functions"] == ["scaled_scores"]
    assert entry["section"]["filename"] == "02_dot_product_softmax.ipynb"
    assert "scaled_scores" in entry["section"]["title"]


def test_students_to_help_first_include_every_run_problem_and_the_lowest(synthetic):
    payloads, tally, data = synthetic
    listed = {h["student"]: h for h in data["help_first"]}
    assert tally["troubled"] <= set(listed)
    assert listed[payloads[7]["student"]]["kinds"] == ["not-graded"]
    for student in tally["troubled"] - {payloads[7]["student"]}:
        said = "; ".join(listed[student]["reasons"])
        assert re.search(r"timed out in \d\d|notebooks? \d\d(, \d\d)* crashed", said), said
    lowest = min((p for p in payloads if p["tests"]), key=lambda p: p["score"])
    assert lowest["student"] in listed
    # every notebook missing (each handed in by most of the class) or untouched is listed
    assert tally["gaps"] <= set(listed)
    for student in tally["gaps"] - tally["troubled"]:
        said = "; ".join(listed[student]["reasons"])
        assert re.search(r"\d\d missing|handed in untouched|submitted no notebook", said), said
    others = set(listed) - tally["troubled"] - tally["gaps"]
    assert len(others) <= 15  # the lowest totals, at most 15 (here, most also have a gap)
    assert all(listed[s]["kinds"] == ["lowest"] for s in others)
    kinds = [h["kinds"][0] for h in data["help_first"]]
    assert kinds == sorted(kinds, key=HELP_ORDER.index)


def test_integrity_flags_are_the_known_facts_worded_for_a_human(synthetic):
    _, tally, data = synthetic
    flagged = {f["student"]: f for f in data["flags"]}
    assert set(flagged) == tally["flagged"]
    for f in flagged.values():
        assert {x["fact"] for x in f["flags"]} == {"comparison-patched"}  # unknown token dropped
        assert all(x["what"] == INTEGRITY_FACTS[x["fact"]] for x in f["flags"])
    assert "look at the notebook before drawing any conclusion" in data["flag_note"]


def test_an_import_error_naming_the_model_answers_is_flagged():
    payload = {
        "score": 0.0,
        "max_score": 1.0,
        "student": "s",
        "notebooks": {"03_matrix_attention": {"cell_errors": [
            {"cell": 3, "type": "ModuleNotFoundError",
             "message": "No module named 'autograder.course.model_answers'", "line": "import x"}]}},
        "tests": [{"name": "causal_mask: n = 5", "score": 0.0, "max_score": 1.0,
                   "status": "failed", "output": "wrong", "notebook": "03_matrix_attention",
                   "function": "causal_mask", "misconceptions": []}],
    }  # fmt: skip
    honest = json.loads(json.dumps(payload))
    honest["notebooks"]["03_matrix_attention"]["cell_errors"][0]["message"] = "No module named 'x'"
    data = class_data([SavedResult("s", payload), SavedResult("h", honest)])
    assert [f["student"] for f in data["flags"]] == ["s"]
    assert data["flags"][0]["flags"][0]["fact"] == "answers-looked-up"


def test_what_gather_saw_is_flagged_in_its_own_words():
    """classroom gather's flags (results.json's handed_in_flags, by grade --handed-in) reach
    the integrity section as the grader's own sentence; an unknown token or a student-made
    sentence never does."""
    from autograder.deadlines import GATHER_FLAGS

    payload = {"score": 1.0, "max_score": 1.0, "student": "s", "notebooks": {}, "tests": [],
               "handed_in_flags": [{"flag": "backdated", "what": "<script>x</script>"},
                                   {"flag": "made-up", "what": "anything"}, "not a dict"]}  # fmt: skip
    plain = {**payload, "student": "p"}
    plain.pop("handed_in_flags")
    data = class_data([SavedResult("s", payload), SavedResult("p", plain)])
    assert [f["student"] for f in data["flags"]] == ["s"]
    assert data["flags"][0]["flags"] == [
        {"notebook": "the repository", "fact": "backdated", "what": GATHER_FLAGS["backdated"]}
    ]


def test_links_to_feedback_pages_stay_one_path_segment(synthetic):
    _, _, data = synthetic
    for href in (h["href"] for h in data["all_students"]):
        assert href.endswith("/feedback.html") and href.count("/") == 1, href
        assert ":" not in href and "<" not in href and " " not in href, href


# -- in the browser ----------------------------------------------------------------------------
PROBE = """<script>
(function () {
  // a reader opens every folded list (the students of a misconception, every student)
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var report = {title: document.title, text: document.body.innerText,
                pageWidth: document.documentElement.scrollWidth, window: window.innerWidth,
                wide: [], images: document.querySelectorAll("img").length, sorted: {}};
  document.querySelectorAll("table").forEach(function (t, i) {
    if (!t.closest(".wrap") && t.getBoundingClientRect().right > window.innerWidth + 1) {
      report.wide.push(i);
    }
  });
  function column(table, c) {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
      return r.children[c].textContent.trim(); });
  }
  var byId = document.querySelector("#functions ~ table");
  if (byId) {
    byId.querySelectorAll("th")[2].click();
    report.sorted.rateAsc = column(byId, 2);
    byId.querySelectorAll("th")[0].click();
    report.sorted.nameAsc = column(byId, 0);
  }
  var pre = document.createElement("pre"); pre.id = "probe-report";
  pre.textContent = JSON.stringify(report); document.body.appendChild(pre);
})();
</script>"""


class _Report(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside, self.data = False, []

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "pre" and ("id", "probe-report") in attrs

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.data.append(data)


def open_page(html, tmp_path, name, width=1280):
    probe = tmp_path / f"{name}.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_chromium([f"--window-size={width},900", "--dump-dom", probe.as_uri()], tmp_path)
    parser = _Report()
    parser.feed(dom)
    return json.loads("".join(parser.data)), dom


def rate_key(text):
    return float(text.split("%")[0])


def check_readable(report):
    assert report["pageWidth"] <= report["window"], "the page scrolls sideways"
    assert report["wide"] == [], "a table is wider than the window"
    assert report["title"] != "pwned" and report["images"] == 0
    rates = [rate_key(t) for t in report["sorted"]["rateAsc"]]
    assert rates == sorted(rates) and len(set(rates)) > 1
    names = report["sorted"]["nameAsc"]
    assert names == sorted(names, key=str.lower)


@pytest.mark.slow  # renders in a real browser
@pytest.mark.parametrize("width", [1280, 800])
def test_a_class_of_250_renders_readably_with_hostile_ids_as_text(synthetic, tmp_path, width):
    payloads, tally, data = synthetic
    html = render_class_page(data)
    assert "http://" not in html and "https://" not in html and "<link" not in html
    report, dom = open_page(html, tmp_path, "synthetic", width)
    check_readable(report)
    text = report["text"]
    for hostile in HOSTILE[:4]:
        assert hostile in text, hostile  # shown as the text it is
    assert LONG_ID in text.replace("\n", "")
    for nb in data["notebooks"]:
        assert nb["stem"] in text
    assert "Integrity flags, for a human to check" in text
    assert text.count(": the grader saw ") == sum(len(f["flags"]) for f in data["flags"])


@pytest.mark.slow
def test_the_example_class_page_after_grading(tmp_path):
    out = tmp_path / "grades"
    env = dict(os.environ, COURSE_SECRET="test-class-page")
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(REPO / "examples" / "class"),
         "--out", str(out), "--quiet", "--workers", "2", "--timeout", "120"],
        capture_output=True, text=True, env=env, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((out / "class.json").read_text())
    report, _ = open_page((out / "class.html").read_text(), tmp_path, "example")
    check_readable(report)
    text = report["text"]
    by_stem = {nb["stem"]: nb for nb in data["notebooks"]}
    assert by_stem["05_transformer_block"]["not_submitted"] == 1  # `late` did not hand in 05
    assert all(nb["not_started"] == 1 for nb in data["notebooks"])  # `blank`
    ids = {m["id"]: m["students"] for m in data["misconceptions"]}
    assert ids["mask-after-softmax"] == ["mask_after_softmax"]
    assert ids["missing-scale"] == ["no_scale"]
    assert ids["heads-reshape-without-transpose"] == ["heads_reshape"]
    assert ids["layernorm-unbiased-variance"] == ["unbiased_ln"]
    (flag,) = data["flags"]  # the cheater, and no honest student
    assert flag["student"] == "cheater"
    assert {x["fact"] for x in flag["flags"]} == {"answers-looked-up", "comparison-patched"}
    assert {x["notebook"] for x in flag["flags"]} == {"03_matrix_attention"}
    # `late` did not hand in 05, which 06 and 07 use; `blank` handed in every notebook untouched
    assert [h["student"] for h in data["help_first"][:2]] == ["late", "blank"]
    assert data["help_first"][0]["reasons"][0].startswith("05 missing (06")
    assert data["help_first"][1]["kinds"][0] == "untouched"
    assert "cheater" in text and "Students to help first" in text
    # the summary and the page group by the real test names
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["tests"]) == {t["name"] for t in data["tests"]}


def test_write_class_writes_the_page_and_its_data(tmp_path):
    payloads, _ = synthetic_class(n=12, seed=3)
    for i, p in enumerate(payloads):
        (tmp_path / f"s{i}").mkdir()
        (tmp_path / f"s{i}" / "results.json").write_text(json.dumps(p))
    write_class(tmp_path)
    data = json.loads((tmp_path / "class.json").read_text())
    assert data["students"] == 12
    page = (tmp_path / "class.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "class.json" in page
    assert {r["href"] for r in data["all_students"]} == {f"s{i}/feedback.html" for i in range(12)}


# -- students to help first: in the order the page says ------------------------------------------
def stand_in(student, reasons=None, notebooks=None, score_of=None, extra=None):
    """A payload whose every notebook's tests carry one reason: `reasons` {stem: reason}
    (default passed), with `notebooks` {stem: info} merged into the notebooks' info."""
    reasons, notebooks = reasons or {}, notebooks or {}
    tests, infos = [], {}
    for stem, function, name, points in course_tests():
        reason = reasons.get(stem, "passed")
        passed = reason == "passed"
        score = points if passed else (score_of or {}).get(stem, 0.0)
        test = {"name": name, "score": score, "max_score": points,
                "status": "passed" if passed else "failed", "output": "stand-in",
                "notebook": stem, "function": function, "misconceptions": [], "reason": reason}  # fmt: skip
        if reason == "dependency-missing":
            test["depends_on"] = "02_dot_product_softmax"
        tests.append(test)
    for nb in NOTEBOOKS:
        missing = reasons.get(nb.stem) in ("missing-notebook", "misnamed")
        infos[nb.stem] = {"ran": not missing, "submitted": not missing, "messages": [],
                          "cell_errors": [], **notebooks.get(nb.stem, {})}  # fmt: skip
    payload = {"score": sum(t["score"] for t in tests),
               "max_score": sum(t["max_score"] for t in tests), "student": student,
               "notebooks": infos, "tests": tests, **(extra or {})}  # fmt: skip
    return payload


def test_help_first_is_ordered_as_it_says_and_names_each_trouble():
    died = [{"cell": 3, "type": "KernelDied", "message": "died", "line": "x"}]
    candidates = ["02_dot_product_softmax (1).ipynb", "02_dot_product_softmax (2).ipynb"]
    slow = {"06_autoregressive_lm": "timeout"}
    payloads = [
        *(stand_in(f"fine{i}") for i in range(20)),
        stand_in("crash", notebooks={"03_matrix_attention": {"cell_errors": died}}),
        stand_in("slow", slow),
        stand_in(
            "no02",
            {
                "02_dot_product_softmax": "missing-notebook",
                "03_matrix_attention": "dependency-missing",
                "04_multihead_attention": "dependency-missing",
            },
        ),  # fmt: skip
        stand_in(
            "dup",
            {"02_dot_product_softmax": "misnamed"},
            notebooks={"02_dot_product_softmax": {"candidates": candidates}},
        ),  # fmt: skip
        stand_in(
            "typo",
            {"02_dot_product_softmax": "misnamed"},
            notebooks={"02_dot_product_softmax": {"candidates": ["02_softmx.ipynb"]}},
        ),  # fmt: skip
        stand_in("broken", {"04_multihead_attention": "corrupt"}),
        stand_in("stub", {"05_transformer_block": "not-implemented"}),
        stand_in("low", {s: "failed" for s in ("01_soft_lookup", "06_autoregressive_lm")}),
        {
            "score": 0.0,
            "max_score": 0.0,
            "student": "lost",
            "internal_error": True,
            "output": "NOT GRADED",
            "notebooks": {},
            "tests": [],
        },  # fmt: skip
    ]
    # the low scorer and the troubled students score below the fine ones
    data = class_data(saved(payloads))
    order = [h["student"] for h in data["help_first"]]
    kinds = [h["kinds"][0] for h in data["help_first"]]
    assert kinds == sorted(kinds, key=HELP_ORDER.index), kinds
    assert order[0] == "lost" and order[1] == "crash" and order[2] == "slow"
    assert set(order[3:7]) == {"no02", "dup", "typo", "broken"}
    assert order[7] == "stub" and "low" in order[8:]
    assert not any(s.startswith("fine") for s in order[:9])
    said = {h["student"]: h["reasons"] for h in data["help_first"]}
    assert said["lost"][0].startswith("NOT GRADED")
    assert said["crash"][0] == "notebook 03 crashed"
    assert said["slow"][0] == "timed out in 06"
    assert said["no02"][0] == "02 missing (03, 04 use it)"
    assert said["typo"][0] == "02 misnamed as '02_softmx.ipynb'"
    assert said["dup"][0].startswith("02 misnamed: 2 files could each be it")
    assert said["broken"][0] == "04 is not a readable notebook"
    assert said["stub"][0] == "05 handed in untouched"
    states = {r["student"]: r["states"] for r in data["all_students"]}
    assert states["dup"]["02_dot_product_softmax"] == "misnamed"
    assert states["broken"]["04_multihead_attention"] == "unreadable"


def test_a_notebook_most_of_the_class_did_not_hand_in_is_not_a_reason_to_help():
    """Notebook 07 not yet assigned: missing for all but one, which singles out nobody."""
    payloads = [stand_in(f"s{i}", {"07_modern_lm": "missing-notebook"}) for i in range(30)]
    payloads += [stand_in("early"), stand_in("no05", {"05_transformer_block": "missing-notebook",
                                                      "07_modern_lm": "missing-notebook"})]  # fmt: skip
    said = {h["student"]: h["reasons"] for h in class_data(saved(payloads))["help_first"]}
    assert said["no05"][0] == "05 missing"
    assert not any("07" in r for reasons in said.values() for r in reasons)


# -- lateness, sections and the help list as a CSV -----------------------------------------------
def test_lateness_sections_and_the_help_list_as_a_csv(tmp_path):
    """The class page said nothing about lateness (20 late students, up to 59 points taken) nor
    per section, though the roster had sections; the help list could not be downloaded."""
    import csv
    from datetime import UTC, datetime, timedelta

    from autograder.deadlines import apply_late_policy, parse_policy
    from autograder.roster import read_roster

    due = datetime(2026, 12, 18, 23, 0, tzinfo=UTC)
    policy = parse_policy({
        "due": {"all": due.isoformat()},
        "penalty": {"method": "per-period", "points": 2, "period_hours": 24},
        "extensions": {"eve": 48},
    })  # fmt: skip
    first = NOTEBOOKS[0].stem
    late_by = {  # student -> hours late for notebook 01 (every other notebook on time)
        "ann": 25,  # two started periods: 4 points
        "bob": 1,  # one: 2 points
        "eve": 30,  # within her 48 h extension: on time, extension used
    }
    payloads = [stand_in(f"fine{i}") for i in range(6)]
    payloads += [stand_in(s) for s in late_by]
    payloads.append(stand_in("low", {first: "failed"}))
    for p in payloads:
        times = {nb.stem: due - timedelta(hours=1) for nb in NOTEBOOKS}
        if p["student"] in late_by:
            times[first] = due + timedelta(hours=late_by[p["student"]])
        apply_late_policy(p, policy, times)
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "submission,section\n"
        + "".join(f"fine{i},{'A' if i < 3 else 'B'}\n" for i in range(6))
        + "ann,A\nbob,B\neve,B\nlow,A\n"
    )
    data = class_data(saved(payloads), roster=read_roster(roster))

    lateness = data["lateness"]
    assert [(s["student"], s["penalty"], s["extended"]) for s in lateness["students"]] == [
        ("ann", 4.0, []), ("bob", 2.0, []), ("eve", 0.0, [nb.stem for nb in NOTEBOOKS])
    ]  # fmt: skip
    assert (lateness["late"], lateness["points_taken"], lateness["extended"]) == (2, 6.0, 1)
    ann = lateness["students"][0]["notebooks"]
    assert [(n["notebook"], n["seconds_late"]) for n in ann] == [(first, 25 * 3600.0)]
    assert ann[0]["late"] == "handed in 1 d 1 h late: 4 point(s) off"

    full = payloads[0]["max_score"]
    by_section = {s["section"]: s for s in data["sections"]}
    assert sorted(by_section) == ["A", "B"]
    # A: fine0-2 (full), ann (full - 4), low (full - notebook 01's points)
    nb01 = sum(points for stem, _, _, points in course_tests() if stem == first)
    a_totals = [full] * 3 + [full - 4, full - nb01]
    assert by_section["A"]["students"] == 5
    assert by_section["A"]["mean_total"] == pytest.approx(sum(a_totals) / 5, abs=1e-3)
    assert by_section["B"]["mean_total"] == pytest.approx(
        (5 * full - 2) / 5, abs=1e-3
    )  # fine3-5, bob, eve
    assert (by_section["A"]["late"], by_section["B"]["late"]) == (1, 1)
    helped = {s: [h["student"] for h in by_section[s]["help_first"]] for s in by_section}
    everyone = [h["student"] for h in data["help_first"]]
    assert sorted(helped["A"] + helped["B"]) == sorted(everyone) and "low" in helped["A"]

    # the page shows both blocks; write_class writes the help list as a CSV the page links to
    page = render_class_page(data)
    assert 'id="lateness"' in page and 'id="sections"' in page
    assert 'href="help_first.csv"' in page
    out = tmp_path / "out"
    for p in payloads:
        (out / p["student"]).mkdir(parents=True)
        (out / p["student"] / "results.json").write_text(json.dumps(p))
    write_class(out, roster=read_roster(roster))
    rows = list(csv.DictReader((out / "help_first.csv").open(encoding="utf-8")))
    assert [r["student"] for r in rows] == everyone
    assert {r["student"]: r["section"] for r in rows} == {h: s for s in helped for h in helped[s]}
    low = next(r for r in rows if r["student"] == "low")
    assert float(low["total"]) == pytest.approx(full - nb01) and low["why"]


def test_without_sections_or_lateness_the_page_says_so_plainly():
    data = class_data(saved([stand_in("ann"), stand_in("bob")]))
    assert data["sections"] == [] and data["lateness"]["students"] == []
    page = render_class_page(data)
    assert 'id="sections"' not in page and "Nobody handed in late" in page
