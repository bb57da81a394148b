"""The model answers: every graded name of SPEC.md, found in its notebook's folder.

Each graded notebook keeps its answers in autograder/course/<Notebook.package>/reference.py, NumPy
for notebooks 01-04 and PyTorch from 05 on. The solution notebooks carry these same definitions,
character for character in the AST (tests/architecture/test_single_source.py).
"""

import importlib

from autograder.curriculum import BY_STEM, NOTEBOOKS

# Every answer is imported on first use (PEP 562), from its notebook's module: the checks of
# notebooks 01-04 never pay for importing torch.

# graded name -> the reference.py of its notebook's folder; notebook 05's given LayerNorm too
_MODULE_OF = {name: nb.reference_path for nb in NOTEBOOKS for name in nb.graded}
_MODULE_OF["LayerNorm"] = BY_STEM["05_transformer_block"].reference_path


def __getattr__(name):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)


__all__ = list(_MODULE_OF)
