"""``python -m tinynet.tuning`` prints the gate table (``python -m tinynet.tools.calibrate``
measures the gates on this machine)."""

from __future__ import annotations

import sys

from tinynet import tuning


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "calibrate":
        print("the calibrate command is python -m tinynet.tools.calibrate [--quick] [--loaded] "
              "[--gates a,b] [--write PATH]", file=sys.stderr)
        return 2
    if argv:
        print(f"usage: python -m tinynet.tuning (the gate table); got {' '.join(argv)!r}",
              file=sys.stderr)
        return 2
    print(tuning.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
