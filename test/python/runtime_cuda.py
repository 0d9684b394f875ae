"""The CUDA backend of the amp runtime against its CPU backend.

Every kernel the CUDA backend overrides (kernels/*.cu) runs on the same fresh
random inputs (the seed is printed; --seed reproduces) on a "cuda" and a
"cpu" context; the outputs are compared element by element, and so are the
status and the message of bad calls. Tolerances, in units of the output
dtype's ulp at the larger of the two values:

  exact (bits, or both NaN): cast, add/sub/mul/div/mod/min/max (float and
      integer), the comparisons, neg/abs/sqrt/reciprocal, relu/sigmoid/tanh gradients,
      isnan/isinf/logical_not, sum, scale, where, fill, identity, reshape,
      transpose, expand, concat, slice, slice_grad, gather, max_pool
      (values and indices), average_pool, global_average_pool_grad,
      dropout and dropout_grad (masks and values), random_uniform,
      bernoulli, arg_max, arg_min, top_k, gather_elements, gather_nd,
      scatter_elements, scatter_nd (every reduction: the tuples of a place
      are applied in order), cumsum, trilu,
      reduce_max, reduce_min, integer reduce_sum,
      inplace_accumulate, multi_tensor_unscale and its flag,
      multi_tensor_unscale_check, unscale_gate(_accumulate), sign,
      leaky_relu(_grad), <=, >=, logical and/or/xor,
      loss_scaler_update, sgd (the GPU code is the CPU's expressions,
      compiled without FMA contraction), the collectives of a group of
      one rank (copies);
  1 ulp: f16/bf16 outputs of every kernel where the CPU rounds once from f32
      (a different f32 result can round to the neighbour); random_normal
      (the device's double log/sqrt/cos; 4 ulp for f64 outputs);
  adamw f32: 2 ulp per step (device pow in the bias corrections);
  sigmoid, tanh, exp, log, pow in f32: 4 ulp (CUDA's expf/tanhf/logf/
      powf against glibc's); gelu, fast_gelu and their gradients: 6 ulp
      (erfcf), the gradients plus 16 2^-24 |dy| (1 + |x|) (two terms that
      cancel); every f32 transcendental also 4 2^-126 (subnormal results);
  gather_grad, gather_elements_grad, gather_nd_grad, max_pool_grad,
      average_pool_grad: 1 ulp + (terms + 4)
      2^-24 sum|dy| (f32 atomics: rows sharing an index sum in another
      order);
  global_average_pool: 1 ulp + (S + 4) 2^-24 mean|x| (f64 sums on the
      device, an f32 sequence of S terms on the CPU);
  layer_norm, rms_norm, batch_norm and their gradients: 2 ulp + 8 2^-24 (max|out| +
      1) (the f64 statistics sum in another order, which can move the f32
      mean or inverse deviation by an ulp);
  softmax family, losses, reduce_sum in f32: 4 ulp + (terms + 4) 2^-24 scale
      (the sums run as a tree instead of a sequence); log_softmax,
      softmax_grad and log_prob keep that absolute part in f16/bf16 too
      (x - max - log(sum) cancels);
  conv / conv_grad / conv_transpose (cuDNN): 1 ulp + (K + 4) 2^-24 4
      max|out|, plus one ulp of the largest |conv| + |bias| for f16/bf16
      conv and conv_transpose with a bias (cuDNN adds the bias to the
      rounded convolution);
  lstm, lstm_grad, gru, gru_grad (cuBLASLt products, f32 steps): 4 ulp +
      68 2^-24 (max|out| + 1);
  gemm / matmul / fused_matmul: 1 ulp + 2 (K + 4) 2^-24 |A||B| (f32
      accumulation in a different order; TF32 is off unless
      AMPRT_CUDA_ALLOW_TF32 is set, which this test refuses);
  attention / attention_grad (cuDNN's fused attention, which rounds p to
      f16/bf16 before p v): 1 ulp + rel max|out|, rel 2e-3 in f16 and
      1.6e-2 in bf16; exact where they run on the host.

Kernels without a CUDA override run the CPU code on managed memory; a few
of them are run too, to check that path. Without a device the script prints
"SKIP: no CUDA device" and exits 0 (lit marks the test UNSUPPORTED through
the cuda-device feature instead). --gpu-backend cpu runs the same script with
a second CPU context, which checks the script itself on a machine without a
GPU.
"""

import argparse
import ctypes as C
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runtime_harness import (Runtime, Buf, MemoryStats, Tensor, tensor_array,
                             i64s, window, NP_STORAGE, bf16_bits_to_f32)

FLOATS = ("f32", "f16", "bf16")
PREC = {"f32": (24, -126), "f16": (11, -14), "bf16": (8, -126),
        "f64": (53, -1022)}


def decode(buf):
    """float64 values of a float Buf (bf16 decoded), else the raw array."""
    if buf.dt == "bf16":
        return bf16_bits_to_f32(buf.arr).astype(np.float64)
    if buf.dt in ("f32", "f16", "f64"):
        return buf.arr.astype(np.float64)
    return buf.arr


def ulp(dt, v):
    p, emin = PREC[dt]
    a = np.abs(v)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(np.where(a > 0, e, emin), emin)
    return np.exp2(e - p + 1)


class Gpu:
    """A second context (normally "cuda") and device copies of Bufs."""

    def __init__(self, rt, backend):
        self.rt = rt
        L = rt.lib
        self.ctx = C.c_void_p()
        st = L.amprt_context_create(backend.encode(), C.byref(self.ctx))
        if st != 0:
            self.error = L.amprt_last_error(None).decode()
            self.ctx = None
            return
        self.error = None
        self.backend = backend
        self.live = []
        # Elements by which each tensor starts past its (aligned)
        # allocation: 1 moves every tensor off the 16/32-byte boundaries
        # that the packet kernels need, so their fallbacks run.
        self.offset = 0

    def upload(self, buf):
        """(device Tensor, host Buf that receives the result)."""
        L = self.rt.lib
        nbytes = buf.arr.nbytes
        p = C.c_void_p()
        assert L.amprt_malloc(self.ctx, nbytes + 64, C.byref(p)) == 0
        self.live.append(p)
        data = p.value + self.offset * buf.arr.itemsize
        if nbytes:
            assert L.amprt_memcpy(self.ctx, C.c_void_p(data),
                                  buf.arr.ctypes.data, nbytes, 1) == 0, \
                self.err()
        back = Buf(np.zeros_like(buf.arr), buf.dt)
        t = Tensor(data if buf.arr.size else None, buf.t.dtype,
                   buf.t.rank, buf.t.shape)
        t._owner = (buf, back)
        return t, back

    def download(self, t, back):
        if back.arr.nbytes:
            assert self.rt.lib.amprt_memcpy(
                self.ctx, back.arr.ctypes.data, t.data, back.arr.nbytes,
                2) == 0, self.err()

    def err(self):
        return self.rt.lib.amprt_last_error(self.ctx).decode()

    def free_all(self):
        for p in self.live:
            self.rt.lib.amprt_free(self.ctx, p)
        self.live = []


def both(rt, gpu, name, *args, shared=False):
    """Runs kernel `name` on copies of the arguments on the CPU and the GPU
    context. Buf arguments are tensors, lists of Bufs tensor arrays; with
    `shared`, a Buf passed more than once is one tensor on each side (views
    into one buffer). Returns (cpu outputs, gpu outputs): a Buf per Buf
    argument (a list of Bufs per list), None for the rest. Statuses and
    messages must agree."""
    cargs, gargs, couts, gouts, pend = [], [], [], [], []
    seen = {}
    for a in args:
        if isinstance(a, Buf) and shared and id(a) in seen:
            for out, v in zip((cargs, gargs, couts, gouts), seen[id(a)]):
                out.append(v)
        elif isinstance(a, Buf):
            c = Buf(a.arr.copy(), a.dt)
            t, back = gpu.upload(a)
            cargs.append(c.ref)
            gargs.append(C.byref(t))
            couts.append(c)
            gouts.append(back)
            pend.append((t, back))
            seen[id(a)] = (cargs[-1], gargs[-1], c, back)
        elif isinstance(a, list):
            cs = [Buf(b.arr.copy(), b.dt) for b in a]
            ups = [gpu.upload(b) for b in a]
            arr = (Tensor * max(1, len(a)))(*[t for t, _ in ups])
            cargs.append(tensor_array(cs))
            gargs.append(arr)
            couts.append(cs)
            gouts.append([b for _, b in ups])
            pend.extend(ups)
        else:
            cargs.append(a)
            gargs.append(a)
            couts.append(None)
            gouts.append(None)
    f = getattr(rt.lib, "amprt_" + name)
    sc = f(rt.ctx, *cargs)
    mc = rt.error()
    sg = f(gpu.ctx, *gargs)
    mg = gpu.err()
    assert sc == sg and mc == mg, (
        "%s: CPU status %d %r, GPU status %d %r" % (name, sc, mc, sg, mg))
    for t, back in pend:
        gpu.download(t, back)
    gpu.free_all()
    return couts, gouts, sc


def same(rt, what, c, g, ulps=0, scale=None, terms=0, atol=0.0):
    """GPU Buf g against CPU Buf c: exact (bits or both NaN) when ulps is 0
    and no scale, else |g - c| <= ulps ulp(dt) + (terms + 4) 2^-24 scale
    + atol."""
    assert c.arr.shape == g.arr.shape, what
    if c.dt not in PREC:
        rt.equal(what, g.arr, c.arr)
        return
    cv, gv = decode(c), decode(g)
    nan = np.isnan(cv)
    assert np.array_equal(nan, np.isnan(gv)), "%s [%s]: NaN positions " \
        "differ (seed %d)" % (what, c.dt, rt.seed)
    cv, gv = np.where(nan, 0, cv), np.where(nan, 0, gv)
    if ulps == 0 and scale is None and not atol:
        ok = np.all((c.bits() == g.bits()) |
                    np.repeat(nan.reshape(-1), c.arr.itemsize))
        assert ok, "%s [%s]: not bit-identical; worst %s (seed %d)" % (
            what, c.dt, np.max(np.abs(cv - gv)) if cv.size else 0, rt.seed)
        return
    tol = ulps * ulp(c.dt, np.maximum(np.abs(cv), np.abs(gv))) + atol
    if scale is not None:
        tol = tol + (terms + 4) * 2.0 ** -24 * np.asarray(scale)
    err = np.abs(cv - gv)
    bad = ~(err <= tol)
    inf = np.isinf(cv) | np.isinf(gv)
    bad = np.where(inf, cv != gv, bad)
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, err - tol, -1)),
                             cv.shape)
        raise AssertionError("%s [%s]: %d of %d off; worst at %s: GPU %r, "
                             "CPU %r, tolerance %.3g (seed %d)"
                             % (what, c.dt, bad.sum(), bad.size, i, gv[i],
                                cv[i], tol[i], rt.seed))


def special(rt, shape, dt):
    """Random values with NaN, +-Inf, zeros, subnormals and ties mixed in."""
    v = rt.rng.standard_normal(shape) * 100
    flat = v.reshape(-1)
    extras = [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 65520.0, 1e-7,
              -3e-8, 2.0 ** -24 * 1.5, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
              1e39, 3.4e38, 1.00390625, 1e-45]
    for i, e in enumerate(extras[:flat.size]):
        flat[rt.rng.integers(flat.size)] = e
    return rt.buf(v, dt) if dt != "f64" else Buf(v, "f64")


# ---------------------------------------------------------------------------
# Elementwise, cast, fill, copies
# ---------------------------------------------------------------------------

def test_cast(rt, gpu):
    dts = ["f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"]
    for s in dts:
        if s in ("f32", "f16", "bf16", "f64"):
            x = special(rt, (33, 31), s)
        elif s == "bool":
            x = Buf(rt.rng.integers(0, 2, (33, 31)), "bool")
        else:
            x = Buf(rt.rng.integers(-300, 300, (33, 31)), s)
        for d in dts:
            c, g, _ = both(rt, gpu, "cast", x, Buf(np.zeros(x.shape,
                                                            NP_STORAGE[d]), d))
            same(rt, "cast %s->%s" % (s, d), c[1], g[1])


def test_binary(rt, gpu):
    shapes = [((4, 5), (4, 5)), ((4, 5), ()), ((3, 1, 5), (4, 1)),
              ((1,), (2, 3)), ((2, 0, 3), (3,)), ((6, 4, 5), (1, 4, 5)),
              ((1, 5), (3, 7, 5))]
    for name in ("add", "sub", "mul", "div"):
        for sa, sb in shapes:
            for da, db, dy in (("f32", "f32", "f32"), ("f16", "f16", "f16"),
                               ("bf16", "bf16", "bf16"),
                               ("f16", "f32", "bf16")):
                a, b = rt.randn(sa, da), rt.randn(sb, db)
                so = np.broadcast_shapes(sa, sb)
                c, g, _ = both(rt, gpu, name, a, b, rt.empty(so, dy))
                same(rt, name, c[2], g[2])
    # Integer add/sub/mul/min/max run on the device; div and mod on the CPU
    # (which reports a division by zero).
    a = Buf(np.array([5, -7, 9], np.int64), "i64")
    z = Buf(np.array([1, 0, 2], np.int64), "i64")
    both(rt, gpu, "div", a, z, Buf(np.zeros(3, np.int64), "i64"))
    for idt in ("i64", "i32"):
        for name in ("add", "sub", "mul", "min", "max", "div", "mod"):
            ia = Buf(rt.rng.integers(-1000, 1000, (4, 3)), idt)
            ib = Buf(rt.rng.integers(1, 50, (3,)), idt)
            c, g, _ = both(rt, gpu, name, ia, ib,
                           Buf(np.zeros((4, 3), np.int64), idt))
            same(rt, "%s %s" % (name, idt), c[2], g[2])
    # Shape and dtype errors: same status and message.
    both(rt, gpu, "add", rt.randn((2, 3), "f32"), rt.randn((4,), "f32"),
         rt.empty((2, 3), "f32"))
    both(rt, gpu, "mul", rt.randn((2, 3), "f32"), rt.randn((3,), "f32"),
         rt.empty((2, 4), "f16"))


def act_tol(name, ydt, x=None, dy=None):
    """Tolerance of an activation or its gradient computed with CUDA's
    transcendental functions: 4 ulp in f32 (6 for the gelus; 1 in
    f16/bf16), plus the
    smallest normal f32 (results in the subnormal range), plus for the
    gelu gradients 16 2^-24 |dy| (1 + |x|): their two terms cancel."""
    if ydt != "f32":
        return dict(ulps=1)
    # gelu: CUDA's erfcf is within 4 ulp, glibc's 1, then two products.
    tol = dict(ulps=6 if "gelu" in name else 4, atol=4 * 2.0 ** -126)
    if name in ("gelu_grad", "fast_gelu_grad"):
        tol.update(scale=np.abs(decode(dy)) * (1 + np.abs(decode(x))),
                   terms=12)
    return tol


def test_activations(rt, gpu):
    for dt in FLOATS:
        for ydt in (dt, "f32"):
            x = special(rt, (7, 129), dt)
            c, g, _ = both(rt, gpu, "relu", x, rt.empty(x.shape, ydt))
            same(rt, "relu", c[1], g[1])
            c, g, _ = both(rt, gpu, "gelu", x, rt.empty(x.shape, ydt))
            same(rt, "gelu", c[1], g[1], **act_tol("gelu", ydt))
            dy, xv = rt.randn((7, 129), dt), rt.randn((7, 129), dt, 2.0)
            c, g, _ = both(rt, gpu, "relu_grad", dy, xv,
                           rt.empty(xv.shape, ydt))
            same(rt, "relu_grad", c[2], g[2])
            c, g, _ = both(rt, gpu, "gelu_grad", dy, xv,
                           rt.empty(xv.shape, ydt))
            same(rt, "gelu_grad", c[2], g[2],
                 **act_tol("gelu_grad", ydt, xv, dy))
    both(rt, gpu, "relu", Buf(np.zeros(3, np.int64), "i64"),
         rt.empty((3,), "f32"))


def test_fill_copy_accumulate(rt, gpu):
    for dt in ("f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"):
        for v in (0.1, -2.5, 65519.0, 1e-8, 3.0):
            y = Buf(np.zeros((5, 17), NP_STORAGE[dt]), dt)
            c, g, _ = both(rt, gpu, "fill", y, C.c_double(v))
            same(rt, "fill %s %g" % (dt, v), c[0], g[0])
    # random_fill: the same bits on the device (f64 math, integer mod).
    for dt in ("f32", "f16", "bf16", "f64", "i64", "i32", "bool"):
        for shape in ((7,), (3, 1000, 1001)):
            y = Buf(np.zeros(shape, NP_STORAGE[dt]), dt)
            c, g, _ = both(rt, gpu, "random_fill", y,
                           C.c_uint64(0x123456789ABCDEF), 0, 1000)
            same(rt, "random_fill %s %s" % (dt, shape), c[0], g[0])
    both(rt, gpu, "random_fill", Buf(np.zeros(4, np.int64), "i64"),
         C.c_uint64(1), 0, 0)  # classes 0: the CPU's error
    x = rt.randn((6, 10), "bf16")
    c, g, _ = both(rt, gpu, "identity", x, rt.empty((6, 10), "bf16"))
    same(rt, "identity", c[1], g[1])
    c, g, _ = both(rt, gpu, "reshape", x, rt.empty((60,), "bf16"))
    same(rt, "reshape", c[1], g[1])
    both(rt, gpu, "reshape", x, rt.empty((61,), "bf16"))
    for bdt in FLOATS:
        for ow in (None, 0, 1):
            buf, val = rt.randn((300,), bdt), rt.randn((300,), "f16")
            o = None if ow is None else Buf(np.array(ow), "bool")
            upd = Buf(np.array(0), "bool")
            c, g, _ = both(rt, gpu, "inplace_accumulate", buf, val, o, upd)
            same(rt, "inplace_accumulate", c[0], g[0])
            same(rt, "inplace_accumulate updated", c[3], g[3])


# ---------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------

def gemm_scale(a, b, ta, tb, alpha):
    A = np.abs(a.f64().T if ta else a.f64())
    B = np.abs(b.f64().T if tb else b.f64())
    return abs(alpha) * A @ B


def test_gemm(rt, gpu):
    for da, db, dy in (("f32", "f32", "f32"), ("f16", "f16", "f16"),
                       ("bf16", "bf16", "bf16"), ("f16", "f16", "f32"),
                       ("bf16", "bf16", "f32"), ("f16", "f32", "f16"),
                       ("f16", "f16", "bf16")):
        for ta in (0, 1):
            for tb in (0, 1):
                M, K, N = 67, 130, 45
                a = rt.randn((K, M) if ta else (M, K), da)
                b = rt.randn((N, K) if tb else (K, N), db)
                for cshape in (None, (N,), (M, 1), (M, N)):
                    cc = rt.randn(cshape, "f32") if cshape else None
                    alpha, beta = 0.75, (1.5 if cc else 0.0)
                    c, g, _ = both(rt, gpu, "gemm", a, b, cc,
                                   rt.empty((M, N), dy), ta, tb,
                                   C.c_float(alpha), C.c_float(beta))
                    sc = gemm_scale(a, b, ta, tb, alpha)
                    if cc:
                        sc = sc + abs(beta) * np.abs(cc.f64())
                    same(rt, "gemm %s%s->%s t%d%d" % (da, db, dy, ta, tb),
                         c[3], g[3], ulps=1, scale=2 * sc, terms=K)
    both(rt, gpu, "gemm", rt.randn((3, 4), "f32"), rt.randn((5, 6), "f32"),
         None, rt.empty((3, 6), "f32"), 0, 0, C.c_float(1), C.c_float(0))
    # A bias row in the output's dtype with beta 1 (a layer's bias): the
    # CUDA side's cuBLASLt BIAS epilogue, for every output dtype it writes
    # directly, both transposes of b, and c of shape (N,) and (1, N).
    for da, dy in (("f32", "f32"), ("f16", "f16"), ("bf16", "bf16"),
                   ("f16", "f32"), ("bf16", "f32")):
        for tb in (0, 1):
            for cshape in ((45,), (1, 45)):
                M, K, N = 67, 130, 45
                a = rt.randn((M, K), da)
                b = rt.randn((N, K) if tb else (K, N), da)
                cc = rt.randn(cshape, dy)
                c, g, _ = both(rt, gpu, "gemm", a, b, cc,
                               rt.empty((M, N), dy), 0, tb, C.c_float(0.75),
                               C.c_float(1))
                sc = gemm_scale(a, b, 0, tb, 0.75) + np.abs(cc.f64())
                same(rt, "gemm bias %s->%s t0%d c%s" % (da, dy, tb, cshape),
                     c[3], g[3], ulps=1, scale=2 * sc, terms=K)
    # gemm_relu (amprt-fuse's Gemm + Relu): as gemm, then relu; with an f32
    # c and beta 1.5 (the broadcast path) and with a bias row in the
    # output's dtype (the epilogue), a NaN kept.
    for dt in FLOATS:
        M, K, N = 67, 130, 45
        va = rt.rng.standard_normal((M, K))
        b = rt.randn((N, K), dt)
        for cc, beta in ((rt.randn((N,), "f32"), 1.5),
                         (rt.randn((N,), dt), 1.0)):
            if beta == 1.0:
                va[5, 7] = np.nan
            a = rt.buf(va, dt)
            c, g, _ = both(rt, gpu, "gemm_relu", a, b, cc,
                           rt.empty((M, N), dt), 0, 1, C.c_float(0.75),
                           C.c_float(beta))
            sc = np.nan_to_num(gemm_scale(a, b, 0, 1, 0.75) +
                               beta * np.abs(cc.f64()))
            same(rt, "gemm_relu %s beta %g" % (dt, beta), c[3], g[3], ulps=1,
                 scale=2 * sc, terms=K)
            if beta == 1.0:
                assert np.isnan(g[3].f64()[5]).all(), \
                    "gemm_relu %s: the NaN row was not kept" % dt
    # A linear layer on [B, S, K] with its bias (amprt-fuse's MatMul + Add),
    # and gemm_act_grad (a product and the ReLU/GELU/FastGELU gradient of
    # it): as the CPU, within the product's rounding.
    for dt in FLOATS:
        B, S, K, N = 3, 23, 130, 45
        a = rt.randn((B, S, K), dt)
        b = rt.randn((N, K), dt)
        cc = rt.randn((N,), dt)
        c, g, _ = both(rt, gpu, "gemm", a, b, cc, rt.empty((B, S, N), dt), 0,
                       1, C.c_float(1), C.c_float(1))
        a2 = rt.buf(a.f64().reshape(B * S, K), dt)
        sc = gemm_scale(a2, b, 0, 1, 1.0).reshape(B, S, N) + np.abs(cc.f64())
        same(rt, "gemm [.., K] bias %s" % dt, c[3], g[3], ulps=1,
             scale=2 * sc, terms=K)
        x = rt.randn((B, S, N), dt)
        for act in (0, 1, 2):
            c, g, _ = both(rt, gpu, "gemm_act_grad", a, b, x,
                           rt.empty((B, S, N), dt), 0, 1, C.c_float(0.5),
                           act)
            sc = gemm_scale(a2, b, 0, 1, 0.5).reshape(B, S, N)
            same(rt, "gemm_act_grad %s act %d" % (dt, act), c[3], g[3],
                 ulps=1, scale=2 * sc, terms=K)


def test_matmul(rt, gpu):
    cases = [((5, 7), (7, 3)), ((2, 5, 7), (7, 3)), ((7,), (7, 3)),
             ((5, 7), (7,)), ((2, 1, 4, 7), (3, 7, 6)), ((3, 4, 7), (3, 7, 2)),
             ((4, 7), (2, 7, 5)), ((2, 3, 64, 96), (2, 3, 96, 80))]
    for dt, ydt in (("f32", "f32"), ("f16", "f16"), ("bf16", "bf16"),
                    ("f16", "f32")):
        for sa, sb in cases:
            a, b = rt.randn(sa, dt), rt.randn(sb, dt)
            ref = a.f64() @ b.f64()
            c, g, _ = both(rt, gpu, "matmul", a, b, rt.empty(ref.shape, ydt))
            sc = np.abs(a.f64()) @ np.abs(b.f64())
            same(rt, "matmul %s x %s" % (sa, sb), c[2], g[2], ulps=1,
                 scale=2 * sc, terms=sa[-1])
        for ta in (0, 1):
            for tb in (0, 1):
                sa = (3, 9, 5) if ta else (3, 5, 9)
                sb = (4, 9) if tb else (9, 4)
                a, b = rt.randn(sa, dt), rt.randn(sb, dt)
                A = np.swapaxes(a.f64(), -1, -2) if ta else a.f64()
                B = b.f64().T if tb else b.f64()
                c, g, _ = both(rt, gpu, "fused_matmul", a, b,
                               rt.empty((3, 5, 4), ydt), ta, tb,
                               C.c_float(0.5))
                same(rt, "fused_matmul t%d%d" % (ta, tb), c[2], g[2], ulps=1,
                     scale=np.abs(A) @ np.abs(B), terms=9)
    both(rt, gpu, "matmul", rt.randn((2, 3), "f32"), rt.randn((4, 5), "f32"),
         rt.empty((2, 5), "f32"))


# ---------------------------------------------------------------------------
# Loss scaling, optimizers
# ---------------------------------------------------------------------------

def test_unscale_finite(rt, gpu):
    for reset in (1, 0):
        for start in (0, 1):
            for bad in (False, True):
                ins = [rt.randn((1000,), "f16", 100.0),
                       rt.randn((5000,), "bf16"), rt.randn((7, 3), "f32"),
                       rt.randn((0,), "f32"), rt.randn((9000,), "f32")]
                if bad:
                    ins[4].arr[8191] = np.inf
                outs = [rt.empty(b.shape, "f32") for b in ins[:3]] + \
                    [rt.empty((0,), "f16"), rt.empty((9000,), "bf16")]
                s = Buf(np.array(2.0 ** -7, np.float32), "f32")
                flag = Buf(np.array(start), "bool")
                c, g, _ = both(rt, gpu, "multi_tensor_unscale", ins, outs,
                               len(ins), s, flag, reset)
                for i in range(len(ins)):
                    same(rt, "multi_tensor_unscale", c[1][i], g[1][i])
                same(rt, "unscale flag", c[4], g[4])
                flag = Buf(np.array(start), "bool")
                c, g, _ = both(rt, gpu, "multi_tensor_all_finite", ins,
                               len(ins), flag, reset)
                same(rt, "all_finite flag", c[2], g[2])
    # In place (outs alias ins) on the GPU: compare with the CPU on copies.
    x = rt.randn((3000,), "f32")
    t, back = gpu.upload(x)
    flag, fb = gpu.upload(Buf(np.array(0), "bool"))
    s, _ = gpu.upload(Buf(np.array(0.5, np.float32), "f32"))
    arr = (Tensor * 1)(t)
    assert rt.lib.amprt_multi_tensor_unscale(gpu.ctx, arr, arr, 1,
                                             C.byref(s), C.byref(flag),
                                             1) == 0, gpu.err()
    gpu.download(t, back)
    gpu.download(flag, fb)
    gpu.free_all()
    rt.equal("unscale in place", back.arr, x.arr * np.float32(0.5))
    rt.equal("unscale in place flag", fb.arr, np.array(1, np.uint8))
    both(rt, gpu, "multi_tensor_unscale", [rt.randn((3,), "f32")],
         [rt.empty((4,), "f32")], 1, Buf(np.array(1.0, np.float32), "f32"),
         Buf(np.array(1), "bool"), 1)


def test_unscale_check_gate(rt, gpu):
    """The lowering's fused loss-scaling calls: the products' check, and the
    gate alone or into an accumulator, on special values."""
    for inv in (2.0 ** -7, 4.0):
        s = Buf(np.array(inv, np.float32), "f32")
        for reset in (1, 0):
            for start in (0, 1):
                ins = [special(rt, (1000,), "f16"), rt.randn((5000,), "bf16"),
                       rt.randn((0,), "f32"), rt.randn((9000,), "f32", 1e37)]
                flag = Buf(np.array(start), "bool")
                c, g, _ = both(rt, gpu, "multi_tensor_unscale_check", ins[1:],
                               3, s, flag, reset)
                same(rt, "unscale_check flag", c[3], g[3])
                flag = Buf(np.array(start), "bool")
                c, g, _ = both(rt, gpu, "multi_tensor_unscale_check", ins,
                               4, s, flag, reset)
                same(rt, "unscale_check flag (Inf/NaN)", c[3], g[3])
        for xdt in FLOATS:
            x = special(rt, (4099,), xdt)
            for ydt in FLOATS:
                for gate in (0, 1):
                    gb = Buf(np.array(gate), "bool")
                    c, g, _ = both(rt, gpu, "unscale_gate", x, s, gb,
                                   rt.empty((4099,), ydt))
                    same(rt, "unscale_gate", c[3], g[3])
                    for ow in (None, 0, 1):
                        o = None if ow is None else Buf(np.array(ow), "bool")
                        upd = Buf(np.array(0), "bool")
                        c, g, _ = both(rt, gpu, "unscale_gate_accumulate",
                                       rt.randn((4099,), ydt), x, s, gb, o,
                                       upd)
                        same(rt, "unscale_gate_accumulate", c[0], g[0])
                        same(rt, "unscale_gate_accumulate updated", c[5],
                             g[5])
                # The early accumulation's checked accumulation: buffer, flag
                # and updated exact.
                for ow in (None, 0, 1):
                    for start in (0, 1):
                        o = None if ow is None else Buf(np.array(ow), "bool")
                        c, g, _ = both(rt, gpu, "unscale_check_accumulate",
                                       rt.randn((4099,), ydt), x, s,
                                       Buf(np.array(start), "bool"), o,
                                       Buf(np.array(0), "bool"))
                        same(rt, "unscale_check_accumulate", c[0], g[0])
                        same(rt, "unscale_check_accumulate flag", c[3], g[3])
                        same(rt, "unscale_check_accumulate updated", c[5], g[5])
    # Bad calls: the CPU's status and message.
    both(rt, gpu, "unscale_gate", rt.randn((3,), "f32"),
         Buf(np.array(1.0, np.float32), "f32"), Buf(np.array(1), "bool"),
         rt.empty((4,), "f32"))
    # The gate after early accumulation: zero bytes unless keep, nothing
    # written with keep set; tensors of every size (an unaligned tail, an
    # empty one), the flag read on the device.
    for keep in (0, 1):
        bufs = [special(rt, (100003,), "f32"), special(rt, (17,), "f16"),
                rt.randn((0,), "f32"), rt.randn((4096, 3), "bf16"),
                Buf(rt.rng.integers(-9, 9, (5,)), "i64")]
        c, g, _ = both(rt, gpu, "multi_tensor_zero_unless", bufs, len(bufs),
                       Buf(np.array(keep), "bool"))
        for cb, gb in zip(c[0], g[0]):
            rt.equal("zero_unless keep=%d" % keep, gb.arr.view(np.uint8),
                     cb.arr.view(np.uint8))
    both(rt, gpu, "multi_tensor_zero_unless", [rt.randn((2,), "f32")], 1,
         Buf(np.array([1, 0]), "bool"))


def test_loss_scaler(rt, gpu):
    for tdt in ("i64", "i32"):
        scale = Buf(np.array(65536.0, np.float32), "f32")
        tracker = Buf(np.array(0), tdt)
        for step in range(12):
            fin = Buf(np.array(int(step % 5 != 3)), "bool")
            c, g, _ = both(rt, gpu, "loss_scaler_update", scale, tracker, fin,
                           C.c_float(2.0), C.c_float(0.5), 3, C.c_float(1.0),
                           C.c_float(2.0 ** 24))
            same(rt, "loss_scaler scale", c[0], g[0])
            same(rt, "loss_scaler tracker", c[1], g[1])
            scale, tracker = c[0], c[1]
    both(rt, gpu, "loss_scaler_update", scale, tracker,
         Buf(np.array(1), "bool"), C.c_float(0.5), C.c_float(0.5), 3,
         C.c_float(1.0), C.c_float(2.0))


def opt_state(rt, shapes, gdt):
    params = [rt.randn(s, "f32") for s in shapes]
    grads = [rt.randn(s, gdt, 0.1) for s in shapes]
    m1 = [rt.randn(s, "f32", 0.01) for s in shapes]
    m2 = [Buf(np.abs(rt.rng.standard_normal(s) * 1e-3).astype(np.float32),
              "f32") for s in shapes]
    return params, grads, m1, m2


def test_sgd(rt, gpu):
    shapes = [(300, 17), (5,), (0,), (9000,)]
    for gdt in FLOATS:
        for momentum, damp, wd, nest in ((0.0, 0.0, 0.0, 0), (0.9, 0.0, 1e-4, 1),
                                         (0.9, 0.1, 0.0, 0)):
            params, grads, bufs, _ = opt_state(rt, shapes, gdt)
            step = Buf(np.array(0, np.int64), "i64")
            for it in range(3):
                for upd in (1, 0):
                    u = Buf(np.array(upd), "bool")
                    done = Buf(np.array(1 - upd), "bool")
                    lr = Buf(np.array(0.05, np.float32), "f32")
                    c, g, _ = both(rt, gpu, "sgd", len(shapes), params, grads,
                                   bufs if momentum else None, lr, step,
                                   C.c_float(momentum), C.c_float(damp),
                                   C.c_float(wd), nest, u, done)
                    for i in range(len(shapes)):
                        same(rt, "sgd param", c[1][i], g[1][i])
                        if momentum:
                            same(rt, "sgd momentum", c[3][i], g[3][i])
                        if not upd:
                            rt.equal("sgd skipped", g[1][i].bits(),
                                     params[i].bits())
                    same(rt, "sgd step", c[5], g[5])
                    same(rt, "sgd updated", c[11], g[11])
                    params = c[1]
                    bufs = c[3] if momentum else bufs
                    step = c[5]


def test_adamw(rt, gpu):
    shapes = [(257, 33), (7,), (0,), (10000,)]
    for gdt in FLOATS:
        for mode in (0, 1, 2):
            for correct in (1, 0):
                params, grads, m1, m2 = opt_state(rt, shapes, gdt)
                for step in (1, 2, 7):
                    for upd in (1, 0):
                        c, g, _ = both(
                            rt, gpu, "adamw", len(shapes), params, grads, m1,
                            m2, Buf(np.array(1e-3, np.float32), "f32"),
                            Buf(np.array(step, np.int64), "i64"),
                            C.c_float(0.9), C.c_float(0.999),
                            C.c_float(1e-8), C.c_float(0.01), mode, correct,
                            Buf(np.array(upd), "bool"),
                            Buf(np.array(1 - upd), "bool"))
                        for i in range(len(shapes)):
                            for j, what in ((1, "param"), (3, "m1"),
                                            (4, "m2")):
                                same(rt, "adamw %s" % what, c[j][i], g[j][i],
                                     ulps=2)
                            if not upd:
                                rt.equal("adamw skipped", g[1][i].bits(),
                                         params[i].bits())
                        same(rt, "adamw updated", c[14], g[14])
                        # Continue from the CPU's state: errors do not pile up.
                        params, m1, m2 = c[1], c[3], c[4]
    p, gr, a, b = opt_state(rt, [(3,)], "f32")
    both(rt, gpu, "adamw", 1, p, gr, a, b,
         Buf(np.array(1e-3, np.float32), "f32"),
         Buf(np.array(1, np.int64), "i64"), C.c_float(0.9), C.c_float(0.999),
         C.c_float(1e-8), C.c_float(0.0), 3, 1, None, None)


# ---------------------------------------------------------------------------
# Softmax, losses, reductions
# ---------------------------------------------------------------------------

def test_softmax(rt, gpu):
    for dt in FLOATS:
        for shape in ((4, 10), (3, 5, 1000), (1, 3), (0, 7), (6, 4097)):
            for axis in (-1, 0, 1):  # 0 and 1: strided rows (3-D shape)
                x = rt.randn(shape, dt, 3.0)
                n = shape[axis]
                tol = dict(ulps=1) if dt != "f32" else dict(
                    ulps=4, scale=1.0, terms=n)
                c, g, _ = both(rt, gpu, "softmax", x, axis,
                               rt.empty(shape, dt))
                same(rt, "softmax", c[2], g[2], **tol)
                c2, g2, _ = both(rt, gpu, "log_softmax", x, axis,
                                 rt.empty(shape, dt))
                # |x - max - log(sum)|: cancellation, so an absolute part
                # for every dtype.
                ltol = dict(ulps=tol["ulps"], scale=np.abs(decode(x)) + 8,
                            terms=n)
                same(rt, "log_softmax", c2[2], g2[2], **ltol)
                dy = rt.randn(shape, dt)
                c3, g3, _ = both(rt, gpu, "softmax_grad", dy, c[2], axis,
                                 rt.empty(shape, dt))
                gtol = dict(ulps=tol["ulps"], terms=n,
                            scale=4.0 * np.max(np.abs(decode(dy)),
                                               initial=0))
                same(rt, "softmax_grad", c3[3], g3[3], **gtol)
    both(rt, gpu, "softmax", rt.randn((2, 3), "f32"), 2, rt.empty((2, 3),
                                                                  "f32"))


def test_cross_entropy(rt, gpu):
    for dt in FLOATS:
        for shape in ((16, 10), (4, 7, 3, 2), (3, 1000)):
            N, Cn = shape[0], shape[1]
            lshape = (N,) + shape[2:]
            for ldt in ("i64", "i32"):
                for red in (0, 1, 2):
                    for ign in (0, 1):
                        for weighted in (False, True):
                            scores = rt.randn(shape, dt, 2.0)
                            lab = rt.rng.integers(0, Cn, lshape)
                            if ign:
                                lab.reshape(-1)[::3] = 2
                            labels = Buf(lab, ldt)
                            w = rt.uniform((Cn,), dt, 0.5, 2.0) \
                                if weighted else None
                            loss = rt.empty(lshape if red == 0 else (), "f32")
                            lp = rt.empty(shape, dt)
                            c, g, _ = both(rt, gpu,
                                           "softmax_cross_entropy_loss",
                                           scores, labels, w, red, ign, 2,
                                           loss, lp)
                            same(rt, "sce log_prob", c[7], g[7],
                                 ulps=1 if dt != "f32" else 4,
                                 scale=np.abs(decode(scores)) + 8, terms=4)
                            same(rt, "sce loss", c[6], g[6], ulps=4)
                            dl = rt.randn(lshape if red == 0 else (), "f32")
                            c2, g2, _ = both(
                                rt, gpu, "softmax_cross_entropy_loss_grad",
                                dl, c[7], labels, w, red, ign, 2,
                                rt.empty(shape, dt))
                            same(rt, "sce grad", c2[7], g2[7],
                                 ulps=1 if dt != "f32" else 4)
    # A label out of range: the same status and message (first bad index).
    lab = Buf(np.array([1, 5, -1, 0], np.int64), "i64")
    both(rt, gpu, "softmax_cross_entropy_loss", rt.randn((4, 3), "f32"), lab,
         None, 2, 0, -100, rt.empty((), "f32"), None)
    both(rt, gpu, "softmax_cross_entropy_loss_grad",
         Buf(np.array(1.0, np.float32), "f32"), rt.randn((4, 3), "f32"), lab,
         None, 2, 0, -100, rt.empty((4, 3), "f32"))


def test_reduce_sum(rt, gpu):
    for dt in FLOATS:
        for shape, axes, keep in (((4, 5, 6), [1], 1), ((4, 5, 6), [0, 2], 0),
                                  ((3000, 7), [0], 0), ((7, 3000), [1], 1),
                                  ((2, 3), [], 0), ((50, 40, 30), [-1, 0], 1),
                                  ((5, 0), [1], 0), ((700, 3000), [], 0),
                                  ((3, 20, 9000), [2, 1], 1)):
            x = rt.randn(shape, dt)
            ref = np.sum(decode(x), axis=tuple(axes) or None, keepdims=bool(
                keep))
            sc = np.sum(np.abs(decode(x)), axis=tuple(axes) or None,
                        keepdims=bool(keep))
            count = max(1, x.arr.size // max(1, np.size(ref)))
            for name, div in (("reduce_sum", 1), ("reduce_mean", count)):
                for ydt in (dt, "f32"):
                    c, g, _ = both(rt, gpu, name, x, i64s(axes),
                                   len(axes), keep, 0, rt.empty(
                                       np.shape(ref), ydt))
                    same(rt, name, c[5], g[5],
                         ulps=1 if ydt != "f32" else 2,
                         scale=sc / div if ydt == "f32" else None, terms=0)
            # max / min: the CPU's walk (first NaN, first of equal values,
            # so +0 / -0 ties too) whether a thread or a block reduces.
            xm = special(rt, shape, dt) if dt == "f32" else x
            xm.arr.reshape(-1)[::7] = 0  # many +0 ties
            if dt == "f32" and xm.arr.size > 3:
                xm.arr.reshape(-1)[1::11] = -0.0
            for name in ("reduce_max", "reduce_min"):
                c, g, _ = both(rt, gpu, name, xm, i64s(axes), len(axes),
                               keep, 0, rt.empty(np.shape(ref), dt))
                same(rt, name, c[5], g[5])
    for name in ("reduce_max", "reduce_min"):
        # NaN-free and with NaNs, in long rows that a block reduces; rows
        # whose extreme is a signed zero: -0 at 255, +0 at 256 (threads 255
        # and 0 of the block), so only the first index may win.
        sgn = -1.0 if name == "reduce_max" else 1.0
        for n in (5000, 300):
            x = rt.randn((3, n), "f32")
            x.arr[1, n - 100] = np.nan
            x.arr[2] = sgn * (np.abs(x.arr[2]) + 0.5)
            x.arr[2, 255] = -0.0
            x.arr[2, 256] = 0.0
            c, g, _ = both(rt, gpu, name, x, i64s([1]), 1, 0, 0,
                           rt.empty((3,), "f32"))
            same(rt, "%s rows of %d" % (name, n), c[5], g[5])
    both(rt, gpu, "reduce_sum", rt.randn((2, 3), "f32"), i64s([1, 1]), 2, 0,
         0, rt.empty((2,), "f32"))
    # Integer sum, max and min (exact; the CUDA backend runs the CPU code
    # on managed memory); the integer mean is refused alike.
    for dt in ("i64", "i32"):
        x = Buf(rt.rng.integers(-2 ** 30, 2 ** 30, (4, 6, 5)), dt)
        for name in ("reduce_sum", "reduce_max", "reduce_min"):
            c, g, _ = both(rt, gpu, name, x, i64s([1]), 1, 0, 0,
                           Buf(np.zeros((4, 5), np.int64), dt))
            same(rt, "%s %s" % (name, dt), c[5], g[5])
    both(rt, gpu, "reduce_mean", Buf(np.zeros((2, 3), np.int64), "i64"),
         i64s([1]), 1, 0, 0, Buf(np.zeros((2,), np.int64), "i64"))


# ---------------------------------------------------------------------------
# The rest of Elementwise.cpp: binary, comparisons, unary, select, sum
# ---------------------------------------------------------------------------

TRANSCENDENTAL = ("sigmoid", "tanh", "exp", "log", "gelu", "fast_gelu",
                  "erf", "sin", "cos")


def test_more_binary(rt, gpu):
    shapes = [((4, 5), (4, 5)), ((4, 5), ()), ((3, 1, 5), (4, 1)),
              ((2, 0, 3), (3,))]
    for name in ("mod", "pow", "min", "max"):
        for sa, sb in shapes:
            for da, db, dy in (("f32", "f32", "f32"), ("f16", "f16", "f16"),
                               ("bf16", "f32", "bf16")):
                a, b = rt.randn(sa, da, 3.0), rt.randn(sb, db, 2.0)
                so = np.broadcast_shapes(sa, sb)
                c, g, _ = both(rt, gpu, name, a, b, rt.empty(so, dy))
                ulps = 0 if name != "pow" else (4 if dy == "f32" else 1)
                same(rt, name, c[2], g[2], ulps=ulps)
    # NaN propagates through min/max; ties keep a.
    a = Buf(np.array([np.nan, 1.0, -0.0, 2.0], np.float32), "f32")
    b = Buf(np.array([1.0, np.nan, 0.0, 2.0], np.float32), "f32")
    for name in ("min", "max"):
        c, g, _ = both(rt, gpu, name, a, b, rt.empty((4,), "f32"))
        same(rt, name + " specials", c[2], g[2])
    for name in ("less", "greater", "equal"):
        for sa, sb in shapes:
            for da, db in (("f32", "f32"), ("f16", "bf16")):
                a = rt.randn(sa, da)
                b = rt.randn(sb, db)
                if sa == sb and da == db:
                    b.arr.reshape(-1)[::2] = a.arr.reshape(-1)[::2]
                so = np.broadcast_shapes(sa, sb)
                c, g, _ = both(rt, gpu, name, a, b, rt.empty(so, "bool"))
                same(rt, name, c[2], g[2])
    # Integers and bools of one dtype compare as integers; errors are the
    # CPU's (mixed integer dtypes stay there).
    for name in ("less", "greater", "equal"):
        for idt in ("i64", "i32", "bool"):
            hi = 2 if idt == "bool" else 5
            ia = Buf(rt.rng.integers(0, hi, (3, 4)), idt)
            ib = Buf(rt.rng.integers(0, hi, (4,)), idt)
            c, g, _ = both(rt, gpu, name, ia, ib, rt.empty((3, 4), "bool"))
            same(rt, "%s %s" % (name, idt), c[2], g[2])
    both(rt, gpu, "less", Buf(np.array([1]), "i64"),
         Buf(np.array([1], np.int32), "i32"), rt.empty((1,), "bool"))
    both(rt, gpu, "less", rt.randn((2, 3), "f32"), rt.randn((4,), "f32"),
         rt.empty((2, 3), "bool"))
    both(rt, gpu, "pow", rt.randn((2,), "f32"), rt.randn((2,), "f32"),
         rt.empty((2,), "i64"))


def test_more_unary(rt, gpu):
    for dt in FLOATS:
        for ydt in (dt, "f32"):
            x = special(rt, (7, 129), dt)
            for name in ("neg", "abs", "sqrt", "reciprocal", "floor", "ceil",
                         "round") + TRANSCENDENTAL:
                tol = act_tol(name, ydt) if name in TRANSCENDENTAL else {}
                c, g, _ = both(rt, gpu, name, x, rt.empty(x.shape, ydt))
                same(rt, name, c[1], g[1], **tol)
            dy, xv = rt.randn((7, 129), dt), rt.randn((7, 129), dt, 3.0)
            for name in ("sigmoid_grad", "tanh_grad", "fast_gelu_grad"):
                tol = act_tol(name, ydt, xv, dy) \
                    if name == "fast_gelu_grad" else {}
                c, g, _ = both(rt, gpu, name, dy, xv, rt.empty(xv.shape, ydt))
                same(rt, name, c[2], g[2], **tol)
            for name in ("isnan", "isinf"):
                c, g, _ = both(rt, gpu, name, x, rt.empty(x.shape, "bool"))
                same(rt, name, c[1], g[1])
    bits = Buf(rt.rng.integers(0, 2, (300,)), "bool")
    c, g, _ = both(rt, gpu, "logical_not", bits, rt.empty((300,), "bool"))
    same(rt, "logical_not", c[1], g[1])
    both(rt, gpu, "logical_not", rt.randn((3,), "f32"),
         rt.empty((3,), "bool"))
    both(rt, gpu, "isnan", rt.randn((3,), "f32"), rt.empty((4,), "bool"))


def test_slopes_sign_logic(rt, gpu):
    """sign, leaky_relu, quick_gelu and their gradients; <=, >= and the
    logical ops."""
    for dt in FLOATS:
        for ydt in (dt, "f32"):
            x = special(rt, (7, 129), dt)
            c, g, _ = both(rt, gpu, "sign", x, rt.empty(x.shape, ydt))
            same(rt, "sign", c[1], g[1])
            a = C.c_float(0.1)
            c, g, _ = both(rt, gpu, "leaky_relu", x, a, rt.empty(x.shape, ydt))
            same(rt, "leaky_relu", c[2], g[2])
            q = C.c_float(1.702)
            c, g, _ = both(rt, gpu, "quick_gelu", x, q, rt.empty(x.shape, ydt))
            same(rt, "quick_gelu", c[2], g[2], **act_tol("quick_gelu", ydt))
            dy, xv = rt.randn((7, 129), dt), rt.randn((7, 129), dt, 3.0)
            c, g, _ = both(rt, gpu, "leaky_relu_grad", dy, xv, a,
                           rt.empty(xv.shape, ydt))
            same(rt, "leaky_relu_grad", c[3], g[3])
            c, g, _ = both(rt, gpu, "quick_gelu_grad", dy, xv, q,
                           rt.empty(xv.shape, ydt))
            tol = act_tol("quick_gelu_grad", ydt)
            if ydt == "f32":  # two terms that cancel, as the gelu gradients
                tol.update(scale=np.abs(decode(dy)) * (1 + np.abs(decode(xv))),
                           terms=12)
            same(rt, "quick_gelu_grad", c[3], g[3], **tol)
    for name in ("less_or_equal", "greater_or_equal"):
        for da, db in (("f32", "f16"), ("bf16", "bf16"), ("i64", "i64")):
            a = special(rt, (4, 33), da) if da != "i64" else \
                Buf(rt.rng.integers(-3, 3, (4, 33)), "i64")
            b = special(rt, (33,), db) if db != "i64" else \
                Buf(rt.rng.integers(-3, 3, (33,)), "i64")
            c, g, _ = both(rt, gpu, name, a, b, rt.empty((4, 33), "bool"))
            same(rt, name, c[2], g[2])
    for name in ("logical_and", "logical_or", "logical_xor"):
        a = Buf(rt.rng.integers(0, 2, (5, 1, 7)), "bool")
        b = Buf(rt.rng.integers(0, 2, (3, 7)), "bool")
        c, g, _ = both(rt, gpu, name, a, b, rt.empty((5, 3, 7), "bool"))
        same(rt, name, c[2], g[2])
        # Not bools: the CPU's error.
        both(rt, gpu, name, rt.randn((3,), "f32"), rt.randn((3,), "f32"),
             rt.empty((3,), "bool"))


def test_where_sum_scale(rt, gpu):
    for dt in ("f32", "f16", "bf16", "i64", "bool"):
        for sc, sa, sb in (((6, 5), (6, 5), (6, 5)), ((6, 1), (5,), ()),
                           ((), (2, 3), (2, 3)), ((0, 3), (3,), (1, 3))):
            cond = Buf(rt.rng.integers(0, 2, sc), "bool")
            if dt in FLOATS:
                a, b = rt.randn(sa, dt), rt.randn(sb, dt)
            else:
                a = Buf(rt.rng.integers(0, 2 if dt == "bool" else 99, sa), dt)
                b = Buf(rt.rng.integers(0, 2 if dt == "bool" else 99, sb), dt)
            so = np.broadcast_shapes(sc, sa, sb)
            c, g, _ = both(rt, gpu, "where", cond, a, b, rt.empty(so, dt))
            same(rt, "where " + dt, c[3], g[3])
    both(rt, gpu, "where", Buf(np.array([1, 0]), "bool"),
         rt.randn((2,), "f32"), rt.randn((2,), "f16"), rt.empty((2,), "f32"))
    for shapes, dts, ydt in (([(4, 5)], ["f32"], "f32"),
                             ([(4, 5), (5,), (4, 1)], ["f16", "f32", "bf16"],
                              "f32"),
                             ([(3, 2)] * 4, ["bf16"] * 4, "bf16"),
                             ([(2, 0), (0,)], ["f32", "f32"], "f16")):
        ins = [rt.randn(s, d, 10.0) for s, d in zip(shapes, dts)]
        so = np.broadcast_shapes(*shapes)
        c, g, _ = both(rt, gpu, "sum", ins, len(ins), rt.empty(so, ydt))
        same(rt, "sum", c[2], g[2])
    # Outputs written over an input (the lowering's ReuseInputs.cpp): sum
    # over its second input (mixed dtypes), add over a, relu in place; the
    # GPU's results against the CPU's on separate buffers.
    a, b = rt.randn((7, 300), "f16"), rt.randn((7, 300), "f32")
    c, _, _ = both(rt, gpu, "sum", [a, b], 2, rt.empty((7, 300), "f32"))
    ta, _ = gpu.upload(a)
    tb, bb = gpu.upload(b)
    arr = (Tensor * 2)(ta, tb)
    assert rt.lib.amprt_sum(gpu.ctx, arr, 2, C.byref(tb)) == 0, gpu.err()
    gpu.download(tb, bb)
    gpu.free_all()
    same(rt, "sum in place of input 1", c[2], bb)
    for name, args in (("add", (rt.randn((5, 64), "f32"),
                                rt.randn((64,), "f16"))),
                       ("relu", (rt.randn((5, 64), "bf16"),))):
        c, _, _ = both(rt, gpu, name, *args, rt.empty((5, 64), args[0].dt))
        ups = [gpu.upload(x) for x in args]
        assert getattr(rt.lib, "amprt_" + name)(
            gpu.ctx, *[C.byref(t) for t, _ in ups], C.byref(ups[0][0])) == 0, \
            gpu.err()
        gpu.download(*ups[0])
        gpu.free_all()
        same(rt, name + " in place", c[-1], ups[0][1])
    both(rt, gpu, "sum", [rt.randn((2,), "f32"), rt.randn((3,), "f32")], 2,
         rt.empty((2,), "f32"))
    for sdt in ("f32", "f16", "f64", "i64"):
        for down in (0, 1):
            x = special(rt, (5, 40), "f16")
            s = {"f16": Buf(np.array(0.37, np.float16), "f16"),
                 "i64": Buf(np.array(3), "i64")}.get(sdt) or \
                Buf(np.array(0.37), sdt)
            c, g, _ = both(rt, gpu, "scale", x, s, down,
                           rt.empty(x.shape, "f32"))
            same(rt, "scale", c[3], g[3])
    both(rt, gpu, "scale", rt.randn((3,), "f32"), rt.randn((2,), "f32"), 0,
         rt.empty((3,), "f32"))


# ---------------------------------------------------------------------------
# Shape.cpp: transpose, expand, gather and its gradient
# ---------------------------------------------------------------------------

def test_shape_ops(rt, gpu):
    for dt in ("f32", "f16", "i64", "bool"):
        x = (rt.randn((2, 3, 4, 5), dt) if dt in FLOATS else
             Buf(rt.rng.integers(0, 2, (2, 3, 4, 5)), dt))
        for perm in ([0, 2, 1, 3], [3, 2, 1, 0], [1, 0, 3, 2], None):
            so = x.shape[::-1] if perm is None else tuple(x.shape[p]
                                                          for p in perm)
            c, g, _ = both(rt, gpu, "transpose", x,
                           i64s(perm) if perm else None, len(perm or []),
                           rt.empty(so, dt))
            same(rt, "transpose %s" % perm, c[3], g[3])
        c, g, _ = both(rt, gpu, "expand", rt.randn((3, 1, 5), "bf16"),
                       rt.empty((2, 3, 4, 5), "bf16"))
        same(rt, "expand", c[1], g[1])
    for dt in ("f32", "bf16", "i64", "bool"):
        x = (rt.randn((2, 3, 4), dt) if dt in FLOATS else
             Buf(rt.rng.integers(0, 2, (2, 3, 4)), dt))
        for pads, so in (([0, 1, 2, 1, 0, 3], (3, 4, 9)),
                         ([1, -1, 0, 0, 2, -3], (3, 4, 1)),
                         ([0, 5, 7, 0, 4, 9], (2, 12, 20))):
            for mode in range(4):
                c, g, _ = both(rt, gpu, "pad", x, i64s(pads), 6, mode,
                               C.c_double(-1.7), rt.empty(so, dt))
                same(rt, "pad %s mode %d" % (pads, mode), c[5], g[5])
    # resize: the CPU's taps and sums (the same bits); resize_grad adds
    # with atomics, in another order.
    for scales, so in (([1, 1, 2, 1.5], (2, 3, 10, 6)),
                       ([1, 1, 0.6, 0.5], (2, 3, 3, 2))):
        sc = Buf(np.array(scales, np.float32), "f32")
        for mode, coord, nearest, excl in (
                (0, 0, 0, 0), (0, 1, 2, 0), (0, 4, 1, 0), (1, 0, 0, 0),
                (1, 2, 0, 0), (1, 3, 0, 0), (1, 5, 0, 0), (2, 0, 0, 0),
                (2, 3, 0, 1), (2, 2, 0, 0)):
            for dt in FLOATS:
                x = rt.randn((2, 3, 5, 4), dt)
                c, g, _ = both(rt, gpu, "resize", x, sc, mode, coord, nearest,
                               -0.75, excl, rt.empty(so, dt))
                same(rt, "resize", c[7], g[7])
                dy = rt.randn(so, dt)
                c, g, _ = both(rt, gpu, "resize_grad", dy, sc, mode, coord,
                               nearest, -0.75, excl,
                               rt.empty((2, 3, 5, 4), dt))
                same(rt, "resize_grad", c[7], g[7], ulps=1,
                     scale=8 * np.abs(decode(dy)).max(), terms=16)
    both(rt, gpu, "resize", rt.randn((2, 3), "f32"),
         Buf(np.array([1.0], np.float32), "f32"), 0, 0, 0, -0.75, 0,
         rt.empty((2, 6), "f32"))  # the CPU's error
    both(rt, gpu, "pad", rt.randn((2, 0), "f32"), i64s([0, 1, 0, 0]), 4, 2,
         C.c_double(0), rt.empty((2, 1), "f32"))  # the CPU's error
    both(rt, gpu, "transpose", rt.randn((2, 3), "f32"), i64s([0, 0]), 2,
         rt.empty((2, 3), "f32"))
    both(rt, gpu, "expand", rt.randn((3, 2), "f32"), rt.empty((3, 4), "f32"))
    for dt in ("f32", "f16", "i64"):
        data = (rt.randn((50, 16), dt) if dt in FLOATS else
                Buf(rt.rng.integers(0, 1000, (50, 16)), dt))
        for idt in ("i64", "i32"):
            for axis, ishape in ((0, (4, 9)), (1, (3,)), (-1, ())):
                n = data.shape[axis]
                idx = Buf(rt.rng.integers(-n, n, ishape), idt)
                so = np.take(np.zeros(data.shape), np.zeros(ishape, int),
                             axis=axis).shape
                c, g, _ = both(rt, gpu, "gather", data, idx, axis,
                               rt.empty(so, dt))
                same(rt, "gather", c[3], g[3])
    for dt in FLOATS:
        # Many repeats: atomics sum the rows that share an index.
        idx = Buf(rt.rng.integers(-20, 20, (8, 64)), "i64")
        dy = rt.randn((8, 64, 33), dt)
        c, g, _ = both(rt, gpu, "gather_grad", dy, idx, 0,
                       rt.empty((20, 33), dt))
        sc = np.zeros((20, 33))
        np.add.at(sc, np.mod(idx.arr.reshape(-1), 20),
                  np.abs(decode(dy)).reshape(-1, 33))
        same(rt, "gather_grad", c[3], g[3], ulps=1, scale=sc, terms=64)
    bad = Buf(np.array([1, 50, 2], np.int64), "i64")
    both(rt, gpu, "gather", rt.randn((50, 4), "f32"), bad, 0,
         rt.empty((3, 4), "f32"))
    both(rt, gpu, "gather_grad", rt.randn((3, 4), "f32"), bad, 0,
         rt.empty((50, 4), "f32"))


def test_concat_slice(rt, gpu):
    for dt in ("f32", "f16", "i64", "bool"):
        def mk(shape):
            hi = 2 if dt == "bool" else 2 ** 40
            return (rt.randn(shape, dt) if dt in FLOATS else
                    Buf(rt.rng.integers(0, hi, shape), dt))
        for axis, shapes in ((1, [(2, 1, 4), (2, 3, 4), (2, 0, 4),
                                  (2, 2, 4)]),
                             (-1, [(3, 5), (3, 1)]), (0, [(4, 2, 3)])):
            parts = [mk(sh) for sh in shapes]
            so = np.concatenate([np.zeros(sh) for sh in shapes],
                                axis=axis).shape
            c, g, _ = both(rt, gpu, "concat", parts, len(parts), axis,
                           rt.empty(so, dt))
            same(rt, "concat axis %d" % axis, c[3], g[3])
        x = mk((4, 5, 6))
        for st, en, ax, sp in (([0, 1], [2, 3], [0, 2], [1, 1]),
                               ([-1], [-100], [2], [-2]),
                               ([3, 4, 5], [-100, -100, 0], [0, 1, 2],
                                [-1, -2, -3]),
                               ([1, 0], [100, 3], [1, 2], [1, 2]),
                               ([2], [1], [1], [1])):
            sl = [slice(None)] * 3
            for s_, e_, a_, p_ in zip(st, en, ax, sp):
                sl[a_] = slice(s_, None if e_ == -100 else e_, p_)
            so = np.zeros((4, 5, 6))[tuple(sl)].shape
            en2 = [e_ if e_ != -100 else -(2 ** 63) for e_ in en]
            c, g, _ = both(rt, gpu, "slice", x, i64s(st), i64s(en2),
                           i64s(ax), i64s(sp), len(st), rt.empty(so, dt))
            same(rt, "slice %s:%s:%s" % (st, en, sp), c[6], g[6])
            c, g, _ = both(rt, gpu, "slice_grad", mk(so), i64s(st),
                           i64s(en2), i64s(ax), i64s(sp), len(st),
                           rt.empty((4, 5, 6), dt))
            same(rt, "slice_grad %s:%s:%s" % (st, en, sp), c[6], g[6])
    # The CPU's errors (shapes that disagree, a repeated axis, step 0), with
    # the outputs left as they were.
    x = rt.randn((2, 3), "f32")
    c, g, _ = both(rt, gpu, "concat", [x, rt.randn((3, 3), "f32")], 2, 1,
                   rt.empty((2, 6), "f32"))
    same(rt, "concat error leaves y", c[3], g[3])
    c, g, _ = both(rt, gpu, "slice", x, i64s([0, 0]), i64s([1, 1]),
                   i64s([1, 1]), None, 2, rt.empty((2, 1), "f32"))
    same(rt, "slice error leaves y", c[6], g[6])
    c, g, _ = both(rt, gpu, "slice_grad", rt.randn((2, 1), "f32"), i64s([0]),
                   i64s([1]), i64s([1]), i64s([0]), 1,
                   rt.empty((2, 3), "f32"))
    same(rt, "slice_grad error leaves dx", c[6], g[6])


def test_index64(rt, gpu):
    """The strided copies again on a context that takes their 64-bit index
    path (AMPRT_CUDA_INDEX64=1, read when the context is created): tensors
    of 2^31 elements are too big for the CPU comparison."""
    os.environ["AMPRT_CUDA_INDEX64"] = "1"
    try:
        wide = Gpu(rt, gpu.backend)
    finally:
        del os.environ["AMPRT_CUDA_INDEX64"]
    assert wide.ctx is not None, wide.error
    try:
        test_shape_ops(rt, wide)
        test_concat_slice(rt, wide)
    finally:
        rt.lib.amprt_context_destroy(wide.ctx)


def test_dropout(rt, gpu):
    L = rt.lib
    L.amprt_set_random_offset.argtypes = [C.c_void_p, C.c_uint64]
    try:
        for off in (0, 7):
            assert L.amprt_set_random_offset(rt.ctx, off) == 0
            assert L.amprt_set_random_offset(gpu.ctx, off) == 0
            for dt in FLOATS:
                x = special(rt, (33, 65), dt)
                for r, train, mask in ((0.25, 1, True), (0.6, 1, False),
                                       (0.0, 1, True), (0.3, 0, True),
                                       (None, 1, True), (0.5, None, True)):
                    ratio = (None if r is None else
                             rt.buf(np.array(r), {"bf16": "bf16", "f16": "f16"}
                                    .get(dt, "f32")))
                    tr = None if train is None else Buf(np.array(train),
                                                        "bool")
                    m = rt.empty(x.shape, "bool") if mask else None
                    c, g, _ = both(rt, gpu, "dropout", x, ratio, tr, 4321,
                                   rt.empty(x.shape, dt), m)
                    same(rt, "dropout y %s" % r, c[4], g[4])
                    if mask:
                        same(rt, "dropout mask %s" % r, c[5], g[5])
                        dy = special(rt, x.shape, dt)
                        c2, g2, _ = both(rt, gpu, "dropout_grad", dy, c[5],
                                         ratio, tr, rt.empty(x.shape, dt))
                        same(rt, "dropout_grad %s" % r, c2[4], g2[4])
    finally:
        L.amprt_set_random_offset(rt.ctx, 0)
        L.amprt_set_random_offset(gpu.ctx, 0)
    # x and y of different dtypes (one rounding into y).
    x = rt.randn((8, 9), "f32")
    ratio, tr = rt.buf(np.array(0.3), "f32"), Buf(np.array(1), "bool")
    c, g, _ = both(rt, gpu, "dropout", x, ratio, tr, 5,
                   rt.empty(x.shape, "bf16"), rt.empty(x.shape, "bool"))
    same(rt, "dropout f32 -> bf16", c[4], g[4])
    c2, g2, _ = both(rt, gpu, "dropout_grad", rt.randn(x.shape, "bf16"), c[5],
                     ratio, tr, rt.empty(x.shape, "f32"))
    same(rt, "dropout_grad bf16 -> f32", c2[4], g2[4])
    # The CPU's errors: a ratio outside [0, 1) (y untouched), a ratio of two
    # elements.
    x = rt.randn((4, 4), "f32")
    c, g, _ = both(rt, gpu, "dropout", x, rt.buf(np.array(1.0), "f32"), None,
                   1, rt.empty((4, 4), "f32"), None)
    same(rt, "dropout error leaves y", c[4], g[4])
    both(rt, gpu, "dropout_grad", x, Buf(np.ones((4, 4)), "bool"),
         rt.buf(np.array([0.1, 0.2]), "f32"), None, rt.empty((4, 4), "f32"))


def test_random(rt, gpu):
    L = rt.lib
    L.amprt_set_random_offset.argtypes = [C.c_void_p, C.c_uint64]
    try:
        for off in (0, 3):
            assert L.amprt_set_random_offset(rt.ctx, off) == 0
            assert L.amprt_set_random_offset(gpu.ctx, off) == 0
            for dt in FLOATS + ("f64",):
                y = (rt.empty((17, 31), dt) if dt != "f64"
                     else Buf(np.zeros((17, 31)), "f64"))
                c, g, _ = both(rt, gpu, "random_uniform", y, 99,
                               C.c_double(-2.0), C.c_double(5.0))
                same(rt, "random_uniform", c[0], g[0])
                c, g, _ = both(rt, gpu, "random_normal", y, 99,
                               C.c_double(1.5), C.c_double(3.0))
                # The device's double log/sqrt/cos against glibc's: a few
                # ulp of z, i.e. of |y - mean| + |mean| in y (mean + scale z
                # cancels near 0).
                same(rt, "random_normal", c[0], g[0], ulps=1,
                     atol=2.0 ** -49 * (1.5 + np.abs(decode(c[0]) - 1.5)))
            p = rt.uniform((40, 9), "f32", 0.0, 1.0)
            p.arr.reshape(-1)[:3] = [0.0, 1.0, 0.5]
            for ydt in ("f32", "bf16", "i64", "bool"):
                c, g, _ = both(rt, gpu, "bernoulli", p, rt.empty(p.shape, ydt)
                               if ydt in FLOATS else
                               Buf(np.zeros(p.shape, NP_STORAGE[ydt]), ydt),
                               77)
                same(rt, "bernoulli " + ydt, c[1], g[1])
    finally:
        L.amprt_set_random_offset(rt.ctx, 0)
        L.amprt_set_random_offset(gpu.ctx, 0)
    # The CPU's errors: p outside [0, 1] (nothing written), a bad range.
    p = Buf(np.array([0.2, 1.5, np.nan], np.float32), "f32")
    c, g, _ = both(rt, gpu, "bernoulli", p, rt.empty((3,), "f32"), 1)
    same(rt, "bernoulli error leaves y", c[1], g[1])
    both(rt, gpu, "random_uniform", rt.empty((3,), "f32"), 1,
         C.c_double(2.0), C.c_double(1.0))
    both(rt, gpu, "random_normal", rt.empty((3,), "i64"), 1,
         C.c_double(0.0), C.c_double(1.0))


def test_select(rt, gpu):
    for dt in ("f32", "f16", "bf16", "i64", "i32", "bool"):
        if dt in FLOATS:
            x = special(rt, (5, 7, 9), dt) if dt == "f32" else \
                rt.buf(np.round(rt.rng.standard_normal((5, 7, 9))), dt)
        else:
            # Few values, so ties are common; 2^40 apart where a float
            # compare would tie.
            v = rt.rng.integers(0, 3, (5, 7, 9))
            if dt == "i64":
                v = v * (2 ** 40) + rt.rng.integers(0, 2, v.shape)
            x = Buf(v, dt)
        for name in ("arg_max", "arg_min"):
            for axis, keep in ((0, 1), (1, 0), (-1, 1)):
                so = list(x.shape)
                if keep:
                    so[axis] = 1
                else:
                    so.pop(axis)
                for last in (0, 1):
                    c, g, _ = both(rt, gpu, name, x, axis, keep, last,
                                   Buf(np.zeros(so, np.int64), "i64"))
                    same(rt, "%s axis %d last %d" % (name, axis, last),
                         c[4], g[4])
    for dt in ("f32", "f16", "i64"):
        data = (rt.randn((6, 5, 4), dt) if dt in FLOATS else
                Buf(rt.rng.integers(-9, 9, (6, 5, 4)), dt))
        for idt in ("i64", "i32"):
            for axis, ishape in ((0, (3, 5, 4)), (1, (6, 8, 2)),
                                 (-1, (2, 5, 7))):
                n = data.shape[axis]
                idx = Buf(rt.rng.integers(-n, n, ishape), idt)
                c, g, _ = both(rt, gpu, "gather_elements", data, idx, axis,
                               rt.empty(ishape, dt) if dt in FLOATS else
                               Buf(np.zeros(ishape, np.int64), dt))
                same(rt, "gather_elements axis %d" % axis, c[3], g[3])
    for dt in FLOATS:
        # Many repeats: the atomics sum them in another order.
        idx = Buf(rt.rng.integers(-4, 4, (6, 40, 3)), "i64")
        dy = rt.randn((6, 40, 3), dt)
        c, g, _ = both(rt, gpu, "gather_elements_grad", dy, idx, 1,
                       rt.empty((6, 4, 3), dt))
        sc = np.zeros((6, 4, 3))
        ii = np.mod(idx.arr, 4)
        for a_ in range(6):
            for b_ in range(40):
                for c_ in range(3):
                    sc[a_, ii[a_, b_, c_], c_] += abs(decode(dy)[a_, b_, c_])
        same(rt, "gather_elements_grad", c[3], g[3], ulps=1, scale=sc,
             terms=40)
    for dt in ("f32", "f16", "bf16", "i64", "i32"):
        x = (rt.randn((3, 50, 4), dt) if dt in FLOATS else
             Buf(rt.rng.integers(-2 ** 30, 2 ** 30, (3, 50, 4)) *
                 (2 ** 31 if dt == "i64" else 1), dt))
        for axis in (0, 1, -1):
            for excl, rev in ((0, 0), (1, 0), (0, 1), (1, 1)):
                c, g, _ = both(rt, gpu, "cumsum", x, axis, excl, rev,
                               rt.empty(x.shape, dt) if dt in FLOATS else
                               Buf(np.zeros(x.shape, np.int64), dt))
                same(rt, "cumsum axis %d excl %d rev %d" % (axis, excl, rev),
                     c[4], g[4])
    # gather_nd / gather_nd_grad: batch_dims 0..2, tuples of 1..3 indices,
    # negative indices, repeats (the grad's atomics).
    for dt in ("f32", "f16", "i64"):
        data = (rt.randn((3, 4, 5, 6), dt) if dt in FLOATS else
                Buf(rt.rng.integers(-99, 99, (3, 4, 5, 6)), dt))
        for b, ishape in ((0, (7, 2)), (0, (2, 5, 3)), (1, (3, 9, 1)),
                          (2, (3, 4, 2, 2)), (0, (6, 1))):
            kk = ishape[-1]
            dims = data.shape[b:b + kk]
            idx = np.stack([rt.rng.integers(-d, d, ishape[:-1])
                            for d in dims], axis=-1)
            so = ishape[:-1] + data.shape[b + kk:]
            if b:
                so = data.shape[:b] + ishape[b:-1] + data.shape[b + kk:]
            for idt in ("i64", "i32"):
                ix = Buf(idx, idt)
                c, g, _ = both(rt, gpu, "gather_nd", data, ix, b,
                               rt.empty(so, dt) if dt in FLOATS else
                               Buf(np.zeros(so, np.int64), dt))
                same(rt, "gather_nd b %d %s" % (b, ishape), c[3], g[3])
                if dt in FLOATS:
                    dy = rt.randn(so, dt)
                    c2, g2, _ = both(rt, gpu, "gather_nd_grad", dy, ix, b,
                                     rt.empty(data.shape, dt))
                    same(rt, "gather_nd_grad b %d" % b, c2[3], g2[3], ulps=1,
                         scale=np.sum(np.abs(decode(dy))), terms=8)
    bad = Buf(np.array([[0, 1], [2, 7]], np.int64), "i64")
    c, g, _ = both(rt, gpu, "gather_nd", rt.randn((3, 4), "f32"), bad, 0,
                   rt.empty((2,), "f32"))
    same(rt, "gather_nd error leaves y", c[3], g[3])
    both(rt, gpu, "gather_nd_grad", rt.randn((2,), "f32"), bad, 0,
         rt.empty((3, 4), "f32"))
    # top_k: ranks in top_k's total order (NaN first, ties by position).
    for dt in FLOATS:
        x = special(rt, (4, 9, 6), dt) if dt == "f32" else \
            rt.buf(np.round(rt.rng.standard_normal((4, 9, 6))), dt)
        for axis, kk in ((1, 3), (-1, 6), (0, 1), (1, 0), (2, 2)):
            so = list(x.shape)
            so[axis] = kk
            for largest in (1, 0):
                c, g, _ = both(rt, gpu, "top_k", x, kk, axis, largest, 1,
                               rt.empty(so, dt),
                               Buf(np.zeros(so, np.int64), "i64"))
                same(rt, "top_k values", c[5], g[5])
                same(rt, "top_k indices", c[6], g[6])
    both(rt, gpu, "top_k", rt.randn((3, 4), "f32"), 5, 1, 1, 1,
         rt.empty((3, 5), "f32"), Buf(np.zeros((3, 5), np.int64), "i64"))
    # scatter_elements: repeats (the last write wins) and the reductions
    # (which run on the CPU).
    for dt in ("f32", "f16", "i64"):
        data = (rt.randn((5, 6), dt) if dt in FLOATS else
                Buf(rt.rng.integers(-50, 50, (5, 6)), dt))
        for axis, ishape in ((0, (7, 6)), (1, (5, 9)), (-1, (2, 3))):
            n = data.shape[axis]
            idx = Buf(rt.rng.integers(-n, n, ishape), "i64")
            upd = (rt.randn(ishape, dt) if dt in FLOATS else
                   Buf(rt.rng.integers(-50, 50, ishape), dt))
            for red in ((0, 1, 3) if dt in FLOATS else (0,)):
                c, g, _ = both(rt, gpu, "scatter_elements", data, idx, upd,
                               axis, red, rt.empty(data.shape, dt)
                               if dt in FLOATS else
                               Buf(np.zeros(data.shape, np.int64), dt))
                same(rt, "scatter_elements axis %d red %d" % (axis, red),
                     c[5], g[5])
    bad = Buf(np.array([[0, 9]], np.int64), "i64")
    c, g, _ = both(rt, gpu, "scatter_elements", rt.randn((2, 5), "f32"), bad,
                   rt.randn((1, 2), "f32"), 1, 0, rt.empty((2, 5), "f32"))
    same(rt, "scatter_elements error leaves y", c[5], g[5])
    # scatter_nd: tuples of 1..3 indices, negative, many repeats (applied
    # in order on both: every reduction bit-identical), i64 and i32 indices,
    # integer and bool data; in place (y = data) and an empty slab.
    for dt in ("f32", "f16", "bf16", "i64", "i32", "bool"):
        shape = (5, 4, 6)
        lo, hi = (0, 2) if dt == "bool" else (-3, 4)
        for kk, n in ((1, (40,)), (2, (3, 7)), (3, (50,)), (2, (0,))):
            lim = np.array(shape[:kk])
            idx = rt.rng.integers(-lim, lim, n + (kk,))
            us = n + shape[kk:]
            data = (special(rt, shape, dt) if dt in FLOATS else
                    Buf(rt.rng.integers(lo, hi, shape), dt))
            upd = (special(rt, us, dt) if dt == "f32" else
                   rt.randn(us, dt) if dt in FLOATS else
                   Buf(rt.rng.integers(lo, hi, us), dt))
            for red in ((0,) if dt == "bool" else range(5)):
                ix = Buf(idx, "i32" if red % 2 else "i64")
                c, g, _ = both(rt, gpu, "scatter_nd", data, ix, upd, red,
                               rt.empty(shape, dt))
                same(rt, "scatter_nd %s k %d red %d" % (dt, kk, red), c[4],
                     g[4])
                # In place: one buffer is data and y on each side.
                cpu = Buf(data.arr.copy(), data.dt)
                rt.ok("scatter_nd", cpu.ref, ix.ref, upd.ref, red, cpu.ref)
                (t, back), (ti, _), (tu, _) = (gpu.upload(b)
                                               for b in (data, ix, upd))
                st = rt.lib.amprt_scatter_nd(gpu.ctx, C.byref(t),
                                             C.byref(ti), C.byref(tu), red,
                                             C.byref(t))
                assert st == 0, gpu.err()
                gpu.download(t, back)
                gpu.free_all()
                same(rt, "scatter_nd in place %s red %d" % (dt, red), cpu,
                     back)
    c, g, _ = both(rt, gpu, "scatter_nd", rt.randn((3, 0), "f32"),
                   Buf(np.array([[1], [1]]), "i64"), rt.randn((2, 0), "f32"),
                   1, rt.empty((3, 0), "f32"))
    bad = Buf(np.array([[0, 1], [2, -7]], np.int64), "i64")
    c, g, _ = both(rt, gpu, "scatter_nd", rt.randn((3, 4), "f32"), bad,
                   rt.randn((2,), "f32"), 2, rt.empty((3, 4), "f32"))
    same(rt, "scatter_nd error leaves y", c[4], g[4])
    both(rt, gpu, "scatter_nd", Buf(np.zeros((3,), np.uint8), "u8"),
         Buf(np.array([[1]]), "i64"), Buf(np.ones((1,), np.uint8), "u8"), 1,
         Buf(np.zeros((3,), np.uint8), "u8"))
    for dt in ("f32", "bf16", "i64", "bool"):
        x = (special(rt, (2, 5, 7), dt) if dt in FLOATS else
             Buf(rt.rng.integers(1, 3, (2, 5, 7)), dt))
        for k_, upper in ((0, 1), (0, 0), (2, 1), (-3, 0), (-9, 1), (9, 0)):
            c, g, _ = both(rt, gpu, "trilu", x, k_, upper,
                           rt.empty(x.shape, dt) if dt in FLOATS else
                           Buf(np.zeros(x.shape, np.int64), dt))
            same(rt, "trilu k %d upper %d" % (k_, upper), c[3], g[3])
    # The CPU's errors: an index out of range (nothing written), an empty
    # axis, a dtype cumsum does not take, a trilu of rank 1.
    both(rt, gpu, "trilu", rt.randn((4,), "f32"), 0, 1,
         rt.empty((4,), "f32"))
    # Empty tensors.
    c, g, _ = both(rt, gpu, "cumsum", rt.randn((0, 3), "f32"), 1, 0, 0,
                   rt.empty((0, 3), "f32"))
    c, g, _ = both(rt, gpu, "arg_max", rt.randn((0, 3), "f32"), 1, 0, 0,
                   Buf(np.zeros((0,), np.int64), "i64"))
    c, g, _ = both(rt, gpu, "gather_elements", rt.randn((2, 3), "f32"),
                   Buf(np.zeros((2, 0), np.int64), "i64"), 1,
                   rt.empty((2, 0), "f32"))
    bad = Buf(np.array([[0, 5]], np.int64), "i64")
    c, g, _ = both(rt, gpu, "gather_elements", rt.randn((2, 5), "f32"), bad,
                   1, rt.empty((1, 2), "f32"))
    same(rt, "gather_elements error leaves y", c[3], g[3])
    both(rt, gpu, "gather_elements_grad", rt.randn((1, 2), "f32"), bad, 1,
         rt.empty((2, 5), "f32"))
    both(rt, gpu, "arg_max", rt.randn((2, 0), "f32"), 1, 1, 0,
         Buf(np.zeros((2, 1), np.int64), "i64"))
    both(rt, gpu, "cumsum", Buf(np.zeros((3,), np.uint8), "u8"), 0, 0, 0,
         Buf(np.zeros((3,), np.uint8), "u8"))


# ---------------------------------------------------------------------------
# Normalization.cpp, Pool.cpp (max)
# ---------------------------------------------------------------------------

def norm_tol(c):
    return dict(ulps=2, scale=np.max(np.abs(decode(c)), initial=0) + 1,
                terms=4)


def batch_norm_checks(rt, gpu, dt, shape, label):
    """batch_norm_training (every output) and batch_norm_grad of x `shape`
    (channels dim 1) on both backends, within norm_tol."""
    C_ = shape[1]
    x = rt.randn(shape, dt, 3.0)
    sc, bs = rt.randn((C_,), dt), rt.randn((C_,), dt)
    rm, rv = rt.randn((C_,), "f32"), rt.uniform((C_,), "f32", 0.5, 2)
    outs = [rt.empty(shape, dt)] + [rt.empty((C_,), "f32") for _ in range(4)]
    c, g, _ = both(rt, gpu, "batch_norm_training", x, sc, bs, rm, rv,
                   C.c_float(0.9), C.c_float(1e-5), *outs)
    for j, what in ((7, "y"), (8, "running_mean"), (9, "running_var"),
                    (10, "saved_mean"), (11, "saved_inv_std")):
        same(rt, "batch_norm_training%s %s" % (label, what), c[j], g[j],
             **norm_tol(c[j]))
    dy = rt.randn(shape, dt)
    c2, g2, _ = both(rt, gpu, "batch_norm_grad", dy, x, sc, c[10], c[11],
                     rt.empty(shape, dt), rt.empty((C_,), "f32"),
                     rt.empty((C_,), "f32"))
    for j, what in ((5, "dx"), (6, "dscale"), (7, "dbias")):
        same(rt, "batch_norm_grad%s %s" % (label, what), c2[j], g2[j],
             **norm_tol(c2[j]))


def test_normalization(rt, gpu):
    for dt in FLOATS:
        for shape, axis in (((6, 40), -1), ((3, 4, 300), 2), ((2, 3, 4), 1),
                            ((0, 8), 1), ((2048, 72), -1)):
            inner = int(np.prod(shape[axis:] if axis >= 0 else shape[-1:]))
            outer = int(np.prod(shape)) // max(inner, 1)
            x = rt.randn(shape, dt, 2.0)
            sc, bs = rt.randn((inner,), "f32"), rt.randn((inner,), dt)
            mean, inv = rt.empty((outer,), "f32"), rt.empty((outer,), "f32")
            c, g, _ = both(rt, gpu, "layer_norm", x, sc, bs, axis,
                           C.c_float(1e-5), rt.empty(shape, dt), mean, inv)
            for j, what in ((5, "y"), (6, "mean"), (7, "inv_std")):
                same(rt, "layer_norm " + what, c[j], g[j], **norm_tol(c[j]))
            dy = rt.randn(shape, dt)
            c2, g2, _ = both(rt, gpu, "layer_norm_grad", dy, x, sc, c[6],
                             c[7], axis, rt.empty(shape, dt),
                             rt.empty((inner,), "f32"),
                             rt.empty((inner,), "f32"))
            for j, what in ((6, "dx"), (7, "dscale"), (8, "dbias")):
                same(rt, "layer_norm_grad " + what, c2[j], g2[j],
                     **norm_tol(c2[j]))
            # RMSNorm (SimplifiedLayerNormalization): the LayerNorm kernels
            # with no mean and no bias.
            io = rt.empty((outer,), "f32")
            c, g, _ = both(rt, gpu, "rms_norm", x, sc, axis, C.c_float(1e-5),
                           rt.empty(shape, dt), io)
            for j, what in ((4, "y"), (5, "inv_std")):
                same(rt, "rms_norm " + what, c[j], g[j], **norm_tol(c[j]))
            c2, g2, _ = both(rt, gpu, "rms_norm_grad", dy, x, sc, c[5], axis,
                             rt.empty(shape, dt), rt.empty((inner,), "f32"))
            for j, what in ((5, "dx"), (6, "dscale")):
                same(rt, "rms_norm_grad " + what, c2[j], g2[j],
                     **norm_tol(c2[j]))
        for shape in ((8, 5, 6, 7), (16, 3), (4, 2, 1000)):
            batch_norm_checks(rt, gpu, dt, shape, "")
    both(rt, gpu, "layer_norm", rt.randn((2, 3), "f32"),
         rt.randn((4,), "f32"), None, -1, C.c_float(1e-5),
         rt.empty((2, 3), "f32"), None, None)
    both(rt, gpu, "rms_norm", rt.randn((2, 3), "f32"),
         rt.randn((4,), "f32"), -1, C.c_float(1e-5),
         rt.empty((2, 3), "f32"), None)
    both(rt, gpu, "rms_norm_grad", rt.randn((2, 3), "f32"),
         rt.randn((2, 3), "f32"), rt.randn((3,), "f32"),
         rt.randn((3,), "f32"), -1, rt.empty((2, 3), "f32"), None)
    # Optional outputs: no inv_std forward; dx only, dscale only.
    x, sc = rt.randn((5, 16), "bf16"), rt.randn((16,), "f32")
    c, g, _ = both(rt, gpu, "rms_norm", x, sc, -1, C.c_float(1e-6),
                   rt.empty((5, 16), "bf16"), None)
    same(rt, "rms_norm without inv_std", c[4], g[4], **norm_tol(c[4]))
    io = rt.uniform((5,), "f32", 0.5, 2.0)
    dy = rt.randn((5, 16), "bf16")
    for dx, ds in ((rt.empty((5, 16), "bf16"), None),
                   (None, rt.empty((16,), "f32"))):
        c, g, _ = both(rt, gpu, "rms_norm_grad", dy, x, sc, io, -1, dx, ds)
        j = 5 if dx is not None else 6
        same(rt, "rms_norm_grad one output", c[j], g[j], **norm_tol(c[j]))
    both(rt, gpu, "batch_norm_grad", rt.randn((2, 3), "f32"),
         rt.randn((2, 4), "f32"), rt.randn((3,), "f32"),
         rt.randn((3,), "f32"), rt.randn((3,), "f32"), None, None, None)


def last_shape(s):
    """A channels-first shape moved channels last: [N, C, s...] -> [N, s...,
    C]; a convolution weight [M, C/g, k...] -> [M, k..., C/g]."""
    return (s[0],) + tuple(s[2:]) + (s[1],)


def window_shapes(xs, win, channels, kernel=None):
    """(x's, y's) shapes of a window call on x of channels-first shape xs:
    y has `channels` channels and the windows of Window.h
    (amprt_window_count) along each spatial dim; both moved channels last
    when the window is (win.layout). kernel: the window's extent, when not
    win.kernel (a convolution's weight)."""
    sr = len(xs) - 2
    sp = []
    for i in range(sr):
        k = (kernel or win.kernel)[i]
        n, pb = xs[2 + i], win.pads[i]
        e = n + pb + win.pads[sr + i] - (max(win.dilations[i], 1) * (k - 1)
                                         + 1)
        if not win.ceil_mode:
            o = e // win.strides[i] + 1 if e >= 0 else 0
        else:
            o = -(-e // win.strides[i]) + 1
            o -= (o - 1) * win.strides[i] >= n + pb
        sp.append(o)
    ys = (xs[0], channels) + tuple(sp)
    lay = last_shape if win.layout else tuple
    return lay(xs), lay(ys)


def max_pool_checks(rt, gpu, dt, xs, win):
    """max_pool (values and indices exact) and max_pool_grad through its
    indices on x of channels-first shape xs, in win's layout."""
    xs, ys = window_shapes(xs, win, xs[1])
    x = special(rt, xs, dt) if dt == "f32" else rt.randn(xs, dt)
    last = " channels last" if win.layout else ""
    c, g, _ = both(rt, gpu, "max_pool", x, rt.empty(ys, dt),
                   rt.empty(ys, "i64"), C.byref(win))
    same(rt, "max_pool" + last, c[1], g[1])
    same(rt, "max_pool indices" + last, c[2], g[2])
    dy = rt.randn(ys, dt)
    c2, g2, _ = both(rt, gpu, "max_pool_grad", dy, c[2], rt.empty(xs, dt))
    sc = np.zeros(int(np.prod(xs)))
    np.add.at(sc, c[2].arr.reshape(-1), np.abs(decode(dy)).reshape(-1))
    same(rt, "max_pool_grad" + last, c2[2], g2[2], ulps=1,
         scale=sc.reshape(xs), terms=9)


def average_pool_checks(rt, gpu, dt, xs, win):
    """average_pool (exact) and average_pool_grad on x of channels-first
    shape xs, in win's layout."""
    xs, ys = window_shapes(xs, win, xs[1])
    x = special(rt, xs, dt) if dt == "f32" else rt.randn(xs, dt)
    last = " channels last" if win.layout else ""
    c, g, _ = both(rt, gpu, "average_pool", x, rt.empty(ys, dt),
                   C.byref(win))
    same(rt, "average_pool" + last, c[1], g[1])
    dy = rt.randn(ys, dt)
    c2, g2, _ = both(rt, gpu, "average_pool_grad", dy, rt.empty(xs, dt),
                     C.byref(win))
    taps = int(np.prod(win.kernel[:len(xs) - 2]))
    same(rt, "average_pool_grad" + last, c2[1], g2[1], ulps=1,
         scale=np.max(np.abs(decode(dy))) * taps, terms=taps)


def test_batch_norm_rows(rt, gpu):
    """batch_norm_training and batch_norm_grad on [M, C] (S = 1: threads
    across the channels, blocks over runs of rows), as a channels-last
    BatchNorm is lowered ([N * H * W, C]), with and without the optional
    outputs."""
    for dt in FLOATS:
        for shape in ((8 * 56 * 56, 64), (1000, 100), (37, 2048)):
            batch_norm_checks(rt, gpu, dt, shape, " rows")
    # y alone forward; dx alone, then the sums alone, backward.
    x = rt.randn((300, 40), "bf16")
    sc, bs = rt.randn((40,), "f32"), rt.randn((40,), "f32")
    c, g, _ = both(rt, gpu, "batch_norm_training", x, sc, bs, None, None,
                   C.c_float(0.9), C.c_float(1e-5),
                   rt.empty((300, 40), "bf16"), None, None, None, None)
    same(rt, "batch_norm_training rows y alone", c[7], g[7], **norm_tol(c[7]))
    sm, si = rt.randn((40,), "f32"), rt.uniform((40,), "f32", 0.5, 2.0)
    dy = rt.randn((300, 40), "bf16")
    for outs in ((rt.empty((300, 40), "bf16"), None, None),
                 (None, rt.empty((40,), "f32"), rt.empty((40,), "f32"))):
        c, g, _ = both(rt, gpu, "batch_norm_grad", dy, x, sc, sm, si, *outs)
        for j in range(5, 8):
            if outs[j - 5] is not None:
                same(rt, "batch_norm_grad rows, some outputs", c[j], g[j],
                     **norm_tol(c[j]))


def test_max_pool(rt, gpu):
    for dt in FLOATS:
        for xs, win in (((2, 3, 9, 11), window([3, 3], [2, 2], [1, 1, 1, 1])),
                        ((2, 2, 8, 8), window([2, 2], [1, 1])),
                        ((3, 4, 17), window([3], [1], [1, 1])),
                        ((2, 2, 5, 6, 7),
                         window([3, 2, 3], [2, 1, 2], [1, 0, 1, 1, 1, 0]))):
            max_pool_checks(rt, gpu, dt, xs, win)
    bad = Buf(np.array([[0, 3], [70, 1]], np.int64), "i64")
    both(rt, gpu, "max_pool_grad", rt.randn((2, 2), "f32"), bad,
         rt.empty((8, 8), "f32"))


def test_average_pool(rt, gpu):
    for dt in FLOATS:
        for xs, k, st, pd in (((2, 3, 9, 11), [3, 3], [2, 2], [1, 1, 1, 1]),
                              ((2, 2, 8, 8), [2, 2], [1, 1], None),
                              ((3, 4, 17), [3], [1], [1, 2]),
                              ((2, 2, 5, 6, 7), [3, 2, 3], [2, 1, 2],
                               [1, 0, 1, 1, 1, 0])):
            for cip in (0, 1):
                average_pool_checks(rt, gpu, dt, xs,
                                    window(k, st, pd, count_include_pad=cip))
        for xs in ((4, 6, 5), (8, 16, 7, 7), (2, 3, 64, 64), (2, 2, 3, 4, 5)):
            x = rt.randn(xs, dt)
            ys = xs[:2] + (1,) * (len(xs) - 2)
            S = int(np.prod(xs[2:]))
            c, g, _ = both(rt, gpu, "global_average_pool", x,
                           rt.empty(ys, dt))
            # f64 sums on the device, f32 on the CPU.
            same(rt, "global_average_pool", c[1], g[1], ulps=1,
                 scale=np.abs(decode(x)).mean(axis=tuple(range(2, len(xs))),
                                             keepdims=True), terms=S)
            dy = rt.randn(ys, dt)
            c, g, _ = both(rt, gpu, "global_average_pool_grad", dy,
                           rt.empty(xs, dt))
            same(rt, "global_average_pool_grad", c[1], g[1])
    both(rt, gpu, "global_average_pool", rt.randn((2, 3), "f32"),
         rt.empty((2, 3), "f32"))
    # S = 0: the mean of nothing is 0, and dx is empty.
    c, g, _ = both(rt, gpu, "global_average_pool", rt.randn((2, 3, 0), "f32"),
                   rt.empty((2, 3, 1), "f32"))
    same(rt, "global_average_pool of an empty plane", c[1], g[1])
    both(rt, gpu, "average_pool", rt.randn((2, 3, 4, 4), "f32"),
         rt.empty((2, 3, 3, 3), "f32"), C.byref(window([3, 3], [1, 1])))


def test_pool_channels_last(rt, gpu):
    """Layout 1: x, y [N, spatial..., C], a thread per output with the
    channel innermost; max_pool's indices flat into x as stored."""
    for dt in FLOATS:
        for xs, k, st, pd, ceil in (
                ((2, 3, 9, 11), [3, 3], [2, 2], [1, 1, 1, 1], 0),
                ((2, 64, 8, 8), [3, 3], [2, 2], [1, 1, 1, 1], 0),
                ((2, 5, 9, 10), [3, 3], [2, 2], [1, 0, 0, 0], 1),
                ((3, 4, 17), [3], [1], [1, 2], 0),
                ((2, 3, 5, 6, 7), [3, 2, 3], [2, 1, 2], [1, 0, 1, 1, 1, 0],
                 0)):
            max_pool_checks(rt, gpu, dt, xs,
                            window(k, st, pd, ceil_mode=ceil, layout=1))
            for cip in (0, 1):
                average_pool_checks(rt, gpu, dt, xs,
                                    window(k, st, pd, ceil_mode=ceil,
                                           count_include_pad=cip, layout=1))
    # A layout that is neither: the CPU's words on both.
    both(rt, gpu, "max_pool", rt.randn((2, 4, 4, 3), "f32"),
         rt.empty((2, 3, 3, 3), "f32"), None,
         C.byref(window([2, 2], [1, 1], layout=2)))


# ---------------------------------------------------------------------------
# Recurrent.cpp (LSTM and GRU on cuBLASLt)
# ---------------------------------------------------------------------------

def rnn_tol(c):
    """f32 products in another order over a few steps (sigmoid' and tanh'
    damp what the steps carry): 4 ulp plus 68 2^-24 (max|out| + 1)."""
    return dict(ulps=4, scale=np.max(np.abs(decode(c)), initial=0) + 1,
                terms=64)


def test_recurrent(rt, gpu):
    for dt in ("f32", "bf16"):
        for (S, B, I, H), direction in (((5, 3, 7, 4), 0), ((4, 2, 3, 8), 1),
                                        ((3, 4, 6, 5), 2), ((1, 1, 1, 1), 2)):
            D = 2 if direction == 2 else 1
            x = rt.randn((S, B, I), dt)
            w = rt.randn((D, 4 * H, I), dt, 0.5)
            r = rt.randn((D, 4 * H, H), dt, 0.5)
            b = rt.randn((D, 8 * H), dt, 0.5)
            h0 = rt.randn((D, B, H), dt, 0.5)
            c0 = rt.randn((D, B, H), dt, 0.5)
            for bias, init in ((b, (h0, c0)), (None, (None, None))):
                outs = [rt.empty((S, D, B, H), dt), rt.empty((D, B, H), dt),
                        rt.empty((D, B, H), dt), rt.empty((S, D, B, H), "f32"),
                        rt.empty((S, D, B, 4 * H), "f32")]
                c, g, _ = both(rt, gpu, "lstm", x, w, r, bias, *init,
                               direction, *outs)
                for j, what in ((7, "y"), (8, "y_h"), (9, "y_c"),
                                (10, "all_c"), (11, "gates")):
                    same(rt, "lstm " + what, c[j], g[j], **rnn_tol(c[j]))
                # The gradient from the CPU's forward outputs.
                gy = rt.randn((S, D, B, H), dt)
                gh = rt.randn((D, B, H), dt)
                gc = rt.randn((D, B, H), dt)
                douts = [rt.empty(x.shape, dt), rt.empty(w.shape, dt),
                         rt.empty(r.shape, dt), rt.empty((D, 8 * H), dt),
                         rt.empty((D, B, H), dt), rt.empty((D, B, H), dt)]
                c2, g2, _ = both(rt, gpu, "lstm_grad", x, w, r, bias, *init,
                                 c[7], c[10], c[11], gy, gh, gc, direction,
                                 *douts)
                for j, what in ((13, "dx"), (14, "dw"), (15, "dr"),
                                (16, "db"), (17, "dh0"), (18, "dc0")):
                    same(rt, "lstm_grad " + what, c2[j], g2[j],
                         **rnn_tol(c2[j]))
    for dt in ("f32", "f16"):
        for (S, B, I, H), direction, lbr in (((5, 3, 7, 4), 0, 0),
                                             ((4, 2, 3, 8), 1, 1),
                                             ((3, 4, 6, 5), 2, 0),
                                             ((3, 2, 2, 3), 2, 1)):
            D = 2 if direction == 2 else 1
            x = rt.randn((S, B, I), dt)
            w = rt.randn((D, 3 * H, I), dt, 0.5)
            r = rt.randn((D, 3 * H, H), dt, 0.5)
            b = rt.randn((D, 6 * H), dt, 0.5)
            h0 = rt.randn((D, B, H), dt, 0.5)
            for bias, init in ((b, h0), (None, None)):
                outs = [rt.empty((S, D, B, H), dt), rt.empty((D, B, H), dt),
                        rt.empty((S, D, B, 3 * H), "f32")]
                c, g, _ = both(rt, gpu, "gru", x, w, r, bias, init,
                               direction, lbr, *outs)
                for j, what in ((7, "y"), (8, "y_h"), (9, "gates")):
                    same(rt, "gru lbr %d %s" % (lbr, what), c[j], g[j],
                         **rnn_tol(c[j]))
                gy = rt.randn((S, D, B, H), dt)
                gh = rt.randn((D, B, H), dt)
                douts = [rt.empty(x.shape, dt), rt.empty(w.shape, dt),
                         rt.empty(r.shape, dt), rt.empty((D, 6 * H), dt),
                         rt.empty((D, B, H), dt)]
                c2, g2, _ = both(rt, gpu, "gru_grad", x, w, r, bias, init,
                                 c[7], c[9], gy, gh, direction, lbr, *douts)
                for j, what in ((11, "dx"), (12, "dw"), (13, "dr"),
                                (14, "db"), (15, "dh0")):
                    same(rt, "gru_grad lbr %d %s" % (lbr, what), c2[j],
                         g2[j], **rnn_tol(c2[j]))
    # Sizes that take several blocks and other cuBLASLt algorithms; dy
    # absent, an initial h without c.
    S, B, I, H = 16, 32, 64, 96
    x = rt.randn((S, B, I), "f32")
    for kind, G in (("lstm", 4), ("gru", 3)):
        w = rt.randn((2, G * H, I), "f32", 0.1)
        r = rt.randn((2, G * H, H), "f32", 0.1)
        h0 = rt.randn((2, B, H), "f32", 0.5)
        if kind == "lstm":
            outs = [rt.empty((S, 2, B, H), "f32"), None, None,
                    rt.empty((S, 2, B, H), "f32"),
                    rt.empty((S, 2, B, 4 * H), "f32")]
            c, g, _ = both(rt, gpu, "lstm", x, w, r, None, h0, None, 2,
                           *outs)
            for j in (7, 10, 11):
                same(rt, "lstm large", c[j], g[j], **rnn_tol(c[j]))
            c2, g2, _ = both(rt, gpu, "lstm_grad", x, w, r, None, h0, None,
                             c[7], c[10], c[11], None,
                             rt.randn((2, B, H), "f32"), None, 2,
                             rt.empty(x.shape, "f32"), rt.empty(w.shape, "f32"),
                             rt.empty(r.shape, "f32"), None,
                             rt.empty((2, B, H), "f32"), None)
            for j in (13, 14, 15, 17):
                same(rt, "lstm_grad large", c2[j], g2[j], **rnn_tol(c2[j]))
        else:
            outs = [rt.empty((S, 2, B, H), "f32"), None,
                    rt.empty((S, 2, B, 3 * H), "f32")]
            c, g, _ = both(rt, gpu, "gru", x, w, r, None, h0, 2, 0, *outs)
            for j in (7, 9):
                same(rt, "gru large", c[j], g[j], **rnn_tol(c[j]))
            c2, g2, _ = both(rt, gpu, "gru_grad", x, w, r, None, h0, c[7],
                             c[9], rt.randn((S, 2, B, H), "f32"), None, 2, 0,
                             rt.empty(x.shape, "f32"), rt.empty(w.shape, "f32"),
                             rt.empty(r.shape, "f32"), None,
                             rt.empty((2, B, H), "f32"))
            for j in (11, 12, 13, 15):
                same(rt, "gru_grad large", c2[j], g2[j], **rnn_tol(c2[j]))
    # An empty sequence (the CPU code runs it).
    c, g, _ = both(rt, gpu, "gru", rt.randn((0, 2, 3), "f32"),
                   rt.randn((1, 6, 3), "f32"), rt.randn((1, 6, 2), "f32"),
                   None, None, 0, 0, rt.empty((0, 1, 2, 2), "f32"),
                   rt.empty((1, 2, 2), "f32"), None)
    same(rt, "gru of an empty sequence", c[8], g[8])
    # Optional outputs and gradients absent; the CPU's errors.
    x = rt.randn((3, 2, 4), "f32")
    w, r = rt.randn((1, 8, 4), "f32"), rt.randn((1, 8, 2), "f32")
    c, g, _ = both(rt, gpu, "lstm", x, w, r, None, None, None, 0,
                   rt.empty((3, 1, 2, 2), "f32"), None, None,
                   rt.empty((3, 1, 2, 2), "f32"),
                   rt.empty((3, 1, 2, 8), "f32"))
    same(rt, "lstm y only", c[7], g[7], **rnn_tol(c[7]))
    c2, g2, _ = both(rt, gpu, "lstm_grad", x, w, r, None, None, None, c[7],
                     c[10], c[11], rt.randn((3, 1, 2, 2), "f32"), None, None,
                     0, rt.empty((3, 2, 4), "f32"), None, None, None, None,
                     None)
    same(rt, "lstm_grad dx only", c2[13], g2[13], **rnn_tol(c2[13]))
    both(rt, gpu, "lstm", x, w, r, None, None, None, 3,
         rt.empty((3, 1, 2, 2), "f32"), None, None, None, None)
    both(rt, gpu, "lstm", x, rt.randn((1, 6, 4), "f32"), r, None, None, None,
         0, None, None, None, None, None)


# ---------------------------------------------------------------------------
# Convolution (cuDNN) and the CPU fallback path
# ---------------------------------------------------------------------------

def conv_checks(rt, gpu, dt, xs, ws, win):
    """conv, conv_grad and conv_transpose on x and w of channels-first
    shapes xs and ws, in win's layout."""
    xs, ys = window_shapes(xs, win, ws[0], ws[2:])
    K = ws[1] * int(np.prod(ws[2:]))
    last = " channels last" if win.layout else ""
    ws = last_shape(ws) if win.layout else ws
    x, w = rt.randn(xs, dt), rt.randn(ws, dt)
    b = rt.randn((ws[0],), dt)
    # The bias broadcast over y's channels.
    along = (-1,) if win.layout else (1, -1) + (1,) * (len(ys) - 2)
    c, g, _ = both(rt, gpu, "conv", x, w, b, rt.empty(ys, dt), C.byref(win))
    sc = np.max(np.abs(decode(c[3])), initial=0) + 1
    # f16/bf16 with a bias round twice on the GPU (conv, then + bias): one
    # more ulp of the largest |conv| term.
    atol = 0.0 if dt == "f32" else float(ulp(dt, np.max(
        np.abs(decode(c[3])) + np.abs(decode(b)).reshape(along), initial=0)))
    same(rt, "conv" + last, c[3], g[3], ulps=1, scale=4 * sc, terms=K,
         atol=atol)
    dy = rt.randn(ys, dt)
    c2, g2, _ = both(rt, gpu, "conv_grad", dy, x, w, rt.empty(xs, dt),
                     rt.empty(ws, dt), rt.empty((ws[0],), dt), C.byref(win))
    for j, out in ((3, "dx"), (4, "dw"), (5, "db")):
        m = np.max(np.abs(decode(c2[j])), initial=0) + 1
        terms = int(np.prod(ys)) // ws[0] if j > 3 else K * ws[0]
        same(rt, "conv_grad %s%s" % (out, last), c2[j], g2[j], ulps=1,
             scale=4 * m, terms=terms)
    # conv_transpose: conv_grad's dx with dy as its input, plus a bias over
    # the channels of its output (x's shape here).
    bt = rt.randn((xs[-1] if win.layout else xs[1],), dt)
    c3, g3, _ = both(rt, gpu, "conv_transpose", dy, w, bt, rt.empty(xs, dt),
                     C.byref(win))
    m = np.max(np.abs(decode(c3[3])), initial=0) + 1
    atol = 0.0 if dt == "f32" else float(ulp(dt, m + np.max(
        np.abs(decode(bt)))))
    same(rt, "conv_transpose" + last, c3[3], g3[3], ulps=1, scale=4 * m,
         terms=K * ws[0], atol=atol)


def test_conv(rt, gpu):
    for dt in FLOATS:
        for xs, ws, win in (
                ((2, 3, 9, 11), (4, 3, 3, 3),
                 window([3, 3], [1, 1], [1, 1, 1, 1])),
                ((2, 4, 10, 8), (6, 2, 3, 2),
                 window([3, 2], [2, 1], [0, 1, 1, 0], [1, 2], group=2)),
                ((3, 2, 17), (5, 2, 4), window([4], [2], [1, 2])),
                # Grouped with symmetric pads (cuDNN): the last row of the
                # input is under no window (conv_transpose: output_padding).
                ((2, 4, 8, 9), (6, 2, 3, 3),
                 window([3, 3], [2, 2], [0, 0, 0, 0], group=2)),
                # 3-D: 5-D cuDNN descriptors (symmetric pads), then the
                # CPU fallback (asymmetric ones).
                ((2, 3, 5, 6, 7), (4, 3, 3, 2, 3),
                 window([3, 2, 3], [1, 2, 1], [1, 0, 1, 1, 0, 1],
                        [1, 1, 2])),
                ((2, 4, 4, 5, 6), (4, 2, 2, 3, 2),
                 window([2, 3, 2], [2, 1, 1], [0, 1, 1, 1, 1, 0],
                        group=2))):
            conv_checks(rt, gpu, dt, xs, ws, win)


def test_conv_channels_last(rt, gpu):
    """Layout 1: x, y [N, spatial..., C], w [M, kernel..., C/g] (cuDNN's
    NHWC / NDHWC tensors and KRSC filters); db sums over the rows of dy
    [N * spatial, M]."""
    for dt in FLOATS:
        for xs, ws, win in (
                ((2, 16, 9, 11), (32, 16, 3, 3),
                 window([3, 3], [1, 1], [1, 1, 1, 1], layout=1)),
                # Groups, strides, pads, dilations.
                ((2, 4, 10, 8), (6, 2, 3, 2),
                 window([3, 2], [2, 1], [1, 0, 1, 0], [1, 2], group=2,
                        layout=1)),
                # Depthwise.
                ((2, 8, 9, 9), (8, 1, 3, 3),
                 window([3, 3], [2, 2], [1, 1, 1, 1], group=8, layout=1)),
                # Pointwise, 70 channels (a column block and a part).
                ((2, 8, 5, 6), (70, 8, 1, 1), window([1, 1], layout=1)),
                # 1-D (NWC as NHWC with H = 1).
                ((3, 4, 17), (6, 4, 4), window([4], [2], [1, 1], layout=1)),
                # 3-D (NDHWC).
                ((2, 3, 5, 6, 7), (4, 3, 3, 2, 3),
                 window([3, 2, 3], [1, 2, 1], [1, 0, 1, 1, 0, 1], [1, 1, 2],
                        layout=1)),
                # Asymmetric pads: the CPU fallback, channels last.
                ((2, 4, 10, 8), (6, 2, 3, 2),
                 window([3, 2], [2, 1], [0, 1, 1, 0], [1, 2], group=2,
                        layout=1))):
            conv_checks(rt, gpu, dt, xs, ws, win)
    # A layout that is neither: the CPU's words on both.
    both(rt, gpu, "conv", rt.randn((2, 5, 5, 3), "f32"),
         rt.randn((4, 3, 3, 3), "f32"), None, rt.empty((2, 3, 3, 4), "f32"),
         C.byref(window([3, 3], layout=2)))


def attention_check(rt, exact, rel):
    """Compares a CPU and a GPU output of attention: the same bits where
    both ran the CPU code (exact), else within 1 ulp plus rel times the
    largest finite magnitude (elements outside a view are NaN on both)."""
    def check(name, c, g):
        if exact:
            same(rt, name, c, g)
        else:
            m = np.nanmax(np.abs(decode(c)), initial=0)
            same(rt, name, c, g, ulps=1, atol=rel * m)
    return check


def test_attention(rt, gpu):
    """attention, then attention_grad from the CPU's y and lse (so each is
    compared alone), on cuDNN's fused attention (Attention.cu) against
    Attention.cpp. The flash kernels round p to f16/bf16 before p v and
    take rowsum(dy y) for rowsum(p dp); the CPU keeps p in f32. So y, lse,
    dq, dk and dv may differ by 1 ulp plus rel max|out| (rel 2e-3 in f16,
    1.6e-2 in bf16: 2 to 4 ulp of the largest element). What cuDNN does not
    take runs the CPU code on the host, exactly: f32, a head dim that is not
    a multiple of 8, a bias of another dtype, unaligned tensors."""
    rel = {"f16": 2e-3, "bf16": 1.6e-2}
    # (q's shape, Sk, Dv, k_trans, bias shape or None, bias dtype or None).
    cases = [((2, 3, 64, 64), 64, 64, 0, None, None),
             # k_trans (k and dk through transposed copies), Sk != Sq.
             ((2, 3, 64, 64), 80, 64, 1, None, None),
             # A bias cuDNN reads in place: [1, 1, Sq, Sk], [1, h, Sq, Sk].
             ((2, 3, 64, 64), 64, 64, 0, (1, 1, 64, 64), None),
             ((2, 3, 32, 64), 48, 64, 0, (3, 32, 48), None),
             # Broadcast over Sq (a key padding mask), rows of Sk = 20 (not
             # 16-byte aligned): expanded first, into rows of 24.
             ((2, 3, 48, 32), 40, 32, 0, (2, 1, 1, 40), None),
             ((2, 2, 20, 32), 20, 32, 0, (2, 2, 20, 20), None),
             # Rank 3 (h = 1), Dv != D, k_trans with a bias; rank 5 with a
             # bias over the first two dims (folded into cuDNN's b).
             ((4, 40, 16), 40, 24, 1, (40, 40), None),
             ((2, 2, 2, 24, 32), 24, 32, 0, (2, 2, 1, 24, 24), None),
             # The host: an odd head dim, a bias of another dtype.
             ((2, 3, 16, 20), 16, 20, 0, None, None),
             ((2, 3, 16, 32), 16, 32, 0, (16, 16), "f32")]
    ran = []
    for dt in ("f16", "bf16", "f32"):
        for qs, sk, dv, kt, bs, bdt in cases:
            lead, sq, d = qs[:-2], qs[-2], qs[-1]
            q = rt.randn(qs, dt)
            k = rt.randn(lead + ((d, sk) if kt else (sk, d)), dt)
            v = rt.randn(lead + (sk, dv), dt)
            bias = rt.randn(bs, bdt or dt) if bs else None
            scale = C.c_float(1 / np.sqrt(d))
            exact = dt == "f32" or d % 8 != 0 or (bdt or dt) != dt
            what = "attention %s q%s sk %d dv %d k_trans %d bias %s" % (
                dt, qs, sk, dv, kt, bs)

            check = attention_check(rt, exact, rel.get(dt))
            ys, ls = lead + (sq, dv), lead + (sq,)
            c, g, _ = both(rt, gpu, "attention", q, k, v, bias,
                           rt.empty(ys, dt), rt.empty(ls, "f32"), scale, kt,
                           None, 0)
            check(what + " y", c[4], g[4])
            check(what + " lse", c[5], g[5])
            if not exact and dt == "f16" and qs == (2, 3, 64, 64):
                ran.append(not np.array_equal(c[4].bits(), g[4].bits()))
            y, lse = c[4], c[5]
            # Without lse (inference): y alone.
            c2, g2, _ = both(rt, gpu, "attention", q, k, v, bias,
                             rt.empty(ys, dt), None, scale, kt, None, 0)
            check(what + " y (no lse)", c2[4], g2[4])
            dy = rt.randn(ys, dt)
            c3, g3, _ = both(rt, gpu, "attention_grad", q, k, v, bias, y, lse,
                             dy, rt.empty(qs, dt), rt.empty(k.shape, dt),
                             rt.empty(v.shape, dt), scale, kt, None, 0)
            for j, name in ((7, "dq"), (8, "dk"), (9, "dv")):
                check(what + " " + name, c3[j], g3[j])
    # Unaligned tensors (one element past the allocations' alignment): the
    # host, exactly.
    gpu.offset = 1
    try:
        q, k, v = (rt.randn((2, 3, 32, 32), "f16") for _ in range(3))
        c, g, _ = both(rt, gpu, "attention", q, k, v, None,
                       rt.empty((2, 3, 32, 32), "f16"),
                       rt.empty((2, 3, 32), "f32"), C.c_float(0.125), 0,
                       None, 0)
        same(rt, "attention unaligned y", c[4], g[4])
        same(rt, "attention unaligned lse", c[5], g[5])
        c, g, _ = both(rt, gpu, "attention_grad", q, k, v, None, c[4], c[5],
                       rt.randn((2, 3, 32, 32), "f16"),
                       *(rt.empty((2, 3, 32, 32), "f16") for _ in range(3)),
                       C.c_float(0.125), 0, None, 0)
        for j, name in ((7, "dq"), (8, "dk"), (9, "dv")):
            same(rt, "attention_grad unaligned " + name, c[j], g[j])
    finally:
        gpu.offset = 0
    # Bad calls: the CPU's status and message.
    q = rt.randn((2, 4, 8), "f16")
    both(rt, gpu, "attention", q, rt.randn((2, 5, 8), "f16"),
         rt.randn((2, 6, 8), "f16"), None, rt.empty((2, 4, 8), "f16"), None,
         C.c_float(1), 0, None, 0)
    both(rt, gpu, "attention", q, rt.randn((2, 5, 8), "f16"),
         rt.randn((2, 5, 8), "bf16"), None, rt.empty((2, 4, 8), "f16"), None,
         C.c_float(1), 0, None, 0)
    both(rt, gpu, "attention_grad", q, q, q, None, rt.randn((2, 4, 8), "f16"),
         rt.empty((2, 4), "f32"), rt.randn((2, 4, 8), "f16"),
         rt.empty((2, 4, 8), "f16"), rt.empty((2, 4, 8), "f16"),
         rt.empty((2, 4, 7), "f16"), C.c_float(1), 0, None, 0)
    # Whether the device path ran (not an error: a build without cuDNN's
    # frontend runs attention on the host, bit for bit).
    if gpu.backend != "cpu":
        print("  attention f16: %s" % ("the device path ran" if all(ran)
                                       else "ran on the host"))


def test_attention_views(rt, gpu):
    """attention and attention_grad through strided views (Ops.def's views;
    runtime_training.py's test_attention_views) against Attention.cpp's,
    tolerances as test_attention's. cuDNN reads and writes them in place:
    q, k and v out of one packed [B, S, 3, H, D] projection (k in both
    layouts: a k_trans view of that k keeps D innermost), y, dy in
    [B, S, H, D] order, dq, dk and dv into one packed buffer; rank 5 with
    the leading dims folded into cuDNN's b, Sq != Sk. A k_trans k^T whose D
    is not innermost is gathered into packed scratch (dk scattered back).
    On the host, exactly: a view whose head dim is strided, leading dims
    whose strides do not fold. Elements outside the views stay NaN."""
    rel = {"f16": 2e-3, "bf16": 1.6e-2}
    B, S, H, D = 2, 64, 3, 64
    HD = H * D

    def packed(shape, offset=0):
        st = [int(np.prod(shape[j + 1:])) for j in range(len(shape))]
        return [offset] + list(shape) + st

    ran = []
    for dt in ("f16", "bf16", "f32"):
        scale = C.c_float(1 / np.sqrt(D))

        def run(what, host, kt, q, k, v, y, lse, vq, vk, vv, vy, dy, dq, dk,
                dv, vdy, vdq, vdk, vdv):
            what = "attention views %s %s" % (dt, what)
            exact = host or dt == "f32"

            check = attention_check(rt, exact, rel.get(dt))
            flat = vq + vk + vv + vy
            c, g, st = both(rt, gpu, "attention", q, k, v, None, y, lse,
                            scale, kt, i64s(flat), len(flat), shared=True)
            assert st == 0, "%s: %s" % (what, rt.error())
            check(what + " y", c[4], g[4])
            check(what + " lse", c[5], g[5])
            if dt == "f16" and not host:
                ran.append(not np.array_equal(c[4].bits(), g[4].bits()))
            flat += vdy + vdq + vdk + vdv
            c, g, st = both(rt, gpu, "attention_grad", q, k, v, None, c[4],
                            c[5], dy, dq, dk, dv, scale, kt, i64s(flat),
                            len(flat), shared=True)
            assert st == 0, "%s: %s" % (what, rt.error())
            for j, name in ((7, "dq"), (8, "dk"), (9, "dv")):
                check(what + " " + name, c[j], g[j])

        # Packed q/k/v in, [B, S, H, D] out; the gradients packed likewise.
        qkv = rt.randn((B, S, 3, H, D), dt)
        dims, pst = [B, H, S, D], [S * 3 * HD, D, 3 * HD, 1]
        pv = [[j * HD] + dims + pst for j in range(3)]
        ov = [0] + dims + [S * HD, D, HD, 1]
        for kt in (0, 1):
            kv = [HD, B, H, D, S, pst[0], pst[1], 1, pst[2]] if kt else pv[1]
            dqkv = rt.empty((B, S, 3, H, D), dt)
            run("packed q/k/v k_trans %d" % kt, False, kt, qkv, qkv, qkv,
                rt.empty((B, S, H, D), dt), rt.empty((B, H, S), "f32"),
                pv[0], kv, pv[2], ov, rt.randn((B, S, H, D), dt), dqkv, dqkv,
                dqkv, ov, pv[0], kv, pv[2])
        # Rank 5, Sq != Sk: q from [B1, B2, Sq, H, D], k and v from a packed
        # [B1, B2, Sk, 2, H, D], y contiguous; b = B1 B2.
        B1, B2, Sq, Sk = 2, 2, 32, 48
        vq = [0, B1, B2, H, Sq, D, B2 * Sq * HD, Sq * HD, D, HD, 1]
        kst = [B2 * Sk * 2 * HD, Sk * 2 * HD, D, 2 * HD, 1]
        vk, vv = ([j * HD, B1, B2, H, Sk, D] + kst for j in range(2))
        vy = packed((B1, B2, H, Sq, D))
        kvb, dkv = rt.randn((B1, B2, Sk, 2, H, D), dt), rt.empty(
            (B1, B2, Sk, 2, H, D), dt)
        run("rank 5 sq %d sk %d" % (Sq, Sk), False, 0,
            rt.randn((B1, B2, Sq, H, D), dt), kvb, kvb,
            rt.empty((B1, B2, H, Sq, D), dt), rt.empty((B1, B2, H, Sq), "f32"),
            vq, vk, vv, vy, rt.randn((B1, B2, H, Sq, D), dt),
            rt.empty((B1, B2, Sq, H, D), dt), dkv, dkv, vy, vq, vk, vv)
        # k_trans, k^T a contiguous [B, H, D, S] at an offset: D is not
        # innermost, so k (and dk) go through packed scratch.
        vp = packed((B, H, S, D))
        vkt = packed((B, H, D, S), B * H * D * S)
        run("k_trans staged", False, 1, rt.randn((B, H, S, D), dt),
            rt.randn((2, B, H, D, S), dt), rt.randn((B, H, S, D), dt),
            rt.empty((B, H, S, D), dt), rt.empty((B, H, S), "f32"), vp, vkt,
            vp, vp, rt.randn((B, H, S, D), dt), rt.empty((B, H, S, D), dt),
            rt.empty((2, B, H, D, S), dt), rt.empty((B, H, S, D), dt), vp,
            vp, vkt, vp)
        # The host: q's head dim of stride 2 (every other element, from 1);
        # y and dq over a [B2, B1, H, S, D] buffer (B1 and B2 do not fold).
        vq2 = [1] + dims + [H * S * D * 2, S * D * 2, D * 2, 2]
        run("head dim stride 2 (host)", True, 0,
            rt.randn((B, H, S, D, 2), dt), rt.randn((B, H, S, D), dt),
            rt.randn((B, H, S, D), dt), rt.empty((B, H, S, D), dt),
            rt.empty((B, H, S), "f32"), vq2, vp, vp, vp,
            rt.randn((B, H, S, D), dt), rt.empty((B, H, S, D, 2), dt),
            rt.empty((B, H, S, D), dt), rt.empty((B, H, S, D), dt), vp, vq2,
            vp, vp)
        v5 = packed((B1, B2, H, S, D))
        vsw = [0, B1, B2, H, S, D, H * S * D, B1 * H * S * D, S * D, D, 1]
        run("unfoldable leading dims (host)", True, 0,
            *(rt.randn((B1, B2, H, S, D), dt) for _ in range(3)),
            rt.empty((B2, B1, H, S, D), dt), rt.empty((B1, B2, H, S), "f32"),
            v5, v5, v5, vsw, rt.randn((B1, B2, H, S, D), dt),
            rt.empty((B2, B1, H, S, D), dt),
            *(rt.empty((B1, B2, H, S, D), dt) for _ in range(2)),
            v5, vsw, v5, v5)
    if gpu.backend != "cpu":
        print("  attention views f16: %s" % (
            "the device path ran" if all(ran) else "ran on the host"))


def test_cpu_fallback(rt, gpu):
    # Kernels without a CUDA override run the CPU code on managed memory.
    x = rt.randn((4, 6, 5), "f16")
    y = rt.empty((), "f32")
    c, g, _ = both(rt, gpu, "mse_loss", x, rt.randn((4, 6, 5), "f16"), y)
    same(rt, "mse_loss", c[2], g[2])
    yb = rt.empty((4, 6, 5), "f16")
    c, g, _ = both(rt, gpu, "batch_norm_inference", x, rt.randn((6,), "f32"),
                   rt.randn((6,), "f32"), rt.randn((6,), "f32"),
                   rt.uniform((6,), "f32", 0.5, 2.0), C.c_float(1e-5), yb)
    same(rt, "batch_norm_inference", c[6], g[6])
    # A fallback after GPU work on the same buffers sees that work.
    a = rt.randn((2, 32, 64), "f32")
    t, back = gpu.upload(a)
    y, yb = gpu.upload(rt.empty((2, 32, 64), "f32"))
    z, zb = gpu.upload(rt.empty((), "f32"))
    L = rt.lib
    assert L.amprt_relu(gpu.ctx, C.byref(t), C.byref(y)) == 0, gpu.err()
    assert L.amprt_mse_loss(gpu.ctx, C.byref(y), C.byref(t),
                            C.byref(z)) == 0, gpu.err()
    gpu.download(z, zb)
    gpu.free_all()
    mid, want = rt.empty((2, 32, 64), "f32"), rt.empty((), "f32")
    rt.ok("relu", a.ref, mid.ref)
    rt.ok("mse_loss", mid.ref, a.ref, want.ref)
    same(rt, "relu then mse_loss (fallback)", want, zb)


def test_collectives(rt, gpu):
    """Without a communicator a context is a group of one: all_reduce,
    all_reduce_many, all_gather and reduce_scatter copy x into y (on the
    device: a copy on the stream), broadcast leaves x alone; bad calls fail
    as on the CPU. The NCCL path needs a job of several GPUs."""
    for dt in FLOATS:
        x = special(rt, (5, 33), dt)
        for op in (0, 1, 2, 3):
            c, g, _ = both(rt, gpu, "all_reduce", x, rt.empty(x.shape, dt),
                           op)
            same(rt, "all_reduce", c[1], g[1])
        c, g, _ = both(rt, gpu, "reduce_scatter", x, rt.empty((165,), dt), 1)
        same(rt, "reduce_scatter", c[1], g[1])
        c, g, _ = both(rt, gpu, "all_gather", x, rt.empty((1, 5, 33), dt))
        same(rt, "all_gather", c[1], g[1])
        c, g, _ = both(rt, gpu, "broadcast", x, 0)
        same(rt, "broadcast", c[0], g[0])
    xi = Buf(rt.rng.integers(-1000, 1000, (17,)), "i64")
    c, g, _ = both(rt, gpu, "all_reduce", xi, rt.empty((17,), "i64"), 3)
    same(rt, "all_reduce i64", c[1], g[1])
    xs = [special(rt, (4, 3), "f32"), special(rt, (7,), "bf16"),
          Buf(rt.rng.integers(0, 9, (5,)), "i32")]
    c, g, _ = both(rt, gpu, "all_reduce_many", 3, xs,
                   [rt.empty(b.shape, b.dt) for b in xs], 0)
    for i in range(3):
        same(rt, "all_reduce_many ys[%d]" % i, c[2][i], g[2][i])
    # Bad calls: the CPU's status and message.
    x = rt.randn((2, 3), "f16")
    both(rt, gpu, "all_reduce", x, rt.empty((2, 3), "f16"), 7)
    both(rt, gpu, "all_reduce", x, rt.empty((2, 3), "f32"), 0)
    both(rt, gpu, "all_reduce", xi, rt.empty((17,), "i64"), 1)
    both(rt, gpu, "all_reduce_many", 2, [x, xi],
         [rt.empty((2, 3), "f16"), rt.empty((17,), "i64")], 1)
    both(rt, gpu, "broadcast", x, 1)
    both(rt, gpu, "all_gather", x, rt.empty((3,), "f16"))
    both(rt, gpu, "reduce_scatter", x, rt.empty((3,), "f16"), 0)


def test_compare_stats(rt, gpu):
    """abs_max_finite exact; compare_stats: counts and the largest errors
    exact, sums to 1e-6 relative (the CPU's sum 8 elements per lane in f32
    first, the device's in f64)."""
    for dt in FLOATS:
        for n, scale in ((3, 1.0), (100000, 65536.0), (4099, 2.0)):
            r = rt.rng.standard_normal(n) * 3
            x = r * (1 + 1e-3 * rt.rng.standard_normal(n)) * scale
            r[:3] = [np.inf, 0.0, 1e-9] if n > 3 else r[:3]
            x[1:4] = [np.nan, 0.0, -np.inf] if n > 4 else x[1:4]
            xb, rb = rt.buf(x, dt), rt.buf(r, "f32")
            c, g, _ = both(rt, gpu, "abs_max_finite", rb, rt.empty((1,), "f32"))
            same(rt, "abs_max_finite %s n %d" % (dt, n), c[1], g[1])
            mx = c[1]
            c, g, _ = both(rt, gpu, "compare_stats", xb, rb, mx,
                           C.c_float(scale), rt.empty((11,), "f64"),
                           rt.empty((1,), "f32"))
            same(rt, "compare_stats factor %s n %d" % (dt, n), c[5], g[5])
            cs, gs = c[4].arr, g[4].arr
            exact = [1, 2, 3, 4, 6, 7, 10]
            assert np.array_equal(cs[exact], gs[exact]), \
                "compare_stats %s n %d: GPU %s, CPU %s (seed %d)" % (
                    dt, n, gs, cs, rt.seed)
            assert np.allclose(gs, cs, rtol=1e-6, atol=1e-300), \
                "compare_stats %s n %d: GPU %s, CPU %s (seed %d)" % (
                    dt, n, gs, cs, rt.seed)


def test_memory_accounting(rt, gpu):
    """amprt_memory_stats on the device context: the workspace counts from
    the start, buffers while they live, a kernel's stream-ordered scratch
    against the limit (refused cleanly, then the same call runs without)."""
    L = rt.lib
    st = MemoryStats()
    gpu.free_all()

    def stats():
        assert L.amprt_memory_stats_get(gpu.ctx, C.byref(st)) == 0
        return st.in_use
    base = stats()
    assert st.device_total > 0 and 0 < st.device_free <= st.device_total
    if gpu.backend == "cuda":
        assert base >= 32 << 20, "the 32 MiB workspace is not counted"
    x, y = rt.buf(rt.rng.standard_normal(1 << 20), "f32"), rt.empty((1,), "f32")
    tx, _ = gpu.upload(x)
    ty, back = gpu.upload(y)
    held = stats()
    assert held == base + x.arr.nbytes + 64 + y.arr.nbytes + 64, (held, base)
    # abs_max_finite's per-block partial maxima are scratch on the device:
    # with no room left, the call is refused and counted.
    assert L.amprt_set_memory_limit(gpu.ctx, held) == 0
    refused = st.refused
    status = L.amprt_abs_max_finite(gpu.ctx, C.byref(tx), C.byref(ty))
    if gpu.backend == "cuda":
        assert status == 5, (status, gpu.err())
        assert "memory limit" in gpu.err(), gpu.err()
        stats()
        assert st.refused == refused + 1 and st.in_use == held
    assert L.amprt_set_memory_limit(gpu.ctx, 0) == 0
    assert L.amprt_abs_max_finite(gpu.ctx, C.byref(tx), C.byref(ty)) == 0
    gpu.download(ty, back)
    same(rt, "abs_max_finite after the limit", back,
         Buf(np.array([np.max(np.abs(x.arr))], np.float32), "f32"))
    assert L.amprt_synchronize(gpu.ctx) == 0 and stats() == held
    assert st.peak > held or gpu.backend != "cuda"
    gpu.free_all()
    assert stats() == base


def test_unaligned(rt, gpu):
    """The element-wise and multi-tensor kernels again with every tensor one
    element off its allocation's alignment: the per-element kernels that
    the packet kernels fall back to give the same bits."""
    gpu.offset = 1
    try:
        for t in (test_cast, test_binary, test_activations,
                  test_unscale_check_gate, test_slopes_sign_logic):
            t(rt, gpu)
    finally:
        gpu.offset = 0


def queue_api(L):
    """argtypes of ABI 9's calls (steps without waiting)."""
    vp, u64 = C.c_void_p, C.c_uint64
    L.amprt_set_random_offset.argtypes = [vp, u64]
    L.amprt_advance_random_offset.argtypes = [vp, u64]
    L.amprt_set_data_checks.argtypes = [vp, C.c_int32]
    L.amprt_host_alloc.argtypes = [vp, C.c_size_t, C.POINTER(vp)]
    L.amprt_host_free.argtypes = [vp, vp]
    L.amprt_memcpy_async.argtypes = [vp, vp, vp, C.c_size_t, C.c_int32]
    L.amprt_fence_record.argtypes = [vp, C.POINTER(u64)]
    L.amprt_fence_wait.argtypes = [vp, u64]
    L.amprt_graph_begin.argtypes = [vp]
    L.amprt_graph_end.argtypes = [vp, C.POINTER(vp)]
    L.amprt_graph_launch.argtypes = [vp, vp]
    L.amprt_graph_destroy.argtypes = [vp, vp]


def test_queue(rt, gpu):
    """ABI 9, steps without waiting: the random offset advanced on the queue
    (dropout, random_uniform, random_fill with seed_step draw the CPU's bits
    for the same offset), a queued copy round trip through host memory and a
    fence, deferred data checks (the call returns, the next wait reports the
    immediate message once, then the context works again), and on CUDA a
    recorded graph launched twice (the CPU's results for each launch's
    offset) and a recording refused by a call that would wait or run on the
    host. The CPU backend (--gpu-backend cpu) fails its data checks at
    once and has no graphs."""
    L = rt.lib
    queue_api(L)
    g = gpu.ctx
    cuda = gpu.backend == "cuda"

    def ok(st, what):
        assert st == 0, "%s: status %d: %s" % (what, st, gpu.err())

    def both_offsets(off, delta):
        for ctx in (rt.ctx, g):
            assert L.amprt_set_random_offset(ctx, off) == 0
            assert L.amprt_advance_random_offset(ctx, delta) == 0

    # The offset moved by amprt_advance_random_offset.
    try:
        for off, delta in ((0, 5), (7, 3), (2 ** 64 - 2, 3)):
            both_offsets(off, delta)
            x = special(rt, (9, 70), "f32")
            c, gg, _ = both(rt, gpu, "dropout", x,
                            rt.buf(np.array(0.3), "f32"),
                            Buf(np.array(1), "bool"), 4321,
                            rt.empty(x.shape, "f32"),
                            rt.empty(x.shape, "bool"))
            same(rt, "dropout after advance %d" % delta, c[4], gg[4])
            same(rt, "dropout mask after advance %d" % delta, c[5], gg[5])
            c, gg, _ = both(rt, gpu, "random_uniform", rt.empty((33,), "f32"),
                            99, C.c_double(-1.0), C.c_double(2.0))
            same(rt, "random_uniform after advance", c[0], gg[0])
            for dt, classes in (("f32", 1), ("bf16", 1), ("i64", 1000),
                                ("i32", 7), ("bool", 1)):
                y = Buf(np.zeros((5, 13), NP_STORAGE[dt]), dt)
                for seed, step in ((3, 0), (3, 1),
                                   (0xFEDCBA9876543210, 0x9E3779B97F4A7C15)):
                    c, gg, _ = both(rt, gpu, "random_fill", y,
                                    C.c_uint64(seed), C.c_uint64(step),
                                    classes)
                    same(rt, "random_fill %s seed_step %d" % (dt, step),
                         c[0], gg[0])
    finally:
        for ctx in (rt.ctx, g):
            L.amprt_set_random_offset(ctx, 0)

    # A queued copy to the device and back through amprt_host_alloc memory;
    # a fence in slot use again after a full turn of the ring.
    src = rt.rng.standard_normal(1000).astype(np.float32)
    nb = src.nbytes
    hin, hout, dev = C.c_void_p(), C.c_void_p(), C.c_void_p()
    ok(L.amprt_host_alloc(g, nb, C.byref(hin)), "host_alloc")
    ok(L.amprt_host_alloc(g, nb, C.byref(hout)), "host_alloc")
    assert hin.value % 64 == 0 and hout.value % 64 == 0
    ok(L.amprt_malloc(g, nb, C.byref(dev)), "malloc")
    C.memmove(hin, src.ctypes.data, nb)
    fences = []
    for i in range(70):
        f = C.c_uint64()
        ok(L.amprt_fence_record(g, C.byref(f)), "fence_record")
        fences.append(f.value)
    assert fences == list(range(fences[0], fences[0] + 70)), fences[:3]
    ok(L.amprt_memcpy_async(g, dev, hin, nb, 1), "memcpy_async in")
    ok(L.amprt_memcpy_async(g, hout, dev, nb, 2), "memcpy_async out")
    f = C.c_uint64()
    ok(L.amprt_fence_record(g, C.byref(f)), "fence_record")
    ok(L.amprt_fence_wait(g, fences[2]), "fence_wait, a slot used again")
    ok(L.amprt_fence_wait(g, f.value), "fence_wait")
    assert L.amprt_fence_wait(g, f.value + 1) == 1, "fence not recorded"
    back = np.frombuffer((C.c_char * nb).from_address(hout.value),
                         np.float32).copy()
    assert np.array_equal(back, src), "memcpy_async round trip"
    ok(L.amprt_free(g, dev), "free")
    ok(L.amprt_host_free(g, hin), "host_free")
    ok(L.amprt_host_free(g, hout), "host_free")

    # Deferred data checks: the CPU's immediate status and message, given by
    # the next wait (synchronize, fence_wait, a copy to the host) on CUDA.
    waits = ["synchronize", "fence", "copy"]

    def deferred(name, *args):
        f = getattr(L, "amprt_" + name)
        sc = f(rt.ctx, *[a.ref if isinstance(a, Buf) else a for a in args])
        mc = rt.error()
        assert sc != 0, name
        gargs, keep = [], []
        for a in args:
            if isinstance(a, Buf):
                t, b = gpu.upload(a)
                keep.append((t, b))
                gargs.append(C.byref(t))
            else:
                gargs.append(a)
        sg = f(g, *gargs)
        if cuda:
            assert sg == 0, "%s: deferred, status %d: %s" % (name, sg,
                                                             gpu.err())
            how = waits[0]
            waits.append(waits.pop(0))
            full = [(t, b) for t, b in keep if b.arr.nbytes]
            if how == "copy" and not full:
                how = "synchronize"  # a copy of no bytes does not wait
            if how == "synchronize":
                sg = L.amprt_synchronize(g)
            elif how == "fence":
                fe = C.c_uint64()
                ok(L.amprt_fence_record(g, C.byref(fe)), "fence_record")
                sg = L.amprt_fence_wait(g, fe.value)
            else:
                t, b = full[0]
                sg = L.amprt_memcpy(g, b.arr.ctypes.data, t.data,
                                    b.arr.nbytes, 2)
        assert (sg, gpu.err()) == (sc, mc), (
            "%s deferred: GPU %d %r, CPU %d %r (after a %s)"
            % (name, sg, gpu.err(), sc, mc, how if cuda else "call"))
        ok(L.amprt_synchronize(g), "synchronize after the report")
        gpu.free_all()

    ok(L.amprt_set_data_checks(g, 1), "set_data_checks")
    assert L.amprt_set_data_checks(g, 2) == 1
    try:
        lab = Buf(np.array([1, 7, 2, -1], np.int64), "i64")
        deferred("softmax_cross_entropy_loss", rt.randn((4, 5), "f32"), lab,
                 None, 1, 0, 0, rt.empty((), "f32"), None)
        deferred("softmax_cross_entropy_loss_grad",
                 Buf(np.array(1.0, np.float32), "f32"),
                 rt.randn((4, 5), "f32"), Buf(lab.arr.astype(np.int32), "i32"),
                 None, 2, 0, -100, rt.empty((4, 5), "f32"))
        idx = Buf(np.array([[0, 4], [-5, 9], [7, 1]], np.int64), "i64")
        deferred("gather", rt.randn((5, 3), "f16"), idx, 0,
                 rt.empty((3, 2, 3), "f16"))
        deferred("gather_grad", rt.randn((3, 2, 3), "f32"), idx, 0,
                 rt.empty((5, 3), "f32"))
        deferred("gather_elements", rt.randn((3, 4), "f32"),
                 Buf(np.array([[0, 1, 9, 0]] * 3, np.int32), "i32"), 1,
                 rt.empty((3, 4), "f32"))
        deferred("gather_nd", rt.randn((3, 4), "f32"),
                 Buf(np.array([[0, 1], [2, -7]], np.int64), "i64"), 0,
                 rt.empty((2,), "f32"))
        deferred("bernoulli", Buf(np.array([0.2, 0.5, 1.5], np.float32),
                                  "f32"), rt.empty((3,), "f32"), 1)
        deferred("max_pool_grad", rt.randn((1, 1, 2, 2), "f32"),
                 Buf(np.array([0, 3, 16, 1], np.int64).reshape(1, 1, 2, 2),
                     "i64"), rt.empty((1, 1, 4, 4), "f32"))
        for r in (1.0, -0.5):
            deferred("dropout", rt.randn((4, 4), "f32"),
                     rt.buf(np.array(r), "f32"), None, 1,
                     rt.empty((4, 4), "f32"), None)
            deferred("dropout_grad", rt.randn((4, 4), "f32"),
                     Buf(np.ones((4, 4)), "bool"), rt.buf(np.array(r), "bf16"),
                     Buf(np.array(1), "bool"), rt.empty((4, 4), "f32"))
            deferred("dropout", rt.randn((0, 4), "f32"),
                     rt.buf(np.array(r), "f32"), None, 1,
                     rt.empty((0, 4), "f32"), None)
        if cuda:  # the first failure wins, and is reported once
            td, _ = gpu.upload(rt.randn((5, 3), "f32"))
            ti, _ = gpu.upload(idx)
            ty, _ = gpu.upload(rt.empty((3, 2, 3), "f32"))
            tp, _ = gpu.upload(Buf(np.array([2.0, 0.5], np.float32), "f32"))
            tq, _ = gpu.upload(rt.empty((2,), "f32"))
            ok(L.amprt_gather(g, C.byref(td), C.byref(ti), 0, C.byref(ty)),
               "gather, a bad index")
            ok(L.amprt_bernoulli(g, C.byref(tp), C.byref(tq), 3),
               "bernoulli, a bad p")
            assert L.amprt_synchronize(g) == 1
            assert gpu.err() == "gather: index 9 at 3 outside [-5, 5)", \
                gpu.err()
            ok(L.amprt_synchronize(g), "synchronize after the report")
            gpu.free_all()
        # The context then works as before.
        x = rt.randn((4, 5), "f32")
        c, gg, _ = both(rt, gpu, "softmax_cross_entropy_loss", x,
                        Buf(np.array([1, 4, 2, 0], np.int64), "i64"), None,
                        1, 0, 0, rt.empty((), "f32"), rt.empty((4, 5), "f32"))
        same(rt, "sce after a deferred failure", c[6], gg[6], ulps=4)
        c, gg, _ = both(rt, gpu, "dropout", x, rt.buf(np.array(0.5), "f32"),
                        Buf(np.array(1), "bool"), 9, rt.empty((4, 5), "f32"),
                        rt.empty((4, 5), "bool"))
        same(rt, "dropout after a deferred failure", c[4], gg[4])
        if cuda:
            test_queue_graphs(rt, gpu, ok)
        else:
            assert L.amprt_graph_begin(g) == 4 and "no graphs" in gpu.err()
    finally:
        L.amprt_set_data_checks(g, 0)
        L.amprt_set_random_offset(g, 0)
        L.amprt_set_random_offset(rt.ctx, 0)
        gpu.free_all()


def test_queue_graphs(rt, gpu, ok):
    """test_queue's graphs (CUDA, deferred checks): a step recorded once
    (fill, add, sum of 17 inputs through an uploaded table, dropout,
    random_fill with seed_step, the offset advanced inside), launched twice,
    against the CPU at each launch's offset; a bad label found by a launch;
    the memory the graph holds counted while it lives; a recording refused
    by a call that would wait or run on the host."""
    L = rt.lib
    g = gpu.ctx
    st = MemoryStats()

    def in_use():
        assert L.amprt_memory_stats_get(g, C.byref(st)) == 0
        return st.in_use

    shape = (48, 33)
    x = rt.randn(shape, "f32")
    parts = [rt.randn(shape, "f32") for _ in range(17)]
    ratio, train = rt.buf(np.array(0.25), "f32"), Buf(np.array(1), "bool")
    labels = Buf(rt.rng.integers(0, shape[1], (shape[0],)), "i64")
    dev = {}
    for name, b in (("x", x), ("ratio", ratio), ("train", train),
                    ("labels", labels), ("y", rt.empty(shape, "f32")),
                    ("z", rt.empty(shape, "f32")),
                    ("w", rt.empty(shape, "f32")),
                    ("m", rt.empty(shape, "bool")),
                    ("s", rt.empty(shape, "f32")),
                    ("loss", rt.empty((), "f32")),
                    ("batch", Buf(np.zeros(50, np.int64), "i64"))):
        dev[name] = gpu.upload(b)
    ps = [gpu.upload(b) for b in parts]
    parr = (Tensor * len(ps))(*[t for t, _ in ps])

    def T(name):
        return C.byref(dev[name][0])

    def record():
        ok(L.amprt_advance_random_offset(g, 1), "advance (recorded)")
        ok(L.amprt_fill(g, T("y"), C.c_double(0.5)), "fill")
        ok(L.amprt_add(g, T("x"), T("y"), T("z")), "add")
        ok(L.amprt_sum(g, parr, len(ps), T("s")), "sum")
        ok(L.amprt_dropout(g, T("z"), T("ratio"), T("train"), 77, T("w"),
                           T("m")), "dropout")
        ok(L.amprt_random_fill(g, T("batch"), C.c_uint64(5), C.c_uint64(3),
                               10), "random_fill")
        ok(L.amprt_softmax_cross_entropy_loss(g, T("s"), T("labels"), None,
                                              1, 0, 0, T("loss"), None),
           "softmax_cross_entropy_loss")

    def expect(offset):
        """The CPU's step at `offset` (after the graph's advance)."""
        assert L.amprt_set_random_offset(rt.ctx, offset) == 0
        y, z = rt.empty(shape, "f32"), rt.empty(shape, "f32")
        w, m, s = (rt.empty(shape, "f32"), rt.empty(shape, "bool"),
                   rt.empty(shape, "f32"))
        batch, loss = Buf(np.zeros(50, np.int64), "i64"), rt.empty((), "f32")
        rt.ok("fill", y.ref, C.c_double(0.5))
        rt.ok("add", x.ref, y.ref, z.ref)
        rt.ok("sum", tensor_array(parts), len(parts), s.ref)
        rt.ok("dropout", z.ref, ratio.ref, train.ref, 77, w.ref, m.ref)
        rt.ok("random_fill", batch.ref, C.c_uint64(5), C.c_uint64(3), 10)
        rt.ok("softmax_cross_entropy_loss", s.ref, labels.ref, None, 1, 0, 0,
              loss.ref, None)
        return dict(w=w, m=m, s=s, batch=batch, loss=loss)

    def got(name):
        t, b = dev[name]
        gpu.download(t, b)
        return b

    before = in_use()
    ok(L.amprt_set_random_offset(g, 10), "set_random_offset")
    ok(L.amprt_graph_begin(g), "graph_begin")
    assert L.amprt_graph_begin(g) == 1, "a second graph_begin"
    record()
    graph = C.c_void_p()
    ok(L.amprt_graph_end(g, C.byref(graph)), "graph_end")
    assert graph.value
    held = in_use()
    assert held >= before, (held, before)
    # Nothing ran while recording.
    same(rt, "nothing ran while recording", got("w"),
         rt.empty(shape, "f32"))
    for launch in (1, 2):
        ok(L.amprt_graph_launch(g, graph), "graph_launch %d" % launch)
        f = C.c_uint64()
        ok(L.amprt_fence_record(g, C.byref(f)), "fence_record")
        ok(L.amprt_fence_wait(g, f.value), "fence_wait")
        want = expect(10 + launch)
        for name in ("w", "m", "s", "batch"):
            same(rt, "graph launch %d: %s" % (launch, name), want[name],
                 got(name))
        same(rt, "graph launch %d: loss" % launch, want["loss"], got("loss"),
             ulps=4)
    # The labels are data: a bad one is found by the next launch.
    bad = Buf(labels.arr.copy(), "i64")
    bad.arr[5] = shape[1] + 3
    t, _ = dev["labels"]
    ok(L.amprt_memcpy(g, t.data, bad.arr.ctypes.data, bad.arr.nbytes, 1),
       "labels in")
    ok(L.amprt_graph_launch(g, graph), "graph_launch, a bad label")
    assert L.amprt_synchronize(g) == 1
    assert gpu.err() == ("softmax_cross_entropy_loss: label %d at 5 outside "
                         "[0, %d)" % (shape[1] + 3, shape[1])), gpu.err()
    ok(L.amprt_memcpy(g, t.data, labels.arr.ctypes.data, labels.arr.nbytes,
                      1), "labels in")
    ok(L.amprt_graph_destroy(g, graph), "graph_destroy")
    assert in_use() == before, (st.in_use, before)

    # Calls that cannot be recorded: the recording makes no graph, and
    # nothing it held ran.
    host = rt.randn(shape, "f32")
    for refused in ("memcpy", "mse_loss", "synchronize"):
        ok(L.amprt_graph_begin(g), "graph_begin")
        ok(L.amprt_fill(g, T("y"), C.c_double(3.0)), "fill (recorded)")
        if refused == "memcpy":
            s_ = L.amprt_memcpy(g, dev["x"][0].data, host.arr.ctypes.data,
                                host.arr.nbytes, 1)
        elif refused == "mse_loss":  # no CUDA kernel: it would run on the host
            s_ = L.amprt_mse_loss(g, T("x"), T("y"), T("loss"))
        else:
            s_ = L.amprt_synchronize(g)
        msg = gpu.err()
        assert s_ == 4 and "cannot be recorded" in msg, (refused, s_, msg)
        graph = C.c_void_p()
        assert L.amprt_graph_end(g, C.byref(graph)) == 4, refused
        assert not graph.value and "no graph" in gpu.err(), gpu.err()
        # The context runs eagerly again; the recorded fill never ran.
        same(rt, "refused %s: y as before" % refused, got("y"),
             Buf(np.full(shape, 0.5, np.float32), "f32"))
        ok(L.amprt_fill(g, T("z"), C.c_double(2.0)), "fill")
        same(rt, "refused %s: eager fill" % refused, got("z"),
             Buf(np.full(shape, 2.0, np.float32), "f32"))
    assert in_use() == before, (st.in_use, before)
    gpu.free_all()


TESTS = [test_cast, test_binary, test_activations, test_fill_copy_accumulate,
         test_gemm, test_matmul, test_unscale_finite,
         test_unscale_check_gate, test_loss_scaler,
         test_sgd, test_adamw, test_softmax, test_cross_entropy,
         test_reduce_sum, test_more_binary, test_more_unary,
         test_slopes_sign_logic,
         test_where_sum_scale, test_shape_ops, test_concat_slice,
         test_index64,
         test_dropout, test_random, test_select, test_normalization,
         test_batch_norm_rows, test_max_pool,
         test_average_pool, test_pool_channels_last, test_recurrent,
         test_conv, test_conv_channels_last, test_attention,
         test_attention_views,
         test_cpu_fallback,
         test_collectives, test_compare_stats, test_memory_accounting,
         test_unaligned, test_queue]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--ops-def", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-k", default=None, help="run tests matching this")
    ap.add_argument("--gpu-backend", default="cuda",
                    help="the backend compared with the CPU (cpu: check "
                         "this script without a GPU)")
    a = ap.parse_args()
    if os.environ.get("AMPRT_CUDA_ALLOW_TF32", "0") not in ("", "0"):
        print("FAIL: unset AMPRT_CUDA_ALLOW_TF32 (TF32 is outside the "
              "tolerances)")
        return 1
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4),
                                                            "little")
    rt = Runtime(a.lib, a.ops_def, seed)
    gpu = Gpu(rt, a.gpu_backend)
    if gpu.ctx is None:
        print("SKIP: no CUDA device (%s)" % gpu.error)
        return 0
    print("seed %d (rerun with --seed %d)" % (seed, seed))
    print("backend %s against cpu" % rt.lib.amprt_backend_name(
        gpu.ctx).decode())
    rt.filter = a.k
    return rt.run([_bind(t, gpu) for t in TESTS])


def _bind(t, gpu):
    def f(rt):
        return t(rt, gpu)
    f.__name__ = t.__name__
    return f


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
