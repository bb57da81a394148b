"""Later notebooks use the student's own answers from earlier ones; when an earlier notebook
cannot be used, their tests say so ("your notebook 02 is missing"), not "not implemented".

    names = unavailable_names("04_multihead_attention", {"02_dot_product_softmax": MISSING_NOTEBOOK})
    name = culprit(responses, names)        # the earlier name a failing case tripped over, or None
    text = dependency_message("scaled_dot_product_attention", name, names[name])

IMPORTS is the course's import cells (`coursedata.import_earlier` and `import_definitions` in
the notebooks; tests/judging/test_dependencies.py reads them from solutions/ and compares). Where the
earlier notebook is missing, misnamed or unreadable, the name is a placeholder raising
NotImplementedError (import_earlier) or is not defined at all (import_definitions): a case that
fails with either, raised by such a name, is that notebook's doing. Both are read from the
harness's structured error (`where`: the innermost frame's function; `name`: a NameError's
name), never from a message's text.

The grader knows which notebooks are unavailable from its plans (grading/student.py); the
visible checks in the student's kernel from the placeholders and the files next to the notebook
(autograder/checks.py, kernel_unavailable).
"""

import types
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass

from autograder.curriculum import BY_STEM
from autograder.results import CORRUPT, MISNAMED, MISSING_NOTEBOOK

# notebook -> {earlier notebook: the names its import cell takes from it}
IMPORTS: dict[str, dict[str, tuple[str, ...]]] = {
    "03_matrix_attention": {"02_dot_product_softmax": ("softmax", "attention_for_token")},
    "04_multihead_attention": {
        "02_dot_product_softmax": ("softmax",),
        "03_matrix_attention": ("causal_mask", "scaled_dot_product_attention"),
    },
    "05_transformer_block": {
        "02_dot_product_softmax": ("softmax",),
        "04_multihead_attention": ("split_heads", "merge_heads"),
    },
    "06_autoregressive_lm": {
        "05_transformer_block": (
            "LayerNorm", "TransformerBlock", "MultiHeadAttention", "FeedForward", "layer_norm",
        ),
    },
    "07_modern_lm": {
        "05_transformer_block": (
            "layer_norm", "LayerNorm", "MultiHeadAttention", "FeedForward", "TransformerBlock",
        ),
        "06_autoregressive_lm": ("GPT",),
    },
    "08_real_models": {
        "07_modern_lm": (
            "rms_norm", "RMSNorm", "apply_rope", "SwiGLU", "CausalSelfAttention", "generate_cached",
        ),
    },
}  # fmt: skip
MAX_SEEN = 2_000  # values looked at in one case's answers while looking for an error


@dataclass(frozen=True)
class Unavailable:
    notebook: str  # the earlier notebook's stem
    reason: str  # autograder.results: MISSING_NOTEBOOK, MISNAMED or CORRUPT
    in_kernel: bool = False  # the student's own kernel (the visible checks), not the grader


def unavailable_names(
    stem: str, notebooks: dict[str, str], in_kernel: bool = False
) -> dict[str, Unavailable]:
    """{name: Unavailable} for notebook `stem`: every name its import cell takes from an earlier
    notebook that is in `notebooks` ({stem: reason}). Only the import cell's own notebooks
    count: import_earlier shares the names of one call between its notebooks (04's call gives
    notebook 03's functions 02's softmax), and import_definitions runs no import cell of the
    notebook it reads."""
    return {
        name: Unavailable(earlier, notebooks[earlier], in_kernel)
        for earlier, taken in IMPORTS.get(stem, {}).items()
        if earlier in notebooks
        for name in taken
    }


def _errors(raw: object) -> list[dict]:
    """The harness's error dicts in one answer ("error", "backward_error", and those of an
    object's steps), bounded: answers are the student's bytes, checked only at the top."""
    found, stack, seen = [], [raw], 0
    while stack and seen < MAX_SEEN:
        item = stack.pop()
        seen += 1
        if isinstance(item, list):
            stack.extend(item[:100])
        elif isinstance(item, dict):
            for key, value in list(item.items())[:100]:
                if key in ("error", "backward_error") and isinstance(value, dict):
                    found.append(value)
                elif isinstance(value, list | dict):
                    stack.append(value)
    return found


def _raised_by(error: dict) -> str | None:
    """The name an error is about: the innermost frame of a NotImplementedError (a placeholder
    is a function named like what it stands for), the undefined name of a NameError."""
    kind = error.get("type")
    if kind == "NotImplementedError":
        where = error.get("where")
        if isinstance(where, list) and where and isinstance(where[-1], str):
            return where[-1].split(" in ", 1)[-1]
    if kind == "NameError":
        name = error.get("name")
        return name if isinstance(name, str) else None
    return None


def culprit(responses: Iterable[object], names: Container[str]) -> str | None:
    """The first name of `names` that raised in these responses (judging.base.Response or raw
    dicts), or None."""
    for response in responses:
        raw = getattr(response, "raw", response)
        for error in _errors(raw):
            name = _raised_by(error)
            if name in names:
                return name
    return None


def dependency_message(function: str, name: str, unavailable: Unavailable) -> str:
    """The test's message, in the course's words, for a case of `function` that met `name`
    from an earlier notebook that cannot be used."""
    earlier = BY_STEM[unavailable.notebook]
    number = earlier.stem[:2]
    uses = f"{function} uses your `{name}` from notebook {number}"
    if unavailable.in_kernel:
        if unavailable.reason == CORRUPT:
            return (
                f"Your notebook {number} ({earlier.filename}) could not be read as a notebook, "
                f"and {uses}: open it in Jupyter, save it, then run this notebook's import cell "
                "and this check again."
            )
        return (
            f"Your notebook {number} ({earlier.filename}) is not next to this notebook, and "
            f"{uses}: keep it in the same folder, then run this notebook's import cell and "
            "this check again."
        )
    if unavailable.reason == MISNAMED:
        return (
            f"Your notebook {number} was not graded: which of your files is "
            f"{earlier.filename} was not clear (see notebook {number}). {uses}, so these tests wait for it: "
            f"keep one file named {earlier.filename} and hand it in with this notebook."
        )
    if unavailable.reason == CORRUPT:
        return (
            f"Your notebook {number} ({earlier.filename}) is not a readable notebook (see "
            f"notebook {number}), and {uses}: save it again from Jupyter and hand it in with "
            "this notebook."
        )
    return (
        f"Your notebook {number} ({earlier.filename}) is missing from your submission, and "
        f"{uses}: hand it in together with this notebook."
    )


def kernel_unavailable(
    stem: str, namespace: Mapping[str, object], exists: Callable[[str], bool]
) -> dict[str, Unavailable]:
    """{name: Unavailable} in the student's kernel for notebook `stem`: the earlier notebooks
    its import cell could not use, read from the placeholders import_earlier left in
    `namespace` (their `course_unavailable` mark) and, for names not defined at all
    (import_definitions), from whether the file is there (`exists(filename)`)."""
    notebooks = {}
    for earlier, taken in IMPORTS.get(stem, {}).items():
        for name in taken:
            obj = namespace.get(name)
            is_function = isinstance(obj, types.FunctionType)
            mark = obj.__dict__.get("course_unavailable") if is_function else None
            if isinstance(mark, dict) and mark.get("why") in ("missing", "unreadable"):
                notebooks[earlier] = MISSING_NOTEBOOK if mark["why"] == "missing" else CORRUPT
            elif obj is None and not exists(BY_STEM[earlier].filename):
                notebooks[earlier] = MISSING_NOTEBOOK
    return unavailable_names(stem, notebooks, in_kernel=True)
