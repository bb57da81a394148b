"""The course's code, one folder per notebook (the layout the course is moving to).

Each folder `nNN_<name>/` holds one notebook's code:
  reference.py  the model answers (SPEC's graded names; the solution notebook carries the same
                definitions, tests/test_single_source.py)
  cases.py      the probes that build its hidden-test cases (autograder.probes.load imports it)
  judges.py     its judges, registered as "<folder>.<judge>" (autograder.judging.resolve), or
                under an older name that stored cases carry (judging.LEGACY_PREFIXES: 01-04's
                are "numpy_judges.<judge>"); with the judges_<topic>.py it may import, the only
                files of the folder the student handout ships: they import none of the others
  variants.py   its known-wrong variants, each named by a misconception id

A file over ~400 lines is split by topic into <kind>_<topic>.py siblings. What the NumPy
notebooks 01-04 share is in numpy_shared/ (its judges*.py and signatures.py ship in the handout;
its cases.py and variants.py never do).

curriculum.Notebook.package names the folder; notebooks 05-07 still live in the older layout
(autograder/reference, probes, judging, misconceptions).
"""
