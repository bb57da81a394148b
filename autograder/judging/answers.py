"""The harness's answers, read in the grading parent without trusting a byte of them.

    results = judge_cases(cases, responses_dir, notes, trusted_root=work / "run" / "responses")

The one way answers become TestResults (judging.base's `verdict` on `Response`s): every file is read
below `trusted_root`, a folder the sandbox could not replace, without following links and only
as a regular file under a size cap (autograder.safe_files, through wire.Reader). An answer that
is a link, a FIFO, a device, too large, too deeply nested, not in the harness's form, or that
names arrays which are not plain files of its own folder is lost, with a message saying why.
Fields the parent reads before the judge are type-checked, and "lost" (the parent's own word for
an answer that never came back) is never taken from a file.
"""

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.curriculum import NOTEBOOK_OF
from autograder.harness.wire import MAX_ARRAY_BYTES, Reader
from autograder.judging.base import Case, Response, judgement, request_folder
from autograder.judging.dependencies import Unavailable, culprit, dependency_message
from autograder.results import DEPENDENCY_MISSING, LOST, PASSED, TIMEOUT, TestResult
from autograder.safe_files import UnsafeFile, check_name, open_below

ARRAY_KEYS = ("$array", "$scalar", "$tensor")
# What one answer may make the parent load, every reference counted (an answer that names one
# 64 MB array 40 times would otherwise make the judge load 2.6 GB): as much as one array may hold.
MAX_ANSWER_ARRAY_BYTES = MAX_ARRAY_BYTES
MAX_ANSWER_ARRAYS = 10_000  # references to arrays in one answer


def checked(raw: object) -> dict:
    """A response in the harness's form, or a lost one (a dict with "lost" and why)."""
    bad = {"lost": "your answer could not be read by the grader: it is not in the harness's form."}
    if not isinstance(raw, dict) or "lost" in raw:
        return bad
    missing = raw.get("missing")
    if missing is not None and not (
        isinstance(missing, str)
        and len(missing) <= 100
        and missing.replace(".", "_").isidentifier()
    ):
        return bad
    error = raw.get("error")
    if error is not None:
        if not isinstance(error, dict) or not isinstance(error.get("type"), str):
            return bad
        where = error.get("where", [])
        if not isinstance(where, list) or not all(isinstance(w, str) for w in where):
            return bad
        error = dict(error, type=error["type"][:100], message=str(error.get("message", ""))[:600])
        name = error.get("name")
        if name is not None and not (
            isinstance(name, str) and len(name) <= 100 and name.isidentifier()
        ):
            del error["name"]  # a NameError's name (harness): a Python name, or nothing
        raw = dict(raw, error=error)
    return raw


def check_arrays(raw: dict, root: Path, below: tuple[str, ...]) -> None:
    """UnsafeFile unless every array the answer names is a regular file of its own arrays/
    folder under the size cap (checked with fstat, not read: the judge reads them later), and
    all the arrays it names, each reference counted, add up to at most MAX_ANSWER_ARRAY_BYTES
    (the judge decodes every reference: naming one array many times must not multiply it)."""
    stack, total, count = [raw], 0, 0
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if key in ARRAY_KEYS:
                    name = check_name(value)
                    fd = open_below(root, [*below, "arrays", f"{name}.npy"], f"array {name}")
                    try:
                        size = os.fstat(fd).st_size
                    finally:
                        os.close(fd)
                    if size > MAX_ARRAY_BYTES:
                        raise UnsafeFile("too-large", f"array {name} is larger than allowed")
                    total, count = total + size, count + 1
                    if total > MAX_ANSWER_ARRAY_BYTES or count > MAX_ANSWER_ARRAYS:
                        raise UnsafeFile(
                            "too-large",
                            "the answer names more array data than one answer may hold "
                            f"({count} arrays so far; the same array named again counts again)",
                        )
                else:
                    stack.append(value)


def read_answer(folder: Path, trusted_root: Path, lost: str) -> tuple[dict, Reader]:
    """(raw response dict, Reader) for one request folder; `lost` is the text for no answer."""
    reader = Reader(folder, root=trusted_root)
    try:
        raw = checked(reader.read_json("response.json"))
    except UnsafeFile as exc:
        return ({"lost": lost} if exc.kind == "missing" else _unreadable(exc)), reader
    if "lost" not in raw:
        try:
            check_arrays(raw, reader.root, reader.below)
        except UnsafeFile as exc:
            return _unreadable(exc), reader
    return raw, reader


def _unreadable(exc: UnsafeFile) -> dict[str, str]:
    return {"lost": f"your answer could not be read by the grader: {exc.message}."}


def judge_cases(
    cases: Sequence[Case],
    response_root: Path | None,
    notes: Mapping[str, str] | None = None,
    trusted_root: Path | None = None,
    reason: str = LOST,
    unavailable: Mapping[str, Unavailable] | None = None,
) -> list[TestResult]:
    """TestResults for every case from the answers under response_root (a folder below
    trusted_root; default: response_root itself). response_root None: no answer came back at
    all, and every case scores 0 with the note for its function (or "*") and `reason`
    (autograder.results: MISSING_NOTEBOOK, NOT_RUN, ...). `unavailable`: {name:
    dependencies.Unavailable}, the names of earlier notebooks that cannot be used; a case
    that does not pass because one of them raised is dependency-missing, and says so."""
    notes = notes or {}
    results = []
    first_timeout: dict[str, str] = {}  # function -> the name of its first test that timed out
    unavailable = unavailable or {}
    for i, case in enumerate(cases):
        depends_on = ""
        ids: list[str]
        if response_root is None:
            fraction, message, ids = 0.0, notes.get(case.function) or notes.get("*", ""), []
            why = reason
        else:
            response_root = Path(response_root)
            root = Path(trusted_root) if trusted_root is not None else response_root
            lost = notes.get(case.function) or notes.get("*") or "no answer came back"
            responses = []
            for j in range(len(case.requests)):
                folder = response_root / case.function / request_folder(i, j)
                raw, reader = read_answer(folder, root, lost)
                responses.append(Response(raw, reader))
            fraction, message, ids, why = judgement(case, responses)
            name = culprit(responses, unavailable) if unavailable and why != PASSED else None
            if name is not None:
                message = dependency_message(case.function, name, unavailable[name])
                why, ids, depends_on = DEPENDENCY_MISSING, [], unavailable[name].notebook
            elif why == TIMEOUT and case.function in first_timeout:
                # the harness did not call it again (harness/serve.py, TIMED_OUT)
                message = (
                    f"{case.function} was not run on this test: it ran out of time on an earlier "
                    f'one ("{first_timeout[case.function]}"), and a function that has run out '
                    "of time is not called again."
                )
            elif why == TIMEOUT:
                first_timeout[case.function] = case.name
        results.append(
            TestResult(
                name=f"{case.function}: {case.name}",
                score=round(case.points * fraction, 4),
                max_score=case.points,
                output=message,
                notebook=NOTEBOOK_OF[case.function].stem,
                function=case.function,
                misconceptions=ids,
                reason=why,
                depends_on=depends_on,
            )
        )
    return results
