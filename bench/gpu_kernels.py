#!/usr/bin/env python3
"""Speed of the CUDA backend's GEMM and fused AdamW against the device's own
limits, measured in the same run (docs/RuntimeABI.md, "CUDA backend").

* GEMM: amprt_gemm (cuBLASLt, f16/bf16 in, f32 accumulation, 16-bit out) in
  TFLOP/s, against the peak of cuBLAS measured here: torch.matmul on the same
  shape when torch with CUDA is installed, otherwise the best of a few large
  square GEMMs through the same entry (then the ratio says how far the
  measured shape is from the library's best shape, not from another
  implementation).
* AdamW: amprt_adamw over many tensors (f32 params and states, f16 grads,
  26 bytes of traffic per parameter) as effective GB/s, against the device
  copy bandwidth (amprt_memcpy device to device, 2 bytes of traffic per byte
  copied).

It prints the ratios. It needs a GPU and a library built with CUDA; without
them it fails with the reason (exit status 2).

    python3 bench/gpu_kernels.py --lib build/lib/libAmpRuntime.so \\
        --ops-def include/amp/Runtime/Ops.def
"""

import argparse
import ctypes as C
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "python"))
from runtime_harness import Tensor, parse_ops_def, DTYPES  # noqa: E402


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(2)


class Dev:
    def __init__(self, lib, ops_def):
        self.L = L = C.CDLL(lib)
        L.amprt_context_create.argtypes = [C.c_char_p, C.POINTER(C.c_void_p)]
        L.amprt_last_error.argtypes = [C.c_void_p]
        L.amprt_last_error.restype = C.c_char_p
        L.amprt_malloc.argtypes = [C.c_void_p, C.c_size_t,
                                   C.POINTER(C.c_void_p)]
        L.amprt_free.argtypes = [C.c_void_p, C.c_void_p]
        L.amprt_memcpy.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p,
                                   C.c_size_t, C.c_int32]
        L.amprt_synchronize.argtypes = [C.c_void_p]
        for name, (_, args) in parse_ops_def(ops_def).items():
            f = getattr(L, "amprt_" + name)
            f.argtypes = args
            f.restype = C.c_int
        self.ctx = C.c_void_p()
        if L.amprt_context_create(b"cuda", C.byref(self.ctx)) != 0:
            fail("no CUDA backend: %s" % L.amprt_last_error(None).decode())
        self.keep = []

    def check(self, st, what):
        if st != 0:
            fail("%s: %s" % (what, self.L.amprt_last_error(self.ctx).decode()))

    def sync(self):
        self.check(self.L.amprt_synchronize(self.ctx), "synchronize")

    def tensor(self, shape, dt, value=None):
        n = 1
        for d in shape:
            n *= d
        size = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "bool": 1}[dt]
        p = C.c_void_p()
        self.check(self.L.amprt_malloc(self.ctx, max(1, n * size),
                                       C.byref(p)), "malloc")
        dims = (C.c_int64 * max(1, len(shape)))(*shape)
        t = Tensor(p.value, DTYPES[dt], len(shape), dims)
        t._keep = (dims, p)
        self.keep.append(p)
        if value is not None:
            self.check(self.L.amprt_fill(self.ctx, C.byref(t),
                                         C.c_double(value)), "fill")
        return t


def timed(dev, fn, iters):
    fn()
    dev.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    dev.sync()
    return (time.perf_counter() - t0) / iters


def gemm_tflops(dev, M, N, K, dt, iters):
    a, b = dev.tensor((M, K), dt, 0.01), dev.tensor((K, N), dt, 0.02)
    y = dev.tensor((M, N), dt)
    L = dev.L

    def run():
        dev.check(L.amprt_gemm(dev.ctx, C.byref(a), C.byref(b), None,
                               C.byref(y), 0, 0, C.c_float(1.0),
                               C.c_float(0.0)), "gemm")
    s = timed(dev, run, iters)
    return 2.0 * M * N * K / s / 1e12


def torch_tflops(M, N, K, dt, iters):
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}[dt]
    a = torch.full((M, K), 0.01, dtype=tdt, device="cuda")
    b = torch.full((K, N), 0.02, dtype=tdt, device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.matmul(a, b)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    return 2.0 * M * N * K / ((time.perf_counter() - t0) / iters) / 1e12


def adamw_gbs(dev, total, ntensors, iters):
    per = total // ntensors
    L = dev.L
    ps = [dev.tensor((per,), "f32", 0.5) for _ in range(ntensors)]
    gs = [dev.tensor((per,), "f16", 0.01) for _ in range(ntensors)]
    m1 = [dev.tensor((per,), "f32", 0.0) for _ in range(ntensors)]
    m2 = [dev.tensor((per,), "f32", 0.0) for _ in range(ntensors)]
    arr = [(Tensor * ntensors)(*x) for x in (ps, gs, m1, m2)]
    lr = dev.tensor((), "f32", 1e-3)
    step = dev.tensor((), "i64", 1)
    upd = dev.tensor((), "bool", 1)

    def run():
        dev.check(L.amprt_adamw(dev.ctx, ntensors, arr[0], arr[1], arr[2],
                                arr[3], C.byref(lr), C.byref(step),
                                C.c_float(0.9), C.c_float(0.999),
                                C.c_float(1e-8), C.c_float(0.01), 0, 1,
                                C.byref(upd), None), "adamw")
    s = timed(dev, run, iters)
    return 26.0 * per * ntensors / s / 1e9


def copy_gbs(dev, nbytes, iters):
    src = dev.tensor((nbytes,), "bool", 1)
    dst = dev.tensor((nbytes,), "bool", 0)
    L = dev.L

    def run():
        dev.check(L.amprt_memcpy(dev.ctx, dst.data, src.data, nbytes, 3),
                  "memcpy")
    s = timed(dev, run, iters)
    return 2.0 * nbytes / s / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--ops-def", required=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--params", type=int, default=64 << 20,
                    help="AdamW parameters in total")
    a = ap.parse_args()
    if os.environ.get("AMPRT_CUDA_ALLOW_TF32"):
        print("note: AMPRT_CUDA_ALLOW_TF32 is set (f32 GEMMs may use TF32)")
    dev = Dev(a.lib, a.ops_def)

    print("GEMM (f32 accumulation, 16-bit out), TFLOP/s:")
    for dt in ("f16", "bf16"):
        for M, N, K in ((8192, 8192, 8192), (4096, 4096, 1024),
                        (16384, 1024, 4096)):
            ours = gemm_tflops(dev, M, N, K, dt, a.iters)
            ref = torch_tflops(M, N, K, dt, a.iters)
            how = "torch.matmul"
            if ref is None:
                ref = max(gemm_tflops(dev, s, s, s, dt, max(3, a.iters // 4))
                          for s in (8192, 12288, 16384))
                how = "best large square GEMM through amprt_gemm"
            print("  %-4s %5d x %5d x %5d  %7.1f   peak %7.1f (%s)   "
                  "ratio %.2f" % (dt, M, N, K, ours, ref, how, ours / ref))

    copy = copy_gbs(dev, 1 << 30, a.iters)
    adam = adamw_gbs(dev, a.params, 256, a.iters)
    print("AdamW over %d parameters in 256 tensors: %.0f GB/s effective; "
          "device copy %.0f GB/s; ratio %.2f" % (a.params, adam, copy,
                                                 adam / copy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
