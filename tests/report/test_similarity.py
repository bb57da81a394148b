"""The similarity report (autograder/report/similarity.py, report/fingerprints.py): which
answers were shared, on a class whose copies are known (tests/report/similarity_class.py).

What is checked, against the class's own record of who copied (never the code's output):
copies disguised by renaming, reordering, comments, a print, a loop written as a comprehension
rank above every independent pair; right answers written another way (tests/catalogues/numpy_mutants.py's
hidden alternatives) and the common answer are not listed; stubs give nothing; a shared wrong
answer is shown as such; hostile code is text on the page (headless Chromium); similarity.csv's
first columns. The disguises are also checked one by one, on hand-written pairs.
"""

import ast
import csv
import io
import json

import pytest
import similarity_class as C
from headless_chromium import probe_report, run_chromium

from autograder.report import SavedResult, render_class_page, write_class
from autograder.report.class_page import class_data
from autograder.report.fingerprints import normalised_tokens, winnow
from autograder.report.own_code import Answer, class_answers
from autograder.report.similarity import (
    THRESHOLD,
    class_similarity,
    score_pairs,
    similarity_csv,
    similarity_view,
)


def tokens(source, helpers=()):
    return [t for t, _ in normalised_tokens(ast.parse(source).body[0], helpers=set(helpers))]


def _results(student):
    if student in ("wrong_1", "wrong_2"):
        return C.wrong_results(student)
    return {"student": student, "score": 1.0, "max_score": 1.0, "tests": [], "notebooks": {}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity-class")
    folders = C.write_class(root)
    students = [SavedResult(s, _results(s)) for s in folders]
    return folders, students, class_similarity(students, folders)


# -- the disguises, one at a time -------------------------------------------------------------
ORIGINAL = """def f(X, W, b):
    '''Project X.'''
    Y = X @ W
    Z = Y + b
    out = []
    for row in Z:
        if row.sum() > 0:
            out.append(row * 2.5)
    total = 0
    total += len(out)
    return np.array(out), total
"""


@pytest.mark.parametrize(
    "disguised",
    [
        # renamed, comments, docstring, a print, blank lines
        """def g(inp, weights, bias):
    # first the projection
    proj = inp @ weights

    shifted = proj + bias  # add the bias
    print(shifted.shape)
    res = []
    for r in shifted:
        if r.sum() > 0:
            res.append(r * 2.5)
    n = 0
    n += len(res)
    return np.array(res), n
""",
        # the loop as a comprehension, += written out
        """def f(X, W, b):
    Y = X @ W
    Z = Y + b
    out = [row * 2.5 for row in Z if row.sum() > 0]
    total = 0
    total = total + len(out)
    return np.array(out), total
""",
        # independent statements reordered (total's two lines moved before the loop)
        """def f(X, W, b):
    total = 0
    Y = X @ W
    Z = Y + b
    out = [row * 2.5 for row in Z if row.sum() > 0]
    total += len(out)
    return np.array(out), total
""",
    ],
    ids=["renamed-commented", "comprehension", "reordered"],
)
def test_a_disguise_gives_the_same_tokens(disguised):
    assert tokens(disguised) == tokens(ORIGINAL)


def test_statements_that_depend_on_each_other_keep_their_order():
    """Moving `a = a + 1` before `a = x` changes what the function computes: not one form."""
    first = "def f(x):\n    a = x\n    a = a + 1\n    b = 2\n    return a, b"
    swapped = "def f(x):\n    a = a + 1\n    a = x\n    b = 2\n    return a, b"
    moved = "def f(x):\n    b = 2\n    a = x\n    a = a + 1\n    return a, b"
    assert tokens(first) != tokens(swapped)
    assert tokens(first) == tokens(moved)


def test_a_bare_call_keeps_its_place():
    """`torch.manual_seed(0)` before or after a random draw is another program."""
    one = "def f():\n    torch.manual_seed(0)\n    w = torch.randn(3)\n    return w"
    two = "def f():\n    w = torch.randn(3)\n    torch.manual_seed(0)\n    return w"
    assert tokens(one) != tokens(two)


def test_what_the_student_did_not_choose_is_kept():
    """Library names, attributes and numbers are evidence: np.exp is not torch.exp, 2.5 is not
    3.0; the student's helpers read as one placeholder, whatever their names."""
    assert tokens("def f(x):\n    return np.exp(x)") != tokens("def f(x):\n    return torch.exp(x)")
    assert tokens("def f(x):\n    return x * 2.5") != tokens("def f(x):\n    return x * 3.0")
    assert tokens("def f(x):\n    return mine(x)", helpers={"mine"}) == tokens(
        "def f(x):\n    return other(x)", helpers={"other"}
    )


def test_winnowing_finds_every_long_shared_run():
    """A run of K + WINDOW - 1 tokens two definitions share gives them a fingerprint in common,
    whatever surrounds it."""
    shared = (
        "    y = np.einsum('ij,jk->ik', x, w) * 0.125 + np.tanh(x).sum(axis=-1, keepdims=True)\n"
    )
    a = "def f(x, w):\n    q = x + 1\n" + shared + "    return y - q\n"
    b = "def f(x, w):\n    k = len(x) * 7\n    z = k // 3\n" + shared + "    return y, z\n"
    pa = winnow(normalised_tokens(ast.parse(a).body[0]))
    pb = winnow(normalised_tokens(ast.parse(b).body[0]))
    common = set(pa) & set(pb)
    assert common
    assert all(pa[h] == {3} for h in common)  # the shared line, in a (line 3)


# -- the class ----------------------------------------------------------------------------------
def test_copies_rank_above_every_independent_pair(built):
    folders, _, _ = built
    copied, independent = [], []
    for name, answers in class_answers(folders).items():
        scores = score_pairs(answers)
        who = sorted(a.student for a in answers)
        for i, a in enumerate(who):
            for b in who[i + 1 :]:
                score = scores.get((a, b), (0.0, []))[0]
                which = copied if (a, b, name) in C.COPIED else independent
                which.append((score, a, b, name))
    assert len(copied) == len(C.COPIED)  # every copy was compared
    assert len(independent) > 100
    assert min(copied)[0] > max(independent)[0], (min(copied), max(independent))


def test_a_class_read_in_parallel_gives_the_same_answers(built, monkeypatch):
    """A large class is read by several processes: each student's answers are the same."""
    import autograder.report.own_code as own_code

    folders, _, _ = built
    alone = class_answers(folders, workers=1)
    monkeypatch.setattr(own_code, "PARALLEL_FROM", 5)
    shared = class_answers(folders, workers=3)
    assert shared == alone
    assert sum(len(found) for found in alone.values()) >= 30  # every answer of the class


def test_the_report_lists_the_copies_and_nothing_else(built):
    """Precision and recall on the test class: every copied pair listed, no other pair."""
    _, _, report = built
    listed = {(p["student_a"], p["student_b"], p["function"]) for p in report["pairs"]}
    assert listed == C.COPIED
    assert all(p["score"] >= THRESHOLD for p in report["pairs"])


def test_independent_right_answers_and_stubs_are_never_listed(built):
    folders, _, report = built
    named = {s for p in report["pairs"] for s in (p["student_a"], p["student_b"])}
    assert not named & {*C.ALTERNATIVES, *(s for s in folders if s.startswith("common_"))}
    answers = class_answers(folders)
    for stub in C.STUBS:  # handed in as released: nothing of their own to compare
        assert all(a.student != stub for found in answers.values() for a in found)


def test_a_class_of_stubs_and_of_one_common_answer_lists_nothing(tmp_path):
    """Shared stubs flag nothing; neither does the answer everyone wrote (more than a tenth of
    the class share every fingerprint of it)."""
    who = {f"s{i}": {} for i in range(4)}
    who.update({f"c{i}": {C.SDPA: C.COMMON_SDPA[0]} for i in range(6)})
    folders = C.write_class(tmp_path, who)
    students = [SavedResult(s, _results(s)) for s in folders]
    report = class_similarity(students, folders)
    assert report["pairs"] == []
    assert report["compared"][C.SDPA] == 6


def test_a_shared_wrong_answer_is_shown_as_strong_evidence(built):
    _, _, report = built
    (wrong,) = [p for p in report["pairs"] if p["student_a"] == "wrong_1"]
    assert wrong["evidence"] == "same-wrong-results"
    assert report["pairs"][0] is wrong  # listed first
    others = [p for p in report["pairs"] if p is not wrong]
    assert all(p["evidence"] == "" for p in others)


def test_the_same_mistake_needs_the_same_tests_and_misconception(tmp_path, monkeypatch):
    """With the score's own threshold out of reach, only the pairs wrong the same way are
    listed: the same failed tests and messages, or the same failed tests and misconception;
    not another misconception."""
    import autograder.report.similarity as similarity

    monkeypatch.setattr(similarity, "THRESHOLD", 1.01)
    monkeypatch.setattr(similarity, "COMMON_FLOOR", 10)  # four alike are not the common answer
    folders = C.write_class(tmp_path, {s: {C.SDPA: C.WRONG_SDPA} for s in "abcd"})
    same = class_similarity(
        [SavedResult("a", C.wrong_results("a")), SavedResult("b", C.wrong_results("b")),
         SavedResult("c", C.wrong_results("c", misconception="other-id")),
         SavedResult("d", C.wrong_results("d", output="row 0 sums to 0.5"))], folders
    )  # fmt: skip
    evidence = {(p["student_a"], p["student_b"]): p["evidence"] for p in same["pairs"]}
    assert evidence == {
        ("a", "b"): "same-wrong-results",
        ("a", "d"): "same-mistake",
        ("b", "d"): "same-mistake",
    }


def test_notebooks_that_cannot_be_read_give_nothing_and_no_error(tmp_path):
    folders = C.write_class(tmp_path, {"ok_1": {C.SDPA: C.ORIGINAL_SDPA},
                                       "ok_2": {C.SDPA: C.COPIED_SDPA}})  # fmt: skip
    broken = {
        "not_json": b"{ this is not json",
        "no_cells": b'{"nbformat": 4, "cells": 7}',
        "syntax": C.notebook({C.SDPA: "def scaled_dot_product_attention(Q, K, V, mask=None:\n"}),
        "deep": C.notebook({C.SDPA: "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                                    "    return " + "(" * 300 + "1" + ")" * 300}),
        "magic": C.notebook({C.SDPA: "%timeit 1\n!ls\n" + C.ORIGINAL_SDPA}),
    }  # fmt: skip
    for student, content in broken.items():
        folder = tmp_path / student
        folder.mkdir()
        data = content if isinstance(content, bytes) else content.encode()
        (folder / f"{C.STEM}.ipynb").write_bytes(data)
        folders[student] = folder
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / f"{C.STEM}.ipynb").symlink_to(folders["ok_1"] / f"{C.STEM}.ipynb")
    folders["link"] = tmp_path / "link"
    students = [SavedResult(s, _results(s)) for s in folders]
    report = class_similarity(students, folders)
    listed = {(p["student_a"], p["student_b"]) for p in report["pairs"]}
    # the magic lines are read as blank: that student's answer is the original
    assert listed == {("magic", "ok_1"), ("magic", "ok_2"), ("ok_1", "ok_2")}


def test_an_answer_follows_at_most_max_helpers_of_the_students_functions(tmp_path):
    from autograder.report.own_code import MAX_HELPERS

    helpers = "".join(f"def h{i}(x):\n    return x + {i}\n\n\n" for i in range(500))
    calls = "[" + ", ".join(f"h{i}(Q)" for i in range(500)) + "]"
    code = helpers + f"def causal_mask(n):\n    Q = n\n    return {calls}\n"
    folders = C.write_class(tmp_path, {"many": {C.MASK: code}})
    (found,) = class_answers(folders)[C.MASK]
    assert found.code.count("def ") == MAX_HELPERS + 1


def test_one_student_whose_files_break_the_reader_loses_only_their_answers(built, monkeypatch):
    import autograder.report.own_code as own_code

    folders, _, _ = built
    real = own_code.code_sources

    def breaks_for_one(folder, filename):
        if folder.name == "copy_a1":
            raise OSError("a file that changed while it was read")
        return real(folder, filename)

    monkeypatch.setattr(own_code, "code_sources", breaks_for_one)
    found = class_answers(folders, workers=1)
    assert "copy_a1" not in {a.student for a in found[C.SDPA]}
    assert "copy_a2" in {a.student for a in found[C.SDPA]}


def test_the_common_answer_forms_no_pair():
    """A fingerprint more than a tenth of the class shares pairs nobody: 200 identical answers
    form no pair at all (the cost stays with the rare fingerprints)."""
    answers = [Answer(f"s{i}", "x", {h: {1} for h in range(40)}, 200) for i in range(200)]
    answers += [Answer(f"t{i}", "x", {1000 + h: {1} for h in range(40)}, 200) for i in range(2)]
    assert set(score_pairs(answers)) == {("t0", "t1")}


# -- what is written ------------------------------------------------------------------------------
def test_similarity_csv_starts_with_the_columns_and_escapes_its_cells(built):
    _, _, report = built
    formula = dict(report["pairs"][0], student_a='=HYPERLINK("x")', student_b="b\u202e")
    text = similarity_csv({**report, "pairs": [formula, *report["pairs"][1:]]})
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:5] == ["student_a", "student_b", "notebook", "function", "score"]
    assert len(rows) == len(report["pairs"]) + 1
    assert rows[1][0] == '\'=HYPERLINK("x")' and rows[1][1] == "b\\u202e"
    assert {(r[0], r[1], r[2], r[3]) for r in rows[2:]} <= {
        (a, b, C.STEM, name) for a, b, name in C.COPIED
    }
    assert all(0 < float(r[4]) <= 1 for r in rows[1:])


def test_the_marked_lines_are_those_the_two_share(built):
    """Side by side, a line is marked when a shared fingerprint holds one of its tokens: the
    copied lines are, the print the copier added (dropped from the tokens) is not."""
    _, _, report = built
    view = similarity_view(report)
    (pair,) = [p for nb in view["notebooks"] for p in nb["pairs"] if "copy_a1" in p["students"]]
    copy = {line["text"].strip(): line["hit"] for line in pair["code"][1]}
    assert copy['print("debug", ex.shape)'] is False
    assert copy["ex = np.exp(logits)"] is True
    assert copy["return np.where(m, s, value)"] is True  # the copied helper, renamed


def test_three_students_linked_on_one_graded_name_are_a_group():
    from autograder.report.similarity import _clusters

    def pair(a, b, function):
        return {"student_a": a, "student_b": b, "function": function}

    pairs = [pair("a", "b", "f"), pair("b", "c", "f"), pair("d", "e", "f"), pair("c", "d", "g")]
    assert _clusters(pairs) == [{"function": "f", "students": ["a", "b", "c"]}]


def test_write_class_writes_similarity_csv_only_when_asked(built, tmp_path):
    folders, students, _ = built
    write_class(tmp_path / "on", students, folders=folders)
    write_class(tmp_path / "off", students)
    assert (tmp_path / "on" / "similarity.csv").read_text().count("\n") == len(C.COPIED) + 1
    assert not (tmp_path / "off" / "similarity.csv").exists()
    page = json.loads((tmp_path / "on" / "class.json").read_text())
    assert page["similarity"]["notebooks"][0]["stem"] == C.STEM
    assert "similarity" not in json.loads((tmp_path / "off" / "class.json").read_text())


@pytest.mark.parametrize("off", [False, True])
def test_a_class_run_compares_the_students_it_graded(tmp_path, monkeypatch, off):
    """`grade` (its grading stood in, tests/support/fixtures.py) writes similarity.csv from the
    folders it graded; --no-similarity writes none."""
    from argparse import Namespace

    from fixtures import stand_in_grading

    from autograder.config import config_from_args
    from autograder.grading import classrun

    stand_in_grading(monkeypatch, _results)
    monkeypatch.setenv("AUTOGRADER_WORK_DIR", str(tmp_path / "scratch"))
    C.write_class(tmp_path / "class")
    args = Namespace(path=str(tmp_path / "class"), out=str(tmp_path / "out"), secret="s",
                     timeout=10, workers=1, force=False, skip_selftest=True, no_similarity=off)  # fmt: skip
    classrun.grade_class(args.path, config_from_args(args), progress=False)
    found = tmp_path / "out" / "similarity.csv"
    assert found.exists() is not off
    if not off:
        rows = list(csv.reader(io.StringIO(found.read_text())))[1:]
        assert {(r[0], r[1], r[3]) for r in rows} == C.COPIED


def test_no_similarity_turns_it_off(monkeypatch):
    """`grade` and `nbgrader grade` compare by default; --no-similarity turns it off."""
    import autograder.grading.command as command
    import autograder.platforms.nbgrader as nbgrader
    from autograder.__main__ import main
    from autograder.config import config_from_args

    seen = []
    monkeypatch.setattr(command, "grade_command", lambda args: seen.append(args) or 0)
    monkeypatch.setattr(nbgrader, "run", lambda args: seen.append(args) or 0)
    for argv in (["grade", "x"], ["grade", "x", "--no-similarity"],
                 ["nbgrader", "grade", "course", "--no-similarity"]):  # fmt: skip
        assert main([*argv, "--secret", "s"]) == 0
    for args in seen:
        args.out = args.out or "grades"  # nbgrader grade sets its own OUT later
    assert [config_from_args(args).similarity for args in seen] == [True, False, False]


# -- the page, in a browser -----------------------------------------------------------------------
PROBE = """<script>
(function () {
  document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  var section = document.getElementById("similarity");
  var parts = [], node = section;
  while (node && (node = node.nextElementSibling) && node.tagName !== "H2") { parts.push(node); }
  var report = {title: document.title, images: document.querySelectorAll("img").length,
                pageWidth: document.documentElement.scrollWidth, window: window.innerWidth,
                scripts: document.querySelectorAll("script").length,
                heading: section ? section.textContent : "",
                text: parts.map(function (n) { return n.innerText; }).join("\\n"),
                marks: parts.reduce(function (n, p) { return n + p.querySelectorAll("mark").length; }, 0),
                pairs: parts.reduce(function (n, p) { return n + (p.classList.contains("sim-pair") ? 1 : 0); }, 0)};
  var pre = document.createElement("pre"); pre.id = "probe-report";
  pre.textContent = JSON.stringify(report); document.body.appendChild(pre);
})();
</script>"""


@pytest.mark.slow  # renders in a real browser
def test_the_class_page_shows_the_pairs_with_hostile_code_as_text(built, tmp_path):
    _, students, report = built
    data = class_data(students)
    data["similarity"] = similarity_view(report)
    html = render_class_page(data)
    assert html.count("<script>") == 1  # the page's own sorting script, nothing a student wrote
    probe = tmp_path / "class.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    narrow = run_chromium(["--window-size=800,900", "--dump-dom", probe.as_uri()], tmp_path)
    assert probe_report(narrow)["pageWidth"] <= 800, "the answers side by side scroll the page"
    dom = run_chromium(["--window-size=1280,900", "--dump-dom", probe.as_uri()], tmp_path)
    seen = probe_report(dom)
    assert seen["pageWidth"] <= seen["window"], "the answers side by side scroll the page"
    assert seen["title"] != "pwned" and seen["images"] == 0
    assert seen["scripts"] == 2  # the page's and the probe's
    assert "Answers that look alike" in seen["heading"]
    assert seen["pairs"] == len(C.COPIED) and seen["marks"] > 0
    text = seen["text"]
    assert "a reason to look, not a verdict" in text
    assert "</script><script>document.title='pwned'</script>" in text  # shown, as text
    assert "<img src=x onerror=" in text
    assert "\\u202e" in text and "\u202e" not in text  # the override shown as its escape
    assert "both answers are wrong the same way" in text
    for a, b, name in C.COPIED:
        assert f"{a} and {b}, {name}" in " ".join(text.split())


def test_a_copy_padded_with_a_deep_expression_is_still_compared(tmp_path):
    """The token walk recurses: an expression hundreds of levels deep (a sum of 2,000 terms) is
    cut to a placeholder before it, so a copy padded with one pairs with its original instead of
    dropping out of the comparison."""
    padding = "    unused = " + " + ".join(["size"] * 2000) + "\n"
    head, rest = C.COPIED_SDPA.split("    size = queries.shape[-1]\n", 1)
    padded = head + "    size = queries.shape[-1]\n" + padding + rest
    folders = C.write_class(tmp_path, {"ok_1": {C.SDPA: C.ORIGINAL_SDPA},
                                       "padded": {C.SDPA: padded}})  # fmt: skip
    students = [SavedResult(s, _results(s)) for s in folders]
    report = class_similarity(students, folders)
    assert {(p["student_a"], p["student_b"]) for p in report["pairs"]} == {("ok_1", "padded")}
