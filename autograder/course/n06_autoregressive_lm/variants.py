"""Known-wrong PyTorch implementations of notebook 06 (the loss, sampling, the GPT's wiring),
run when a probe BUILDS its cases, the way notebook 05's are (see
autograder/course/n05_transformer_block/variants.py): their outputs are stored in the cases as
(misconception id, output) pairs, and the student handout ships the outputs, never these functions.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from autograder.course.n05_transformer_block.variants import block_forward, np64

# ---------------------------------------------------------------- 06: the loss


def lm_loss_variants(logits, targets):
    """(id, loss) for the loss mistakes on logits (B, T, V) and targets (B, T)."""
    lg = logits.detach().to(torch.float64)
    B, T, V = lg.shape
    flat, tg = lg.reshape(-1, V), targets.reshape(-1)
    out = [
        ("loss-sum-reduction", F.cross_entropy(flat, tg, reduction="sum")),
        ("loss-sum-reduction", F.cross_entropy(flat, tg, reduction="sum") / B),  # mean over B only
        ("loss-sum-reduction", F.cross_entropy(flat, tg, reduction="sum") / T),
        ("loss-double-softmax", F.cross_entropy(flat.softmax(-1), tg)),
        # nll of probabilities (softmax(log(softmax(z))) is softmax(z) again: the same mistake)
        ("probabilities-not-log", F.nll_loss(flat.softmax(-1), tg)),
    ]
    if T > 1:  # shifting again inside the loss (get_batch already shifted)
        out.append(
            (
                "shifted-again",
                F.cross_entropy(lg[:, :-1].reshape(-1, V), targets[:, 1:].reshape(-1)),
            )
        )
    return [(i, float(v)) for i, v in out]


# ---------------------------------------------------------------- 06: sampling


def sampling_distribution(logits_row, temperature=1.0, top_k=None):
    """The distribution generate should sample from, given one row of logits (float64)."""
    z = np.asarray(logits_row, dtype=float) / temperature
    if top_k is not None:
        kth = np.sort(z)[-min(top_k, z.size)]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max())
    return p / p.sum()


def temperature_multiplied_distribution(logits_row, temperature, top_k=None):
    """What sampling gives when the logits are multiplied by the temperature (the mistake)."""
    return sampling_distribution(np.asarray(logits_row, dtype=float) * temperature, 1.0, top_k)


# ---------------------------------------------------------------- 06: the GPT's wiring


def gpt_forward(roles, idx, n_heads, variant=None):
    """The notebook's GPT from weights by role (harness/roles.py's layout), right or with one
    wiring mistake of the GPT itself (its blocks right). float64 logits.

    Variants: post-norm (blocks built with norm_first=False), no-final-norm (ln_f built but not
    applied), no-positions (the position table not added), no-mask (blocks without the causal
    mask), embeddings-scaled (the sum multiplied by sqrt(d_model), as the 2017 paper does),
    positions-by-token(-mod) (the position table looked up with the token ids).
    """
    T = idx.shape[-1]
    tok, pos = roles["tok"].to(torch.float64), roles["pos"].to(torch.float64)
    rows = len(pos)  # block_size: ids at or past it cannot index the table as they are
    by_token = {"positions-by-token": idx.clamp(max=rows - 1), "positions-by-token-mod": idx % rows}
    x = tok[idx] + (0.0 if variant == "no-positions" else pos[by_token.get(variant, slice(T))])
    if variant == "embeddings-scaled":
        x = x * math.sqrt(tok.shape[-1])
    mask = None if variant == "no-mask" else torch.ones(T, T, dtype=torch.bool).tril()
    for state in roles["blocks"]:
        x = block_forward(state, x, n_heads, variant != "post-norm", mask)
    if variant != "no-final-norm":
        x = F.layer_norm(
            x, x.shape[-1:], roles["ln_f.weight"].double(), roles["ln_f.bias"].double(), 1e-5
        )
    return x @ roles["head"].to(torch.float64).T


GPT_VARIANTS = {
    "post-norm": "norm-order-swapped",
    "no-mask": "no-causal-mask",
    "no-final-norm": "gpt-final-norm-unused",
    "no-positions": "gpt-positions-unused",
    "embeddings-scaled": "gpt-embeddings-scaled",
    # pos_emb looked up with the token ids (cut or wrapped to the table's rows so that it runs)
    "positions-by-token": "gpt-positions-from-tokens",
    "positions-by-token-mod": "gpt-positions-from-tokens",
}


def gpt_variants(roles, idx, n_heads):
    """(label, logits) for the GPT wiring mistakes."""
    return [(label, np64(gpt_forward(roles, idx, n_heads, v))) for v, label in GPT_VARIANTS.items()]
