"""The feedback page as a student sees it: rendered by a real headless Chromium.

Four students: a blank one (every notebook untouched), one with failures in several notebooks
(a misconception shown in two functions, a missing notebook, a cell that raised, a message with
HTML in it), one with full marks (all three built here as results dicts), and one graded for real
by the grader (notebook 01 with an unstable `percentages`). Each page is opened in Chromium
(`--dump-dom`, with a line of script added to a copy of the page that records
`document.body.innerText`, i.e. the text a reader sees: folded <details> excluded), and one is
screenshotted. The checks: the scores, every failing message, the "fix these first" list with
its links to the notebooks' sections, one line per untouched notebook, each misconception's hint
once, passing tests folded away, no line of the model answers (autograder/reference/), no
external asset, and the student's text escaped.

Chromium is Debian's `chromium` (`apt-get install chromium`; `.ci/run` installs it). Without it
this file fails, saying so, unless FEEDBACK_BROWSER_OPTIONAL=1 is set (then it is skipped: never
in CI).
"""

import ast
import html
import importlib
import inspect
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from headless_chromium import run_chromium

from autograder.__main__ import main
from autograder.course.misconceptions import CATALOGUE
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.judging.dependencies import Unavailable, dependency_message
from autograder.report import render_feedback
from autograder.report.sections import teaching_sections
from autograder.results import (
    DEPENDENCY_MISSING,
    FAILED,
    MISSING_NOTEBOOK,
    NOT_IMPLEMENTED,
    PASSED,
)

pytestmark = pytest.mark.slow  # a real headless Chromium, and one student graded in the sandbox (`pytest -m "not slow"` skips it)

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "autograder" / "reference"
RECORD_VISIBLE_TEXT = (
    "<script>const p = document.createElement('pre'); p.id = 'visible-text';"
    "p.textContent = document.body.innerText; document.body.appendChild(p);</script>"
)


class _Text(HTMLParser):
    """The visible-text <pre> and every link of a serialised DOM."""

    def __init__(self):
        super().__init__()
        self.visible, self.links, self._in_pre = [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "pre" and attrs.get("id") == "visible-text":
            self._in_pre = True
        if tag == "a":
            self.links.append(attrs.get("href", ""))

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data):
        if self._in_pre:
            self.visible.append(data)


class Page:
    def __init__(self, source, dom):
        self.source, self.dom = source, dom
        parser = _Text()
        parser.feed(dom)
        self.text = "".join(parser.visible)
        self.links = parser.links
        assert self.text.strip(), "Chromium rendered no text"

    def shows(self, words):
        return " ".join(words.split()) in " ".join(self.text.split())


def open_in_chromium(payload, tmp_path, name):
    source = render_feedback(payload)
    page = tmp_path / f"{name}.html"
    page.write_text(source, encoding="utf-8")
    probe = tmp_path / f"{name}.probe.html"
    probe.write_text(source.replace("</body>", RECORD_VISIBLE_TEXT + "</body>"), encoding="utf-8")
    dom = run_chromium(["--dump-dom", probe.as_uri()], tmp_path)
    return Page(source, dom)


# -- students built as results dicts --------------------------------------------------------------
def test_entry(stem, function, name, points, output="", ids=(), reason=None, depends_on=None):
    """A results.json test; its reason as the judge sets it (passed or failed by default)."""
    extra = {"depends_on": depends_on} if depends_on else {}
    return {
        **extra,
        "name": f"{function}: {name}",
        "score": 0.0 if output else points,
        "max_score": points,
        "status": "failed" if output else "passed",
        "output": output,
        "notebook": stem,
        "function": function,
        "misconceptions": list(ids),
        "reason": reason or (FAILED if output else PASSED),
    }


test_entry.__test__ = False  # a helper, not a test


def payload_of(student, tests, notebooks=None):
    infos = {}
    for nb in NOTEBOOKS:
        mine = [t for t in tests if t["notebook"] == nb.stem]
        info = {"ran": True, "executed_ok": True, "cell_errors": [], "messages": []}
        info.update((notebooks or {}).get(nb.stem, {}))
        info["score"] = sum(t["score"] for t in mine)
        info["max_score"] = sum(t["max_score"] for t in mine)
        infos[nb.stem] = info
    return {
        "score": sum(t["score"] for t in tests),
        "max_score": sum(t["max_score"] for t in tests),
        "output": "",
        "execution_time": 12.5,
        "student": student,
        "notebooks": infos,
        "tests": tests,
    }


def all_tests(failing=None):
    """Three tests per graded name, of 1 point; `failing[(function, i)] = (output, ids)`."""
    failing = failing or {}
    tests = []
    for nb in NOTEBOOKS:
        for function in nb.graded:
            for i, case in enumerate(("small inputs", "a batch", "leaves its inputs unmodified")):
                output, ids, *reason = failing.get((function, i), ("", ()))
                tests.append(test_entry(nb.stem, function, case, 1.0, output, ids, *reason))
    return tests


def not_implemented(function):
    return (
        f"{function} is not implemented yet (it raises NotImplementedError).",
        (),
        NOT_IMPLEMENTED,
    )


def blank_student():
    failing = {(f, i): not_implemented(f) for nb in NOTEBOOKS for f in nb.graded for i in range(3)}
    return payload_of("blank", all_tests(failing))


def explained(id_, lead="It looks like"):
    m = CATALOGUE[id_]
    return f" {lead} {m.mistake}: {m.hint}"


UNSTABLE = "softmax(x (3,)) returned nan at [0], [1] for scores of magnitude 1e4."
RESHAPE_SPLIT = (
    "split_heads(X (5, 12), n_heads=3): 48 of 60 entries differ from the expected values."
)
RESHAPE_MERGE = "merge_heads(X (3, 5, 4)): 48 of 60 entries differ from the expected values."
# GPT's tests waited for notebook 05, which is missing: the grader's own words (dependency-missing)
GPT_ERROR = dependency_message(
    "GPT", "TransformerBlock", Unavailable("05_transformer_block", MISSING_NOTEBOOK)
)
MISSING_05 = "05_transformer_block.ipynb was not found in your submission, so its tests score 0."
HOSTILE = "<script>alert('x')</script> & <b>bold</b>"


def struggling_student():
    failing = {
        ("softmax", 1): (UNSTABLE + explained("softmax-unstable"), ("softmax-unstable",)),
        ("split_heads", 0): (
            RESHAPE_SPLIT + explained("heads-reshape-without-transpose"),
            ("heads-reshape-without-transpose",),
        ),
        ("merge_heads", 2): (
            RESHAPE_MERGE
            + explained("heads-reshape-without-transpose", "This is what happens with"),
            ("heads-reshape-without-transpose",),
        ),
        ("GPT", 0): (GPT_ERROR, (), DEPENDENCY_MISSING, "05_transformer_block"),
        ("GPT", 1): (GPT_ERROR, (), DEPENDENCY_MISSING, "05_transformer_block"),
        ("generate", 2): (f"generate returned the string {HOSTILE!r}", ()),
    }
    for f in BY_STEM["03_matrix_attention"].graded:
        for i in range(3):
            failing[(f, i)] = not_implemented(f)
    for f in BY_STEM["05_transformer_block"].graded:
        for i in range(3):
            failing[(f, i)] = (MISSING_05, (), MISSING_NOTEBOOK)
    notebooks = {
        "05_transformer_block": {"ran": False, "messages": [MISSING_05]},
        "06_autoregressive_lm": {
            "cell_errors": [
                {
                    "cell": 6,
                    "line": "print(tok.encode('é'))",
                    "type": "ValueError",
                    "message": HOSTILE,
                }
            ]  # fmt: skip
        },
    }
    return payload_of("struggling", all_tests(failing), notebooks)


def full_marks_student():
    return payload_of("ada", all_tests())


# -- what must never be on the page ---------------------------------------------------------------
def reference_lines():
    """The code lines of the model answers' bodies (docstrings and short lines left out)."""
    lines = set()
    for path in sorted(REFERENCE.glob("*.py")) + sorted(
        REFERENCE.parent.glob("course/*/reference.py")
    ):
        tree = ast.parse(path.read_text())
        text = path.read_text().splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            for stmt in body:
                for line in text[stmt.lineno - 1 : stmt.end_lineno]:
                    line = line.split("  #")[0].strip()
                    if len(line) >= 16 and not line.startswith(("#", '"', "'", "raise ")):
                        lines.add(line)
    assert len(lines) > 50, "the reference bodies were not found"
    return lines


def assert_no_reference_code(page):
    leaked = [line for line in reference_lines() if line in page.text or line in page.source]
    assert not leaked, f"reference code on the feedback page: {leaked[:5]}"


def assert_self_contained(page):
    assert not re.search(r"<(link|img|iframe)\b", page.source), "an external asset"
    assert "<script" not in page.source, "the page carries script"
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.source), "a remote URL"


# -- the pages ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tmp_module(tmp_path_factory):
    return tmp_path_factory.mktemp("feedback")


def test_a_blank_student_reads_one_line_per_notebook(tmp_module):
    payload = blank_student()
    page = open_in_chromium(payload, tmp_module, "blank")
    assert payload["max_score"] == 3 * sum(len(nb.graded) for nb in NOTEBOOKS)
    assert page.shows(f"Total: 0 / {payload['max_score']:g}")
    for nb in NOTEBOOKS:
        points = 3 * len(nb.graded)
        assert page.shows(f"not started: 0 / {points}"), nb.stem
    assert "not implemented yet" not in page.text, "the untouched notebooks are listed test by test"
    assert "without errors" not in page.text
    assert page.shows("Fix these first")
    first = teaching_sections()["lookup"]
    assert page.shows(f"start with 01_soft_lookup.ipynb at “{first.title}”")
    assert first.href in page.links
    assert_self_contained(page)
    assert_no_reference_code(page)


def test_a_struggling_student_sees_scores_failures_and_what_to_fix_first(tmp_module):
    payload = struggling_student()
    page = open_in_chromium(payload, tmp_module, "struggling")
    assert page.shows(f"Total: {payload['score']:g} / {payload['max_score']:g}")
    scores = {nb: f"{i['score']:g} / {i['max_score']:g}" for nb, i in payload["notebooks"].items()}
    for stem, score in scores.items():
        assert page.shows(f"{stem} {score}"), f"the summary row of {stem}: {score}"

    # "fix these first": the first failing function of each notebook begun, one hint, a link
    fix = page.text.split("Fix these first", 1)[1].split("Details", 1)[0]
    items = [line for line in fix.splitlines() if line.strip()]
    sections = teaching_sections()
    expected = [
        ("02_dot_product_softmax", "softmax", CATALOGUE["softmax-unstable"].hint),
        (
            "04_multihead_attention",
            "split_heads",
            CATALOGUE["heads-reshape-without-transpose"].hint,
        ),
        # the cause is the missing notebook 05, and fix-first says so
        ("06_autoregressive_lm", "GPT", "Your notebook 05 (05_transformer_block.ipynb) is missing"),
    ]
    joined = " ".join(" ".join(items).split())
    positions = []
    for stem, function, hint in expected:
        entry = f"{stem}, {function}:"
        assert entry in joined, f"fix these first lacks {entry}: {joined!r}"
        assert hint in joined
        assert sections[function].href in page.links
        assert sections[function].title in joined
        positions.append(joined.index(entry))
    assert positions == sorted(positions)
    for untouched in ("01_soft_lookup", "03_matrix_attention", "05_transformer_block"):
        assert f"{untouched}," not in joined, f"{untouched} has nothing to fix first"
    assert page.shows("Then start 03_matrix_attention.ipynb")

    # every failing message, each hint once, nothing duplicated
    for message in (UNSTABLE, RESHAPE_SPLIT, RESHAPE_MERGE, GPT_ERROR, MISSING_05):
        assert page.shows(message), message
    assert page.text.count(GPT_ERROR) == 2, "two tests, one message: once in fix-first, once below"
    assert page.shows("waits for your 05_transformer_block.ipynb"), "06's summary row names 05"
    for id_ in ("softmax-unstable", "heads-reshape-without-transpose"):
        hint = CATALOGUE[id_].hint
        assert page.text.count(hint) == 2, f"{id_}: its hint once in fix-first, once in its box"
    assert page.text.count(MISSING_05) == 2, "a missing notebook: one line, plus its summary row"
    assert page.shows("not started: 0 / 12"), "notebook 03 untouched: one line"

    # passing tests are folded away: in the page, not in what a reader sees
    assert "✓ small inputs" in html.unescape(page.dom)
    assert "✓ small inputs" not in page.text
    assert page.shows("all 3 tests pass")

    # the student's own text is escaped, and the page stands alone
    assert HOSTILE in page.text
    assert "<script>alert" not in page.source
    assert_self_contained(page)
    assert_no_reference_code(page)


def test_a_full_marks_student_has_nothing_to_fix(tmp_module):
    payload = full_marks_student()
    page = open_in_chromium(payload, tmp_module, "full")
    assert page.shows(f"Total: {payload['max_score']:g} / {payload['max_score']:g}")
    assert page.shows("Nothing: every test passes.")
    assert page.text.count("all tests pass") == len(NOTEBOOKS)
    assert "✗" not in page.text and "Likely mistake" not in page.text
    assert_no_reference_code(page)


def test_the_page_screenshots_at_a_readable_size(tmp_module):
    page = tmp_module / "struggling.html"
    if not page.exists():
        page.write_text(render_feedback(struggling_student()), encoding="utf-8")
    shot = Path(os.environ.get("FEEDBACK_SCREENSHOT_DIR", tmp_module)) / "struggling.png"
    run_chromium(["--window-size=1100,1800", f"--screenshot={shot}", page.as_uri()], tmp_module)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1100, 1800)


# -- a student graded for real --------------------------------------------------------------------
def test_a_graded_student_page_shows_the_judges_messages_and_no_model_answer(tmp_module):
    reference = importlib.import_module("autograder.course.n01_soft_lookup.reference")
    cells = ["import numpy as np"]
    cells += [inspect.getsource(getattr(reference, f)) for f in ("lookup", "similarity")]
    cells += [
        "def percentages(scores):\n    e = np.exp(scores)\n    return e / e.sum()",
        "1 / 0",
        "def soft_lookup(query, keys, values):\n    raise NotImplementedError()",
    ]
    folder = tmp_module / "class" / "graded"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / "01_soft_lookup.ipynb")
    out = tmp_module / "out"
    status = main(["grade", str(folder), "--out", str(out), "--workers", "1", "--quiet",
                   "--timeout", "60", "--secret", "browser-test"])  # fmt: skip
    assert status == 0
    payload = json.loads((out / "graded" / "results.json").read_text())
    page = open_in_chromium(payload, tmp_module, "graded")
    ours = [t for t in payload["tests"] if t["notebook"] == "01_soft_lookup"]
    failed = [t for t in ours if t["status"] == "failed"]
    assert {t["function"] for t in failed} == {"percentages", "soft_lookup"}
    assert page.shows(f"Total: {payload['score']:g} / {payload['max_score']:g}")
    assert page.shows("ZeroDivisionError")
    fix = page.text.split("Fix these first", 1)[1].split("Details", 1)[0]
    assert "01_soft_lookup, percentages:" in " ".join(fix.split())
    for t in failed:
        if t["function"] == "percentages" and t["misconceptions"]:
            body = t["output"].split(" It looks like ")[0].split(" This is what")[0]
            assert page.shows(body), body
    assert page.shows("soft_lookup") and page.shows("Not implemented yet")
    assert_no_reference_code(page)
    for nb in NOTEBOOKS[1:]:
        line = f"{nb.filename} was not found in your submission"
        assert page.text.count(line) == 2, f"{nb.stem}: its summary row and its one line"


# -- the links of "fix these first" ---------------------------------------------------------------
def test_every_graded_name_links_to_a_heading_that_jupyter_renders():
    """Each link's anchor is an id nbconvert gives a heading of the student's notebook (the
    notebook's markdown cells exported to HTML: nbconvert is the oracle), above its exercise."""
    from nbconvert import HTMLExporter

    sections = teaching_sections()
    for nb in NOTEBOOKS:
        released = nbformat.read(REPO / "notebooks" / nb.filename, as_version=4)
        markdown = nbformat.v4.new_notebook(
            cells=[c for c in released.cells if c.cell_type == "markdown"]
        )
        body, _ = HTMLExporter().from_notebook_node(markdown)
        ids = set(re.findall(r'<h[1-6] id="([^"]+)"', body))
        for name in nb.graded:
            assert name in sections, f"no heading above the exercise cell of {name}"
            section = sections[name]
            assert section.filename == nb.filename
            assert section.anchor in ids, f"{name}: #{section.anchor} not among {sorted(ids)}"
