"""Deterministic numerical building blocks: blocked reductions and GEMM."""
