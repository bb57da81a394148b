"""Runs INSIDE the student's kernel: notes what a human may want to look at, decides nothing.

    install()   # before the notebook's first cell (the sandbox's driver runs it)
    facts()     # after its last cell: a JSON list of tokens of autograder/integrity.py

Two things are noted, by behaviour, never by reading the notebook's source:
- "comparison-patched": after the notebook's cells, one of numpy's or torch's comparison
  functions (np.allclose, np.testing.assert_allclose, torch.allclose, ...) is no longer the
  function it was before them (for torch, imported by the notebook itself: no longer torch's);
- "answers-looked-up": the notebook tried to import the course's model answers, hidden tests or
  known-wrong variants (autograder.course.model_answers, .probes, or a notebook folder's
  reference, cases*, variants* or tools modules) or to open, list or glob a path of theirs
  (the same files under autograder/course/, solutions/), seen by an audit hook (PEP 578).

Neither changes a verdict: the verdicts are made outside this process, where none of this has
any effect. Code in the notebook can defeat both (an audit hook lives in its own process); the
facts are hints for a human, worded as such on the class page. The hook never raises: an error
inside it would reach the student's own call.
"""

import json
import os
import re
import sys

COMPARISONS = {
    "numpy": (
        "allclose",
        "isclose",
        "array_equal",
        "array_equiv",
        "testing.assert_allclose",
        "testing.assert_array_equal",
        "testing.assert_array_almost_equal",
        "testing.assert_almost_equal",
        "testing.assert_equal",
    ),
    "torch": ("allclose", "isclose", "equal", "testing.assert_close"),
}
# what holds an answer: the index and the case registry, and in each folder of autograder/course/
# its reference, its cases (cases.py, cases_<topic>.py; tools.py builds them) and its variants
ANSWER_FILES = r"(model_answers|probes|[a-z0-9_]+[./](reference|cases(_[a-z0-9_]+)?|variants(_[a-z0-9_]+)?|tools))"
ANSWER_MODULE = re.compile(rf"autograder\.course\.{ANSWER_FILES}(\.|$)")
ANSWER_PATH = re.compile(rf"autograder/course/{ANSWER_FILES}(\.py|/|$)")
ANSWER_PATHS = ("solutions/",)
PATH_EVENTS = {"open", "os.listdir", "os.scandir", "glob.glob", "os.stat", "os.walk"}

_seen: set[str] = set()
_originals: dict[
    tuple[str, str], object
] = {}  # (module, dotted name) -> the object before the notebook ran


def _resolve(module: str, dotted: str) -> object:
    obj = sys.modules.get(module)
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _hook(event: str, args: tuple) -> None:
    try:
        if event == "import":
            name = args[0] if args else None
            if isinstance(name, str) and ANSWER_MODULE.match(name):
                _seen.add("answers-looked-up")
        elif event in PATH_EVENTS and args:
            path = args[0]
            if isinstance(path, int) or path is None:
                return
            text = os.fsdecode(path).replace("\\", "/")
            if (
                ANSWER_PATH.search(text)
                or any(marker in text for marker in ANSWER_PATHS)
                or text.rstrip("/").endswith("/solutions")
            ):
                _seen.add("answers-looked-up")
    except Exception:  # noqa: BLE001, S110 - never disturb the student's own call
        pass


def install() -> None:
    for module, names in COMPARISONS.items():
        if module in sys.modules:
            for dotted in names:
                found = _resolve(module, dotted)
                if found is not None:
                    _originals[(module, dotted)] = found
    sys.addaudithook(_hook)


def facts() -> str:
    seen = set(_seen)
    for module, names in COMPARISONS.items():
        if module not in sys.modules:
            continue
        for dotted in names:
            now = _resolve(module, dotted)
            before = _originals.get((module, dotted))
            if before is not None:
                changed = now is not before
            else:  # imported by the notebook: is it still the library's own function?
                changed = now is not None and not str(getattr(now, "__module__", "")).startswith(
                    module
                )
            if changed:
                seen.add("comparison-patched")
    return json.dumps(sorted(seen))
