"""An open course on attention and transformers: reference answers, checks and the grader.

Importing the package changes nothing in the importing process (a student's kernel imports it
for the visible checks): the grader's own import shortcuts live in autograder/format_checkers.py.
"""

__version__ = (
    "0.2.0"  # pyproject.toml and CHANGELOG.md's latest release (tests/architecture/test_version.py)
)
