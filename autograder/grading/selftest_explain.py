"""The self-test's words (grading/selftest.py): the one line naming the sandbox in use, and the
refusal when the solutions do not score full marks or a blank submission scores: what scored
what, what the sandbox said, which notebooks lost points and why, the end of its log.

    describe(sandbox)                  # "sandbox: bubblewrap 0.8.0 at /usr/bin/bwrap, ..."
    explain(sandbox, results, logs)    # SelfTestFailed's message
"""

import platform
import sys
from typing import Any

from autograder.safe_files import printable
from autograder.sandbox import Sandbox

SKIP_ENV = "AUTOGRADER_SKIP_SELFTEST"  # named in the way out (autograder/switches.py parses it)


def _scored(payload):
    """The score as "88.5 / 88.5", or why it was not graded (each distinct reason once: SandboxFailure
    says "stem: reason; stem: reason; ...")."""
    if payload.get("not_graded"):
        kind, _, text = payload["not_graded"].partition(": ")
        reasons = dict.fromkeys(part.split(": ", 1)[-1] for part in text.split("; "))
        return f"nothing (not graded, {kind}: {'; '.join(reasons)[:300]})"
    return f"{payload['score']:g} / {payload['max_score']:g}"


def describe(sandbox: Sandbox) -> str:
    """One line: the sandbox this grader uses here."""
    if sandbox.mode != "bwrap":
        return f"sandbox: {type(sandbox).__name__} without bubblewrap (mode {sandbox.mode})"
    features = getattr(sandbox, "features", None)
    name = features.name() if features else "bubblewrap"
    return (
        f"sandbox: {name} at {sandbox.bwrap}, identity {getattr(sandbox, 'identity', '?')}, "
        f"Python {platform.python_version()} at {sys.executable}"
    )


def _why(results, stem, info):
    """The first reason a notebook of the solutions lost points: a message about the whole
    notebook, else its first cell error, else its first failing test's output."""
    if info.get("messages"):
        return printable(info["messages"][0])[:300]
    if info.get("cell_errors"):
        err = info["cell_errors"][0]
        return f"cell {err['cell'] + 1} raised {err['type']}: {printable(err['message'])[:200]}"
    for test in results.get("tests", []):
        if test.get("notebook") == stem and test["score"] < test["max_score"]:
            return f"test {test['name']}: {printable(test.get('output', ''))[:200]}"
    return "points lost"


def explain(sandbox: Sandbox, results: dict[str, Any], logs: dict[str, str]) -> str:
    """The refusal: what scored what, and every clue to the cause we have."""
    solved = results["solutions"]
    blank = results["blank"]
    lines = [
        "the grader's self-test failed, so it will not grade: in this environment its own "
        f"sandbox gave the course's solutions {_scored(solved)} (full marks expected) and a "
        f"blank submission {_scored(blank)} (0 expected).",
        describe(sandbox),
    ]
    said = [
        line.strip()
        for text in logs.values()
        for line in text.splitlines()
        if line.lstrip().startswith(("bwrap:", "driver:"))
    ]
    features = getattr(sandbox, "features", None)
    for line in dict.fromkeys(said):  # each once, in order
        who = features.name() if features and line.startswith("bwrap:") else "the sandbox"
        lines.append(f"cause: {who} said: {printable(line)[:300]}")
    lost: dict[
        str, tuple[str, str]
    ] = {}  # notebook of the solutions below full marks -> (score, why)
    for stem, info in solved.get("notebooks", {}).items():
        if info.get("score", 0) < info.get("max_score", 0):
            lost[stem] = (
                f"{info.get('score', 0):g} / {info.get('max_score', 0):g}",
                _why(solved, stem, info),
            )
    if len(lost) > 1 and len({why for _, why in lost.values()}) == 1:
        lines.append(
            f"  solutions, every notebook short of full marks: {next(iter(lost.values()))[1]}"
        )
    else:
        lines += [f"  solutions, {stem}: {score}: {why}" for stem, (score, why) in lost.items()]
    for stem, info in blank.get("notebooks", {}).items():
        if info.get("score", 0) > 0:
            lines.append(
                f"  blank, {stem}: {info['score']:g} (a blank notebook must not score: a judge "
                "or the released notebook is wrong)"
            )
    tail = [line for line in logs.get("solutions", "").splitlines() if line.strip()][-12:]
    if tail:
        lines.append("the end of the sandbox's log for the solutions:")
        lines += [f"  | {printable(line)[:200]}" for line in tail]
    lines.append(
        "Fix the cause, then check with `python -m autograder selftest`. In an emergency only, "
        f"{SKIP_ENV}=1 (or `grade --skip-selftest`) grades without this check."
    )
    return "\n".join(lines)
