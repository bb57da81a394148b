"""Hidden tests of notebook 08 (your model meets a real one, PyTorch).

GroupedQueryAttention and Llama are built in the harness with weights loaded under the
notebook's names and judged by values: against the reference, and where one exists against an
independent oracle (with n_kv_heads == n_heads, notebook 07's CausalSelfAttention given the same
weights). load_hf_llama gets a state dict in Hugging Face's layout (names, shapes, half-split
q/k rows) drawn here; the expected logits are the reference's after loading it, and
tests/course/n08_real_models/test_real_models.py shows the reference's equal transformers' LlamaForCausalLM's, so
grading never imports transformers. kv_cache_bytes is asked for several configurations.

Every model is tiny (widths 16-56, two layers): the hidden tests cost well under a CPU-second.
"""

import torch

from autograder.course.n07_modern_lm.reference import CausalSelfAttention
from autograder.course.n08_real_models import reference as ref
from autograder.course.n08_real_models import variants as mv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import later, load, np_, tensor, torch_probe
from autograder.judging import Judgement

J = "n08_real_models."


def _linear(rng, name, d_in, d_out):
    return {f"{name}.weight": tensor(rng, d_out, d_in, scale=d_in**-0.5)}


def attention_state(rng, d, d_kv, prefix=""):
    return {
        **_linear(rng, f"{prefix}wq", d, d),
        **_linear(rng, f"{prefix}wk", d, d_kv),
        **_linear(rng, f"{prefix}wv", d, d_kv),
        **_linear(rng, f"{prefix}wo", d, d),
    }


# ---------------------------------------------------------------- GroupedQueryAttention


def _call(init):
    args = ", ".join(str(init[k]) for k in ("d_model", "n_heads", "n_kv_heads"))
    base = f", rope_base={init['rope_base']:g}" if "rope_base" in init else ""
    return f"GroupedQueryAttention({args}{base})"


def _gqa_case(name, points, init, state, x, cache=None, expected=None):
    module = load(ref.GroupedQueryAttention(**init), state)
    if expected is None:
        with torch.no_grad():
            y, (k, v) = module(x, cache)
        expected = (np_(y), np_(k), np_(v))
    T_past = 0 if cache is None else cache[0].shape[2]
    call = "forward(x)" if cache is None else f"forward(x, cache) with {T_past} cached positions"
    request = {"op": "module", "init": init, "state": state, "args": [x]}
    if cache is not None:
        request["kwargs"] = {"cache": tuple(cache)}
    return Case(
        "GroupedQueryAttention",
        name,
        points,
        [request],
        Judgement(
            J + "gqa_values",
            {
                "what": f"{_call(init)}.{call}",
                "expected": expected,
                "variants": later(mv.attention_variants, init, state, x, cache),
                "n_heads": init["n_heads"],
                "n_kv_heads": init["n_kv_heads"],
            },
        ),
    )


@torch_probe("GroupedQueryAttention")
def gqa_cases(rng):
    d, H = 16, 4
    cases = []
    init = {"d_model": d, "n_heads": H, "n_kv_heads": 2}
    state = attention_state(rng, d, 8)
    x = tensor(rng, 2, 8, d)
    cases.append(
        _gqa_case(
            "4 query heads sharing 2 key/value heads: output and cache", 2.0, init, state, x[:, :5]
        )
    )
    module = load(ref.GroupedQueryAttention(**init), state)
    with torch.no_grad():
        _, cache = module(x[:, :5])
    cases.append(
        _gqa_case(
            "3 new tokens after 5 cached: the same as fed whole", 1.0, init, state, x[:, 5:], cache
        )
    )

    # n_kv_heads == n_heads: notebook 07's attention with the same weights is the oracle
    same = {"d_model": d, "n_heads": H, "n_kv_heads": H}
    full = attention_state(rng, d, d)
    x1 = tensor(rng, 2, 5, d)
    oracle = load(CausalSelfAttention(d, H), full)
    with torch.no_grad():
        y, (k, v) = oracle(x1)
    cases.append(
        _gqa_case(
            "n_kv_heads == n_heads: notebook 07's CausalSelfAttention",
            1.0,
            same,
            full,
            x1,
            expected=(np_(y), np_(k), np_(v)),
        )
    )
    mqa = {"d_model": d, "n_heads": H, "n_kv_heads": 1}
    cases.append(
        _gqa_case(
            "n_kv_heads == 1: multi-query attention",
            1.0,
            mqa,
            attention_state(rng, d, 4),
            tensor(rng, 1, 6, d),
        )
    )
    based = {**init, "rope_base": 100.0}
    cases.append(
        _gqa_case(
            "the rope_base argument (rope_base=100)",
            0.5,
            based,
            attention_state(rng, d, 8),
            tensor(rng, 1, 7, d),
        )
    )
    bad_kv = int(rng.choice([3, 5]))
    d_ok = 4 * int(rng.integers(2, 33))  # a multiple of 4 heads, but not of bad_kv's groups
    d_bad = 4 * int(rng.integers(2, 33)) + 2  # not a multiple of 4 heads
    cases.append(
        Case(
            "GroupedQueryAttention",
            "head counts that do not divide raise ValueError",
            0.5,
            [
                {"op": "object", "init": {"d_model": d_ok, "n_heads": 4, "n_kv_heads": bad_kv}},
                {"op": "object", "init": {"d_model": d_bad, "n_heads": 4, "n_kv_heads": 2}},
            ],
            Judgement(
                J + "constructor_raises",
                {
                    "what": f"GroupedQueryAttention({d_ok}, 4, {bad_kv}) or ({d_bad}, 4, 2)",
                    "because": "each key/value head serves a whole group of query heads, and "
                    "d_model splits into n_heads heads of equal width",
                },
            ),
        )
    )
    return cases


# ---------------------------------------------------------------- Llama

LLAMA = {
    "vocab_size": 13,
    "block_size": 10,
    "d_model": 56,
    "n_heads": 4,
    "n_layers": 2,
    "n_kv_heads": 2,
}
# the default for d_model 56: 8 * 56 / 3 = 149.3, rounded UP to a multiple of 64: 192; not
# 149 (no rounding), 128 (the nearest multiple) nor 224 (GPT's 4 * d_model)
LLAMA_D_FF = 192


def _kv_heads(init):
    return init.get("n_kv_heads") or init["n_heads"]


def llama_state(rng, init, emb_scale=1.0):
    V, d, L = init["vocab_size"], init["d_model"], init["n_layers"]
    d_kv = _kv_heads(init) * d // init["n_heads"]
    state = {"tok_emb.weight": tensor(rng, V, d, scale=emb_scale)}
    for i in range(L):
        p = f"blocks.{i}."
        state[p + "norm1.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        state[p + "norm2.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        state.update(attention_state(rng, d, d_kv, p + "attn."))
        for name, a, b in (("w1", d, LLAMA_D_FF), ("w3", d, LLAMA_D_FF), ("w2", LLAMA_D_FF, d)):
            state.update(_linear(rng, f"{p}ffn.{name}", a, b))
    state["norm.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
    if not init.get("tie_embeddings", True):
        state["lm_head.weight"] = tensor(rng, V, d, scale=d**-0.5)
    return state


def _llama_call(init):
    shown = ", ".join(f"{k}={v}" for k, v in init.items())
    return f"Llama({shown})"


def _llama_values(name, points, init, state, idx, rng):
    model = mv.reference_llama(init, state)
    with torch.no_grad():
        logits, _ = model(idx)
    request = {
        "op": "module",
        "init": init,
        "state": state,
        "args": [idx],
        "backward": tensor(rng, *logits.shape),
        "backward_output": 0,
    }
    return Case(
        "Llama",
        name,
        points,
        [request],
        Judgement(
            J + "llama_values",
            {
                "what": f"{_llama_call(init)}(idx {tuple(idx.shape)})",
                "expected": np_(logits),
                "variants": later(mv.llama_variants, init, state, idx),
                "d_ff": LLAMA_D_FF,
                "tied": init.get("tie_embeddings", True),
                "n_heads": init["n_heads"],
                "n_kv_heads": _kv_heads(init),
                "n_blocks": init["n_layers"],
                "d_kv": _kv_heads(init) * init["d_model"] // init["n_heads"],
                "kv_left_out": init.get("n_kv_heads") is None,
            },
        ),
    )


def _llama_cache_case(name, points, state, idx, T_past, expected):
    """idx[:, T_past:] fed to Llama(**LLAMA) with the reference's cache of idx[:, :T_past]."""
    model = mv.reference_llama(LLAMA, state)
    with torch.no_grad():
        _, cache = model(idx[:, :T_past])
    cache_arg = [tuple(c) for c in cache]
    new = idx[:, T_past:]
    return Case(
        "Llama",
        name,
        points,
        [
            {
                "op": "module",
                "init": LLAMA,
                "state": state,
                "args": [new],
                "kwargs": {"cache": cache_arg},
            }
        ],
        Judgement(
            J + "llama_cache",
            {
                "what": f"{_llama_call(LLAMA)}(idx {tuple(new.shape)}, cache of {T_past} "
                "positions)",
                "expected": expected,
                "variants": later(mv.llama_variants, LLAMA, state, new, cache_arg),
                "n_blocks": LLAMA["n_layers"],
                "T_total": idx.shape[1],
                "block_size": LLAMA["block_size"],
                "d_ff": LLAMA_D_FF,
                "d_kv": LLAMA["n_kv_heads"] * LLAMA["d_model"] // LLAMA["n_heads"],
            },
        ),
    )


@torch_probe("Llama")
def llama_cases(rng):
    V, T_max = LLAMA["vocab_size"], LLAMA["block_size"]
    state = llama_state(rng, LLAMA)
    idx = torch.from_numpy(rng.integers(0, V, size=(2, 7))).long()
    cases = [
        _llama_values(
            "logits: grouped-query attention, the head tied to the embedding",
            1.5,
            LLAMA,
            state,
            idx,
            rng,
        )
    ]
    # small embeddings: the norms' eps then changes the logits; n_kv_heads left out (= n_heads)
    untied: dict[str, object] = {k: v for k, v in LLAMA.items() if k != "n_kv_heads"}
    untied.update(tie_embeddings=False, rope_base=100.0, norm_eps=0.01)
    cases.append(
        _llama_values(
            "an untied head, n_kv_heads left out, rope_base and norm_eps",
            1.5,
            untied,
            llama_state(rng, untied, emb_scale=0.05),
            torch.from_numpy(rng.integers(0, V, size=(2, 6))).long(),
            rng,
        )
    )
    model = mv.reference_llama(LLAMA, state)
    with torch.no_grad():
        whole, _ = model(idx)
    cases.append(
        _llama_cache_case(
            "3 new tokens through the cache of the 4 before: the same logits as fed whole",
            1.0,
            state,
            idx,
            4,
            np_(whole[:, 4:]),
        )
    )
    # a prompt, then pieces through the cache until the window is exactly full
    full = torch.from_numpy(rng.integers(0, V, size=(1, T_max))).long()
    with torch.no_grad():
        whole, _ = model(full)
    T_past = T_max - 3
    cases.append(
        _llama_cache_case(
            f"cached and new positions filling block_size = {T_max} exactly",
            0.5,
            state,
            full,
            T_past,
            np_(whole[:, T_past:]),
        )
    )
    too_long = torch.from_numpy(rng.integers(0, V, size=(1, T_max + 1))).long()
    with torch.no_grad():
        _, cache = model(too_long[:, :T_past])
    cache_arg = [tuple(c) for c in cache]
    cases.append(
        Case(
            "Llama",
            "more than block_size positions raise ValueError, cached ones counted",
            0.5,
            [
                {"op": "module", "init": LLAMA, "args": [too_long]},
                {
                    "op": "module",
                    "init": LLAMA,
                    "args": [too_long[:, T_past:]],
                    "kwargs": {"cache": cache_arg},
                },
            ],
            Judgement(
                J + "block_size_raises",
                {
                    "what": f"{_llama_call(LLAMA)} given {T_max + 1 - T_past} new positions "
                    f"after {T_past} cached (or {T_max + 1} without a cache)",
                    "because": f"the model only knows block_size = {T_max} positions, cached "
                    "and new together",
                },
            ),
        )
    )
    return cases


# ---------------------------------------------------------------- load_hf_llama

HF = {
    "vocab_size": 11,
    "block_size": 12,
    "d_model": 16,
    "n_heads": 2,
    "n_layers": 2,
    "n_kv_heads": 1,
    "d_ff": 32,
}


def hf_state(rng, init):
    """A LlamaForCausalLM state dict's names and shapes (q/k rows in its half-split layout)."""
    V, d, L, d_ff = init["vocab_size"], init["d_model"], init["n_layers"], init["d_ff"]
    d_kv = init["n_kv_heads"] * d // init["n_heads"]
    state = {"model.embed_tokens.weight": tensor(rng, V, d)}
    for i in range(L):
        p = f"model.layers.{i}."
        state[p + "input_layernorm.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        for name, d_out in (("q", d), ("k", d_kv), ("v", d_kv), ("o", d)):
            state.update(_linear(rng, f"{p}self_attn.{name}_proj", d, d_out))
        state[p + "post_attention_layernorm.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
        state.update(_linear(rng, p + "mlp.gate_proj", d, d_ff))
        state.update(_linear(rng, p + "mlp.up_proj", d, d_ff))
        state.update(_linear(rng, p + "mlp.down_proj", d_ff, d))
    state["model.norm.weight"] = tensor(rng, d, scale=0.2, shift=1.0)
    if not init.get("tie_embeddings", True):
        state["lm_head.weight"] = tensor(rng, V, d, scale=d**-0.5)
    return state


def _load_request(init, state, idx=None):
    request = {"op": "load", "model": "Llama", "init": init, "state": state}
    if idx is not None:
        request["args"] = [idx]
    return request


def _hf_logits_case(name, points, init, state, idx):
    model = ref.load_hf_llama(ref.Llama(**init).eval(), state)
    with torch.no_grad():
        logits, _ = model(idx)
    return Case(
        "load_hf_llama",
        name,
        points,
        [_load_request(init, state, idx)],
        Judgement(
            J + "hf_logits",
            {
                "what": f"load_hf_llama({_llama_call(init)}, state_dict)",
                "expected": np_(logits),
                "variants": later(mv.load_variants, init, state, idx),
            },
        ),
    )


def _rejects(name, init, state, key, because):
    return Case(
        "load_hf_llama",
        name,
        0.5,
        [_load_request(init, state)],
        Judgement(
            J + "hf_rejects",
            {
                "what": f"load_hf_llama({_llama_call(init)}, a state dict)",
                "key": key,
                "because": because,
            },
        ),
    )


@torch_probe("load_hf_llama")
def load_cases(rng):
    V = HF["vocab_size"]
    untied = {**HF, "tie_embeddings": False}
    state = hf_state(rng, untied)
    idx = torch.from_numpy(rng.integers(0, V, size=(2, 6))).long()
    cases = [
        _hf_logits_case(
            "an untied checkpoint with grouped-query attention: the same logits",
            2.0,
            untied,
            state,
            idx,
        )
    ]
    tied_state = hf_state(rng, HF)
    cases.append(
        _hf_logits_case(
            "a tied checkpoint without lm_head.weight, as published", 1.0, HF, tied_state, idx
        )
    )
    with_head = {**tied_state, "lm_head.weight": tied_state["model.embed_tokens.weight"].clone()}
    cases.append(
        _hf_logits_case(
            "a tied checkpoint whose lm_head.weight equals the embedding", 0.5, HF, with_head, idx
        )
    )
    layer = int(rng.integers(0, HF["n_layers"]))
    gone = str(rng.choice([f"model.layers.{layer}.mlp.up_proj.weight", "lm_head.weight"]))
    cases.append(
        _rejects(
            "a missing key raises ValueError naming it",
            untied,
            {k: v for k, v in state.items() if k != gone},
            gone,
            "every parameter of the model must come from the checkpoint",
        )
    )
    extra = f"model.layers.{layer}.self_attn.rotary_emb.inv_freq"
    cases.append(
        _rejects(
            "an unexpected key raises ValueError naming it",
            untied,
            {**state, extra: tensor(rng, HF["d_model"] // HF["n_heads"] // 2)},
            extra,
            "a key with no place in the model means the checkpoint is not the one you think",
        )
    )
    wrong = f"model.layers.{layer}.self_attn.k_proj.weight"
    cases.append(
        _rejects(
            "a misshapen key raises ValueError naming it",
            untied,
            {**state, wrong: tensor(rng, HF["d_model"], HF["d_model"])},
            wrong,
            "a checkpoint with 2 key/value heads does not fit a model built with 1",
        )
    )
    return cases


# ---------------------------------------------------------------- kv_cache_bytes


def _kv_call(args):
    names = ("n_layers", "n_kv_heads", "d_head", "seq_len", "batch", "bytes_per_value")
    return (
        "kv_cache_bytes(" + ", ".join(f"{n}={a}" for n, a in zip(names, args, strict=False)) + ")"
    )


@torch_probe("kv_cache_bytes")
def kv_cases(rng):
    configs = [
        # a 7B-like model, a long context
        (32, 8, 128, int(rng.integers(1000, 5000)), int(rng.integers(3, 9)), 2),
        # batch 3, 1 byte a value (an 8-bit cache): each counting mistake gives its own number
        (int(rng.integers(2, 40)), int(rng.integers(1, 9)), 64, int(rng.integers(10, 900)), 3, 1),
        (int(rng.integers(2, 12)), 1, 32, int(rng.integers(10, 90)), 5, 4),
    ]
    calls = [[_kv_call(c), ref.kv_cache_bytes(*c), mv.kv_bytes_variants(*c)] for c in configs]
    short = (int(rng.integers(2, 30)), int(rng.integers(1, 9)), 64, int(rng.integers(10, 900)))
    return [
        Case(
            "kv_cache_bytes",
            "the bytes of keys and values: layers, heads, positions, batch, bytes per value",
            1.5,
            [{"op": "calls", "calls": [[list(c), {}] for c in configs]}],
            Judgement(J + "kv_bytes", {"calls": calls}),
        ),
        Case(
            "kv_cache_bytes",
            "the defaults: one sequence, 2 bytes per value (bfloat16)",
            0.5,
            [{"op": "calls", "calls": [[list(short), {}]]}],
            Judgement(
                J + "kv_bytes",
                {
                    "calls": [
                        [_kv_call(short), ref.kv_cache_bytes(*short), mv.kv_bytes_variants(*short)]
                    ]
                },
            ),
        ),
    ]
