"""Hidden tests of notebook 07's model (see cases.py for how they are built): SwiGLU,
CausalSelfAttention with and without a cache, and TinyLlama, built in the harness with weights
loaded under the notebook's names.
"""

import torch

from autograder.course.n07_modern_lm import reference as ref
from autograder.course.n07_modern_lm.variants_model import (
    attention_variants,
    llama,
    llama_variants,
    swiglu_variants,
)
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import (
    later,
    load,
    np_,
    reference_grads,
    tensor,
    torch_probe,
)
from autograder.judging import Judgement

# ---------------------------------------------------------------- SwiGLU


def _linear(rng, name, d_in, d_out):
    return {f"{name}.weight": tensor(rng, d_out, d_in, scale=d_in**-0.5)}


def swiglu_state(rng, d, d_ff, prefix=""):
    return {
        **_linear(rng, f"{prefix}w1", d, d_ff),
        **_linear(rng, f"{prefix}w3", d, d_ff),
        **_linear(rng, f"{prefix}w2", d_ff, d),
    }


@torch_probe("SwiGLU")
def swiglu_cases(rng):
    d, d_ff = 8, 12
    state = swiglu_state(rng, d, d_ff)
    x = tensor(rng, 2, 5, d, scale=1.5)
    init = {"d_model": d, "d_ff": d_ff}
    module = load(ref.SwiGLU(d, d_ff), state)
    with torch.no_grad():
        expected = np_(module(x))
    what = f"SwiGLU({d}, {d_ff}).forward(x)"
    cases = [
        Case(
            "SwiGLU",
            "values, with weights loaded as w1, w2, w3",
            1.25,
            [{"op": "module", "init": init, "state": state, "args": [x]}],
            Judgement(
                "modern_lm.swiglu",
                {"what": what, "expected": expected, "variants": later(swiglu_variants, state, x)},
            ),
        )
    ]
    x = tensor(rng, 3, d, grad=True)
    cot = tensor(rng, 3, d)
    reference = reference_grads(module, [x], None, cot)
    cases.append(
        Case(
            "SwiGLU",
            "gradients of the input and of w1, w2, w3",
            0.75,
            [{"op": "module", "init": init, "state": state, "args": [x], "backward": cot}],
            Judgement(
                "block_judges.module_gradients",
                {"cls_name": "SwiGLU", "what": what, "reference": reference},
            ),
        )
    )
    return cases


# ---------------------------------------------------------------- CausalSelfAttention


def attention_state(rng, d, prefix=""):
    state = {}
    for name in ("wq", "wk", "wv", "wo"):
        state.update(_linear(rng, f"{prefix}{name}", d, d))
    return state


def _attention_case(name, points, d, H, state, x, cache, T_past):
    module = load(ref.CausalSelfAttention(d, H), state)
    with torch.no_grad():
        y, (k, v) = module(x, cache)
    kwargs = {} if cache is None else {"cache": tuple(cache)}
    call = "forward(x)" if cache is None else f"forward(x, cache) with {T_past} cached positions"
    return Case(
        "CausalSelfAttention",
        name,
        points,
        [
            {
                "op": "module",
                "init": {"d_model": d, "n_heads": H},
                "state": state,
                "args": [x],
                "kwargs": kwargs,
            }
        ],
        Judgement(
            "modern_lm.attention_cache",
            {
                "what": f"CausalSelfAttention({d}, {H}).{call}",
                "expected": (np_(y), np_(k), np_(v)),
                "variants": later(attention_variants, state, x, H, cache),
                "T_past": T_past,
            },
        ),
    )


@torch_probe("CausalSelfAttention")
def attention_cases(rng):
    d, H = 16, 2
    state = attention_state(rng, d)
    x = tensor(rng, 2, 9, d)
    module = load(ref.CausalSelfAttention(d, H), state)
    with torch.no_grad():
        _, (k, v) = module(x[:, :5])
        _, (k1, v1) = module(x[:, :8])
    return [
        _attention_case(
            "a whole sequence: causal, RoPE on queries and keys",
            2.0,
            d,
            H,
            state,
            x[:, :5],
            None,
            0,
        ),
        _attention_case(
            "3 new tokens after 5 cached: the same as fed whole",
            1.75,
            d,
            H,
            state,
            x[:, 5:8],
            (k, v),
            5,
        ),
        _attention_case("1 new token after 8 cached", 1.25, d, H, state, x[:, 8:9], (k1, v1), 8),
    ]


# ---------------------------------------------------------------- TinyLlama

LLAMA = {"vocab_size": 13, "block_size": 10, "d_model": 28, "n_heads": 2, "n_layers": 2}
# the default for d_model 28: 8 * 28 / 3 = 74.7, rounded UP to a multiple of 64 (not to the
# nearest one, 64, nor left at 74)
LLAMA_D_FF = 128


def llama_state(rng):
    V, d, L = LLAMA["vocab_size"], LLAMA["d_model"], LLAMA["n_layers"]
    state = {"tok_emb.weight": tensor(rng, V, d)}
    for i in range(L):
        p = f"blocks.{i}."
        state[p + "norm1.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        state[p + "norm2.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        state.update(attention_state(rng, d, p + "attn."))
        state.update(swiglu_state(rng, d, LLAMA_D_FF, p + "ffn."))
    state["norm.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
    return state  # no lm_head.weight: it is tok_emb.weight


def _reference_llama(state):
    model = ref.TinyLlama(**LLAMA)
    model.load_state_dict({**state, "lm_head.weight": state["tok_emb.weight"]}, strict=True)
    return model.eval()


@torch_probe("TinyLlama")
def llama_cases(rng):
    V, H, L, T_max = LLAMA["vocab_size"], LLAMA["n_heads"], LLAMA["n_layers"], LLAMA["block_size"]
    state = llama_state(rng)
    model = _reference_llama(state)
    idx = torch.from_numpy(rng.integers(0, V, size=(2, 7))).long()
    cot = tensor(rng, 2, 7, V)
    with torch.no_grad():
        logits, _ = model(idx)
        _, cache = model(idx[:, :4])
        rest, _ = model(idx[:, 4:], cache)
    what = "TinyLlama(vocab_size=13, block_size=10, d_model=28, n_heads=2, n_layers=2)"
    # tokens whose embeddings are tiny (mean square about 1e-6, eps's size): the norms' eps
    # changes what the first norm makes of them; the other rows keep the logits of order 1
    quiet = rng.choice(V, size=3, replace=False)
    quiet_state = dict(state)
    quiet_state["tok_emb.weight"] = state["tok_emb.weight"].clone()
    quiet_state["tok_emb.weight"][quiet] = tensor(rng, 3, LLAMA["d_model"], scale=1e-3)
    quiet_idx = torch.from_numpy(rng.choice(quiet, size=(1, 5))).long()
    with torch.no_grad():
        quiet_logits, _ = _reference_llama(quiet_state)(quiet_idx)
    cases = [
        Case(
            "TinyLlama",
            "logits, with the head tied to the token embedding",
            1.75,
            [
                {
                    "op": "module",
                    "init": LLAMA,
                    "state": state,
                    "args": [idx],
                    "backward": cot,
                    "backward_output": 0,
                }
            ],
            Judgement(
                "modern_lm.llama_values",
                {
                    "what": f"{what}(idx (2, 7))",
                    "expected": np_(logits),
                    "variants": later(llama_variants, state, idx, H, L),
                    "d_ff": LLAMA_D_FF,
                    "table": [T_max, LLAMA["d_model"]],
                },
            ),
        )
    ]
    cases.append(
        Case(
            "TinyLlama",
            "tokens with tiny embeddings: every norm's eps is 1e-6",
            0.25,
            [{"op": "module", "init": LLAMA, "state": quiet_state, "args": [quiet_idx]}],
            Judgement(
                "modern_lm.llama_values",
                {
                    "what": f"{what}(idx (1, 5) of tokens whose embeddings are near 0)",
                    "expected": np_(quiet_logits),
                    # nn.RMSNorm(d_model) without eps: float32's machine epsilon
                    "variants": [
                        (
                            "llama-norm-eps-default",
                            llama(quiet_state, quiet_idx, H, L, eps=torch.finfo(torch.float32).eps)[
                                0
                            ].numpy(),
                        )
                    ],
                    "d_ff": LLAMA_D_FF,
                    "hint": "Every RMSNorm of the model (in the blocks and the final one) "
                    "computes rms_norm with eps 1e-6; near 0, eps decides the result.",
                },
            ),
        )
    )
    cache_arg = [tuple(c) for c in cache]
    cases.append(
        Case(
            "TinyLlama",
            "3 new tokens through the cache of the 4 before: the same logits as fed whole",
            1.25,
            [
                {
                    "op": "module",
                    "init": LLAMA,
                    "state": state,
                    "args": [idx[:, 4:]],
                    "kwargs": {"cache": cache_arg},
                }
            ],
            Judgement(
                "modern_lm.llama_cache",
                {
                    "what": f"{what}(idx (2, 3), cache of 4 positions)",
                    "expected": np_(rest),
                    "variants": later(llama_variants, state, idx[:, 4:], H, L, cache_arg),
                    "n_blocks": L,
                    "T_total": 7,
                    "T_past": 4,
                },
            ),
        )
    )
    with torch.no_grad():
        _, full = model(idx[:, :1].repeat(1, T_max - 1))
    too_long = torch.from_numpy(rng.integers(0, V, size=(1, T_max + 1))).long()
    cases.append(
        Case(
            "TinyLlama",
            "more than block_size positions (cached + new) raise ValueError",
            0.75,
            [
                {"op": "module", "init": LLAMA, "state": state, "args": [too_long]},
                {
                    "op": "module",
                    "init": LLAMA,
                    "state": state,
                    "args": [idx[:1, :2]],
                    "kwargs": {"cache": [tuple(t[:1] for t in c) for c in full]},
                },
            ],
            Judgement(
                "modern_lm.raises_value_error",
                {
                    "what": f"{what} given {T_max + 1} positions ({T_max + 1} new, or "
                    f"{T_max - 1} cached + 2 new)",
                    "because": f"the model only knows block_size = {T_max} positions",
                    "named": ["block-size-not-checked", "llama-block-size-cache-not-counted"],
                },
            ),
        )
    )
    return cases
