"""Notebook 03: attention in matrix form (attention_scores, causal_mask,
scaled_dot_product_attention, self_attention). See autograder/course/__init__.py for the files'
roles."""
