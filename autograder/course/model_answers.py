"""The model answers: every graded name of SPEC.md, one module per notebook.

NumPy for notebooks 01-04, PyTorch for 05-07. The solution notebooks carry these same
definitions, character for character in the AST (tests/architecture/test_single_source.py). Notebooks moved to
the one-folder-per-notebook layout (curriculum's Notebook.package: every graded one) keep their answers in
autograder/course/<package>/reference.py; their names are found here too, on first use.
"""

import importlib

from autograder.curriculum import NOTEBOOKS

# Every answer is imported on first use (PEP 562), from its notebook's module: the checks of
# notebooks 01-04 never pay for importing torch.

# graded name -> the reference.py of its notebook's folder
_COURSE_MODULE_OF = {name: nb.reference_path for nb in NOTEBOOKS for name in nb.graded}
_COURSE_MODULE_OF |= {"LayerNorm": "autograder.course.n05_transformer_block.reference"}


def __getattr__(name):
    if name in _COURSE_MODULE_OF:
        module = importlib.import_module(_COURSE_MODULE_OF[name])
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


__all__ = [
    *_COURSE_MODULE_OF,
]  # fmt: skip
