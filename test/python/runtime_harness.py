"""ctypes harness for the amp runtime library (libAmpRuntime.so).

The argument types of every kernel are read from include/amp/Runtime/Ops.def,
the same list a lowering uses, so the harness checks that the list is
machine-readable and matches the library. Tensors are numpy arrays; bf16 is
stored as uint16 and decoded here.

Shared by runtime_convert.py, runtime_kernels.py and runtime_training.py:
    rt = Runtime.from_args()            # --lib PATH --seed N
    y = rt.empty((2, 3), "f16")
    rt.ok("relu", x.ref, y.ref)         # raises with amprt_last_error on failure
"""

import argparse
import ctypes as C
import os
import re
import sys
import time

import numpy as np

DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i64": 4, "i32": 5,
          "i8": 6, "u8": 7, "bool": 8}
NP_STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
              "f64": np.float64, "i64": np.int64, "i32": np.int32,
              "i8": np.int8, "u8": np.uint8, "bool": np.uint8}
# Unit roundoff of each float storage type (half an ulp at 1).
UNIT = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8,
        "f64": 2.0 ** -53}
EPS32 = 2.0 ** -24
# Half the smallest subnormal: the absolute rounding error near zero.
TINY = {"f32": 2.0 ** -150, "f16": 2.0 ** -25, "bf16": 2.0 ** -134,
        "f64": 2.0 ** -1075}


class MemoryStats(C.Structure):
    """amprt_memory_stats (Runtime.h, ABI 7)."""
    _fields_ = [("in_use", C.c_uint64), ("peak", C.c_uint64),
                ("limit", C.c_uint64), ("refused", C.c_uint64),
                ("device_free", C.c_uint64), ("device_total", C.c_uint64)]


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int32),
                ("rank", C.c_int32), ("shape", C.POINTER(C.c_int64))]


class Window(C.Structure):
    _fields_ = [("spatial_rank", C.c_int32), ("ceil_mode", C.c_int32),
                ("count_include_pad", C.c_int32), ("layout", C.c_int32),
                ("group", C.c_int64), ("kernel", C.c_int64 * 3),
                ("strides", C.c_int64 * 3), ("pads", C.c_int64 * 6),
                ("dilations", C.c_int64 * 3)]


def window(kernel, strides=None, pads=None, dilations=None, group=1,
           ceil_mode=0, count_include_pad=0, layout=0):
    """layout: 0 channels first, 1 channels last (ABI 10)."""
    w = Window()
    sr = len(kernel)
    w.spatial_rank = sr
    w.layout = layout
    w.group = group
    w.ceil_mode = ceil_mode
    w.count_include_pad = count_include_pad
    for i in range(sr):
        w.kernel[i] = kernel[i]
        w.strides[i] = (strides or [1] * sr)[i]
        w.dilations[i] = (dilations or [1] * sr)[i]
    for i in range(2 * sr):
        w.pads[i] = (pads or [0] * (2 * sr))[i]
    return w


# ---------------------------------------------------------------------------
# bf16 / f16 helpers (reference side)
# ---------------------------------------------------------------------------

try:
    import ml_dtypes  # an independent bf16 implementation

    def f32_to_bf16_bits(a):
        return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16).view(
            np.uint16)
except ImportError:  # pragma: no cover - fallback, same rule written out
    ml_dtypes = None

    def f32_to_bf16_bits(a):
        u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
        nan = np.isnan(np.asarray(a, np.float32))
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def bf16_bits_to_f32(b):
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32)


def quantize(a, dt):
    """Rounds float64/float32 values to dtype `dt`, returned as float64."""
    a = np.asarray(a, np.float64)
    if dt == "f32":
        return a.astype(np.float32).astype(np.float64)
    if dt == "f16":
        return a.astype(np.float16).astype(np.float64)
    if dt == "bf16":
        # f64 -> bf16 in one rounding: go through f32 only when exact.
        f = a.astype(np.float32)
        if ml_dtypes is not None:
            return a.astype(ml_dtypes.bfloat16).astype(np.float64)
        return bf16_bits_to_f32(f32_to_bf16_bits(f)).astype(np.float64)
    return a


# ---------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------

CTYPE = {"int32_t": C.c_int32, "int64_t": C.c_int64, "uint64_t": C.c_uint64,
         "float": C.c_float, "double": C.c_double}


def parse_ops_def(path):
    """Returns {name: (kind, [ctypes argtypes])} from Ops.def."""
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    macros = dict(re.findall(r"#define (AMPRT_P_\w+) (\(.*?\))\n", text))
    ops = {}
    for m in re.finditer(r"^AMPRT_KERNEL\((\w+), (\w+),\s*(.*?)\)\s*$", text,
                         flags=re.S | re.M):
        name, kind, params = m.group(1), m.group(2), m.group(3).strip()
        params = macros.get(params, params)
        params = params.strip()[1:-1]
        args = []
        for p in params.split(","):
            p = " ".join(p.split())
            if p.startswith("amprt_context"):
                args.append(C.c_void_p)
            elif p.startswith("AMPRT_T"):
                args.append(C.POINTER(Tensor))
            elif p.startswith("const amprt_window"):
                args.append(C.POINTER(Window))
            elif p.startswith("const int64_t *"):
                args.append(C.POINTER(C.c_int64))
            else:
                ty = p.rsplit(" ", 1)[0]
                if ty not in CTYPE:
                    raise ValueError("Ops.def: unknown parameter type %r in %s"
                                     % (p, name))
                args.append(CTYPE[ty])
        ops[name] = (kind, args)
    return ops


class RuntimeError_(Exception):
    pass


class Buf:
    """A tensor: numpy storage + descriptor. .ref is what kernels take."""

    def __init__(self, arr, dt):
        self.dt = dt
        self.arr = np.array(arr, NP_STORAGE[dt], order="C")  # keeps rank 0
        self._shape = (C.c_int64 * max(1, self.arr.ndim))(*self.arr.shape)
        self.t = Tensor(self.arr.ctypes.data if self.arr.size else None,
                        DTYPES[dt], self.arr.ndim, self._shape)
        # A descriptor keeps its storage alive: `Buf(a, dt).ref` passed
        # straight into a call must not free the array before the call.
        self.t._owner = self

    @property
    def ref(self):
        return C.byref(self.t)

    @property
    def shape(self):
        return self.arr.shape

    def f64(self):
        """The values as float64 (decoding bf16)."""
        if self.dt == "bf16":
            return bf16_bits_to_f32(self.arr).astype(np.float64)
        return self.arr.astype(np.float64)

    def bits(self):
        return self.arr.reshape(-1).view(np.uint8).copy()


def tensor_array(bufs):
    arr = (Tensor * max(1, len(bufs)))(*[b.t for b in bufs])
    return arr


def i64s(vals):
    vals = list(vals)
    return (C.c_int64 * max(1, len(vals)))(*vals)


class Runtime:
    def __init__(self, lib, ops_def, seed):
        self.lib = C.CDLL(lib)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.ops_def = ops_def
        self.ops = parse_ops_def(ops_def)
        L = self.lib
        L.amprt_context_create.argtypes = [C.c_char_p,
                                           C.POINTER(C.c_void_p)]
        L.amprt_context_destroy.argtypes = [C.c_void_p]
        L.amprt_last_error.argtypes = [C.c_void_p]
        L.amprt_last_error.restype = C.c_char_p
        L.amprt_backend_name.argtypes = [C.c_void_p]
        L.amprt_backend_name.restype = C.c_char_p
        L.amprt_malloc.argtypes = [C.c_void_p, C.c_size_t,
                                   C.POINTER(C.c_void_p)]
        L.amprt_free.argtypes = [C.c_void_p, C.c_void_p]
        L.amprt_memcpy.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p,
                                   C.c_size_t, C.c_int32]
        L.amprt_memset.argtypes = [C.c_void_p, C.c_void_p, C.c_int,
                                   C.c_size_t]
        L.amprt_dtype_size.argtypes = [C.c_int32]
        L.amprt_dtype_size.restype = C.c_size_t
        L.amprt_dtype_name.argtypes = [C.c_int32]
        L.amprt_dtype_name.restype = C.c_char_p
        # Communicators (ABI 3).
        L.amprt_comm_create.argtypes = [C.c_char_p, C.POINTER(C.c_void_p)]
        L.amprt_comm_destroy.argtypes = [C.c_void_p]
        L.amprt_comm_rank.argtypes = [C.c_void_p]
        L.amprt_comm_rank.restype = C.c_int32
        L.amprt_comm_size.argtypes = [C.c_void_p]
        L.amprt_comm_size.restype = C.c_int32
        L.amprt_comm_engine.argtypes = [C.c_void_p]
        L.amprt_comm_engine.restype = C.c_char_p
        L.amprt_comm_available.argtypes = [C.c_char_p]
        L.amprt_comm_available.restype = C.c_int32
        L.amprt_comm_abort.argtypes = [C.c_void_p, C.c_int32]
        L.amprt_comm_abort.restype = None
        L.amprt_context_set_comm.argtypes = [C.c_void_p, C.c_void_p]
        L.amprt_barrier.argtypes = [C.c_void_p]
        # The CPU backend's threads and arithmetic (ABI 4).
        L.amprt_cpu_set_threads.argtypes = [C.c_int32]
        L.amprt_cpu_threads.restype = C.c_int32
        L.amprt_cpu_set_path.argtypes = [C.c_int32]
        L.amprt_cpu_path_in_force.restype = C.c_int32
        L.amprt_cpu_describe.restype = C.c_char_p
        # Memory accounting (ABI 7).
        L.amprt_memory_stats_get.argtypes = [C.c_void_p,
                                             C.POINTER(MemoryStats)]
        L.amprt_memory_reset_peak.argtypes = [C.c_void_p]
        L.amprt_set_memory_limit.argtypes = [C.c_void_p, C.c_uint64]
        for name, (kind, args) in self.ops.items():
            f = getattr(L, "amprt_" + name)
            f.argtypes = args
            f.restype = C.c_int
        ctx = C.c_void_p()
        st = L.amprt_context_create(b"cpu", C.byref(ctx))
        if st != 0:
            raise RuntimeError_(L.amprt_last_error(None).decode())
        self.ctx = ctx
        self.results = []  # (test, seconds, note)
        self.errors = {}   # (kernel, dtype) -> max normalized error

    @staticmethod
    def from_args(argv=None):
        ap = argparse.ArgumentParser()
        ap.add_argument("--lib", required=True)
        ap.add_argument("--ops-def", required=True)
        ap.add_argument("--seed", type=int, default=None)
        ap.add_argument("-k", default=None, help="run tests matching this")
        a = ap.parse_args(argv)
        seed = a.seed if a.seed is not None else int.from_bytes(
            os.urandom(4), "little")
        print("seed %d (rerun with --seed %d)" % (seed, seed))
        rt = Runtime(a.lib, a.ops_def, seed)
        rt.filter = a.k
        return rt

    def call(self, name, *args):
        return getattr(self.lib, "amprt_" + name)(self.ctx, *args)

    def error(self):
        return self.lib.amprt_last_error(self.ctx).decode()

    def ok(self, name, *args):
        st = self.call(name, *args)
        if st != 0:
            raise RuntimeError_("amprt_%s failed (%d): %s"
                                % (name, st, self.error()))

    def fails(self, name, *args, status=None, match=None):
        st = self.call(name, *args)
        msg = self.error()
        assert st != 0, "amprt_%s accepted bad input" % name
        if status is not None:
            assert st == status, "amprt_%s: status %d, expected %d (%s)" % (
                name, st, status, msg)
        assert msg, "amprt_%s failed without a message" % name
        if match:
            assert re.search(match, msg), "amprt_%s: message %r lacks %r" % (
                name, msg, match)
        return msg

    # -- tensors --------------------------------------------------------
    def buf(self, values, dt):
        """A tensor of dtype dt holding `values` rounded to dt."""
        v = np.asarray(values)
        if dt == "bf16":
            return Buf(f32_to_bf16_bits(v.astype(np.float32)), dt)
        return Buf(v.astype(NP_STORAGE[dt]), dt)

    def empty(self, shape, dt, fill=np.nan):
        if dt in ("f32", "f16", "f64"):
            return Buf(np.full(shape, fill, NP_STORAGE[dt]), dt)
        if dt == "bf16":
            return Buf(np.full(shape, 0x7FC0, np.uint16), dt)
        return Buf(np.zeros(shape, NP_STORAGE[dt]), dt)

    def randn(self, shape, dt, scale=1.0):
        return self.buf(self.rng.standard_normal(shape) * scale, dt)

    def uniform(self, shape, dt, lo=-1.0, hi=1.0):
        return self.buf(self.rng.uniform(lo, hi, shape), dt)

    # -- checks ---------------------------------------------------------
    def close(self, what, out, ref, dt, scale=None, terms=1, rel=2.0):
        """Checks out (Buf or array) against a float64 reference:
        |out - ref| <= rel * (u(dt) * |ref| + tiny(dt))
                       + (terms + 4) * 2^-24 * scale,
        scale = |ref| unless given (the magnitude of the summed terms).
        tiny(dt) is half the smallest subnormal. Records the largest error in
        units of u(dt)|ref| + 2^-24 scale + tiny(dt)."""
        o = out.f64() if isinstance(out, Buf) else np.asarray(out, np.float64)
        ref = np.asarray(ref, np.float64)
        assert o.shape == ref.shape, "%s: shape %s vs %s" % (what, o.shape,
                                                             ref.shape)
        sc = np.abs(ref) if scale is None else np.broadcast_to(
            np.asarray(scale, np.float64), ref.shape)
        tol = (rel * UNIT[dt] * np.abs(ref) + (terms + 4) * EPS32 * sc +
               rel * TINY[dt])
        err = np.abs(o - ref)
        bad = ~(err <= tol)
        if bad.any():
            i = np.unravel_index(np.argmax(np.where(bad, err - tol, -1)),
                                 ref.shape)
            raise AssertionError(
                "%s [%s]: %d of %d elements off; worst at %s: got %r, "
                "reference %r, tolerance %.3g (seed %d)"
                % (what, dt, bad.sum(), bad.size, i, o[i], ref[i], tol[i],
                   self.seed))
        # Normalized error: relative to u(dt)*|ref| + 2^-24*scale.
        denom = UNIT[dt] * np.abs(ref) + EPS32 * sc + TINY[dt]
        worst = float(np.max(err / denom)) if err.size else 0.0
        key = (what.split(" ")[0], dt)
        self.errors[key] = max(self.errors.get(key, 0.0), worst)

    def equal(self, what, got, want):
        got = np.asarray(got)
        want = np.asarray(want)
        assert got.shape == want.shape and np.array_equal(got, want), (
            "%s: got %r, want %r (seed %d)" % (what, got, want, self.seed))

    # -- running --------------------------------------------------------
    def run(self, tests, prefix=""):
        """Runs each test (a function of this Runtime), printing a line per
        test and a summary, each line after `prefix` and flushed (the ranks
        of runtime_mpi.py share one output). Returns the exit status."""
        def say(line):
            sys.stdout.write(prefix + line + "\n")
            sys.stdout.flush()

        failed = 0
        total0 = time.time()
        for t in tests:
            if self.filter and self.filter not in t.__name__:
                continue
            t0 = time.time()
            try:
                t(self)
                status = "PASS"
            except Exception as e:  # report every failure, keep going
                status = "FAIL: %s: %s" % (type(e).__name__, e)
                failed += 1
            dt = time.time() - t0
            say("%-40s %6.2fs %s" % (t.__name__, dt, status))
        if self.errors:
            say("max normalized error |out-ref| / (u(dt)|ref| + 2^-24 "
                "scale), by kernel and dtype:")
            for (k, d), v in sorted(self.errors.items()):
                say("  %-36s %-5s %.3f" % (k, d, v))
        n = len([t for t in tests
                 if not self.filter or self.filter in t.__name__])
        say("%d tests, %d failed, %.1fs, seed %d"
            % (n, failed, time.time() - total0, self.seed))
        return 1 if failed else 0
