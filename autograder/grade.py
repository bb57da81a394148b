"""The grading job's old address, kept for what imports it (platforms/nbgrader.py): the code
lives in autograder/grading/ (its __init__ lists the steps). New code imports from there."""

from autograder.grading.classrun import grade_class
from autograder.grading.command import grade_command
from autograder.grading.payload import build_results
from autograder.grading.settings import (
    DEFAULT_SECRET,
    Settings,
    limits_from_args,
    settings_from_args,
)
from autograder.grading.student import StudentResult, grade_student, output_folder

__all__ = [
    "DEFAULT_SECRET",
    "Settings",
    "StudentResult",
    "build_results",
    "grade_class",
    "grade_command",
    "grade_student",
    "limits_from_args",
    "output_folder",
    "settings_from_args",
]
