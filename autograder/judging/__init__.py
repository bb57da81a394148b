"""Judging: the verdict of a hidden-test case, from the student's plain answers and plain data.

The hidden tests have two halves. A probe (autograder/probes/) *builds* a case: it draws the
inputs from a seed and works out, with the model answers and the known-wrong variants, what a
right answer and each typical mistake would return. It stores all of that as plain data in a
Judgement. A *judge* (this package) then decides, from that data and the student's answers
alone, whether the case passes, and if not what went wrong. Judges hold no model answer and
import neither autograder.reference nor the variants, so this package is what the student
handout ships, with the visible cases' data (judging.store): the visible check and the grader
run the same judge on the same kind of data.

    @judge
    def value(responses, *, function, calls, expected, ...):   # raises Fail or returns None
        ...

    case = Case(function, name, points, requests, Judgement("numpy_judges.value", {...}))
"""

import importlib
import re
from dataclasses import dataclass, field

# The modules whose judges a Judgement may name (a stored case names one by "module.function").
JUDGE_MODULES = ("numpy_judges", "block_judges", "lm_judges", "training_judges", "modern_lm")
# A notebook in its own folder (autograder/course/<folder>/, curriculum's Notebook.package) has its
# judges in <folder>/judges.py, registered as "<folder>.<name>", e.g. "n08_real_models.gqa_values".
COURSE_PACKAGE = "autograder.course."
COURSE_FOLDER = re.compile(r"n[0-9]{2}_[a-z0-9_]+")  # a folder's name: n08_real_models

JUDGES = {}


def _registered_module(module):
    """ "numpy_judges" for autograder.judging.numpy_judges; "n08_real_models" for
    autograder.course.n08_real_models.judges."""
    if module.startswith(COURSE_PACKAGE) and module.endswith(".judges"):
        return module[len(COURSE_PACKAGE) : -len(".judges")]
    return module.rsplit(".", 1)[-1]


def judge(function):
    """Register a judge under "<module>.<name>", e.g. "numpy_judges.value"."""
    JUDGES[f"{_registered_module(function.__module__)}.{function.__name__}"] = function
    return function


def resolve(name):
    """The judge registered as `name`, importing its module (one of JUDGE_MODULES, or a course
    folder's judges.py) on first use."""
    if name not in JUDGES:
        module = name.split(".", 1)[0]
        if module in JUDGE_MODULES:
            importlib.import_module(f"autograder.judging.{module}")
        elif COURSE_FOLDER.fullmatch(module):
            try:
                importlib.import_module(f"{COURSE_PACKAGE}{module}.judges")
            except ModuleNotFoundError as exc:
                raise KeyError(f"no judge module {module!r}") from exc
        else:
            raise KeyError(f"no judge module {module!r}")
    return JUDGES[name]


@dataclass
class Judgement:
    """A judge by name plus its plain-data parameters: storable, and callable on responses."""

    name: str
    params: dict = field(default_factory=dict)

    def __call__(self, responses):
        return resolve(self.name)(responses, **self.params)
