"""tinynet's OpenMP spin setting: set at import only where the user chose nothing."""

import os
import subprocess
import sys

import pytest

_SHOW = ("import tinynet, os; print(os.environ.get('OMP_WAIT_POLICY'), "
         "os.environ.get('GOMP_SPINCOUNT'), tinynet.SPIN_COUNT)")


def _after_import(**env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", _SHOW], env={**base, **env},
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_bounded_spin_when_the_user_chose_nothing():
    assert _after_import() == ["None", "10000", "10000"]
    import tinynet
    assert "SPIN_COUNT" in tinynet.__all__


@pytest.mark.parametrize("env, expected", [
    ({"OMP_WAIT_POLICY": "PASSIVE"}, ["PASSIVE", "None"]),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, ["ACTIVE", "None"]),
    ({"GOMP_SPINCOUNT": "300000"}, ["None", "300000"]),
])
def test_a_users_own_setting_wins(env, expected):
    assert _after_import(**env)[:2] == expected
