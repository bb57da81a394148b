"""The course's code, one folder per notebook (the layout the course is moving to).

Each folder `nNN_<name>/` holds one notebook's code:
  reference.py  the model answers (SPEC's graded names; the solution notebook carries the same
                definitions, tests/architecture/test_single_source.py)
  cases.py      the probes that build its hidden-test cases (autograder.course.probes.load imports it)
  judges.py     its judges, registered as "<folder>.<judge>" (autograder.judging.resolve), or under
                the older prefix judging.LEGACY_PREFIXES lists for it ("numpy_judges.<judge>",
                "lm_judges.<judge>", ...); the only files of the folder the student handout ships
                are judges*.py: they import no reference, cases or variants module (of any
                folder) and run no model answer
  variants.py   its known-wrong variants, each named by a misconception id

A file over ~400 lines is split by topic into <kind>_<topic>.py siblings (n06's cases_gpt.py,
judges_training.py, variants_training.py, ...); cases.py imports its siblings, so that importing
it registers every probe of the notebook. What the NumPy notebooks 01-04 share is in
numpy_shared/ (its judges*.py and signatures.py ship in the handout; its cases.py and variants.py
never do); what the PyTorch notebooks 05-08 share is in torch_shared/: tools.py (building cases)
and checks*.py (judging them, shipped with the judges).

curriculum.Notebook.package names the folder of every graded notebook.
"""
