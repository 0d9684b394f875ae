"""Conversions of the amp runtime (amprt_cast, amprt_fill) against numpy.

Exhaustive over all 65536 f16 and bf16 bit patterns; f32 -> f16/bf16 on every
representable value, every tie (exact midpoint between neighbours: must go to
the even one) and its f32 neighbours, plus random f32 bit patterns; f64 ->
f16/bf16 just off a tie (a double rounding through f32 would get these
wrong); integer and bool casts. Expected bits come from numpy (f16) and
ml_dtypes (bf16), independent implementations.
"""

import sys

import numpy as np

from runtime_harness import Runtime, Buf, bf16_bits_to_f32, ml_dtypes


def cast(rt, src, dt):
    y = rt.empty(src.shape, dt)
    rt.ok("cast", src.ref, y.ref)
    return y


def same_bits_or_nan(what, got_f32, want_f32):
    g = np.asarray(got_f32, np.float32)
    w = np.asarray(want_f32, np.float32)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), "%s: NaN mismatch" % what
    gb, wb = g.view(np.uint32)[~nan], w.view(np.uint32)[~nan]
    bad = np.nonzero(gb != wb)[0]
    assert bad.size == 0, "%s: %d mismatches, first got %08x want %08x" % (
        what, bad.size, gb[bad[0]], wb[bad[0]])
    # NaN keeps its sign.
    assert np.array_equal(np.signbit(g[nan]), np.signbit(w[nan])), what


def same_half_bits(what, got_bits, want_bits, nan_mask):
    got_bits = np.asarray(got_bits, np.uint16)
    want_bits = np.asarray(want_bits, np.uint16)
    ok = (got_bits == want_bits) | nan_mask
    bad = np.nonzero(~ok)[0]
    assert bad.size == 0, "%s: %d mismatches, first at %d: got %04x want %04x" % (
        what, bad.size, bad[0], got_bits[bad[0]], want_bits[bad[0]])


def test_f16_to_f32_exhaustive(rt):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x = Buf(bits.view(np.float16), "f16")
    same_bits_or_nan("f16->f32", cast(rt, x, "f32").arr,
                     bits.view(np.float16).astype(np.float32))


def test_bf16_to_f32_exhaustive(rt):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x = Buf(bits, "bf16")
    same_bits_or_nan("bf16->f32", cast(rt, x, "f32").arr,
                     bf16_bits_to_f32(bits))


def test_f16_roundtrip_exhaustive(rt):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    f = bits.view(np.float16).astype(np.float32)
    back = cast(rt, Buf(f, "f32"), "f16").arr.view(np.uint16)
    nan = np.isnan(f)
    same_half_bits("f16->f32->f16", back, bits, nan)
    assert np.isnan(back.view(np.float16)[nan]).all()


def test_bf16_roundtrip_exhaustive(rt):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    f = bf16_bits_to_f32(bits)
    back = cast(rt, Buf(f, "f32"), "bf16").arr
    nan = np.isnan(f)
    same_half_bits("bf16->f32->bf16", back, bits, nan)
    assert (bf16_bits_to_f32(back[nan]) != bf16_bits_to_f32(back[nan])).all()


def ties_and_neighbours(values_f32):
    """Midpoints between consecutive finite values, and one f32 ulp off."""
    v = np.sort(np.unique(values_f32[np.isfinite(values_f32)]
                          .astype(np.float64)))
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact in f32
    up = np.nextafter(mids, np.float32(np.inf))
    dn = np.nextafter(mids, np.float32(-np.inf))
    return np.concatenate([mids, up, dn])


def test_f32_to_f16_ties_and_random(rt):
    allh = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(
        np.float16).astype(np.float32)
    cases = [allh, ties_and_neighbours(allh),
             rt.rng.integers(0, 2 ** 32, 2_000_000, dtype=np.uint64)
             .astype(np.uint32).view(np.float32),
             np.array([65504, 65519.996, 65520, 1e30, -65520, 2 ** -25,
                       2 ** -25 * 1.0000001, 2 ** -24 * 1.5, 2 ** -14,
                       np.inf, -np.inf, -0.0, 0.0], np.float32)]
    f = np.concatenate(cases)
    got = cast(rt, Buf(f, "f32"), "f16").arr.view(np.uint16)
    want = f.astype(np.float16).view(np.uint16)
    same_half_bits("f32->f16", got, want, np.isnan(f))
    assert np.isnan(got.view(np.float16)[np.isnan(f)]).all()


def test_f32_to_bf16_ties_and_random(rt):
    assert ml_dtypes is not None, "ml_dtypes needed for the bf16 reference"
    allb = bf16_bits_to_f32(np.arange(65536, dtype=np.uint32)
                            .astype(np.uint16))
    f = np.concatenate([
        allb, ties_and_neighbours(allb),
        rt.rng.integers(0, 2 ** 32, 2_000_000, dtype=np.uint64)
        .astype(np.uint32).view(np.float32),
        np.array([3.4028235e38, np.inf, -np.inf, 1.17549435e-38,
                  1e-45, -0.0], np.float32)])
    got = cast(rt, Buf(f, "f32"), "bf16").arr
    want = f.astype(ml_dtypes.bfloat16).view(np.uint16)
    same_half_bits("f32->bf16", got, want, np.isnan(f))
    assert np.isnan(bf16_bits_to_f32(got[np.isnan(f)])).all()


def test_f64_to_low_single_rounding(rt):
    # Just above / below a tie of the target type, by far less than an f32
    # ulp: rounding to f32 first would land on the tie and go to even. The
    # expected bits follow from the construction (above: the upper
    # neighbour, below: the lower one, on the tie: the even one).
    def check(dt, lo_bits, lo, hi):
        mid = (lo + hi) / 2
        eps = np.abs(mid) * 2.0 ** -40
        d = np.concatenate([mid + eps, mid - eps, mid])
        got = cast(rt, Buf(d, "f64"), dt).arr.view(np.uint16)
        even = np.where(lo_bits % 2 == 0, lo_bits, lo_bits + 1)
        want = np.concatenate([lo_bits + 1, lo_bits, even]).astype(np.uint16)
        same_half_bits("f64->" + dt, got, want, np.zeros(d.shape, bool))

    hb = np.arange(0x0001, 0x7BFF, 7, dtype=np.uint16)
    check("f16", hb, hb.view(np.float16).astype(np.float64),
          (hb + 1).view(np.float16).astype(np.float64))
    bb = np.arange(0x0080, 0x7F00, 13, dtype=np.uint32).astype(np.uint16)
    check("bf16", bb, bf16_bits_to_f32(bb).astype(np.float64),
          bf16_bits_to_f32(bb + 1).astype(np.float64))


def test_f16_bf16_direct(rt):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    h = bits.view(np.float16)
    got = cast(rt, Buf(h, "f16"), "bf16").arr
    want = h.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    same_half_bits("f16->bf16", got, want, np.isnan(h))
    got = cast(rt, Buf(bits, "bf16"), "f16").arr.view(np.uint16)
    f = bf16_bits_to_f32(bits)
    want = f.astype(np.float16).view(np.uint16)
    same_half_bits("bf16->f16", got, want, np.isnan(f))


def test_int_and_bool_casts(rt):
    f = np.array([0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 1e20, -1e20, np.nan,
                  np.inf, -np.inf, 127.9, 300.0, -300.0], np.float32)
    x = Buf(f, "f32")
    rt.equal("f32->i64", cast(rt, x, "i64").arr,
             [0, 0, 1, -1, 2, -2, 2 ** 63 - 1, -2 ** 63, 0, 2 ** 63 - 1,
              -2 ** 63, 127, 300, -300])
    rt.equal("f32->i32", cast(rt, x, "i32").arr,
             [0, 0, 1, -1, 2, -2, 2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1,
              -2 ** 31, 127, 300, -300])
    rt.equal("f32->i8", cast(rt, x, "i8").arr,
             [0, 0, 1, -1, 2, -2, 127, -128, 0, 127, -128, 127, 127, -128])
    rt.equal("f32->u8", cast(rt, x, "u8").arr,
             [0, 0, 1, 0, 2, 0, 255, 0, 0, 255, 0, 127, 255, 0])
    rt.equal("f32->bool", cast(rt, x, "bool").arr,
             [0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    i = rt.rng.integers(-2 ** 40, 2 ** 40, 1000)
    got = cast(rt, Buf(i, "i64"), "f32").arr
    rt.equal("i64->f32", got, i.astype(np.float32))
    got = cast(rt, Buf(i, "i64"), "f16").arr
    rt.equal("i64->f16", got.view(np.uint16),
             i.astype(np.float64).astype(np.float16).view(np.uint16))
    rt.equal("i64->i32", cast(rt, Buf(i, "i64"), "i32").arr,
             i.astype(np.int32))
    rt.equal("i64->bool", cast(rt, Buf(np.array([0, 3, -1]), "i64"),
                               "bool").arr, [0, 1, 1])
    rt.equal("bool->f32", cast(rt, Buf(np.array([0, 1, 1]), "bool"),
                               "f32").arr, [0, 1, 1])
    d = rt.rng.standard_normal(1000) * 1e3
    rt.equal("f64->f32", cast(rt, Buf(d, "f64"), "f32").arr,
             d.astype(np.float32))
    rt.equal("f32->f64", cast(rt, Buf(d.astype(np.float32), "f32"),
                              "f64").arr, d.astype(np.float32).astype(
                                  np.float64))


def test_fill_rounds_once(rt):
    for dt, want in (("f16", np.float16(1 / 3).view(np.uint16)),
                     ("bf16", np.float64(1 / 3).astype(ml_dtypes.bfloat16)
                      .view(np.uint16)),
                     ("f32", np.float32(1 / 3).view(np.uint32))):
        y = rt.empty((3, 5), dt)
        rt.ok("fill", y.ref, 1 / 3)
        rt.equal("fill " + dt, y.arr.view(want.dtype),
                 np.full((3, 5), want))
    y = rt.empty((4,), "i64")
    rt.ok("fill", y.ref, -7.0)
    rt.equal("fill i64", y.arr, [-7] * 4)


def test_cast_errors(rt):
    x = rt.randn((2, 3), "f32")
    y = rt.empty((3, 2), "f16")
    rt.fails("cast", x.ref, y.ref, status=3, match=r"expected \[2, 3\]")
    bad = Buf(np.zeros((2, 3), np.float32), "f32")
    bad.t.dtype = 42
    rt.fails("cast", bad.ref, rt.empty((2, 3), "f16").ref, status=2,
             match="invalid dtype 42")
    rt.fails("cast", None, y.ref, status=1, match="x is NULL")


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]

if __name__ == "__main__":
    np.seterr(all="ignore")  # numpy's reference casts overflow on purpose
    sys.exit(Runtime.from_args().run(TESTS))
