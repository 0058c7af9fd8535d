"""Shared fixtures for the normalization spec tests."""

from __future__ import annotations

import pytest

from tinynet import tuning


@pytest.fixture(autouse=True)
def _restore_tuning():
    """Every test starts and ends with the built-in gates and thread count."""
    tuning.reset()
    yield
    tuning.reset()
