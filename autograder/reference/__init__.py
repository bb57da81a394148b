"""The model answers: every graded name of SPEC.md, one module per notebook.

NumPy for notebooks 01-04, PyTorch for 05-06. The solution notebooks carry these same
definitions, character for character in the AST (tests/test_single_source.py).
"""

from autograder.reference.autoregressive_lm import (
    GPT,
    CharTokenizer,
    generate,
    get_batch,
    lm_loss,
    make_examples,
)
from autograder.reference.dot_product_softmax import (
    attend,
    attention_for_token,
    scaled_scores,
    softmax,
)
from autograder.reference.matrix_attention import (
    attention_scores,
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
)
from autograder.reference.multihead_attention import (
    merge_heads,
    mha_shapes,
    multi_head_attention,
    split_heads,
)
from autograder.reference.soft_lookup import lookup, percentages, similarity, soft_lookup
from autograder.reference.transformer_block import (
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    TransformerBlock,
    layer_norm,
    sinusoidal_positional_encoding,
)

__all__ = [
    "lookup", "similarity", "percentages", "soft_lookup",
    "softmax", "scaled_scores", "attend", "attention_for_token",
    "attention_scores", "causal_mask", "scaled_dot_product_attention", "self_attention",
    "mha_shapes", "split_heads", "merge_heads", "multi_head_attention",
    "layer_norm", "sinusoidal_positional_encoding", "LayerNorm", "MultiHeadAttention",
    "FeedForward", "TransformerBlock",
    "make_examples", "CharTokenizer", "get_batch", "GPT", "lm_loss", "generate",
]  # fmt: skip
