"""Notebook 04: multi-head attention, heads and shapes (mha_shapes, split_heads, merge_heads,
multi_head_attention). See autograder/course/__init__.py for the files' roles."""
