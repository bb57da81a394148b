"""The course's code, one folder per notebook (the layout the course is moving to).

Each folder `nNN_<name>/` holds one notebook's code:
  reference.py  the model answers (SPEC's graded names; the solution notebook carries the same
                definitions, tests/test_single_source.py)
  cases.py      the probes that build its hidden-test cases (autograder.probes.load imports it)
  judges.py     its judges, registered as "<folder>.<judge>" (autograder.judging.resolve); the only
                file of the folder the student handout ships: it imports none of the others
  variants.py   its known-wrong variants, each named by a misconception id

curriculum.Notebook.package names the folder; notebooks 01-07 still live in the older layout
(autograder/reference, probes, judging, misconceptions).
"""
