"""Integrity facts: what the grader saw a notebook do that a human may want to look at.

Each is a token, noted inside the sandbox by behaviour (autograder/harness/watch.py, run by the
sandbox's driver before and after the notebook's cells), carried as plain data in the
notebook's status, kept by the parent only when it is one of these tokens
(autograder/sandbox/status.py), and stored in results.json as `notebooks.<stem>.integrity`. The
class page words each as what the grader saw, for a human to check: never an accusation, never
a verdict (the scores are made outside the student's process, where none of this has an
effect). The class page also flags an import or file error naming the model answers in the
student's own cell errors or in a test's message (autograder/report/class_page.py).
"""

INTEGRITY_FACTS = {  # token -> what the grader saw, completing "the grader saw ..."
    "comparison-patched": (
        "numpy's or torch's comparison functions (np.allclose, np.testing, torch.allclose, ...) "
        "replaced in this notebook's kernel"
    ),
    "answers-looked-up": (
        "this notebook's code try to import or open the course's model answers or hidden tests"
    ),
}
