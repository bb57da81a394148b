"""Load weights into a student's language model by the role each parameter plays, whatever its
attribute names, so that its logits can be compared with the reference's on the same weights.

    facts = load_roles(model, roles)   # {"tied": bool, "blocks": [...], "ln_f": module or None}

`roles` holds the weights the parent drew, by role: "tok" (V, d) token embedding, "pos" (T, d)
position embedding, "blocks" (one state per block under notebook 05's names: attn.q_proj.weight,
..., ff.fc1.weight, ..., ln1.weight, ...), "ln_f.weight"/"ln_f.bias" (final layer norm) and
"head" (V, d), the output layer's weight (no bias).

The blocks are the n_layers modules of one ModuleList or Sequential (or n_layers sibling modules
of one class). Inside a block, parameters are placed by name when notebook 05's names are used;
otherwise by the shape of each layer and by their order: a fused (3d, d) projection (a `qkv`
layer, nn.MultiheadAttention's in_proj_weight) takes q, k and v stacked; four (d, d) layers are
q, k, v, out (in that order unless their names say q/k/v/o); (d_ff, d) and (d, d_ff) layers are
fc1 and fc2; two layer norms are ln1 then ln2. Outside the blocks: the (V, d) parameter of an
nn.Embedding is the token table, one of an nn.Linear the head (a single (V, d) parameter used by
both is a tied head), a (T, d) parameter the positions, a pair of (d,) vectors the final norm.

A model whose parameters cannot be placed this way raises RoleMismatch, with plain facts (the
parameters left over, the roles nobody took) for the parent to word. This module only moves
weights: it computes nothing the parent judges.
"""

import re
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

BLOCK_LAYERS = ("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj", "ff.fc1", "ff.fc2")
NORMS = ("ln1", "ln2")
HINTS = {  # a layer's last name -> its role in attention
    "q": {"q_proj", "q", "query", "wq", "w_q", "to_q", "q_lin", "queries"},
    "k": {"k_proj", "k", "key", "wk", "w_k", "to_k", "k_lin", "keys"},
    "v": {"v_proj", "v", "value", "wv", "w_v", "to_v", "v_lin", "values"},
    "o": {"out_proj", "o", "out", "wo", "w_o", "o_proj", "proj", "c_proj", "to_out", "out_lin"},
}
GAIN, SHIFT = {"weight", "gamma", "g", "scale", "gain", "w"}, {"bias", "beta", "b", "shift"}


class RoleMismatch(Exception):
    """The model's parameters do not fit the roles: `facts` says how, as plain data."""

    def __init__(self, **facts) -> None:
        super().__init__(facts)
        self.facts = facts


def _shape(t) -> list[int]:
    return [int(s) for s in t.shape]


def find_blocks(model: nn.Module, n: int) -> list[tuple[str, nn.Module]] | None:
    """[(prefix, module)] of the n blocks, in order, or None."""
    for name, m in model.named_modules():
        if isinstance(m, nn.ModuleList | nn.Sequential) and len(m) == n:
            kids = list(m)
            if all(type(k) is type(kids[0]) for k in kids) and _count(kids[0]) >= 8:
                return [(f"{name}.{i}" if name else str(i), k) for i, k in enumerate(kids)]
    by_type: dict[type, list[tuple[str, nn.Module]]] = {}
    for name, m in model.named_children():
        if _count(m) >= 8:
            by_type.setdefault(type(m), []).append((name, m))
    found = [group for group in by_type.values() if len(group) == n]
    return found[0] if len(found) == 1 else None


def _count(module: nn.Module) -> int:
    return sum(1 for _ in module.parameters())


def _layers(named):
    """{owner path: {leaf name: parameter}} in registration order."""
    owners: dict[str, dict[str, nn.Parameter]] = {}
    for name, p in named:
        path, _, leaf = name.rpartition(".")
        owners.setdefault(path, {})[leaf] = p
    return owners


def _split(leaves):
    """(weight, bias) of a linear-like layer: its 2-D parameter and its 1-D one (or None)."""
    two = [p for p in leaves.values() if p.dim() == 2]
    one = [p for p in leaves.values() if p.dim() == 1]
    if len(two) != 1 or len(one) > 1 or len(leaves) != len(two) + len(one):
        return None
    return two[0], (one[0] if one else None)


def _gain_shift(leaves):
    """(gain, shift) of a norm given as two (d,) vectors: by name, else in order."""
    names = list(leaves)
    gain = [n for n in names if n.lower() in GAIN]
    shift = [n for n in names if n.lower() in SHIFT]
    if len(gain) == 1 and len(shift) == 1:
        return leaves[gain[0]], leaves[shift[0]]
    return leaves[names[0]], leaves[names[1]]


def _hint(path) -> str | None:
    last = path.rpartition(".")[2].lower()
    return next((role for role, names in HINTS.items() if last in names), None)


def block_state(
    block: nn.Module, ref: Mapping[str, torch.Tensor]
) -> list[tuple[nn.Parameter, torch.Tensor]]:
    """[(parameter, tensor)] placing ref (notebook 05's names) into one block's parameters."""
    own = dict(block.named_parameters())
    if set(own) == set(ref) and all(own[k].shape == ref[k].shape for k in ref):
        return [(own[k], ref[k]) for k in ref]
    d = ref["ln1.weight"].shape[0]
    d_ff = ref["ff.fc1.weight"].shape[0]
    norms: list[dict[str, torch.Tensor]] = []
    square: list[tuple[str, list[torch.Tensor]]] = []
    fused: list[list[torch.Tensor]] = []
    up: list[tuple[str, list[torch.Tensor]]] = []
    down: list[tuple[str, list[torch.Tensor]]] = []
    narrow: list[tuple[str, list[torch.Tensor]]] = []
    odd: list[str] = []
    for path, leaves in _layers(own.items()).items():
        shapes = [tuple(p.shape) for p in leaves.values()]
        if len(leaves) == 2 and all(s == (d,) for s in shapes):
            norms.append(leaves)
            continue
        wb = _split(leaves)
        shape = tuple(wb[0].shape) if wb else None
        if shape == (3 * d, d):
            fused.append(wb)
        elif shape == (d, d) and d != d_ff:
            square.append((path, wb))
        elif shape == (d_ff, d):
            up.append(wb)
        elif shape == (d, d_ff):
            down.append(wb)
        elif shape and shape[1] == d and shape[0] < d and d % shape[0] == 0:
            narrow.append((path, wb))  # one head's q, k or v: (d_k, d)
        else:
            odd.extend(f"{path}.{leaf}" if path else leaf for leaf in leaves)
    heads = _per_head(narrow, d)
    layout = (len(fused), len(square), heads is not None)
    expected = layout in ((0, 4, False), (1, 1, False), (0, 1, True))
    if odd or len(norms) != 2 or len(up) != 1 or len(down) != 1 or not expected:
        raise RoleMismatch(
            block=[[n, _shape(p)] for n, p in own.items()],
            reference=[[n, _shape(t)] for n, t in ref.items()],
        )
    pairs = []

    def place(wb, prefix: str) -> None:
        weight, bias = wb
        pairs.append((weight, ref[f"{prefix}.weight"]))
        if bias is not None:
            pairs.append((bias, ref[f"{prefix}.bias"]))

    if heads is not None:  # separate heads: each takes its rows of q_proj, k_proj, v_proj
        for role, layers in heads.items():
            prefix = f"attn.{role}_proj"
            for h, (weight, bias) in enumerate(layers):
                rows = slice(h * weight.shape[0], (h + 1) * weight.shape[0])
                pairs.append((weight, ref[f"{prefix}.weight"][rows]))
                if bias is not None:
                    pairs.append((bias, ref[f"{prefix}.bias"][rows]))
        place(square[0][1], "attn.out_proj")
    elif fused:
        weight, bias = fused[0]
        qkv = [f"attn.{x}_proj" for x in "qkv"]
        pairs.append((weight, torch.cat([ref[f"{p}.weight"] for p in qkv])))
        if bias is not None:
            pairs.append((bias, torch.cat([ref[f"{p}.bias"] for p in qkv])))
        place(square[0][1], "attn.out_proj")
    else:
        hints = [_hint(path) for path, _ in square]
        if sorted(h or "" for h in hints) == ["k", "o", "q", "v"]:
            square = [square[hints.index(r)] for r in "qkvo"]
        for (_, wb), layer in zip(square, BLOCK_LAYERS[:4], strict=True):
            place(wb, layer)
    place(up[0], "ff.fc1")
    place(down[0], "ff.fc2")
    for leaves, name in zip(norms, NORMS, strict=True):
        gain, shift = _gain_shift(leaves)
        pairs += [(gain, ref[f"{name}.weight"]), (shift, ref[f"{name}.bias"])]
    return pairs


def _per_head(narrow, d):
    """{"q": [(weight, bias) per head], "k": ..., "v": ...} for per-head projections named
    q/k/v (query, key, value, ...), heads in registration order; None otherwise."""
    if not narrow:
        return None
    d_k = narrow[0][1][0].shape[0]
    by_role: dict[str, list[list[torch.Tensor]]] = {"q": [], "k": [], "v": []}
    for path, wb in narrow:
        role = _hint(path)
        if role not in by_role or wb[0].shape[0] != d_k:
            return None
        by_role[role].append(wb)
    if any(len(layers) != d // d_k for layers in by_role.values()):
        return None
    return by_role


def load_roles(model: nn.Module, roles: Mapping[str, Any]) -> dict[str, Any]:
    """Copy `roles` into the model's parameters (see the module's docstring); plain facts."""
    blocks = find_blocks(model, len(roles["blocks"]))
    if blocks is None:
        raise RoleMismatch(no_blocks=len(roles["blocks"]))
    pairs = []
    for (_, block), ref in zip(blocks, roles["blocks"], strict=True):
        pairs += block_state(block, ref)
    inside = {id(p) for _, b in blocks for p in b.parameters()}
    rest = [(n, p) for n, p in model.named_parameters() if id(p) not in inside]
    V, d = roles["tok"].shape
    T = roles["pos"].shape[0]
    holders: dict[int, list[nn.Module]] = {}
    for m in model.modules():
        for p in m.parameters(recurse=False):
            holders.setdefault(id(p), []).append(m)
    table = [(n, p) for n, p in rest if tuple(p.shape) == (V, d)]
    head_t = [(n, p) for n, p in rest if tuple(p.shape) == (d, V) and V != d]
    taken = {id(p) for _, p in table + head_t}
    pos = [
        (n, p) for n, p in rest if id(p) not in taken and p.numel() == T * d and p.shape[-1] == d
    ]
    taken |= {id(p) for _, p in pos}
    others = _layers((n, p) for n, p in rest if id(p) not in taken)
    final = [
        leaves
        for leaves in others.values()
        if [tuple(p.shape) for p in leaves.values()] == [(d,), (d,)]
    ]
    extra = [
        [f"{path}.{leaf}" if path else leaf, _shape(p)]
        for path, leaves in others.items()
        if not (len(final) == 1 and leaves is final[0])
        for leaf, p in leaves.items()
    ]
    tok = head = None
    tied = len(table) == 1 and not head_t  # one table for both ends: a tied head
    if len(table) == 2 and not head_t:
        kinds = [[type(m) for m in holders[id(p)]] for _, p in table]
        emb = [i for i, k in enumerate(kinds) if nn.Embedding in k]
        lin = [i for i, k in enumerate(kinds) if nn.Linear in k]
        if len(emb) == 1 and len(lin) == 1 and emb != lin:
            order = [emb[0], lin[0]]
        else:
            named = [bool(re.search(r"head|out|logit|unemb", n.lower())) for n, _ in table]
            order = [1, 0] if named[0] and not named[1] else [0, 1]
        tok, head = table[order[0]][1], table[order[1]][1]
    elif len(table) == 1:
        tok = table[0][1]
        head = head_t[0][1] if head_t else None
    missing = []
    if tok is None:
        missing.append("tok")
    if head is None and not tied:
        missing.append("head")
    if len(pos) != 1:
        missing.append("pos")
    if len(final) != 1:
        missing.append("ln_f")
    if missing or extra:
        raise RoleMismatch(missing=missing, extra=extra, tied=tied)
    assert tok is not None  # else "tok" is missing, raised above
    pairs.append((tok, roles["tok"]))
    if head is not None:
        pairs.append((head, roles["head"].T if tuple(head.shape) == (d, V) else roles["head"]))
    pairs.append((pos[0][1], roles["pos"]))
    gain, shift = _gain_shift(final[0])
    pairs += [(gain, roles["ln_f.weight"]), (shift, roles["ln_f.bias"])]
    misfit = [
        [n, _shape(p)]
        for n, p in model.named_parameters()
        if any(p is param and p.numel() != value.numel() for param, value in pairs)
    ]
    if misfit:
        raise RoleMismatch(missing=[], extra=misfit, tied=tied)
    with torch.no_grad():
        for param, value in pairs:
            param.copy_(value.reshape(param.shape).to(param.dtype))
    ln_f = next(
        (m for m in model.modules() if any(p is gain for p in m.parameters(recurse=False))), None
    )
    return {"tied": tied, "blocks": [b for _, b in blocks], "ln_f": ln_f}
