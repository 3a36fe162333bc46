"""An independent implementation of the mixture algorithm of
docs/mixtures.md, written from that text (not from the C++ code): the
per-source counts, each source's walk of keyed passes across epochs, and a
rank's indices, for which python3-torch's DistributedSampler (through the
conformance test's oracle) gives the shuffled, padded or dropped and split
positions of the epoch's chosen list.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conformance_test import oracle  # noqa: E402

MASK = (1 << 64) - 1
UNIT = 1 << 32


def mix_key(value):
    """splitmix64's finaliser of value + the golden-ratio increment."""
    x = (value + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def _round(half, key):
    x = half ^ key
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    return x ^ (x >> 33)


class Feistel:
    """The keyed permutation of 0..n-1: 6 Feistel rounds over the smallest
    even number of bits covering n, with cycle walking."""

    def __init__(self, n, key):
        bits = 1
        while bits < 64 and (1 << bits) < n:
            bits += 1
        self.n = n
        self.half = (bits + 1) // 2
        self.mask = (1 << self.half) - 1
        self.keys = []
        state = key
        for _ in range(6):
            state = mix_key(state)
            self.keys.append(state)

    def _encrypt(self, x):
        left, right = x >> self.half, x & self.mask
        for key in self.keys:
            left, right = right, left ^ (_round(right, key) & self.mask)
        return (left << self.half) | right

    def at(self, i):
        x = self._encrypt(i)
        while x >= self.n:
            x = self._encrypt(x)
        return x


def units(value):
    """A weight or repeat in units of 2^-32, rounded half to even."""
    return round(value * UNIT)


def counts(sources, epoch_size=0):
    """Samples per epoch of each source. `sources`: (name, size, kind,
    value) with kind "weight", "repeat", "choose" or None (repeat 1)."""
    weighted = sources[0][2] == "weight"
    numerators = []
    for _, size, kind, value in sources:
        if kind == "weight":
            numerators.append(units(value))
        elif kind == "repeat":
            numerators.append(units(value) * size)
        elif kind == "choose":
            numerators.append(value * UNIT)
        else:
            numerators.append(size * UNIT)
    if weighted:
        denominator, total = sum(numerators), epoch_size
        numerators = [n * epoch_size for n in numerators]
    else:
        denominator = UNIT
        total = (sum(numerators) + UNIT // 2) // UNIT
    result = [n // denominator for n in numerators]
    remainders = [n % denominator for n in numerators]
    left = total - sum(result)
    by_remainder = sorted(range(len(sources)),
                          key=lambda k: (-remainders[k], k))
    for k in by_remainder[:left]:
        result[k] += 1
    return result


def chosen(sources, per_epoch, seed, epoch):
    """The epoch's chosen global indices, source after source."""
    out = []
    offset = 0
    seed_key = mix_key(seed)
    for k, (_, size, _, _) in enumerate(sources):
        count = per_epoch[k]
        source_key = mix_key((seed_key + k) & MASK)
        passes = {}
        for j in range(count):
            taken = epoch * count + j
            pass_number, in_pass = divmod(taken, size)
            if count % size == 0:
                out.append(offset + in_pass)
                continue
            if pass_number not in passes:
                passes[pass_number] = Feistel(
                    size, mix_key((source_key + pass_number) & MASK))
            out.append(offset + passes[pass_number].at(in_pass))
        offset += size
    return out


def rank_indices(chosen_list, world_size, rank, seed, epoch, shuffle, tail):
    """A rank's indices: the torch shuffle, tail and split of the positions
    of the chosen list, as DistributedSampler over a dataset of its length
    (for "uneven", the shuffled positions rank::world_size)."""
    positions = oracle(len(chosen_list), world_size, rank, seed, epoch,
                       shuffle, tail)
    return [chosen_list[p] for p in positions]
