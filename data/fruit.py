"""The lecture's fruit example: a dictionary lookup made soft.

A Python dict answers "lemon" with "citron" and has no answer for "orange". Give every word a
vector instead, and "orange" can be compared with every key: it is most like lemon and a little
like apple and banana. The numbers in fruit.json are chosen so that the comparison, turned into
percentages by softmax, is exactly the lecture's 0.1, 0.1, 0.8, and the merged value reads
0.1 pomme + 0.1 banane + 0.8 citron.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["FruitData", "dict_en2fr", "load_fruit"]

_JSON = Path(__file__).with_name("fruit.json")


@dataclass(frozen=True)
class FruitData:
    """Keys, query and values of the fruit example.

    features     names of the key/query dimensions, e.g. "citrus"
    words        the English keys, in the order of the rows of `keys`
    translations the lecture's dict, English -> French
    keys         (3, d) one row per English word: which features it has
    query        (d,) the embedding of `query_word`, a word the dict does not know
    query_word   "orange"
    values       (3, d_v) one row per French word, in the order of `value_words`
    value_words  the French words, value i being the translation of key i
    """

    features: list
    words: list
    translations: dict
    keys: np.ndarray
    query: np.ndarray
    query_word: str
    values: np.ndarray
    value_words: list


def _read():
    with open(_JSON, encoding="utf-8") as f:
        return json.load(f)


def dict_en2fr():
    """The lecture's dictionary: {"apple": "pomme", "banana": "banane", "lemon": "citron"}."""
    return dict(_read()["translations"])


def load_fruit():
    """The fruit example as a FruitData; fresh arrays on every call, so editing them is safe."""
    raw = _read()
    words = list(raw["keys"])
    value_words = list(raw["value_words"])
    return FruitData(
        features=list(raw["features"]),
        words=words,
        translations=dict(raw["translations"]),
        keys=np.array([raw["keys"][w] for w in words], dtype=np.float64),
        query=np.array(raw["query"], dtype=np.float64),
        query_word=raw["query_word"],
        values=np.array([raw["values"][w] for w in value_words], dtype=np.float64),
        value_words=value_words,
    )
