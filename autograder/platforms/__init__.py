"""The course inside other graders' platforms: nbgrader (nbgrader.py) and Gradescope
(gradescope.py). Either way every verdict is `python -m autograder grade`'s: student code runs
only in the sandbox, and the scores the platform shows are written from our results."""
