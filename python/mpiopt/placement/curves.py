"""Orders in which to visit the points of a box: row after row (Z), serpentine (P) and along a
Hilbert curve (H). Each function maps (ndim, n) coordinates to a sequence number; sorting by it
gives the visiting order. `fastest` lists dimensions from the fastest varying to the slowest."""
from __future__ import annotations

import numpy as np


def z_index(coords: np.ndarray, extents, fastest) -> np.ndarray:
    """Row after row: the mixed-radix number of the coordinates, `fastest[0]` as the low digit."""
    seq = np.zeros(coords.shape[1], dtype=np.int64)
    step = 1
    for k in fastest:
        seq += coords[k] * step
        step *= int(extents[k])
    return seq


def serpentine_index(coords: np.ndarray, extents, fastest) -> np.ndarray:
    """Boustrophedon: every other row (plane, …) runs backwards, so consecutive points stay
    neighbours. Built from the fastest dimension up: a slower coordinate that is odd reverses the
    path through the faster dimensions."""
    seq = np.zeros(coords.shape[1], dtype=np.int64)
    size = 1
    for k in fastest:
        x = coords[k]
        seq = x * size + np.where(x % 2 == 0, seq, size - 1 - seq)
        size *= int(extents[k])
    return seq


def hilbert_index(coords: np.ndarray, extents, fastest) -> np.ndarray:
    """Position along a Hilbert curve through the smallest power-of-two cube holding the box
    (J. Skilling's transpose algorithm, AIP Conf. Proc. 707, 2004). On boxes that are not
    power-of-two cubes the curve skips the missing points, so a few steps are longer jumps."""
    axes = list(fastest)[::-1]          # the curve's first axis is its most significant
    d = len(axes)
    x = np.array([coords[k] for k in axes], dtype=np.int64)
    bits = max(1, int(max(int(e) for e in extents) - 1).bit_length())
    if d == 1:
        return x[0].copy()
    top = 1 << (bits - 1)
    q = top
    while q > 1:                        # undo the excess work of the rotations
        p = q - 1
        for i in range(d):
            set_ = (x[i] & q) != 0
            x[0] = np.where(set_, x[0] ^ p, x[0])
            swap = np.where(set_, 0, (x[0] ^ x[i]) & p)
            x[0] ^= swap
            x[i] ^= swap
        q >>= 1
    for i in range(1, d):               # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros(x.shape[1], dtype=np.int64)
    q = top
    while q > 1:
        t = np.where((x[d - 1] & q) != 0, t ^ (q - 1), t)
        q >>= 1
    x ^= t
    seq = np.zeros(x.shape[1], dtype=np.int64)
    for b in range(bits - 1, -1, -1):   # interleave the transposed bits into one number
        for i in range(d):
            seq = (seq << 1) | ((x[i] >> b) & 1)
    return seq


CURVES = {"Z": z_index, "P": serpentine_index, "H": hilbert_index}
