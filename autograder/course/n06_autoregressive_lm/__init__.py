"""Notebook 06: an auto-regressive language model (its data, the GPT, the loss, training,
generation). See autograder/course/__init__.py for the files' roles."""
