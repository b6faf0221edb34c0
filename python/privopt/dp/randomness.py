"""Sources of uniform random bits for the exact samplers.

Every sampler of :mod:`privopt.dp` consumes randomness as a stream of uniform 64-bit words
(:meth:`RandomSource.random_words`); the exact samplers turn those bits into integers with
integer arithmetic only, so the distribution of their output depends on nothing but the bits.
Two sources exist:

- :class:`SecureSource` reads the operating system's CSPRNG through :func:`secrets.token_bytes`
  (``os.urandom``). It is the **default** (``rng=None``) and the one for real releases: an
  attacker must not be able to predict or reconstruct the noise;
- :class:`GeneratorSource` wraps a :class:`numpy.random.Generator` (an int seed or a
  Generator): reproducible, for tests and experiments only. Anyone who knows the seed can
  recompute the noise and subtract it, so a seeded release is not private.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np

from privopt._validation import MAX_ARRAY_VALUES, check_int, check_size
from privopt.errors import InvalidInput

__all__ = ["RandomSource", "GeneratorSource", "SecureSource", "as_random_source", "is_seeded"]

_TWO_POW_M53 = 2.0**-53


class RandomSource:
    """Abstract supply of independent uniform random bits.

    Subclasses implement :meth:`random_words`; the other methods derive from it, so every
    source yields the same distributions.
    """

    #: True when the bits come from a cryptographically secure generator.
    secure: bool = False

    def random_words(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit words, shape (n,), dtype uint64."""
        raise NotImplementedError

    def random_bits(self, n: int) -> np.ndarray:
        """``n`` independent fair bits, shape (n,), dtype uint8 (0 or 1)."""
        n = check_int("n", n, minimum=0, maximum=MAX_ARRAY_VALUES)
        words = self.random_words((n + 63) // 64)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")
        return bits[:n]

    def uniform(self, size: int | tuple[int, ...] | None = None) -> Any:
        """Uniform floats on [0, 1) with 53 random bits each (multiples of 2⁻⁵³)."""
        n, shape = check_size(size)
        words = self.random_words(n)
        out = (words >> np.uint64(11)).astype(np.float64) * _TWO_POW_M53
        return float(out[0]) if shape is None else out.reshape(shape)

    def integers(self, high: int, size: int | tuple[int, ...] | None = None) -> Any:
        """Uniform integers on {0, ..., high-1} by exact rejection sampling (1 ≤ high ≤ 2⁶³).

        Draws ``k = bit_length(high-1)`` bits per trial and rejects values ≥ ``high``, so every
        value has probability exactly 1/high (no modulo bias).
        """
        high = check_int("high", high)
        if not 1 <= high <= 2**63:
            raise InvalidInput(f"high must lie in [1, 2**63], got {high}")
        n, shape = check_size(size)
        k = (high - 1).bit_length()
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            need = n - filled
            # Acceptance rate is at least 1/2; oversample so one round nearly always suffices.
            words = self.random_words(2 * need + 16)
            cand = words >> np.uint64(64 - k) if k > 0 else np.zeros_like(words)
            cand = cand[cand < np.uint64(high)][:need]
            out[filled : filled + cand.size] = cand.astype(np.int64)
            filled += cand.size
        return int(out[0]) if shape is None else out.reshape(shape)


class GeneratorSource(RandomSource):
    """Bits from a :class:`numpy.random.Generator` (seedable, reproducible, not secure).

    Parameters
    ----------
    generator : the numpy Generator; its state advances as bits are drawn.
    """

    secure = False

    def __init__(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise InvalidInput(
                f"generator must be a numpy.random.Generator, got {type(generator).__name__}"
            )
        self.generator = generator

    def random_words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words (uint64, (n,)) from the generator."""
        n = check_int("n", n, minimum=0, maximum=MAX_ARRAY_VALUES)
        return self.generator.integers(0, 2**64, size=n, dtype=np.uint64)

    def __repr__(self) -> str:
        return f"GeneratorSource({self.generator.bit_generator.__class__.__name__})"


class SecureSource(RandomSource):
    """Bits from the operating system's cryptographically secure generator (``os.urandom``).

    Not seedable by design. About as fast as a numpy Generator for bulk words (the kernel
    reads them in blocks), see ``docs/dp.md`` for measured figures.
    """

    secure = True

    def random_words(self, n: int) -> np.ndarray:
        """``n`` uniform 64-bit words (uint64, (n,)) from ``secrets.token_bytes``."""
        n = check_int("n", n, minimum=0, maximum=MAX_ARRAY_VALUES)
        return np.frombuffer(secrets.token_bytes(8 * n), dtype="<u8").astype(np.uint64)

    def __repr__(self) -> str:
        return "SecureSource()"


def as_random_source(rng: Any = None) -> RandomSource:
    """Turn the ``rng=`` argument of every sampler into a :class:`RandomSource`.

    Parameters
    ----------
    rng : None, int, numpy.random.Generator, "secure" or RandomSource
        ``None`` (default) or ``"secure"``: a :class:`SecureSource` (the OS CSPRNG); an int:
        the seed of a new ``numpy.random.default_rng``, reproducible and for testing only (a
        known seed reveals the noise); a Generator: used (and advanced) as is, also for
        testing; a RandomSource: returned unchanged.

    Returns
    -------
    RandomSource

    Raises
    ------
    InvalidInput
        For any other value.

    Examples
    --------
    >>> src = as_random_source(7)
    >>> as_random_source(src) is src
    True
    >>> as_random_source("secure").secure, as_random_source(None).secure
    (True, True)
    """
    if isinstance(rng, RandomSource):
        return rng
    if rng is None:  # no seed: a real release, so the noise must be unpredictable
        return SecureSource()
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if isinstance(rng, str):
        if rng == "secure":  # the same as None, spelled out
            return SecureSource()
        raise InvalidInput(
            f'rng must be None, an int seed, a Generator, "secure" or a '
            f"RandomSource, got the string {rng!r}"
        )
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise InvalidInput(f"rng seed must be >= 0, got {rng}")
        return GeneratorSource(np.random.default_rng(int(rng)))
    raise InvalidInput(
        f'rng must be None, an int seed, a Generator, "secure" or a '
        f"RandomSource, got {type(rng).__name__}"
    )


def is_seeded(rng: Any) -> bool:
    """True when the ``rng=`` argument makes the noise reproducible (an int seed, a numpy
    Generator, or a :class:`RandomSource` that is not secure); False for None, ``"secure"`` and
    secure sources. A release drawn from seeded randomness is for testing only: anyone who knows
    the seed can recompute its noise.

    Examples
    --------
    >>> is_seeded(7), is_seeded(None), is_seeded("secure")
    (True, False, False)
    """
    return not as_random_source(rng).secure
