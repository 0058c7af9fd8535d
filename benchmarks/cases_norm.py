"""Normalization: GN, IN, BN, LN forward+backward (training mode), channels-last inputs.

tinynet: ``layer.forward(x, training=True)`` then ``layer.backward(g)``.
PyTorch: ``torch.nn.functional`` with ``requires_grad`` inputs, weight and bias, forward
then ``torch.autograd.backward(y, g)``; grads reset to ``None`` before every call. The
forward-only timings are training-mode forwards (PyTorch records its autograd graph,
tinynet caches what backward needs); the backward-only timings repeat the backward of
one forward (PyTorch with ``retain_graph=True``).

Bandwidth floor: forward reads x and writes y, backward reads x and dy and writes dx,
each at the copy bandwidth measured during the case: a single-thread ``np.copyto`` of
256 MiB joins each of the case's three interleaved measurements (up to
``harness.FLOOR_SAMPLES`` copies spread over its repetitions, the median), so that the
floor and the time it is compared with come from the same stretch of a run on a shared
machine; a case's tinynet time is reported as a percentage of that floor (100 % = as fast
as copying the bytes; lower is better), and also against the run's start bandwidth.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from harness import (
    FLOOR_SAMPLES,
    HELD_SPEEDUP,
    Comparison,
    Context,
    GroupResult,
    Table,
    compare,
    copier,
    copy_gbs,
    describe_error,
    fmt_ms,
    fmt_ratio,
    geomean,
    measure_cases,
    noise_cell,
    release_copy_buffers,
    torch_cell,
    torch_layouts,
)

NAME = "norm"
TITLE = "Normalization (forward + backward, training mode, channels-last)"
EPS = 1e-3

SHAPES_4D = [((32, 32, 32, 64), 8), ((256, 28, 28, 32), 4), ((64, 16, 16, 128), 32),
             ((8, 56, 56, 64), 16)]
EXTRA_LN = [((64, 196, 256), None)]
KINDS = ["GN", "IN", "BN", "LN"]


def _tinynet_layer(kind: str, shape: tuple, groups: int | None):
    from tinynet.layers import (
        BatchNormalization,
        GroupNormalization,
        InstanceNormalization,
        LayerNormalization,
    )

    layer = {"GN": lambda: GroupNormalization(groups, epsilon=EPS),
             "IN": lambda: InstanceNormalization(epsilon=EPS),
             "BN": lambda: BatchNormalization(epsilon=EPS),
             "LN": lambda: LayerNormalization(epsilon=EPS)}[kind]()
    layer.build((None, *shape[1:]))
    return layer


def _torch_op(kind: str, channels: int, groups: int | None) -> Callable[[Any, Any, Any], Any]:
    import torch
    import torch.nn.functional as F

    if kind == "GN":
        return lambda x, w, b: F.group_norm(x, groups, w, b, EPS)
    if kind == "IN":
        return lambda x, w, b: F.instance_norm(x, None, None, w, b, True, 0.1, EPS)
    if kind == "BN":
        rm, rv = torch.zeros(channels), torch.ones(channels)
        return lambda x, w, b: F.batch_norm(x, rm, rv, w, b, True, 0.01, EPS)
    return lambda x, w, b: F.layer_norm(x, (channels,), w, b, EPS)


def _torch_fns(kind: str, x: np.ndarray, g: np.ndarray, groups: int | None) -> dict[str, dict]:
    """PyTorch callables per mode ("fwd+bwd", "fwd", "bwd") and per layout."""
    import torch

    channels = x.shape[-1]
    op = _torch_op(kind, channels, groups)
    if kind == "LN" or x.ndim != 4:
        label = "last axis" if x.ndim == 4 else "contiguous"
        xs = {label: torch.from_numpy(x.copy()).requires_grad_(True)}
        gs = {label: torch.from_numpy(g.copy())}
    else:
        xs, gs = torch_layouts(x, requires_grad=True), torch_layouts(g)
    modes: dict[str, dict] = {"fwd+bwd": {}, "fwd": {}, "bwd": {}}
    for layout, xt in xs.items():
        gt = gs[layout]
        w = torch.ones(channels, requires_grad=True)
        b = torch.zeros(channels, requires_grad=True)

        def reset(xt=xt, w=w, b=b) -> None:
            xt.grad = None
            w.grad = None
            b.grad = None

        def fwd_bwd(xt=xt, gt=gt, w=w, b=b, reset=reset) -> None:
            reset()
            torch.autograd.backward(op(xt, w, b), gt)

        def fwd(xt=xt, w=w, b=b) -> Any:
            return op(xt, w, b)

        y = op(xt, w, b)

        def bwd(y=y, gt=gt, reset=reset) -> None:
            reset()
            torch.autograd.backward(y, gt, retain_graph=True)

        modes["fwd+bwd"][layout] = fwd_bwd
        modes["fwd"][layout] = fwd
        modes["bwd"][layout] = bwd
    return modes


def _cases() -> list[tuple[str, tuple, int | None]]:
    cases = [(kind, shape, groups) for kind in KINDS for shape, groups in SHAPES_4D]
    cases += [("LN", shape, groups) for shape, groups in EXTRA_LN]
    return cases


def _label(kind: str, shape: tuple, groups: int | None) -> str:
    dims = "x".join(map(str, shape))
    return f"{kind} {dims}" + (f" G={groups}" if kind == "GN" else "")


def _measure(ctx: Context, kind: str, shape: tuple, groups: int | None,
             rng: np.random.Generator) -> dict[str, Comparison]:
    """Times one case in three modes: fwd+bwd, fwd only and bwd only."""
    layer = _tinynet_layer(kind, shape, groups)
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)

    def tn_fwd_bwd() -> None:
        layer.forward(x, training=True)
        layer.backward(g)

    def tn_fwd() -> Any:
        return layer.forward(x, training=True)

    def tn_bwd() -> Any:
        return layer.backward(g)

    torch_modes = _torch_fns(kind, x, g, groups)
    secondary = ctx.settings.scaled(0.6)  # fwd-only and bwd-only: a smaller budget
    copy = copier()  # the floor's bandwidth, timed in each measurement's rotation
    res = {"fwd+bwd": compare(tn_fwd_bwd, torch_modes["fwd+bwd"], ctx.settings, copy),
           "fwd": compare(tn_fwd, torch_modes["fwd"], secondary, copy)}
    layer.forward(x, training=True)
    res["bwd"] = compare(tn_bwd, torch_modes["bwd"], secondary, copy)
    ctx.progress(f"  {_label(kind, shape, groups)}: ratio fwd+bwd {res['fwd+bwd'].ratio:.2f} "
                 f"(torch {res['fwd+bwd'].best_layout}), fwd {res['fwd'].ratio:.2f}, "
                 f"bwd {res['bwd'].ratio:.2f}")
    return res


def run(ctx: Context) -> GroupResult:
    import tinynet.layers.regularization.normalization  # noqa: F401  (ImportError -> skip)

    result = GroupResult(NAME, TITLE)
    vs_torch = Table("tinynet vs PyTorch (ratio = tinynet time / PyTorch time; < 1 is faster)",
                     ["case", "tinynet fwd+bwd ms", "torch fwd+bwd ms (layout)", "ratio fwd+bwd",
                      "ratio fwd (torch layout)", "ratio bwd (torch layout)", "noise",
                      "page faults / fwd+bwd (tinynet, torch)"])
    floors = Table("tinynet time as % of the bandwidth floor at the copy bandwidth measured "
                   "during the case (100 % = the floor, lower is better; the last column "
                   f"uses the run's start bandwidth, {ctx.bandwidth_gbs:.1f} GB/s)",
                   ["case", "MiB / array", "MiB touched", "> cache?", "copy GB/s (during case)",
                    "floor fwd+bwd ms", "fwd+bwd % of floor", "fwd % of floor",
                    "bwd % of floor", "fwd+bwd % (start bandwidth)"])
    rng = np.random.default_rng(0)
    ratios: dict[str, list[float]] = {"fwd+bwd": [], "fwd": [], "bwd": []}
    per_kind: dict[str, list[float]] = {k: [] for k in KINDS}
    cases = _cases()
    items = [(_label(kind, shape, groups),
              lambda kind=kind, shape=shape, groups=groups: _measure(ctx, kind, shape, groups, rng))
             for kind, shape, groups in cases]
    try:
        measured = measure_cases(ctx, items)
    finally:
        release_copy_buffers()
    for (kind, shape, _), (label, res) in zip(cases, measured):
        if isinstance(res, Exception):
            vs_torch.rows.append([label, f"skipped: {describe_error(res)}", "", "", "", "", "",
                                  ""])
            continue
        for mode, comp in res.items():
            ratios[mode].append(comp.ratio)
        per_kind[kind].append(res["fwd+bwd"].ratio)
        fb = res["fwd+bwd"]
        vs_torch.rows.append([
            label, fmt_ms(fb.tinynet.median_s), torch_cell(fb), fmt_ratio(fb.ratio),
            f"{fmt_ratio(res['fwd'].ratio)} ({res['fwd'].best_layout})",
            f"{fmt_ratio(res['bwd'].ratio)} ({res['bwd'].best_layout})",
            noise_cell(fb, res["fwd"], res["bwd"]),
            f"{fb.tinynet.faults:.0f}, {fb.torch_best.faults:.0f}"])
        nbytes = int(np.prod(shape)) * 4
        touched = 4 * nbytes  # x, y, dy, dx
        # each measurement against the bandwidth of the copies timed in its own rotation
        gbs = {m: copy_gbs(comp.floor.median_s) for m, comp in res.items()}
        arrays = {"fwd": 2, "bwd": 3, "fwd+bwd": 5}  # x, y / x, dy, dx / both
        floor = {m: arrays[m] * nbytes / (gbs[m] * 1e9) for m in arrays}
        pct = {m: 100 * res[m].tinynet.median_s / floor[m] for m in arrays}
        start_pct = pct["fwd+bwd"] * ctx.bandwidth_gbs / gbs["fwd+bwd"]
        floors.rows.append([
            label, f"{nbytes / 2**20:.1f}", f"{touched / 2**20:.1f}",
            "yes" if touched > ctx.held_cache_bytes else "no", f"{gbs['fwd+bwd']:.1f}",
            fmt_ms(floor["fwd+bwd"]), f"{pct['fwd+bwd']:.0f}%", f"{pct['fwd']:.0f}%",
            f"{pct['bwd']:.0f}%", f"{start_pct:.0f}%"])
    result.tables = [vs_torch, floors]
    result.geomeans = [(f"geomean ratio {m}", geomean(v)) for m, v in ratios.items()]
    result.geomeans += [(f"geomean ratio fwd+bwd, {k}", geomean(v)) for k, v in per_kind.items()]
    result.notes = [
        "MiB touched = x, y, dy and dx (4 arrays); '> cache?' compares it with the cache "
        "held between passes, as measured at the start of the run (the machine table): the "
        "largest size whose re-read ran at least "
        f"{HELD_SPEEDUP}x as fast as a read from memory, not the L3 size sysfs reports. "
        "tinynet keeps x for the backward and recomputes the normalized input there (no extra "
        "array); batch norm reads x twice in the forward and x and dy twice in the backward "
        "(statistics over the whole batch first), 8 array passes where the floor counts 5.",
        "PyTorch LN has no layout choice (it normalizes the last axis of the NHWC array).",
        "Page faults: the mean per fwd+bwd call (getrusage's minor faults). PyTorch's outputs "
        "are fresh allocations; when glibc maps them afresh (as its state left by earlier "
        "cases decides) each 4 KiB page costs a fault. That, and where its buffers land, "
        "moves PyTorch's time for the same case by up to 2x between runs "
        "(docs/performance.md, session 47; --keep-freed-memory takes the faults out). "
        "tinynet reuses its large outputs' memory.",
        "fwd = training-mode forward (PyTorch records its autograd graph); bwd = backward of "
        "one forward, repeated (PyTorch with retain_graph=True). 'noise' is that of the "
        "fwd+bwd measurement; '*' marks a case where any of its three measurements ran while "
        "other processes were busy.",
        "The floor's copy bandwidth is measured during each case: a copy of 256 MiB "
        "(single-thread np.copyto) joins the rotation of each of its three measurements, "
        f"in up to {FLOOR_SAMPLES} repetitions spread over it, and each measurement is "
        "set against the median of its own copies ('copy GB/s' is that of the fwd+bwd "
        "measurement); the last column is the case against the run's start bandwidth.",
    ]
    return result
