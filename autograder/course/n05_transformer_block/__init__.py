"""Notebook 05: the transformer block (layer norm, positional encoding, multi-head attention,
feed-forward, the block). See autograder/course/__init__.py for the files' roles."""
