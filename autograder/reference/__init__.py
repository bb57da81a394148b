"""The model answers: every graded name of SPEC.md, one module per notebook.

NumPy for notebooks 01-04, PyTorch for 05-07. The solution notebooks carry these same
definitions, character for character in the AST (tests/test_single_source.py). Notebooks moved to
the one-folder-per-notebook layout (curriculum's Notebook.package: 08 on) keep their answers in
autograder/course/<package>/reference.py; their names are found here too, on first use.
"""

import importlib

from autograder.curriculum import NOTEBOOKS

# The NumPy notebooks' answers are imported now (cheap). The PyTorch ones are imported on first
# use (PEP 562), so that the checks of notebooks 01-04 never pay for importing torch.
from autograder.reference.dot_product_softmax import (
    attend,
    attention_for_token,
    scaled_scores,
    softmax,
)
from autograder.reference.matrix_attention import (
    attention_scores,
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
)
from autograder.reference.multihead_attention import (
    merge_heads,
    mha_shapes,
    multi_head_attention,
    split_heads,
)
from autograder.reference.soft_lookup import lookup, percentages, similarity, soft_lookup

_TORCH_MODULE_OF = {
    name: f"autograder.reference.{nb.reference_module}"
    for nb in NOTEBOOKS
    if nb.framework == "torch" and not nb.package
    for name in nb.graded
}
_TORCH_MODULE_OF |= {"LayerNorm": "autograder.reference.transformer_block"}


# graded name -> the module of its notebook's folder (autograder/course/), for those moved there
_COURSE_MODULE_OF = {
    name: nb.reference_path for nb in NOTEBOOKS if nb.package for name in nb.graded
}


def __getattr__(name):
    if name in _TORCH_MODULE_OF:
        module = importlib.import_module(_TORCH_MODULE_OF[name])
    elif name in _COURSE_MODULE_OF:
        module = importlib.import_module(_COURSE_MODULE_OF[name])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


__all__ = [
    "lookup", "similarity", "percentages", "soft_lookup",
    "softmax", "scaled_scores", "attend", "attention_for_token",
    "attention_scores", "causal_mask", "scaled_dot_product_attention", "self_attention",
    "mha_shapes", "split_heads", "merge_heads", "multi_head_attention",
    *_TORCH_MODULE_OF, *_COURSE_MODULE_OF,
]  # fmt: skip
