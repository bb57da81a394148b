"""The misconception catalogue: SPEC's ids, what each means, and the hint a student gets.

Each id is recognised by behaviour, never by reading source: variants.py modules hold known-wrong
implementations computed in the trusted parent; a student's output that matches one (and not the
reference) names that misconception. See autograder/course/<folder>/variants*.py (one folder a
notebook) and numpy_shared/variants.py.
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


# Ids recognised by notebook 06's training pieces and sampling (lr_at, configure_optimizer,
# train_step, generate's top_p) and by its GPT's dropout, initialisation and mode.
_TRAINING_ENTRIES = [
    ("warmup-off-by-one", "a warm-up one step out (step / warmup_steps, or one step too long)",
     "steps count from 0, and the first step already trains: at step s of the warm-up the rate "
     "is (s + 1) / warmup_steps of max_lr, which reaches max_lr at the last warm-up step."),
    ("cosine-not-reaching-min", "a half-cosine that does not reach min_lr at the last step",
     "the last step is total_steps - 1: the cosine's progress should be exactly 1 there, so "
     "count the steps after the warm-up up to that one; and the cosine swings between max_lr "
     "and min_lr, not 0."),
    ("decay-on-biases", "weight decay on the biases and the norms' gains",
     "weight decay pulls a weight towards 0; a bias or a layer norm's gain set near 0 does "
     "not make the model simpler, it breaks it. Which parameters are matrices?"),
    ("decay-skips-embeddings", "the embedding tables left out of weight decay",
     "the notebook's rule goes by shape: every parameter with dim >= 2 decays, the embedding "
     "tables as well as the linear layers' weights; only biases and gains do not."),
    ("adam-not-adamw", "torch.optim.Adam instead of torch.optim.AdamW",
     "Adam's weight_decay is added to the gradient, so it passes through the moment estimates "
     "and shrinks each weight by a different amount; AdamW shrinks the weights themselves."),
    ("tied-parameter-twice", "a tied weight listed twice in the optimizer",
     "a weight shared by two modules is one parameter: collect the parameters so that each "
     "comes once (model.parameters() already does)."),
    ("clip-after-step", "clipping the gradients after the optimizer's step",
     "clipping protects the update: the step must already use the clipped gradients."),
    ("clip-per-parameter", "clipping each parameter's gradient on its own",
     "the global norm is the norm of all the gradients together, as one long vector; "
     "clipping scales them all by the same factor."),
    ("no-zero-grad", "gradients not zeroed, so they add up across calls",
     "backward adds into .grad: whatever was there before the call would join this "
     "batch's gradient unless it is cleared first."),
    ("loss-after-update", "returning the loss measured after the update",
     "the loss to report is the one the gradients came from, computed before the step."),
    ("eval-mode-training", "training with the model in eval mode",
     "a model handed over in eval mode keeps its dropout off: put it in train mode first."),
    ("top-p-excludes-boundary", "top_p dropping the token that makes the sum reach top_p",
     "the kept set is the smallest one whose probabilities add up to AT LEAST top_p: the token "
     "that crosses the line belongs to it."),
    ("top-p-before-temperature", "choosing the top_p set before applying the temperature",
     "temperature changes the probabilities, and so which tokens make up top_p of them: "
     "divide by the temperature first."),
    ("top-p-no-renormalise", "sampling from the kept probabilities without renormalising them",
     "after dropping tokens, the kept probabilities no longer add up to 1: divide by their sum "
     "(or mask the logits with -inf and take the softmax again)."),
    ("generate-leaves-train-mode", "generate switching the model to train mode",
     "a model handed over in eval mode should still be in eval mode afterwards; if generate "
     "changes the mode, put back the one it found (model.training says which)."),
    ("dropout-after-final-norm", "the dropout after the final layer norm instead of on the embeddings",
     "the GPT's own dropout acts on the sum of the token and position embeddings, before the blocks."),
    ("init-before-modules", "the weight initialisation run before the layers exist",
     "self.apply(...) only reaches the modules that exist when it runs: make every layer first, "
     "then apply the initialisation."),
    # issue 40, second round: the causes the checks of 06's graded names said only in words
    ("tensor-not-float", "returning a tensor where a Python float is asked for",
     "a one-element tensor is not a float: float(...) or .item() gives the number, which an "
     "optimizer's settings, a progress bar or a list of losses can keep without the tensor's "
     "graph."),
    ("warmup-integer-division", "integer division (//) in the warm-up",
     "// rounds down to a whole number, and a learning rate is a small fraction: the warm-up "
     "climbs by max_lr / warmup_steps each step, a true division."),
    ("cosine-not-clamped", "the cosine's progress not clipped, so the rate climbs back after the last step",
     "past the last step the progress p goes beyond 1 and cos(pi p) turns back up: clip p to "
     "[0, 1] so that the rate stays at min_lr."),
    ("cosine-from-step-zero", "the cosine's progress counted from step 0 instead of from the end of the warm-up",
     "the half-cosine starts where the warm-up stops: at step warmup_steps its progress is 0 and "
     "the rate is max_lr, and the steps after it are counted from there."),
    ("cosine-full-period", "a full period of the cosine (cos(2 pi p)) instead of half of one",
     "the rate falls from max_lr to min_lr once: as p goes from 0 to 1, cos(pi p) goes from 1 to "
     "-1, half a period; a whole period comes back up to max_lr."),
    ("lr-linear-decay", "the rate decaying along a straight line instead of a half-cosine",
     "after the warm-up the notebook's rate follows half a period of a cosine: it leaves max_lr "
     "slowly, falls fastest halfway, and settles slowly onto min_lr."),
    ("cosine-division-by-zero", "dividing by zero when no step is left for the cosine",
     "when the warm-up lasts to the step before the last, total_steps - 1 - warmup_steps is 0: "
     "the notebook's formula divides by max(1, ...) so that this case still works."),
    ("decay-groups-swapped", "the two groups' weight decays swapped",
     "the matrices and embeddings (dim >= 2) are the ones weight decay pulls towards 0; the "
     "biases and gains (dim 1) get weight_decay 0.0."),
    ("decay-skips-matrices", "the matrices left out of weight decay",
     "a weight matrix has dim 2, an embedding table too: dim >= 2 takes in every one of them, "
     "and only the biases and gains (dim 1) stay out."),
    ("optimizer-betas-ignored", "the betas argument not handed on to AdamW",
     "without betas=betas, torch.optim.AdamW uses its own defaults (0.9, 0.999), and a fixed "
     "pair ignores what the caller asks for: pass on the betas configure_optimizer gets."),
    ("optimizer-lr-ignored", "the lr argument not handed on to AdamW (its default 0.001 instead)",
     "without lr=lr, every group gets torch.optim.AdamW's default learning rate, whatever the "
     "caller asked for: pass on the lr configure_optimizer gets."),
    ("weight-decay-times-lr", "the group's weight_decay multiplied by the learning rate",
     "AdamW multiplies weight_decay by the learning rate itself at every step: each group takes "
     "the weight_decay asked for, as it is."),
    ("param-in-no-group", "parameters left out of both groups, so they never train",
     "every parameter of the model must be in one group, or it never trains: go through "
     "model.parameters() and sort each one by its dim, whatever module holds it."),
    ("zero-grad-before-step", "the gradients cleared between backward and the step",
     "zero_grad empties .grad: between loss.backward() and optimizer.step() it throws away "
     "the gradients the step needs. Clear them before the forward pass."),
    ("clip-argument-ignored", "clipping to a fixed norm of 1.0 whatever clip is passed",
     "the clip argument is the largest global norm allowed: clip to that number, and not at "
     "all when it is None."),
    ("clip-none-not-skipped", "clip=None handed on to the clipping function",
     "clip=None means no clipping: the clipping function needs a number, so skip the call when "
     "clip is None."),
    ("cross-entropy-unflattened", "F.cross_entropy given the (B, T, V) logits as they are",
     "F.cross_entropy reads the classes from axis 1: flatten the logits to (B*T, V) and the "
     "targets to (B*T,) first (lm_loss does)."),
    ("generate-argmax", "taking the most likely token instead of sampling one",
     "sampling draws the token with torch.multinomial (and the generator) from the "
     "probabilities softmax gives, so a seed changes the text; argmax, what top_k=1 gives, "
     "returns the same token every time."),
    ("generate-first-position", "predicting from the first position's logits instead of the last",
     "the logits at position t predict the token after position t: the next token comes from "
     "the last position of the context, logits[:, -1, :]."),
    ("generate-softmax-wrong-axis", "a softmax over the batch instead of over the vocabulary",
     "the logits are (B, V): each row is one sequence's scores for every token of the "
     "vocabulary, so its probabilities come from a softmax over the last axis."),
    ("gpt-fixed-length", "the positions or the mask built for block_size tokens instead of the T given",
     "forward gets any T up to block_size tokens: the positions are 0..T-1 and the causal mask "
     "is (T, T), both made from idx's own length."),
    ("gpt-final-norm-unused", "no final layer norm before the head",
     "the notebook's GPT normalises the last block's output with ln_f, then applies the head."),
    ("gpt-positions-unused", "no position embeddings added",
     "the model cannot tell where a token is unless pos_emb(positions) is added to the token "
     "embeddings before the blocks."),
    ("gpt-positions-from-tokens", "the position embeddings looked up with the token ids",
     "pos_emb gives one row per position 0..T-1: look it up with torch.arange(T), not with idx, "
     "or a token gets the same vector wherever it stands."),
    ("gpt-embeddings-scaled", "the embeddings multiplied by sqrt(d_model)",
     "the 2017 paper scales its embeddings; the notebook's GPT adds them as they are."),
    ("gpt-no-length-check", "no ValueError for a sequence longer than block_size",
     "the position table has block_size rows: check T against block_size at the start of "
     "forward and raise ValueError with a clear message."),
]  # fmt: skip

CATALOGUE.update({i: Misconception(i, mistake, hint) for i, mistake, hint in _TRAINING_ENTRIES})


# Ids recognised by notebook 07's probes (course/n07_modern_lm/variants*.py).
_MODERN_ENTRIES = [
    ("bpe-tie-order", "breaking a tie between equally frequent pairs by something other than first occurrence",
     "when several pairs are the most frequent, the one whose first occurrence comes earliest in "
     "the sequence wins: count the pairs in the order you meet them and keep the first maximum."),
    ("bpe-overlapping-count", "counting the pairs of a run like 'aaa' without overlap",
     "pairs are counted at every adjacent position, as minbpe does: 'aaa' holds the pair (a, a) twice."),
    ("bpe-merges-singletons", "merging pairs that occur only once",
     "training stops when no pair occurs twice: merging a pair seen once compresses nothing."),
    ("bpe-encode-order", "applying the merges at encode time in another order than they were learned",
     "encode repeats one rule: of the pairs present, merge the one learned earliest (lowest rank), "
     "everywhere, then look again. Later merges are built on earlier ones."),
    ("rmsnorm-mean-subtracted", "subtracting the mean (that is layer norm)",
     "RMSNorm does not centre: it divides x by the root of the mean of x**2, nothing is subtracted."),
    ("rmsnorm-eps-outside-sqrt", "adding eps after the square root",
     "eps goes inside the square root, with the mean of the squares."),
    ("rmsnorm-no-gain", "forgetting the gain weight",
     "after dividing by the root mean square, multiply by weight, one gain per feature."),
    ("rmsnorm-wrong-axis", "taking the mean of the squares over the wrong axis",
     "each token is normalised over its own features: the last axis, keepdim=True."),
    ("rmsnorm-eps-ignored", "ignoring the eps argument",
     "use the eps the caller passes, not a fixed number."),
    ("rmsnorm-no-mean", "the sum of the squares (the length of x) instead of their mean",
     "RMS is the root of the MEAN square: divide the sum by the number of features."),
    ("rope-half-split", "pairing feature i with feature i + d/2 (GPT-NeoX's rotate_half layout)",
     "this notebook pairs neighbours, as the RoFormer paper does: (x[..., 2i], x[..., 2i+1])."),
    ("rope-wrong-frequency", "the wrong frequency for pair i",
     "pair i turns by position * base**(-2i/d_head): 2i runs over the even features 0, 2, 4, ..."),
    ("rope-wrong-position", "ignoring the positions argument (rotating by 0, 1, 2, ... instead)",
     "the angle uses the positions you are given, which need not start at 0 nor be in order."),
    ("rope-rotation-reversed", "turning the pairs the other way",
     "rotate by +angle: the first of the pair becomes x0 cos - x1 sin, the second x0 sin + x1 cos."),
    ("rope-on-values", "rotating the values too",
     "RoPE rotates the queries and the keys only: their dot product is what should see the distance."),
    ("rope-queries-only", "rotating only the queries, or only the keys",
     "both the queries and the keys are rotated, each at its own position: then q.k depends on the distance."),
    ("swiglu-gate-swapped", "silu on the w3 branch instead of the w1 branch",
     "w1 is the gate that goes through silu; w3's output is multiplied by it unchanged."),
    ("swiglu-other-activation", "another activation than silu in the gate",
     "the gate is silu(z) = z * sigmoid(z) (F.silu), not gelu, relu or a plain sigmoid."),
    ("swiglu-no-gate", "leaving out the w3 branch",
     "SwiGLU multiplies two branches: silu(w1 x) times w3 x, then w2."),
    ("cache-positions-restart", "rotating the new tokens at positions 0, 1, ... although the cache holds earlier ones",
     "with T_past cached positions, the new tokens sit at T_past .. T_past + T - 1."),
    ("cache-not-appended", "returning a cache that holds only the new positions",
     "the cache returned is the old keys and values with the new ones added after them (torch.cat on the positions' axis)."),
    ("cache-not-used", "attending over the new tokens only, ignoring the cached keys and values",
     "new queries attend over the cached keys and the new ones together."),
    ("cache-mask-not-offset", "a causal mask whose diagonal ignores the cached positions",
     "new token t sits at position T_past + t: it may see every key up to that position, all the cached ones included."),
    ("cache-not-updated", "passing the prompt's cache at every step instead of the newest one",
     "each call returns a longer cache: keep it and pass it to the next call."),
    ("llama-no-final-norm", "no final RMSNorm before lm_head",
     "after the last block, apply self.norm, then lm_head."),
    ("llama-d-ff-default", "a d_ff default other than the notebook's",
     "with d_ff=None the width is 8 * d_model / 3 rounded UP to a multiple of 64."),
    ("llama-bias", "linear layers with biases",
     "every nn.Linear of this model is built with bias=False."),
    ("head-not-tied", "an output layer with its own weight",
     "the output layer reuses the token embedding's matrix: assign lm_head.weight = tok_emb.weight "
     "after the layers are built (and initialised)."),
    ("top-p-excludes-boundary", "top-p dropping the token that makes the sum reach top_p",
     "keep the most probable tokens until their sum reaches top_p, the one that crosses it included."),
    ("top-p-ignored", "top_p ignored",
     "after the temperature and top-k, keep only the most probable tokens whose probabilities add up to top_p."),
    ("top-k-ignored", "top_k ignored",
     "with top_k given, every logit below the k-th largest becomes -inf before the softmax."),
    # issue 40, second round: 07's mistakes caught before without a name
    ("bpe-merge-count-off-by-one", "learning one merge too many (or too few)",
     "training stops once the vocabulary holds vocab_size ids: 256 bytes plus one id per merge, "
     "so at most vocab_size - 256 merges."),
    ("bpe-vocab-size-as-asked", "vocab_size kept as asked, not as reached",
     "training can stop early (no pair occurs twice): vocab_size is the number of ids the "
     "tokenizer really has, 256 + len(merges)."),
    ("bpe-characters-not-bytes", "starting from the characters (ord(c)) instead of the UTF-8 bytes",
     "byte-level BPE starts from text.encode('utf-8'): ids 0-255 are bytes, and a character "
     "outside ASCII is two to four of them."),
    ("bpe-decode-per-token", "decoding each id's bytes on its own",
     "the UTF-8 bytes of one character can sit in two ids: join the bytes of the ids first "
     "(each run of them between special tokens), then decode them together."),
    ("bpe-decode-strict", "decoding with errors='strict'",
     "a model's sample can end in the middle of a character: decode with errors='replace', "
     "so each broken character becomes '\\ufffd'."),
    ("bpe-negative-id-accepted", "a negative id decoded (Python's indexing counts it from the end)",
     "ids run from 0 to vocab_size - 1: a negative id is outside the vocabulary too, and "
     "raises ValueError naming it."),
    ("regex-bpe-chunks-counted-once", "each distinct chunk counted once, however often it occurs",
     "a chunk that occurs ten times adds its pairs ten times: count the pairs of every "
     "chunk of the text (or of each distinct chunk times its count)."),
    ("regex-bpe-specials-dropped", "special tokens lost when the text is split at them",
     "regex.split keeps the separators only when the pattern has a capture group: "
     "wrap the alternation in parentheses, or find the special tokens with finditer."),
    ("rmsnorm-no-sqrt", "dividing by the mean square instead of its square root",
     "RMS is the ROOT of the mean square: divide by sqrt(mean(x**2) + eps)."),
    ("rmsnorm-abs-mean", "the mean absolute value instead of the root mean square",
     "square the features, take their mean over the last axis, then the square root."),
    ("rmsnorm-keepdim-missing", "the mean square taken without keepdim=True",
     "mean(dim=-1) drops the last axis, so the division lines the tokens' means up with the "
     "features: keep the axis (keepdim=True), one mean per token beside its features."),
    ("rmsnorm-gain-added", "adding the gain instead of multiplying by it",
     "weight is a scale, one per feature: multiply the normalised x by it."),
    ("rope-pairs-concatenated", "putting the turned pairs back as all first features, then all second ones",
     "each pair is turned by the right angle; put each rotated pair back in its own two "
     "places, 2i and 2i + 1."),
    ("rope-cos-sin-swapped", "cos and sin exchanged in the rotation",
     "the first of the pair becomes x0 cos - x1 sin and the second x0 sin + x1 cos, with cos "
     "and sin of position * frequency: at position 0 nothing turns."),
    ("rope-odd-not-refused", "no ValueError for an odd d_head",
     "the features are turned in pairs: an odd last axis leaves one without a partner, so "
     "apply_rope raises ValueError for it."),
    ("swiglu-silu-after-product", "silu applied after the product instead of to the gate",
     "silu goes on w1's branch alone: silu(w1 x) times w3 x, then w2."),
    ("swiglu-sum-not-product", "adding the two branches instead of multiplying them",
     "the gate multiplies: silu(w1 x) * w3 x, element by element, then w2."),
    ("rope-after-cache", "rotating the keys after they join the cache, all of them from position 0",
     "turn each new key once, at its own position, before it joins the cache: the cache "
     "holds keys as RoPE left them, and the cached ones are never turned again."),
    ("llama-cache-first-block", "giving every block the first block's cache",
     "each block has its own keys and values: block i takes cache[i] and returns its own "
     "new pair."),
    ("llama-ffn-reads-block-input", "the feed-forward normalising the block's input instead of h",
     "the second half of the block reads what the first half made: h = x + attn(norm1(x)), "
     "then h + ffn(norm2(h))."),
    ("llama-norm-eps-default", "the norms built with another eps than 1e-6",
     "every RMSNorm of the model (in the blocks and the final one) uses eps 1e-6; "
     "nn.RMSNorm(d_model) alone takes float32's machine epsilon."),
    ("llama-position-embedding", "adding a learned position embedding, as GPT does",
     "RoPE gives the positions inside attention: TinyLlama's input is the token embedding "
     "alone."),
    ("llama-cache-returned-unchanged", "returning the cache the model was given",
     "return the caches the blocks give back: they hold the cached positions and the new ones."),
    ("block-size-not-checked", "no ValueError past block_size",
     "a model of block_size positions has no rotation or cache room for more: compare the "
     "positions (cached and new, or prompt and new tokens) with block_size and raise ValueError."),
    ("llama-block-size-cache-not-counted", "block_size compared with the new positions alone",
     "the cached positions count too: the cache's keys (B, n_heads, T_past, d_head) hold "
     "T_past of them, and T_past + T may not exceed block_size."),
    ("cache-fed-whole-sequence", "feeding the whole sequence again with the cache",
     "the cache already holds every earlier position: after the prompt, feed only the newest "
     "token (idx[:, -1:]) with the cache."),
    ("cache-last-token-fed-again", "feeding the last prompt token again after the prompt",
     "the prompt's call already gives the logits of the first new token: sample from them, "
     "and feed the model only tokens it has not seen."),
    ("sampled-from-first-position", "sampling from the first position's logits",
     "the next token comes from the logits of the LAST position: logits[:, -1, :]."),
    ("zero-new-tokens-sampled", "sampling a token although max_new_tokens is 0",
     "max_new_tokens=0 returns idx as it is: sample inside the loop, once per new token."),
]  # fmt: skip

CATALOGUE.update(
    {
        i: Misconception(i, mistake, hint)
        for i, mistake, hint in _MODERN_ENTRIES
        if i not in CATALOGUE
    }
)


# Ids recognised by notebook 08's probes (autograder/course/n08_real_models/variants.py).
_REAL_MODEL_ENTRIES = [
    ("kv-head-interleaved", "query head h reading key/value head h % n_kv_heads",
     "the query heads share their key/value head in consecutive groups: heads 0 .. group - 1 "
     "read key/value head 0, the next group head 1, and so on (h // group). Which of repeat and "
     "repeat_interleave keeps each head next to its copies?"),
    ("cache-after-repeat", "storing the keys and values in the cache after repeating them",
     "the cache is what grouped-query attention saves memory on: store the n_kv_heads heads "
     "as they come out of wk and wv (after RoPE), and repeat them for the query heads only "
     "when computing the scores."),
    ("rope-base-ignored", "rotating with base 10000 whatever rope_base is given",
     "pass the model's rope_base on to apply_rope: published models use other bases "
     "(LLaMA 3 uses 500000)."),
    ("norm-eps-ignored", "norms built with eps 1e-6 whatever norm_eps is given",
     "build every RMSNorm with the norm_eps the model is given: checkpoints were trained with "
     "their own (1e-5 for many)."),
    ("head-tied-when-untied", "an output layer sharing the embedding's matrix although tie_embeddings=False",
     "with tie_embeddings=False, lm_head keeps its own weight: tie it only when asked."),
    ("rope-layout-not-permuted", "copying q_proj and k_proj as they are",
     "Hugging Face's checkpoints pair feature i of a head with feature i + d_head/2, and your "
     "apply_rope pairs neighbours: reorder each head's rows of q_proj and k_proj so that rows "
     "i and i + d_head/2 become neighbours 2i and 2i + 1."),
    ("rope-only-queries-permuted", "reordering the rows of q_proj but not those of k_proj (or the reverse)",
     "queries and keys are both rotated, so both projections need their rows reordered, each "
     "with its own number of heads."),
    ("rope-keys-permuted-with-query-heads", "reordering k_proj's rows as if it had n_heads heads",
     "with grouped-query attention k_proj holds n_kv_heads heads of d_head rows, fewer than "
     "q_proj's n_heads: reorder the rows within each of k_proj's own heads."),
    ("rope-permutation-inverted", "reordering the rows the other way (interleaved to half-split)",
     "row 2i of a head in your layout is row i of Hugging Face's, and row 2i + 1 is row "
     "i + d_head/2: check the direction on one head of width 4 by hand."),
    ("gate-up-swapped", "gate_proj and up_proj copied the wrong way round",
     "in SwiGLU, w1 is the gate that goes through silu: gate_proj goes to w1, up_proj to w3."),
    ("kv-bytes-missing-factor-2", "counting the keys but not the values (or the reverse)",
     "a cache holds a key AND a value for every layer, head, feature and position."),
    ("kv-bytes-ignores-batch", "counting one sequence whatever the batch",
     "every sequence of the batch has its own cache: multiply by batch."),
    ("kv-bytes-in-bits", "counting bits instead of bytes",
     "bytes_per_value is already in bytes: no factor 8."),
    ("kv-bytes-per-value-ignored", "2 bytes a value whatever bytes_per_value is given",
     "use bytes_per_value: 2 for bfloat16, 4 for float32, 1 for an 8-bit cache."),
    # the Llama block and the rest of notebook 08's mistakes caught before without an id
    ("final-norm-eps-ignored", "the final RMSNorm built without norm_eps (with its own default)",
     "the norm after the last block is one of the model's norms too: it takes the norm_eps the "
     "model is given, as the blocks' norms do."),
    ("llama-norms-swapped", "norm1 and norm2 used the other way round",
     "norm1 belongs to the attention's input and norm2 to the feed-forward's: a checkpoint's "
     "input_layernorm and post_attention_layernorm gains only work where they were trained."),
    ("heads-not-checked", "a constructor that accepts head counts that do not divide",
     "d_model splits into n_heads heads of equal width, and each key/value head serves a whole "
     "group of query heads: check both in __init__ and raise ValueError when one fails."),
    ("kv-projection-full-width", "wk and wv built with d_model outputs (a key head per query head)",
     "wk and wv make n_kv_heads heads of d_head features each: fewer features than wq, and "
     "that is the memory grouped-query attention saves."),
    ("kv-heads-none-kept", "n_kv_heads=None passed on as it is",
     "n_kv_heads left out means one key/value head per query head: replace None by n_heads "
     "before building the blocks."),
    ("block-size-cache-not-counted", "block_size compared with the new positions alone",
     "the cached positions count too: read their number from the cache's keys (B, n_kv_heads, "
     "T_past, d_head) and compare T_past + T with block_size."),
    ("block-size-full-refused", "refusing a sequence that fills block_size exactly",
     "a model of block_size positions takes exactly block_size of them: only more are too many."),
    ("load-not-checked", "copying the weights without checking the keys and shapes",
     "compare the checkpoint's keys and shapes with those your model expects before copying "
     "anything, and raise ValueError at the first difference."),
    ("load-error-unnamed", "a ValueError that does not say which key is wrong",
     "put the key in the message: whoever loads a checkpoint needs to know where to look."),
    ("load-changes-state-dict", "reordering the rows inside the caller's state dict",
     "the state dict is the caller's: build the reordered rows as new tensors and copy those "
     "into your parameters, leaving the dict and its tensors as they were."),
    ("kv-bytes-float", "a number of bytes computed as a float",
     "every factor is a whole number: multiply ints (no division, no 2.0), and the result is an int."),
]  # fmt: skip

CATALOGUE.update({i: Misconception(i, mistake, hint) for i, mistake, hint in _REAL_MODEL_ENTRIES})
# Ids added by issue 40 (checks on 06's training pieces and 07 as good as on the old names) and
# by RegexBPETokenizer (issue 36): course/n06_autoregressive_lm/variants_training.py, n07's variants*.py.
_CHECKS_ENTRIES = [
    ("clip-by-value", "clipping every gradient entry on its own (clip_grad_value_)",
     "clipping by value changes the gradient's direction; clipping the global norm scales "
     "every gradient by one factor, so the direction stays (torch.nn.utils.clip_grad_norm_)."),
    ("generate-leaves-eval-mode", "generate switching the model to eval mode and leaving it there",
     "a model handed over in train mode (mid-training, say) should still be in train mode "
     "afterwards: note model.training first and put that mode back before returning."),
    ("top-p-before-top-k", "choosing the top_p set before top_k cuts the distribution",
     "top_k comes first: the top_p set is counted on the probabilities of the k tokens left, "
     "renormalised."),
    ("top-k-off-by-one", "top_k keeping one token fewer (or more) than k",
     "with top_k=k exactly k tokens stay: the k-th largest logit itself is kept."),
    ("top-p-ties-unstable", "ties at the edge of the top_p set kept in whatever order the sort left them",
     "torch.sort without stable=True may reorder equal values on larger vocabularies; "
     "sort(..., stable=True) keeps tied tokens in order of id."),
    ("generate-full-block-refused", "refusing a request that fills block_size exactly",
     "T0 + max_new_tokens may equal block_size: the last token sampled is never fed to the model."),
    ("cache-feeds-last-token", "feeding the model once more after the last token is sampled",
     "after the last new token nothing more is predicted: feed the model max_new_tokens - 1 "
     "times after the prompt, so a request that fills block_size fits."),
    ("generator-not-used", "sampling from torch's global random state instead of `generator`",
     "pass generator to every random draw (torch.multinomial(..., generator=generator)), so that "
     "a seeded generator gives the same tokens again."),
    ("rope-position-off-by-one", "positions shifted by one (counting from 1, or one behind)",
     "the token at position p turns by p * frequency: the first token of a sequence, at "
     "position 0, is not turned at all."),
    ("rope-frequency-sign", "frequencies base**(+2i/d_head), growing instead of shrinking",
     "pair 0 turns fastest (frequency 1) and later pairs ever slower: the exponent is negative."),
    ("attention-scale-d-model", "dividing the scores by sqrt(d_model) instead of sqrt(d_head)",
     "each head's dot products run over d_head features: scale by the square root of d_head."),
    ("rmsnorm-global-mean", "the mean of the squares over the whole tensor, not per token",
     "each token is scaled by its own root mean square, over its last axis only."),
    ("rmsnorm-std", "dividing by the standard deviation instead of the root mean square",
     "RMSNorm never subtracts the mean, not even inside the square root: sqrt(mean(x**2) + eps)."),
    ("regex-bpe-merges-across-chunks", "pairs counted and merged across the chunks of the pattern",
     "split the text with the pattern first; count and merge pairs inside each chunk only, so "
     "no token ever spans two chunks (a space and the word before it, say)."),
    ("regex-bpe-special-merged", "special tokens encoded as ordinary text (split into bytes, merged)",
     "split the text at the special tokens first: each one becomes its own id, whole, and the "
     "text between them is encoded as usual."),
    ("regex-bpe-special-ids-low", "special ids that collide with the byte or merge ids",
     "special_tokens gives each special token its id, after every id BPE makes (at or above "
     "256 + len(merges)): use those ids as given, not numbers of your own."),
    ("regex-bpe-wrong-pattern", "another pre-tokenization pattern than GPT-2's",
     "copy GPT-2's pattern exactly, with the regex module (\\p{L} and \\p{N} need it): "
     "contractions, an optional space before letters, numbers or other symbols, then spaces."),
    ("regex-bpe-tie-order", "ties broken by another order than the pair's first occurrence",
     "with chunks, a tie still goes to the pair that occurs first in the text, chunk by chunk "
     "from the start."),
    ("regex-bpe-special-decode", "special ids decoded as bytes, or refused",
     "decode maps each special id back to its string and the other ids to their bytes, in order."),
]  # fmt: skip

CATALOGUE.update(
    {
        i: Misconception(i, mistake, hint)
        for i, mistake, hint in _CHECKS_ENTRIES
        if i not in CATALOGUE
    }
)
