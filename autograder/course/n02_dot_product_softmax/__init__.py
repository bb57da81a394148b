"""Notebook 02: dot products and softmax, one query at a time (softmax, scaled_scores, attend,
attention_for_token). See autograder/course/__init__.py for the files' roles."""
