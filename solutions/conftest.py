"""`pytest --nbval-lax solutions/`: nbval runs every solution notebook top to bottom (a cell that
raises fails) and compares the outputs stored in the cells tagged `nbval-check-output` (those that
print the lectures' numbers) with fresh ones.

The kernels nbval starts inherit this process's environment: NBGRADER_EXECUTION is set, as the
grader sets it, so the notebooks' demos take their short budgets (notebook 06 trains for seconds,
not minutes). The stored outputs are refreshed with `python tests/course/test_nbval.py --store`.
"""

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.path.suffix == ".ipynb":  # an nbval cell: its notebook's kernel starts now
        os.environ.setdefault("NBGRADER_EXECUTION", "autograde")
