"""Cases as files: the visible checks' cases stored once, so a student's machine needs no probe.

    save_cases(cases, folder)      # instructor side: requests + each judge's name and data
    cases = load_cases(folder, function)  # student side: judges that run from that data alone
    serve(namespace, request_dir(folder, function), responses / function)
    judge_cases(cases, responses)

Layout, per graded name, its cases numbered from 0 as checks.run_in_process numbers them:
folder/requests/<function>/<case>_<request>/ (what write_requests makes for the sandbox) and
folder/cases/<function>/<case>/case.json (+ arrays/ beside it), all plain JSON and
.npy files written by the harness's wire format. A judge whose data is not plain (a closure, an
object) cannot be stored: save_cases raises, naming the case.
"""

import json
from collections.abc import Sequence
from pathlib import Path

from autograder.harness.wire import Reader, Writer
from autograder.judging import Judgement
from autograder.judging.base import Case, write_requests
from autograder.judging.later import resolved


class NotStorable(TypeError):
    """A case whose judge is not a Judgement of plain data."""


def _plain(encoded: object, where: str) -> None:
    """Raise NotStorable if the wire encoding had to describe some value as an opaque object."""
    if isinstance(encoded, list):
        for item in encoded:
            _plain(item, where)
    elif isinstance(encoded, dict):
        if "$object" in encoded:
            raise NotStorable(f"{where}: {encoded['$object']} is not plain data")
        for value in encoded.values():
            _plain(value, where)


def save_cases(cases: Sequence[Case], folder: Path | str) -> None:
    """Write every case's requests and judge data under folder (see the module docstring)."""
    import shutil

    folder = Path(folder)
    functions = list(dict.fromkeys(case.function for case in cases))
    for function in functions:
        own = [case for case in cases if case.function == function]
        staging = folder / f"requests-{function}"
        write_requests(own, staging)
        (folder / "requests").mkdir(parents=True, exist_ok=True)
        shutil.move(staging / function, request_dir(folder, function))
        shutil.rmtree(staging)
        for i, case in enumerate(own):
            _save_case(case, folder / "cases" / function / f"{i:03d}")
    (folder / "index.json").write_text(json.dumps(functions))


def _save_case(case: Case, directory: Path) -> None:
    where = f"{case.function}: {case.name}"
    if not isinstance(case.judge, Judgement):
        raise NotStorable(f"{where}: its judge is {type(case.judge).__name__}, not a Judgement")
    writer = Writer(directory)
    params = writer.encode(resolved(case.judge.params))  # variants that waited: worked out
    _plain(params, where)
    writer.write_json(
        "case.json",
        {
            "function": case.function,
            "name": case.name,
            "points": case.points,
            "requests": len(case.requests),
            "seconds": case.seconds,
            "judge": case.judge.name,
            "params": params,
        },
    )


def stored_functions(folder: Path | str) -> list[str]:
    return json.loads((Path(folder) / "index.json").read_text())


def load_cases(folder: Path | str, function: str) -> list[Case]:
    """One graded name's stored cases, in their original order, their judges ready to run."""
    root = Path(folder) / "cases" / function
    cases = []
    for directory in sorted(p for p in root.iterdir() if p.name.isdigit()):
        reader = Reader(directory, as_tensors=True)
        data = reader.read_json("case.json")
        cases.append(
            Case(
                data["function"],
                data["name"],
                data["points"],
                [None] * data["requests"],
                Judgement(data["judge"], reader.decode(data["params"])),
                data["seconds"],
            )
        )
    return cases


def request_dir(folder: Path, function: str) -> Path:
    return Path(folder) / "requests" / function


__all__ = ["NotStorable", "load_cases", "request_dir", "save_cases", "stored_functions"]
