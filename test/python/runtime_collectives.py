"""The collectives of the amp runtime in one process, and the communicator
calls that need no launcher.

* a context without a communicator is a group of one rank: all_reduce and
  all_reduce_many (every op, in place or not) give y = x bit for bit,
  broadcast leaves x alone, all_gather and reduce_scatter copy;
* the argument checks: a bad op, AVG of integers, a dtype no reduction
  takes, a root outside the group, sizes that do not match the group, NULLs,
  each with its status and message (tensors untouched);
* the communicator calls: unknown engines, engines this build or machine
  lacks, NULL communicators (a group of one), set_comm and barrier without
  one.

The collectives over several ranks run under mpirun in runtime_mpi.py.
"""

import ctypes as C
import os
import subprocess
import sys

import numpy as np

from runtime_harness import Buf, Runtime, tensor_array

REDUCIBLE = ("f32", "f16", "bf16", "f64", "i64", "i32", "bool")
FLOATS = ("f32", "f16", "bf16", "f64")


def takes(dt, op):
    """Whether a reduction takes dtype dt under op: AVG floats only, bool
    MIN and MAX only."""
    if dt == "bool":
        return op in (MIN, MAX)
    return op != AVG or dt in FLOATS
SUM, AVG, MIN, MAX = 0, 1, 2, 3
# amprt_status values.
INVALID_ARGUMENT, DTYPE, SHAPE, BACKEND = 1, 2, 3, 6


def values(rt, shape, dt):
    """Random values of dtype dt (integers for integer dtypes)."""
    if dt == "i64":
        return Buf(rt.rng.integers(-(1 << 40), 1 << 40, shape), dt)
    if dt in ("i32", "i8"):
        return Buf(rt.rng.integers(-100, 100, shape), dt)
    if dt == "u8":
        return Buf(rt.rng.integers(0, 256, shape), dt)
    if dt == "bool":
        return Buf(rt.rng.integers(0, 2, shape), dt)
    if dt == "f64":
        return Buf(rt.rng.standard_normal(shape), dt)
    return rt.randn(shape, dt)


def test_all_reduce_group_of_one(rt):
    for dt in REDUCIBLE:
        for op in (SUM, AVG, MIN, MAX):
            if not takes(dt, op):
                continue
            x = values(rt, (3, 5), dt)
            y = rt.empty((3, 5), dt)
            rt.ok("all_reduce", x.ref, y.ref, op)
            rt.equal("all_reduce %s op %d" % (dt, op), y.bits(), x.bits())
            # In place: y is x.
            before = x.bits()
            rt.ok("all_reduce", x.ref, x.ref, op)
            rt.equal("all_reduce in place %s op %d" % (dt, op), x.bits(),
                     before)
    # A scalar and an empty tensor.
    x, y = rt.randn((), "f32"), rt.empty((), "f32")
    rt.ok("all_reduce", x.ref, y.ref, SUM)
    rt.equal("all_reduce scalar", y.bits(), x.bits())
    rt.ok("all_reduce", rt.empty((0, 4), "f16").ref,
          rt.empty((0, 4), "f16").ref, AVG)


def test_all_reduce_many_group_of_one(rt):
    specs = [((4, 3), "f32"), ((7,), "f16"), ((2, 2, 2), "bf16"),
             ((0,), "f32"), ((5,), "i64"), ((1,), "f64"), ((6,), "i32"),
             ((), "f16"), ((9,), "bool")]
    for op in (SUM, MAX, AVG):
        use = [s for s in specs if takes(s[1], op)]
        xs = [values(rt, s, dt) for s, dt in use]
        ys = [rt.empty(s, dt) for s, dt in use]
        # Every other output is its input (in place).
        for i in range(0, len(ys), 2):
            ys[i] = xs[i]
        want = [x.bits() for x in xs]
        rt.ok("all_reduce_many", len(xs), tensor_array(xs),
              tensor_array(ys), op)
        for i, (y, w) in enumerate(zip(ys, want)):
            rt.equal("all_reduce_many op %d ys[%d]" % (op, i), y.bits(), w)
    rt.ok("all_reduce_many", 0, None, None, SUM)


def test_broadcast_gather_scatter_group_of_one(rt):
    for dt in ("f32", "f16", "bf16", "i64", "bool", "u8"):
        x = values(rt, (2, 3), dt)
        before = x.bits()
        rt.ok("broadcast", x.ref, 0)
        rt.equal("broadcast %s" % dt, x.bits(), before)
        # all_gather of one rank: y (any shape of x's size) = x.
        y = rt.empty((1, 2, 3), dt)
        rt.ok("all_gather", x.ref, y.ref)
        rt.equal("all_gather %s" % dt, y.bits(), before)
    for dt in REDUCIBLE:
        for op in (SUM, AVG, MIN, MAX):
            if not takes(dt, op):
                continue
            x = values(rt, (4, 3), dt)
            y = rt.empty((12,), dt)
            rt.ok("reduce_scatter", x.ref, y.ref, op)
            rt.equal("reduce_scatter %s op %d" % (dt, op), y.bits(),
                     x.bits())


def test_argument_checks(rt):
    x = rt.randn((2, 3), "f32")
    y = rt.empty((2, 3), "f32")
    untouched = y.bits()
    # op outside amprt_reduce_op.
    for bad in (4, -1, 7):
        rt.fails("all_reduce", x.ref, y.ref, bad, status=INVALID_ARGUMENT,
                 match="all_reduce: op %d is not a reduction "
                       r"\(0 SUM, 1 AVG, 2 MIN, 3 MAX\)" % bad)
    rt.fails("reduce_scatter", x.ref, y.ref, 9, status=INVALID_ARGUMENT,
             match="reduce_scatter: op 9 is not a reduction")
    rt.fails("all_reduce_many", 1, tensor_array([x]), tensor_array([y]), 5,
             status=INVALID_ARGUMENT, match="all_reduce_many: op 5")
    # AVG takes floats only; dtypes no reduction takes.
    xi = Buf(np.arange(6).reshape(2, 3), "i64")
    rt.fails("all_reduce", xi.ref, Buf(np.zeros((2, 3)), "i64").ref, AVG,
             status=DTYPE, match=r"all_reduce: AVG of x \(dtype i64\): AVG "
                                 "takes f32, f16, bf16 or f64")
    rt.fails("reduce_scatter", Buf(np.arange(4), "i32").ref,
             Buf(np.zeros(4), "i32").ref, AVG, status=DTYPE,
             match=r"AVG of x \(dtype i32\)")
    xu = Buf(np.ones((2, 3)), "u8")
    rt.fails("all_reduce", xu.ref, xu.ref, MAX, status=DTYPE,
             match="all_reduce: x has dtype u8, expected f32, f16, bf16, "
                   "f64, i64, i32 or bool")
    # bool: MIN (all) and MAX (any) only.
    xb = Buf(np.ones((2, 3)), "bool")
    for op, name in ((SUM, "SUM"), (AVG, "AVG")):
        rt.fails("all_reduce", xb.ref, xb.ref, op, status=DTYPE,
                 match=r"all_reduce: %s of x \(dtype bool\): bool takes MIN "
                       r"\(true on every rank\) and MAX \(true on any "
                       r"rank\)" % name)
    # y must match x.
    rt.fails("all_reduce", x.ref, rt.empty((3, 2), "f32").ref, SUM,
             status=SHAPE,
             match=r"all_reduce: y has shape \[3, 2\], expected \[2, 3\]")
    rt.fails("all_reduce", x.ref, rt.empty((2, 3), "f16").ref, SUM,
             status=DTYPE, match="all_reduce: y has dtype f16, expected f32")
    rt.fails("all_reduce", None, y.ref, SUM, status=INVALID_ARGUMENT,
             match="all_reduce: x is NULL")
    # all_reduce_many names the pair at fault.
    xs = [rt.randn((3,), "f32"), rt.randn((4,), "f16")]
    ys = [rt.empty((3,), "f32"), rt.empty((5,), "f16")]
    rt.fails("all_reduce_many", 2, tensor_array(xs), tensor_array(ys), SUM,
             status=SHAPE,
             match=r"all_reduce_many: ys\[1\] has shape \[5\], expected \[4\]")
    rt.fails("all_reduce_many", 2, tensor_array([xs[0], xi]),
             tensor_array([ys[0], xi]), AVG, status=DTYPE,
             match=r"all_reduce_many: AVG of xs\[1\] \(dtype i64\)")
    rt.fails("all_reduce_many", -1, None, None, SUM,
             status=INVALID_ARGUMENT, match="xs/ys missing for n = -1")
    rt.fails("all_reduce_many", 2, None, tensor_array(ys), SUM,
             status=INVALID_ARGUMENT, match="xs/ys missing for n = 2")
    # The root must be a rank of the group (one rank here).
    for root in (1, -1, 5):
        rt.fails("broadcast", x.ref, root, status=INVALID_ARGUMENT,
                 match="broadcast: root %d out of range: the group has 1 "
                       "rank$" % root)
    # Sizes against the group's: numel(y) = size * numel(x) and back.
    rt.fails("all_gather", x.ref, rt.empty((12,), "f32").ref, status=SHAPE,
             match=r"all_gather: y has shape \[12\] \(12 elements\), "
                   r"expected 6 elements \(group size 1 x 6 elements of x\)")
    rt.fails("all_gather", x.ref, rt.empty((6,), "i64").ref, status=DTYPE,
             match="all_gather: y has dtype i64, expected f32")
    rt.fails("reduce_scatter", x.ref, rt.empty((3,), "f32").ref, SUM,
             status=SHAPE,
             match=r"reduce_scatter: x has shape \[2, 3\] \(6 elements\), "
                   r"expected 3 elements \(group size 1 x 3 elements of y\)")
    # Nothing was written by the failed calls.
    rt.equal("y after failed calls", y.bits(), untouched)
    # A NULL context.
    assert rt.lib.amprt_all_reduce(None, x.ref, y.ref, SUM) == 1
    assert rt.lib.amprt_barrier(None) == 1
    assert rt.lib.amprt_context_set_comm(None, None) == 1


def test_communicator_calls(rt):
    L = rt.lib
    # A NULL communicator is a group of one.
    assert L.amprt_comm_rank(None) == 0
    assert L.amprt_comm_size(None) == 1
    assert L.amprt_comm_engine(None) == b""
    assert L.amprt_comm_destroy(None) == 0
    # Without a communicator: set_comm(NULL) and the barrier succeed.
    assert L.amprt_context_set_comm(rt.ctx, None) == 0
    assert L.amprt_barrier(rt.ctx) == 0 and rt.error() == ""
    comm = C.c_void_p(1234)
    # Unknown engines.
    assert L.amprt_comm_available(b"gloo") == 0
    assert L.amprt_comm_create(b"gloo", C.byref(comm)) == BACKEND
    assert comm.value is None
    msg = L.amprt_last_error(None).decode()
    assert msg == "amprt_comm_create: unknown engine 'gloo' (engines: mpi, " \
        "nccl)", msg
    assert L.amprt_comm_create(b"mpi", None) == INVALID_ARGUMENT
    assert b"out is NULL" in L.amprt_last_error(None)
    # "nccl" needs a CUDA build with NCCL and a device.
    if not L.amprt_comm_available(b"nccl"):
        assert L.amprt_comm_create(b"nccl", C.byref(comm)) == BACKEND
        msg = L.amprt_last_error(None).decode()
        assert msg.startswith("amprt_comm_create: engine 'nccl' is not "
                              "available: "), msg
        assert ("this build has no NCCL" in msg or
                "no CUDA device" in msg), msg
    # "mpi" in a build without MPI fails and says what to install; with MPI
    # it is made under a launcher (runtime_mpi.py), not in this process.
    mpi = L.amprt_comm_available(b"mpi")
    assert mpi in (0, 1)
    assert L.amprt_comm_available(None) == mpi
    assert L.amprt_comm_available(b"") == mpi
    if not mpi:
        assert L.amprt_comm_create(b"mpi", C.byref(comm)) == BACKEND
        msg = L.amprt_last_error(None).decode()
        assert msg == "amprt_comm_create: this build has no MPI: install " \
            "libopenmpi-dev and rebuild", msg
    print("  engines: mpi %d, nccl %d" % (mpi,
                                          L.amprt_comm_available(b"nccl")))


SINGLETON = r"""
import ctypes as C, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from runtime_harness import Runtime
rt = Runtime(sys.argv[1], sys.argv[2], 0)
L = rt.lib
comm = C.c_void_p()
assert L.amprt_comm_create(b"mpi", C.byref(comm)) == 0, L.amprt_last_error(None)
assert (L.amprt_comm_rank(comm), L.amprt_comm_size(comm)) == (0, 1)
assert L.amprt_comm_engine(comm) == b"mpi"
assert L.amprt_context_set_comm(rt.ctx, comm) == 0
x = rt.randn((5, 3), "f16")
y = rt.empty((5, 3), "f16")
rt.ok("all_reduce", x.ref, y.ref, 1)
assert np.array_equal(x.bits(), y.bits())
assert L.amprt_barrier(rt.ctx) == 0
assert L.amprt_context_set_comm(rt.ctx, None) == 0
assert L.amprt_comm_destroy(comm) == 0
# The last communicator finalized MPI, which cannot start again.
assert L.amprt_comm_create(b"mpi", C.byref(comm)) == 6
print(L.amprt_last_error(None).decode())
"""


def test_mpi_without_launcher(rt):
    """A process started without mpirun is a group of one over MPI (Open
    MPI's singleton); after its last communicator MPI cannot start again.
    In a child process, so this one never initializes MPI."""
    if not rt.lib.amprt_comm_available(b"mpi"):
        print("  (no MPI in this build)")
        return
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-c", SINGLETON, rt.lib._name,
                        rt.ops_def, here], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == (
        "amprt_comm_create: MPI has been finalized in this process (by the "
        "program, or by amprt_comm_destroy of the last communicator) and "
        "cannot start again"), p.stdout


def test_sync_batch_norm_group_of_one(rt):
    """SyncBatchNorm's kernels on a context without a communicator compute
    what the plain ones do, bit for bit (every float dtype)."""
    for dt in ("f32", "f16", "bf16"):
        x = rt.randn((4, 3, 5, 2), dt, 2.0)
        s, b = rt.randn((3,), dt), rt.randn((3,), dt)
        rm, rv = rt.randn((3,), "f32"), rt.uniform((3,), "f32", 0.5, 2)
        outs = {}
        for k in ("batch_norm_training", "batch_norm_training_sync"):
            y = rt.empty(x.shape, dt)
            rest = [rt.empty((3,), "f32") for _ in range(4)]
            rt.ok(k, x.ref, s.ref, b.ref, rm.ref, rv.ref, 0.9, 1e-5, y.ref,
                  *[r.ref for r in rest])
            outs[k] = [y] + rest
        for a, c in zip(outs["batch_norm_training"],
                        outs["batch_norm_training_sync"]):
            rt.equal("batch_norm_training_sync %s" % dt, c.bits(), a.bits())
        sm, si = outs["batch_norm_training"][3:5]
        dy = rt.randn(x.shape, dt)
        grads = {}
        for k in ("batch_norm_grad", "batch_norm_grad_sync"):
            g = [rt.empty(x.shape, dt), rt.empty((3,), dt),
                 rt.empty((3,), dt)]
            rt.ok(k, dy.ref, x.ref, s.ref, sm.ref, si.ref, *[t.ref for t in g])
            grads[k] = g
        for a, c in zip(grads["batch_norm_grad"], grads["batch_norm_grad_sync"]):
            rt.equal("batch_norm_grad_sync %s" % dt, c.bits(), a.bits())


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]

if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(Runtime.from_args().run(TESTS))
