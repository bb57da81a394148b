"""Hidden tests of notebook 07's RegexBPETokenizer: BPE inside GPT-2's pre-tokenization chunks,
with special tokens.

The training text is drawn from a few words with contractions, digits, symbols, accented
letters and runs of spaces, until every known mistake (merges across chunks, another tie order,
another pattern: variants_regex_bpe.py) learns other merges; the texts to encode
are drawn until every encoding mistake gives other ids. Special tokens get ids well above
256 + len(merges), so ids numbered from 256 collide with merges and show. The judges are
modern_lm.bpe_merges / bpe_encode / bpe_unknown (shared with BPETokenizer) and
modern_lm.regex_specials / regex_special_decode.
"""

from autograder.course.n07_modern_lm import variants_regex_bpe as rv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import torch_probe
from autograder.judging import Judgement

LETTERS = ("ab", "ba", "aa", "ca", "é", "ée", "a", "b", "ü", "aab")
TAILS = ("", "", "'s", "'t", "'ve", "12", "1", "!!", ",", "?")
SEPARATORS = (" ", " ", " ", "  ", "   ", "\n", " \n ", "\n\n")
SPECIALS = ("<|endoftext|>", "<|pad|>")
ORDERS = ("reverse", "left-to-right", "most-frequent")
TRIES = 300
MERGES_HINT = (
    "Split the text with GPT-2's pattern first; count the adjacent pairs over every chunk, in "
    "the order of the text, merge the most frequent (ties: the one that occurs first) inside "
    "every chunk, and stop when no pair occurs twice."
)


def _words(rng):
    return [
        "".join(rng.choice(LETTERS, size=int(rng.integers(1, 4)))) + str(rng.choice(TAILS))
        for _ in range(6)
    ]


def _text(rng, words, n):
    out = []
    for w in rng.choice(words, size=n):
        out.append(str(w))
        out.append(str(rng.choice(SEPARATORS)))
    return "".join(out).strip()


def _draw(rng):
    """(words, text, vocab_size, merges, train variants, sample, its ids, encode variants)."""
    for _ in range(TRIES):
        words = _words(rng)
        text = _text(rng, words, int(rng.integers(16, 26)))
        vocab_size = 256 + int(rng.integers(8, 14))
        merges = rv.train(text, vocab_size)
        variants = rv.train_variants(text, vocab_size)
        if any(v == merges for _, v in variants) or any(
            a == b for i, (x, a) in enumerate(variants) for y, b in variants[i + 1 :] if x != y
        ):  # every mistake shows, and no two of different ids learn the same merges
            continue
        for _ in range(60):
            sample = _text(rng, words, int(rng.integers(8, 14)))
            ids = rv.encode(merges, {}, sample)
            # every order mistake shows (checked first: they are the cheap test); a pattern
            # mistake is named where it shows (the merges' case sees it anyway), and an encode
            # without chunks rarely can: a merge learned inside chunks seldom finds its pair
            # across a chunk's edge
            if any(rv.encode(merges, {}, sample, key) == ids for key in ORDERS):
                continue
            shown = [(i, v) for i, v in rv.encode_variants(merges, {}, sample) if v != ids]
            more = rv.train_variants(text, vocab_size, rv.SHOWN_VARIANTS)
            variants = variants + [(i, v) for i, v in more if v != merges]
            return words, text, vocab_size, merges, variants, sample, ids, shown
    raise RuntimeError("no discriminating RegexBPE text drawn")


def _specials_draw(rng, words, merges, specials):
    for _ in range(TRIES):
        parts = [_text(rng, words, int(rng.integers(2, 4))) for _ in range(3)]
        chosen = rng.choice(list(specials), size=2)
        sample = parts[0] + chosen[0] + parts[1] + str(chosen[1]) + " " + parts[2]
        ids = rv.encode(merges, specials, sample)
        encodings = rv.encode_variants(merges, specials, sample, rv.SPECIAL_VARIANTS)
        if all(v != ids for _, v in encodings):
            return sample, ids, encodings
    raise RuntimeError("no discriminating special-token text drawn")


def _edge_draw(rng):
    """A text whose merges are two spaces, then a space and one letter b: runs of three spaces
    between letters, which GPT-2's pattern cuts into '  ' and ' ' + the next letter. Encoded:
    two spaces before b, then another word and three spaces before b. Chunked, the first two
    spaces are ' ' and ' b' and never merge; without chunks they do; a pattern that keeps
    each run of spaces whole (with no space in front of a word) gives other ids again."""
    a, b, c, x, y = (str(ch) for ch in rng.choice(list("acdefghkmn"), size=5, replace=False))
    text = "   ".join([a, b, b, b, c])
    sample = f"{x}  {b} {y}   {b}"
    merges = rv.train(text, EDGE_VOCAB)
    return text, merges, sample, rv.encode(merges, {}, sample)


EDGE_VOCAB = 258


def _obj(text, vocab_size, steps, specials=None):
    kwargs = {} if specials is None else {"special_tokens": specials}
    return {"op": "object", "init_args": [text, vocab_size], "init": kwargs, "steps": steps}


def _vocab(merges):
    """The bytes of every id: the 256 bytes, then each merge's two parts joined."""
    vocab = [bytes([i]) for i in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return vocab


def _spelled(merges):
    vocab = _vocab(merges)
    return [list(vocab[256 + i]) for i in range(len(merges))]


@torch_probe("RegexBPETokenizer")
def regex_bpe_cases(rng):
    words, text, vocab_size, merges, variants, sample, ids, encodings = _draw(rng)
    first = vocab_size + int(rng.integers(100, 1000))  # well above 256 + len(merges)
    specials = {SPECIALS[0]: first, SPECIALS[1]: first + 1}
    special_sample, special_ids, special_variants = _specials_draw(rng, words, merges, specials)
    split = [*"ü".encode(), first]  # one character's two bytes, each its own id
    what = f"RegexBPETokenizer(text of {len(text)} characters, vocab_size={vocab_size})"
    edge_text, edge_merges, edge, edge_ids = _edge_draw(rng)
    with_specials = f"{what[:-1]}, special_tokens={specials})"
    cases = [
        Case(
            "RegexBPETokenizer",
            "merges: counted and merged inside the pattern's chunks only",
            2.0,
            [_obj(text, vocab_size, [{"attr": "merges"}, {"attr": "vocab_size"}])],
            Judgement(
                "modern_lm.bpe_merges",
                {"what": what, "expected": merges, "variants": variants, "hint": MERGES_HINT},
            ),
        ),
        Case(
            "RegexBPETokenizer",
            "encode: chunk by chunk, the merges in the order learned",
            1.25,
            [_obj(text, vocab_size, [{"attr": "merges"}, {"method": "encode", "args": [sample]}])],
            Judgement(
                "modern_lm.bpe_encode",
                {
                    "what": f"encode({sample!r})",
                    "expected": ids,
                    "variants": encodings,
                    "merges": merges,
                    "spelled": _spelled(merges),
                    "text": sample,
                    "hint": "Split the text with GPT-2's pattern, then encode each chunk from "
                    "its UTF-8 bytes, the earliest-learned merge present first, until none "
                    "applies.",
                    "name": "RegexBPETokenizer",
                },
            ),
        ),
        Case(
            "RegexBPETokenizer",
            "encode never merges a pair across two chunks",
            0.25,
            [
                _obj(
                    edge_text,
                    EDGE_VOCAB,
                    [{"attr": "merges"}, {"method": "encode", "args": [edge]}],
                )
            ],
            Judgement(
                "modern_lm.bpe_encode",
                {
                    "what": f"RegexBPETokenizer({edge_text!r}, vocab_size={EDGE_VOCAB})"
                    f".encode({edge!r})",
                    "expected": edge_ids,
                    "variants": rv.encode_variants(edge_merges, {}, edge),
                    "merges": edge_merges,
                    "spelled": _spelled(edge_merges),
                    "text": edge,
                    "hint": "GPT-2's pattern cuts two spaces before a word into ' ' and ' ' + "
                    "the word: encode each chunk on its own, so that a merge never joins bytes "
                    "of two chunks.",
                    "name": "RegexBPETokenizer",
                },
            ),
        ),
        Case(
            "RegexBPETokenizer",
            "special tokens become their own ids, whole, and never merge",
            0.5,
            [
                _obj(
                    text,
                    vocab_size,
                    [{"attr": "merges"}, {"method": "encode", "args": [special_sample]}],
                    specials,
                )
            ],
            Judgement(
                "modern_lm.regex_specials",
                {
                    "what": f"{with_specials}.encode({special_sample!r})",
                    "expected": special_ids,
                    "variants": special_variants,
                    "merges": merges,
                    "specials": specials,
                },
            ),
        ),
        Case(
            "RegexBPETokenizer",
            "decode gives the special tokens back",
            0.5,
            [
                _obj(
                    text,
                    vocab_size,
                    [
                        {"method": "decode", "args": [special_ids]},
                        {"method": "decode", "args": [[first + 1, *ids[:3], first]]},
                        {"attr": "merges"},
                        {"method": "encode", "args": [SPECIALS[0]]},
                        {"method": "decode", "args": [split]},
                    ],
                    specials,
                )
            ],
            Judgement(
                "modern_lm.regex_special_decode",
                {
                    "what": with_specials,
                    "texts": [
                        special_sample,
                        SPECIALS[1] + sample_prefix(merges, ids[:3]) + SPECIALS[0],
                        "ü" + SPECIALS[0],
                    ],
                    "calls": [special_ids, [first + 1, *ids[:3], first], split],
                    "at": [0, 1, 4],
                    "one_by_one": [
                        one_by_one(merges, specials, special_ids),
                        one_by_one(merges, specials, [first + 1, *ids[:3], first]),
                        one_by_one(merges, specials, split),
                    ],
                    "merges": merges,
                    "special": [SPECIALS[0], first],
                },
            ),
        ),
    ]
    bad = first + 2 + int(rng.integers(0, 5))
    unknown = [*ids[:3], bad]
    negative = [*ids[:2], -int(rng.integers(1, 4))]
    decodes = [{"method": "decode", "args": [unknown]}, {"method": "decode", "args": [negative]}]
    cases.append(
        Case(
            "RegexBPETokenizer",
            "an id neither in the vocabulary nor special raises ValueError naming it",
            0.5,
            [_obj(text, vocab_size, decodes, specials)],
            Judgement(
                "modern_lm.bpe_unknown",
                {"ids": unknown, "bad": bad, "name": "RegexBPETokenizer", "negative": negative},
            ),
        )
    )
    return cases


def sample_prefix(merges, ids):
    """The text the ids spell (bytes of the merges), as decode gives it."""
    vocab = _vocab(merges)
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


def one_by_one(merges, specials, ids):
    """The text the ids give decoded one id at a time (a split character broken)."""
    vocab = _vocab(merges)
    names = {i: s for s, i in specials.items()}
    return "".join(
        names[i] if i in names else vocab[i].decode("utf-8", errors="replace") for i in ids
    )
