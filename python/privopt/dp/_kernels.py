"""The compiled exact samplers (C++, ``cpp/include/privopt/exact_noise.hpp``).

Integer arithmetic on a buffer of random words: the discrete Laplace by a uniform integer split
of its geometric part (CKS 2020 Algorithm 2 when s = 1) and the discrete Gaussian by CKS 2020
Algorithm 3, with 128-bit integers in its acceptance test. They read bits from ``words``
(uint64, least significant bit first) exactly as :class:`privopt.dp._reference.BitReader` does,
so kernel and reference produce identical samples from identical words. Both release the GIL.

``discrete_laplace_kernel(words, pos, s, t, out, start, vmax=-1)`` draws P(y) ∝ e^{-|y|s/t};
``discrete_gaussian_kernel(words, pos, n, d, t, out, start, ylim=-1)`` draws
P(y) ∝ e^{-y²d/2n} from a Laplace proposal of scale t (any t ≥ 1). Each fills ``out[start:]``
and returns ``(i, pos, status)``:

- status 0: all samples done; ``pos`` is the next unread bit;
- status 1: the words ran out while drawing sample ``i``; ``pos`` is the bit where sample ``i``
  began. The caller appends fresh words after the unread tail and calls again: sample ``i`` is
  redrawn from the *same* bits followed by new ones, so nothing is conditioned on the buffer
  boundary (discarding the partial sample instead would bias towards cheap samples);
- status 2: sample ``i`` needs integers beyond 64/128 bits (or, for tests, exceeds ``vmax``
  geometric blocks / ``ylim``); ``pos`` is where it began and the caller draws it with the
  arbitrary-precision reference from that bit position.

Bad arguments (wrong dtype, a non-contiguous or read-only ``out``, parameters outside the
ranges above) raise ``ValueError`` before any bit is read.
"""

from __future__ import annotations

from privopt._core import dp as _dp

__all__ = ["discrete_laplace_kernel", "discrete_gaussian_kernel"]

discrete_laplace_kernel = _dp.discrete_laplace
discrete_gaussian_kernel = _dp.discrete_gaussian
