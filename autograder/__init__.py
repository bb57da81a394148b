"""An open course on attention and transformers: reference answers, checks and the grader."""

__version__ = "0.1.0"
