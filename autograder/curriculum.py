"""The course in one registry: the notebooks, their graded names, and the points of each.

Everything that needs to know "which notebook holds which graded name" reads it from here:
the release step, the single-source test, the grader's probes and the reports.

OPTIONAL holds the notebooks handed out but never graded (no graded names, no probes): the
release and the handout ship them, each right after the notebook it follows; the grader, the
reports and the points never see them.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Notebook:
    stem: str  # file name without .ipynb, e.g. "03_matrix_attention"
    title: str
    framework: str  # "numpy" or "torch"
    graded: tuple[str, ...]  # SPEC's graded names, in the order the notebook teaches them
    # The folder of autograder/course/ holding all of its code (reference, cases, judges,
    # variants): "n03_matrix_attention"; "" for an optional notebook, which has none
    package: str = ""

    @property
    def filename(self) -> str:
        return f"{self.stem}.ipynb"

    @property
    def reference_path(self) -> str:
        """The module holding its model answers."""
        return f"autograder.course.{self.package}.reference"

    @property
    def cases_path(self) -> str:
        """The module whose import registers its probes (the hidden tests' cases)."""
        return f"autograder.course.{self.package}.cases"


NOTEBOOKS = (
    Notebook(
        "01_soft_lookup",
        "A dictionary as a soft lookup",
        "numpy",
        ("lookup", "similarity", "percentages", "soft_lookup"),
        package="n01_soft_lookup",
    ),
    Notebook(
        "02_dot_product_softmax",
        "Dot products and softmax, one query at a time",
        "numpy",
        ("softmax", "scaled_scores", "attend", "attention_for_token"),
        package="n02_dot_product_softmax",
    ),
    Notebook(
        "03_matrix_attention",
        "Attention in matrix form",
        "numpy",
        ("attention_scores", "causal_mask", "scaled_dot_product_attention", "self_attention"),
        package="n03_matrix_attention",
    ),
    Notebook(
        "04_multihead_attention",
        "Multi-head attention: heads and shapes",
        "numpy",
        ("mha_shapes", "split_heads", "merge_heads", "multi_head_attention"),
        package="n04_multihead_attention",
    ),
    Notebook(
        "05_transformer_block",
        "The transformer block (PyTorch)",
        "torch",
        (
            "sinusoidal_positional_encoding",
            "layer_norm",
            "MultiHeadAttention",
            "FeedForward",
            "TransformerBlock",
        ),
        package="n05_transformer_block",
    ),
    Notebook(
        "06_autoregressive_lm",
        "Training an auto-regressive language model (PyTorch)",
        "torch",
        (
            "make_examples",
            "CharTokenizer",
            "get_batch",
            "GPT",
            "lm_loss",
            "lr_at",
            "configure_optimizer",
            "train_step",
            "generate",
        ),
        package="n06_autoregressive_lm",
    ),
    Notebook(
        "07_modern_lm",
        "From GPT-2 to today's small language models (PyTorch)",
        "torch",
        (
            "BPETokenizer",
            "RegexBPETokenizer",
            "rms_norm",
            "apply_rope",
            "SwiGLU",
            "CausalSelfAttention",
            "TinyLlama",
            "generate_cached",
        ),
        package="n07_modern_lm",
    ),
    Notebook(
        "08_real_models",
        "Your model meets a real one (PyTorch)",
        "torch",
        ("GroupedQueryAttention", "Llama", "load_hf_llama", "kv_cache_bytes"),
        package="n08_real_models",
    ),
)

BY_STEM = {nb.stem: nb for nb in NOTEBOOKS}
NOTEBOOK_OF = {name: nb for nb in NOTEBOOKS for name in nb.graded}
GRADED_NAMES = tuple(NOTEBOOK_OF)


OPTIONAL = (
    Notebook(
        "05b_encoder_decoder",
        "Encoder, decoder, and before transformers (optional, not graded)",
        "torch",
        (),
    ),
    Notebook(
        "06b_inside_the_lm",
        "Inside the language model (optional, not graded)",
        "torch",
        (),
    ),
)
FOLLOWS = {  # optional stem -> the one it follows
    "05b_encoder_decoder": "05_transformer_block",
    "06b_inside_the_lm": "06_autoregressive_lm",
}


def handed_out(
    notebooks: tuple[Notebook, ...] = NOTEBOOKS,
) -> tuple[Notebook, ...]:
    """The notebooks a student receives with `notebooks`: each optional one right after the
    graded notebook it follows, when that one is among them."""
    out = []
    for nb in notebooks:
        out.append(nb)
        out += [extra for extra in OPTIONAL if FOLLOWS[extra.stem] == nb.stem]
    return tuple(out)
