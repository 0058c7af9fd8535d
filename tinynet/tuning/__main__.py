"""``python -m tinynet.tuning`` prints the gate table; ``... calibrate`` measures the gates."""

from __future__ import annotations

import sys

from tinynet import tuning


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "calibrate":
        from tinynet.tuning.calibration import main as calibrate_main

        return calibrate_main(argv[1:])
    if argv:
        print(f"usage: python -m tinynet.tuning [calibrate [--quick] [--write PATH]]; "
              f"got {' '.join(argv)!r}", file=sys.stderr)
        return 2
    print(tuning.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
