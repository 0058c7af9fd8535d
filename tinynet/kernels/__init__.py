"""Numba kernel modules (the only place, with normalization/, that uses @njit)."""
