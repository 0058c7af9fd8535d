"""The group drivers' shares: the serial driver runs the part of the work its ``Dims`` names.

The parallel group driver compiles no copy of the forward or backward body: each task
calls the serial driver on a share (a run of samples, or one position block and one pass,
``layout.task_share``). Run share by share from Python, in any order the passes allow, the
serial driver must give the bytes of one whole call, and write nothing outside its share.
"""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels.normalization import backward, forward
from tinynet.kernels.normalization.backward import backward_kernel
from tinynet.kernels.normalization.forward import forward_kernel, group_forward_parallel
from tinynet.kernels.normalization.layout import (ALL_PASSES, APPLY_PASS, BLOCKS, BY_BLOCKS,
                                                  CHUNKS, FINISH_PASS, SERIAL, STATS_PASS)
from tinynet.ops.arrays.normalization_plan import plan_of

# (shape, groups): two fold blocks per sample (nblk = 2) on the four layouts (48, 32, 64,
# 128 channels), and leftover positions after the last whole wide row or span.
CASES = [((3, 2100, 8), 2), ((2, 1100, 32), 4), ((2, 1100, 64), 8), ((2, 700, 128), 16),
         ((2, 700, 48), 6), ((3, 5, 7, 48), 4)]


def _share(d, lo, hi, k0, k1, passes):
    return d._replace(lo=lo, hi=hi, k0=k0, k1=k1, passes=passes)


def _forward_args(plan, x):
    c, n = plan.channels, plan.batch * plan.groups
    rng = np.random.default_rng(1)
    gamma = rng.uniform(0.5, 2, c).astype(np.float32)
    beta = rng.standard_normal(c).astype(np.float32)
    out = np.full(x.size, np.nan, dtype=np.float32)
    part = np.full((2, plan.batch, plan.nblk, plan.groups), np.nan)
    stats = np.full((3, n), np.nan, dtype=np.float32)
    return out, gamma, beta, part, stats


def _forward_by_shares(kernel, plan, x, shares):
    out, gamma, beta, part, stats = _forward_args(plan, x)
    for lo, hi, k0, k1, passes in shares:
        kernel(x, out, out[:0], _share(plan.dims, lo, hi, k0, k1, passes), 1e-3, False, False,
               gamma, beta, part, stats)
    return out, stats


def _block_shares(plan, passes):
    return [(b, b + 1, k, k + 1, passes) for b in range(plan.batch) for k in range(plan.nblk)]


@pytest.mark.parametrize("shape,groups", CASES)
def test_the_serial_forward_by_shares_gives_the_whole_calls_bytes(shape, groups):
    plan = plan_of(shape, groups, "test")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape, dtype=np.float32) * 3 + 20).reshape(-1)
    kernel = forward_kernel(plan.layout, SERIAL, False)
    whole = _forward_by_shares(kernel, plan, x, [(0, plan.batch, 0, plan.nblk, ALL_PASSES)])
    assert not np.isnan(whole[0]).any() and not np.isnan(whole[1]).any()
    by_sample = _forward_by_shares(kernel, plan, x, [(b, b + 1, 0, plan.nblk, ALL_PASSES)
                                                     for b in reversed(range(plan.batch))])
    # the blocks driver's order: every block's sums, the merges, then the sweep backwards
    by_block = _forward_by_shares(
        kernel, plan, x, _block_shares(plan, STATS_PASS)
        + [(0, plan.batch, 0, plan.nblk, FINISH_PASS)]
        + _block_shares(plan, APPLY_PASS)[::-1])
    for got in (by_sample, by_block):
        assert got[0].tobytes() == whole[0].tobytes()
        assert got[1].tobytes() == whole[1].tobytes()


def test_a_forward_share_writes_only_its_samples():
    shape, groups = (3, 2100, 8), 2
    plan = plan_of(shape, groups, "test")
    x = np.random.default_rng(2).standard_normal(shape, dtype=np.float32).reshape(-1)
    kernel = forward_kernel(plan.layout, SERIAL, False)
    out, stats = _forward_by_shares(kernel, plan, x, [(1, 2, 0, plan.nblk, ALL_PASSES)])
    per = plan.positions * plan.channels
    assert np.isnan(out[:per]).all() and np.isnan(out[2 * per:]).all()
    assert not np.isnan(out[per:2 * per]).any()
    g = plan.groups
    assert np.isnan(stats[:, :g]).all() and np.isnan(stats[:, 2 * g:]).all()
    # the statistics pass alone writes block partials, no statistics and no output
    out, stats = _forward_by_shares(kernel, plan, x, [(0, 1, 1, 2, STATS_PASS)])
    assert np.isnan(out).all() and np.isnan(stats).all()


def _backward_by_shares(kernel, plan, g, x, stats, gamma, shares):
    c = plan.channels
    dx = np.full(g.size, np.nan, dtype=np.float32)
    gp = np.full((2, plan.batch, plan.nblk, plan.groups), np.nan)
    coeff = np.full((2, plan.batch * plan.groups), np.nan, dtype=np.float32)
    parts = np.full((2, plan.ntasks, c), np.nan)
    for lo, hi, k0, k1, passes in shares:
        kernel(g, x, dx, _share(plan.dims, lo, hi, k0, k1, passes), False, False, gamma, stats,
               gp, coeff, parts)
    return dx, parts, coeff


@pytest.mark.parametrize("shape,groups", CASES)
def test_the_serial_backward_by_shares_gives_the_whole_calls_bytes(shape, groups):
    plan = plan_of(shape, groups, "test")
    rng = np.random.default_rng(3)
    n = plan.batch * plan.groups
    x = rng.standard_normal(shape, dtype=np.float32).reshape(-1)
    g = rng.standard_normal(shape, dtype=np.float32).reshape(-1)
    stats = np.stack([rng.standard_normal(n), rng.random(n) + 0.5]).astype(np.float32)
    gamma = rng.standard_normal(plan.channels).astype(np.float32)
    kernel = backward_kernel(plan.layout, SERIAL, True)
    whole = _backward_by_shares(kernel, plan, g, x, stats, gamma,
                                [(0, plan.batch, 0, plan.nblk, ALL_PASSES)])
    assert not any(np.isnan(a).any() for a in whole)
    by_block = _backward_by_shares(
        kernel, plan, g, x, stats, gamma, _block_shares(plan, STATS_PASS)
        + [(0, plan.batch, 0, plan.nblk, FINISH_PASS)] + _block_shares(plan, APPLY_PASS)[::-1])
    assert [a.tobytes() for a in by_block] == [a.tobytes() for a in whole]
    if plan.spc == 1:  # packed samples share task rows: their chunks are whole
        by_sample = _backward_by_shares(kernel, plan, g, x, stats, gamma,
                                        [(b, b + 1, 0, plan.nblk, ALL_PASSES)
                                         for b in reversed(range(plan.batch))])
        assert [a.tobytes() for a in by_sample] == [a.tobytes() for a in whole]


@pytest.mark.parametrize("shape", [(4, 9, 9, 32), (2, 40, 40, 32)], ids=["chunks", "blocks"])
def test_one_parallel_driver_calls_the_serial_driver(shape):
    """``CHUNKS`` and ``BLOCKS`` run one parallel driver for every layout
    (``Dims.passes`` picks the split), which calls the serial driver of the flag through
    its address instead of compiling a body of its own, with the serial driver's bytes."""
    plan = plan_of(shape, 4, "test")
    assert (plan.nblk > 1) == (shape[0] == 2)
    x = np.random.default_rng(4).standard_normal(shape, dtype=np.float32).reshape(-1)
    out, gamma, beta, part, stats = _forward_args(plan, x)
    parallel = forward_kernel(plan.layout, CHUNKS, False)
    serial = forward_kernel(plan.layout, SERIAL, False)
    # CHUNKS and BLOCKS: the same driver, only the Dims differ
    assert forward_kernel(plan.layout, BLOCKS, False).args == parallel.args
    assert parallel.func is serial.func is forward_kernel(plan.layout, CHUNKS, True).func
    mode = CHUNKS if shape[0] == 4 else BLOCKS
    assert (plan.dims_for(mode).passes & BY_BLOCKS) == (mode == BLOCKS) * BY_BLOCKS
    parallel(x, out, out[:0], plan.dims_for(mode), 1e-3, False, False, gamma, beta, part,
             stats)
    # one compiled body, also the parallel driver's callee
    assert len(forward._SERIAL_DRIVERS[False].overloads) == 1
    assert len(group_forward_parallel.overloads) == 1
    whole = _forward_by_shares(serial, plan, x, [(0, plan.batch, 0, plan.nblk, ALL_PASSES)])
    assert out.tobytes() == whole[0].tobytes() and stats.tobytes() == whole[1].tobytes()


def test_one_serial_driver_serves_every_layout():
    """The layouts share one serial driver per flag (their wide-row loops are kernels of
    their own, called through their addresses): its layout-independent code compiles
    once, not once per layout."""
    from tinynet.kernels.normalization.layout import HALF_ROWS, QUAD_ROWS, SPANS, TWO_QUADS

    layouts = (SPANS, HALF_ROWS, QUAD_ROWS, TWO_QUADS)
    for module, make in ((forward, forward_kernel), (backward, backward_kernel)):
        assert len(module._SERIAL_DRIVERS) == 2  # one per flag, whatever the layout
        for flag in (False, True):
            # every layout's kernel runs the module's driver of the flag (module._run
            # binds module._SERIAL_DRIVERS[flag]); the layout only picks the wide rows
            kernels = [make(lay, SERIAL, flag) for lay in layouts]
            assert {k.func for k in kernels} == {module._run}
            assert [k.args for k in kernels] == [(lay, False, flag) for lay in layouts]


def test_parallel_entry_makes_each_entry_once():
    """``layout.parallel_entry`` builds the ``wide`` argument and finds the serial
    driver's address once per layout, flag and argument types; later calls get the same
    pair without either."""
    from numba import njit

    from tinynet.kernels.address import entry_address
    from tinynet.kernels.normalization.layout import parallel_entry

    @njit
    def serial(a, wide):
        a[0] = wide[0]

    made = []
    table = {}
    a = np.zeros(3, dtype=np.float32)

    def wide():
        made.append(1)
        return (7, 0, 0)

    first = parallel_entry(table, 1, True, wide, serial, (a,))
    again = parallel_entry(table, 1, True, wide, serial, (a,))
    assert again is first and made == [1]
    assert first == ((7, 0, 0), entry_address(serial, (a, (7, 0, 0))))
    # arguments of other types (here float64) get an entry of their own
    b = np.zeros(3)
    other = parallel_entry(table, 1, True, wide, serial, (b,))
    assert made == [1, 1] and other[1] == entry_address(serial, (b, (7, 0, 0)))
    assert other[1] != first[1]


@pytest.mark.skipif(tuning.max_threads() < 2, reason="needs 2 threads")
def test_the_parallel_drivers_reuse_their_entry(monkeypatch):
    """Repeated parallel calls of one shape and flag reuse their entry of each
    direction's table (no address is looked up again) and give the serial driver's
    bytes."""
    from tinynet.kernels.normalization import backward, forward, layout
    from tinynet.ops.arrays.normalization import gn_backward, gn_forward

    x = np.random.default_rng(8).standard_normal((4, 6, 6, 64), dtype=np.float32)
    g = np.random.default_rng(9).standard_normal(x.shape, dtype=np.float32)
    gamma = np.linspace(0.5, 1.5, 64, dtype=np.float32)
    beta = np.zeros(64, dtype=np.float32)

    def run(gate):
        with tuning.override(gn_row_parallel_min_elems=gate):
            out, _, mean, _, inv = gn_forward(x, 8, gamma, beta, 1e-3, want_xn=False)
            return (out, *gn_backward(g, x, inv, 8, gamma, mean=mean))

    def looked_up(*args):
        raise AssertionError("an address was looked up again")

    previous = tuning.get_num_threads()
    tuning.set_num_threads(2)
    try:
        serial = run(2**62)
        first = run(0)
        entries = (dict(forward._PARALLEL), dict(backward._PARALLEL))
        assert entries[0] and entries[1]
        monkeypatch.setattr(layout, "entry_address", looked_up)
        again = run(0)
    finally:
        tuning.set_num_threads(previous)
    for table, before in zip((forward._PARALLEL, backward._PARALLEL), entries):
        assert table.keys() == before.keys()
        assert all(table[key] is before[key] for key in before)
    for other in (first, again):
        assert [a.tobytes() for a in other] == [a.tobytes() for a in serial]


@pytest.mark.skipif(tuning.max_threads() < 2, reason="needs 2 threads")
@pytest.mark.parametrize("shape,groups", [((4, 6, 6, 64), 8), ((300, 1, 48), 1)],
                         ids=["groups", "rows"])
def test_the_door_binds_each_driver_once(monkeypatch, shape, groups):
    """``gn_forward`` and ``gn_backward`` keep, on the shape's plan, each driver bound to
    its arguments' types: a repeated call finds nothing again (neither a driver, nor an
    address, nor a slot invoker), a read-only input or another mode gets a bound driver
    of its own, and every run gives the serial run's bytes."""
    from tinynet.kernels import address
    from tinynet.kernels.normalization import backward, forward, layout, rows
    from tinynet.ops.arrays.normalization import gn_backward, gn_forward

    rng = np.random.default_rng(10)
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    c = shape[-1]
    gamma = np.linspace(0.5, 1.5, c, dtype=np.float32)
    beta = np.linspace(-1, 1, c, dtype=np.float32)
    gate = "ln_parallel_min_elems" if groups == 1 else "gn_row_parallel_min_elems"

    def run(x, g, value):
        # the group backward's parameter merge stays serial (a parallel merge binds anew
        # on every call, through the kernels' own entry point)
        with tuning.override(**{gate: value, "gn_param_grad_parallel_min_elems": 2**62}):
            out, _, mean, _, inv = gn_forward(x, groups, gamma, beta, 1e-3, want_xn=False,
                                              gate=gate)
            return (out, *gn_backward(g, x, inv, groups, gamma, mean=mean, row_gate=gate))

    def found_again(*args, **kwargs):
        raise AssertionError("a bound driver was made or looked up again")

    from tinynet.ops.arrays import normalization_plan

    monkeypatch.setattr(normalization_plan, "_PLANS", {})  # this test's plans only
    previous = tuning.get_num_threads()
    tuning.set_num_threads(2)
    try:
        serial = run(x, g, 2**62)
        first = run(x, g, 0)
        with monkeypatch.context() as patched:
            for module, name in ((forward, "forward_bound"), (backward, "backward_bound"),
                                 (rows, "forward_rows_bound"), (rows, "backward_rows_bound"),
                                 (layout, "entry_address"), (address, "_plan"),
                                 (address, "_address")):
                patched.setattr(module, name, found_again)
            import tinynet.ops.arrays.normalization as door
            for name in ("forward_bound", "backward_bound", "forward_rows_bound",
                         "backward_rows_bound"):
                patched.setattr(door, name, found_again)
            again = run(x, g, 0)
            serial_again = run(x, g, 2**62)
        x_read_only = x.copy()
        x_read_only.flags.writeable = False
        read_only = run(x_read_only, g, 0)
    finally:
        tuning.set_num_threads(previous)
    plan = plan_of(shape, groups, "test")  # the plan the door used
    modes = {key[1] for key in plan.bound}
    assert len(modes) == 2 and SERIAL in modes  # the serial and a parallel mode
    assert len(plan.bound) == 3 * 2  # forward and backward; serial, parallel, read-only x
    for other in (first, again, serial_again, read_only):
        assert [a.tobytes() for a in other] == [a.tobytes() for a in serial]
