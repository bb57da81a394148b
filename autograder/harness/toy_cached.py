"""A fixed toy language model with a cache, for notebook 07's generate_cached.

logits[b, t] = table[idx[b, t]] + positions[T_past + t]: a bigram model whose logits also depend
on the absolute position, so that a generation feeding its tokens at the wrong positions (the
cache dropped or not updated) picks other tokens, and the parent can tell from the tokens alone.
It takes and returns its cache the way TinyLlama does: one (k, v) per block, each
(B, 1, T_past, 1); only their length matters.
"""

import numpy as np
import numpy.typing as npt
import torch
from torch import nn


class ToyCachedLM(nn.Module):
    def __init__(self, table: npt.ArrayLike, positions: npt.ArrayLike, block_size: int) -> None:
        super().__init__()
        self.table = nn.Parameter(
            torch.as_tensor(np.asarray(table), dtype=torch.float32), requires_grad=False
        )
        self.positions = nn.Parameter(
            torch.as_tensor(np.asarray(positions), dtype=torch.float32), requires_grad=False
        )
        self.block_size = int(block_size)

    def forward(
        self, idx: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]] | None = None
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        B, T = idx.shape
        T_past = 0 if cache is None else int(cache[0][0].shape[2])
        if T_past + T > self.block_size:
            raise ValueError(f"the toy model holds {self.block_size} positions, not {T_past + T}")
        logits = self.table[idx] + self.positions[T_past : T_past + T]
        k = torch.zeros(B, 1, T_past + T, 1)
        return logits, [(k, k.clone())]
