"""jsonschema imported once without its optional format checkers, for the grading parent only.

    skip_format_checkers()      # in `python -m autograder` before nbformat is used

nbformat imports jsonschema, whose optional format checkers import rfc3987_syntax, which
compiles a grammar at import time: about 2.5 CPU-seconds per grading run, for format checks that
notebook validation never uses. jsonschema skips a checker whose import fails, so these modules
are blocked while jsonschema is imported, and unblocked right after: nothing else in the process
sees the block. Importing the package (`from autograder.checks import check` in a student's
notebook) does none of this, so a student's `import webcolors` works (tests/checks/test_student_kernel.py).
The sandbox's driver blocks the same modules for itself (sandbox/inside/driver.py).
"""

import sys

OPTIONAL = ("rfc3987_syntax", "isoduration", "arrow", "fqdn", "uri_template", "webcolors")


def skip_format_checkers() -> None:
    """Import jsonschema (if installed) with OPTIONAL blocked, then unblock them."""
    if "jsonschema" in sys.modules:
        return
    blocked = [name for name in OPTIONAL if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # None blocks an import
    try:
        import jsonschema  # noqa: F401 - imported now, its format checkers skipped
    except ImportError:
        pass
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


def pytest_addoption(parser: object) -> None:
    """The test run is a grading parent too: pyproject.toml's addopts load this module as a pytest
    plugin (`-p autograder.format_checkers`) before the installed plugins, and nbval imports
    nbformat, so jsonschema, as it loads; pytest calls this hook as soon as the module is loaded.
    It adds no option."""
    skip_format_checkers()
