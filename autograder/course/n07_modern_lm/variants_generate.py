"""Known-wrong versions of notebook 07's sampling and generate_cached, each with its right
mode (variant=None), run when a probe BUILDS its cases: see variants.py.
"""

import numpy as np

# ---------------------------------------------------------------- sampling (generate_cached)


def sampling_distribution(row, temperature=1.0, top_k=None, top_p=None, variant=None):
    """The distribution of the next token given one row of logits (float64), as notebook 06's
    generate samples; variants: temperature-multiplied, top-p-excludes-boundary (the token that
    crosses top_p dropped), top-p-ignored, top-k-ignored."""
    z = np.asarray(row, dtype=float)
    z = z * temperature if variant == "temperature-multiplied" else z / temperature
    if variant == "top-k-off-by-one" and top_k is not None:
        top_k -= 1
    if top_k is not None and top_k > 0 and variant != "top-k-ignored":
        kth = np.sort(z)[-min(top_k, z.size)]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p is not None and top_p < 1.0 and variant != "top-p-ignored":
        order = np.argsort(-p, kind="stable")
        before = np.cumsum(p[order]) - p[order]
        keep = before < top_p
        if variant == "top-p-excludes-boundary":
            keep = np.cumsum(p[order]) <= top_p
            keep[0] = True
        kept = np.zeros_like(p, dtype=bool)
        kept[order[keep]] = True
        p = np.where(kept, p, 0.0)
        p /= p.sum()
    return p


def cached_greedy(table, positions, prompt, steps, variant=None):
    """Greedy chains under the harness's cached toy model (logits of token w at position m:
    table[w] + positions[m]); variants: cache-positions-restart (each new token fed without the
    cache: position 0), cache-not-updated (the prompt's cache passed at every step: position T0),
    sampled-from-first-position (the first new token from the prompt's first position),
    cache-last-token-fed-again (the last prompt token fed once more after the prompt: every
    token after it one position later)."""
    table, positions = np.asarray(table), np.asarray(positions)
    rows = [list(map(int, r)) for r in np.asarray(prompt)]
    T0 = len(rows[0])
    for row in rows:
        for step in range(steps):
            m, w = len(row) - 1, row[-1]
            if step > 0 and variant == "cache-positions-restart":
                m = 0
            elif step > 0 and variant == "cache-not-updated":
                m = T0
            elif step == 0 and variant == "sampled-from-first-position":
                m, w = 0, row[0]
            elif variant == "cache-last-token-fed-again":
                m = len(row)
            row.append(int(np.argmax(table[w] + positions[m])))
    return rows
