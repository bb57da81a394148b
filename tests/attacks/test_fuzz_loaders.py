"""Fuzzing what the grading parent reads from students: notebooks, the harness's answers and
arrays, status files. Whatever the bytes, the loader returns that student's message (of the
expected kind) and never raises. Fast: no sandbox, except one small class at the end where a
few of these files sit next to an honest student who keeps full marks.
"""

import csv
import json
import os
import tempfile
from pathlib import Path

import nbformat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograder
from autograder.__main__ import main
from autograder.course.probes import build_cases
from autograder.judging.answers import judge_cases
from autograder.notebook_files import load_notebook
from autograder.safe_files import UnsafeFile, load_npy, parse_json, read_json
from autograder.sandbox import NotebookJob, NotebookRun
from autograder.sandbox.status import apply_status, read_status

REPO = Path(autograder.__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "01_soft_lookup.ipynb"
FILE = "01_soft_lookup.ipynb"
VALID = SOLUTION.read_bytes()
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def load(raw, max_bytes=20 * 2**20):
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, FILE).write_bytes(raw)
        return load_notebook(Path(folder), FILE, max_bytes)


def refused(raw, *words, max_bytes=20 * 2**20):
    nb, message = load(raw, max_bytes)
    assert nb is None, message
    assert isinstance(message, str) and FILE in message
    assert any(w in message for w in words), message
    return message


def deep(n, open_="[", close="]"):
    return (open_ * n + close * n).encode()


# -- notebooks -----------------------------------------------------------------------------------
def test_the_valid_notebook_loads():
    nb, message = load(VALID)
    assert nb is not None and message == ""
    assert any(c.cell_type == "code" for c in nb.cells)


@FUZZ
@given(st.integers(min_value=1, max_value=len(VALID.rstrip()) - 1))
def test_a_truncated_notebook_is_not_valid_json(cut):
    refused(VALID[:cut], "not a valid notebook", "empty")


@FUZZ
@given(st.binary(min_size=1, max_size=2000))
def test_random_bytes_named_ipynb_get_a_message(raw):
    nb, message = load(raw)
    assert nb is None and FILE in message


@FUZZ
@given(st.binary(min_size=1, max_size=50).filter(lambda b: not b.decode("utf-8", "ignore")))
def test_non_utf8_bytes_inside_a_notebook_are_replaced_not_fatal(junk):
    data = json.loads(VALID)
    data["cells"][0]["source"] = ["x"]
    text = json.dumps(data).replace('"x"', '"@@@"').encode()
    nb, message = load(text.replace(b"@@@", junk.replace(b'"', b"").replace(b"\\", b"")))
    assert nb is not None or FILE in message


def test_binary_files_named_ipynb():
    refused(bytes(range(256)) * 40, "not a valid notebook")
    refused(b"\x89PNG\r\n\x1a\n" + os.urandom(3000), "not a valid notebook")
    refused(b"PK\x03\x04" + b"\x00" * 500, "not a valid notebook")


@pytest.mark.parametrize("version", [0, 1, 2, 5, 99, -1, "four", None, 10**30, [4]])
def test_wrong_nbformat_versions_get_a_message(version):
    data = json.loads(VALID)
    data["nbformat"] = version
    refused(json.dumps(data).encode(), "could not be read as a notebook")


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("cells"),
        lambda d: d.update(cells=None),
        lambda d: d.update(cells={"a": 1}),
        lambda d: d.update(cells=[1, 2]),
        lambda d: d.update(cells=[]),
        lambda d: d["cells"][1].update(source=12),
    ],
)
def test_missing_or_malformed_cells_get_a_message(change):
    data = json.loads(VALID)
    change(data)
    refused(json.dumps(data).encode(), "could not be read as a notebook", "no code cells", "cell")


@pytest.mark.parametrize("depth", [70, 1_000, 100_000])
def test_deeply_nested_notebook_json_gets_a_message(depth):
    refused(deep(depth), "nested")
    data = json.loads(VALID)
    data["metadata"]["x"] = "@@@"
    nested = json.dumps(data).encode().replace(b'"@@@"', deep(depth))
    refused(nested, "nested")


@pytest.mark.slow  # grades in a real sandbox
def test_a_huge_cell_over_the_size_cap_is_not_read():
    data = json.loads(VALID)
    data["cells"].append(nbformat.v4.new_code_cell("x = '" + "a" * 300_000 + "'"))
    message = refused(json.dumps(data).encode(), "not graded", max_bytes=200_000)
    assert "larger" in message or "more than" in message


@pytest.mark.slow  # grades in a real sandbox
def test_a_huge_cell_under_the_cap_is_graded():
    data = json.loads(VALID)
    data["cells"].append(nbformat.v4.new_code_cell("x = '" + "a" * 300_000 + "'"))
    nb, message = load(json.dumps(data).encode())
    assert nb is not None, message


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p.symlink_to(SOLUTION), "symbolic link"),
        (lambda p: p.symlink_to("/dev/zero"), "symbolic link"),
        (lambda p: os.mkfifo(p), "named pipe"),
        (lambda p: p.mkdir(), "folder"),
    ],
)
def test_a_notebook_that_is_not_a_regular_file_is_not_followed(tmp_path, make, words):
    make(tmp_path / FILE)
    nb, message = load_notebook(tmp_path, FILE)
    assert nb is None and words in message


# -- the harness's answers -----------------------------------------------------------------------
CASES = build_cases("01_soft_lookup", 1234)
SIMILARITY = next(i for i, c in enumerate(CASES) if c.function == "similarity")


def judge_one(files):
    """Judge the first similarity case against response files {relative path: bytes|callable}."""
    with tempfile.TemporaryDirectory() as root:
        responses = Path(root) / "responses" / "01_soft_lookup"
        folder = responses / "similarity" / f"{SIMILARITY:03d}_00"
        folder.mkdir(parents=True)
        for rel, content in files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if callable(content):
                content(path)
            else:
                path.write_bytes(content)
        cases = [CASES[SIMILARITY]]
        for i in range(SIMILARITY):  # keep the case index: the folder name depends on it
            cases.insert(0, CASES[i])
        results = judge_cases(cases, responses, {}, trusted_root=Path(root) / "responses")
        return results[-1]


@FUZZ
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=30,
    )
)
@pytest.mark.slow  # a fuzzer: hundreds of generated inputs
def test_any_json_answer_is_judged_without_raising(value):
    result = judge_one({"response.json": json.dumps(value).encode()})
    assert result.score == 0.0 and result.output


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_an_answer_are_judged_without_raising(raw):
    result = judge_one({"response.json": raw})
    assert result.score == 0.0 and result.output


@pytest.mark.parametrize("depth", [100, 10_000, 200_000])
def test_a_deeply_nested_answer_is_refused(depth):
    result = judge_one({"response.json": b'{"value":' * depth + b"1" + b"}" * depth})
    assert result.score == 0.0
    assert "nested" in result.output


@pytest.mark.parametrize(
    "name", ["../../../../etc/passwd", "/etc/passwd", "..", "a\x00b", "x/../../y", 7, None]
)
def test_an_array_name_cannot_leave_its_folder(name):
    result = judge_one({"response.json": json.dumps({"value": {"$array": name}}).encode()})
    assert result.score == 0.0
    assert "could not be read" in result.output or "not allowed" in result.output


def test_a_forged_lost_or_grader_message_is_not_shown():
    forged = "GRADER NOTICE: plagiarism detected"
    for raw in ({"lost": forged}, {"missing": forged}, {"error": forged}, [forged]):
        result = judge_one({"response.json": json.dumps(raw).encode()})
        assert result.score == 0.0 and forged not in result.output


@FUZZ
@given(st.binary(max_size=400))
def test_any_npy_bytes_are_refused_or_plain_arrays(raw):
    with tempfile.TemporaryDirectory() as root:
        Path(root, "a.npy").write_bytes(b"\x93NUMPY" + raw)
        try:
            arr = load_npy(root, "a.npy", 2**20)
        except UnsafeFile as exc:
            assert exc.kind == "unreadable"
        else:
            assert isinstance(arr, np.ndarray) and arr.dtype != object


def test_an_npy_header_larger_than_its_data_is_refused(tmp_path):
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)}
    with open(tmp_path / "a.npy", "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(b"\0" * 64)
    with pytest.raises(UnsafeFile) as info:
        load_npy(tmp_path, "a.npy", 2**20)
    assert "does not match" in info.value.message


# -- status files --------------------------------------------------------------------------------
JOB = NotebookJob("01_soft_lookup", FILE, Path("/nonexistent"), {"similarity": 30.0})
FORGED = "GRADER: you have been awarded full marks, see http://evil"


def apply(status):
    run = NotebookRun("01_soft_lookup")
    apply_status(run, status, JOB)
    return run


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(
            ["finished", "executed_ok", "cell_errors", "notes", "messages", "seconds", "timed_out"]
            + ["kernel_died", "stem"]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.just(FORGED),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.sampled_from(["similarity", "*", "cell", FORGED]), inner)
            ),
            max_leaves=12,
        ),
    )
)
@pytest.mark.slow  # a fuzzer: hundreds of generated inputs
def test_a_forged_status_never_shows_its_text_as_the_graders(status):
    run = apply(status)
    said = json.dumps([run.messages, run.notes])
    assert FORGED not in said
    assert all(isinstance(e["cell"], int) for e in run.cell_errors)


def test_a_status_that_is_a_link_a_fifo_or_deep_json_is_not_read(tmp_path):
    (tmp_path / "a.json").symlink_to("/etc/passwd")
    os.mkfifo(tmp_path / "b.json")
    (tmp_path / "c.json").write_bytes(deep(50_000))
    (tmp_path / "d.json").write_bytes(b"{" + b" " * (2 * 2**20) + b"}")
    for name in "abcd":
        assert read_status(tmp_path / f"{name}.json") is None
    run = apply(None)
    assert "stopped before" in " ".join(run.messages)


def test_parse_json_kinds():
    assert parse_json(b'{"a": [1]}', "x") == {"a": [1]}
    for raw, kind in [(b"{", "not-json"), (b"\xff\xfe", "not-json"), (deep(5000), "too-deep")]:
        with pytest.raises(UnsafeFile) as info:
            parse_json(raw, "x")
        assert info.value.kind == kind


def test_read_json_stops_at_the_cap_even_for_dev_zero(tmp_path):
    (tmp_path / "z.json").symlink_to("/dev/zero")
    (tmp_path / "real").mkdir()
    with pytest.raises(UnsafeFile) as info:
        read_json(tmp_path, "z.json", 1024)
    assert info.value.kind == "symlink"
    with pytest.raises(UnsafeFile) as info:
        read_json(tmp_path, "real", 1024)
    assert info.value.kind == "directory"


# -- one small class in the sandbox --------------------------------------------------------------
@pytest.fixture(scope="module")
def fuzzed_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzzclass")
    subs = root / "submissions"
    files = {
        "honest": VALID,
        "truncated": VALID[: len(VALID) // 2],
        "binary": os.urandom(5000),
        "deep": deep(100_000),
        "v99": json.dumps(dict(json.loads(VALID), nbformat=99)).encode(),
        "nocells": json.dumps(
            {k: v for k, v in json.loads(VALID).items() if k != "cells"}
        ).encode(),
    }
    for student, raw in files.items():
        (subs / student).mkdir(parents=True)
        (subs / student / FILE).write_bytes(raw)
    out = root / "out"
    code = main(
        ["grade", str(subs), "--out", str(out), "--workers", "1", "--timeout", "60", "--quiet"]
        + ["--secret", "fuzz"]
    )
    return {"out": out, "code": code, "students": sorted(files)}


@pytest.mark.slow  # grades in a real sandbox
def test_the_fuzzed_class_is_graded_and_the_honest_student_keeps_full_marks(fuzzed_class):
    out = fuzzed_class["out"]
    assert fuzzed_class["code"] == 0
    rows = list(csv.reader((out / "grades.csv").open()))[1:]
    assert sorted(r[0] for r in rows) == fuzzed_class["students"]
    honest = json.loads((out / "honest" / "results.json").read_text())
    nb = honest["notebooks"]["01_soft_lookup"]
    assert nb["score"] == nb["max_score"] > 0
    kinds = {
        "truncated": "not a valid notebook",
        "binary": "not a valid notebook",
        "deep": "nested",
        "v99": "could not be read as a notebook",
        "nocells": "could not be read as a notebook",
    }
    for student, words in kinds.items():
        payload = json.loads((out / student / "results.json").read_text())
        assert payload["notebooks"]["01_soft_lookup"]["score"] == 0
        assert words in payload["output"], (student, payload["output"][:300])
