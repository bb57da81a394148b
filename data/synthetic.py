"""A synthetic corpus whose best possible loss is known exactly.

Real text never tells you how far your language model is from perfect. This corpus does: it is
drawn from an order-k Markov chain over a few characters, so the next character depends on the
previous k and on nothing else. Its entropy rate, the lowest cross-entropy any model can reach,
is a finite sum we can compute. A bigram model sees only the previous character and is stuck
above the rate; a transformer that attends to the last k characters can reach it.

Contexts are indexed oldest-character-first: the context "abc" over the alphabet "abcd" is
state 0*16 + 1*4 + 2 = 6, so `transition[6]` is P(next | "abc").
"""

import bisect

import numpy as np

__all__ = ["MarkovSource", "default_corpus"]


class MarkovSource:
    """An order-`order` Markov chain over the characters of `alphabet`.

    For every context of `order` characters the next-character distribution is a draw from a
    symmetric Dirichlet(`concentration`) (small concentration = peaked, predictable text), mixed
    with `smoothing` of the uniform distribution so that every context can follow every other
    one (the chain is ergodic and its stationary distribution is unique).
    """

    def __init__(self, alphabet="abcd", order=3, concentration=0.3, seed=0, smoothing=0.02):
        if len(set(alphabet)) != len(alphabet) or len(alphabet) < 2:
            raise ValueError(f"alphabet needs at least 2 distinct characters, got {alphabet!r}")
        if order < 1:
            raise ValueError(f"order must be at least 1, got {order}")
        if not 0 < smoothing <= 1:
            raise ValueError(f"smoothing must be in (0, 1], got {smoothing}")
        self.alphabet = alphabet
        self.order = order
        self.concentration = concentration
        self.seed = seed
        self.smoothing = smoothing
        A = len(alphabet)
        self.n_states = A**order
        rng = np.random.default_rng(seed)
        peaked = rng.dirichlet(np.full(A, concentration), size=self.n_states)
        # (n_states, A): row s is P(next character | context s)
        self.transition = (1 - smoothing) * peaked + smoothing / A
        self.stationary = self._stationary_distribution()
        self._index = {c: i for i, c in enumerate(alphabet)}

    def _stationary_distribution(self):
        """pi over contexts with pi = pi M, M the context-to-context transition matrix."""
        A, S = len(self.alphabet), self.n_states
        M = np.zeros((S, S))
        for s in range(S):
            # appending character y drops the oldest one
            M[s, (s * A) % S + np.arange(A)] = self.transition[s]
        # pi (M - I) = 0 has a one-dimensional solution space; sum(pi) = 1 pins it down
        system = np.vstack([M.T - np.eye(S), np.ones((1, S))])
        rhs = np.zeros(S + 1)
        rhs[-1] = 1.0
        pi = np.linalg.lstsq(system, rhs, rcond=None)[0]
        return np.clip(pi, 0.0, None) / np.clip(pi, 0.0, None).sum()

    def context_index(self, context):
        """Row of `transition` for the last `order` characters of `context`."""
        if len(context) < self.order:
            raise ValueError(f"need {self.order} characters of context, got {context!r}")
        s = 0
        for c in context[-self.order :]:
            if c not in self._index:
                raise ValueError(f"{c!r} is not in the alphabet {self.alphabet!r}")
            s = s * len(self.alphabet) + self._index[c]
        return s

    def probs(self, context):
        """P(next character | context) as an array over the alphabet."""
        return self.transition[self.context_index(context)].copy()

    def sample(self, n_tokens, seed=None):
        """A string of n_tokens characters, started from the stationary distribution.

        seed=None draws fresh randomness; pass an int for a reproducible sample.
        """
        A, S, k = len(self.alphabet), self.n_states, self.order
        rng = np.random.default_rng(seed)
        s = int(rng.choice(S, p=self.stationary))
        start = [(s // A ** (k - 1 - i)) % A for i in range(k)]
        # A Python loop over plain lists with bisect is much faster per step than numpy calls.
        cdf = np.cumsum(self.transition, axis=1)
        cdf[:, -1] = 1.0  # rounding must never leave u above the last bin
        cdf = cdf.tolist()
        out = start[:n_tokens]
        for u in rng.random(max(0, n_tokens - k)).tolist():
            y = bisect.bisect_right(cdf[s], u)
            out.append(y)
            s = (s * A) % S + y
        return "".join(self.alphabet[y] for y in out)

    def conditional_entropy(self, context_length):
        """H(X_t | the previous context_length characters) in nats, under stationarity.

        The best cross-entropy of a model that sees only that many previous characters:
        0 gives the unigram entropy, 1 the bigram's, `order` (or more) the entropy rate.
        """
        if context_length < 0:
            raise ValueError(f"context_length must be >= 0, got {context_length}")
        A, k = len(self.alphabet), self.order
        m = min(context_length, k)
        joint = self.stationary[:, None] * self.transition  # P(context s, next y)
        # the last m characters of context s are s % A**m: sum out the older ones
        joint = joint.reshape(A ** (k - m), A**m, A).sum(axis=0)  # P(last m chars, next y)
        conditional = joint / joint.sum(axis=1, keepdims=True)
        return float(-(joint * np.log(conditional)).sum())

    def entropy_rate(self):
        """The lowest achievable next-character cross-entropy, in nats per token:
        sum over contexts s of pi(s) * H(P(. | s))."""
        return self.conditional_entropy(self.order)

    def bigram_entropy(self):
        """H(X_t | X_{t-1}) in nats: the best a model that sees one previous character can do."""
        return self.conditional_entropy(1)

    def unigram_entropy(self):
        """H(X_t) in nats: the best a model that ignores the context can do."""
        return self.conditional_entropy(0)

    def best_loss(self, block_size):
        """The lowest mean lm_loss a model can reach on random windows of block_size tokens.

        Position t of a window predicts its next character from t + 1 characters, so the first
        order - 1 positions see too little context to reach the entropy rate: the bound is
        mean over t = 1..block_size of conditional_entropy(t), a little above entropy_rate().
        """
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        return float(np.mean([self.conditional_entropy(t) for t in range(1, block_size + 1)]))

    def cross_entropy(self, text):
        """Mean -ln P(x_t | previous `order` characters) over text[order:], under the true chain.

        On a long sample this tends to entropy_rate(); on a model's samples it measures how far
        they are from the real thing.
        """
        k = self.order
        if len(text) <= k:
            raise ValueError(f"need more than {k} characters, got {len(text)}")
        A, S = len(self.alphabet), self.n_states
        try:
            ids = [self._index[c] for c in text]
        except KeyError as err:
            raise ValueError(f"{err.args[0]!r} is not in the alphabet {self.alphabet!r}") from None
        s = self.context_index(text[:k])
        states, nexts = [], ids[k:]
        for y in nexts:
            states.append(s)
            s = (s * A) % S + y
        return float(-np.log(self.transition[states, nexts]).mean())

    def __repr__(self):
        return (
            f"MarkovSource(alphabet={self.alphabet!r}, order={self.order}, "
            f"concentration={self.concentration}, seed={self.seed}, smoothing={self.smoothing})"
        )


def default_corpus(n_tokens=200_000, seed=0):
    """The course's synthetic corpus: (text, source), text a sample of n_tokens characters."""
    source = MarkovSource()
    return source.sample(n_tokens, seed=seed), source
