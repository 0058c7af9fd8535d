"""Depthwise kernels at the image borders: taps outside the image are left out of the sums,
which gives bitwise what an explicitly zero-padded image gives; float64 references on
border-heavy shapes; serial, parallel and thread counts give the same bits; the kernel
gradient's three-rows-at-a-time pass gives the bits of one row at a time; streamed
outputs give the bits of ordinary stores."""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.ops.arrays import streaming
from tinynet.ops.arrays.depthwise import depthwise_backward, depthwise_forward


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _geometry(h, w, kh, kw, sh, sw, dh, dw, same):
    """``(kh, kw, sh, sw, dh, dw, pad_top, pad_left, oh, ow)`` as Keras pads."""
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if not same:
        return (kh, kw, sh, sw, dh, dw, 0, 0, (h - ekh) // sh + 1, (w - ekw) // sw + 1)
    oh, ow = -(-h // sh), -(-w // sw)
    pt = max((oh - 1) * sh + ekh - h, 0) // 2
    pl = max((ow - 1) * sw + ekw - w, 0) // 2
    return (kh, kw, sh, sw, dh, dw, pt, pl, oh, ow)


def _padded(x, geom):
    """``x`` with the zeros a 'same' geometry reads, and the 'valid' geometry over it."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = geom
    hp = max((oh - 1) * sh + (kh - 1) * dh + 1, pt + x.shape[1])
    wp = max((ow - 1) * sw + (kw - 1) * dw + 1, pl + x.shape[2])
    xp = np.zeros((x.shape[0], hp, wp, x.shape[3]), dtype=np.float32)
    xp[:, pt:pt + x.shape[1], pl:pl + x.shape[2]] = x
    return xp, (kh, kw, sh, sw, dh, dw, 0, 0, oh, ow)


def _reference(x, w3, g, geom):
    """float64 ``(y, dx, dw3)`` straight from the definition, output channel ``c * M + m``."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = geom
    b, h, wd, c = x.shape
    mult = w3.shape[-1] // c
    xe = np.repeat(x.astype(np.float64), mult, axis=3)
    y = np.zeros((b, oh, ow, c * mult))
    dxe = np.zeros_like(xe)
    dw3 = np.zeros(w3.shape)
    for oy in range(oh):
        for ox in range(ow):
            for i in range(kh):
                for j in range(kw):
                    iy, ix = oy * sh + i * dh - pt, ox * sw + j * dw - pl
                    if 0 <= iy < h and 0 <= ix < wd:
                        y[:, oy, ox] += xe[:, iy, ix] * w3[i, j]
                        dxe[:, iy, ix] += g[:, oy, ox] * w3[i, j]
                        dw3[i, j] += (xe[:, iy, ix] * g[:, oy, ox]).sum(axis=0)
    return y, dxe.reshape(b, h, wd, c, mult).sum(axis=4), dw3


# (x shape, depth multiplier, kernel, strides, dilation): kernels wider than the image,
# kernel widths that are not multiples of three, strided and dilated taps, channels that
# are whole vectors (read in place) and channels that are not (widened)
CASES = [
    ((2, 3, 4, 16), 1, (5, 5), (1, 1), (1, 1)),
    ((2, 2, 2, 16), 1, (3, 3), (1, 1), (1, 1)),
    ((3, 7, 9, 32), 1, (2, 5), (1, 1), (1, 2)),
    ((2, 9, 8, 16), 1, (3, 4), (2, 3), (1, 1)),
    ((2, 6, 11, 5), 3, (3, 3), (2, 2), (2, 1)),
    ((1, 1, 1, 16), 1, (3, 3), (1, 1), (1, 1)),
    ((2, 5, 7, 20), 2, (1, 4), (1, 2), (1, 2)),
    # 3-wide kernels with unit column steps: the kernel gradient takes three kernel rows
    # at a time where all three are inside (odd and even widths, a 5-row kernel whose rows
    # go as three and two, dilated rows, widened channels)
    ((2, 6, 7, 16), 1, (3, 3), (1, 1), (1, 1)),
    ((2, 9, 8, 16), 1, (5, 3), (1, 1), (2, 1)),
    ((2, 7, 10, 6), 2, (3, 3), (2, 1), (1, 1)),
]


@pytest.mark.parametrize("shape, mult, kernel, strides, dilation", CASES)
def test_left_out_taps_give_the_bits_of_a_zero_padded_image(shape, mult, kernel, strides,
                                                            dilation):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape).astype(np.float32)
    geom = _geometry(shape[1], shape[2], *kernel, *strides, *dilation, True)
    w3 = rng.standard_normal((*kernel, shape[3] * mult)).astype(np.float32)
    bias = rng.standard_normal(shape[3] * mult).astype(np.float32)
    y = depthwise_forward(x, w3, geom, bias)
    g = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw3, db = depthwise_backward(x, w3, g, geom, want_db=True)
    xp, valid = _padded(x, geom)
    np.testing.assert_array_equal(y, depthwise_forward(xp, w3, valid, bias))
    dxp, dwp, dbp = depthwise_backward(xp, w3, g, valid, want_db=True)
    pt, pl = geom[6], geom[7]
    np.testing.assert_array_equal(dx, dxp[:, pt:pt + shape[1], pl:pl + shape[2]])
    np.testing.assert_array_equal(dw3, dwp)
    np.testing.assert_array_equal(db, dbp)


@pytest.mark.parametrize("width", range(3, 24))
@pytest.mark.parametrize("channels", [8, 16, 32, 48])
def test_pixels_in_runs_of_eight_four_two_and_one_give_the_bits_of_the_tap_by_tap_sum(
        width, channels):
    # a row's inside pixels run eight at a time (the forward, on cores with 512-bit
    # registers), then four, then two, the rest one by one: every count of inside pixels
    # mod 8 against float32 arithmetic in the documented order, for the forward and the
    # input gradient (8 channels: the widened, folded rows; 48: a border pixel's vectors
    # in a pair, then one alone)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 4, width, channels)).astype(np.float32)
    w3 = rng.standard_normal((3, 3, channels)).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    geom = _geometry(4, width, 3, 3, 1, 1, 1, 1, True)
    xp, _ = _padded(x, geom)
    gp, _ = _padded(g, geom)
    want_y = np.zeros(x.shape, dtype=np.float32)
    want_dx = np.zeros(x.shape, dtype=np.float32)
    for i in range(3):
        for j in range(3):
            want_y = want_y + xp[:, i:i + 4, j:j + width] * w3[i, j]
            want_dx = want_dx + gp[:, 2 - i:6 - i, 2 - j:2 - j + width] * w3[i, j]
    assert depthwise_forward(x, w3, geom, bias).tobytes() == (want_y + bias).tobytes()
    dx = depthwise_backward(x, w3, g, geom, want_dw=False)[0]
    assert dx.tobytes() == want_dx.tobytes()


# every case with 'same' padding, and with 'valid' where it leaves an output pixel
REFERENCE_CASES = [(*case, same) for case in CASES for same in (True, False)
                   if min(_geometry(case[0][1], case[0][2], *case[2], *case[3], *case[4],
                                    same)[8:]) > 0]


@pytest.mark.parametrize("shape, mult, kernel, strides, dilation, same", REFERENCE_CASES)
def test_matches_a_float64_reference(shape, mult, kernel, strides, dilation, same):
    geom = _geometry(shape[1], shape[2], *kernel, *strides, *dilation, same)
    rng = np.random.default_rng(12)
    x = rng.standard_normal(shape).astype(np.float32)
    w3 = rng.standard_normal((*kernel, shape[3] * mult)).astype(np.float32)
    y = depthwise_forward(x, w3, geom)
    g = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw3, _ = depthwise_backward(x, w3, g, geom)
    y64, dx64, dw64 = _reference(x, w3, g.astype(np.float64), geom)
    np.testing.assert_allclose(y, y64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dx64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw3, dw64, rtol=1e-5, atol=1e-4)


def test_a_border_pixel_sums_only_its_taps_inside_the_image():
    # 2x2 image of ones, 3x3 kernel, 'same': pixel (0, 0) sees taps (1, 1), (1, 2), (2, 1),
    # (2, 2); pixel (1, 1) sees taps (0, 0), (0, 1), (1, 0), (1, 1)
    x = np.ones((1, 2, 2, 16), dtype=np.float32)
    w3 = np.broadcast_to(np.arange(1, 10, dtype=np.float32).reshape(3, 3, 1),
                         (3, 3, 16)).copy()
    y = depthwise_forward(x, w3, (3, 3, 1, 1, 1, 1, 1, 1, 2, 2))
    np.testing.assert_array_equal(y[0, :, :, 0], [[5 + 6 + 8 + 9, 4 + 5 + 7 + 8],
                                                  [2 + 3 + 5 + 6, 1 + 2 + 4 + 5]])
    assert np.all(y == y[..., :1])


def _case(seed, shape, mult, kernel, strides, dilation):
    """A generator, 9 samples of ``shape``'s image, the 'same' geometry and a kernel."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((9, *shape[1:])).astype(np.float32)
    geom = _geometry(shape[1], shape[2], *kernel, *strides, *dilation, True)
    w3 = rng.standard_normal((*kernel, shape[3] * mult)).astype(np.float32)
    return rng, x, geom, w3


@pytest.mark.parametrize("shape, mult, kernel, strides, dilation", CASES[:5] + CASES[7:])
def test_serial_parallel_and_thread_counts_give_the_same_bits(shape, mult, kernel, strides,
                                                              dilation):
    rng, x, geom, w3 = _case(13, shape, mult, kernel, strides, dilation)
    g = rng.standard_normal((9, geom[8], geom[9], shape[3] * mult)).astype(np.float32)

    def run():
        return [depthwise_forward(x, w3, geom, w3[0, 0]),
                *depthwise_backward(x, w3, g, geom, want_db=True)]

    with tuning.override(conv_parallel_min_elems=2**62):
        serial = run()
    threads = tuning.get_num_threads()
    for n in (1, 2):
        tuning.set_num_threads(n)
        try:
            with tuning.override(conv_parallel_min_elems=0):
                for a, b in zip(serial, run()):
                    np.testing.assert_array_equal(a, b)
        finally:
            tuning.set_num_threads(threads)


@pytest.mark.parametrize("shape, mult, kernel, strides, dilation", CASES)
def test_a_channel_of_ones_leaves_the_other_channels_bits(shape, mult, kernel, strides,
                                                          dilation):
    # SeparableConv2D's depthwise output: the plain output's bits, then a channel of ones,
    # serial and parallel, with and without a bias
    _, x, geom, w3 = _case(14, shape, mult, kernel, strides, dilation)
    for bias in (None, w3[0, 0]):
        plain = depthwise_forward(x, w3, geom, bias)
        for gate in (0, 2**62):
            with tuning.override(conv_parallel_min_elems=gate):
                y = depthwise_forward(x, w3, geom, bias, ones=True)
            assert y.shape == (*plain.shape[:3], plain.shape[3] + 1)
            np.testing.assert_array_equal(y[..., :-1], plain)
            assert np.all(y[..., -1] == 1.0)


def _row_at_a_time_kernel_gradient(x, w3, g, geom):
    """The kernel and bias gradients as sums of one-kernel-row problems: kernel row ``i``
    alone is a ``1 x KW`` kernel whose image starts ``i * dh`` rows lower (a 1-row kernel
    never takes the three-rows path)."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = geom
    rows = []
    for i in range(kh):
        one = (1, kw, sh, sw, 1, dw, pt - i * dh, pl, oh, ow)
        _, dwi, _ = depthwise_backward(x, w3[i:i + 1], g, one, want_dx=False)
        rows.append(dwi[0])
    _, _, db = depthwise_backward(x, w3[:1], g, (1, kw, sh, sw, 1, dw, pt, pl, oh, ow),
                                  want_dx=False, want_dw=False, want_db=True)
    return np.stack(rows), db


@pytest.mark.parametrize("shape, mult, kernel, strides, dilation", CASES[7:])
def test_three_kernel_rows_at_a_time_give_the_bits_of_one_at_a_time(shape, mult, kernel,
                                                                    strides, dilation):
    # each tap's chains (even and odd output columns, per output row) are the same in the
    # three-rows pass, so the bits are those of one kernel row at a time
    rng, x, geom, w3 = _case(15, shape, mult, kernel, strides, dilation)
    g = rng.standard_normal((9, geom[8], geom[9], shape[3] * mult)).astype(np.float32)
    _, dw3, db = depthwise_backward(x, w3, g, geom, want_dx=False, want_db=True)
    dw_rows, db_rows = _row_at_a_time_kernel_gradient(x, w3, g, geom)
    np.testing.assert_array_equal(dw3, dw_rows)
    np.testing.assert_array_equal(db, db_rows)


@pytest.mark.parametrize("shape, mult", [((3, 8, 9, 32), 1), ((2, 6, 7, 8), 2)])
def test_streamed_outputs_give_the_bits_of_ordinary_stores(shape, mult, monkeypatch):
    rng, x, geom, w3 = _case(16, shape, mult, (3, 3), (1, 1), (1, 1))
    g = rng.standard_normal((9, geom[8], geom[9], shape[3] * mult)).astype(np.float32)

    def run():
        y = depthwise_forward(x, w3, geom, w3[0, 0])
        dx, dw3, db = depthwise_backward(x, w3, g, geom, want_db=True)
        return y, dx, dw3, db

    plain = run()
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    for gate in (0, 2**62):
        with tuning.override(conv_parallel_min_elems=gate):
            streamed = run()
        for a, b in zip(plain, streamed):
            np.testing.assert_array_equal(a, b)
    # whole vectors (C * M a multiple of 16) stream, into 64-byte aligned outputs; dx
    # only when M == 1
    y, dx = streamed[:2]
    assert y.ctypes.data % 64 == 0
    if mult == 1:
        assert dx.ctypes.data % 64 == 0


def _slot_operands(batch=5, slots=2):
    """Operands of :func:`tinynet.kernels.depthwise.forward_serial` for a 3x3 'same'
    convolution of ``batch`` samples ``[3, 4, 16]``, one task a sample, ``slots`` slots,
    and ``y`` filled with NaN."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((batch, 3, 4, 16)).astype(np.float32)
    wf = rng.standard_normal((3, 3, 16)).astype(np.float32)
    tasks = np.array([(b, b + 1) for b in range(batch)], dtype=np.int64)
    y = np.full((batch, 3, 4, 16), np.nan, dtype=np.float32)
    return (x, wf, wf[0, 0], True, False, y, tasks, 1, 1, 1, 1, 1, 1,
            np.empty((slots, 1, 1, 16), dtype=np.float32),
            np.empty((slots, 4 * 16), dtype=np.float32), False)


def test_a_slot_range_runs_the_tasks_of_those_slots_only():
    # slot s of S runs tasks s, s + S, ...: the parallel variants run one slot a thread
    from tinynet.kernels import depthwise as dk

    args = _slot_operands()
    y = args[5]
    dk.forward_serial(*args, 1, 2)
    assert np.isnan(y[[0, 2, 4]]).all() and not np.isnan(y[[1, 3]]).any()
    one = y.copy()
    dk.forward_serial(*args, 0, 1)
    assert not np.isnan(y).any()
    np.testing.assert_array_equal(y[[1, 3]], one[[1, 3]])
    everything = np.full_like(y, np.nan)
    dk.forward_serial(*(args[:5] + (everything,) + args[6:]), 0, 2)
    assert y.tobytes() == everything.tobytes()


def test_the_parallel_variants_are_the_serial_kernels_at_their_address():
    # no second compiled body: the parallel entry points are Python functions handing the
    # serial kernel's slots to tinynet.kernels.address.run_parallel
    from numba.core.registry import CPUDispatcher

    from tinynet.kernels import depthwise as dk

    for name in ("forward_parallel", "backward_parallel"):
        assert not isinstance(getattr(dk, name), CPUDispatcher), name
    args = _slot_operands(batch=7, slots=3)
    dk.forward_parallel(*args)
    serial = np.full_like(args[5], np.nan)
    dk.forward_serial(*(args[:5] + (serial,) + args[6:]), 0, 3)
    assert args[5].tobytes() == serial.tobytes()


@pytest.mark.parametrize("mult, ones", [(1, False), (1, True), (3, False)])
def test_outputs_start_on_64_byte_lines_whatever_their_size(mult, ones):
    # y (also with SeparableConv2D's channel of ones) and dx are tinynet's allocations: the
    # next pass reads them one cache line a vector
    rng, x, geom, w3 = _case(18, (2, 4, 5, 16), mult, (3, 3), (1, 1), (1, 1))
    y = depthwise_forward(x, w3, geom, ones=ones)
    g = rng.standard_normal((9, 4, 5, 16 * mult)).astype(np.float32)
    dx, _, _ = depthwise_backward(x, w3, g, geom)
    assert y.ctypes.data % 64 == 0 and dx.ctypes.data % 64 == 0


def test_the_backward_calls_its_row_kernels_through_their_addresses():
    # the row bodies are kernels of their own (each compiled once, not again inside the
    # backward, which compiled in over 10 s when it linked them); 0 stands for a part not
    # wanted
    from numba import config

    from tinynet.kernels import depthwise as dk

    rng = np.random.default_rng(5)
    wf = rng.standard_normal((3, 3, 16)).astype(np.float32)
    g = rng.standard_normal((2, 3, 4, 16)).astype(np.float32)
    dx = np.empty_like(g)
    ges = np.empty((1, 1, 1, 16), dtype=np.float32)
    rows = np.empty((1, 64), dtype=np.float32)
    every = dk.addresses(wf, g, dx, ges, rows, False, True, True)
    assert dk.addresses(wf, g, dx, ges, rows, False, False, True)[0] == 0
    assert dk.addresses(wf, g, dx, ges, rows, False, True, False)[1:] == (0, 0)
    if not config.DISABLE_JIT:
        assert all(isinstance(a, int) and a for a in every) and len(set(every)) == 3
