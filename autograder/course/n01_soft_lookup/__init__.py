"""Notebook 01: a dictionary as a soft lookup (lookup, similarity, percentages, soft_lookup).
See autograder/course/__init__.py for the files' roles."""
