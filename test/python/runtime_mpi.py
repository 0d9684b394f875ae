"""The collectives of the amp runtime over MPI, rank by rank.

As a rank of a job (what mpirun starts, N times):

    mpirun --oversubscribe --allow-run-as-root -np N python3 runtime_mpi.py \\
        --lib build/lib/libAmpRuntime.so --ops-def include/amp/Runtime/Ops.def

every rank makes a communicator with amprt_comm_create("mpi"), sets it on
a CPU context and runs the tests below on rank-dependent inputs. Each rank
draws every rank's inputs from one seed (rank 0's, broadcast first; --seed
sets it), so it knows the exact result: the inputs are multiples of 1/8
(and a few larger values), so every f32/f64 sum is exact whatever order MPI
sums in, and an f16 or bf16 result must be that f32 sum (or AVG's f32
quotient) rounded once: a few elements are chosen so that rounding at every
step would give another value. Each rank prints its results and exits 1 on
a failure, so mpirun fails when any rank does.

    all_reduce        SUM/AVG/MIN/MAX on f32, f16, bf16, f64, i64, i32, in
                      place and not, empty tensors
    all_reduce_many   mixed dtypes and sizes (one staged call per type),
                      against all_reduce's results
    broadcast         from root 1 and the last rank, any dtype
    all_gather        rank order, any dtype
    reduce_scatter    each rank's part of the reduction
    barrier           no rank leaves before the last arrives
    checks            a root or sizes that do not fit the group fail on
                      every rank with its size in the message

AMPRT_COMM_CHUNK=5 in the environment splits every MPI call into pieces of
5 elements (the path of tensors over 2^31 elements).

Faults: with --exit-rank R, rank R leaves with os._exit(3) before an
all_reduce that the other ranks enter (a crashed rank); with --abort-rank R,
rank R calls amprt_comm_abort(comm, 7) instead (a rank that found an
error). mpirun must then end every rank. As a launcher (--launch "mpirun
... -np N"), this script runs such a job under a 120 s timeout and checks
that it ended within --within seconds (60), with a non-zero exit code and
no rank left running, and that mpirun's output names the failed rank.
"""

import argparse
import ctypes as C
import os
import re
import shlex
import subprocess
import sys
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runtime_harness import (Buf, Runtime, f32_to_bf16_bits,  # noqa: E402
                             quantize, tensor_array)

SUM, AVG, MIN, MAX = 0, 1, 2, 3
OPS = {SUM: "SUM", AVG: "AVG", MIN: "MIN", MAX: "MAX"}
FLOATS = ("f32", "f16", "bf16", "f64")
REDUCIBLE = FLOATS + ("i64", "i32", "bool")


def takes(dt, op):
    """AVG takes floats only, bool MIN and MAX only."""
    if dt == "bool":
        return op in (MIN, MAX)
    return op != AVG or dt in FLOATS


def reductions(dtypes):
    """Every (dtype, op) pair of `dtypes` a reduction takes, with its tag."""
    for dt in dtypes:
        for op in (SUM, AVG, MIN, MAX):
            if takes(dt, op):
                yield dt, op, "%s %s" % (dt, OPS[op])


class Rank:
    """This rank's view of the job: the runtime, the communicator, the
    shared seed."""

    def __init__(self, rt, comm):
        self.rt = rt
        L = rt.lib
        self.comm = comm
        self.rank = L.amprt_comm_rank(comm)
        self.size = L.amprt_comm_size(comm)
        self.seed = None

    # -- inputs ----------------------------------------------------------
    def raw(self, tag, r, shape, dt):
        """Rank r's input `tag`: float64 values (exact in dt) or integers."""
        rng = np.random.default_rng([self.seed, zlib.crc32(tag.encode()),
                                     r])
        n = int(np.prod(shape))
        if dt == "i64":
            v = rng.integers(-(1 << 40), 1 << 40, n)
            if n:
                v[0] = (1 << 53) + 1 + r  # not exact in a double
            return v.reshape(shape)
        if dt in ("i32", "i8"):
            return rng.integers(-100, 100, n).reshape(shape)
        if dt == "u8":
            return rng.integers(0, 256, n).reshape(shape)
        if dt == "bool":
            # Mostly true: MIN (all ranks) is false where any rank is.
            return (rng.random(n) < 0.8).astype(np.int64).reshape(shape)
        v = rng.integers(-64, 65, n) / 8.0
        # Elements whose sum an f16/bf16 reduction must round once: the f32
        # sum big + 0.5 (size - 1) is exact, rounding after every addition
        # would stay at big.
        big = {"f16": 1024.0, "bf16": 256.0}.get(dt)
        if big and n >= 2:
            v[0] = big if r == 0 else 0.5
            v[1] = -big if r == 0 else -0.5
        if dt == "f64" and n >= 3:
            v[2] = 2.0 ** 40 + r / 4.0  # not exact in an f32
        return v.reshape(shape)

    def buf(self, tag, r, shape, dt):
        v = self.raw(tag, r, shape, dt)
        if dt in FLOATS:
            return self.rt.buf(v, dt) if dt != "f64" else Buf(v, "f64")
        return Buf(v, dt)

    def storage(self, values, dt):
        """Exact values of dtype dt as its storage array."""
        if dt == "bf16":
            return f32_to_bf16_bits(np.asarray(values, np.float32))
        return Buf(np.asarray(values), dt).arr

    def reduced(self, tag, shape, dt, op, part=None):
        """The exact result of `op` over every rank's input `tag` (rows
        part*len..(part+1)*len of the flat inputs when part is given)."""
        xs = [np.asarray(self.raw(tag, r, shape, dt)) for r in
              range(self.size)]
        if part is not None:
            m = xs[0].size // self.size
            xs = [x.reshape(-1)[part * m:(part + 1) * m] for x in xs]
        stack = np.stack(xs)
        if dt in ("i64", "i32", "bool"):
            out = {SUM: stack.sum(0), MIN: stack.min(0),
                   MAX: stack.max(0)}[op]
            return self.storage(out, dt)
        if op == MIN:
            return self.storage(quantize(stack.min(0), dt), dt)
        if op == MAX:
            return self.storage(quantize(stack.max(0), dt), dt)
        total = stack.sum(0)  # exact: multiples of 1/8, few large values
        if dt == "f64":
            out = total if op == SUM else total / self.size
            return self.storage(out, dt)
        f = total.astype(np.float32)
        assert np.array_equal(f.astype(np.float64), total), "inexact sum"
        if op == AVG:
            f = f / np.float32(self.size)  # f32 division, as the runtime
        return self.storage(quantize(f, dt), dt)

    def check(self, what, got, want):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or not np.array_equal(
                got.reshape(-1).view(np.uint8), want.reshape(-1).view(
                    np.uint8)):
            bad = np.argwhere(got.reshape(-1) != want.reshape(-1))
            i = int(bad[0][0]) if bad.size else 0
            raise AssertionError(
                "%s: %d of %d elements differ; first at %d: got %r, want %r"
                " (seed %d)" % (what, len(bad), want.size, i,
                                got.reshape(-1)[i], want.reshape(-1)[i],
                                self.seed))


# ---------------------------------------------------------------------------
# The tests: every rank runs each, in the same order
# ---------------------------------------------------------------------------

def test_comm(g):
    L = g.rt.lib
    assert L.amprt_comm_engine(g.comm) == b"mpi"
    assert 0 <= g.rank < g.size
    # Open MPI's own view of the job.
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        assert g.size == int(os.environ["OMPI_COMM_WORLD_SIZE"])
        assert g.rank == int(os.environ["OMPI_COMM_WORLD_RANK"])


def test_all_reduce(g):
    rt = g.rt
    shape = (5, 7)
    k = 0
    for dt, op, name in reductions(REDUCIBLE):
        tag = "all_reduce " + name
        x = g.buf(tag, g.rank, shape, dt)
        # In place every other call.
        k += 1
        y = x if k % 2 else rt.empty(shape, dt)
        rt.ok("all_reduce", x.ref, y.ref, op)
        g.check(tag + (" in place" if y is x else ""), y.arr,
                g.reduced(tag, shape, dt, op))
    # Empty tensors and a scalar.
    e = rt.empty((0, 3), "f16")
    rt.ok("all_reduce", e.ref, e.ref, AVG)
    s = g.buf("scalar", g.rank, (), "f32")
    rt.ok("all_reduce", s.ref, s.ref, MAX)
    g.check("all_reduce scalar", s.arr, g.reduced("scalar", (), "f32", MAX))


MANY = [((4, 3), "f32"), ((7,), "f16"), ((2, 2, 2), "bf16"), ((0,), "f32"),
        ((5,), "i64"), ((3,), "f64"), ((6,), "i32"), ((), "f16"),
        ((100, 33), "f32"), ((129,), "bf16"), ((2, 3), "i64"), ((13,), "bool")]


def test_all_reduce_many(g):
    rt = g.rt
    for op in (SUM, AVG, MAX):
        specs = [s for s in MANY if takes(s[1], op)]
        tags = ["many %s %d" % (OPS[op], i) for i in range(len(specs))]
        xs = [g.buf(t, g.rank, s, dt) for t, (s, dt) in zip(tags, specs)]
        ys = [x if i % 3 == 0 else rt.empty(s, dt)
              for i, (x, (s, dt)) in enumerate(zip(xs, specs))]
        rt.ok("all_reduce_many", len(xs), tensor_array(xs), tensor_array(ys),
              op)
        for t, (s, dt), y in zip(tags, specs, ys):
            g.check("all_reduce_many %s [%s]" % (t, dt), y.arr,
                    g.reduced(t, s, dt, op))
        # The same as one all_reduce per tensor.
        for t, (s, dt), y in zip(tags, specs, ys):
            x = g.buf(t, g.rank, s, dt)
            rt.ok("all_reduce", x.ref, x.ref, op)
            g.check("all_reduce_many = all_reduce " + t, y.arr, x.arr)


def test_broadcast(g):
    rt = g.rt
    roots = sorted({min(1, g.size - 1), g.size - 1})
    for root in roots:
        for dt in ("f32", "f16", "bf16", "f64", "i64", "i8", "u8", "bool"):
            tag = "broadcast %s" % dt
            x = g.buf(tag, g.rank, (3, 11), dt)
            rt.ok("broadcast", x.ref, root)
            g.check("broadcast %s from %d" % (dt, root), x.arr,
                    g.buf(tag, root, (3, 11), dt).arr)


def test_all_gather(g):
    rt = g.rt
    for dt in ("f32", "bf16", "f64", "i32", "bool"):
        tag = "all_gather %s" % dt
        x = g.buf(tag, g.rank, (3, 2), dt)
        y = rt.empty((g.size * 3, 2), dt)
        rt.ok("all_gather", x.ref, y.ref)
        want = np.concatenate([g.buf(tag, r, (3, 2), dt).arr
                               for r in range(g.size)])
        g.check("all_gather " + dt, y.arr, want)
    # y of another shape with the same number of elements.
    x = g.buf("gather flat", g.rank, (4,), "f16")
    y = rt.empty((g.size, 2, 2), "f16")
    rt.ok("all_gather", x.ref, y.ref)
    g.check("all_gather f16 [size, 2, 2]", y.arr.reshape(-1), np.concatenate(
        [g.buf("gather flat", r, (4,), "f16").arr for r in range(g.size)]))
    e = rt.empty((0,), "f32")
    rt.ok("all_gather", e.ref, e.ref)


def test_reduce_scatter(g):
    rt = g.rt
    shape = (g.size * 4, 3)
    for dt, op, name in reductions(REDUCIBLE):
        tag = "reduce_scatter " + name
        x = g.buf(tag, g.rank, shape, dt)
        y = rt.empty((4, 3), dt)
        rt.ok("reduce_scatter", x.ref, y.ref, op)
        g.check(tag, y.arr.reshape(-1),
                g.reduced(tag, shape, dt, op, part=g.rank))


def test_barrier(g):
    rt = g.rt
    L = rt.lib
    assert L.amprt_barrier(rt.ctx) == 0, rt.error()
    # The last rank arrives 0.3 s late; nobody may leave before it does.
    if g.rank == g.size - 1:
        time.sleep(0.3)
    t0 = time.monotonic()
    assert L.amprt_barrier(rt.ctx) == 0, rt.error()
    waited = time.monotonic() - t0
    if g.size > 1 and g.rank != g.size - 1:
        assert waited > 0.2, "left the barrier after %.3f s" % waited


def test_checks_with_group(g):
    rt = g.rt
    n = g.size
    x = g.buf("checks", g.rank, (2, 3), "f32")
    rt.fails("broadcast", x.ref, n, status=1,
             match="broadcast: root %d out of range: the group has %d rank"
             % (n, n))
    rt.fails("all_gather", x.ref, rt.empty((n * 6 + 1,), "f32").ref,
             status=3, match=r"expected %d elements \(group size %d x 6 "
                             r"elements of x\)" % (n * 6, n))
    rt.fails("reduce_scatter", rt.empty((n * 2 + 1,), "f32").ref,
             rt.empty((2,), "f32").ref, SUM, status=3,
             match=r"expected %d elements \(group size %d x 2 elements of "
                   r"y\)" % (n * 2, n))
    rt.fails("all_reduce", x.ref, x.ref, 4, status=1,
             match="op 4 is not a reduction")
    # The group still works after the refused calls.
    rt.ok("all_reduce", x.ref, x.ref, SUM)
    g.check("all_reduce after refused calls", x.arr,
            g.reduced("checks", (2, 3), "f32", SUM))


TESTS = [test_comm, test_all_reduce, test_all_reduce_many, test_broadcast,
         test_all_gather, test_reduce_scatter, test_barrier,
         test_checks_with_group]


# ---------------------------------------------------------------------------
# A rank
# ---------------------------------------------------------------------------

def say(g, text):
    # One write per line: mpirun forwards each rank's lines whole.
    sys.stdout.write("rank %d of %d: %s\n" % (g.rank, g.size, text))
    sys.stdout.flush()


def run_rank(a):
    rt = Runtime(a.lib, a.ops_def, 0)
    L = rt.lib
    comm = C.c_void_p()
    st = L.amprt_comm_create(b"mpi", C.byref(comm))
    if st != 0:
        print("FAIL: amprt_comm_create: %s" % L.amprt_last_error(None)
              .decode(), flush=True)
        return 1
    assert L.amprt_context_set_comm(rt.ctx, comm) == 0, rt.error()
    g = Rank(rt, comm)
    # Rank 0's seed for everyone (the first collective of the job).
    seed = Buf(np.array(a.seed if a.seed is not None else
                        int.from_bytes(os.urandom(4), "little")), "i64")
    rt.ok("broadcast", seed.ref, 0)
    g.seed = int(seed.arr)
    rt.rng = np.random.default_rng([g.seed, g.rank])
    rt.seed = g.seed
    if g.rank == 0:
        say(g, "seed %d (rerun with --seed %d)" % (g.seed, g.seed))

    if a.exit_rank is not None or a.abort_rank is not None:
        return run_fault(a, g)

    rt.filter = a.k
    status = rt.run([bound(t, g) for t in TESTS],
                    prefix="rank %d of %d (chunk %s): "
                    % (g.rank, g.size,
                       os.environ.get("AMPRT_COMM_CHUNK", "INT_MAX")))
    assert L.amprt_context_set_comm(rt.ctx, None) == 0
    assert L.amprt_comm_destroy(comm) == 0, L.amprt_last_error(None)
    return status


def bound(t, g):
    """Test t(g) as the harness runs tests (a function of the Runtime)."""
    def f(rt):
        return t(g)
    f.__name__ = t.__name__
    return f


def run_fault(a, g):
    rt = g.rt
    L = rt.lib
    assert L.amprt_barrier(rt.ctx) == 0, rt.error()
    if g.rank == a.exit_rank:
        say(g, "exiting with 3 before all_reduce")
        os._exit(3)
    if g.rank == a.abort_rank:
        say(g, "calling amprt_comm_abort(comm, 7) before all_reduce")
        L.amprt_comm_abort(g.comm, 7)
        say(g, "FAIL: amprt_comm_abort returned")
        return 1
    x = g.buf("fault", g.rank, (1000,), "f32")
    st = L.amprt_all_reduce(rt.ctx, x.ref, x.ref, SUM)
    if st != 0:
        # What a trainer does when a collective fails: end every rank.
        say(g, "all_reduce failed (%d): %s; aborting" % (st, rt.error()))
        L.amprt_comm_abort(g.comm, 5)
    say(g, "FAIL: all_reduce returned without the failed rank")
    return 1


# ---------------------------------------------------------------------------
# The launcher of a fault job
# ---------------------------------------------------------------------------

def run_launch(a):
    """Runs the job `a.launch` + this script (a rank per process), expects
    it to fail within a.within seconds and its output to name the rank."""
    fault = a.exit_rank if a.exit_rank is not None else a.abort_rank
    cmd = shlex.split(a.launch) + [sys.executable, os.path.abspath(__file__),
                                   "--lib", a.lib, "--ops-def", a.ops_def]
    if a.exit_rank is not None:
        cmd += ["--exit-rank", str(a.exit_rank)]
    if a.abort_rank is not None:
        cmd += ["--abort-rank", str(a.abort_rank)]
    # Marks the job's processes, to find any rank left running.
    tag = "amprt-fault-%d-%d" % (os.getpid(), int(time.time()))
    cmd += ["--job-tag", tag]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        code, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        code, out = None, (e.stdout or b"").decode(errors="replace") \
            if isinstance(e.stdout, bytes) else (e.stdout or "")
    took = time.monotonic() - t0
    print("job output:")
    for line in out.splitlines():
        print("| " + line)
    print("job exit code %s after %.1f s" % (code, took))
    problems = []
    if code is None:
        problems.append("the job was still running after 120 s")
    elif code == 0:
        problems.append("the job exited with 0")
    if took > a.within:
        problems.append("the job took %.1f s (limit %d s)" % (took, a.within))
    if "FAIL" in out:
        problems.append("a rank went on past the failure")
    left = survivors(tag)
    if left:
        problems.append("ranks still running: pids %s" % left)
    # Open MPI names the process that failed or aborted (rank `fault` of
    # MPI_COMM_WORLD) in its report; an abort is also named by the
    # runtime's own line (Open MPI's report of it can be lost).
    names = [r"rank %d\b" % fault, r"\[\[\d+,\d+\],%d\]" % fault]
    if not any(re.search(n, strip_ours(out)) for n in names):
        problems.append("mpirun's output does not name rank %d" % fault)
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("PASS: every rank ended, exit code %d, in %.1f s (limit %d s)"
              % (code, took, a.within))
    return 1 if problems else 0


def survivors(tag, grace=5.0):
    """Pids of processes whose command line holds `tag` (the job's ranks),
    after up to `grace` seconds for the killed ones to go."""
    end = time.monotonic() + grace
    while True:
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if tag.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
        if not pids or time.monotonic() > end:
            return pids
        time.sleep(0.2)


def strip_ours(out):
    """The job's output without the lines the test's ranks print
    themselves (so the rank must be named by mpirun or the runtime)."""
    return "\n".join(line for line in out.splitlines()
                     if not line.startswith("rank "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--ops-def", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-k", default=None, help="run tests matching this")
    ap.add_argument("--exit-rank", type=int, default=None)
    ap.add_argument("--abort-rank", type=int, default=None)
    ap.add_argument("--launch", default=None,
                    help="run a fault job with this launcher command")
    ap.add_argument("--within", type=int, default=60)
    ap.add_argument("--job-tag", default=None,
                    help="(set by --launch: marks the job's processes)")
    a = ap.parse_args()
    np.seterr(all="ignore")
    if a.launch:
        return run_launch(a)
    return run_rank(a)


if __name__ == "__main__":
    sys.exit(main())
