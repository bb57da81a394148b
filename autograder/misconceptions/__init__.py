"""The misconception catalogue: SPEC's ids, what each means, and the hint a student gets.

Each id is recognised by behaviour, never by reading source: variants.py modules hold known-wrong
implementations computed in the trusted parent; a student's output that matches one (and not the
reference) names that misconception. See numpy_variants.py (notebooks 01-04) and
torch_variants.py (05-06).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str
    mistake: str  # what the student probably did
    hint: str  # what to revisit, without giving the answer away


_ENTRIES = [
    ("softmax-unstable", "exponentiating without subtracting the maximum first",
     "exp overflows for large scores; softmax is unchanged if you subtract a constant from every score."),
    ("softmax-wrong-axis", "normalising along the wrong axis",
     "each row of weights (one per query) should sum to 1: which axis holds the keys?"),
    ("missing-scale", "not dividing the scores by sqrt(d_k)",
     "the variance of q.k grows with d_k; the scores are scaled to keep the softmax from saturating."),
    ("wrong-scale", "scaling by something other than sqrt(d_k)",
     "check what you divide by: d_k, sqrt(d), sqrt(n) and sqrt(d_k) are different numbers."),
    ("transposed-scores", "computing K Q^T instead of Q K^T",
     "row i of the scores should belong to query i: check the order of the product."),
    ("softmax-over-queries", "normalising each column (over queries) instead of each row",
     "each query distributes its attention over the keys, so the softmax runs over the key axis."),
    ("mask-inverted", "blocking the positions that should be visible, and the reverse",
     "True in the mask means 'may attend'; blocked scores become -inf before the softmax."),
    ("mask-after-softmax", "masking the weights after the softmax",
     "masked weights set to 0 after the softmax leave rows that no longer sum to 1: mask the scores."),
    ("mask-off-by-one", "a causal mask shifted by one diagonal",
     "token i may attend to itself and to every earlier token: check the diagonal."),
    ("heads-reshape-without-transpose", "reshaping (n, H*d_k) straight to (H, n, d_k)",
     "a reshape keeps memory order; the heads are column blocks, so reshape to (n, H, d_k) first."),
    ("missing-output-projection", "concatenating the heads without the output projection W_o",
     "after the heads are laid side by side, W_o mixes them back to width d."),
    ("heads-averaged", "averaging the heads instead of concatenating them",
     "the heads' outputs are laid side by side (width H*d_k), not averaged."),
    ("layernorm-unbiased-variance", "the unbiased variance (dividing by d - 1)",
     "layer norm uses the population variance: divide by d."),
    ("layernorm-wrong-axis", "normalising over the wrong axis",
     "each token is normalised over its own d features: the last axis."),
    ("layernorm-eps-outside-sqrt", "adding eps after the square root",
     "eps goes inside the square root: sqrt(var + eps)."),
    ("missing-residual", "a sub-layer without its residual connection",
     "each sub-layer's output is added back to its input: x + sublayer(...)."),
    ("norm-order-swapped", "pre-norm and post-norm swapped",
     "pre-norm normalises the sub-layer's input; post-norm normalises the sum x + sublayer(x)."),
    ("missing-activation", "no non-linearity between the two linear layers",
     "two linear layers without an activation between them are just one linear layer."),
    ("pe-sin-cos-swapped", "cos on the even columns and sin on the odd ones",
     "even columns 2i hold sin, odd columns 2i+1 hold cos."),
    ("pe-wrong-exponent", "the wrong frequency exponent",
     "the angle is k / base^(2i/d_model), where 2i is the even column index."),
    ("pe-not-interleaved", "all the sines first, then all the cosines",
     "the exercise's formula alternates sin and cos column by column: sin, cos, sin, cos, ... "
     "(all sines then all cosines is a valid layout in some libraries, the same encoding up to a "
     "fixed permutation of the features, but not the formula this exercise asks for)."),
    ("targets-not-shifted", "targets equal to the inputs instead of the next tokens",
     "the label of position t is the token at position t + 1."),
    ("loss-sum-reduction", "summing the per-token losses instead of averaging",
     "the loss is the mean over all B*T positions, so it does not grow with the batch."),
    ("loss-double-softmax", "applying softmax before cross-entropy",
     "F.cross_entropy expects raw logits; it applies log-softmax itself."),
    ("no-causal-mask", "no causal mask in the model",
     "a language model must not see the future: position t may only attend to positions <= t."),
    ("generate-no-crop", "feeding the whole sequence to the model while generating",
     "the model only knows block_size positions: crop the context to the last block_size tokens."),
    ("temperature-multiplied", "multiplying the logits by the temperature",
     "a higher temperature should flatten the distribution: divide the logits by it."),
]  # fmt: skip

CATALOGUE = {id_: Misconception(id_, mistake, hint) for id_, mistake, hint in _ENTRIES}


def describe(id_):
    """'mistake: hint' for one id, for the feedback pages."""
    m = CATALOGUE[id_]
    return f"{m.mistake}: {m.hint}"


# Ids recognised by the NumPy probes (notebooks 01-04) beyond SPEC's list.
_NUMPY_ENTRIES = [
    ("unknown-key-answered", "answering an unknown key with a value (None, a default) instead of raising KeyError",
     "a dictionary raises KeyError for a key it does not hold: index it, table[query], rather than "
     "table.get(query) or a loop that returns None."),
    ("unknown-key-wrong-error", "raising another exception than KeyError for an unknown key",
     "an unknown key raises KeyError, as a dictionary does: table[query] raises it for you."),
    ("unknown-key-unnamed", "a KeyError whose message does not name the key",
     "let the dictionary raise (table[query] raises KeyError(query)), or raise KeyError(query) yourself."),
    ("products-not-summed", "multiplying the query and each key entry by entry without adding up",
     "a dot product adds up the entry-by-entry products: one number per key, shape (m,)."),
    ("cosine-instead-of-dot", "normalising the vectors (cosine similarity) instead of the plain dot product",
     "the similarity here is the dot product query . key, lengths included."),
    ("similarity-scaled", "dividing notebook 01's similarity by sqrt(d)",
     "notebook 01's scores are the plain dot products; the division by sqrt(d_k) comes in notebook 02."),
    ("normalised-without-exp", "dividing the scores by their sum without exponentiating",
     "exponentiate first: exp makes every weight positive, then divide by the sum of the exps."),
    ("percent-not-fraction", "weights out of 100 instead of fractions summing to 1",
     "'percentages' here are fractions: 0.8, not 80. Do not multiply by 100."),
    ("softmax-missing-keepdims", "a max or sum along an axis without keepdims=True",
     "np.sum(e, axis=axis) drops that axis, so it no longer lines up with e: pass keepdims=True."),
    ("causal-flag-ignored", "looking at tokens 0..i only, even when causal=False",
     "with causal=False, token i looks at all n tokens, the later ones included."),
    ("softmax-global-max", "subtracting the maximum of the whole array instead of each row's own",
     "a row far below the array's maximum has every exp underflow to 0, and 0/0 is NaN: "
     "subtract each row's own maximum (np.max along the axis, keepdims=True)."),
    ("token-sees-later-tokens", "letting token i look at the tokens after it",
     "by default token i looks only at itself and the tokens before it: tokens 0..i."),
    ("token-range-off-by-one", "looking at one token too few or too many (0..i-1 or 0..i+1)",
     "token i looks at tokens 0..i, itself included: i + 1 tokens in all."),
    ("token-range-reversed", "looking at token i and the tokens after it instead of those before",
     "token i looks back, at itself and the tokens before it (0..i), never ahead."),
    ("batch-dims-unsupported", "code that only works for 2-D inputs (K.T, transpose(1, 0, 2), fixed reshapes)",
     "from notebook 03 on inputs may have leading batch dimensions: index axes from the end, "
     "e.g. np.swapaxes(K, -1, -2) instead of K.T."),
    ("mask-not-boolean", "a mask of 0.0/1.0 floats (or ints) instead of booleans",
     "masks are boolean: True where a query may attend. Use dtype=bool."),
    ("mask-fills-zero", "setting masked scores to 0 (or multiplying them by the mask) instead of -inf",
     "exp(0) = 1, so a score of 0 still gets weight: blocked scores must become -inf before the softmax."),
    ("mask-ignored", "not applying the mask at all",
     "when a mask is given, blocked keys (False) must get weight 0."),
    ("heads-strided-columns", "giving head h every H-th column instead of a block of d_k columns",
     "head h owns the contiguous columns h*d_k .. (h+1)*d_k - 1: reshape to (..., n, H, d_k)."),
    ("shape-not-tuple", "shapes given as lists instead of tuples",
     "a shape is a tuple, as X.shape is: (n, d). A list never equals a tuple, so [n, d] == (n, d) is False."),
    ("list-input-unsupported", "code that works on NumPy arrays only, not on a Python list",
     "the exercise asks for lists too: start with x = np.asarray(x, dtype=float), and compute on that."),
    ("softmax-neginf-weight", "giving -inf entries a weight other than 0 (replacing -inf by 0 or a finite number)",
     "exp(-inf) is 0, so a -inf entry gets weight exactly 0: leave -inf as it is, and subtract the "
     "maximum of the finite entries (np.max ignores -inf unless a whole row is -inf)."),
    ("log-softmax", "returning the logarithm of the weights (the final exp forgotten)",
     "softmax returns the weights themselves, exp(x - max) / sum(exp(x - max)): numbers between 0 "
     "and 1 that sum to 1, not x - max - log(sum(exp(x - max)))."),
    ("heads-count-as-width", "reading n_heads as the width d_k of each head",
     "n_heads is the number of heads H; each head's width is d_k = width // n_heads."),
    ("weights-averaged-over-heads", "returning the attention weights averaged over the heads",
     "A keeps one (n, n) table per head: shape (..., H, n, n). Only the outputs are combined "
     "(laid side by side, then W_o)."),
    ("weights-of-one-head", "returning the attention weights of one head only",
     "A keeps every head's table, stacked along a head axis: shape (..., H, n, n)."),
    ("earlier-exercise-wrong", "an earlier exercise's function that is wrong on the inputs this one hands it",
     "fix that function first (its own checks say how); this one may then be right as it is."),
    ("modifies-input", "changing an input array in place",
     "a graded function must leave its arguments as they were: avoid `x -= ...` and `x[...] = ...` on inputs."),
]  # fmt: skip

CATALOGUE.update({i: Misconception(i, mistake, hint) for i, mistake, hint in _NUMPY_ENTRIES})


# Ids recognised by the PyTorch probes (notebooks 05-06) beyond SPEC's list.
_TORCH_ENTRIES = [
    ("pe-float32-angles", "the angles k / base^(2i/d) computed in float32",
     "a float32 angle keeps about 7 digits, so at thousands of radians its sine is off in the "
     "fourth decimal: compute the angles in float64 (dtype=torch.float64), then .float()."),
    ("gpt-head-bias", "an output layer (head) with a bias",
     "the notebook's GPT ends with head = nn.Linear(d_model, vocab_size, bias=False)."),
    ("gpt-d-ff-default", "d_ff defaulting to something other than 4 * d_model",
     "with d_ff=None, each block's feed-forward network is 4 * d_model wide: d_ff or 4 * d_model."),
    ("embedding-dropout-missing", "no dropout on the sum of the token and position embeddings",
     "apply self.dropout (an nn.Dropout(dropout)) to tok_emb(idx) + pos_emb(positions)."),
    ("block-dropout-not-passed", "the blocks built without the GPT's dropout",
     "pass dropout on to every block: TransformerBlock(..., dropout=dropout)."),
    ("generate-crop-oldest", "keeping the OLDEST block_size tokens as the context",
     "the next token follows the latest tokens: crop with idx[:, -block_size:]."),
    ("tokenizer-case-insensitive", "sorting the characters ignoring case",
     "the ids follow sorted(set(text)), Python's own order: every capital letter comes before "
     "every lowercase one ('Z' < 'a')."),
]  # fmt: skip

CATALOGUE.update({i: Misconception(i, mistake, hint) for i, mistake, hint in _TORCH_ENTRIES})
