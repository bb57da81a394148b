"""Known-wrong versions of notebook 07's RegexBPETokenizer, run when the probe BUILDS its cases
(cases_regex_bpe.py); the judges see only their outputs, as plain data.

The right mode (variant None) is written here again, independently of autograder.course.model_answers:
chunks by GPT-2's pattern, pairs counted over every chunk in text order, merges inside chunks.
"""

import functools

import regex  # type: ignore[import-untyped]  # no stubs in the course's pins (types-regex)

from autograder.course.n07_modern_lm.variants import _pairs, _replace, bpe_encode

GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# other patterns a student might write or copy (each named regex-bpe-wrong-pattern)
OTHER_PATTERNS = {
    "no-lookahead": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+""",
    "words-no-space": r"""\w+|[^\w\s]+|\s+""",
    "ascii-letters": r""" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""",
    "no-contractions": r""" ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "split-on-spaces": r"""\S+|\s+""",
}


def chunks(text, pattern=GPT2):
    return regex.findall(pattern, text)


def train(text, vocab_size, variant=None):
    """Merges (as lists) learned inside the chunks, right or with one mistake:
    across (no chunks: plain byte-level BPE), tie-smallest / tie-largest / tie-last (another
    tie order), tie-by-chunk-count (pairs counted over the distinct chunks, most frequent chunk
    first), tie-chunk-sorted (each chunk's pairs counted in sorted order, so a tie goes to the
    smallest pair of the first chunk holding one), chunks-counted-once (each distinct chunk
    once), or a name of OTHER_PATTERNS (another pattern)."""
    if variant == "across":
        pieces = [text]
    else:
        pieces = chunks(text, OTHER_PATTERNS.get(variant, GPT2))
    if variant == "chunks-counted-once":  # each distinct chunk once, in order of first occurrence
        pieces = list(dict.fromkeys(pieces))
    if variant == "tie-by-chunk-count":
        frequency: dict[str, int] = {}
        for piece in pieces:
            frequency[piece] = frequency.get(piece, 0) + 1
        order = sorted(frequency, key=lambda c: -frequency[c])
        pieces = [c for c in order for _ in range(frequency[c])]
    # each distinct chunk once, in the order of its first occurrence, with its number of
    # occurrences: the same counts, and the same order of first occurrence of every pair
    copies: dict[str, int] = {}
    for piece in pieces:
        copies[piece] = copies.get(piece, 0) + 1
    # (and a chunk's pairs counted again only when a merge changed it)
    seqs = [list(p.encode("utf-8")) for p in copies]
    found = [_pairs(ids) for ids in seqs]
    weights = list(copies.values())
    merges: list[tuple[int, int]] = []
    while 256 + len(merges) < vocab_size:
        counts: dict[tuple[int, int], int] = {}
        for pairs, weight in zip(found, weights, strict=True):
            items = sorted(pairs.items()) if variant == "tie-chunk-sorted" else pairs.items()
            for pair, n in items:
                counts[pair] = counts.get(pair, 0) + n * weight
        if not counts or max(counts.values()) < 2:
            break
        best = max(counts.values())
        tied = [p for p, c in counts.items() if c == best]
        pair = {"tie-smallest": min(tied), "tie-largest": max(tied), "tie-last": tied[-1]}.get(
            variant, tied[0]
        )
        for k, ids in enumerate(seqs):
            if pair in found[k]:
                seqs[k] = _replace(ids, pair, 256 + len(merges))
                found[k] = _pairs(seqs[k])
        merges.append(pair)
    return [list(p) for p in merges]


TRAIN_VARIANTS = (
    ("regex-bpe-merges-across-chunks", "across"),
    ("regex-bpe-tie-order", "tie-smallest"),
    ("regex-bpe-tie-order", "tie-largest"),
    ("regex-bpe-tie-order", "tie-last"),
    ("regex-bpe-tie-order", "tie-by-chunk-count"),
    *(("regex-bpe-wrong-pattern", name) for name in OTHER_PATTERNS),
)


# mistakes named where a training text shows them, which the draw does not ask of it
SHOWN_VARIANTS = (
    ("regex-bpe-tie-order", "tie-chunk-sorted"),
    ("regex-bpe-chunks-counted-once", "chunks-counted-once"),
)


def train_variants(text, vocab_size, table=TRAIN_VARIANTS):
    return [(id_, train(text, vocab_size, v)) for id_, v in table]


def encode(merges, specials, s, variant=None):
    """encode(s) with these merges and special tokens {string: id}, right or with one mistake:
    across (the merges applied over the whole text, no chunks), special-merged (the special
    tokens encoded as ordinary text), special-ids-from-256 (specials numbered 256, 257, ... in
    place of their ids), special-dropped (split at them without a capture group), a BPE order
    mistake inside each chunk (reverse, left-to-right,
    most-frequent), or a name of OTHER_PATTERNS."""
    order = {"reverse", "left-to-right", "most-frequent"}
    pieces = [s]
    if specials and variant != "special-merged":
        alternatives = "|".join(regex.escape(t) for t in sorted(specials, key=len, reverse=True))
        # without a capture group, regex.split drops the special tokens it splits at
        pieces = regex.split(
            alternatives if variant == "special-dropped" else f"({alternatives})", s
        )
    ids = []
    for piece in pieces:
        if piece in specials and variant != "special-merged":
            if variant == "special-ids-from-256":
                ids.append(256 + list(specials).index(piece))
            else:
                ids.append(specials[piece])
            continue
        parts = [piece] if variant == "across" else chunks(piece, OTHER_PATTERNS.get(variant, GPT2))
        learned = tuple(map(tuple, merges))
        for part in parts:
            ids.extend(_encode_chunk(learned, part, variant if variant in order else None))
    return ids


@functools.lru_cache(maxsize=4096)
def _encode_chunk(merges, part, order):
    """bpe_encode of one chunk: the probe encodes the same few words again and again while it
    draws its texts (a tuple: the callers copy it into their lists)."""
    return tuple(bpe_encode(merges, part, order))


ENCODE_VARIANTS = (
    ("regex-bpe-merges-across-chunks", "across"),
    ("bpe-encode-order", "reverse"),
    ("bpe-encode-order", "left-to-right"),
    ("bpe-encode-order", "most-frequent"),
    *(("regex-bpe-wrong-pattern", name) for name in OTHER_PATTERNS),
)
SPECIAL_VARIANTS = (
    ("regex-bpe-special-merged", "special-merged"),
    ("regex-bpe-special-ids-low", "special-ids-from-256"),
    ("regex-bpe-specials-dropped", "special-dropped"),
)


def encode_variants(merges, specials, s, table=ENCODE_VARIANTS):
    return [(id_, encode(merges, specials, s, v)) for id_, v in table]
