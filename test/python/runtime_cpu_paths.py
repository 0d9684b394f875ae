#!/usr/bin/env python3
# ===- runtime_cpu_paths.py - the CPU fast path against the reference ---=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""The CPU backend's two arithmetic paths (ABI 4, amprt_cpu_set_path).

On fresh random inputs (seed printed; --seed reproduces), sizes large
enough that the fast path's GEMMs (oneDNN when built with it) and the
thread pool take them:
  * the configuration calls: thread count and path set, read back and
    refused when out of range; the description names the path;
  * gemm (transposes, alpha, beta, a broadcast c), matmul (broadcast batch
    dims, vectors) and fused_matmul, f32/f16/bf16 operands, f32 and
    16-bit results, and conv/conv_grad: the fast path and the reference
    path each within the float64 bound of runtime_kernels.py (f32
    accumulation: (K + 4) 2^-24 sum|a||b|, one rounding into the output),
    so within twice that of each other;
  * thread counts 1 and 2 on sizes past the pool's threshold: the same
    bits for every kernel but the fast path's GEMM, which stays within the
    same bound;
  * two contexts on two host threads running one GEMM geometry at once.

    runtime_cpu_paths.py --lib libAmpRuntime.so --ops-def Ops.def
"""

import sys

import numpy as np

from runtime_harness import Runtime, window

FAST, REFERENCE = 0, 1


def test_configuration(rt):
    L = rt.lib
    machine = L.amprt_cpu_threads()
    assert machine >= 1
    assert L.amprt_cpu_set_threads(-1) == 1
    assert b"thread count -1 outside [0, 4096]" in L.amprt_last_error(None)
    assert L.amprt_cpu_threads() == machine, "a refused count changed it"
    assert L.amprt_cpu_set_threads(3) == 0 and L.amprt_cpu_threads() == 3
    assert b"3 threads" in L.amprt_cpu_describe()
    assert L.amprt_cpu_set_threads(1) == 0
    assert L.amprt_cpu_describe().endswith(b", 1 thread")
    assert L.amprt_cpu_set_threads(0) == 0 and L.amprt_cpu_threads() >= 1
    before = L.amprt_cpu_path_in_force()
    assert L.amprt_cpu_set_path(7) == 1
    assert b"unknown path 7" in L.amprt_last_error(None)
    assert L.amprt_cpu_path_in_force() == before
    assert L.amprt_cpu_set_path(REFERENCE) == 0
    assert L.amprt_cpu_path_in_force() == REFERENCE
    assert L.amprt_cpu_describe().startswith(b"reference loops, ")
    assert L.amprt_cpu_set_path(FAST) == 0
    desc = L.amprt_cpu_describe()
    assert desc.startswith(b"fast: ") and b"oneDNN" in desc, desc
    print("  fast path:", desc.decode())
    assert L.amprt_cpu_set_threads(4097) == 1
    assert b"outside [0, 4096]" in L.amprt_last_error(None)


def both_paths(rt, run):
    """run() under the reference path, then the fast path: (ref, fast)."""
    L = rt.lib
    out = []
    for path in (REFERENCE, FAST):
        assert L.amprt_cpu_set_path(path) == 0
        out.append(run())
    assert L.amprt_cpu_set_path(FAST) == 0
    return out


def check_pair(rt, what, outs, ref, dt, scale, terms):
    """Both paths' outputs within the float64 bound, so within twice it of
    each other; records the largest fast-vs-reference difference."""
    r, f = outs
    rt.close(what + " reference", r, ref, dt, scale=scale, terms=terms)
    rt.close(what + " fast", f, ref, dt, scale=scale, terms=terms)
    diff = float(np.max(np.abs(r.f64() - f.f64()) /
                        (np.abs(scale) * 2.0 ** -24 + 1e-30)))
    if dt == "f32":
        rt.worst_diff[what] = max(rt.worst_diff.get(what, 0.0), diff)


GEMMS = [  # M, N, K (large enough for the fast path's threads)
    (70, 130, 257), (1, 300, 64), (257, 3, 96), (128, 128, 128)]


def test_gemm(rt):
    for dt, odt in (("f32", "f32"), ("bf16", "bf16"), ("bf16", "f32"),
                    ("f16", "f16")):
        for M, N, K in GEMMS:
            for ta, tb in ((0, 0), (1, 0), (0, 1), (1, 1)):
                a = rt.randn((K, M) if ta else (M, K), dt)
                b = rt.randn((N, K) if tb else (K, N), dt)
                c = rt.randn((N,), "f32")
                A = a.f64().T if ta else a.f64()
                B = b.f64().T if tb else b.f64()

                def run():
                    y = rt.empty((M, N), odt)
                    rt.ok("gemm", a.ref, b.ref, c.ref, y.ref, ta, tb, 0.75,
                          0.5)
                    return y
                ref = 0.75 * A @ B + 0.5 * c.f64()
                scale = 0.75 * np.abs(A) @ np.abs(B) + 0.5 * np.abs(c.f64())
                check_pair(rt, "gemm", both_paths(rt, run), ref, odt, scale,
                           K + 1)


def test_gemm_relu(rt):
    """gemm_relu (amprt-fuse's Gemm + Relu) gives, on both paths, the bits of
    gemm then relu: the relu before the one rounding (NaN kept, -0 to +0),
    with a bias of each broadcast shape and without, in every float dtype, on
    one thread and (the last, large case) on the pool; and relu(the float64
    product) within the bound."""
    cases = [(M, N, K, (N,)) for M, N, K in GEMMS[:3]] + [
        (70, 130, 257, None), (70, 130, 257, (70, 1)), (70, 130, 257, (1, 1)),
        (1100, 1000, 16, (1100, 1))]  # 2 M N above the pool's threshold
    for dt, odt in (("f32", "f32"), ("bf16", "bf16"), ("f16", "f16"),
                    ("f16", "f32")):
        for n, (M, N, K, cshape) in enumerate(cases):
            ta, tb = n % 2, 1 - n % 2
            a = rt.randn((K, M) if ta else (M, K), dt)
            b = rt.randn((N, K) if tb else (K, N), dt)
            if n == 0:  # a NaN in the product: relu keeps it
                a.arr.reshape(-1)[0] = (np.uint16(0x7FC0) if dt == "bf16"
                                        else a.arr.dtype.type(np.nan))
            c = rt.randn(cshape, "f32") if cshape else None
            beta = 0.5 if c else 0.0
            cref = c.ref if c else None

            def unfused():
                y = rt.empty((M, N), odt)
                z = rt.empty((M, N), odt)
                rt.ok("gemm", a.ref, b.ref, cref, y.ref, ta, tb, 0.75, beta)
                rt.ok("relu", y.ref, z.ref)
                return z

            def fused():
                z = rt.empty((M, N), odt)
                rt.ok("gemm_relu", a.ref, b.ref, cref, z.ref, ta, tb, 0.75,
                      beta)
                return z
            for u, f in zip(both_paths(rt, unfused), both_paths(rt, fused)):
                assert (u.bits() == f.bits()).all(), \
                    "gemm_relu %s->%s %dx%dx%d c %s: not gemm then relu" \
                    % (dt, odt, M, N, K, cshape)
            A = a.f64().T if ta else a.f64()
            B = b.f64().T if tb else b.f64()
            with np.errstate(invalid="ignore"):
                ref = 0.75 * A @ B
                if c:
                    ref = ref + beta * c.f64()
                scale = 0.75 * np.abs(A) @ np.abs(B)
            keep = np.isfinite(ref)
            z = f.f64()
            assert n != 0 or (~keep).any(), "no NaN in the first case"
            assert np.isnan(z[~keep]).all(), "a NaN was not kept"
            rt.close("gemm_relu", z[keep], np.maximum(ref, 0)[keep], odt,
                     scale=scale[keep] + 1.0, terms=K + 1)


MATMULS = [  # a shape, b shape (broadcast batches, vectors)
    ((4, 33, 65), (65, 40)), ((2, 1, 30, 64), (3, 64, 20)), ((65,), (65, 50)),
    ((3, 40, 65), (65,)), ((6, 32, 16), (6, 16, 32)), ((1, 200, 48), (4, 48, 8))]


def test_matmul(rt):
    for dt in ("f32", "bf16", "f16"):
        for sa, sb in MATMULS:
            a, b = rt.randn(sa, dt), rt.randn(sb, dt)
            ref = np.matmul(a.f64(), b.f64())
            scale = np.matmul(np.abs(a.f64()), np.abs(b.f64()))

            def run():
                y = rt.empty(ref.shape, dt)
                rt.ok("matmul", a.ref, b.ref, y.ref)
                return y
            check_pair(rt, "matmul", both_paths(rt, run), ref, dt, scale,
                       sa[-1])
        # Attention's shapes: [batch, heads, seq, dk] x its transpose.
        for ta, tb in ((0, 1), (1, 0), (1, 1)):
            a = rt.randn((2, 3, 24, 40) if ta else (2, 3, 40, 24), dt)
            b = rt.randn((2, 3, 36, 24) if tb else (2, 3, 24, 36), dt)
            A = np.swapaxes(a.f64(), -1, -2) if ta else a.f64()
            B = np.swapaxes(b.f64(), -1, -2) if tb else b.f64()

            def run():
                y = rt.empty((2, 3, 40, 36), dt)
                rt.ok("fused_matmul", a.ref, b.ref, y.ref, ta, tb, 0.125)
                return y
            check_pair(rt, "fused_matmul", both_paths(rt, run),
                       0.125 * A @ B, dt, 0.125 * np.abs(A) @ np.abs(B), 24)


def test_conv(rt):
    cases = [((4, 16, 14, 14), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), 1),
             ((2, 12, 15, 15), (12, 3, 3, 3), (2, 2), (1, 0, 1, 2), 4),
             ((8, 32, 7, 7), (64, 32, 1, 1), (1, 1), (0, 0, 0, 0), 1)]
    for dt in ("f32", "bf16"):
        for xs, ws, st, pd, grp in cases:
            x, w, b = rt.randn(xs, dt), rt.randn(ws, dt), rt.randn(ws[:1], dt)
            win = window(ws[2:], st, pd, (1, 1), grp)

            def fwd():
                y = rt.empty(out_shape, dt)
                rt.ok("conv", x.ref, w.ref, b.ref, y.ref, win)
                return y
            # The output shape from a reference run.
            assert rt.lib.amprt_cpu_set_path(REFERENCE) == 0
            H = (xs[2] + pd[0] + pd[2] - ws[2]) // st[0] + 1
            W = (xs[3] + pd[1] + pd[3] - ws[3]) // st[1] + 1
            out_shape = (xs[0], ws[0], H, W)
            r, f = both_paths(rt, fwd)
            # No float64 conv here (runtime_kernels.py has it): the paths
            # against each other, the bound from the magnitudes.
            terms = ws[1] * ws[2] * ws[3] + 1
            absw = rt.buf(np.abs(w.f64()), "f32")
            absx = rt.buf(np.abs(x.f64()), "f32")
            absb = rt.buf(np.abs(b.f64()), "f32")
            sc = rt.empty(out_shape, "f32")
            rt.ok("conv", absx.ref, absw.ref, absb.ref, sc.ref, win)
            tol = 2 * ((terms + 4) * 2.0 ** -24 * sc.f64() +
                       UNIT16.get(dt, 0) * np.abs(r.f64()))
            err = np.abs(r.f64() - f.f64())
            assert (err <= tol).all(), "conv %s %s: fast vs reference %g" % (
                dt, xs, float(np.max(err - tol)))
            dy = rt.randn(out_shape, dt)

            def bwd():
                dx, dw, db = (rt.empty(xs, dt), rt.empty(ws, dt),
                              rt.empty(ws[:1], dt))
                rt.ok("conv_grad", dy.ref, x.ref, w.ref, dx.ref, dw.ref,
                      db.ref, win)
                return dx, dw, db
            (rdx, rdw, rdb), (fdx, fdw, fdb) = both_paths(rt, bwd)
            # The sums of |terms|: the same gradient of |dy|, |x|, |w|.
            absdy = rt.buf(np.abs(dy.f64()), "f32")
            sdx, sdw, sdb = (rt.empty(xs, "f32"), rt.empty(ws, "f32"),
                             rt.empty(ws[:1], "f32"))
            rt.ok("conv_grad", absdy.ref, absx.ref, absw.ref, sdx.ref,
                  sdw.ref, sdb.ref, win)
            n_dw = out_shape[0] * out_shape[2] * out_shape[3]
            for name, r1, f1, mag, n in (("dx", rdx, fdx, sdx, terms),
                                         ("dw", rdw, fdw, sdw, n_dw),
                                         ("db", rdb, fdb, sdb, n_dw)):
                bound = 2 * ((n + 4) * 2.0 ** -24 * mag.f64() +
                             UNIT16.get(dt, 0) * np.abs(r1.f64()))
                e = np.abs(r1.f64() - f1.f64())
                assert (e <= bound).all(), "conv_grad %s %s %s: %g" % (
                    name, dt, xs, float(np.max(e - bound)))


UNIT16 = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}


def test_thread_counts(rt):
    """Reference loops: the same bits at 1 and 2 threads, sizes past the
    pool's threshold (2e6 operations) so that the loops really split: the
    GEMM, softmax and its gradient, layer norm and its gradient (dscale
    summed column by column), a broadcast add, a 16-bit unary op, the
    cross-entropy loss and AdamW over a bf16 gradient. Fast path: the
    same kernels within the f32 bound (only the GEMM may differ)."""
    from runtime_harness import tensor_array
    L = rt.lib
    a, b = rt.randn((96, 300), "f32"), rt.randn((300, 800), "f32")
    x = rt.randn((64, 8192), "f32")
    dy = rt.randn((64, 8192), "f32")
    gamma, beta = rt.randn((8192,), "f32"), rt.randn((8192,), "f32")
    h = rt.randn((2048, 1024), "bf16")
    row = rt.randn((1024,), "f32")
    scores = rt.randn((4, 1000, 128), "f32")
    labels = rt.buf(rt.rng.integers(0, 1000, (4, 128)), "i64")
    p0 = rt.randn((1 << 20,), "f32")
    g16 = rt.randn((1 << 20,), "bf16")

    def run():
        out = {}
        y = rt.empty((96, 800), "f32")
        rt.ok("matmul", a.ref, b.ref, y.ref)
        out["matmul"] = y.f64()
        s = rt.empty(x.shape, "f32")
        rt.ok("softmax", x.ref, -1, s.ref)
        out["softmax"] = s.f64()
        ds = rt.empty(x.shape, "f32")
        rt.ok("softmax_grad", dy.ref, s.ref, -1, ds.ref)
        out["softmax_grad"] = ds.f64()
        ln, mu, inv = (rt.empty(x.shape, "f32"), rt.empty((64, 1), "f32"),
                       rt.empty((64, 1), "f32"))
        rt.ok("layer_norm", x.ref, gamma.ref, beta.ref, -1, 1e-5, ln.ref,
              mu.ref, inv.ref)
        out["layer_norm"] = ln.f64()
        dx, dg, db = (rt.empty(x.shape, "f32"), rt.empty((8192,), "f32"),
                      rt.empty((8192,), "f32"))
        rt.ok("layer_norm_grad", dy.ref, x.ref, gamma.ref, mu.ref, inv.ref,
              -1, dx.ref, dg.ref, db.ref)
        out["layer_norm_grad"] = np.concatenate(
            [dx.f64().ravel(), dg.f64(), db.f64()])
        z = rt.empty(h.shape, "bf16")
        rt.ok("add", h.ref, row.ref, z.ref)
        out["add"] = z.f64()
        t = rt.empty(h.shape, "bf16")
        rt.ok("tanh", h.ref, t.ref)
        out["tanh"] = t.f64()
        loss, lp = rt.empty((), "f32"), rt.empty(scores.shape, "f32")
        rt.ok("softmax_cross_entropy_loss", scores.ref, labels.ref, None, 2,
              0, 0, loss.ref, lp.ref)
        out["cross_entropy"] = np.concatenate([lp.f64().ravel(),
                                               [float(loss.f64())]])
        p = rt.buf(p0.f64(), "f32")
        m1, m2 = rt.empty(p.shape, "f32", 0.0), rt.empty(p.shape, "f32", 0.0)
        rt.ok("adamw", 1, tensor_array([p]), tensor_array([g16]),
              tensor_array([m1]), tensor_array([m2]),
              rt.buf(np.float32(1e-3), "f32").ref,
              rt.buf(np.int64(1), "i64").ref, 0.9, 0.999, 1e-8, 0.01, 0, 1,
              None, None)
        out["adamw"] = p.f64()
        return out

    for path in (REFERENCE, FAST):
        assert L.amprt_cpu_set_path(path) == 0
        runs = []
        for threads in (1, 2):
            assert L.amprt_cpu_set_threads(threads) == 0
            runs.append(run())
        one, two = runs
        for k in one:
            if path == FAST and k == "matmul":
                scale = np.abs(a.f64()) @ np.abs(b.f64())
                assert (np.abs(one[k] - two[k]) <=
                        2 * 304 * 2.0 ** -24 * scale).all(), k
            else:
                rt.equal("%s, 1 vs 2 threads (path %d)" % (k, path), one[k],
                         two[k])
    assert L.amprt_cpu_set_threads(0) == 0
    assert L.amprt_cpu_set_path(FAST) == 0


def test_two_host_threads(rt):
    """Two contexts on two host threads running the same GEMM geometry at
    once (an embedding program's threads): each result within the f32
    bound. The plans are shared by the process; each thread brings its own
    scratchpad."""
    import ctypes as C
    import threading
    L = rt.lib
    a = rt.randn((2048, 192), "f32")
    b = rt.randn((384, 192), "f32")
    ref = a.f64() @ b.f64().T
    scale = np.abs(a.f64()) @ np.abs(b.f64()).T
    worst, errors = [0.0], []

    def work():
        ctx = C.c_void_p()
        if L.amprt_context_create(b"cpu", C.byref(ctx)) != 0:
            errors.append("no context")
            return
        for _ in range(20):
            y = rt.empty((2048, 384), "f32")
            if L.amprt_fused_matmul(ctx, a.ref, b.ref, y.ref, 0, 1,
                                    1.0) != 0:
                errors.append(L.amprt_last_error(ctx))
                break
            err = float(np.max(np.abs(y.f64() - ref) / (scale * 2.0 ** -24)))
            worst[0] = max(worst[0], err)
        L.amprt_context_destroy(ctx)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert worst[0] <= 2 * (192 + 4), "two host threads: %.1f" % worst[0]


TESTS = [test_configuration, test_gemm, test_gemm_relu, test_matmul, test_conv,
         test_thread_counts, test_two_host_threads]

if __name__ == "__main__":
    np.seterr(all="ignore")
    rt = Runtime.from_args()
    rt.worst_diff = {}
    status = rt.run(TESTS)
    for what, d in sorted(rt.worst_diff.items()):
        print("  %-14s fast vs reference: max %.2f x 2^-24 sum|a||b|"
              % (what, d))
    sys.exit(status)
