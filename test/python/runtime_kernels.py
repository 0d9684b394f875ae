"""Compute kernels of the amp runtime against float64 numpy references.

Fresh random inputs every run (the seed is printed; --seed reproduces). Each
kernel runs in f32, f16 and bf16 storage. The reference takes the inputs as
stored (already rounded to the dtype) and computes in float64; the kernel's
output must satisfy

    |out - ref| <= 2 u(dt) |ref| + (terms + 4) 2^-24 scale

with u = 2^-24, 2^-11, 2^-8 (f32, f16, bf16) the rounding of the single
final store, `terms` the number of f32 terms summed into an element and
`scale` their magnitude (e.g. |A| @ |B| for a GEMM). Gradient kernels are
checked against analytic float64 references and, on small shapes, against
central finite differences of the float64 forward reference.
"""

import ctypes as C
import sys

import numpy as np
from math import erf, sqrt, pi

from runtime_harness import (NP_STORAGE, Runtime, Buf, Tensor, window,
                             tensor_array, i64s, quantize)

FLOATS = ("f32", "f16", "bf16")
verf = np.vectorize(erf)


def fd_grad(f, x, dy, h=1e-6):
    """d/dx sum(f(x) * dy), central differences in float64."""
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        p = np.sum(f(x) * dy)
        flat[i] = old - h
        m = np.sum(f(x) * dy)
        flat[i] = old
        g.reshape(-1)[i] = (p - m) / (2 * h)
    return g


def fd_close(what, got, want, rtol=2e-3):
    got = np.asarray(got, np.float64)
    scale = np.max(np.abs(want)) + 1e-12
    err = np.max(np.abs(got - want)) / scale
    assert err < rtol, "%s: finite-difference mismatch %.3g" % (what, err)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

def gelu(x):
    return 0.5 * x * (1 + verf(x / sqrt(2)))


def fast_gelu(x):
    return 0.5 * x * (1 + np.tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))


UNARY = {
    "neg": (lambda x: -x, None), "abs": (np.abs, None),
    "relu": (lambda x: np.maximum(x, 0), None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "tanh": (np.tanh, None), "exp": (np.exp, None),
    "log": (np.log, "pos"), "sqrt": (np.sqrt, "pos"),
    "reciprocal": (lambda x: 1 / x, "pos"),
    "gelu": (gelu, None), "fast_gelu": (fast_gelu, None),
    "erf": (np.vectorize(erf), None), "sin": (np.sin, None),
    "cos": (np.cos, None), "floor": (np.floor, None), "ceil": (np.ceil, None),
    "round": (np.round, None),  # halves to even, as ONNX Round
}


def test_unary(rt):
    for name, (f, dom) in UNARY.items():
        for dt in FLOATS:
            shape = (3, 7, 11)
            if dom == "pos":
                x = rt.uniform(shape, dt, 0.05, 4)
            else:
                x = rt.randn(shape, dt, 2.0)
            y = rt.empty(shape, dt)
            rt.ok(name, x.ref, y.ref)
            ref = f(x.f64())
            sc = np.maximum(np.abs(ref), 1.0) if name in ("log",) else None
            # erf/tanh cancel near 0 in gelu: judge against |x|.
            if name in ("gelu", "fast_gelu"):
                sc = np.abs(x.f64())
            rt.close(name, y, ref, dt, scale=sc, terms=8)
    # Special values: relu keeps NaN (ONNX's max(0, x), as ONNX Runtime and
    # PyTorch do: a NaN activation must reach the loss scaler's check), maps
    # -inf and -0 to +0.
    sv = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0])
    for dt in FLOATS:
        y = rt.empty(sv.shape, dt)
        rt.ok("relu", rt.buf(sv, dt).ref, y.ref)
        got = y.f64()
        assert np.isnan(got[0]) and np.array_equal(
            got[1:], [np.inf, 0, 0, 0, 1.5, 0]) and not np.signbit(
            got[3]), "relu special values [%s]: %s" % (dt, got)
    # Mixed dtypes: f16 in, f32 out (no rounding to f16 in between).
    x = rt.randn((50,), "f16")
    y = rt.empty((50,), "f32")
    rt.ok("sigmoid", x.ref, y.ref)
    rt.close("sigmoid_f16_to_f32", y, 1 / (1 + np.exp(-x.f64())), "f32",
             terms=8)


def test_mod_signs(rt):
    """ONNX Mod: fmod = 0 (mod) takes the divisor's sign, fmod = 1 (fmod)
    the dividend's, on floats as on integers. fmod is exact (the remainder
    of two floats is representable); mod adds the divisor to a remainder of
    the other sign, one rounding."""
    for dt in FLOATS:
        a = rt.uniform((4, 6), dt, -8, 8)
        b = rt.buf(rt.rng.uniform(0.5, 3, 6) * rt.rng.choice([-1, 1], 6), dt)
        y = rt.empty((4, 6), dt)
        rt.ok("fmod", a.ref, b.ref, y.ref)
        want = np.fmod(a.f64(), b.f64())
        assert np.array_equal(y.f64(), want), "fmod [%s]: %s vs %s" % (
            dt, y.f64(), want)
        rt.ok("mod", a.ref, b.ref, y.ref)
        want = np.mod(a.f64(), b.f64())
        assert np.all(np.sign(y.f64()) * np.sign(b.f64()) >= 0), dt
        rt.close("mod", y, want, dt, scale=np.abs(b.f64()) + 0 * want)


def test_binary_broadcast(rt):
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
           "div": np.divide, "pow": np.power}
    shapes = [((4, 5), (4, 5)), ((4, 5), ()), ((2, 1, 5), (3, 1)),
              ((5,), (3, 4, 5)), ((1, 6), (6, 1))]
    for name, f in ops.items():
        for sa, sb in shapes:
            for dt in FLOATS:
                if name == "pow":
                    a = rt.uniform(sa, dt, 0.5, 2)
                    b = rt.uniform(sb, dt, -2, 2)
                elif name == "div":
                    a = rt.randn(sa, dt)
                    b = rt.uniform(sb, dt, 0.5, 2) 
                else:
                    a, b = rt.randn(sa, dt), rt.randn(sb, dt)
                so = np.broadcast_shapes(sa, sb)
                y = rt.empty(so, dt)
                rt.ok(name, a.ref, b.ref, y.ref)
                ref = f(a.f64(), b.f64())
                sc = (np.abs(a.f64()) + np.abs(b.f64())) if name in (
                    "add", "sub") else None
                rt.close(name, y, ref, dt, scale=sc, terms=4)
    # Integer math: truncating Div, Mod with the divisor's sign.
    a = rt.rng.integers(-50, 50, (3, 4))
    b = rt.rng.integers(1, 9, (4,)) * rt.rng.choice([-1, 1], 4)
    for dt in ("i64", "i32"):
        for name, want in (("add", a + b), ("sub", a - b), ("mul", a * b),
                           ("div", np.trunc(a / b).astype(np.int64)),
                           ("mod", np.mod(a, b)), ("fmod", np.fmod(a, b))):
            y = rt.empty((3, 4), dt)
            rt.ok(name, Buf(a, dt).ref, Buf(b, dt).ref, y.ref)
            rt.equal(name + " " + dt, y.arr, want)
    rt.fails("div", Buf(a, "i64").ref, Buf(np.zeros(4), "i64").ref,
             rt.empty((3, 4), "i64").ref, match="division by zero")


def test_binary_rows(rt):
    """Float binary kernels under broadcasting, row by row in pieces
    (Elementwise.cpp's binaryRows): rows longer than a piece, either operand
    broadcast along a row, mixed dtypes, the output written over an input.
    Each element is the f32 op of the widened inputs rounded once into y's
    dtype: bit for bit against numpy's float32."""
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
           "div": np.divide, "min": np.minimum, "max": np.maximum}
    shapes = [((3, 1), (1, 2500)), ((2, 3000), (3000,)), ((2, 3000), (2, 1)),
              ((2500,), ()), ((), (2, 1100)), ((4, 1, 3), (5, 1))]
    dts = (("f16", "f16", "f16"), ("f16", "f32", "bf16"),
           ("f32", "bf16", "f32"), ("bf16", "f16", "f16"))
    for name, f in ops.items():
        for sa, sb in shapes:
            for da, db, dy in dts:
                a, b = rt.randn(sa, da), rt.randn(sb, db)
                if name == "div":
                    b = rt.uniform(sb, db, 0.5, 2)
                so = np.broadcast_shapes(sa, sb)
                y = rt.empty(so, dy)
                rt.ok(name, a.ref, b.ref, y.ref)
                want = quantize(f(a.f64().astype(np.float32),
                                  b.f64().astype(np.float32)), dy)
                rt.equal("%s %s%s %s%s -> %s" % (name, sa, da, sb, db, dy),
                         y.f64(), want)
    # The output over the operand of its shape (an in-place plan).
    for dt in FLOATS:
        a, b = rt.randn((3, 2000), dt), rt.randn((2000,), dt)
        want = quantize(a.f64().astype(np.float32) +
                        b.f64().astype(np.float32), dt)
        rt.ok("add", a.ref, b.ref, a.ref)
        rt.equal("add in place " + dt, a.f64(), want)
    # An f16 output over the first half of its f32 input's bytes (not the
    # input itself): the kernel reads the input whole before writing.
    a, b = rt.randn((3, 2000), "f32"), rt.randn((2000,), "f32")
    want = quantize(a.f64().astype(np.float32) + b.f64().astype(np.float32),
                    "f16")
    shape = (C.c_int64 * 2)(3, 2000)
    y = Tensor(a.arr.ctypes.data, 1, 2, shape)
    rt.ok("add", a.ref, b.ref, C.byref(y))
    got = np.frombuffer(a.arr.tobytes()[:3 * 2000 * 2], np.float16)
    rt.equal("add f32 -> f16 over its input", got.astype(np.float64),
             want.reshape(-1))


GRADS = {
    "relu_grad": (lambda x: np.maximum(x, 0), False),
    "sigmoid_grad": (lambda x: 1 / (1 + np.exp(-x)), True),
    "tanh_grad": (np.tanh, True),
    "gelu_grad": (gelu, False),
    "fast_gelu_grad": (fast_gelu, False),
}


def test_activation_grads(rt):
    for name, (f, takes_output) in GRADS.items():
        for dt in FLOATS:
            shape = (6, 9)
            x = rt.randn(shape, dt, 2.0)
            dy = rt.randn(shape, dt)
            xin = rt.buf(f(x.f64()), dt) if takes_output else x
            dx = rt.empty(shape, dt)
            rt.ok(name, dy.ref, xin.ref, dx.ref)
            xv, g = x.f64(), dy.f64()
            if name == "relu_grad":
                ref = g * (xv > 0)
            elif takes_output:
                yv = xin.f64()
                ref = g * yv * (1 - yv) if name == "sigmoid_grad" else \
                    g * (1 - yv * yv)
            else:
                h = 1e-6
                ref = g * (f(xv + h) - f(xv - h)) / (2 * h)
            rt.close(name, dx, ref, dt, scale=np.abs(g) * 2, terms=16)
        # Finite differences of the forward, f32 kernel.
        if name != "relu_grad" and not takes_output:
            x = rt.randn((20,), "f32")
            dy = rt.randn((20,), "f32")
            dx = rt.empty((20,), "f32")
            rt.ok(name, dy.ref, x.ref, dx.ref)
            fd_close(name, dx.f64(), fd_grad(f, x.f64().copy(), dy.f64()))


def test_sum_scale_where_identity(rt):
    for dt in FLOATS:
        ins = [rt.randn(s, dt) for s in ((3, 4), (4,), (3, 1))]
        y = rt.empty((3, 4), dt)
        rt.ok("sum", tensor_array(ins), 3, y.ref)
        ref = sum(i.f64() for i in ins)
        rt.close("sum", y, ref, dt, scale=sum(np.abs(i.f64()) for i in ins),
                 terms=3)
        # Inputs of y's shape in mixed dtypes (the lowering folds widening
        # casts into sum), and y written over one of them (it may alias an
        # input of its shape): the same bits as into a fresh y.
        mixed = [rt.randn((3, 4), dt), rt.randn((3, 4), "f16"),
                 rt.randn((3, 4), "f32")]
        fresh = rt.empty((3, 4), "f32")
        rt.ok("sum", tensor_array(mixed), 3, fresh.ref)
        rt.close("sum mixed", fresh, sum(i.f64() for i in mixed), "f32",
                 scale=sum(np.abs(i.f64()) for i in mixed), terms=3)
        over = mixed[2]
        rt.ok("sum", tensor_array(mixed), 3, over.ref)
        rt.equal("sum in place of input 2 " + dt, over.arr, fresh.arr)
    # 0 + x first: a sum of -0 is +0, in place or not.
    z = Buf(np.array([-0.0, 1.0], np.float32), "f32")
    y = rt.empty((2,), "f32")
    rt.ok("sum", tensor_array([z]), 1, y.ref)
    rt.equal("sum of -0", np.signbit(y.arr), [False, False])
    rt.ok("sum", tensor_array([z]), 1, z.ref)
    rt.equal("sum of -0 in place", np.signbit(z.arr), [False, False])
    for dt in FLOATS:
        x = rt.randn((5, 3), dt)
        s = rt.buf(np.array(3.0), "f32")
        for down in (0, 1):
            y = rt.empty((5, 3), dt)
            rt.ok("scale", x.ref, s.ref, down, y.ref)
            rt.close("scale", y, x.f64() / 3 if down else x.f64() * 3, dt,
                     terms=2)
    c = Buf(rt.rng.integers(0, 2, (2, 1, 4)), "bool")
    for dt in ("f32", "f16", "i64", "bool"):
        a = Buf(rt.rng.integers(0, 2, (3, 4)) if dt == "bool" else
                rt.rng.standard_normal((3, 4)) * 10, dt)
        b = Buf(rt.rng.integers(0, 2, (4,)) if dt == "bool" else
                rt.rng.standard_normal((4,)) * 10, dt)
        y = rt.empty((2, 3, 4), dt)
        rt.ok("where", c.ref, a.ref, b.ref, y.ref)
        rt.equal("where " + dt, y.arr, np.where(c.arr.astype(bool), a.arr,
                                                b.arr))
        y = rt.empty((3, 4), dt)
        rt.ok("identity", a.ref, y.ref)
        rt.equal("identity " + dt, y.arr, a.arr)
    x = Buf(np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32), "f32")
    for name, want in (("isnan", [0, 1, 0, 0, 0]), ("isinf", [0, 0, 1, 1, 0])):
        y = rt.empty((5,), "bool")
        rt.ok(name, x.ref, y.ref)
        rt.equal(name, y.arr, want)
    y = rt.empty((5,), "bool")
    rt.ok("logical_not", Buf(np.array([0, 1, 1, 0, 1]), "bool").ref, y.ref)
    rt.equal("logical_not", y.arr, [1, 0, 0, 1, 0])


# ---------------------------------------------------------------------------
# Gemm / MatMul
# ---------------------------------------------------------------------------

def test_gemm(rt):
    for dt in FLOATS:
        for ta in (0, 1):
            for tb in (0, 1):
                M, K, N = 37, 70, 29
                a = rt.randn((K, M) if ta else (M, K), dt)
                b = rt.randn((N, K) if tb else (K, N), dt)
                for cshape in (None, (N,), (M, 1), (M, N)):
                    c = rt.randn(cshape, dt) if cshape else None
                    y = rt.empty((M, N), dt)
                    alpha, beta = 0.75, (1.5 if c else 0.0)
                    rt.ok("gemm", a.ref, b.ref, c.ref if c else None, y.ref,
                          ta, tb, alpha, beta)
                    A = a.f64().T if ta else a.f64()
                    B = b.f64().T if tb else b.f64()
                    ref = alpha * A @ B
                    sc = abs(alpha) * np.abs(A) @ np.abs(B)
                    if c:
                        ref = ref + beta * c.f64()
                        sc = sc + abs(beta) * np.abs(c.f64())
                    rt.close("gemm", y, ref, dt, scale=sc, terms=K)
    # f16 operands, f32 result: no intermediate rounding to f16.
    a, b = rt.randn((64, 300), "f16"), rt.randn((300, 8), "f16")
    y = rt.empty((64, 8), "f32")
    rt.ok("gemm", a.ref, b.ref, None, y.ref, 0, 0, 1.0, 0.0)
    rt.close("gemm_f16_in_f32_out", y, a.f64() @ b.f64(), "f32",
             scale=np.abs(a.f64()) @ np.abs(b.f64()), terms=300)
    # a [.., K] without trans_a: a linear layer with its bias on [B, S, K],
    # the leading dims as rows, y [B, S, N]; the bits of the 2-D call, and
    # of gemm_relu the relu of them.
    for dt in FLOATS:
        a, b = rt.randn((3, 5, 24), dt), rt.randn((16, 24), dt)
        c = rt.randn((16,), dt)
        for kernel in ("gemm", "gemm_relu"):
            y3 = rt.empty((3, 5, 16), dt)
            rt.ok(kernel, a.ref, b.ref, c.ref, y3.ref, 0, 1, 1.0, 1.0)
            a2 = rt.buf(a.f64().reshape(15, 24), dt)
            y2 = rt.empty((15, 16), dt)
            rt.ok(kernel, a2.ref, b.ref, c.ref, y2.ref, 0, 1, 1.0, 1.0)
            rt.equal(kernel + " [.., K] " + dt, y3.arr.reshape(15, 16),
                     y2.arr)
    rt.fails("gemm", rt.randn((3, 5, 24), "f32").ref,
             rt.randn((16, 24), "f32").ref, None,
             rt.empty((15, 16), "f32").ref, 0, 1, 1.0, 0.0,
             match="y has shape")
    # FuseMatMulBias's claim: in f32, fused_matmul on [.., K] then the add
    # of a bias are gemm with c, bit for bit (both paths: the fast one
    # flattens the batch as gemm does).
    for ta_b in (0, 1):
        a = rt.randn((4, 37, 70), "f32")
        b = rt.randn((29, 70) if ta_b else (70, 29), "f32")
        c = rt.randn((29,), "f32")
        p, z = rt.empty((4, 37, 29), "f32"), rt.empty((4, 37, 29), "f32")
        rt.ok("fused_matmul", a.ref, b.ref, p.ref, 0, ta_b, C.c_float(0.5))
        rt.ok("add", p.ref, c.ref, z.ref)
        y = rt.empty((4, 37, 29), "f32")
        rt.ok("gemm", a.ref, b.ref, c.ref, y.ref, 0, ta_b, C.c_float(0.5),
              C.c_float(1.0))
        rt.equal("fused_matmul + add == gemm with c, trans_b %d" % ta_b,
                 y.arr, z.arr)
    # gemm_act_grad: the bits of gemm then the activation's gradient.
    for dt in FLOATS:
        for act, grad in ((0, "relu_grad"), (1, "gelu_grad"),
                          (2, "fast_gelu_grad")):
            for ashape, tb in (((3, 5, 24), 1), ((15, 24), 0)):
                a = rt.randn(ashape, dt)
                b = rt.randn((16, 24) if tb else (24, 16), dt)
                out = ashape[:-1] + (16,)
                x = rt.randn(out, dt)
                dx = rt.empty(out, dt)
                rt.ok("gemm_act_grad", a.ref, b.ref, x.ref, dx.ref, 0, tb,
                      C.c_float(0.5), act)
                g, want = rt.empty(out, dt), rt.empty(out, dt)
                a2 = rt.buf(a.f64().reshape(-1, 24), dt)
                g2 = rt.empty((int(np.prod(out[:-1])), 16), dt)
                rt.ok("gemm", a2.ref, b.ref, None, g2.ref, 0, tb,
                      C.c_float(0.5), 0.0)
                g = rt.buf(g2.f64().reshape(out), dt)
                rt.ok(grad, g.ref, x.ref, want.ref)
                rt.equal("gemm_act_grad %s %s %s" % (dt, grad, ashape),
                         dx.arr, want.arr)
    ok = rt.randn((15, 24), "f32"), rt.randn((24, 16), "f32")
    rt.fails("gemm_act_grad", ok[0].ref, ok[1].ref,
             rt.randn((15, 16), "f32").ref, rt.empty((15, 16), "f32").ref,
             0, 0, C.c_float(1.0), 3, match="act 3 is not")
    rt.fails("gemm_act_grad", ok[0].ref, ok[1].ref,
             rt.randn((16, 15), "f32").ref, rt.empty((15, 16), "f32").ref,
             0, 0, C.c_float(1.0), 0, match="x has shape")
    rt.fails("gemm", rt.randn((3, 24, 5), "f32").ref,
             rt.randn((24, 16), "f32").ref, None,
             rt.empty((5, 16), "f32").ref, 1, 0, 1.0, 0.0,
             match="a must be 2-D")


def test_matmul(rt):
    cases = [((5, 7), (7, 3)), ((2, 5, 7), (7, 3)), ((7,), (7, 3)),
             ((5, 7), (7,)), ((2, 1, 5, 7), (3, 7, 4)), ((4, 6, 8), (4, 8, 2))]
    for dt in FLOATS:
        for sa, sb in cases:
            a, b = rt.randn(sa, dt), rt.randn(sb, dt)
            ref = np.matmul(a.f64(), b.f64())
            y = rt.empty(ref.shape, dt)
            rt.ok("matmul", a.ref, b.ref, y.ref)
            rt.close("matmul", y, ref, dt,
                     scale=np.matmul(np.abs(a.f64()), np.abs(b.f64())),
                     terms=sa[-1])
        for ta, tb in ((0, 1), (1, 0), (1, 1)):
            a = rt.randn((3, 9, 5) if ta else (3, 5, 9), dt)
            b = rt.randn((6, 9) if tb else (9, 6), dt)
            A = np.swapaxes(a.f64(), -1, -2) if ta else a.f64()
            B = b.f64().T if tb else b.f64()
            y = rt.empty((3, 5, 6), dt)
            rt.ok("fused_matmul", a.ref, b.ref, y.ref, ta, tb, 0.5)
            rt.close("fused_matmul", y, 0.5 * A @ B, dt,
                     scale=0.5 * np.abs(A) @ np.abs(B), terms=9)
    rt.fails("matmul", rt.randn((3, 4), "f32").ref,
             rt.randn((5, 6), "f32").ref, rt.empty((3, 6), "f32").ref,
             status=3, match="inner dimensions")


# ---------------------------------------------------------------------------
# Conv and pools
# ---------------------------------------------------------------------------

def windows_nd(x, k, st, pd, dl, fill):
    """Every window of an N-D (N, C, spatial...) x: shape (N, C, out...,
    taps), taps in kernel order; pd = begins then ends."""
    sr = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pd[i], pd[i + sr]) for i in
                                       range(sr)], constant_values=fill)
    out = [(x.shape[2 + i] + pd[i] + pd[i + sr] - (dl[i] * (k[i] - 1) + 1))
           // st[i] + 1 for i in range(sr)]
    taps = []
    for t in np.ndindex(*k):
        sl = tuple(slice(t[i] * dl[i], t[i] * dl[i] + st[i] * (out[i] - 1) + 1,
                         st[i]) for i in range(sr))
        taps.append(xp[(slice(None), slice(None)) + sl])
    return np.stack(taps, axis=-1)


def conv_nd_ref(x, w, b, st, pd, dl, group):
    """y[n, m, o...] = sum over c, taps of w[m, c, tap] x-window (float64)."""
    M, Cg = w.shape[:2]
    wins = windows_nd(x, w.shape[2:], st, pd, dl, 0.0)
    Mg = M // group
    ys = [np.einsum("nc...t,mct->nm...", wins[:, g * Cg:(g + 1) * Cg],
                    w[g * Mg:(g + 1) * Mg].reshape(Mg, Cg, -1))
          for g in range(group)]
    y = np.concatenate(ys, axis=1)
    if b is not None:
        y += b.reshape((1, M) + (1,) * (x.ndim - 2))
    return y


# The 2-D references are the N-D ones.
conv_ref = conv_nd_ref


CONVS = [  # x shape, w shape, strides, pads, dilations, group
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 9, 9), (6, 2, 3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 2),
    ((1, 6, 8, 8), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 6),
    ((2, 5, 6, 7), (3, 5, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ((1, 2, 10, 10), (3, 2, 3, 2), (1, 2), (0, 1, 2, 0), (2, 1), 1),
]


def test_conv_forward_and_grad(rt):
    for dt in FLOATS:
        for xs, ws, st, pd, dl, grp in CONVS:
            x, w, b = rt.randn(xs, dt), rt.randn(ws, dt), rt.randn(ws[:1], dt)
            win = window(ws[2:], st, pd, dl, grp)
            ref = conv_ref(x.f64(), w.f64(), b.f64(), st, pd, dl, grp)
            y = rt.empty(ref.shape, dt)
            rt.ok("conv", x.ref, w.ref, b.ref, y.ref, win)
            sc = conv_ref(np.abs(x.f64()), np.abs(w.f64()), np.abs(b.f64()),
                          st, pd, dl, grp)
            terms = ws[1] * ws[2] * ws[3] + 1
            rt.close("conv", y, ref, dt, scale=sc, terms=terms)
            # Gradients: the adjoint of the (linear) forward, in float64:
            # dx = J_x^T dy and dw = J_w^T dy computed from conv_ref itself.
            dy = rt.randn(ref.shape, dt)
            dx, dw, db = (rt.empty(xs, dt), rt.empty(ws, dt),
                          rt.empty(ws[:1], dt))
            rt.ok("conv_grad", dy.ref, x.ref, w.ref, dx.ref, dw.ref, db.ref,
                  win)
            g = dy.f64()
            rt.close("conv_grad_db", db, g.sum(axis=(0, 2, 3)), dt,
                     scale=np.abs(g).sum(axis=(0, 2, 3)), terms=g[:, 0].size)
            # dw[m,c,i,j] = sum dy * patch: one basis vector at a time.
            dw_ref = np.zeros(ws)
            dw_sc = np.zeros(ws)
            for idx in np.ndindex(*ws):
                e = np.zeros(ws)
                e[idx] = 1
                r = conv_ref(x.f64(), e, None, st, pd, dl, grp)
                dw_ref[idx] = np.sum(r * g)
                dw_sc[idx] = np.sum(np.abs(r * g))
            rt.close("conv_grad_dw", dw, dw_ref, dt, scale=dw_sc,
                     terms=g[:, 0].size)
            # dx via the adjoint identity on every basis vector is costly;
            # use conv_ref's linearity: dx = sum over (n,m,h,w) of dy * w.
            dx_ref = np.zeros(xs)
            dx_sc = np.zeros(xs)
            for idx in np.ndindex(*xs[1:]):
                e = np.zeros((1,) + xs[1:])
                e[(0,) + idx] = 1
                r = conv_ref(e, w.f64(), None, st, pd, dl, grp)
                dx_ref[(slice(None),) + idx] = np.einsum("nmhw,mhw->n", g,
                                                         r[0])
                dx_sc[(slice(None),) + idx] = np.einsum(
                    "nmhw,mhw->n", np.abs(g), np.abs(r[0]))
            rt.close("conv_grad_dx", dx, dx_ref, dt, scale=dx_sc,
                     terms=ws[0] * ws[2] * ws[3])
    # 1-D convolution (NCW).
    x, w = rt.randn((2, 3, 11), "f32"), rt.randn((4, 3, 3), "f32")
    win = window([3], [2], [1, 0])
    ref = conv_ref(x.f64()[:, :, None, :], w.f64()[:, :, None, :], None,
                   (1, 2), (0, 1, 0, 0), (1, 1), 1)[:, :, 0]
    y = rt.empty(ref.shape, "f32")
    rt.ok("conv", x.ref, w.ref, None, y.ref, win)
    rt.close("conv_1d", y, ref, "f32", scale=np.abs(ref) + 10, terms=9)
    rt.fails("conv", rt.randn((1, 4, 5, 5), "f32").ref,
             rt.randn((2, 3, 3, 3), "f32").ref, None,
             rt.empty((1, 2, 3, 3), "f32").ref, window([3, 3]),
             status=3, match="group")


def pool_windows(x, k, st, pd, fill):
    return windows_nd(x, k, st, pd, (1,) * len(k), fill)


def test_conv_transpose(rt):
    """ConvTranspose is the adjoint of the convolution `win` describes: for
    every basis tensor e of y's shape, y[e] = sum(conv(e, w) * x) + bias,
    in float64."""
    for dt in FLOATS:
        for zs, ws, st, pd, dl, grp in CONVS[:4]:
            conv_out = conv_ref(np.zeros(zs), np.zeros(ws), None, st, pd, dl,
                                grp).shape
            x, w = rt.randn(conv_out, dt), rt.randn(ws, dt)
            b = rt.randn((zs[1],), dt)
            win = window(ws[2:], st, pd, dl, grp)
            ref = np.zeros(zs)
            sc = np.zeros(zs)
            for idx in np.ndindex(*zs):
                e = np.zeros(zs)
                e[idx] = 1
                r = conv_ref(e, w.f64(), None, st, pd, dl, grp)
                ref[idx] = np.sum(r * x.f64())
                sc[idx] = np.sum(np.abs(r * x.f64()))
            ref += b.f64().reshape(1, -1, 1, 1)
            sc += np.abs(b.f64()).reshape(1, -1, 1, 1)
            y = rt.empty(zs, dt)
            rt.ok("conv_transpose", x.ref, w.ref, b.ref, y.ref, win)
            rt.close("conv_transpose", y, ref, dt, scale=sc,
                     terms=ws[0] * ws[2] * ws[3] + 1)
            y2 = rt.empty(zs, dt)
            rt.ok("conv_transpose", x.ref, w.ref, None, y2.ref, win)
            rt.close("conv_transpose_nobias", y2,
                     ref - b.f64().reshape(1, -1, 1, 1), dt, scale=sc,
                     terms=ws[0] * ws[2] * ws[3] + 1)
    # x must have the shape the convolution gives y's shape.
    zs, ws, st, pd, dl, grp = CONVS[0]
    rt.fails("conv_transpose", rt.randn((2, 4, 3, 3), "f32").ref,
             rt.randn(ws, "f32").ref, None, rt.empty(zs, "f32").ref,
             window(ws[2:], st, pd, dl, grp), match="x")


def test_pools(rt):
    for dt in FLOATS:
        for k, st, pd in (((2, 2), (2, 2), (0, 0, 0, 0)),
                          ((3, 3), (2, 1), (1, 1, 1, 0))):
            x = rt.randn((2, 3, 7, 6), dt)
            win = window(k, st, pd)
            wins = pool_windows(x.f64(), k, st, pd, -np.inf)
            ref = wins.max(axis=-1)
            y, ind = rt.empty(ref.shape, dt), rt.empty(ref.shape, "i64")
            rt.ok("max_pool", x.ref, y.ref, ind.ref, win)
            rt.equal("max_pool " + dt, y.f64(), ref)
            rt.equal("max_pool indices " + dt, x.f64().reshape(-1)[ind.arr],
                     ref)
            dy = rt.randn(ref.shape, dt)
            dx = rt.empty(x.shape, dt)
            rt.ok("max_pool_grad", dy.ref, ind.ref, dx.ref)
            dref = np.zeros(x.shape).reshape(-1)
            np.add.at(dref, ind.arr.reshape(-1), dy.f64().reshape(-1))
            rt.close("max_pool_grad", dx, dref.reshape(x.shape), dt,
                     scale=np.abs(dref.reshape(x.shape)) + 1, terms=4)
            for cip in (0, 1):
                win = window(k, st, pd, count_include_pad=cip)
                wins = pool_windows(x.f64(), k, st, pd, 0.0)
                ones = pool_windows(np.ones(x.shape), k, st, pd, 0.0)
                cnt = (k[0] * k[1]) if cip else ones.sum(axis=-1)
                ref = wins.sum(axis=-1) / cnt
                y = rt.empty(ref.shape, dt)
                rt.ok("average_pool", x.ref, y.ref, win)
                rt.close("average_pool", y, ref, dt,
                         scale=np.abs(wins).sum(axis=-1) / cnt, terms=9)
                # Grad: adjoint identity <avgpool(x), dy> = <x, dx>, plus
                # finite differences (the pool is linear, so exact).
                dy = rt.randn(ref.shape, dt)
                dx = rt.empty(x.shape, dt)
                rt.ok("average_pool_grad", dy.ref, dx.ref, win)
                f = lambda v: pool_windows(v, k, st, pd, 0.0).sum(-1) / cnt
                dref = fd_grad(f, np.zeros(x.shape), dy.f64(), h=0.5)
                dsc = fd_grad(f, np.zeros(x.shape), np.abs(dy.f64()), h=0.5)
                rt.close("average_pool_grad", dx, dref, dt, scale=dsc,
                         terms=9)
        # A window larger than the input in ceil mode (PyTorch's
        # AvgPool2d(k, ceil_mode=True) over a smaller map: Hugging Face's
        # EfficientNet pooler): one window, clipped to the padded input,
        # whichever count_include_pad; without ceil mode, no window.
        x = rt.randn((2, 3, 3, 2), dt)
        for cip in (0, 1):
            y = rt.empty((2, 3, 1, 1), dt)
            rt.ok("average_pool", x.ref, y.ref,
                  window((5, 5), (5, 5), ceil_mode=1, count_include_pad=cip))
            rt.close("average_pool ceil large window", y,
                     x.f64().mean(axis=(2, 3), keepdims=True), dt,
                     scale=np.abs(x.f64()).mean(axis=(2, 3), keepdims=True),
                     terms=6)
        rt.fails("average_pool", x.ref, rt.empty((2, 3, 1, 1), dt).ref,
                 window((5, 5), (5, 5)), match="window larger than the "
                 "padded input")
        x = rt.randn((2, 5, 4, 3), dt)
        y = rt.empty((2, 5, 1, 1), dt)
        rt.ok("global_average_pool", x.ref, y.ref)
        rt.close("global_average_pool", y, x.f64().mean(axis=(2, 3),
                                                        keepdims=True), dt,
                 scale=np.abs(x.f64()).mean(axis=(2, 3), keepdims=True),
                 terms=12)
        dy = rt.randn((2, 5, 1, 1), dt)
        dx = rt.empty((2, 5, 4, 3), dt)
        rt.ok("global_average_pool_grad", dy.ref, dx.ref)
        rt.close("global_average_pool_grad", dx,
                 np.broadcast_to(dy.f64() / 12, (2, 5, 4, 3)), dt, terms=2)


def test_windows_3d(rt):
    """3-D windows (Conv3d, MaxPool3d, AvgPool3d and their gradients)
    against float64 references: conv and the pools forward, conv_grad's dx
    and dw and average_pool_grad by the adjoint identity
    <op(u), dy> = <u, grad(dy)> on random u, max_pool_grad by scattering
    through the indices."""
    for dt in FLOATS:
        for xs, ws, st, pd, dl, grp in (
                ((2, 2, 5, 6, 4), (3, 2, 3, 3, 2), (1, 2, 1),
                 (1, 0, 1, 1, 1, 0), (1, 1, 1), 1),
                ((1, 4, 6, 5, 5), (4, 2, 2, 3, 3), (2, 1, 2),
                 (0, 1, 1, 1, 1, 1), (1, 2, 1), 2)):
            x, w, b = rt.randn(xs, dt), rt.randn(ws, dt), rt.randn(ws[:1], dt)
            win = window(ws[2:], st, pd, dl, grp)
            ref = conv_nd_ref(x.f64(), w.f64(), b.f64(), st, pd, dl, grp)
            y = rt.empty(ref.shape, dt)
            rt.ok("conv", x.ref, w.ref, b.ref, y.ref, win)
            sc = conv_nd_ref(np.abs(x.f64()), np.abs(w.f64()),
                             np.abs(b.f64()), st, pd, dl, grp)
            terms = int(np.prod(ws[1:])) + 1
            rt.close("conv 3-D", y, ref, dt, scale=sc, terms=terms)
            dy = rt.randn(ref.shape, dt)
            dx, dw, db = (rt.empty(xs, dt), rt.empty(ws, dt),
                          rt.empty(ws[:1], dt))
            rt.ok("conv_grad", dy.ref, x.ref, w.ref, dx.ref, dw.ref, db.ref,
                  win)
            g = dy.f64()
            rt.close("conv_grad 3-D db", db, g.sum(axis=(0, 2, 3, 4)), dt,
                     scale=np.abs(g).sum(axis=(0, 2, 3, 4)),
                     terms=g[:, 0].size)
            for _ in range(3):
                u = rt.rng.standard_normal(xs)
                v = rt.rng.standard_normal(ws)
                lx = np.sum(conv_nd_ref(u, w.f64(), None, st, pd, dl, grp) * g)
                lw = np.sum(conv_nd_ref(x.f64(), v, None, st, pd, dl, grp) * g)
                mag = np.sum(np.abs(conv_nd_ref(np.abs(u), np.abs(w.f64()),
                                                None, st, pd, dl, grp) *
                                    np.abs(g)))
                tol = mag * 2 * rt_unit(dt) * terms
                assert abs(lx - np.sum(u * dx.f64())) <= tol, (
                    "conv_grad 3-D dx %s: %g vs %g" % (dt, lx,
                                                       np.sum(u * dx.f64())))
                magw = np.sum(np.abs(conv_nd_ref(np.abs(x.f64()), np.abs(v),
                                                 None, st, pd, dl, grp) *
                                     np.abs(g)))
                assert abs(lw - np.sum(v * dw.f64())) <= magw * 2 * \
                    rt_unit(dt) * g[:, 0].size, "conv_grad 3-D dw " + dt
            # conv_transpose of dy (no bias) is conv_grad's dx.
            ct = rt.empty(xs, dt)
            rt.ok("conv_transpose", dy.ref, w.ref, None, ct.ref, win)
            rt.equal("conv_transpose 3-D is conv_grad's dx " + dt, ct.arr,
                     dx.arr)
        x = rt.randn((2, 3, 5, 6, 7), dt)
        for k, st, pd in (((2, 2, 2), (2, 2, 2), (0,) * 6),
                          ((3, 2, 3), (2, 1, 2), (1, 0, 1, 1, 1, 0))):
            wins = windows_nd(x.f64(), k, st, pd, (1, 1, 1), -np.inf)
            ref = wins.max(axis=-1)
            y, ind = rt.empty(ref.shape, dt), rt.empty(ref.shape, "i64")
            rt.ok("max_pool", x.ref, y.ref, ind.ref, window(k, st, pd))
            rt.equal("max_pool 3-D " + dt, y.f64(), ref)
            rt.equal("max_pool 3-D indices " + dt,
                     x.f64().reshape(-1)[ind.arr], ref)
            dy = rt.randn(ref.shape, dt)
            dx = rt.empty(x.shape, dt)
            rt.ok("max_pool_grad", dy.ref, ind.ref, dx.ref)
            dref = np.zeros(x.arr.size)
            np.add.at(dref, ind.arr.reshape(-1), dy.f64().reshape(-1))
            rt.close("max_pool_grad 3-D", dx, dref.reshape(x.shape), dt,
                     scale=np.abs(dref.reshape(x.shape)) + 1, terms=8)
            for cip in (0, 1):
                win = window(k, st, pd, count_include_pad=cip)
                wins = windows_nd(x.f64(), k, st, pd, (1, 1, 1), 0.0)
                ones = windows_nd(np.ones(x.shape), k, st, pd, (1, 1, 1), 0.0)
                cnt = int(np.prod(k)) if cip else ones.sum(axis=-1)
                ref = wins.sum(axis=-1) / cnt
                y = rt.empty(ref.shape, dt)
                rt.ok("average_pool", x.ref, y.ref, win)
                rt.close("average_pool 3-D", y, ref, dt,
                         scale=np.abs(wins).sum(axis=-1) / cnt, terms=18)
                dy = rt.randn(ref.shape, dt)
                dx = rt.empty(x.shape, dt)
                rt.ok("average_pool_grad", dy.ref, dx.ref, win)
                u = rt.rng.standard_normal(x.shape)
                lhs = np.sum(windows_nd(u, k, st, pd, (1, 1, 1), 0.0)
                             .sum(-1) / cnt * dy.f64())
                mag = np.sum(np.abs(windows_nd(np.abs(u), k, st, pd,
                                               (1, 1, 1), 0.0).sum(-1) / cnt *
                                    dy.f64()))
                assert abs(lhs - np.sum(u * dx.f64())) <= \
                    mag * 2 * rt_unit(dt) * 18, "average_pool_grad 3-D " + dt


def rt_unit(dt):
    """Unit roundoff of a dtype (results rounded once into it)."""
    return {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}[dt]


# ---------------------------------------------------------------------------
# Normalization, softmax, losses, reductions
# ---------------------------------------------------------------------------

def to_last(b):
    """A channels-last copy of a channels-first Buf ([N, C, s...] ->
    [N, s..., C]; a convolution weight [M, C/g, k...] -> [M, k..., C/g]),
    the same stored bits."""
    perm = (0,) + tuple(range(2, b.arr.ndim)) + (1,)
    return Buf(np.ascontiguousarray(b.arr.transpose(perm)), b.dt)


def last_bits(b):
    """b's stored values moved channels last, to compare bit for bit."""
    return np.ascontiguousarray(
        b.arr.transpose((0,) + tuple(range(2, b.arr.ndim)) + (1,)))


def test_channels_last(rt):
    """Windows with layout 1 (ABI 10): x, y [N, spatial..., C], weights
    [M, kernel..., C/g], max_pool's indices flat into x as stored. Each
    gives the channels-first call's values bit for bit (the CPU runs them
    through channels-first copies; the lowering's channels-last regions
    count on it), and so do the rewrites amprt-channels-last makes: a global
    average pool as an average pool over the whole image, a batch
    normalization on [N * spatial, C]."""
    def same(what, got, want):
        rt.equal(what, got.arr, last_bits(want))

    cases = [c for c in CONVS] + [
        ((2, 2, 5, 6, 4), (3, 2, 3, 3, 2), (1, 2, 1), (1, 0, 1, 1, 1, 0),
         (1, 1, 1), 1),
        ((2, 3, 11), (4, 3, 3), (2,), (1, 0), (1,), 1)]
    for dt in FLOATS:
        for xs, ws, st, pd, dl, grp in cases:
            x, w, b = rt.randn(xs, dt), rt.randn(ws, dt), rt.randn(ws[:1], dt)
            first = window(ws[2:], st, pd, dl, grp)
            last = window(ws[2:], st, pd, dl, grp, layout=1)
            ys = conv_nd_ref(np.zeros(xs), np.zeros(ws), None, st, pd, dl,
                             grp).shape
            y, yl = rt.empty(ys, dt), rt.empty(to_last(rt.empty(ys, dt)).shape,
                                               dt)
            rt.ok("conv", x.ref, w.ref, b.ref, y.ref, first)
            rt.ok("conv", to_last(x).ref, to_last(w).ref, b.ref, yl.ref, last)
            same("conv channels last %s %s" % (dt, xs), yl, y)
            dy = rt.randn(ys, dt)
            outs = [rt.empty(xs, dt), rt.empty(ws, dt), rt.empty(ws[:1], dt)]
            outl = [to_last(outs[0]), to_last(outs[1]), rt.empty(ws[:1], dt)]
            rt.ok("conv_grad", dy.ref, x.ref, w.ref, *[o.ref for o in outs],
                  first)
            rt.ok("conv_grad", to_last(dy).ref, to_last(x).ref,
                  to_last(w).ref, *[o.ref for o in outl], last)
            same("conv_grad dx channels last " + dt, outl[0], outs[0])
            same("conv_grad dw channels last " + dt, outl[1], outs[1])
            rt.equal("conv_grad db channels last " + dt, outl[2].arr,
                     outs[2].arr)
            ct, ctl = rt.empty(xs, dt), to_last(rt.empty(xs, dt))
            rt.ok("conv_transpose", dy.ref, w.ref, None, ct.ref, first)
            rt.ok("conv_transpose", to_last(dy).ref, to_last(w).ref, None,
                  ctl.ref, last)
            same("conv_transpose channels last " + dt, ctl, ct)
        for k, st, pd, ceil in (((2, 2), (2, 2), (0, 0, 0, 0), 0),
                                ((3, 3), (2, 1), (1, 1, 1, 0), 0),
                                ((3, 2), (2, 2), (0, 0, 0, 0), 1)):
            x = rt.randn((2, 5, 7, 6), dt)
            xl = to_last(x)
            first = window(k, st, pd, ceil_mode=ceil)
            last = window(k, st, pd, ceil_mode=ceil, layout=1)
            wins = pool_windows(x.f64(), k, st, pd, -np.inf)
            ys = wins.shape[:4] if not ceil else None
            if ceil:
                ys = (2, 5) + tuple(-(-(n + pd[i] + pd[i + 2] - k[i]) // st[i])
                                    + 1 for i, n in enumerate((7, 6)))
            y, ind = rt.empty(ys, dt), rt.empty(ys, "i64")
            yl, indl = to_last(y), to_last(ind)
            rt.ok("max_pool", x.ref, y.ref, ind.ref, first)
            rt.ok("max_pool", xl.ref, yl.ref, indl.ref, last)
            same("max_pool channels last " + dt, yl, y)
            # Indices into x as stored: the channels-last x holds at each
            # the value the channels-first x holds at the other's.
            rt.equal("max_pool indices channels last " + dt,
                     xl.arr.reshape(-1)[indl.arr], last_bits(y))
            dy = rt.randn(ys, dt)
            dx, dxl = rt.empty(x.shape, dt), to_last(rt.empty(x.shape, dt))
            rt.ok("max_pool_grad", dy.ref, ind.ref, dx.ref)
            rt.ok("max_pool_grad", to_last(dy).ref, indl.ref, dxl.ref)
            same("max_pool_grad channels last " + dt, dxl, dx)
            for cip in (0, 1):
                first = window(k, st, pd, ceil_mode=ceil,
                               count_include_pad=cip)
                last = window(k, st, pd, ceil_mode=ceil,
                              count_include_pad=cip, layout=1)
                y, yl = rt.empty(ys, dt), to_last(rt.empty(ys, dt))
                rt.ok("average_pool", x.ref, y.ref, first)
                rt.ok("average_pool", xl.ref, yl.ref, last)
                same("average_pool channels last " + dt, yl, y)
                dx, dxl = rt.empty(x.shape, dt), to_last(rt.empty(x.shape, dt))
                rt.ok("average_pool_grad", dy.ref, dx.ref, first)
                rt.ok("average_pool_grad", to_last(dy).ref, dxl.ref, last)
                same("average_pool_grad channels last " + dt, dxl, dx)
        # GlobalAveragePool is an average pool over the whole image.
        x = rt.randn((2, 5, 4, 3), dt)
        y, yl = rt.empty((2, 5, 1, 1), dt), rt.empty((2, 1, 1, 5), dt)
        whole = window((4, 3), layout=1)
        rt.ok("global_average_pool", x.ref, y.ref)
        rt.ok("average_pool", to_last(x).ref, yl.ref, whole)
        same("global_average_pool as average_pool " + dt, yl, y)
        dy = rt.randn((2, 5, 1, 1), dt)
        dx, dxl = rt.empty(x.shape, dt), to_last(rt.empty(x.shape, dt))
        rt.ok("global_average_pool_grad", dy.ref, dx.ref)
        rt.ok("average_pool_grad", to_last(dy).ref, dxl.ref, whole)
        same("global_average_pool_grad as average_pool_grad " + dt, dxl, dx)
        # Batch normalization of [N, H, W, C] as [N * H * W, C].
        x = rt.randn((3, 4, 5, 2), dt)
        s, bb = rt.randn((4,), dt), rt.randn((4,), dt)
        rm, rv = rt.randn((4,), "f32"), rt.uniform((4,), "f32", 0.5, 2)
        dy = rt.randn(x.shape, dt)
        outs = []
        for xx, g in ((x, dy), (Buf(last_bits(x).reshape(-1, 4), dt),
                                Buf(last_bits(dy).reshape(-1, 4), dt))):
            y = rt.empty(xx.shape, dt)
            stats = [rt.empty((4,), "f32") for _ in range(4)]
            rt.ok("batch_norm_training", xx.ref, s.ref, bb.ref, rm.ref,
                  rv.ref, 0.9, 1e-5, y.ref, *[t.ref for t in stats])
            dx, ds, db = rt.empty(xx.shape, dt), rt.empty((4,), dt), \
                rt.empty((4,), dt)
            rt.ok("batch_norm_grad", g.ref, xx.ref, s.ref, stats[2].ref,
                  stats[3].ref, dx.ref, ds.ref, db.ref)
            outs.append((y, stats, g, dx, ds, db))
        (y, st1, _, dx, ds, db), (yl, st2, _, dxl, dsl, dbl) = outs
        rt.equal("batch_norm [N*H*W, C] y " + dt, yl.arr.reshape(3, 5, 2, 4),
                 last_bits(y))
        for a, c in zip(st1, st2):
            rt.equal("batch_norm [N*H*W, C] statistics " + dt, c.arr, a.arr)
        rt.equal("batch_norm_grad [N*H*W, C] dx " + dt,
                 dxl.arr.reshape(3, 5, 2, 4), last_bits(dx))
        rt.equal("batch_norm_grad [N*H*W, C] dscale " + dt, dsl.arr, ds.arr)
        rt.equal("batch_norm_grad [N*H*W, C] dbias " + dt, dbl.arr, db.arr)
    # Bad layouts and shapes are refused with the call's name.
    x, w = rt.randn((1, 5, 5, 3), "f32"), rt.randn((2, 3, 3, 3), "f32")
    rt.fails("conv", x.ref, w.ref, None, rt.empty((1, 3, 3, 2), "f32").ref,
             window((3, 3), layout=2), status=1, match="layout 2")
    rt.fails("conv", x.ref, rt.randn((2, 3, 3, 4), "f32").ref, None,
             rt.empty((1, 3, 3, 2), "f32").ref, window((3, 3), layout=1),
             status=3, match="group")
    rt.fails("max_pool", x.ref, rt.empty((1, 3, 4, 4), "f32").ref, None,
             window((2, 2), layout=1), status=3, match="y")
    # A tensor is checked before its channels-first copy is made.
    bad = Tensor(None, x.t.dtype, x.t.rank, x.t.shape)
    rt.fails("conv", C.byref(bad), w.ref, None,
             rt.empty((1, 3, 3, 2), "f32").ref, window((3, 3), layout=1),
             status=1, match="conv: x has 75 elements but no data")


def bn_fwd(x, s, b, eps):
    ax = (0,) + tuple(range(2, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = x.var(axis=ax, keepdims=True)
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * s.reshape(sh) + b.reshape(sh), m, v


def test_batch_norm(rt):
    eps, mom = 1e-5, 0.9
    for dt in FLOATS:
        x = rt.randn((4, 3, 5, 2), dt, 2.0)
        x = rt.buf(x.f64() + 1.5, dt)
        s, b = rt.randn((3,), dt), rt.randn((3,), dt)
        rm, rv = rt.randn((3,), "f32"), rt.uniform((3,), "f32", 0.5, 2)
        y = rt.empty(x.shape, dt)
        rmo, rvo, sm, si = (rt.empty((3,), "f32") for _ in range(4))
        rt.ok("batch_norm_training", x.ref, s.ref, b.ref, rm.ref, rv.ref, mom,
              eps, y.ref, rmo.ref, rvo.ref, sm.ref, si.ref)
        ref, m, v = bn_fwd(x.f64(), s.f64(), b.f64(), eps)
        inv = 1 / np.sqrt(v + eps)
        sh = (1, -1, 1, 1)
        rt.close("batch_norm_training", y, ref, dt,
                 scale=(np.abs(x.f64()) + np.abs(m)) * inv *
                 np.abs(s.f64()).reshape(sh) + np.abs(b.f64()).reshape(sh),
                 terms=8)
        rt.close("batch_norm_saved_mean", sm, m.reshape(-1), "f32",
                 scale=np.abs(x.f64()).mean(axis=(0, 2, 3)), terms=4)
        rt.close("batch_norm_saved_inv_std", si, inv.reshape(-1), "f32",
                 terms=4)
        rt.close("batch_norm_running_mean", rmo,
                 mom * rm.f64() + (1 - mom) * m.reshape(-1), "f32",
                 scale=np.abs(rm.f64()) + np.abs(m.reshape(-1)), terms=4)
        rt.close("batch_norm_running_var", rvo,
                 mom * rv.f64() + (1 - mom) * v.reshape(-1), "f32", terms=4)
        # Inference with the running statistics.
        y2 = rt.empty(x.shape, dt)
        rt.ok("batch_norm_inference", x.ref, s.ref, b.ref, rm.ref, rv.ref, eps,
              y2.ref)
        r2 = (x.f64() - rm.f64().reshape(sh)) / np.sqrt(
            rv.f64().reshape(sh) + eps) * s.f64().reshape(sh) + \
            b.f64().reshape(sh)
        rt.close("batch_norm_inference", y2, r2, dt,
                 scale=np.abs(r2) + np.abs(b.f64()).reshape(sh) +
                 (np.abs(x.f64()) + np.abs(rm.f64()).reshape(sh)) *
                 np.abs(s.f64()).reshape(sh) / np.sqrt(
                     rv.f64().reshape(sh) + eps), terms=8)
        # Grad, analytic in float64.
        dy = rt.randn(x.shape, dt)
        dx, ds, db = rt.empty(x.shape, dt), rt.empty((3,), dt), \
            rt.empty((3,), dt)
        rt.ok("batch_norm_grad", dy.ref, x.ref, s.ref, sm.ref, si.ref, dx.ref,
              ds.ref, db.ref)
        g, xh = dy.f64(), (x.f64() - m) * inv
        ax = (0, 2, 3)
        rdb, rds = g.sum(axis=ax), (g * xh).sum(axis=ax)
        rdx = s.f64().reshape(sh) * inv * (g - g.mean(axis=ax, keepdims=True)
                                           - xh * (g * xh).mean(axis=ax,
                                                                keepdims=True))
        rt.close("batch_norm_grad_dbias", db, rdb, dt,
                 scale=np.abs(g).sum(axis=ax), terms=40)
        rt.close("batch_norm_grad_dscale", ds, rds, dt,
                 scale=np.abs(g * xh).sum(axis=ax), terms=40)
        rt.close("batch_norm_grad_dx", dx, rdx, dt,
                 scale=np.abs(s.f64()).reshape(sh) * inv *
                 (np.abs(g) + np.abs(g).mean(axis=ax, keepdims=True) +
                  np.abs(xh) * np.abs(g * xh).mean(axis=ax, keepdims=True)),
                 terms=64)
    # Finite differences of the float64 forward (f32 kernel, small shape).
    x, s, b = rt.randn((3, 2, 2, 2), "f32"), rt.randn((2,), "f32"), \
        rt.randn((2,), "f32")
    sm, si = rt.empty((2,), "f32"), rt.empty((2,), "f32")
    rt.ok("batch_norm_training", x.ref, s.ref, b.ref, None, None, mom, eps,
          rt.empty(x.shape, "f32").ref, None, None, sm.ref, si.ref)
    dy = rt.randn(x.shape, "f32")
    dx, ds, db = rt.empty(x.shape, "f32"), rt.empty((2,), "f32"), \
        rt.empty((2,), "f32")
    rt.ok("batch_norm_grad", dy.ref, x.ref, s.ref, sm.ref, si.ref, dx.ref,
          ds.ref, db.ref)
    fd_close("batch_norm_grad dx", dx.f64(), fd_grad(
        lambda v: bn_fwd(v, s.f64(), b.f64(), eps)[0], x.f64().copy(),
        dy.f64()))
    fd_close("batch_norm_grad dscale", ds.f64(), fd_grad(
        lambda v: bn_fwd(x.f64(), v, b.f64(), eps)[0], s.f64().copy(),
        dy.f64()))


def ln_fwd(x, s, b, axis, eps):
    ax = tuple(range(axis, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = x.var(axis=ax, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * s + (0 if b is None else b), m, v


def test_layer_norm(rt):
    eps = 1e-5
    for dt in FLOATS:
        for shape, axis in (((4, 6, 16), -1), ((3, 4, 5), 1)):
            a = axis % len(shape)
            x = rt.randn(shape, dt, 3.0)
            s, b = rt.randn(shape[a:], dt), rt.randn(shape[a:], dt)
            y = rt.empty(shape, dt)
            outer = int(np.prod(shape[:a]))
            mo, io = rt.empty((outer,), "f32"), rt.empty((outer,), "f32")
            rt.ok("layer_norm", x.ref, s.ref, b.ref, axis, eps, y.ref, mo.ref,
                  io.ref)
            ref, m, v = ln_fwd(x.f64(), s.f64(), b.f64(), a, eps)
            inv = 1 / np.sqrt(v + eps)
            rt.close("layer_norm", y, ref, dt,
                     scale=(np.abs(x.f64()) + np.abs(m)) * inv *
                     np.abs(s.f64()) + np.abs(b.f64()), terms=8)
            rt.close("layer_norm_mean", mo, m.reshape(-1), "f32",
                     scale=np.abs(x.f64()).reshape(outer, -1).mean(1),
                     terms=4)
            rt.close("layer_norm_inv_std", io, inv.reshape(-1), "f32",
                     terms=4)
            dy = rt.randn(shape, dt)
            dx, ds, db = rt.empty(shape, dt), rt.empty(shape[a:], dt), \
                rt.empty(shape[a:], dt)
            rt.ok("layer_norm_grad", dy.ref, x.ref, s.ref, mo.ref, io.ref,
                  axis, dx.ref, ds.ref, db.ref)
            g, xh = dy.f64(), (x.f64() - m) * inv
            red = tuple(range(a)), tuple(range(a, len(shape)))
            gs = g * s.f64()
            rdx = inv * (gs - gs.mean(axis=red[1], keepdims=True) -
                         xh * (gs * xh).mean(axis=red[1], keepdims=True))
            rt.close("layer_norm_grad_dx", dx, rdx, dt,
                     scale=inv * (np.abs(gs) + np.abs(gs).mean(
                         axis=red[1], keepdims=True) + np.abs(xh) * np.abs(
                         gs * xh).mean(axis=red[1], keepdims=True)),
                     terms=64)
            rt.close("layer_norm_grad_dscale", ds, (g * xh).sum(axis=red[0]),
                     dt, scale=np.abs(g * xh).sum(axis=red[0]), terms=outer)
            rt.close("layer_norm_grad_dbias", db, g.sum(axis=red[0]), dt,
                     scale=np.abs(g).sum(axis=red[0]), terms=outer)
    x, s, b = rt.randn((3, 5), "f32"), rt.randn((5,), "f32"), \
        rt.randn((5,), "f32")
    mo, io = rt.empty((3,), "f32"), rt.empty((3,), "f32")
    rt.ok("layer_norm", x.ref, s.ref, None, -1, eps,
          rt.empty((3, 5), "f32").ref, mo.ref, io.ref)
    dy = rt.randn((3, 5), "f32")
    dx = rt.empty((3, 5), "f32")
    rt.ok("layer_norm_grad", dy.ref, x.ref, s.ref, mo.ref, io.ref, -1, dx.ref,
          None, None)
    fd_close("layer_norm_grad dx", dx.f64(), fd_grad(
        lambda v: ln_fwd(v, s.f64(), None, 1, eps)[0], x.f64().copy(),
        dy.f64()))


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax(rt):
    for dt in FLOATS:
        for shape, axis in (((4, 10), -1), ((2, 5, 3), 1), ((3, 4), 0)):
            x = rt.randn(shape, dt, 3.0)
            y, ly = rt.empty(shape, dt), rt.empty(shape, dt)
            rt.ok("softmax", x.ref, axis, y.ref)
            rt.ok("log_softmax", x.ref, axis, ly.ref)
            ref = softmax_ref(x.f64(), axis)
            rt.close("softmax", y, ref, dt, terms=shape[axis] + 8)
            lref = np.log(ref)
            rt.close("log_softmax", ly, lref, dt,
                     scale=np.abs(x.f64()) + np.abs(lref) + 1,
                     terms=shape[axis] + 8)
            dy = rt.randn(shape, dt)
            dx = rt.empty(shape, dt)
            rt.ok("softmax_grad", dy.ref, y.ref, axis, dx.ref)
            yv, g = y.f64(), dy.f64()
            ref = yv * (g - (g * yv).sum(axis=axis, keepdims=True))
            rt.close("softmax_grad", dx, ref, dt,
                     scale=yv * (np.abs(g) + (np.abs(g) * yv).sum(
                         axis=axis, keepdims=True)), terms=shape[axis] + 4)
    x, dy = rt.randn((3, 6), "f32"), rt.randn((3, 6), "f32")
    y, dx = rt.empty((3, 6), "f32"), rt.empty((3, 6), "f32")
    rt.ok("softmax", x.ref, -1, y.ref)
    rt.ok("softmax_grad", dy.ref, y.ref, -1, dx.ref)
    fd_close("softmax_grad", dx.f64(), fd_grad(
        lambda v: softmax_ref(v, -1), x.f64().copy(), dy.f64()))


def sce_ref(x, lab, w, red, ign):
    lp = x - x.max(axis=1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=1, keepdims=True))
    return nll_ref(lp, lab, w, red, ign), lp


def nll_ref(lp, lab, w, red, ign):
    """NegativeLogLikelihoodLoss of log-probabilities lp ([N, C, ...])."""
    labc = np.where(lab == ign, 0, lab) if ign is not None else lab
    picked = np.take_along_axis(lp, labc[:, None], axis=1)[:, 0]
    wv = w[labc] if w is not None else np.ones(lab.shape)
    if ign is not None:
        wv = np.where(lab == ign, 0.0, wv)
    l = -wv * picked
    if red == 0:
        return l
    if red == 1:
        return l.sum()
    return l.sum() / wv.sum()


def test_softmax_cross_entropy(rt):
    for dt in FLOATS:
        for shape in ((8, 5), (3, 4, 2, 3)):
            for red in (0, 1, 2):
                for use_w, ign in ((False, None), (True, 2)):
                    x = rt.randn(shape, dt, 2.0)
                    lshape = (shape[0],) + shape[2:]
                    lab = rt.rng.integers(0, shape[1], lshape)
                    ldt = "i32" if red == 1 else "i64"
                    labels = Buf(lab, ldt)
                    w = rt.uniform((shape[1],), dt, 0.5, 2) if use_w else None
                    loss = rt.empty(lshape if red == 0 else (), dt)
                    lp = rt.empty(shape, dt)
                    rt.ok("softmax_cross_entropy_loss", x.ref, labels.ref,
                          w.ref if w else None, red, ign is not None,
                          ign or 0, loss.ref, lp.ref)
                    ref, lpref = sce_ref(x.f64(), lab,
                                         w.f64() if w else None, red, ign)
                    rt.close("softmax_cross_entropy_loss", loss, ref, dt,
                             terms=16)
                    rt.close("softmax_cross_entropy_log_prob", lp, lpref, dt,
                             scale=np.abs(x.f64()) + np.abs(lpref) + 1,
                             terms=16)
                    dl = rt.randn(lshape if red == 0 else (), dt)
                    dx = rt.empty(shape, dt)
                    rt.ok("softmax_cross_entropy_loss_grad", dl.ref, lp.ref,
                          labels.ref, w.ref if w else None, red,
                          ign is not None, ign or 0, dx.ref)
                    # Reference: derivative of the float64 loss.
                    p = np.exp(lp.f64())
                    oh = np.zeros(shape)
                    np.put_along_axis(oh, np.where(
                        lab == ign, 0, lab)[:, None] if ign is not None
                        else lab[:, None], 1.0, axis=1)
                    wv = (w.f64()[np.where(lab == ign, 0, lab) if ign
                                  is not None else lab]
                          if w else np.ones(lshape))
                    if ign is not None:
                        wv = np.where(lab == ign, 0.0, wv)
                    gd = dl.f64() * wv
                    if red == 2:
                        gd = gd / wv.sum()
                    gref = (p - oh) * np.expand_dims(gd, 1)
                    rt.close("softmax_cross_entropy_loss_grad", dx, gref, dt,
                             scale=np.abs(np.expand_dims(gd, 1)) * (p + oh),
                             terms=16)
    # Finite differences of the loss (mean, weights, ignore_index).
    x = rt.randn((4, 3), "f32")
    lab = np.array([0, 2, 1, 2])
    w = rt.uniform((3,), "f32", 0.5, 2)
    lp = rt.empty((4, 3), "f32")
    rt.ok("softmax_cross_entropy_loss", x.ref, Buf(lab, "i64").ref, w.ref, 2,
          1, 1, rt.empty((), "f32").ref, lp.ref)
    dx = rt.empty((4, 3), "f32")
    rt.ok("softmax_cross_entropy_loss_grad", rt.buf(np.array(1.0), "f32").ref,
          lp.ref, Buf(lab, "i64").ref, w.ref, 2, 1, 1, dx.ref)
    fd_close("softmax_cross_entropy_loss_grad", dx.f64(), fd_grad(
        lambda v: sce_ref(v, lab, w.f64(), 2, 1)[0], x.f64().copy(), 1.0))
    rt.fails("softmax_cross_entropy_loss", x.ref,
             Buf(np.array([0, 3, 1, 2]), "i64").ref, None, 2, 0, 0,
             rt.empty((), "f32").ref, None, match="label 3")


def test_nll_loss(rt):
    """nll_loss (ONNX NegativeLogLikelihoodLoss) on arbitrary inputs (they
    need not be normalized log-probabilities), against float64."""
    for dt in FLOATS:
        for shape in ((8, 5), (3, 4, 2, 3)):
            for red in (0, 1, 2):
                for use_w, ign in ((False, None), (True, 2), (False, -1)):
                    x = rt.randn(shape, dt, 2.0)
                    lshape = (shape[0],) + shape[2:]
                    lab = rt.rng.integers(0, shape[1], lshape)
                    if ign == -1:
                        lab.flat[0] = -1  # an ignored label outside [0, C)
                    labels = Buf(lab, "i32" if red == 1 else "i64")
                    w = rt.uniform((shape[1],), dt, 0.5, 2) if use_w else None
                    loss = rt.empty(lshape if red == 0 else (), dt)
                    rt.ok("nll_loss", x.ref, labels.ref, w.ref if w else None,
                          red, ign is not None, ign or 0, loss.ref)
                    ref = nll_ref(x.f64(), lab, w.f64() if w else None, red,
                                  ign)
                    # The summed terms' magnitude: the loss of -|x|.
                    mag = nll_ref(-np.abs(x.f64()), lab,
                                  w.f64() if w else None, red, ign)
                    rt.close("nll_loss", loss, ref, dt, terms=16, scale=mag)
    x = rt.randn((4, 3), "f32")
    rt.fails("nll_loss", x.ref, Buf(np.array([0, 3, 1, 2]), "i64").ref, None,
             2, 0, 0, rt.empty((), "f32").ref, match="label 3")
    rt.fails("nll_loss", x.ref, Buf(np.array([0, 1, 2]), "i64").ref, None,
             2, 0, 0, rt.empty((), "f32").ref, match="labels")


def test_mse(rt):
    for dt in FLOATS:
        x, t = rt.randn((4, 16), dt), rt.randn((4, 16), dt)
        loss = rt.empty((), dt)
        rt.ok("mse_loss", x.ref, t.ref, loss.ref)
        d = x.f64() - t.f64()
        rt.close("mse_loss", loss, np.mean(d * d), dt, terms=64)
        dx = rt.empty((4, 16), dt)
        dl = rt.buf(np.array(0.5), "f32")
        rt.ok("mse_loss_grad", dl.ref, x.ref, t.ref, dx.ref)
        rt.close("mse_loss_grad", dx, 0.5 * 2 * d / 64, dt,
                 scale=(np.abs(x.f64()) + np.abs(t.f64())) / 64, terms=4)
    x, t = rt.randn((6,), "f32"), rt.randn((6,), "f32")
    dx = rt.empty((6,), "f32")
    rt.ok("mse_loss_grad", None, x.ref, t.ref, dx.ref)
    fd_close("mse_loss_grad", dx.f64(), fd_grad(
        lambda v: np.mean((v - t.f64()) ** 2), x.f64().copy(), 1.0))


def test_reduce(rt):
    for dt in FLOATS:
        x = rt.randn((3, 4, 5), dt)
        for axes, keep in (([1], 0), ([0, 2], 1), ([-1], 0), ([], 0),
                           ([], 1)):
            for name, f in (("reduce_sum", np.sum), ("reduce_mean", np.mean)):
                ref = f(x.f64(), axis=tuple(axes) if axes else None,
                        keepdims=bool(keep))
                sc = f(np.abs(x.f64()), axis=tuple(axes) if axes else None,
                       keepdims=bool(keep))
                y = rt.empty(np.shape(ref), dt)
                rt.ok(name, x.ref, i64s(axes), len(axes), keep, 0, y.ref)
                rt.close(name, y, ref, dt, scale=sc, terms=4)
        y = rt.empty((3, 4, 5), dt)
        rt.ok("reduce_sum", x.ref, None, 0, 1, 1, y.ref)  # noop_with_empty
        rt.equal("reduce_sum noop", y.arr, x.arr)
    rt.fails("reduce_sum", rt.randn((3, 4), "f32").ref, i64s([2]), 1, 0, 0,
             rt.empty((3,), "f32").ref, match="axis 2 out of range")
    # Integers: exact sums (wrapping in 64 bits, stored in the type: numpy's
    # own integer arithmetic), max and min; no mean.
    for dt, big in (("i64", 2 ** 62), ("i32", 2 ** 30)):
        v = rt.rng.integers(-big, big, (3, 4, 5))
        x = Buf(v, dt)
        for axes, keep in (([1], 0), ([0, 2], 1), ([], 0)):
            ax = tuple(axes) if axes else None
            for name, f in (("reduce_sum", np.sum), ("reduce_max", np.max),
                            ("reduce_min", np.min)):
                want = f(v, axis=ax, keepdims=bool(keep)).astype(
                    NP_STORAGE[dt])  # int64 sums, wrapped into the type
                y = rt.empty(np.shape(want), dt)
                rt.ok(name, x.ref, i64s(axes), len(axes), keep, 0, y.ref)
                rt.equal("%s %s axes %s" % (name, dt, axes), y.arr, want)
    rt.fails("reduce_mean", Buf(np.ones((2, 3), np.int64), "i64").ref,
             i64s([1]), 1, 0, 0, rt.empty((2,), "i64").ref,
             match="x is i64; the mean takes f32, f16 or bf16")
    rt.fails("reduce_sum", Buf(np.ones((2, 3), np.int64), "i64").ref,
             i64s([1]), 1, 0, 0, rt.empty((2,), "i32").ref,
             match="y is i32, expected i64|y .*i64")


def compare_stats_ref(x, r, scale):
    """compare_stats in numpy (Math/Compare.h): each element's arithmetic
    in float32 as the kernel's (x * inv - r and |d| / |r| rounded once,
    the floor rounded up to a float), the sums in float64."""
    x, r = x.reshape(-1), r.reshape(-1)
    n = r.size
    # The sample (Math/Compare.h): runs of 64, every (n // 1024)-th run;
    # every (n // 1024)-th element where the runs hold fewer than 256
    # finite nonzero pairs.
    stride = max(1, n // 1024)
    for sample in ((np.arange(n) // 64) % stride == 0, slice(None, None,
                                                            stride)):
        xs, rs = x[sample], r[sample]
        ok = np.isfinite(xs) & np.isfinite(rs) & (xs != 0) & (rs != 0)
        if ok.sum() >= 256:
            break
    log_sum = np.sum(np.log(np.abs(xs[ok] / rs[ok])))
    log_count = ok.sum()
    carries = bool(scale != 1 and log_count and
                   abs(log_sum / log_count - np.log(scale)) <
                   abs(log_sum / log_count))
    fr = np.isfinite(r)
    fx = np.isfinite(x)
    over = int((fr & ~fx).sum())
    m = fr & fx
    rm, xm = r[m], x[m]
    largest = np.max(np.abs(r[fr]), initial=0.0)
    bound = 1e-3 * np.float64(np.float32(largest))
    floor = np.float32(bound)
    if np.float64(floor) < bound:
        floor = np.nextafter(floor, np.float32(np.inf))
    r32, x32 = rm.astype(np.float32), xm.astype(np.float32)
    nz = r32 != 0
    counted = nz & (np.abs(r32) >= floor)
    inv = np.float32(1.0 / scale) if carries else np.float32(1.0)
    d = x32 * inv - r32
    rel = (np.abs(d[counted]) / np.abs(r32[counted])).astype(np.float64)
    d = d.astype(np.float64)
    out = [np.sum(rm * rm), counted.sum(), nz.sum(), (nz & (xm == 0)).sum(),
           over, log_sum, log_count, float(carries), np.sum(d * d),
           np.sum(rel), np.max(rel, initial=0.0)]
    return np.array(out, np.float64), largest


def test_compare_stats(rt):
    """abs_max_finite and compare_stats (amp-run --compare-precision's
    per-value statistics) against numpy (the element's arithmetic in
    float32, the sums in float64): counts exact, the largest error exact,
    the sample's log sum to 1e-13 a term, sums to 1e-6 relative (the CPU
    kernel sums 8 elements per lane in float32 before float64: at most 8
    ulps of float32 for these sums of nonnegative terms). Magnitudes 1e-30
    and 1e30 are where float32's sums would underflow or overflow: the
    kernel sums those chunks in float64, and they match to 1e-12."""
    for dt in FLOATS:
        for n, scale, mag in ((1, 1.0, 3), (5000, 1.0, 3),
                              (70001, 65536.0, 3), (9000, 0.5, 3),
                              (3000, 1.0, 1e-30), (3000, 1.0, 1e30)):
            if dt != "f32" and mag != 3:
                continue  # out of a 16-bit type's range
            r = rt.rng.standard_normal(n) * mag
            x = r * (1 + 1e-3 * rt.rng.standard_normal(n))
            x *= scale
            if n > 10:
                r[:4] = [np.inf, np.nan, 0.0, 1e-9]
                x[4:9] = [np.nan, np.inf, 0.0, 0.0, -np.inf]
                r[9] = 0.0
            xb = rt.buf(x, dt)
            rb = rt.buf(r, "f32")
            mx = rt.empty((1,), "f32")
            rt.ok("abs_max_finite", rb.ref, mx.ref)
            want, largest = compare_stats_ref(xb.f64(), rb.f64(), scale)
            rt.equal("abs_max_finite n %d" % n, mx.arr,
                     np.array([largest], np.float32))
            st = rt.empty((11,), "f64")
            fac = rt.empty((1,), "f32")
            rt.ok("compare_stats", xb.ref, rb.ref, mx.ref, C.c_float(scale),
                  st.ref, fac.ref)
            assert fac.arr[0] == (scale if scale != 1.0 else 1.0), \
                "compare_stats %s n %d: factor %r" % (dt, n, fac.arr[0])
            got = st.arr
            exact = [1, 2, 3, 4, 6, 7, 10]
            assert np.array_equal(got[exact], want[exact]), \
                "compare_stats %s n %d: %s vs %s" % (dt, n, got, want)
            assert got[7] == (scale != 1.0), \
                "compare_stats %s n %d: the scale not detected" % (dt, n)
            # The sample's log sum (index 5), a sum of terms of both signs
            # near 0, to 1e-13 per term: the CPU takes it as the log of a
            # product rounded at each factor (Math/Compare.h).
            assert abs(got[5] - want[5]) <= 1e-13 * max(1.0, want[6]), \
                "compare_stats %s n %d: log sum %r vs %r" % (
                    dt, n, got[5], want[5])
            rest = [k for k in range(11) if k != 5]
            assert np.allclose(got[rest], want[rest],
                               rtol=1e-6 if mag == 3 else 1e-12,
                               atol=1e-300), \
                "compare_stats %s n %d: %s vs %s" % (dt, n, got, want)
    # A sparse gradient under the loss scale (rows of 64, 1% of them set):
    # the runs of the sample find too few nonzeros, the spread sample finds
    # the scale.
    rows = rt.rng.random(1600) < 0.01
    rows[7] = True
    r = np.repeat(rows, 64) * rt.rng.standard_normal(1600 * 64)
    x = r * 65536.0 * (1 + 1e-3 * rt.rng.standard_normal(r.size))
    xb, rb = rt.buf(x, "f32"), rt.buf(r, "f32")
    mx, st = rt.empty((1,), "f32"), rt.empty((11,), "f64")
    rt.ok("abs_max_finite", rb.ref, mx.ref)
    rt.ok("compare_stats", xb.ref, rb.ref, mx.ref, C.c_float(65536.0),
          st.ref, None)
    want, _ = compare_stats_ref(xb.f64(), rb.f64(), 65536.0)
    assert st.arr[7] == 1 and st.arr[6] == want[6] and \
        np.allclose(st.arr[8:10], want[8:10], rtol=1e-6), \
        "compare_stats, sparse: %s vs %s" % (st.arr, want)
    # A zero reference against tiny values: the squares of the differences
    # underflow in f32, so the kernel sums them in f64 (an error of 1, not
    # 0, for the value).
    r = np.zeros(3000)
    x = rt.rng.standard_normal(3000) * 1e-30
    xb, rb = rt.buf(x, "f32"), rt.buf(r, "f32")
    mx, st = rt.empty((1,), "f32"), rt.empty((11,), "f64")
    rt.ok("abs_max_finite", rb.ref, mx.ref)
    rt.ok("compare_stats", xb.ref, rb.ref, mx.ref, C.c_float(1.0), st.ref,
          None)
    want, _ = compare_stats_ref(xb.f64(), rb.f64(), 1.0)
    assert want[8] > 0 and np.allclose(st.arr, want, rtol=1e-12,
                                       atol=1e-300), \
        "compare_stats, zero reference: %s vs %s" % (st.arr, want)
    rt.fails("compare_stats", rt.randn((4,), "f32").ref,
             rt.randn((5,), "f32").ref, rt.empty((1,), "f32").ref,
             C.c_float(1), rt.empty((11,), "f64").ref, None,
             match="ref has 5 elements|ref .*4")
    rt.fails("compare_stats", rt.randn((4,), "f32").ref,
             rt.randn((4,), "f32").ref, rt.empty((1,), "f32").ref,
             C.c_float(0), rt.empty((11,), "f64").ref, None,
             match="scale 0 is not a finite nonzero number")


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------

def test_shape_kernels(rt):
    for dt in ("f32", "f16", "bf16", "i64", "bool", "f64"):
        raw = rt.rng.integers(0, 2, (2, 3, 4)) if dt == "bool" else \
            rt.rng.standard_normal((2, 3, 4)) * 5
        x = Buf(raw, dt) if dt != "bf16" else rt.buf(raw, dt)
        a = x.arr
        y = rt.empty((4, 6), dt)
        rt.ok("reshape", x.ref, y.ref)
        rt.equal("reshape " + dt, y.arr, a.reshape(4, 6))
        for perm in ((2, 0, 1), (1, 0, 2), (0, 2, 1)):
            y = rt.empty(np.transpose(a, perm).shape, dt)
            rt.ok("transpose", x.ref, i64s(perm), 3, y.ref)
            rt.equal("transpose " + dt, y.arr, np.transpose(a, perm))
        y = rt.empty((4, 3, 2), dt)
        rt.ok("transpose", x.ref, None, 0, y.ref)
        rt.equal("transpose default " + dt, y.arr, np.transpose(a))
        parts = [Buf(rt.rng.integers(0, 2, (2, k, 4)), dt) for k in (1, 3, 2)]
        y = rt.empty((2, 6, 4), dt)
        rt.ok("concat", tensor_array(parts), 3, 1, y.ref)
        rt.equal("concat " + dt, y.arr, np.concatenate([p.arr for p in parts],
                                                       axis=1))
        idx = rt.rng.integers(-3, 3, (2, 5))
        for axis in (1, -2):
            y = rt.empty((2, 2, 5, 4), dt)
            rt.ok("gather", x.ref, Buf(idx, "i64").ref, axis, y.ref)
            rt.equal("gather " + dt, y.arr, np.take(a, idx % 3, axis=1))
        for st, en, ax, sp in (([0, 1], [2, 3], [0, 2], [1, 1]),
                               ([-1], [-100], [2], [-2]),
                               ([1, 0], [100, 3], [1, 2], [1, 2]),
                               ([2], [1], [1], [1])):
            sl = [slice(None)] * 3
            for s_, e_, a_, p_ in zip(st, en, ax, sp):
                sl[a_] = slice(s_, None if e_ == -100 else e_, p_)
            want = a[tuple(sl)]
            y = rt.empty(want.shape, dt)
            rt.ok("slice", x.ref, i64s(st), i64s(en), i64s(ax), i64s(sp),
                  len(st), y.ref)
            rt.equal("slice %s %s" % (dt, st), y.arr, want)
        e = Buf(a[:, :1, :], dt)
        y = rt.empty((3, 2, 3, 4), dt)
        rt.ok("expand", e.ref, y.ref)
        rt.equal("expand " + dt, y.arr, np.broadcast_to(a[:, :1, :],
                                                        (3, 2, 3, 4)))
    x = rt.randn((2, 3, 4, 5), "f32")
    for s, e, want in ((0, 4, [2, 3, 4, 5]), (1, -1, [3, 4]),
                       (-2, 100, [4, 5])):
        y = rt.empty((len(want),), "i64")
        rt.ok("shape", x.ref, s, e, y.ref)
        rt.equal("shape", y.arr, want)
    y = rt.empty((), "i64")
    rt.ok("size", x.ref, y.ref)
    rt.equal("size", y.arr, 120)
    for dt in FLOATS:
        dy = rt.randn((2, 5, 4), dt)
        idx = rt.rng.integers(0, 3, (2, 5))
        dx = rt.empty((3, 4), dt)
        rt.ok("gather_grad", dy.ref, Buf(idx, "i64").ref, 0, dx.ref)
        ref = np.zeros((3, 4))
        np.add.at(ref, idx.reshape(-1), dy.f64().reshape(-1, 4))
        rt.close("gather_grad", dx, ref, dt, scale=np.abs(ref) + 1, terms=10)
    rt.fails("gather", x.ref, Buf(np.array([5]), "i64").ref, 0,
             rt.empty((1, 3, 4, 5), "f32").ref, match="index 5")
    rt.fails("concat", tensor_array([x, rt.randn((2, 3, 4, 6), "f32")]), 2,
             1, rt.empty((2, 6, 4, 5), "f32").ref, status=3)


def test_dropout_and_accumulator(rt):
    for dt in FLOATS:
        x = rt.randn((64, 64), dt)
        ratio = rt.buf(np.array(0.25), "f32")
        train = Buf(np.array(1), "bool")
        y, mask = rt.empty(x.shape, dt), rt.empty(x.shape, "bool")
        rt.ok("dropout", x.ref, ratio.ref, train.ref, 1234, y.ref, mask.ref)
        m = mask.arr.astype(bool)
        keep = m.mean()
        assert abs(keep - 0.75) < 0.03, "dropout kept %.3f" % keep
        rt.close("dropout", y, np.where(m, x.f64() / 0.75, 0), dt, terms=2)
        y2, mask2 = rt.empty(x.shape, dt), rt.empty(x.shape, "bool")
        rt.ok("dropout", x.ref, ratio.ref, train.ref, 1234, y2.ref, mask2.ref)
        rt.equal("dropout is a function of the seed", mask2.arr, mask.arr)
        rt.ok("dropout", x.ref, ratio.ref, train.ref, 99, y2.ref, mask2.ref)
        assert not np.array_equal(mask2.arr, mask.arr)
        dy, dx = rt.randn(x.shape, dt), rt.empty(x.shape, dt)
        rt.ok("dropout_grad", dy.ref, mask.ref, ratio.ref, train.ref, dx.ref)
        rt.close("dropout_grad", dx, np.where(m, dy.f64() / 0.75, 0), dt,
                 terms=2)
        rt.ok("dropout", x.ref, ratio.ref, None, 1, y.ref, mask.ref)  # eval
        rt.equal("dropout eval", y.arr, x.arr)
        assert mask.arr.all()
        buf = rt.randn((5, 6), dt)
        before = buf.f64()
        v = rt.randn((5, 6), dt)
        upd = rt.empty((), "bool")
        rt.ok("inplace_accumulate", buf.ref, v.ref,
              Buf(np.array(0), "bool").ref, upd.ref)
        rt.close("inplace_accumulate", buf, before + v.f64(), dt,
                 scale=np.abs(before) + np.abs(v.f64()), terms=2)
        assert upd.arr == 1
        rt.ok("inplace_accumulate", buf.ref, v.ref,
              Buf(np.array(1), "bool").ref, None)
        rt.equal("inplace_accumulate overwrite", buf.arr, v.arr)


def quick_gelu(x, alpha):
    return x / (1 + np.exp(-alpha * x))


def test_more_activations(rt):
    """Sign, LeakyRelu and QuickGelu with their gradients."""
    for dt in FLOATS:
        shape = (5, 13)
        x = rt.randn(shape, dt, 2.0)
        xv = x.f64()
        y = rt.empty(shape, dt)
        rt.ok("sign", x.ref, y.ref)
        rt.equal("sign " + dt, y.f64(), np.sign(xv))
        for alpha in (0.01, 0.2):
            rt.ok("leaky_relu", x.ref, C.c_float(alpha), y.ref)
            rt.close("leaky_relu", y, np.where(xv >= 0, xv, alpha * xv), dt)
            dy = rt.randn(shape, dt)
            dx = rt.empty(shape, dt)
            rt.ok("leaky_relu_grad", dy.ref, x.ref, C.c_float(alpha), dx.ref)
            rt.close("leaky_relu_grad", dx,
                     np.where(xv > 0, 1.0, alpha) * dy.f64(), dt)
        for alpha in (1.0, 1.702):
            rt.ok("quick_gelu", x.ref, C.c_float(alpha), y.ref)
            rt.close("quick_gelu", y, quick_gelu(xv, alpha), dt,
                     scale=np.abs(xv), terms=8)
            dy = rt.randn(shape, dt)
            dx = rt.empty(shape, dt)
            rt.ok("quick_gelu_grad", dy.ref, x.ref, C.c_float(alpha), dx.ref)
            sg = 1 / (1 + np.exp(-alpha * xv))
            ref = dy.f64() * (sg + alpha * xv * sg * (1 - sg))
            rt.close("quick_gelu_grad", dx, ref, dt,
                     scale=np.abs(dy.f64()) * (1 + alpha * np.abs(xv)),
                     terms=16)
    # The gradients against finite differences of the forward (f32).
    x, dy = rt.randn((30,), "f32"), rt.randn((30,), "f32")
    dx = rt.empty((30,), "f32")
    rt.ok("quick_gelu_grad", dy.ref, x.ref, C.c_float(1.702), dx.ref)
    fd_close("quick_gelu_grad", dx.f64(),
             fd_grad(lambda v: quick_gelu(v, 1.702), x.f64().copy(),
                     dy.f64()))
    # Sign keeps zeros and NaN.
    z = Buf(np.array([0.0, -0.0, np.nan, 3.0, -2.0], np.float32), "f32")
    y = rt.empty((5,), "f32")
    rt.ok("sign", z.ref, y.ref)
    assert np.array_equal(y.arr.view(np.uint32)[:2],
                          z.arr.view(np.uint32)[:2]) and np.isnan(y.arr[2])
    rt.equal("sign", y.arr[3:], np.array([1.0, -1.0], np.float32))


def test_compare_and_logical(rt):
    shapes = [((4, 5), (4, 5)), ((2, 1, 5), (3, 1)), ((5,), ())]
    ops = {"less_or_equal": np.less_equal,
           "greater_or_equal": np.greater_equal}
    for name, f in ops.items():
        for sa, sb in shapes:
            for dt in FLOATS + ("i64",):
                a = rt.buf(rt.rng.integers(-3, 3, sa), dt)
                b = rt.buf(rt.rng.integers(-3, 3, sb), dt)
                y = rt.empty(np.broadcast_shapes(sa, sb), "bool")
                rt.ok(name, a.ref, b.ref, y.ref)
                rt.equal(name + " " + dt, y.arr, f(a.f64(), b.f64()))
    nan = Buf(np.array([np.nan, 1.0], np.float32), "f32")
    y = rt.empty((2,), "bool")
    rt.ok("greater_or_equal", nan.ref, nan.ref, y.ref)
    rt.equal("NaN >= NaN", y.arr, np.array([0, 1], np.uint8))
    logic = {"logical_and": np.logical_and, "logical_or": np.logical_or,
             "logical_xor": np.logical_xor}
    for name, f in logic.items():
        for sa, sb in shapes:
            a = Buf(rt.rng.integers(0, 2, sa).astype(np.uint8), "bool")
            b = Buf(rt.rng.integers(0, 2, sb).astype(np.uint8), "bool")
            y = rt.empty(np.broadcast_shapes(sa, sb), "bool")
            rt.ok(name, a.ref, b.ref, y.ref)
            rt.equal(name, y.arr, f(a.arr, b.arr))
        rt.fails(name, rt.randn((3,), "f32").ref, a.ref,
                 rt.empty((3,), "bool").ref, match="dtype")


def rms_fwd(x, s, axis, eps):
    red = tuple(range(axis, x.ndim))
    inv = 1 / np.sqrt((x * x).mean(axis=red, keepdims=True) + eps)
    return x * inv * s, inv


def test_rms_norm(rt):
    eps = 1e-5
    for dt in FLOATS:
        for shape, axis in (((4, 6, 16), -1), ((3, 4, 5), 1)):
            a = axis % len(shape)
            x = rt.randn(shape, dt, 3.0)
            s = rt.randn(shape[a:], dt)
            y = rt.empty(shape, dt)
            outer = int(np.prod(shape[:a]))
            io = rt.empty((outer,), "f32")
            rt.ok("rms_norm", x.ref, s.ref, axis, C.c_float(eps), y.ref,
                  io.ref)
            ref, inv = rms_fwd(x.f64(), s.f64(), a, eps)
            rt.close("rms_norm", y, ref, dt,
                     scale=np.abs(x.f64()) * inv * np.abs(s.f64()), terms=8)
            rt.close("rms_norm_inv_std", io, inv.reshape(-1), "f32", terms=8)
            dy = rt.randn(shape, dt)
            dx, ds = rt.empty(shape, dt), rt.empty(shape[a:], dt)
            rt.ok("rms_norm_grad", dy.ref, x.ref, s.ref, io.ref, axis,
                  dx.ref, ds.ref)
            g, xh = dy.f64(), x.f64() * inv
            red = tuple(range(a)), tuple(range(a, len(shape)))
            gs = g * s.f64()
            rdx = inv * (gs - xh * (gs * xh).mean(axis=red[1], keepdims=True))
            rt.close("rms_norm_grad_dx", dx, rdx, dt,
                     scale=inv * (np.abs(gs) + np.abs(xh) * np.abs(
                         gs * xh).mean(axis=red[1], keepdims=True)),
                     terms=64)
            rt.close("rms_norm_grad_dscale", ds, (g * xh).sum(axis=red[0]),
                     dt, scale=np.abs(g * xh).sum(axis=red[0]), terms=outer)
    # dx against finite differences of the forward (f32, inv_std given).
    x, s = rt.randn((3, 7), "f32"), rt.randn((7,), "f32")
    io = rt.empty((3,), "f32")
    rt.ok("rms_norm", x.ref, s.ref, -1, C.c_float(eps),
          rt.empty((3, 7), "f32").ref, io.ref)
    dy, dx = rt.randn((3, 7), "f32"), rt.empty((3, 7), "f32")
    rt.ok("rms_norm_grad", dy.ref, x.ref, s.ref, io.ref, -1, dx.ref, None)
    fd_close("rms_norm_grad dx", dx.f64(), fd_grad(
        lambda v: rms_fwd(v, s.f64(), 1, eps)[0], x.f64().copy(), dy.f64()))
    rt.fails("rms_norm", x.ref, rt.randn((6,), "f32").ref, -1,
             C.c_float(eps), rt.empty((3, 7), "f32").ref, None,
             match="scale")


def test_slice_grad(rt):
    """dx = 0 except the slice, which is dy: the adjoint of slice."""
    cases = [((6, 5), [1, 0], [5, 5], [0, 1], [2, 1]),
             ((4, 7, 3), [-1, 6], [-5, 0], [0, 1], [-1, -2]),
             ((8,), [2], [100], None, None)]
    for shape, st, en, ax, sp in cases:
        for dt in ("f32", "f16", "i64"):
            x = rt.buf(rt.rng.integers(-9, 9, shape), dt)
            n = len(st)
            args = [i64s(st), i64s(en), i64s(ax) if ax else None,
                    i64s(sp) if sp else None, n]
            idx = [slice(None)] * len(shape)
            for k in range(n):
                a = ax[k] if ax else k
                idx[a] = slice(st[k], en[k], sp[k] if sp else 1)
            want = x.f64()[tuple(idx)]
            y = rt.empty(want.shape, dt)
            rt.ok("slice", x.ref, *args, y.ref)
            rt.equal("slice", y.f64(), want)
            dx = rt.empty(shape, dt)
            rt.ok("slice_grad", y.ref, *args, dx.ref)
            ref = np.zeros(shape)
            ref[tuple(idx)] = want
            rt.equal("slice_grad " + dt, dx.f64(), ref)
    rt.fails("slice_grad", rt.empty((3,), "f32").ref, i64s([0]), i64s([2]),
             None, None, 1, rt.empty((8,), "f32").ref, match="dy")


def test_gemm_position_independent(rt):
    """Every output element is the same function of its row of A and column
    of B, whatever tile or thread computes it: (B^T A^T)^T gives the bits of
    A B, which FoldTransposes.cpp relies on (K over one block, odd M, N)."""
    for m, k, n, alpha in ((5, 300, 8, 1.0), (13, 513, 10, 0.1),
                           (7, 64, 9, 0.3), (2, 1000, 33, 1.0)):
        a = rt.randn((m, k), "f32")
        b = rt.randn((k, n), "f32")
        y = rt.empty((m, n), "f32")
        z = rt.empty((n, m), "f32")
        rt.ok("gemm", a.ref, b.ref, None, y.ref, 0, 0, C.c_float(alpha),
              C.c_float(0.0))
        rt.ok("gemm", b.ref, a.ref, None, z.ref, 1, 1, C.c_float(alpha),
              C.c_float(0.0))
        assert np.array_equal(y.arr.view(np.uint32),
                              z.arr.T.copy().view(np.uint32)), (
            "gemm %dx%dx%d alpha %g: (B^T A^T)^T differs from A B in bits"
            % (m, k, n, alpha))


def pad_ref(a, pads, mode, value):
    """numpy's pad for the positive pads, then the crops of negative ones."""
    r = a.ndim
    grow = [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)]
    modes = {0: "constant", 1: "reflect", 2: "edge", 3: "wrap"}
    kw = {"constant_values": value} if mode == 0 else {}
    y = np.pad(a, grow, mode=modes[mode], **kw)
    cut = tuple(slice(max(-pads[d], 0), y.shape[d] - max(-pads[d + r], 0))
                for d in range(r))
    return y[cut]


def test_pad(rt):
    """pad against numpy.pad in every mode, with crops (negative pads),
    pads wider than the dim (reflect and wrap repeat), every dtype's fill
    value rounding, and the errors."""
    for dt in ("f32", "f16", "bf16", "i64", "i32", "bool"):
        raw = rt.rng.integers(0, 2, (2, 3, 4)) if dt == "bool" else \
            rt.rng.standard_normal((2, 3, 4)) * 5
        x = Buf(raw, dt) if dt != "bf16" else rt.buf(raw, dt)
        value = 1.0 if dt == "bool" else 2.5
        for pads in ([0, 1, 2, 1, 0, 3], [1, -1, 0, 0, 2, -3], [0, 5, 7, 0, 4, 9],
                     [0, 0, 0, 0, 0, 0]):
            for mode in range(4):
                want = pad_ref(x.arr, pads, mode,
                               Buf(np.array(value), dt).arr
                               if dt != "bf16" else rt.buf(np.array(value), dt).arr)
                y = rt.empty(want.shape, dt, fill=0)
                rt.ok("pad", x.ref, i64s(pads), 6, mode, C.c_double(value),
                      y.ref)
                rt.equal("pad %s %s mode %d" % (dt, pads, mode), y.arr, want)
    x = rt.randn((2, 0, 3), "f32")
    y = rt.empty((2, 2, 3), "f32")
    rt.ok("pad", x.ref, i64s([0, 1, 0, 0, 1, 0]), 6, 0, C.c_double(-1), y.ref)
    rt.equal("pad of an empty dim", y.arr, np.full((2, 2, 3), -1, np.float32))
    rt.fails("pad", x.ref, i64s([0, 1, 0, 0, 1, 0]), 6, 1, C.c_double(0),
             y.ref, match="dim 1 is empty: only constant mode can pad it")
    x = rt.randn((2, 3), "f32")
    rt.fails("pad", x.ref, i64s([0, -2, 0, -2]), 4, 0, C.c_double(0),
             rt.empty((2, 0), "f32").ref, match="negative or overflowing")
    rt.fails("pad", x.ref, i64s([0, 0]), 2, 0, C.c_double(0),
             rt.empty((2, 3), "f32").ref, match="2 pads for rank 2")
    rt.fails("pad", x.ref, i64s([0, -(1 << 63), 0, (1 << 63) - 1]), 4, 1,
             C.c_double(0), rt.empty((2, 2), "f32").ref,
             match="negative or overflowing")
    rt.fails("pad", x.ref, i64s([0, 0, 0, 0]), 4, 7, C.c_double(0),
             rt.empty((2, 3), "f32").ref, match="mode 7")


RESIZE_COORD = ("half_pixel", "asymmetric", "align_corners",
                "pytorch_half_pixel", "tf_half_pixel_for_nn",
                "half_pixel_symmetric")
RESIZE_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def resize_ref(x, scales, out_shape, mode, coord, nearest, cubic_a=-0.75,
               exclude=0):
    """ONNX's own reference implementation (onnx.reference), in float64;
    it no longer knows tf_half_pixel_for_nn (nearest only, c = (o + 0.5) /
    scale), which is indexed here."""
    if RESIZE_COORD[coord] == "tf_half_pixel_for_nn":
        rnd = (lambda c: np.ceil(c - 0.5), lambda c: np.floor(c + 0.5),
               np.floor, np.ceil)[nearest]
        idx = [np.clip(rnd((np.arange(m) + 0.5) / np.float32(s)), 0, n - 1)
               .astype(int) for n, m, s in zip(x.shape, out_shape, scales)]
        return x[np.ix_(*idx)]
    from onnx import helper, TensorProto
    from onnx.reference import ReferenceEvaluator
    # align_corners divides by the output length less one: ONNX's
    # reference takes it as in * scale (a float), ORT and PyTorch as the
    # output's dim, as resize does; with sizes both agree.
    sizes = RESIZE_COORD[coord] == "align_corners"
    node = helper.make_node(
        "Resize", ["x", "", "", "sizes"] if sizes else ["x", "", "scales"],
        ["y"],
        mode=("nearest", "linear", "cubic")[mode],
        coordinate_transformation_mode=RESIZE_COORD[coord],
        nearest_mode=RESIZE_NEAREST[nearest], cubic_coeff_a=cubic_a,
        exclude_outside=exclude)
    graph = helper.make_graph(
        [node], "r",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, x.shape),
         helper.make_tensor_value_info("sizes", TensorProto.INT64,
                                       [len(scales)]) if sizes else
         helper.make_tensor_value_info("scales", TensorProto.FLOAT,
                                       [len(scales)])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 19)])
    feeds = {"x": x}
    if sizes:
        feeds["sizes"] = np.array(out_shape, np.int64)
    else:
        feeds["scales"] = np.array(scales, np.float32)
    y = ReferenceEvaluator(model).run(None, feeds)[0]
    assert y.shape == tuple(out_shape), (y.shape, out_shape)
    return y


def test_resize(rt):
    """resize against onnx.reference's Resize in every mode, coordinate
    transformation and nearest mode, up and down (cubic with two
    coefficients, with and without exclude_outside); resize_grad as its
    exact adjoint: <resize(x), g> = <x, resize_grad(g)> in float64."""
    shape = (2, 3, 5, 4)
    cases = [(0, c, n, -0.75, 0) for c in range(6) for n in range(4)]
    cases += [(1, c, 0, -0.75, 0) for c in range(6) if c != 4]
    cases += [(2, c, 0, a, e) for c in range(6) if c != 4
              for a, e in ((-0.75, 0), (-0.5, 1))]
    for scales in ([1, 1, 2, 1.5], [1, 1, 0.6, 0.5], [1, 2, 1, 3]):
        so = tuple(int(np.floor(n * np.float32(s)))
                   for n, s in zip(shape, scales))
        sc = Buf(np.array(scales, np.float32), "f32")
        for mode, coord, nearest, a, excl in cases:
            # (tf_half_pixel_for_nn is for nearest only)
            m = (mode, coord, nearest, a, excl)
            for dt in FLOATS:
                x = rt.randn(shape, dt)
                y = rt.empty(so, dt)
                rt.ok("resize", x.ref, sc.ref, *m, y.ref)
                want = resize_ref(x.f64(), scales, so, *m)
                # Cubic's 16 weights have signs: sum |w| |x| <= 1.6^2
                # max |x| bounds what its f32 sums round. Linear's f32
                # weights w and 1 - w each carry an absolute rounding error
                # up to 2^-24, so a tap of small weight can be off by
                # 2^-24 |x| whatever its weight: max |x| joins the scale.
                rt.close("resize %s %s %s" % (
                    ("nearest", "linear", "cubic")[mode], RESIZE_COORD[coord],
                    dt), y, want, dt, terms=8 if mode < 2 else 16,
                    scale=np.abs(want) + 1e-30 if mode == 0 else
                    resize_ref(np.abs(x.f64()), scales, so, *m) +
                    np.abs(x.f64()).max() if mode == 1
                    else np.full(want.shape, 2.6 * np.abs(x.f64()).max()))
            g = rt.randn(so, "f32")
            dx = rt.empty(shape, "f32")
            rt.ok("resize_grad", g.ref, sc.ref, *m, dx.ref)
            x = rt.randn(shape, "f32")
            lhs = float(np.sum(resize_ref(x.f64(), scales, so, *m) *
                               g.f64()))
            rhs = float(np.sum(x.f64() * dx.f64()))
            bound = 1e-5 * float(np.sum(np.abs(x.f64())) *
                                 np.abs(g.f64()).max() * 8)
            assert abs(lhs - rhs) <= bound, (
                "resize_grad %s %s is not resize's adjoint: %g vs %g" % (
                    ("nearest", "linear", "cubic")[mode], RESIZE_COORD[coord],
                    lhs, rhs))
    # An axis that is not resized reads one element: Inf in channel 0 leaves
    # channel 1 finite (cubic's zero-weight taps are not read).
    a = np.ones((1, 2, 3, 3), np.float32)
    a[0, 0, 1, 1] = np.inf
    y = rt.empty((1, 2, 6, 6), "f32")
    rt.ok("resize", Buf(a, "f32").ref,
          Buf(np.array([1, 1, 2, 2], np.float32), "f32").ref, 2, 0, 0, -0.75,
          0, y.ref)
    rt.equal("resize cubic, a finite channel", y.arr[0, 1], np.ones((6, 6)))
    x = rt.randn((2, 3), "f32")
    sc = Buf(np.array([1, 2], np.float32), "f32")
    rt.fails("resize", x.ref, sc.ref, 3, 0, 0, -0.75, 0,
             rt.empty((2, 6), "f32").ref, match="mode 3")
    rt.fails("resize", x.ref, sc.ref, 2, 0, 0, float("inf"), 0,
             rt.empty((2, 6), "f32").ref, match="cubic_coeff_a inf")
    rt.fails("resize", x.ref, Buf(np.array([1.0], np.float32), "f32").ref,
             0, 0, 0, -0.75, 0, rt.empty((2, 6), "f32").ref,
             match="scales has shape")
    rt.fails("resize", rt.randn((2, 0), "f32").ref, sc.ref, 0, 0, 0, -0.75,
             0, rt.empty((2, 2), "f32").ref, match="is empty, y")


def test_arg_extreme_integer(rt):
    """arg_max/arg_min of integer and bool tensors against numpy."""
    # Compared exactly, not as floats: 2**40 + 1 and 2**40 round to the same
    # f32. (HF's GPT-2 takes an ArgMax of an i32 mask.)
    for it, hi in (("i64", 1 << 40), ("i32", 1 << 30), ("i8", 100),
                   ("u8", 250), ("bool", 2)):
        v = np.random.default_rng(5).integers(
            0 if it in ("u8", "bool") else -hi, hi, (4, 6, 3))
        if hi > 1 << 24:  # a float compare would call these two a tie
            v[1, 2, 0], v[1, 3, 0] = hi - 2, hi - 1
        xi = Buf(v.astype(NP_STORAGE[it]), it)
        for axis in (0, 1, 2):
            for last in (0, 1):
                for name, f in (("arg_max", np.argmax),
                                ("arg_min", np.argmin)):
                    vv = v if not last else np.flip(v, axis)
                    want = f(vv, axis=axis)
                    if last:
                        want = v.shape[axis] - 1 - want
                    y = rt.empty(want.shape, "i64", fill=0)
                    rt.ok(name, xi.ref, axis, 0, last, y.ref)
                    rt.equal("%s %s axis %d last %d" % (name, it, axis,
                                                        last),
                             y.arr, want)


def test_cumsum(rt):
    """cumsum (every axis, exclusive, reverse) against numpy in float64 for
    floats and exactly for integers, whose sums wrap in their type."""
    def ref(a, axis, exclusive, reverse):
        a = np.flip(a, axis) if reverse else a
        c = np.cumsum(a, axis=axis)
        if exclusive:
            c = c - a
        return np.flip(c, axis) if reverse else c
    for dt in FLOATS:
        x = rt.randn((3, 4, 5), dt)
        a = x.f64()
        for axis in (0, 1, 2, -1):
            for ex in (0, 1):
                for rev in (0, 1):
                    y = rt.empty(a.shape, dt)
                    rt.ok("cumsum", x.ref, axis, ex, rev, y.ref)
                    # One rounding of the f64 sum.
                    rt.close("cumsum %s axis %d ex %d rev %d" % (dt, axis, ex,
                                                                rev),
                             y, ref(a, axis, ex, rev), dt)
    for it in ("i64", "i32"):
        v = np.random.default_rng(3).integers(-50, 50, (3, 4, 5))
        v[0, :, 0] = np.iinfo(NP_STORAGE[it]).max  # wraps in the type
        xi = Buf(v.astype(NP_STORAGE[it]), it)
        for axis in (0, 1, 2):
            for ex in (0, 1):
                for rev in (0, 1):
                    y = rt.empty(v.shape, it, fill=0)
                    rt.ok("cumsum", xi.ref, axis, ex, rev, y.ref)
                    want = ref(v.astype(NP_STORAGE[it]), axis, ex, rev)
                    rt.equal("cumsum %s axis %d ex %d rev %d" % (it, axis, ex,
                                                                rev),
                             y.arr, want.astype(NP_STORAGE[it]))
    rt.fails("cumsum", Buf(np.zeros(3, np.uint8), "u8").ref, 0, 0, 0,
             rt.empty((3,), "u8", fill=0).ref, match="expected f32, f16")
    rt.fails("cumsum", rt.randn((3,), "f32").ref, 1, 0, 0,
             rt.empty((3,), "f32").ref, match="axis")


def gather_nd_ref(data, idx, b):
    """ONNX GatherND, written from its definition."""
    bshape = data.shape[:b]
    k = idx.shape[-1]
    out = np.empty(idx.shape[:-1] + data.shape[b + k:], data.dtype)
    for bi in np.ndindex(*bshape):
        for ti in np.ndindex(*idx.shape[b:-1]):
            t = tuple(int(v) for v in idx[bi + ti])
            out[bi + ti] = data[bi + t]
    return out


def test_gather_nd(rt):
    """gather_nd against its definition for batch_dims 0..2 and tuples of 1
    to all remaining dims (negative indices too), every dtype it moves;
    gather_nd_grad exactly (np.add.at of the same slabs, repeats included)
    and as the adjoint; bad geometry and out-of-range indices refused."""
    shape = (2, 3, 4, 5)
    for b, k, n in ((0, 1, (6,)), (0, 2, (2, 3)), (0, 4, (5,)), (1, 1, (3,)),
                    (1, 2, (4,)), (2, 2, (1,)), (1, 3, (2, 2))):
        lim = np.array(shape[b:b + k])
        idx = rt.rng.integers(-lim, lim, shape[:b] + n + (k,))
        want_shape = shape[:b] + n + shape[b + k:]
        for dt in ("f32", "f16", "i64", "bool"):
            d = (rt.randn(shape, dt) if dt in FLOATS else
                 Buf(rt.rng.integers(0, 2, shape).astype(NP_STORAGE[dt]), dt))
            y = rt.empty(want_shape, dt) if dt in FLOATS else \
                rt.empty(want_shape, dt, fill=0)
            rt.ok("gather_nd", d.ref, Buf(idx.astype(np.int64), "i64").ref, b,
                  y.ref)
            rt.equal("gather_nd %s b %d k %d" % (dt, b, k), y.arr,
                     gather_nd_ref(d.arr, idx, b))
        for dt in FLOATS:
            g = rt.randn(want_shape, dt)
            dx = rt.empty(shape, dt)
            rt.ok("gather_nd_grad", g.ref,
                  Buf(idx.astype(np.int32), "i32").ref, b, dx.ref)
            want, mag = np.zeros(shape), np.zeros(shape)
            gv = g.f64()
            for bi in np.ndindex(*shape[:b]):
                for ti in np.ndindex(*n):
                    t = tuple(int(v) % s for v, s in
                              zip(idx[bi + ti], shape[b:b + k]))
                    want[bi + t] += gv[bi + ti]
                    mag[bi + t] += np.abs(gv[bi + ti])
            rt.close("gather_nd_grad %s b %d k %d" % (dt, b, k), dx, want,
                     dt, terms=8, scale=mag + 1e-30)
    x = rt.randn(shape, "f32")
    y = rt.empty((2, 4, 5), "f32")
    rt.fails("gather_nd", x.ref, Buf(np.array([[0, 3], [1, -4]]), "i64").ref,
             0, y.ref, match="index 3 of tuple 0 outside")
    rt.fails("gather_nd", x.ref, Buf(np.zeros((3, 1), np.int64), "i64").ref,
             1, rt.empty((2, 4, 5), "f32").ref, match="batch dim 0 differs")
    rt.fails("gather_nd", x.ref, Buf(np.zeros((2, 5), np.int64), "i64").ref,
             0, rt.empty((2,), "f32").ref, match="do not fit")


def scatter_nd_ref(data, idx, upd, red, step=lambda v: v):
    """ONNX ScatterND from its definition: the index tuples in order, each
    slab of the output combined with its update (0 none, 1 add, 2 mul, 3
    max, 4 min; numpy's maximum/minimum propagate NaN); `step` rounds each
    combined value (into the kernel's dtype)."""
    out = np.array(data)
    ops = {1: np.add, 2: np.multiply, 3: np.maximum, 4: np.minimum}
    for t in np.ndindex(*idx.shape[:-1]):
        at = tuple(int(v) for v in idx[t])  # negative: from the end
        out[at] = upd[t] if red == 0 else step(ops[red](out[at], upd[t]))
    return out


def test_scatter_nd(rt):
    """scatter_nd against its ONNX definition: tuples of 1 to all dims of
    the data, negative indices, repeated tuples (none: the last wins; the
    reductions applied in order, each step rounded into the dtype: exact),
    in place (y = data), distinct tuples against float64 without rounding,
    integer and bool data; bad calls refused with y untouched."""
    nan = 1e300  # NaN == NaN in the comparisons

    def step(dt):
        if dt in FLOATS:  # f32 math, one rounding into the dtype
            return lambda v: quantize(quantize(v, "f32"), dt)
        return lambda v: v

    shape = (4, 5, 6)
    for k, n in ((1, (3,)), (2, (2, 3)), (3, (7,)), (1, (9,))):
        lim = np.array(shape[:k])
        idx = rt.rng.integers(-lim, lim, n + (k,))
        idx.reshape(-1, k)[-1] = idx.reshape(-1, k)[0]  # one repeat at least
        ushape = n + shape[k:]
        for dt in FLOATS + ("i64", "i32", "bool"):
            ints = dt in ("i64", "i32", "bool")
            lo = 0 if dt == "bool" else -4
            d = (Buf(rt.rng.integers(lo, 2 - lo, shape), dt) if ints else
                 rt.randn(shape, dt))
            u = (Buf(rt.rng.integers(lo, 2 - lo, ushape), dt) if ints else
                 rt.randn(ushape, dt))
            if dt == "f32":  # a NaN through max and min
                a = u.arr.reshape(-1)
                a[0] = np.nan
            dv = d.arr.astype(np.int64) if ints else d.f64()
            uv = u.arr.astype(np.int64) if ints else u.f64()
            for red in (0,) if dt == "bool" else range(5):
                y = rt.empty(shape, dt)
                ib = Buf(idx, "i64" if red % 2 else "i32")
                rt.ok("scatter_nd", d.ref, ib.ref, u.ref, red, y.ref)
                want = scatter_nd_ref(dv, idx, uv, red, step(dt))
                got = y.arr.astype(np.int64) if ints else y.f64()
                if dt == "bool":
                    want = want != 0
                rt.equal("scatter_nd %s k %d red %d" % (dt, k, red),
                         np.nan_to_num(got, nan=nan),
                         np.nan_to_num(want, nan=nan))
                # In place: y is data.
                z = Buf(d.arr.copy(), dt)
                rt.ok("scatter_nd", z.ref, ib.ref, u.ref, red, z.ref)
                rt.equal("scatter_nd in place %s red %d" % (dt, red),
                         y.bits(), z.bits())
    # Distinct tuples against float64 without rounding: one rounding of
    # the exact result.
    idx = np.stack(np.unravel_index(rt.rng.permutation(20)[:12], (4, 5)), -1)
    idx = idx - np.where(rt.rng.integers(0, 2, idx.shape), (4, 5), 0)
    for dt in FLOATS:
        d, u = rt.randn(shape, dt), rt.randn((12, 6), dt)
        for red in range(5):
            y = rt.empty(shape, dt)
            rt.ok("scatter_nd", d.ref, Buf(idx, "i64").ref, u.ref, red, y.ref)
            rt.close("scatter_nd %s distinct red %d" % (dt, red), y,
                     scatter_nd_ref(d.f64(), idx, u.f64(), red), dt)
    # Bad calls: nothing written.
    d = rt.randn((4, 5), "f32")
    y = rt.empty((4, 5), "f32", fill=7.0)
    for ix, u, red, match in (
            ([[0, 5]], (1,), 0, "index 5 of tuple 0 outside .-5, 5."),
            ([[1], [-5]], (2, 5), 1, "index -5 of tuple 1 outside .-4, 4."),
            ([[0, 1, 2]], (1,), 0, "do not fit"),
            ([[1]], (1, 4), 0, "updates has shape .1, 4., expected .1, 5."),
            ([[1]], (1, 5), 5, "reduction 5 .expected 0 none")):
        rt.fails("scatter_nd", d.ref, Buf(np.array(ix), "i64").ref,
                 rt.randn(u, "f32").ref, red, y.ref, match=match)
        rt.equal("scatter_nd error leaves y", y.arr, np.full((4, 5), 7.0))
    b = Buf(np.zeros((4, 5), np.uint8), "bool")
    rt.fails("scatter_nd", b.ref, Buf(np.array([[1]]), "i64").ref,
             Buf(np.ones((1, 5), np.uint8), "bool").ref, 1,
             rt.empty((4, 5), "bool").ref,
             match="a reduction needs f32, f16, bf16, i64 or i32 data, not "
                   "bool")


def test_select(rt):
    """arg_max/arg_min, top_k, gather_elements(_grad), scatter_elements,
    trilu and reduce_max/reduce_min against numpy (NaN and tie rules
    included)."""
    for dt in FLOATS:
        x = rt.randn((3, 7, 5), dt)
        a = x.f64()
        a[0, 2, 1] = np.nan  # NaN wins in arg_max/min and the reductions
        x = rt.buf(a, dt) if dt == "bf16" else Buf(a, dt)
        a = x.f64()
        for axis in (0, 1, -1):
            for keep in (0, 1):
                for name, f in (("arg_max", np.argmax), ("arg_min", np.argmin)):
                    want = f(a, axis=axis)
                    if keep:
                        want = np.expand_dims(want, axis)
                    y = rt.empty(want.shape, "i64", fill=0)
                    rt.ok(name, x.ref, axis, keep, 0, y.ref)
                    rt.equal("%s axis %d" % (name, axis), y.arr, want)
                for name, f in (("reduce_max", np.max), ("reduce_min", np.min)):
                    want = f(a, axis=axis, keepdims=bool(keep))
                    y = rt.empty(want.shape, dt)
                    rt.ok(name, x.ref, i64s([axis]), 1, keep, 0, y.ref)
                    nan = 1e300  # NaN == NaN here
                    rt.equal("%s axis %d" % (name, axis),
                             np.nan_to_num(y.f64(), nan=nan),
                             np.nan_to_num(want, nan=nan))
        # Ties: the first index, or the last with select_last_index.
        t = Buf(np.array([[1, 3, 3, 0], [2, 2, 2, 2]], np.float32), "f32")
        y = rt.empty((2,), "i64", fill=0)
        rt.ok("arg_max", t.ref, 1, 0, 0, y.ref)
        rt.equal("arg_max ties", y.arr, [1, 0])
        rt.ok("arg_max", t.ref, 1, 0, 1, y.ref)
        rt.equal("arg_max last ties", y.arr, [2, 3])
        # top_k: ranked, ties by index.
        v = rt.randn((4, 9, 3), dt)
        b = v.f64()
        for axis, k, largest in ((1, 4, 1), (1, 9, 0), (0, 2, 1), (2, 0, 1)):
            key = -b if largest else b
            order = np.argsort(key, axis=axis, kind="stable")
            want_i = np.take(order, np.arange(k), axis=axis)
            want_v = np.take_along_axis(b, want_i, axis=axis)
            vals = rt.empty(want_v.shape, dt)
            idx = rt.empty(want_i.shape, "i64", fill=0)
            rt.ok("top_k", v.ref, k, axis, largest, 1, vals.ref, idx.ref)
            rt.equal("top_k indices", idx.arr, want_i)
            rt.equal("top_k values", vals.f64(), want_v)
        rt.fails("top_k", v.ref, 10, 1, 1, 1, rt.empty((4, 10, 3), dt).ref,
                 rt.empty((4, 10, 3), "i64").ref, match="k = 10")
        # gather_elements and its gradient (repeated indices add up).
        d = rt.randn((4, 6), dt)
        ind = rt.rng.integers(-6, 6, (4, 5))
        want = np.take_along_axis(d.f64(), ind % 6, axis=1)
        y = rt.empty((4, 5), dt)
        rt.ok("gather_elements", d.ref, Buf(ind, "i64").ref, 1, y.ref)
        rt.equal("gather_elements", y.f64(), want)
        g = rt.randn((4, 5), dt)
        dx = rt.empty((4, 6), dt)
        rt.ok("gather_elements_grad", g.ref, Buf(ind, "i64").ref, 1, dx.ref)
        acc = np.zeros((4, 6))
        for i in range(4):
            np.add.at(acc[i], ind[i] % 6, g.f64()[i])
        rt.close("gather_elements_grad", dx, acc, dt,
                 scale=np.abs(acc) + 1, terms=5)
        rt.fails("gather_elements", d.ref,
                 Buf(np.array([[6]]), "i64").ref, 1,
                 rt.empty((1, 1), dt).ref, match="index 6 at 0")
        # Indices longer than the data on another dim: an error, not a read
        # past the end.
        rt.fails("gather_elements", d.ref,
                 Buf(np.zeros((5, 2), np.int64), "i64").ref, 1,
                 rt.empty((5, 2), dt).ref, match="exceed data .4, 6. at dim 0")
        rt.fails("scatter_elements", d.ref,
                 Buf(np.zeros((5, 2), np.int64), "i64").ref,
                 rt.randn((5, 2), dt).ref, 1, 0, rt.empty((4, 6), dt).ref,
                 match="exceed data .4, 6. at dim 0")
        # scatter_elements: distinct places, then a reduction over repeats.
        perm = np.stack([rt.rng.permutation(6)[:5] for _ in range(4)])
        u = rt.randn((4, 5), dt)
        want = d.f64().copy()
        np.put_along_axis(want, perm, u.f64(), axis=1)
        y = rt.empty((4, 6), dt)
        rt.ok("scatter_elements", d.ref, Buf(perm, "i64").ref, u.ref, 1, 0,
              y.ref)
        rt.equal("scatter_elements", y.f64(), want)
        rep = np.zeros((4, 5), np.int64)  # every update into column 0
        rt.ok("scatter_elements", d.ref, Buf(rep, "i64").ref, u.ref, 1, 1,
              y.ref)
        want = d.f64().copy()
        want[:, 0] += u.f64().sum(axis=1)
        # Each addition rounds into the dtype: 5 roundings of at most
        # u(dt) times the running magnitude.
        bound = 5 * rt_unit(dt) * (np.abs(d.f64()) +
                                   np.abs(u.f64()).sum(1, keepdims=True))
        assert (np.abs(y.f64() - want) <= bound).all(), (
            "scatter_elements add " + dt)
        rt.ok("scatter_elements", d.ref, Buf(rep, "i64").ref, u.ref, 1, 3,
              y.ref)
        want = d.f64().copy()
        want[:, 0] = np.maximum(want[:, 0], u.f64().max(axis=1))
        rt.equal("scatter_elements max", y.f64(), want)
        # trilu: upper and lower around several diagonals.
        m = rt.randn((2, 4, 6), dt)
        for k in (-2, 0, 1, 7):
            for upper, f in ((1, np.triu), (0, np.tril)):
                y = rt.empty((2, 4, 6), dt)
                rt.ok("trilu", m.ref, k, upper, y.ref)
                rt.equal("trilu k %d upper %d" % (k, upper), y.f64(),
                         f(m.f64(), k))


def sigm(v):
    return 1 / (1 + np.exp(-v))


def rnn_ref(kind, x, w, r, b, h0, c0, direction, lbr=1):
    """ONNX LSTM / GRU (layout 0, default activations) in float64: y, y_h,
    y_c (None for GRU)."""
    S, B, _ = x.shape
    D, GH, _ = w.shape
    G = 4 if kind == "lstm" else 3
    H = GH // G
    y = np.zeros((S, D, B, H))
    yh, yc = np.zeros((D, B, H)), np.zeros((D, B, H))
    for d in range(D):
        rev = direction == 1 or (direction == 2 and d == 1)
        h = h0[d].copy()
        c = c0[d].copy() if c0 is not None else None
        wb, rb = b[d, :GH], b[d, GH:]
        for t in (range(S - 1, -1, -1) if rev else range(S)):
            if kind == "lstm":
                a = x[t] @ w[d].T + h @ r[d].T + wb + rb
                i, o, f, cc = (sigm(a[:, :H]), sigm(a[:, H:2 * H]),
                               sigm(a[:, 2 * H:3 * H]), np.tanh(a[:, 3 * H:]))
                c = f * c + i * cc
                h = o * np.tanh(c)
            else:
                ax = x[t] @ w[d].T + wb
                z = sigm(ax[:, :H] + h @ r[d, :H].T + rb[:H])
                rr = sigm(ax[:, H:2 * H] + h @ r[d, H:2 * H].T + rb[H:2 * H])
                if lbr:
                    hc = np.tanh(ax[:, 2 * H:] +
                                 rr * (h @ r[d, 2 * H:].T + rb[2 * H:]))
                else:
                    hc = np.tanh(ax[:, 2 * H:] + (rr * h) @ r[d, 2 * H:].T +
                                 rb[2 * H:])
                h = (1 - z) * hc + z * h
            y[t, d] = h
        yh[d] = h
        if c is not None:
            yc[d] = c
    return y, yh, (yc if kind == "lstm" else None)


def test_recurrent(rt):
    """lstm / gru against float64 references of ONNX's equations (forward,
    reverse, bidirectional; GRU with and without linear_before_reset), and
    lstm_grad / gru_grad against central differences of those references
    for the loss <y, gy> + <y_h, gh> (+ <y_c, gc>)."""
    S, B, I, H = 4, 3, 5, 4
    for kind in ("lstm", "gru"):
        G = 4 if kind == "lstm" else 3
        for direction, lbr in ((0, 1), (1, 0), (2, 1), (0, 0)):
            if kind == "lstm" and lbr == 0 and direction == 0:
                continue
            D = 2 if direction == 2 else 1
            x = rt.randn((S, B, I), "f32")
            w = rt.randn((D, G * H, I), "f32", 0.5)
            r = rt.randn((D, G * H, H), "f32", 0.5)
            b = rt.randn((D, 2 * G * H), "f32", 0.5)
            h0 = rt.randn((D, B, H), "f32", 0.5)
            c0 = rt.randn((D, B, H), "f32", 0.5)
            y = rt.empty((S, D, B, H), "f32")
            yh = rt.empty((D, B, H), "f32")
            gates = rt.empty((S, D, B, G * H), "f32")
            ref = rnn_ref(kind, x.f64(), w.f64(), r.f64(), b.f64(), h0.f64(),
                          c0.f64() if kind == "lstm" else None, direction, lbr)
            if kind == "lstm":
                yc = rt.empty((D, B, H), "f32")
                allc = rt.empty((S, D, B, H), "f32")
                rt.ok("lstm", x.ref, w.ref, r.ref, b.ref, h0.ref, c0.ref,
                      direction, y.ref, yh.ref, yc.ref, allc.ref, gates.ref)
                rt.close("lstm y_c", yc, ref[2], "f32", scale=np.abs(ref[2]) + 1,
                         terms=S * (I + H) * 4)
            else:
                rt.ok("gru", x.ref, w.ref, r.ref, b.ref, h0.ref, direction, lbr,
                      y.ref, yh.ref, gates.ref)
            what = "%s direction %d lbr %d" % (kind, direction, lbr)
            rt.close(what + " y", y, ref[0], "f32", scale=np.abs(ref[0]) + 1,
                     terms=S * (I + H) * 4)
            rt.close(what + " y_h", yh, ref[1], "f32",
                     scale=np.abs(ref[1]) + 1, terms=S * (I + H) * 4)
            # Gradients by central differences of the float64 reference.
            gy = rt.randn((S, D, B, H), "f32")
            gh = rt.randn((D, B, H), "f32")
            gc = rt.randn((D, B, H), "f32")
            args = [x, w, r, b, h0, c0]

            def loss(vals):
                o = rnn_ref(kind, *vals[:5],
                            vals[5] if kind == "lstm" else None, direction,
                            lbr)
                v = np.sum(o[0] * gy.f64()) + np.sum(o[1] * gh.f64())
                return v + (np.sum(o[2] * gc.f64()) if kind == "lstm" else 0)

            outs = [rt.empty(a.shape, "f32") for a in args]
            if kind == "lstm":
                rt.ok("lstm_grad", x.ref, w.ref, r.ref, b.ref, h0.ref, c0.ref,
                      y.ref, allc.ref, gates.ref, gy.ref, gh.ref, gc.ref,
                      direction, *[o.ref for o in outs])
            else:
                rt.ok("gru_grad", x.ref, w.ref, r.ref, b.ref, h0.ref, y.ref,
                      gates.ref, gy.ref, gh.ref, direction, lbr,
                      *[o.ref for o in outs[:5]])
                outs = outs[:5]
            base = [a.f64() for a in args]
            for k, (name, o) in enumerate(zip(("dx", "dw", "dr", "db",
                                               "dh0", "dc0"), outs)):
                num = np.zeros(o.shape)
                for idx in np.ndindex(*o.shape):
                    plus = [v.copy() for v in base]
                    minus = [v.copy() for v in base]
                    plus[k][idx] += 1e-5
                    minus[k][idx] -= 1e-5
                    num[idx] = (loss(plus) - loss(minus)) / 2e-5
                err = np.abs(o.f64() - num).max() / (np.abs(num).max() + 1)
                assert err < 2e-5, "%s %s: relative error %.2e" % (
                    what, name, err)


def splitmix_ref(seed, n):
    """Draws 1..n of splitmix64 from `seed`, in Python integers."""
    m = (1 << 64) - 1
    out, s = [], seed
    for _ in range(n):
        s = (s + 0x9E3779B97F4A7C15) & m
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out.append(z ^ (z >> 31))
    return out


def test_random_fill(rt):
    """random_fill against splitmix64 computed here: floats are 2u - 1 of
    53-bit u rounded once to f64/f32, f16/bf16 that f32 rounded again (the
    cast of an f32 fill), integers the draw mod classes, bool its low bit;
    bad dtypes and classes are refused."""
    seed = 0xDEADBEEF12345678
    r = splitmix_ref(seed, 257)
    u = np.array([(v >> 11) * 2.0 ** -53 for v in r]) * 2 - 1
    u32 = u.astype(np.float32)
    for dt, want in (("f64", u), ("f32", u32),
                     ("f16", u32.astype(np.float16)), ("bf16", None)):
        y = rt.empty((257,), dt)
        rt.ok("random_fill", y.ref, C.c_uint64(seed), 0, 0)
        if want is not None:
            rt.equal("random_fill " + dt, y.arr, want)
        else:
            # The f32 value rounded to bf16 (numpy has no bf16).
            rt.close("random_fill " + dt, y, u32, dt)
        assert (y.f64() >= -1).all() and (y.f64() <= 1).all()
    for dt, npdt in (("i64", np.int64), ("i32", np.int32)):
        y = rt.empty((257,), dt, fill=0)
        rt.ok("random_fill", y.ref, C.c_uint64(seed), 0, 10)
        rt.equal("random_fill " + dt, y.arr,
                 np.array([v % 10 for v in r], npdt))
    y = rt.empty((3, 5), "bool", fill=0)
    rt.ok("random_fill", y.ref, C.c_uint64(seed), 0, 0)
    rt.equal("random_fill bool", y.arr.reshape(-1),
             np.array([v & 1 for v in r[:15]], np.uint8))
    rt.fails("random_fill", rt.empty((4,), "i64", fill=0).ref,
             C.c_uint64(1), 0, 0, match="classes is 0")
    rt.fails("random_fill", rt.empty((4,), "i32", fill=0).ref,
             C.c_uint64(1), 0, 1 << 40, match="classes is 1099511627776, expected 1 to 2.31 - 1")
    rt.fails("random_fill", rt.empty((4,), "i8", fill=0).ref,
             C.c_uint64(1), 0, 3, match="expected a float, i64, i32 or bool")


def test_random_generators(rt):
    """random_uniform, random_normal and bernoulli against their formulas
    computed here from splitmix64 (exact bits in f64, one rounding in the
    16-bit types), their moments, and the context's random offset: a new
    offset draws new values (and dropout masks), the same offset the same."""
    m64 = (1 << 64) - 1
    G = 0x9E3779B97F4A7C15

    def mix(z):
        return splitmix_ref(z, 1)[0]

    def key(seed, off):
        return mix(seed ^ mix(off)) if off else seed

    def u53(k, j):
        return (mix((k + j * G) & m64) >> 11) * 2.0 ** -53

    def u24(k, i):
        return np.float32((mix(k ^ mix(i)) >> 40) * 2.0 ** -24)

    L = rt.lib
    L.amprt_set_random_offset.argtypes = [C.c_void_p, C.c_uint64]
    seed, n = 0x0123456789ABCDEF, 4000
    for off in (0, 7):
        assert L.amprt_set_random_offset(rt.ctx, off) == 0
        k = key(seed, off)
        u = np.array([u53(k, i) for i in range(2 * n)])
        want = {"random_uniform": -2 + 5 * u[:n],
                "random_normal": 0.5 + 2 * np.sqrt(-2 * np.log1p(-u[0::2]))
                * np.cos(2 * np.pi * u[1::2])}
        args = {"random_uniform": (-2.0, 3.0), "random_normal": (0.5, 2.0)}
        for name in ("random_uniform", "random_normal"):
            for dt in ("f64",) + FLOATS:
                y = rt.empty((40, n // 40), dt)
                rt.ok(name, y.ref, C.c_uint64(seed), *args[name])
                got = y.f64().reshape(-1)
                if dt == "f64":
                    err = np.abs(got - want[name]).max()
                    assert err < 1e-13, "%s f64 off %d: %.2e" % (name, off,
                                                                 err)
                else:
                    rt.close("%s %s" % (name, dt), y,
                             want[name].reshape(y.shape), dt, terms=2)
            mean, std = got.mean(), got.std()
            if name == "random_uniform":
                # high itself only by rounding into a 16-bit type
                assert abs(mean - 0.5) < 0.1 and got.min() >= -2 and \
                    got.max() <= 3, (mean, got.min(), got.max())
            else:
                assert abs(mean - 0.5) < 0.15 and abs(std - 2) < 0.1, (mean,
                                                                      std)
        p = rt.buf(np.linspace(0, 1, 300).reshape(3, 100), "f32")
        for dt in ("f32", "bool", "i64"):
            y = rt.empty((3, 100), dt, fill=0)
            rt.ok("bernoulli", p.ref, y.ref, C.c_uint64(seed))
            pv = p.f64().reshape(-1)
            rt.equal("bernoulli %s off %d" % (dt, off), y.f64().reshape(-1),
                     np.array([1.0 if u24(k, i) < pv[i] else 0.0
                               for i in range(300)]))
    # The offset moves every stream; setting it again repeats the draws.
    x = rt.randn((32, 32), "f32")
    ratio, train = rt.buf(np.array(0.5), "f32"), Buf(np.array(1), "bool")
    masks = []
    for off in (3, 4, 3):
        L.amprt_set_random_offset(rt.ctx, off)
        y, m = rt.empty(x.shape, "f32"), rt.empty(x.shape, "bool")
        rt.ok("dropout", x.ref, ratio.ref, train.ref, 1234, y.ref, m.ref)
        masks.append(m.arr.copy())
    L.amprt_set_random_offset(rt.ctx, 0)
    assert not np.array_equal(masks[0], masks[1]), "offset ignored"
    rt.equal("dropout at the same offset", masks[2], masks[0])
    rt.fails("random_uniform", rt.empty((3,), "f32").ref, C.c_uint64(1),
             1.0, 0.0, match="not a finite range")
    rt.fails("random_normal", rt.empty((3,), "i64", fill=0).ref,
             C.c_uint64(1), 0.0, 1.0, match="expected f32, f16, bf16 or f64")
    rt.fails("bernoulli", rt.buf(np.array([0.5, 1.5]), "f32").ref,
             rt.empty((2,), "f32").ref, C.c_uint64(1), match="is outside")


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]

if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(Runtime.from_args().run(TESTS))
