"""The two string hashes TensorFlow's bucketing ops use, in pure Python: FarmHash's
``Fingerprint64`` (the "na" variant, ``tf.strings.to_hash_bucket_fast``) and keyed
SipHash-2-4 (``tf.strings.to_hash_bucket_strong``). Keras's ``Hashing`` layer and the
extra OOV buckets of the lookup layers put a value in bin ``hash(bytes) % num_bins``, so
matching Keras's bins means matching these hashes bit for bit.

Both work on unsigned 64-bit integers; Python ints are masked to 64 bits after every
operation that can overflow.
"""

from __future__ import annotations

__all__ = ["fingerprint64", "siphash24", "hash_bucket_fast", "hash_bucket_strong"]

_MASK = (1 << 64) - 1
# FarmHash's primes (shared with CityHash)
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _u64(data: bytes, i: int) -> int:
    return int.from_bytes(data[i:i + 8], "little")


def _u32(data: bytes, i: int) -> int:
    return int.from_bytes(data[i:i + 4], "little")


def _rot(v: int, shift: int) -> int:
    """Rotates right by ``shift`` bits (0 leaves ``v`` as is)."""
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int) -> int:
    """Murmur-style mix of two 64-bit words into one."""
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_u64(s, 0) + _K2) & _MASK
        b = _u64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _MASK
        d = ((_rot(a, 25) + b) * mul) & _MASK
        return _len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _len16(n + (_u32(s, 0) << 3), _u32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K1) & _MASK
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _MASK
    d = (_u64(s, n - 16) * _K2) & _MASK
    return _len16((_rot((a + b) & _MASK, 43) + _rot(c, 30) + d) & _MASK,
                  (a + _rot((b + _K2) & _MASK, 18) + c) & _MASK, mul)


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K2) & _MASK
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _MASK
    d = (_u64(s, n - 16) * _K2) & _MASK
    y = (_rot((a + b) & _MASK, 43) + _rot(c, 30) + d) & _MASK
    z = _len16(y, (a + _rot((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_u64(s, 16) * mul) & _MASK
    f = _u64(s, 24)
    g = ((y + _u64(s, n - 32)) * mul) & _MASK
    h = ((z + _u64(s, n - 24)) * mul) & _MASK
    return _len16((_rot((e + f) & _MASK, 43) + _rot(g, 30) + h) & _MASK,
                  (e + _rot((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    """Hashes the 32 bytes at ``i`` with two seeds into two words."""
    w, x, y, z = _u64(s, i), _u64(s, i + 8), _u64(s, i + 16), _u64(s, i + 24)
    a = (a + w) & _MASK
    b = _rot((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rot(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(s: bytes) -> int:
    """FarmHash ``Fingerprint64`` of ``s`` (TensorFlow's ``Fingerprint64``), an unsigned
    64-bit int."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _u64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64  # the blocks before the last (possibly overlapping) 64 bytes
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v0 + _u64(s, i + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rot((y + v1 + _u64(s, i + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w1
        y = (y + v0 + _u64(s, i + 40)) & _MASK
        z = (_rot((z + w0) & _MASK, 33) * _K1) & _MASK
        v0, v1 = _weak32(s, i, (v1 * _K1) & _MASK, (x + w0) & _MASK)
        w0, w1 = _weak32(s, i + 32, (z + w1) & _MASK, (y + _u64(s, i + 16)) & _MASK)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _MASK
    v0 = (v0 + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    x = (_rot((x + y + v0 + _u64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rot((y + v1 + _u64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w1 * 9) & _MASK
    y = (y + v0 * 9 + _u64(s, i + 40)) & _MASK
    z = (_rot((z + w0) & _MASK, 33) * mul) & _MASK
    v0, v1 = _weak32(s, i, (v1 * mul) & _MASK, (x + w0) & _MASK)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _MASK, (y + _u64(s, i + 16)) & _MASK)
    z, x = x, z
    return _len16((_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _MASK,
                  (_len16(v1, w1, mul) + x) & _MASK, mul)


def _sip_round(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    def rotl(v: int, b: int) -> int:
        return ((v << b) | (v >> (64 - b))) & _MASK

    v0 = (v0 + v1) & _MASK
    v1 = rotl(v1, 13) ^ v0
    v0 = rotl(v0, 32)
    v2 = (v2 + v3) & _MASK
    v3 = rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _MASK
    v3 = rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _MASK
    v1 = rotl(v1, 17) ^ v2
    v2 = rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(key: tuple[int, int], s: bytes) -> int:
    """SipHash-2-4 of ``s`` under the 128-bit key ``(k0, k1)`` (two unsigned 64-bit
    words), an unsigned 64-bit int."""
    k0, k1 = key[0] & _MASK, key[1] & _MASK
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(s)
    full = n - n % 8
    for i in range(0, full, 8):
        m = _u64(s, i)
        v3 ^= m
        v0, v1, v2, v3 = _sip_round(*_sip_round(v0, v1, v2, v3))
        v0 ^= m
    m = int.from_bytes(s[full:], "little") | ((n & 0xFF) << 56)
    v3 ^= m
    v0, v1, v2, v3 = _sip_round(*_sip_round(v0, v1, v2, v3))
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def hash_bucket_fast(s: bytes, num_buckets: int) -> int:
    """``tf.strings.to_hash_bucket_fast``: ``Fingerprint64(s) % num_buckets``."""
    return fingerprint64(s) % num_buckets


def hash_bucket_strong(s: bytes, num_buckets: int, key: tuple[int, int]) -> int:
    """``tf.strings.to_hash_bucket_strong``: ``SipHash-2-4(key, s) % num_buckets``."""
    return siphash24(key, s) % num_buckets
