"""The code that runs INSIDE the sandbox, copied there on its own: driver.py (runs the notebooks
and the harness's serve cells) and zygote.py (warm kernels). Neither imports the grader: what
they need comes in job.json (Limits' budgets in job["times"], the warm switch, the skip plans),
and the few constants they keep a copy of (the integrity tokens, the cgroup CPU reader, the
budgets' defaults) are pinned to their originals by tests/sandbox/test_inside_constants.py.
This __init__ is never copied into the sandbox."""
