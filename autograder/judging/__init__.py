"""Judging: the verdict of a hidden-test case, from the student's plain answers and plain data.

The hidden tests have two halves. A probe (a notebook folder's cases*.py, autograder/course/) *builds* a case: it draws the
inputs from a seed and works out, with the model answers and the known-wrong variants, what a
right answer and each typical mistake would return. It stores all of that as plain data in a
Judgement. A *judge* (this package) then decides, from that data and the student's answers
alone, whether the case passes, and if not what went wrong. Judges hold no model answer and
import neither autograder.course.model_answers nor the variants, so this package is what the student
handout ships, with the visible cases' data (judging.store): the visible check and the grader
run the same judge on the same kind of data.

    @judge
    def value(responses, *, function, calls, expected, ...):   # raises Fail or returns None
        ...

    case = Case(function, name, points, requests, Judgement("numpy_judges.value", {...}))
"""

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

# A notebook's judges live in its folder, autograder/course/<folder>/judges*.py (curriculum's
# Notebook.package), registered as "<folder>.<name>", e.g. "n08_real_models.gqa_values". Judges
# written before that layout keep the names that stored cases (the handout's, results.json's)
# carry: a module listed here registers its judges under the older prefix, and a name with that
# prefix imports every module listed for it.
LEGACY_PREFIXES: dict[str, tuple[str, ...]] = {
    "numpy_judges": (
        "autograder.course.numpy_shared.judges",
        "autograder.course.n01_soft_lookup.judges",
        "autograder.course.n02_dot_product_softmax.judges",
        "autograder.course.n03_matrix_attention.judges",
        "autograder.course.n04_multihead_attention.judges",
    ),
    "block_judges": ("autograder.course.n05_transformer_block.judges",),
    "lm_judges": (
        "autograder.course.n06_autoregressive_lm.judges",
        "autograder.course.n06_autoregressive_lm.judges_gpt",
        "autograder.course.n06_autoregressive_lm.judges_values",
        "autograder.course.n06_autoregressive_lm.judges_generate",
    ),
    "training_judges": (
        "autograder.course.n06_autoregressive_lm.judges_training",
        "autograder.course.n06_autoregressive_lm.judges_train_step",
    ),
    "modern_lm": (
        "autograder.course.n07_modern_lm.judges",
        "autograder.course.n07_modern_lm.judges_regex_bpe",
        "autograder.course.n07_modern_lm.judges_model",
        "autograder.course.n07_modern_lm.judges_generate",
    ),
}
_PREFIX_OF_MODULE = {m: prefix for prefix, ms in LEGACY_PREFIXES.items() for m in ms}
COURSE_PACKAGE = "autograder.course."
COURSE_FOLDER = re.compile(r"n[0-9]{2}_[a-z0-9_]+")  # a folder's name: n08_real_models

JUDGES: dict[str, Callable[..., None]] = {}
_Judge = TypeVar("_Judge", bound=Callable[..., None])


def _registered_module(module: str) -> str:
    """The prefix of the judges defined in `module`: its older name when LEGACY_PREFIXES lists
    it, else its course folder ("n08_real_models" for autograder.course.n08_real_models.judges)."""
    if module in _PREFIX_OF_MODULE:
        return _PREFIX_OF_MODULE[module]
    if module.startswith(COURSE_PACKAGE):
        folder, _, leaf = module[len(COURSE_PACKAGE) :].partition(".")
        if COURSE_FOLDER.fullmatch(folder) and leaf.startswith("judges"):
            return folder
    return module.rsplit(".", 1)[-1]  # a judge written elsewhere (a test's own)


def judge(function: _Judge) -> _Judge:
    """Register a judge under "<prefix>.<name>", e.g. "numpy_judges.value"."""
    JUDGES[f"{_registered_module(function.__module__)}.{function.__name__}"] = function
    return function


def resolve(name: str) -> Callable[..., None]:
    """The judge registered as `name`, importing its module(s) on first use."""
    if name not in JUDGES:
        prefix = name.split(".", 1)[0]
        if prefix in LEGACY_PREFIXES:
            for module in LEGACY_PREFIXES[prefix]:
                importlib.import_module(module)
        elif COURSE_FOLDER.fullmatch(prefix):
            try:
                importlib.import_module(f"{COURSE_PACKAGE}{prefix}.judges")
            except ModuleNotFoundError as exc:
                raise KeyError(f"no judge module {prefix!r}") from exc
        else:
            raise KeyError(f"no judge module {prefix!r}")
    if name not in JUDGES:
        raise KeyError(f"no judge {name!r}")
    return JUDGES[name]


@dataclass
class Judgement:
    """A judge by name plus its plain-data parameters: storable, and callable on responses."""

    name: str
    params: dict = field(default_factory=dict)

    def __call__(self, responses: Sequence[object]) -> None:
        return resolve(self.name)(responses, **self.params)
