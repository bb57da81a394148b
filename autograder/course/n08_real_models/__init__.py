"""Notebook 08: your model meets a real one (grouped-query attention, a published checkpoint's
weights, the memory a cache needs). See autograder/course/__init__.py for the files' roles."""
