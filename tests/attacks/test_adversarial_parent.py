"""Attacks on the grading PARENT: everything that reads what comes out of a sandbox or a
submission, and the class report. One small class is graded once (module fixture) by
`python -m autograder grade` in a subprocess whose own peak memory is measured; every attacker
holds only notebook 01 (the status forger also a tiny 02), next to honest students (copies of
solutions/01 and solutions/02) who must keep full marks.

In-sandbox attacks rewrite the harness's answers (/grader/responses/...) or the status files,
replacing them with links to a host file, FIFOs, /dev/zero, huge sparse files, deeply nested
JSON, array names that climb out of their folder, or forged grader messages. The answers are
rewritten from inside the kernel, right after the harness writes each one; the status files,
written outside the kernel, by a detached "tamperer" process that a notebook cell starts.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from fixtures import PEAK_RSS_KB_LINE
from processes import marker, processes_with

import autograder
from autograder.safe_files import remove_tree
from autograder.sandbox.isolation import bwrap_works

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(autograder.__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NB1, NB2 = "01_soft_lookup.ipynb", "02_dot_product_softmax.ipynb"
REFERENCE = (REPO / "autograder" / "course" / "n01_soft_lookup" / "reference.py").read_text()
HOST_SECRET = "HOSTSECRET-7f3a9c"  # in host files the attacks point at; must never reach OUT
FORGED = "GRADER NOTICE: plagiarism detected, email evil@example.com"
MARKER = marker("3133")  # every tamperer process carries it in its command line
ESCAPE_NAME = "\x1b[31mred\x1b[0m"
FORMULA_NAMES = ['=HYPERLINK("evil","x")', "+cmd", "-2+3", "@SUM(1)"]
REPORT_NAMES = ["grades.csv", "summary.json", "summary.md"]
NON_UTF8_NAME = os.fsdecode(b"caf\xff")

# What the attacks do, shared by both ways of running them (below): `plan`, `host` and `message`
# are set before it; sweep() makes one pass over the answers and status files written so far.
TAMPER = r"""
import json, os, sys, time
here = os.getcwd()
responses = os.path.abspath(os.path.join(here, "..", "responses"))
status = os.path.abspath(os.path.join(here, "..", "status"))
done = set()

def swap_link(path, target):
    tmp = path + ".swap"
    os.symlink(target, tmp)
    os.replace(tmp, path)

def climb(value):
    if isinstance(value, dict):
        return {k: ("../" * 12 + host.lstrip("/") if k == "$array" else climb(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [climb(v) for v in value]
    return value

def tamper_answer(mode, case_dir):
    path = os.path.join(case_dir, "response.json")
    if path in done or os.path.islink(path) or not os.path.isfile(path):
        return
    if mode == "symlink":
        swap_link(path, host)
    elif mode == "fifo":
        os.unlink(path)
        os.mkfifo(path)
    elif mode == "devzero":
        arrays = os.path.join(case_dir, "arrays")
        if not os.path.isdir(arrays):
            return
        for name in os.listdir(arrays):
            swap_link(os.path.join(arrays, name), "/dev/zero")
    elif mode == "deep":
        with open(path + ".t", "w") as f:
            f.write('{"value":' * 200000 + "1" + "}" * 200000)
        os.replace(path + ".t", path)
    elif mode == "big":
        os.truncate(path, 200 * 2**20)
    elif mode == "dotdot":
        with open(path) as f:
            data = climb(json.load(f))
        with open(path + ".t", "w") as f:
            json.dump(data, f)
        os.replace(path + ".t", path)
    done.add(path)

def sweep():
    for key, mode in plan.items():
        try:
            if key.startswith("status:"):
                stem = key.split(":", 1)[1]
                path = os.path.join(status, stem + ".json")
                if mode == "forge":
                    forged = {"stem": stem, "started": True, "finished": True,
                              "executed_ok": True, "cell_errors": [],
                              "messages": [message], "notes": {"similarity": message,
                              "*": message}, "seconds": 1.0}
                    with open(path + ".t", "w") as f:
                        json.dump(forged, f)
                    os.replace(path + ".t", path)
                    gone = os.path.join(responses, stem, "similarity")
                    if os.path.isdir(gone) and not os.path.islink(gone):
                        os.rename(gone, gone + ".gone")
                elif mode == "symlink" and not os.path.islink(path):
                    swap_link(path, host)
                continue
            for stem in os.listdir(responses):
                folder = os.path.join(responses, stem, key)
                if mode == "dirlink":
                    if (os.path.isdir(folder) and not os.path.islink(folder)
                            and os.listdir(folder) and folder not in done):
                        os.rename(folder, folder + ".real")
                        os.symlink(key + ".real", folder)  # relative: resolves on the host too
                        done.add(folder)
                    continue
                if os.path.isdir(folder) and not os.path.islink(folder):
                    for case in os.listdir(folder):
                        tamper_answer(mode, os.path.join(folder, case))
        except OSError:
            pass
"""

# A detached process that sweeps every 10 ms for 15 minutes. It says it is running (after its
# first sweep) in a file the notebook's cell waits for: the attack never loses a race against
# Python's start-up on a loaded machine.
DETACHED = r"""
sweep()
open(os.path.join(here, ".tamperer-running"), "w").close()
end = time.time() + 900
while time.time() < end:
    sweep()
    time.sleep(0.01)
"""

# Inside the kernel: the harness writes each answer with Path.replace, and the student's code
# shares its process, so a sweep right after each write tampers with every answer before the
# harness goes on. No timing is involved: the answers are replaced whatever the machine's load.
HOOKED = r"""
import pathlib
_replace = pathlib.Path.replace
def _replace_then_tamper(self, target):
    result = _replace(self, target)
    if str(target).endswith("response.json"):
        sweep()
    return result
pathlib.Path.replace = _replace_then_tamper
"""


def _with_plan(plan, host_file, body):
    return f"plan, host, message = {plan!r}, {str(host_file)!r}, {FORGED!r}\n{TAMPER}{body}"


def start_tamperer(plan, host_file):
    """A cell that starts the detached tamperer and waits until it runs (status attacks: the
    status files are written outside the kernel)."""
    script = json.dumps(_with_plan(plan, host_file, DETACHED))
    return (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {script}, {MARKER!r}], start_new_session=True,\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "end = time.time() + 120\n"
        "while not os.path.exists('.tamperer-running') and time.time() < end:\n"
        "    time.sleep(0.01)"
    )


def hook_tamperer(plan, host_file):
    """A cell that makes the kernel tamper with each answer as soon as the harness writes it."""
    return _with_plan(plan, host_file, HOOKED)


def notebook(folder, name, *cells):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, folder / name)


def build_class(root, host):
    subs = root / "submissions"
    honest = {"honest01": NB1, "honest02": NB2}
    for student, name in honest.items():
        (subs / student).mkdir(parents=True)
        shutil.copy(SOLUTIONS / name, subs / student / name)

    # answers replaced in the sandbox: one graded name per kind of attack; lookup is untouched
    plan1 = {"similarity": "symlink", "percentages": "fifo", "soft_lookup": "devzero"}
    notebook(subs / "tamper1", NB1, hook_tamperer(plan1, host), REFERENCE)
    plan2 = {"similarity": "dotdot", "percentages": "big", "soft_lookup": "dirlink"}
    notebook(subs / "tamper2", NB1, hook_tamperer(plan2, host), REFERENCE)
    plan3 = {"similarity": "deep"}
    notebook(subs / "tamper3", NB1, hook_tamperer(plan3, host), REFERENCE)
    # a later notebook forges the earlier one's status and replaces its own with a host link
    plan4 = {"status:01_soft_lookup": "forge", "status:02_dot_product_softmax": "symlink"}
    notebook(subs / "statusforger", NB1, REFERENCE)
    notebook(subs / "statusforger", NB2, start_tamperer(plan4, host), "import time; time.sleep(2)")

    # submissions that point elsewhere, or are not regular files
    (subs / "link_solutions").mkdir()
    (subs / "link_solutions" / NB1).symlink_to(SOLUTIONS / NB1)
    (subs / "link_student").mkdir()
    (subs / "link_student" / NB1).symlink_to(subs / "honest01" / NB1)
    (subs / "link_hostjson").mkdir()
    (subs / "link_hostjson" / NB1).symlink_to(host.with_suffix(".json"))
    (subs / "fifo_notebook").mkdir()
    os.mkfifo(subs / "fifo_notebook" / NB1)

    # size and depth
    (subs / "deep_json").mkdir()
    (subs / "deep_json" / NB1).write_text("[" * 200_000 + "]" * 200_000)
    (subs / "oversized").mkdir()
    with open(subs / "oversized" / NB1, "wb") as handle:
        handle.truncate(500 * 2**20)  # sparse: 500 MB that take no disk
    # one messy folder: sparse files, a linked folder, a deep folder chain (and one more made
    # inside the sandbox, in the copy the parent removes afterwards), next to an honest notebook
    chain = (
        "import os\nstart = os.getcwd()\nfor _ in range(3000):\n"
        "    os.mkdir('d')\n    os.chdir('d')\nos.chdir(start)"
    )
    notebook(subs / "messy", NB1, REFERENCE, chain)
    for i in range(8):
        with open(subs / "messy" / f"blob{i}.bin", "wb") as handle:
            handle.truncate(2**30)  # sparse: 8 GB that take no disk
    (subs / "messy" / "data").symlink_to(host.parent)
    _deep_folders(subs / "messy" / "chain", 1500)  # past the recursion limit
    os.mkdir(subs / NON_UTF8_NAME)  # a folder name that is not UTF-8

    # names that collide with the report, or are formulas or terminal escapes
    notebook(subs / "grades.csv", NB1, REFERENCE)
    for name in [*REPORT_NAMES[1:], *FORMULA_NAMES, ESCAPE_NAME]:
        (subs / name).mkdir()
    return subs


def _deep_folders(top, depth):
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


WRAPPER = (
    "import sys\n"
    "from autograder.__main__ import main\n"
    "code = main(sys.argv[1:])\n" + PEAK_RSS_KB_LINE + "sys.exit(code)\n"
)


def grade(subs, out, temp):
    """The grading parent in its own process, with its own temp folder (its work folders)."""
    argv = [str(subs), "--out", str(out), "--workers", "2", "--timeout", "60", "--quiet"]
    argv += ["--secret", "adversarial", "--memory", "2"]
    return subprocess.run(
        [sys.executable, "-c", WRAPPER, "grade", *argv],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=REPO,
        env=dict(os.environ, TMPDIR=str(temp)),
    )


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("adversarial")
    host = root / "host" / "secret.txt"
    host.parent.mkdir()
    host.write_text(f"{HOST_SECRET}\n")
    host.with_suffix(".json").write_text(json.dumps({"nbformat": 4, "cells": [HOST_SECRET]}))
    host.with_suffix(".npy").write_text(HOST_SECRET)
    try:
        subs = build_class(root, host)
        out = root / "out"
        temp = root / "tmp"
        temp.mkdir()
        first = grade(subs, out, temp)
        alive = processes_with(MARKER)
        for pid in alive:  # without a pid namespace (no bwrap) detached processes survive
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        rerun = grade(subs, out, temp)  # without --force: all up to date (deep chains too)
        left = sorted(p.name for p in temp.iterdir())
        yield {
            "out": out,
            "subs": subs,
            "first": first,
            "rerun": rerun,
            "alive": alive,
            "left_in_temp": left,
            "bwrap": bool(shutil.which("bwrap")) and bwrap_works(shutil.which("bwrap")),
        }
    finally:  # pytest's own clean-up of old temp folders recurses: it could not remove it
        remove_tree(root / "submissions" / "messy" / "chain")


def results(attacked, student):
    folder = "_" + student if student in REPORT_NAMES else student
    return json.loads((attacked["out"] / folder / "results.json").read_text())


def cases_of(payload, function, notebook="01_soft_lookup"):
    found = [t for t in payload["tests"] if t["notebook"] == notebook and t["function"] == function]
    assert found
    return found


def full_marks(payload, stem="01_soft_lookup"):
    info = payload["notebooks"][stem]
    return info["max_score"] > 0 and info["score"] == info["max_score"]


def peak_rss_mb(run):
    line = next(x for x in run.stderr.splitlines() if x.startswith("PEAK_RSS_KB"))
    return int(line.split()[1]) / 1024


# -- the run as a whole --------------------------------------------------------------------------
def test_the_run_completes_and_grades_csv_has_every_student(attacked):
    """Every student is in grades.csv; those whose id student_ids refuses (not UTF-8, an
    escape sequence) as NOT GRADED, escaped: the run grades the others, ends non-zero and
    names those two."""
    first = attacked["first"]
    assert first.returncode == 1, first.stderr[-3000:]
    refused = [line for line in first.stderr.splitlines() if line.startswith("NOT GRADED")]
    assert len(refused) == 2, first.stderr[-3000:]
    assert any(
        r.startswith("NOT GRADED caf\\udcff: not graded: its name is not UTF-8") for r in refused
    )
    assert any(r.startswith("NOT GRADED \\x1b[31mred\\x1b[0m: not graded:") for r in refused)
    rows = list(csv.reader((attacked["out"] / "grades.csv").open()))
    shown = {r[0] for r in rows[1:]}
    refused = {r[0] for r in rows[1:] if r[-1] == "NOT GRADED"}
    assert refused == {"caf\\udcff", "\\x1b[31mred\\x1b[0m"}
    expected = set(refused)
    for student in os.listdir(attacked["subs"]):
        if student in (NON_UTF8_NAME, ESCAPE_NAME):
            continue
        if student.startswith(("=", "+", "-", "@")):
            student = "'" + student
        expected.add(student)
    assert shown == expected
    for name in ("grades.csv", "summary.json", "summary.md"):
        assert (attacked["out"] / name).is_file()  # the class files were not clobbered
    json.loads((attacked["out"] / "summary.json").read_text())


def test_honest_students_keep_full_marks(attacked):
    assert full_marks(results(attacked, "honest01"))
    assert full_marks(results(attacked, "honest02"), "02_dot_product_softmax")
    for student in ("grades.csv", "messy"):
        assert full_marks(results(attacked, student)), student


def test_no_host_content_appears_in_any_output_file(attacked):
    for path in attacked["out"].rglob("*"):
        if path.is_file():
            assert HOST_SECRET.encode() not in path.read_bytes(), path


def test_the_grading_parent_memory_stays_bounded(attacked):
    peak = peak_rss_mb(attacked["first"])
    print(f"grading parent peak RSS: {peak:.0f} MB")
    assert peak < 1500, peak  # /dev/zero once grew it past 3 GB; a 500 MB notebook to 2 GB


def test_no_process_started_by_a_submission_outlives_the_run(attacked):
    if not attacked["bwrap"]:
        pytest.skip("without bubblewrap's pid namespace detached processes can outlive a run")
    assert attacked["alive"] == []


def test_no_work_folder_is_left(attacked):
    assert attacked["left_in_temp"] == []  # the runs' work folders, sandbox library included


def test_a_rerun_without_force_skips_everyone_despite_deep_folders(attacked):
    rerun = attacked["rerun"]
    assert rerun.returncode == 1, rerun.stderr[-3000:]  # the two refused ids, again
    total = len(os.listdir(attacked["subs"])) - 2  # the two refused ids are never graded
    assert f"graded 0 student(s), skipped {total} up to date, 2 not graded" in rerun.stdout


# -- answers and status files replaced inside the sandbox ----------------------------------------
@pytest.mark.parametrize(
    ("student", "function", "words"),
    [
        ("tamper1", "similarity", "symbolic link"),
        ("tamper1", "percentages", "named pipe"),
        ("tamper1", "soft_lookup", "symbolic link"),  # its arrays -> /dev/zero
        ("tamper2", "similarity", "not allowed"),  # array names climbing out with ../
        ("tamper2", "percentages", "more than"),  # a 200 MB sparse response.json
        ("tamper2", "soft_lookup", "link"),  # the function's folder replaced by a link
        ("tamper3", "similarity", "nested"),
    ],
)
def test_a_replaced_answer_scores_zero_with_a_clear_message(attacked, student, function, words):
    payload = results(attacked, student)
    found = cases_of(payload, function)
    assert all(t["score"] == 0 for t in found)
    assert all(words in t["output"] for t in found), found[0]["output"]


def test_an_untouched_function_of_an_attacker_is_still_graded(attacked):
    for student in ("tamper1", "tamper2", "tamper3"):
        assert all(t["status"] == "passed" for t in cases_of(results(attacked, student), "lookup"))


def test_a_later_notebook_cannot_forge_an_earlier_ones_status(attacked):
    payload = results(attacked, "statusforger")
    text = json.dumps(payload) + (attacked["out"] / "statusforger" / "feedback.html").read_text()
    assert FORGED not in text and "evil@example.com" not in text
    assert all(t["score"] == 0 for t in cases_of(payload, "similarity"))  # its answers deleted
    assert all(t["status"] == "passed" for t in cases_of(payload, "percentages"))


# -- submissions ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("student", "words"),
    [
        ("link_solutions", "is a symbolic link; upload the file itself"),
        ("link_student", "is a symbolic link; upload the file itself"),
        ("link_hostjson", "is a symbolic link; upload the file itself"),
        ("fifo_notebook", "named pipe"),
        ("deep_json", "nested"),
        ("oversized", "not graded"),
    ],
)
def test_an_unusable_notebook_scores_zero_with_a_clear_message(attacked, student, words):
    payload = results(attacked, student)
    assert payload["notebooks"]["01_soft_lookup"]["score"] == 0
    assert words in payload["output"]
    assert all(words in t["output"] for t in cases_of(payload, "similarity"))


def test_sparse_files_are_not_copied(attacked):
    """A folder with anything odd in it is gathered (autograder.submissions): only its notebooks
    reach the sandbox, so 1.6 GB of sparse blobs cost nothing; the notebook is still graded."""
    payload = results(attacked, "messy")
    assert "blob" not in payload["output"]  # not copied, not even looked at
    assert (
        payload["notebooks"]["01_soft_lookup"]["score"]
        == payload["notebooks"]["01_soft_lookup"]["max_score"]
    )


def test_a_linked_folder_in_a_submission_is_not_followed(attacked):
    assert "data is a link to a folder; it was not followed" in results(attacked, "messy")["output"]


def test_a_folder_chain_is_searched_only_so_deep(attacked):
    output = results(attacked, "messy")["output"]
    assert "chain/d/d/d" in output and "is nested too deep; it was not searched" in output


# -- names -------------------------------------------------------------------------------------------
def test_report_names_are_graded_under_a_safe_folder(attacked):
    out = attacked["out"]
    assert (out / "_grades.csv" / "results.json").is_file()
    assert results(attacked, "grades.csv")["student"] == "grades.csv"
    assert (out / "_summary.json" / "results.json").is_file()


def test_formula_names_are_neutralised_in_grades_csv(attacked):
    rows = list(csv.reader((attacked["out"] / "grades.csv").open()))
    names = [r[0] for r in rows[1:]]
    for name in FORMULA_NAMES:
        assert "'" + name in names and name not in names
    for row in rows[1:]:
        if row[-1] == "NOT GRADED":  # a refused id: no number at all (never a 0), no formula
            assert not any(row[1:-1]), row
            continue
        assert all(cell.replace(".", "").isdigit() for cell in row[1:])  # numbers stay numbers
    assert sum(row[-1] != "NOT GRADED" for row in rows[1:]) >= len(FORMULA_NAMES)


def test_escape_sequences_are_never_printed_raw(attacked):
    for run in (attacked["first"], attacked["rerun"]):
        assert "\x1b" not in run.stdout and "\x1b" not in run.stderr
    for name in ("grades.csv", "summary.md"):
        assert "\x1b" not in (attacked["out"] / name).read_text()
    assert not (attacked["out"] / ESCAPE_NAME).exists()  # refused: no folder under its name


def test_feedback_html_is_autoescaped(attacked):
    from autograder.report import render_feedback

    payload = results(attacked, "honest01")
    payload = dict(payload, student="<script>alert(1)</script>")
    html = render_feedback(payload)
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html


def test_copy_submission_caps_sizes_by_apparent_size_and_copies_regular_files_only(tmp_path):
    from autograder.sandbox import copy_submission

    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        with open(src / f"sparse{i}.bin", "wb") as handle:
            handle.truncate(900 * 2**10)  # 900 KB each, no disk
    with open(src / "huge.bin", "wb") as handle:
        handle.truncate(2**40)
    os.mkfifo(src / "pipe")
    (src / "passwd").symlink_to("/etc/passwd")
    _deep_folders(src / "chain", 1500)
    skipped = dict(copy_submission(src, tmp_path / "dst", 2**20, 3 * 2**20))
    copied = [p for p in (tmp_path / "dst").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in copied) <= 3 * 2**20
    assert len([p for p in copied if p.name.startswith("sparse")]) == 3
    assert "exceed 3 MB" in skipped["sparse3.bin"] and "larger than 1 MB" in skipped["huge.bin"]
    assert skipped["pipe"] == "it is not a regular file"
    assert skipped["passwd"] == "it is a symbolic link"
    assert any("nested this deep" in why for why in skipped.values())
    remove_tree(src / "chain")
    remove_tree(tmp_path / "dst")
    assert not (tmp_path / "dst").exists()
