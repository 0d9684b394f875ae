#!/usr/bin/env python3
# ===- amp_property.py - Property tests of the AMP pass on random DAGs ----=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Property tests of `--auto-mixed-precision` on seeded random ONNX graphs.

Each graph (opset 17, IR 8) is a random DAG over float32 graph inputs and
initializers with random fan-in and fan-out. Its nodes are drawn from every
default list of the pass (allow, deny, infer, clear), from ops on no list,
from Cast patterns (no-op casts, lossy f32->f16->f32 pairs, f64 round trips,
an fp16 island), and include ops with fixed-type or separately typed ports
(Reshape shape, Dropout ratio, Resize scales, Slice starts, Pad value, Clip
bounds, BatchNormalization statistics, Pow exponent, LayerNormalization
statistics outputs). Graph outputs are every sink plus random interior values.
Shapes are tracked so that every generated model passes the ONNX checker,
strict shape inference and runs in onnxruntime.

For every graph, amp-opt runs with `report=`; then these properties must hold
(the name before each line is what a failure message starts with):

  generator     (the test's own contract) the random model passes the
                checker and strict shape inference, with the tracked shapes,
                and runs in onnxruntime
  tool          amp-opt exits 0 and writes the model and the report
  checker       the output passes onnx.checker (full_check) and strict
                shape inference
  deny          no deny-list node has a low-precision port (actual tensor
                types of the exported model, from shape inference)
  allow         in graphs that carry value_info (half of them), every type
                constraint of an allow-list node whose ports are all f32 and
                which allows the low type (schema of opset 17) is low
  lists         the report's `list` of each node is the documented default
  ports         a node reported fp32 has exactly its original port types; a
                node reported low has no f32 port left in a converted
                constraint and its non-float ports unchanged
  casts         inserted casts <= edges of the input graph; at most one Cast
                per (value, target type) in the whole output; no inserted
                cast of a value that already has that type, none fed by
                another inserted cast, no Cast without a consumer; the
                casts in the model are exactly the report's `casts`; the
                pass adds no other node
  io            graph inputs, outputs (names, types, shapes) and
                initializers (names, types, values bit for bit) unchanged
  report        the report lists every input node once; its summary equals
                the counters printed on stderr and the counters recomputed
                from the report's `nodes` and `casts` (definitions in
                docs/AutoMixedPrecision.md)
  idempotent    amp-opt --auto-mixed-precision on the output gives the same
                model again (onnx_compare) and inserts no cast
  numerics      original and rewritten model in onnxruntime (CPU) on the same
                random inputs agree within the tolerances below

Numerics. The reference is the f32 model in onnxruntime (CPU, graph
optimizations off so ORT folds no cast). The rewritten model runs emulated:
every fp16/bf16 value becomes an f32 value rounded to that type (a Cast to
the low type and back after each node that produces one), which is what a
low-precision kernel with f32 accumulation computes; ORT's CPU provider has
almost no bf16 kernels. In fp16 mode the rewritten model also runs as is:
ORT computes fp16 nodes with f32 kernels and drops the f32->fp16->f32 cast
pairs around them (so one consumer may see a value rounded and another not);
that run is compared on the outputs behind no discontinuous op. An output
element passes when
    |amp - ref| <= ATOL * scale + RTOL * |ref| + 4 * spread
  scale  = max(1, max |x|) over the output and the float operands of the
           node that computes it (cancellation is judged against the terms),
  spread = max |noisy - ref| over the output, where `noisy` is the f32 model
           with every input, initializer and node output multiplied by
           (1 + u * U(-1, 1)), u the unit roundoff (2^-11 fp16, 2^-8 bf16):
           how much that output moves when values are rounded (normalizing
           a nearly constant tensor amplifies rounding),
with (RTOL, ATOL) = (2e-2, 1e-2) for fp16 and (1.25e-1, 6e-2) for bf16. The
generator keeps values bounded: inputs of Exp/Pow/Log/Sqrt/Reciprocal/Div are
squashed or made positive. Outputs that depend on a discontinuous op (Floor,
Ceil, Round, Sign, comparisons, ArgMax/ArgMin, TopK, Hardmax, IsNaN, Shrink,
ThresholdedRelu) may flip where a value is within rounding of a step: for
those at least half of the elements must pass, and outputs of fewer than 8
elements are compared by type and shape only. Integer and bool outputs are
compared exactly, under the same rule when behind a discontinuous op.

Output: one line per failing graph (`FAIL seed=S mode=M property: detail`),
then `amp-property: P/N graphs passed (fp16 F/NF, bf16 B/NB), T s`. Exit 1 when any
graph fails. `--keep DIR` writes each failing input model to DIR.

    amp_property.py --amp-opt build/bin/amp-opt --count 2000 --bf16-count 500
"""

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnx_compare  # noqa: E402

OPSET = 17
IR_VERSION = 8
FLOAT, FLOAT16, BFLOAT16, DOUBLE = (TensorProto.FLOAT, TensorProto.FLOAT16,
                                    TensorProto.BFLOAT16, TensorProto.DOUBLE)
INT64, BOOL = TensorProto.INT64, TensorProto.BOOL

# Tolerances (see the module docstring).
TOLERANCES = {"fp16": (2e-2, 1e-2), "bf16": (1.25e-1, 6e-2)}
DISCONTINUOUS_PASS_FRACTION = 0.5
DISCONTINUOUS_MIN_SIZE = 8

# The default lists of docs/AutoMixedPrecision.md for the ops the generator
# draws (default domain). Ops not here are on no list. Differences between
# the modes are in the *_FP16/*_BF16 sets.
ALLOW = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum"}
DENY_BOTH = {"Exp", "Pow", "ReduceLogSumExp", "SoftmaxCrossEntropyLoss",
             "NegativeLogLikelihoodLoss", "CumSum"}
DENY_FP16_INFER_BF16 = {"ReduceSum", "ReduceMean", "ReduceSumSquare",
                        "ReduceL2"}
INFER = {"Add", "Sub", "Mul", "Div", "Sum", "Mean", "Softmax", "LogSoftmax",
         "Sigmoid", "Tanh", "Log", "Sqrt", "Reciprocal", "Erf", "Elu",
         "LeakyRelu", "Selu", "Softplus", "Softsign", "HardSigmoid",
         "HardSwish", "AveragePool", "GlobalAveragePool", "BatchNormalization",
         "LayerNormalization", "InstanceNormalization", "ScatterND",
         "ScatterElements"}
CLEAR = {"Relu", "Reshape", "Transpose", "Identity", "Flatten", "Squeeze",
         "Unsqueeze", "Concat", "Slice", "Split", "Gather", "GatherElements",
         "GatherND", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth",
         "Dropout", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin",
         "Max", "Min", "Abs", "Neg", "Sign", "Ceil", "Floor", "Round", "Clip",
         "Where", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
         "ArgMax", "ArgMin", "TopK", "IsNaN", "IsInf", "Shape", "Size"}
CLEAR_FP16_ONLY = {"OneHot"}
CLEAR_BF16_ONLY = {"Resize"}


def default_list(op_type: str, mode: str) -> str:
    if op_type in ALLOW:
        return "allow"
    if op_type in DENY_BOTH:
        return "deny"
    if op_type in DENY_FP16_INFER_BF16:
        return "deny" if mode == "fp16" else "infer"
    if op_type in INFER:
        return "infer"
    if op_type in CLEAR:
        return "clear"
    if op_type in CLEAR_FP16_ONLY:
        return "clear" if mode == "fp16" else "none"
    if op_type in CLEAR_BF16_ONLY:
        return "clear" if mode == "bf16" else "none"
    return "none"


DISCONTINUOUS = {"Floor", "Ceil", "Round", "Sign", "Equal", "Greater", "Less",
                 "GreaterOrEqual", "LessOrEqual", "ArgMax", "ArgMin", "TopK",
                 "Hardmax", "IsNaN", "IsInf", "Shrink", "ThresholdedRelu"}

# ----------------------------------------------------------------------------
# Random graph generator
# ----------------------------------------------------------------------------


@dataclass
class Val:
    name: str
    shape: Tuple[int, ...]
    mag: float          # rough bound of |value|
    disc: bool = False  # depends on a discontinuous op


class GenError(Exception):
    pass


class Generator:
    """Builds one random model from a seed."""

    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.nodes: List[onnx.NodeProto] = []
        self.inits: List[onnx.TensorProto] = []
        self.inputs: List[onnx.ValueInfoProto] = []
        self.pool: List[Val] = []        # float32 values
        self.other: List[Tuple[str, int, Tuple[int, ...], bool]] = []  # non-f32
        self.used: Dict[str, int] = {}
        self.counter = 0
        self.casts = set()               # (value, to) of generated Casts

    # --- names and helpers --------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def init(self, array: np.ndarray, prefix: str = "w") -> str:
        name = self.fresh(prefix)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def fconst(self, shape, lo=-1.0, hi=1.0, prefix="w") -> str:
        return self.init(self.np.uniform(lo, hi, size=shape).astype(np.float32),
                         prefix)

    def iconst(self, values, prefix="k") -> str:
        return self.init(np.array(values, dtype=np.int64), prefix)

    def node(self, op: str, inputs: Sequence[str], n_out: int = 1,
             **attrs) -> List[str]:
        outs = [self.fresh("v") for _ in range(n_out)]
        for i in inputs:
            if i:
                self.used[i] = self.used.get(i, 0) + 1
        self.nodes.append(helper.make_node(op, list(inputs), outs,
                                           name=self.fresh(f"{op}_"), **attrs))
        return outs

    def add(self, name: str, shape, mag: float, disc: bool) -> Val:
        v = Val(name, tuple(shape), float(min(mag, 1e6)), disc)
        self.pool.append(v)
        return v

    def add_other(self, name: str, elem: int, shape, disc: bool) -> None:
        self.other.append((name, elem, tuple(shape), disc))

    def pick(self, pred=None) -> Optional[Val]:
        cands = [v for v in self.pool if pred is None or pred(v)]
        if not cands:
            return None
        if self.r.random() < 0.5:
            return self.r.choice(cands[-3:])
        return self.r.choice(cands)

    def pick_rank(self, ranks) -> Optional[Val]:
        return self.pick(lambda v: len(v.shape) in ranks)

    def partner(self, x: Val, allow_bcast: bool = True) -> Val:
        """A value that broadcasts to x's shape (same shape preferred)."""
        same = [v for v in self.pool if v.shape == x.shape and v is not x]
        if same and self.r.random() < 0.6:
            return self.r.choice(same[-4:] if self.r.random() < 0.5 else same)
        kinds = ["full"]
        if allow_bcast and x.shape:
            kinds += ["last", "one", "scalar"]
        kind = self.r.choice(kinds)
        shape = {"full": x.shape, "last": x.shape[-1:], "one": (1,),
                 "scalar": ()}[kind]
        if self.r.random() < 0.25:
            # A Constant node instead of an initializer.
            value = self.np.uniform(-1, 1, size=shape).astype(np.float32)
            (out,) = self.node("Constant", [], value=numpy_helper.from_array(
                value, self.fresh("c")))
            return Val(out, tuple(shape), 1.0)
        return Val(self.fconst(shape), tuple(shape), 1.0)

    def squash(self, x: Val, limit: float) -> Val:
        """x itself if |x| stays below limit, else Tanh(x) or Sigmoid(x)."""
        if x.mag <= limit:
            return x
        op = self.r.choice(["Tanh", "Sigmoid"])
        (out,) = self.node(op, [x.name])
        return self.add(out, x.shape, 1.0, x.disc)

    def positive(self, x: Val) -> Val:
        """A value in about [0.5, 3] computed from x (for Log, Sqrt, ...)."""
        how = self.r.choice(["sigmoid", "abs", "softplus"])
        if how == "sigmoid":
            (s,) = self.node("Sigmoid", [x.name])
            mag = 1.0
        elif how == "abs":
            x = self.squash(x, 2.0)
            (s,) = self.node("Abs", [x.name])
            mag = x.mag
        else:
            x = self.squash(x, 2.0)
            (s,) = self.node("Softplus", [x.name])
            mag = x.mag + 1
        (out,) = self.node("Add", [s, self.fconst((), 0.5, 1.0)])
        return self.add(out, x.shape, mag + 1, x.disc)

    def need4d(self) -> Val:
        x = self.pick_rank([4])
        if x is not None and self.r.random() < 0.8:
            return x
        x = self.pick_rank([2]) or self.pool[0]
        n = int(np.prod(x.shape))
        # [1, C, H, W] with C*H*W = n.
        options = []
        for c in (1, 2, 3, 4):
            if n % c == 0:
                rest = n // c
                for h in (1, 2, 3, 4, 6, 8):
                    if rest % h == 0:
                        options.append((1, c, h, rest // h))
        shape = self.r.choice(options)
        (out,) = self.node("Reshape", [x.name, self.iconst(list(shape))])
        return self.add(out, shape, x.mag, x.disc)

    def need2d(self) -> Val:
        x = self.pick_rank([2])
        if x is not None:
            return x
        x = self.pool[-1]
        if len(x.shape) >= 2:
            (out,) = self.node("Flatten", [x.name], axis=1)
            shape = (x.shape[0], int(np.prod(x.shape[1:])))
        else:
            shape = (1, int(np.prod(x.shape)) if x.shape else 1)
            (out,) = self.node("Reshape", [x.name, self.iconst(list(shape))])
        return self.add(out, shape, x.mag, x.disc)

    # --- allow list -----------------------------------------------------------

    def op_matmul(self):
        x = self.pick_rank([2, 3, 4]) or self.need2d()
        k = x.shape[-1]
        mats = [v for v in self.pool if len(v.shape) == 2 and v.shape[0] == k
                and v is not x]
        if mats and self.r.random() < 0.3:
            w = self.r.choice(mats)
            mag = x.mag * w.mag * k
            wname, n, disc = w.name, w.shape[1], w.disc
        else:
            n = self.r.choice([k, k, 4, 8])
            wname = self.fconst((k, n), -1, 1)
            mag, disc = x.mag * 1.7, False
            wname = self._scaled(wname, k)
        (out,) = self.node("MatMul", [x.name, wname])
        self.add(out, x.shape[:-1] + (n,), mag, x.disc or disc)

    def _scaled(self, name: str, k: int) -> str:
        t = self.inits[-1]
        assert t.name == name
        a = numpy_helper.to_array(t) * np.float32(np.sqrt(1.0 / k))
        self.inits[-1] = numpy_helper.from_array(a.astype(np.float32), name)
        return name

    def op_gemm(self):
        a = self.need2d()
        m, k = a.shape
        n = self.r.choice([k, 4, 8])
        trans_b = self.r.random() < 0.5
        w = self._scaled(self.fconst((n, k) if trans_b else (k, n)), k)
        inputs = [a.name, w]
        if self.r.random() < 0.7:
            inputs.append(self.fconst(self.r.choice([(n,), (m, n), (1, n)])))
        attrs = {"transB": 1} if trans_b else {}
        if self.r.random() < 0.3:
            attrs["alpha"] = 0.5
            attrs["beta"] = 2.0
        (out,) = self.node("Gemm", inputs, **attrs)
        self.add(out, (m, n), a.mag * 1.7 + 2, a.disc)

    def op_conv(self, transpose=False):
        x = self.need4d()
        n, c, h, w = x.shape
        m = self.r.choice([1, 2, 4])
        k = self.r.choice([1, 3]) if min(h, w) >= 3 else 1
        weight = self.fconst((c, m, k, k) if transpose else (m, c, k, k))
        weight = self._scaled(weight, c * k * k)
        inputs = [x.name, weight]
        if self.r.random() < 0.5:
            inputs.append(self.fconst((m,)))
        p = (k - 1) // 2
        (out,) = self.node("ConvTranspose" if transpose else "Conv", inputs,
                           kernel_shape=[k, k], pads=[p, p, p, p])
        self.add(out, (n, m, h, w), x.mag * 2 + 1, x.disc)

    def op_convtranspose(self):
        self.op_conv(transpose=True)

    def op_einsum(self):
        a = self.need2d()
        m, k = a.shape
        n = self.r.choice([k, 4])
        w = self._scaled(self.fconst((n, k)), k)
        (out,) = self.node("Einsum", [a.name, w], equation="ij,kj->ik")
        self.add(out, (m, n), a.mag * 1.7, a.disc)

    # --- deny list ------------------------------------------------------------

    def op_exp(self):
        x = self.squash(self.pick(), 3.0)
        (out,) = self.node("Exp", [x.name])
        self.add(out, x.shape, float(np.exp(x.mag)), x.disc)

    def op_pow(self):
        x = self.squash(self.pick(), 3.0)
        if self.r.random() < 0.5:
            e = self.init(np.array(self.r.choice([2.0, 3.0]), np.float32), "e")
        else:
            e = self.iconst(self.r.choice([2, 3]), "e")
        (out,) = self.node("Pow", [x.name, e])
        self.add(out, x.shape, x.mag ** 3, x.disc)

    def _axes(self, x: Val) -> List[int]:
        rank = len(x.shape)
        if rank == 0:
            return []
        axes = sorted(self.r.sample(range(rank), self.r.randint(1, rank)))
        return [a - rank if self.r.random() < 0.3 else a for a in axes]

    def _reduced(self, x: Val, axes, keepdims) -> Tuple[int, ...]:
        rank = len(x.shape)
        ax = {a % rank for a in axes} if axes else set(range(rank))
        return tuple((1 if i in ax else d) for i, d in enumerate(x.shape)
                     if keepdims or i not in ax)

    def op_reduce(self, op=None):
        op = op or self.r.choice(["ReduceSum", "ReduceMean", "ReduceSumSquare",
                                  "ReduceL2", "ReduceLogSumExp"])
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        if op in ("ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"):
            x = self.squash(x, 4.0)
        axes = self._axes(x)
        keep = self.r.random() < 0.7
        n = int(np.prod(x.shape))
        if op == "ReduceSum":
            (out,) = self.node(op, [x.name, self.iconst(axes)], keepdims=int(keep))
        else:
            (out,) = self.node(op, [x.name], axes=axes, keepdims=int(keep))
        mag = {"ReduceSum": x.mag * n, "ReduceMean": x.mag,
               "ReduceSumSquare": x.mag ** 2 * n, "ReduceL2": x.mag * n,
               "ReduceLogSumExp": x.mag + np.log(n) + 1}[op]
        self.add(out, self._reduced(x, axes, keep), mag, x.disc)

    def op_loss(self):
        x = self.squash(self.need2d(), 6.0)
        n, c = x.shape
        labels = self.iconst([self.r.randrange(c) for _ in range(n)], "labels")
        red = self.r.choice(["mean", "sum", "none"])
        if self.r.random() < 0.6:
            inputs = [x.name, labels]
            if self.r.random() < 0.3:
                inputs.append(self.fconst((c,), 0.5, 1.5))
            two = self.r.random() < 0.5
            outs = self.node("SoftmaxCrossEntropyLoss", inputs, 2 if two else 1,
                             reduction=red)
            self.add(outs[0], () if red != "none" else (n,), x.mag * 2 + 3,
                     x.disc)
            if two:
                self.add(outs[1], x.shape, x.mag * 2 + 3, x.disc)
        else:
            (lp,) = self.node("LogSoftmax", [x.name], axis=1)
            self.add(lp, x.shape, x.mag * 2 + 3, x.disc)
            (out,) = self.node("NegativeLogLikelihoodLoss", [lp, labels],
                               reduction=red)
            self.add(out, () if red != "none" else (n,), x.mag * 2 + 3, x.disc)

    # --- infer list -----------------------------------------------------------

    def op_binary(self):
        op = self.r.choice(["Add", "Sub", "Mul", "Div", "Sum", "Mean"])
        x = self.pick()
        if op == "Div":
            y = self.positive(self.partner(x))
            (out,) = self.node("Div", [x.name, y.name])
            self.add(out, x.shape, x.mag * 2, x.disc or y.disc)
            return
        if op == "Mul":
            x = self.squash(x, 50.0)
        y = self.partner(x)
        if op == "Mul":
            y = self.squash(y, 50.0)
        inputs = [x.name, y.name]
        if op in ("Sum", "Mean") and self.r.random() < 0.5:
            inputs.append(self.partner(x).name)
        if self.r.random() < 0.3 and op in ("Add", "Mul"):
            inputs = inputs[::-1]
        (out,) = self.node(op, inputs)
        mag = x.mag * y.mag if op == "Mul" else (x.mag + y.mag) * 1.5
        self.add(out, x.shape, mag, x.disc or y.disc)

    def op_unary_infer(self):
        op = self.r.choice(["Sigmoid", "Tanh", "Erf", "Elu", "LeakyRelu",
                            "Selu", "Softplus", "Softsign", "HardSigmoid",
                            "Log", "Sqrt", "Reciprocal", "Softmax",
                            "LogSoftmax"])
        x = self.pick()
        attrs = {}
        if op in ("Log", "Sqrt", "Reciprocal"):
            x = self.positive(x)
        if op in ("Softmax", "LogSoftmax"):
            if not x.shape:
                return False
            attrs["axis"] = self.r.randrange(-len(x.shape), len(x.shape))
            x = self.squash(x, 20.0)
        (out,) = self.node(op, [x.name], **attrs)
        mag = {"Sigmoid": 1, "Tanh": 1, "Erf": 1, "Softsign": 1,
               "HardSigmoid": 1, "Softmax": 1, "Log": 2, "Sqrt": x.mag,
               "Reciprocal": 2, "LogSoftmax": x.mag * 2 + 3}.get(op, x.mag * 1.1 + 2)
        self.add(out, x.shape, mag, x.disc)

    def op_pool_infer(self):
        x = self.need4d()
        n, c, h, w = x.shape
        if self.r.random() < 0.5:
            (out,) = self.node("GlobalAveragePool", [x.name])
            self.add(out, (n, c, 1, 1), x.mag, x.disc)
            return
        k = self.r.choice([1, 2, 3]) if min(h, w) >= 3 else 1
        if k == 2:
            (out,) = self.node("AveragePool", [x.name], kernel_shape=[2, 2],
                               strides=[1, 1], pads=[0, 0, 1, 1],
                               count_include_pad=self.r.randint(0, 1))
        else:
            p = (k - 1) // 2
            (out,) = self.node("AveragePool", [x.name], kernel_shape=[k, k],
                               pads=[p, p, p, p])
        self.add(out, x.shape, x.mag, x.disc)

    def op_norm(self):
        kind = self.r.choice(["bn", "ln", "in"])
        if kind == "ln":
            x = self.pick(lambda v: len(v.shape) >= 1)
            if x is None:
                return False
            x = self.squash(x, 100.0)
            axis = self.r.randrange(-len(x.shape), 0)
            nshape = x.shape[axis:]
            if int(np.prod(nshape)) < 2:
                return False
            inputs = [x.name, self.fconst(nshape, 0.5, 1.5)]
            if self.r.random() < 0.5:
                inputs.append(self.fconst(nshape))
            n_out = self.r.choice([1, 1, 3])
            outs = self.node("LayerNormalization", inputs, n_out, axis=axis)
            self.add(outs[0], x.shape, 6.0, x.disc)
            if n_out == 3:
                stat = tuple(d if i < len(x.shape) + axis else 1
                             for i, d in enumerate(x.shape))
                self.add(outs[1], stat, x.mag, x.disc)
                self.add(outs[2], stat, 100.0, x.disc)
            return
        x = self.need4d() if kind == "in" or self.r.random() < 0.7 else \
            self.need2d()
        c = x.shape[1]
        if kind == "in":
            if x.shape[2] * x.shape[3] < 2:
                return False
            x = self.squash(x, 100.0)
            (out,) = self.node("InstanceNormalization",
                               [x.name, self.fconst((c,), 0.5, 1.5),
                                self.fconst((c,))])
            self.add(out, x.shape, 6.0, x.disc)
            return
        inputs = [x.name, self.fconst((c,), 0.5, 1.5), self.fconst((c,)),
                  self.fconst((c,)), self.fconst((c,), 0.5, 2.0)]
        (out,) = self.node("BatchNormalization", inputs)
        self.add(out, x.shape, x.mag * 3 + 2, x.disc)

    # --- clear list -----------------------------------------------------------

    def op_unary_clear(self):
        op = self.r.choice(["Relu", "Identity", "Abs", "Neg", "Sign", "Ceil",
                            "Floor", "Round"])
        x = self.pick()
        (out,) = self.node(op, [x.name])
        self.add(out, x.shape, x.mag + 1 if op in ("Ceil", "Floor", "Round")
                 else x.mag, x.disc or op in DISCONTINUOUS)

    def op_shape_clear(self):
        op = self.r.choice(["Reshape", "Reshape", "Transpose", "Flatten",
                            "Unsqueeze", "Squeeze", "Expand", "Tile"])
        x = self.pick()
        rank = len(x.shape)
        if op == "Reshape":
            n = int(np.prod(x.shape))
            opts = [(n,), (1, n)] + [(a, n // a) for a in (2, 3, 4, 8)
                                     if n % a == 0]
            shape = list(self.r.choice(opts))
            if self.r.random() < 0.3:
                shape[self.r.randrange(len(shape))] = -1
            if self.r.random() < 0.2:
                # The shape computed by a Shape node (a fixed-type port fed
                # by a node).
                same = [v for v in self.pool if int(np.prod(v.shape)) == n
                        and v.shape != x.shape]
                if same:
                    tgt = self.r.choice(same)
                    (s,) = self.node("Shape", [tgt.name])
                    (out,) = self.node("Reshape", [x.name, s])
                    self.add(out, tgt.shape, x.mag, x.disc)
                    return
            (out,) = self.node("Reshape", [x.name, self.iconst(shape)])
            known = [d for d in shape if d != -1]
            real = tuple(d if d != -1 else n // int(np.prod(known))
                         for d in shape)
            self.add(out, real, x.mag, x.disc)
        elif op == "Transpose":
            if rank < 2:
                return False
            perm = list(range(rank))
            self.r.shuffle(perm)
            (out,) = self.node("Transpose", [x.name], perm=perm)
            self.add(out, tuple(x.shape[p] for p in perm), x.mag, x.disc)
        elif op == "Flatten":
            axis = self.r.randint(0, rank)
            (out,) = self.node("Flatten", [x.name], axis=axis)
            shape = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
            self.add(out, shape, x.mag, x.disc)
        elif op == "Unsqueeze":
            axis = self.r.randint(0, rank)
            (out,) = self.node("Unsqueeze", [x.name, self.iconst([axis])])
            self.add(out, x.shape[:axis] + (1,) + x.shape[axis:], x.mag, x.disc)
        elif op == "Squeeze":
            ones = [i for i, d in enumerate(x.shape) if d == 1]
            if not ones:
                return False
            axes = sorted(self.r.sample(ones, self.r.randint(1, len(ones))))
            (out,) = self.node("Squeeze", [x.name, self.iconst(axes)])
            self.add(out, tuple(d for i, d in enumerate(x.shape)
                                if i not in axes), x.mag, x.disc)
        elif op == "Expand":
            ones = [i for i, d in enumerate(x.shape) if d == 1]
            shape = list(x.shape)
            for i in ones:
                shape[i] = self.r.choice([1, 2, 3])
            if not ones and self.r.random() < 0.5:
                shape = [2] + shape
            (out,) = self.node("Expand", [x.name, self.iconst(shape)])
            self.add(out, tuple(shape), x.mag, x.disc)
        else:  # Tile
            if rank == 0 or int(np.prod(x.shape)) > 64:
                return False
            reps = [self.r.choice([1, 1, 2]) for _ in x.shape]
            (out,) = self.node("Tile", [x.name, self.iconst(reps)])
            self.add(out, tuple(d * k for d, k in zip(x.shape, reps)), x.mag,
                     x.disc)

    def op_concat(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        axis = self.r.randrange(len(x.shape))
        parts = [x]
        for _ in range(self.r.randint(1, 2)):
            cands = [v for v in self.pool if len(v.shape) == len(x.shape) and
                     all(a == b for i, (a, b) in enumerate(zip(v.shape, x.shape))
                         if i != axis)]
            if cands and self.r.random() < 0.7:
                parts.append(self.r.choice(cands))
            else:
                shape = list(x.shape)
                shape[axis] = self.r.choice([1, 2])
                parts.append(Val(self.fconst(tuple(shape)), tuple(shape), 1.0))
        shape = list(x.shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        (out,) = self.node("Concat", [p.name for p in parts],
                           axis=axis - len(shape) if self.r.random() < 0.3 else axis)
        self.add(out, tuple(shape), max(p.mag for p in parts),
                 any(p.disc for p in parts))

    def op_slice_split(self):
        x = self.pick(lambda v: any(d >= 2 for d in v.shape))
        if x is None:
            return False
        axis = self.r.choice([i for i, d in enumerate(x.shape) if d >= 2])
        d = x.shape[axis]
        if self.r.random() < 0.5:
            start = self.r.randrange(d - 1)
            end = self.r.randint(start + 1, d)
            inputs = [x.name, self.iconst([start]), self.iconst([end])]
            step = 1
            if self.r.random() < 0.6:
                inputs.append(self.iconst([axis]))
                if self.r.random() < 0.5:
                    step = self.r.choice([1, 2])
                    inputs.append(self.iconst([step]))
            elif axis != 0:
                inputs = [x.name, self.iconst([0, start]),
                          self.iconst([x.shape[0], end]),
                          self.iconst([0, axis])]
            (out,) = self.node("Slice", inputs)
            shape = list(x.shape)
            shape[axis] = len(range(start, end, step))
            self.add(out, tuple(shape), x.mag, x.disc)
        else:
            k = self.r.randint(1, d - 1)
            sizes = [k, d - k]
            if self.r.random() < 0.5:
                outs = self.node("Split", [x.name, self.iconst(sizes)], 2,
                                 axis=axis)
            elif d % 2 == 0:
                sizes = [d // 2, d // 2]
                outs = self.node("Split", [x.name], 2, axis=axis)
            else:
                outs = self.node("Split", [x.name, self.iconst(sizes)], 2,
                                 axis=axis)
            for o, s in zip(outs, sizes):
                shape = list(x.shape)
                shape[axis] = s
                self.add(o, tuple(shape), x.mag, x.disc)

    def op_gather(self):
        op = self.r.choice(["Gather", "GatherElements", "GatherND"])
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        rank = len(x.shape)
        if op == "Gather":
            axis = self.r.randrange(rank)
            n = self.r.randint(1, 4)
            idx = [self.r.randrange(-x.shape[axis], x.shape[axis])
                   for _ in range(n)]
            (out,) = self.node("Gather", [x.name, self.iconst(idx)], axis=axis)
            self.add(out, x.shape[:axis] + (n,) + x.shape[axis + 1:], x.mag,
                     x.disc)
        elif op == "GatherElements":
            axis = self.r.randrange(rank)
            idx = self.np.integers(0, x.shape[axis], size=x.shape)
            (out,) = self.node("GatherElements",
                               [x.name, self.init(idx.astype(np.int64), "k")],
                               axis=axis)
            self.add(out, x.shape, x.mag, x.disc)
        else:
            n = self.r.randint(1, 3)
            idx = np.stack([self.np.integers(0, x.shape[0], size=n)], axis=1)
            (out,) = self.node("GatherND",
                               [x.name, self.init(idx.astype(np.int64), "k")])
            self.add(out, (n,) + x.shape[1:], x.mag, x.disc)

    def op_pad(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        rank = len(x.shape)
        mode = self.r.choice(["constant", "constant", "edge", "reflect"])
        pads = [self.r.choice([0, 1]) for _ in range(2 * rank)]
        if mode == "reflect":
            pads = [p if x.shape[i % rank] >= 2 else 0
                    for i, p in enumerate(pads)]
        inputs = [x.name, self.iconst(pads)]
        if mode == "constant" and self.r.random() < 0.6:
            inputs.append(self.fconst((), -1, 1, "padv"))
        (out,) = self.node("Pad", inputs, mode=mode)
        shape = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x.shape))
        self.add(out, shape, x.mag + 1, x.disc)

    def op_space_depth(self):
        x = self.need4d()
        n, c, h, w = x.shape
        if h % 2 == 0 and w % 2 == 0 and self.r.random() < 0.5:
            (out,) = self.node("SpaceToDepth", [x.name], blocksize=2)
            self.add(out, (n, c * 4, h // 2, w // 2), x.mag, x.disc)
        elif c % 4 == 0:
            (out,) = self.node("DepthToSpace", [x.name], blocksize=2,
                               mode=self.r.choice(["DCR", "CRD"]))
            self.add(out, (n, c // 4, h * 2, w * 2), x.mag, x.disc)
        else:
            return False

    def op_dropout(self):
        x = self.pick()
        inputs = [x.name]
        if self.r.random() < 0.7:
            if self.r.random() < 0.3:
                # The ratio computed by a node from an activation: a port of
                # its own constraint (T1), fed by the graph.
                (s,) = self.node("ReduceMax", [x.name], keepdims=0)
                (r,) = self.node("Sigmoid", [s])
                (r2,) = self.node("Mul", [r, self.fconst((), 0.1, 0.4)])
                inputs.append(r2)
            else:
                inputs.append(self.fconst((), 0.1, 0.5, "ratio"))
        two = self.r.random() < 0.4
        outs = self.node("Dropout", inputs, 2 if two else 1)
        self.add(outs[0], x.shape, x.mag, x.disc)
        if two:
            self.add_other(outs[1], BOOL, x.shape, x.disc)

    def op_pool_clear(self):
        if self.r.random() < 0.3:
            x = self.need4d()
            (out,) = self.node("GlobalMaxPool", [x.name])
            self.add(out, x.shape[:2] + (1, 1), x.mag, x.disc)
            return
        x = self.need4d()
        n, c, h, w = x.shape
        k = self.r.choice([1, 3]) if min(h, w) >= 3 else 1
        p = (k - 1) // 2
        two = self.r.random() < 0.3
        outs = self.node("MaxPool", [x.name], 2 if two else 1,
                         kernel_shape=[k, k], pads=[p, p, p, p])
        self.add(outs[0], x.shape, x.mag, x.disc)
        if two:
            self.add_other(outs[1], INT64, x.shape, x.disc)

    def op_reduce_clear(self):
        op = self.r.choice(["ReduceMax", "ReduceMin"])
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        axes = self._axes(x)
        keep = self.r.random() < 0.7
        (out,) = self.node(op, [x.name], axes=axes, keepdims=int(keep))
        self.add(out, self._reduced(x, axes, keep), x.mag, x.disc)

    def op_minmax(self):
        op = self.r.choice(["Max", "Min"])
        x = self.pick()
        ys = [self.partner(x) for _ in range(self.r.randint(0, 2))]
        (out,) = self.node(op, [x.name] + [y.name for y in ys])
        self.add(out, x.shape, max([x.mag] + [y.mag for y in ys]),
                 x.disc or any(y.disc for y in ys))

    def op_clip(self):
        x = self.pick()
        lo = self.fconst((), -1.0, -0.2, "lo") if self.r.random() < 0.7 else ""
        hi = self.fconst((), 0.2, 1.0, "hi") if self.r.random() < 0.7 else ""
        inputs = [x.name, lo, hi]
        while inputs and not inputs[-1]:
            inputs.pop()
        (out,) = self.node("Clip", inputs)
        self.add(out, x.shape, 1.0 if hi and lo else x.mag, x.disc)

    def op_compare(self):
        op = self.r.choice(["Equal", "Greater", "Less", "GreaterOrEqual",
                            "LessOrEqual"])
        x = self.pick()
        y = self.partner(x)
        (c,) = self.node(op, [x.name, y.name])
        use = self.r.choice(["where", "where", "cast", "out"])
        if use == "where":
            z = self.partner(x, allow_bcast=False)
            (out,) = self.node("Where", [c, x.name, z.name])
            self.add(out, x.shape, max(x.mag, z.mag), True)
        elif use == "cast":
            (out,) = self.node("Cast", [c], to=FLOAT)
            self.add(out, x.shape, 1.0, True)
        else:
            self.add_other(c, BOOL, x.shape, True)

    def op_arg_topk(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return False
        axis = self.r.randrange(len(x.shape))
        if self.r.random() < 0.5:
            op = self.r.choice(["ArgMax", "ArgMin"])
            keep = self.r.random() < 0.5
            (out,) = self.node(op, [x.name], axis=axis, keepdims=int(keep))
            shape = self._reduced(x, [axis], keep)
            if x.shape[axis] == 1 or self.r.random() < 0.5:
                self.add_other(out, INT64, shape, True)
            else:
                # Data-dependent Gather indices.
                (g,) = self.node("Gather", [x.name, out], axis=axis)
                gshape = x.shape[:axis] + shape + x.shape[axis + 1:]
                self.add(g, gshape, x.mag, True)
            return
        k = self.r.randint(1, x.shape[axis])
        outs = self.node("TopK", [x.name, self.iconst([k])], 2, axis=axis,
                         largest=self.r.randint(0, 1))
        shape = list(x.shape)
        shape[axis] = k
        self.add(outs[0], tuple(shape), x.mag, True)
        self.add_other(outs[1], INT64, shape, True)

    def op_isnan_shape(self):
        x = self.pick()
        op = self.r.choice(["IsNaN", "IsInf", "Shape", "Size"])
        (out,) = self.node(op, [x.name])
        if op in ("IsNaN", "IsInf"):
            if self.r.random() < 0.5:
                z = self.partner(x, allow_bcast=False)
                (w,) = self.node("Where", [out, z.name, x.name])
                self.add(w, x.shape, max(x.mag, z.mag), True)
            else:
                self.add_other(out, BOOL, x.shape, True)
        else:
            self.add_other(out, INT64, (len(x.shape),) if op == "Shape" else (),
                           False)

    def op_onehot_resize(self):
        if self.r.random() < 0.5:
            # OneHot: only its values port (T3) is float.
            n = self.r.randint(1, 4)
            depth = self.r.randint(2, 6)
            idx = self.iconst([self.r.randrange(depth) for _ in range(n)])
            values = self.fconst((2,), -1, 1, "onoff")
            (out,) = self.node("OneHot", [idx, self.iconst(depth), values],
                               axis=-1)
            self.add(out, (n, depth), 1.0, False)
            return
        # Resize: scales is a fixed tensor(float) port; roi (T2) left empty.
        x = self.need4d()
        scales = [1.0, 1.0] + [float(self.r.choice([1, 2]))] * 2
        inputs = [x.name, "", self.init(np.array(scales, np.float32), "scales")]
        mode = self.r.choice(["nearest", "linear"])
        (out,) = self.node("Resize", inputs, mode=mode)
        shape = tuple(int(d * s) for d, s in zip(x.shape, scales))
        self.add(out, shape, x.mag, x.disc)

    # --- no list (and CumSum, on deny) ----------------------------------------

    def op_unlisted(self):
        op = self.r.choice(["Sin", "Cos", "Atan", "CumSum", "Hardmax",
                            "LpNormalization", "ReduceProd", "ReduceL1",
                            "PRelu", "ThresholdedRelu", "HardSwish", "Celu",
                            "Shrink", "Trilu"])
        x = self.pick()
        rank = len(x.shape)
        if op in ("CumSum", "Hardmax", "LpNormalization", "ReduceProd",
                  "ReduceL1") and rank == 0:
            return False
        if op == "Trilu" and rank < 2:
            return False
        if op == "CumSum":
            axis = self.init(np.array(self.r.randrange(rank), np.int64), "ax")
            (out,) = self.node(op, [x.name, axis],
                               reverse=self.r.randint(0, 1))
            self.add(out, x.shape, x.mag * int(np.prod(x.shape)), x.disc)
        elif op in ("Hardmax", "LpNormalization"):
            (out,) = self.node(op, [x.name], axis=self.r.randrange(rank))
            self.add(out, x.shape, 1.0, x.disc or op == "Hardmax")
        elif op in ("ReduceProd", "ReduceL1"):
            x = self.squash(x, 1.0) if op == "ReduceProd" else x
            axes = self._axes(x)
            keep = self.r.random() < 0.7
            (out,) = self.node(op, [x.name], axes=axes, keepdims=int(keep))
            self.add(out, self._reduced(x, axes, keep),
                     1.0 if op == "ReduceProd" else x.mag * int(np.prod(x.shape)),
                     x.disc)
        elif op == "PRelu":
            (out,) = self.node(op, [x.name, self.partner(x).name])
            self.add(out, x.shape, x.mag, x.disc)
        elif op == "Trilu":
            inputs = [x.name]
            if self.r.random() < 0.5:
                inputs.append(self.iconst(self.r.randint(-1, 1)))
            (out,) = self.node(op, inputs, upper=self.r.randint(0, 1))
            self.add(out, x.shape, x.mag, x.disc)
        else:
            (out,) = self.node(op, [x.name])
            self.add(out, x.shape, x.mag + 1,
                     x.disc or op in ("ThresholdedRelu", "Shrink"))

    # --- existing casts -------------------------------------------------------

    def op_cast(self):
        x = self.pick()
        kind = self.r.choice(["noop", "lossy", "double", "island"])
        if kind == "noop":
            if (x.name, FLOAT) in self.casts:
                return False
            self.casts.add((x.name, FLOAT))
            (out,) = self.node("Cast", [x.name], to=FLOAT)
            self.add(out, x.shape, x.mag, x.disc)
            return
        if kind in ("lossy", "island"):
            x = self.squash(x, 1000.0)
        to = DOUBLE if kind == "double" else FLOAT16
        if (x.name, to) in self.casts:
            return False
        self.casts.add((x.name, to))
        (mid,) = self.node("Cast", [x.name], to=to)
        if kind == "island":
            op = self.r.choice(["Relu", "Sigmoid", "Abs", "Add", "MatMul"])
            if op == "Add":
                (mid,) = self.node("Add", [mid, mid])
            elif op == "MatMul":
                if len(x.shape) < 1:
                    return False
                k = x.shape[-1]
                w = (self.np.uniform(-1, 1, size=(k, k)) / np.sqrt(k))
                (mid,) = self.node("MatMul", [mid, self.init(
                    w.astype(np.float16), "w16_")])
            else:
                (mid,) = self.node(op, [mid])
        (out,) = self.node("Cast", [mid], to=FLOAT)
        self.add(out, x.shape, x.mag * 2, x.disc)

    # --- the graph --------------------------------------------------------------

    CATEGORIES = [
        # (weight, generators)
        (20, ["op_matmul", "op_matmul", "op_gemm", "op_conv",
              "op_convtranspose", "op_einsum"]),
        (12, ["op_exp", "op_pow", "op_reduce", "op_reduce", "op_loss"]),
        (24, ["op_binary", "op_binary", "op_unary_infer", "op_unary_infer",
              "op_pool_infer", "op_norm"]),
        (30, ["op_unary_clear", "op_shape_clear", "op_shape_clear",
              "op_concat", "op_slice_split", "op_gather", "op_pad",
              "op_space_depth", "op_dropout", "op_pool_clear",
              "op_reduce_clear", "op_minmax", "op_clip", "op_compare",
              "op_arg_topk", "op_isnan_shape", "op_onehot_resize"]),
        (6, ["op_unlisted"]),
        (6, ["op_cast"]),
    ]

    def build(self) -> onnx.ModelProto:
        r = self.r
        for i in range(r.randint(1, 3)):
            shape = r.choice([(4, 8), (2, 8), (4, 6), (3, 4), (8, 8),
                              (1, 2, 4, 4), (2, 3, 2, 2), (4, 8)])
            name = f"x{i}"
            self.inputs.append(helper.make_tensor_value_info(name, FLOAT,
                                                             list(shape)))
            self.add(name, shape, 3.0, False)
        n_ops = r.randint(3, 22)
        weights = [w for w, _ in self.CATEGORIES]
        done = 0
        attempts = 0
        while done < n_ops and attempts < n_ops * 4:
            attempts += 1
            (_, gens), = r.choices(self.CATEGORIES, weights=weights)
            fn = getattr(self, r.choice(gens))
            before = (len(self.nodes), len(self.inits), len(self.pool),
                      len(self.other), dict(self.used), self.counter)
            if fn() is False:
                # Roll back a generator that gave up half way.
                (n_nodes, n_inits, n_pool, n_other, used, _) = before
                del self.nodes[n_nodes:]
                del self.inits[n_inits:]
                del self.pool[n_pool:]
                del self.other[n_other:]
                self.used = used
                continue
            done += 1
        return self.finish()

    def finish(self) -> onnx.ModelProto:
        r = self.r
        outputs = []
        seen = set()
        input_names = {i.name for i in self.inputs}

        def out(name, elem, shape):
            if name in seen or name in input_names:
                return
            seen.add(name)
            outputs.append(helper.make_tensor_value_info(name, elem, list(shape)))

        init_names = {t.name for t in self.inits}
        # Every sink is an output; so are some interior values.
        for v in self.pool:
            if v.name in init_names:
                continue
            if self.used.get(v.name, 0) == 0 or r.random() < 0.15:
                out(v.name, FLOAT, v.shape)
        for name, elem, shape, _ in self.other:
            if self.used.get(name, 0) == 0 or r.random() < 0.3:
                out(name, elem, shape)
        if not outputs:
            v = self.pool[-1]
            out(v.name, FLOAT, v.shape)
        graph = helper.make_graph(self.nodes, f"g{self.seed}", self.inputs,
                                  outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[
            helper.make_opsetid("", OPSET)], producer_name="amp_property")
        model.ir_version = IR_VERSION
        return model

    def discontinuous_outputs(self) -> set:
        d = {v.name for v in self.pool if v.disc}
        d |= {name for name, _, _, disc in self.other if disc}
        return d

    def magnitudes(self) -> Dict[str, float]:
        return {v.name: v.mag for v in self.pool}


def generate(seed: int):
    """(model, names of values that depend on a discontinuous op, tracked
    shapes of the float values)."""
    gen = Generator(seed)
    model = gen.build()
    shapes = {v.name: v.shape for v in gen.pool}
    shapes.update({name: shape for name, _, shape, _ in gen.other})
    if gen.r.random() < 0.5:
        # Half of the graphs carry value_info for every value (as exporters
        # often write it); the others leave interior types to the importer.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        model.graph.value_info.extend(inferred.graph.value_info)
    return model, gen.discontinuous_outputs(), shapes


def check_generated(model: onnx.ModelProto, shapes) -> None:
    """The generator's own contract: a valid model whose shapes are the
    tracked ones."""
    try:
        onnx.checker.check_model(model, full_check=True)
        inferred = inferred_of(model)
    except Exception as e:  # noqa: BLE001
        fail("generator", "invalid input model: " +
             str(e).splitlines()[0][:300])
    g = inferred.graph
    for vi in list(g.value_info) + list(g.output):
        if vi.name not in shapes:
            continue
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1
                     for d in vi.type.tensor_type.shape.dim)
        want = tuple(shapes[vi.name])
        if len(dims) != len(want) or any(
                d != w and d != -1 for d, w in zip(dims, want)):
            fail("generator", f"{vi.name}: tracked shape {shapes[vi.name]}, "
                 f"inferred {dims}")


# ----------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------


class PropertyFailure(Exception):
    def __init__(self, prop: str, detail: str):
        super().__init__(f"{prop}: {detail}")
        self.prop = prop


def fail(prop: str, detail: str):
    raise PropertyFailure(prop, detail)


SUMMARY_KEYS = [
    ("Total processable nodes", "total_processable_nodes"),
    ("Recognized nodes available for conversion", "recognized_nodes"),
    ("Total nodes converted", "nodes_converted"),
    ("Total {M} Cast ops used (excluding Const and Variable casts)",
     "low_precision_casts"),
    ("Allowlisted nodes converted", "allowlisted_converted"),
    ("Denylisted nodes blocking conversion", "denylisted_blocking"),
    ("Nodes blocked from conversion by denylisted nodes",
     "blocked_by_denylisted"),
]


NOTHING_TO_DO = "auto-mixed-precision: no allowlist ops found, nothing to do"


def parse_summary(stderr: str, mode: str) -> Dict[str, int]:
    got = {}
    for label, key in SUMMARY_KEYS:
        label = label.replace("{M}", mode.upper())
        m = re.search(r"^" + re.escape(label) + r": (\d+)$", stderr, re.M)
        if not m:
            fail("report", f"summary line '{label}' missing on stderr")
        got[key] = int(m.group(1))
    return got


_INFERRED: Dict[int, Tuple[onnx.ModelProto, onnx.ModelProto]] = {}
# amp_numerics.py turns this off: real graphs hold ops (com.microsoft, ...)
# that ONNX shape inference does not know.
STRICT_INFERENCE = True


def inferred_of(model: onnx.ModelProto) -> onnx.ModelProto:
    """Strict shape inference of a model that is not changed afterwards
    (cached for the graph being checked)."""
    key = id(model)
    if key not in _INFERRED:
        _INFERRED[key] = (model, onnx.shape_inference.infer_shapes(
            model, strict_mode=STRICT_INFERENCE))
    return _INFERRED[key][1]


def value_types(model: onnx.ModelProto) -> Dict[str, int]:
    """Element type of every value (strict shape inference)."""
    inferred = inferred_of(model)
    types = {}
    g = inferred.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        types[vi.name] = vi.type.tensor_type.elem_type
    for t in g.initializer:
        types[t.name] = t.data_type
    return types


def run_tool(argv: List[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        fail("tool", "amp-opt timed out: " + " ".join(argv))


def amp_opt(amp_opt_path: str, src: str, dst: str, mode: str,
            report: Optional[str]) -> str:
    opts = [f"mode={mode}"]
    if report:
        opts.append(f"report={report}")
    proc = run_tool([amp_opt_path, src,
                     f"--auto-mixed-precision={' '.join(opts)}", "-o", dst])
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0 or not os.path.exists(dst) or (
            report and not os.path.exists(report)):
        lines = err.strip().splitlines()
        first = [l for l in lines if "error" in l][:2] or lines[:3]
        fail("tool", f"amp-opt exited {proc.returncode}: {' | '.join(first)}")
    return err


def float_elem(elem: int) -> bool:
    return elem in (FLOAT, FLOAT16, BFLOAT16, DOUBLE)


def port_constraints(node: onnx.NodeProto):
    """(type_str, allowed type strings or None) of each input then output
    port of node, from its opset-17 schema."""
    schema = onnx.defs.get_schema(node.op_type, OPSET, node.domain)
    allowed = {c.type_param_str: set(c.allowed_type_strs)
               for c in schema.type_constraints}

    def of(params, n):
        res = []
        for i in range(n):
            p = params[min(i, len(params) - 1)]
            res.append((p.type_str, allowed.get(p.type_str)))
        return res
    return of(schema.inputs, len(node.input)) + \
        of(schema.outputs, len(node.output))


def convertible_groups(node, oin, oout, mode) -> List[List[int]]:
    """Port indexes (inputs then outputs) of each type constraint of node
    whose ports are all f32 and which allows the low type."""
    low = "tensor(float16)" if mode == "fp16" else "tensor(bfloat16)"
    types = oin + oout
    groups: Dict[str, List[int]] = {}
    for k, (tstr, allowed) in enumerate(port_constraints(node)):
        if types[k] is None or allowed is None or low not in allowed:
            continue
        groups.setdefault(tstr, []).append(k)
    return [g for g in groups.values() if all(types[k] == FLOAT for k in g)]


def check_structure(orig: onnx.ModelProto, out: onnx.ModelProto, report: dict,
                    stderr: str, mode: str, typed: bool) -> None:
    low = FLOAT16 if mode == "fp16" else BFLOAT16
    low_name = mode

    # checker: full check and strict shape inference.
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:  # noqa: BLE001
        fail("checker", str(e).splitlines()[0][:300])
    try:
        out_types = value_types(out)
    except Exception as e:  # noqa: BLE001
        fail("checker", "strict shape inference: " +
             str(e).splitlines()[0][:300])
    orig_types = value_types(orig)

    # io: inputs, outputs, initializers unchanged.
    def sig(vis):
        return [(v.name, v.type.SerializeToString()) for v in vis]
    if sig(orig.graph.input) != sig(out.graph.input):
        fail("io", "graph inputs changed")
    if sig(orig.graph.output) != sig(out.graph.output):
        changed = [f"{a[0]}" for a, b in zip(sig(orig.graph.output),
                                             sig(out.graph.output)) if a != b]
        fail("io", f"graph outputs changed: {changed[:3]}")
    oi = {t.name: t for t in orig.graph.initializer}
    ni = {t.name: t for t in out.graph.initializer}
    if set(oi) != set(ni):
        fail("io", f"initializers changed: {sorted(set(oi) ^ set(ni))[:3]}")
    for name, t in oi.items():
        u = ni[name]
        if t.data_type != u.data_type or list(t.dims) != list(u.dims):
            fail("io", f"initializer {name} changed type or shape")
        a, b = numpy_helper.to_array(t), numpy_helper.to_array(u)
        if a.tobytes() != b.tobytes():
            fail("io", f"initializer {name} changed value")

    # report: one record per input node.
    orig_nodes = {n.name: n for n in orig.graph.node}
    recs = report["nodes"]
    rec_by_name = {}
    for rec in recs:
        if rec["name"] in rec_by_name:
            fail("report", f"node {rec['name']} listed twice")
        rec_by_name[rec["name"]] = rec
    if set(rec_by_name) != set(orig_nodes):
        fail("report", "report nodes differ from the input nodes: " +
             str(sorted(set(rec_by_name) ^ set(orig_nodes))[:3]))

    # lists: classification is the documented default.
    for name, rec in rec_by_name.items():
        want = default_list(orig_nodes[name].op_type, mode)
        if rec["list"] != want or rec["op_type"] != orig_nodes[name].op_type:
            fail("lists", f"{name} ({rec['op_type']}) is on '{rec['list']}', "
                 f"docs say '{want}'")

    out_nodes = {n.name: n for n in out.graph.node}
    new_nodes = [n for n in out.graph.node if n.name not in orig_nodes]
    missing = [n for n in orig_nodes if n not in out_nodes]
    # A retargeted existing Cast that became low -> low may be removed.
    for name in missing:
        rec = rec_by_name[name]
        if not (orig_nodes[name].op_type == "Cast" and
                rec["reason"].startswith("existing Cast retargeted")):
            fail("ports", f"node {name} ({orig_nodes[name].op_type}) vanished")

    # deny / allow / ports, from actual tensor types.
    def ports(node, types):
        return ([types.get(i) if i else None for i in node.input],
                [types.get(o) if o else None for o in node.output])

    for name, onode in orig_nodes.items():
        rec = rec_by_name[name]
        if name not in out_nodes:
            continue
        nnode = out_nodes[name]
        oin, oout = ports(onode, orig_types)
        nin, nout = ports(nnode, out_types)
        lst = default_list(onode.op_type, mode)
        if lst == "deny":
            for t in nin + nout:
                if t in (FLOAT16, BFLOAT16) and rec is not None:
                    fail("deny", f"deny node {name} ({onode.op_type}) has a "
                         f"{low_name} port")
            if rec["precision"] != "fp32":
                fail("deny", f"deny node {name} reported {rec['precision']}")
        # Without value_info, the importer may not know the element type of
        # some interior values; nodes touching them rightly stay fp32.
        if lst == "allow" and typed:
            # Every constraint whose ports are all f32 and which allows the
            # low type must be low now.
            for ports_of in convertible_groups(onode, oin, oout, mode):
                for k in ports_of:
                    if (nin + nout)[k] != low:
                        fail("allow", f"allow node {name} ({onode.op_type}) "
                             f"has an f32 port left: {rec['reason']}")
        if rec["precision"] == "fp32":
            if onode.op_type == "Cast" and oin == [FLOAT] and nin == [low]:
                # An existing Cast of a value that became low precision now
                # does the cast back (other consumers share it).
                nin = oin
            if (oin, oout) != (nin, nout):
                fail("ports", f"{name} ({onode.op_type}) reported fp32 but its "
                     f"port types changed: {oin}{oout} -> {nin}{nout}")
        else:
            changed = False
            for t0, t1 in zip(oin + oout, nin + nout):
                if t0 != t1:
                    if not (t0 == FLOAT and t1 == low):
                        fail("ports", f"{name} ({onode.op_type}): port type "
                             f"{t0} became {t1}")
                    changed = True
                elif not float_elem(t0 or 0) and t0 != t1:
                    fail("ports", f"{name}: non-float port changed")
            if not changed and onode.op_type != "Cast":
                fail("ports", f"{name} ({onode.op_type}) reported "
                     f"{rec['precision']} but no port changed")
            if onode.op_type == "Cast":
                to = {a.name: a.i for a in nnode.attribute}.get("to")
                if to != low:
                    fail("ports", f"retargeted Cast {name} has to={to}")

    # casts.
    edges = sum(1 for n in orig.graph.node for i in n.input if i) + \
        len(orig.graph.output)
    inserted = [n for n in new_nodes if n.op_type == "Cast"]
    if len(new_nodes) != len(inserted):
        fail("casts", "the pass added non-Cast nodes: " +
             str([n.op_type for n in new_nodes if n.op_type != "Cast"][:3]))
    if len(inserted) > edges:
        fail("casts", f"{len(inserted)} casts > {edges} edges")
    if len(inserted) != report["casts_inserted"]:
        fail("casts", f"{len(inserted)} casts in the model, report says "
             f"{report['casts_inserted']}")
    rep_casts = {(c["name"], c["input"], c["to"]) for c in report["casts"]}
    to_name = {FLOAT: "fp32", FLOAT16: "fp16", BFLOAT16: "bf16"}
    model_casts = set()
    for n in inserted:
        to = {a.name: a.i for a in n.attribute}["to"]
        model_casts.add((n.name, n.input[0], to_name.get(to, str(to))))
    if model_casts != rep_casts:
        fail("casts", "casts in the model differ from the report: " +
             str(sorted(model_casts ^ rep_casts)[:3]))
    per_key: Dict[Tuple[str, int], int] = {}
    for n in out.graph.node:
        if n.op_type == "Cast":
            key = (n.input[0], {a.name: a.i for a in n.attribute}["to"])
            per_key[key] = per_key.get(key, 0) + 1
    dups = [k for k, c in per_key.items() if c > 1]
    if dups:
        fail("casts", f"more than one Cast of {dups[0][0]} to {dups[0][1]}")
    producers = {o: n for n in out.graph.node for o in n.output}
    consumers: Dict[str, int] = {}
    for n in out.graph.node:
        for i in n.input:
            consumers[i] = consumers.get(i, 0) + 1
    graph_outputs = {o.name for o in out.graph.output}
    inserted_names = {n.name for n in inserted}
    for n in inserted:
        to = {a.name: a.i for a in n.attribute}["to"]
        if out_types.get(n.input[0]) == to:
            fail("casts", f"inserted Cast {n.name} casts to its own type")
        src = producers.get(n.input[0])
        if src is not None and src.name in inserted_names:
            fail("casts", f"inserted Cast {n.name} is fed by inserted Cast "
                 f"{src.name}")
        if consumers.get(n.output[0], 0) == 0 and \
                n.output[0] not in graph_outputs:
            fail("casts", f"inserted Cast {n.name} has no consumer")
    for n in out.graph.node:
        if n.op_type == "Cast" and n.name in orig_nodes and \
                not any(consumers.get(o, 0) or o in graph_outputs
                        for o in n.output):
            fail("casts", f"existing Cast {n.name} left without a consumer")

    # report: summary vs stderr vs recomputed from the report. Without an
    # allow-list node the pass prints Grappler's "nothing to do" line
    # instead of the summary and changes nothing.
    if NOTHING_TO_DO in stderr:
        if any(r["list"] == "allow" for r in recs):
            fail("report", "'nothing to do' printed, but the report lists "
                 "allow-list nodes")
        if report["casts"] or any(r["precision"] != "fp32" for r in recs):
            fail("report", "'nothing to do' printed, but the graph changed")
        printed = dict(report["summary"])
    else:
        printed = parse_summary(stderr, mode)
    if printed != report["summary"]:
        fail("report", f"stderr summary {printed} != report summary "
             f"{report['summary']}")
    sources = {i.name for i in orig.graph.input} | set(oi) | {
        o for n in orig.graph.node if n.op_type == "Constant" for o in n.output}
    lowp = [r for r in recs if r["precision"] != "fp32"]
    recomputed = {
        "total_processable_nodes": len(recs),
        "recognized_nodes": sum(r["list"] != "none" for r in recs),
        "nodes_converted": len(lowp),
        "low_precision_casts": sum(1 for c in report["casts"]
                                   if c["to"] != "fp32" and
                                   c["input"] not in sources),
        "allowlisted_converted": sum(r["list"] == "allow" for r in lowp),
        "denylisted_blocking": sum(r["list"] == "deny" for r in recs),
        "blocked_by_denylisted": sum(
            r["list"] in ("clear", "infer") and
            r["reason"].startswith("blocked by deny node") for r in recs),
    }
    if recomputed != report["summary"]:
        diff = {k: (report["summary"][k], v) for k, v in recomputed.items()
                if report["summary"][k] != v}
        fail("report", f"summary != recomputed from nodes (reported, "
             f"recomputed): {diff}")
    for rec in recs:
        if rec["precision"] not in ("fp32", low_name):
            fail("report", f"{rec['name']}: precision {rec['precision']}")


# ----------------------------------------------------------------------------
# Numerics
# ----------------------------------------------------------------------------


def emulate_low(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every fp16/bf16 value replaced by an f32 value rounded
    to that type: a Cast to the low type and back after each node that
    produces one (what a low-precision kernel with f32 accumulation gives),
    and low-precision initializers and Constants widened (exactly)."""
    types = value_types(model)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    del g.value_info[:]
    low = (FLOAT16, BFLOAT16)

    def widen(t: onnx.TensorProto) -> onnx.TensorProto:
        a = numpy_helper.to_array(t).astype(np.float32)
        return numpy_helper.from_array(a, t.name)

    inits = [widen(t) if t.data_type in low else t for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)

    def rounding(o: str, to: int) -> List[onnx.NodeProto]:
        return [helper.make_node("Cast", [o + "__raw"], [o + "__low"], to=to),
                helper.make_node("Cast", [o + "__low"], [o], to=FLOAT)]

    # Low-precision graph inputs are widened on entry; low-precision graph
    # outputs are declared f32 (their values stay exactly representable).
    nodes = []
    wide = {}
    for i in g.input:
        if i.type.tensor_type.elem_type in low:
            wide[i.name] = i.name + "__wide"
            nodes.append(helper.make_node("Cast", [i.name], [wide[i.name]],
                                          to=FLOAT))
    for o in g.output:
        if o.type.tensor_type.elem_type in low:
            o.type.tensor_type.elem_type = FLOAT
    for n in g.node:
        new = onnx.NodeProto()
        new.CopyFrom(n)
        for k, i in enumerate(new.input):
            if i in wide:
                new.input[k] = wide[i]
        tail = []
        attrs = {a.name: a for a in new.attribute}
        if n.op_type == "Cast" and n.domain in ("", "ai.onnx"):
            to = attrs["to"].i
            if to in low:
                new.output[0] += "__raw"
                tail = rounding(n.output[0], to)
        else:
            if n.op_type == "Constant" and "value" in attrs and \
                    attrs["value"].t.data_type in low:
                attrs["value"].t.CopyFrom(widen(attrs["value"].t))
            for k, o in enumerate(n.output):
                if o and types.get(o) in low:
                    new.output[k] = o + "__raw"
                    tail += rounding(o, types[o])
        nodes.append(new)
        nodes.extend(tail)
    del g.node[:]
    g.node.extend(nodes)
    return m


_SESSION_OPTIONS = None


def run_ort_session(model: onnx.ModelProto):
    """An onnxruntime CPU session for model (graph optimizations off)."""
    import onnxruntime as ort
    global _SESSION_OPTIONS
    if _SESSION_OPTIONS is None:
        _SESSION_OPTIONS = ort.SessionOptions()
        _SESSION_OPTIONS.intra_op_num_threads = 1
        _SESSION_OPTIONS.inter_op_num_threads = 1
        _SESSION_OPTIONS.log_severity_level = 3
        # No graph optimizations: ORT must not fold the casts under test, and
        # its basic level mis-infers shapes after eliminating a Dropout whose
        # ratio is computed by a node.
        _SESSION_OPTIONS.graph_optimization_level = \
            ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), _SESSION_OPTIONS,
                                providers=["CPUExecutionProvider"])


def run_ort(model: onnx.ModelProto, feeds: Dict[str, np.ndarray]):
    sess = run_ort_session(model)
    names = [o.name for o in model.graph.output]
    return dict(zip(names, sess.run(names, feeds)))


def compare_outputs(ref: Dict[str, np.ndarray], got: Dict[str, np.ndarray],
                    mode: str, disc: set, scales: Dict[str, float],
                    spread: Dict[str, float], what: str = "") -> None:
    rtol, atol = TOLERANCES[mode]
    for name, a in ref.items():
        b = got[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            fail("numerics", f"{what}output {name}: {a.dtype}{a.shape} vs "
                 f"{b.dtype}{b.shape}")
        if a.dtype.kind == "f":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            both_nan = np.isnan(a64) & np.isnan(b64)
            same_inf = np.isinf(a64) & (a64 == b64)
            scale = scales.get(name, 1.0)
            slack = NOISE_FACTOR * spread.get(name, 0.0)
            with np.errstate(invalid="ignore"):
                ok = (np.abs(a64 - b64) <=
                      atol * scale + rtol * np.abs(a64) + slack) \
                    | both_nan | same_inf
        else:
            ok = a == b
        if ok.all():
            continue
        frac = float(ok.mean()) if ok.size else 1.0
        if name in disc and (frac >= DISCONTINUOUS_PASS_FRACTION or
                             ok.size < DISCONTINUOUS_MIN_SIZE):
            continue
        idx = np.unravel_index(int(np.argmin(ok)), ok.shape) if ok.ndim else ()
        tag = " (discontinuous)" if name in disc else ""
        fail("numerics", f"{what}output {name}{tag}: {(1 - frac) * 100:.1f}% "
             f"of elements off, e.g. at {tuple(int(i) for i in idx)}: ref "
             f"{a[idx]!r} amp {b[idx]!r} (rtol {rtol}, atol {atol} x scale "
             f"{scales.get(name, 1.0):.3g}, noise spread "
             f"{spread.get(name, 0.0):.3g})")


def _absmax(a: np.ndarray) -> float:
    if a.dtype.kind != "f" or a.size == 0:
        return 0.0
    f = a[np.isfinite(a)]
    return float(np.max(np.abs(f))) if f.size else 0.0


def reference_run(orig: onnx.ModelProto, feeds):
    """Outputs of the f32 model and, per output, the tolerance scale: the
    largest |value| among the output and the float operands of the node that
    computes it (a sum of large terms that cancel is judged against the
    terms)."""
    types = value_types(orig)
    producer = {o: n for n in orig.graph.node for o in n.output}
    outputs = [o.name for o in orig.graph.output]
    fixed = dict(feeds)
    fixed.update({t.name: numpy_helper.to_array(t)
                  for t in orig.graph.initializer})
    extra = []
    for o in outputs:
        n = producer.get(o)
        for i in (n.input if n is not None else []):
            if i and i not in fixed and i not in outputs and i not in extra \
                    and types.get(i) == FLOAT:
                extra.append(i)
    m = onnx.ModelProto()
    m.CopyFrom(orig)
    m.graph.output.extend(helper.make_tensor_value_info(i, FLOAT, None)
                          for i in extra)
    values = run_ort(m, feeds)
    values.update(fixed)
    scales = {}
    for o in outputs:
        n = producer.get(o)
        operands = [i for i in (n.input if n is not None else []) if i]
        scales[o] = max([1.0, _absmax(values[o])] +
                        [_absmax(values[i]) for i in operands
                         if types.get(i) == FLOAT])
    return {o: values[o] for o in outputs}, scales


UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
NOISE_FACTOR = 4.0


NOT_DATA = {("Resize", 1), ("Resize", 2), ("Upsample", 1), ("Pow", 1),
            ("Dropout", 1), ("Range", 0), ("Range", 1), ("Range", 2)}


def noise_run(orig: onnx.ModelProto, feeds, mode: str, seed: int):
    """The f32 model with every float input, initializer and node output
    multiplied by U(1 - u, 1 + u), u the unit roundoff of the low type: how
    much each output moves when every value is rounded. Outputs that amplify
    rounding (a normalization of a nearly constant tensor, a difference of
    close values) move accordingly. Parameters that are not data (Resize
    scales, a Pow exponent, a Dropout ratio, Range bounds) and infinite
    products (+-FLT_MAX masks) keep their value."""
    u = UNIT_ROUNDOFF[mode]
    rng = np.random.default_rng(seed + 104729)
    types = value_types(orig)
    m = onnx.ModelProto()
    m.CopyFrom(orig)
    g = m.graph
    params = {n.input[k] for n in g.node for k in range(len(n.input))
              if (n.op_type, k) in NOT_DATA}
    opset = max([o.version for o in m.opset_import
                 if o.domain in ("", "ai.onnx")] or [0])

    def perturb(a: np.ndarray) -> np.ndarray:
        noise = rng.uniform(1 - u, 1 + u, size=a.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            b = (a * noise).astype(np.float32)
        return np.where(np.isfinite(b), b, a)

    inits = []
    for t in g.initializer:
        if t.data_type == FLOAT and t.name not in params:
            t = numpy_helper.from_array(perturb(numpy_helper.to_array(t)),
                                        t.name)
        inits.append(t)
    nodes = []
    for n in g.node:
        new = onnx.NodeProto()
        new.CopyFrom(n)
        nodes.append(new)
        for k, o in enumerate(n.output):
            if not o or types.get(o) != FLOAT or o in params:
                continue
            x = o + "__exact"
            new.output[k] = x
            nodes.append(helper.make_node(
                "RandomUniformLike", [x], [o + "__noise"], low=1 - u,
                high=1 + u, dtype=FLOAT, seed=float(rng.integers(1, 1 << 24))))
            if opset < 10:  # no IsInf
                nodes.append(helper.make_node("Mul", [x, o + "__noise"], [o]))
                continue
            nodes += [
                helper.make_node("Mul", [x, o + "__noise"], [o + "__mul"]),
                helper.make_node("IsInf", [o + "__mul"], [o + "__inf"]),
                helper.make_node("Where", [o + "__inf", x, o + "__mul"], [o]),
            ]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(inits)
    del g.value_info[:]
    noisy_feeds = {k: perturb(v) if v.dtype == np.float32 else v
                   for k, v in feeds.items()}
    return run_ort(m, noisy_feeds)


def noise_spread(ref, noisy) -> Dict[str, float]:
    spread = {}
    for name, a in ref.items():
        b = noisy[name]
        if a.dtype.kind != "f" or a.size == 0:
            spread[name] = 0.0
            continue
        fin = np.isfinite(a) & np.isfinite(b)
        d = np.abs(a[fin].astype(np.float64) - b[fin])
        spread[name] = float(d.max()) if d.size else 0.0
    return spread


def check_numerics(orig: onnx.ModelProto, out: onnx.ModelProto, mode: str,
                   seed: int, disc: set) -> None:
    rng = np.random.default_rng(seed + 7919)
    feeds = {}
    for i in orig.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.uniform(-3, 3, size=shape).astype(np.float32)
    try:
        ref, scales = reference_run(orig, feeds)
    except Exception as e:  # noqa: BLE001
        fail("generator", "ORT cannot run the input model: " +
             str(e).splitlines()[0][:300])
    try:
        spread = noise_spread(ref, noise_run(orig, feeds, mode, seed))
    except Exception as e:  # noqa: BLE001
        fail("generator", "ORT cannot run the perturbed input model: " +
             str(e).splitlines()[0][:300])
    try:
        got = run_ort(emulate_low(out), feeds)
    except Exception as e:  # noqa: BLE001
        fail("numerics", "ORT cannot run the emulated rewritten model: " +
             str(e).splitlines()[0][:300])
    compare_outputs(ref, got, mode, disc, scales, spread)
    if mode == "fp16":
        # The rewritten model itself runs too. ORT's CPU provider computes
        # fp16 nodes with f32 kernels and drops f32->fp16->f32 cast pairs
        # around them, so one consumer may see a value rounded and another
        # not: outputs behind a discontinuous op are not compared here.
        try:
            direct = run_ort(out, feeds)
        except Exception as e:  # noqa: BLE001
            fail("numerics", "ORT cannot run the rewritten model: " +
                 str(e).splitlines()[0][:300])
        compare_outputs({k: v for k, v in ref.items() if k not in disc},
                        direct, mode, set(), scales, spread, "direct run: ")


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------


def check_one(args) -> Tuple[int, str, Optional[str], Optional[bytes]]:
    seed, mode, amp_opt_path, workdir, numerics = args
    model = None
    _INFERRED.clear()
    try:
        model, disc, shapes = generate(seed)
        check_generated(model, shapes)
        has_value_info = len(model.graph.value_info) > 0
        d = tempfile.mkdtemp(prefix=f"s{seed}-{mode}-", dir=workdir)
        try:
            src, dst = os.path.join(d, "in.onnx"), os.path.join(d, "out.onnx")
            dst2, rep = os.path.join(d, "out2.onnx"), os.path.join(d, "r.json")
            rep2 = os.path.join(d, "r2.json")
            onnx.save(model, src)
            stderr = amp_opt(amp_opt_path, src, dst, mode, rep)
            out = onnx.load(dst)
            with open(rep) as f:
                report = json.load(f)
            if report.get("mode") != mode:
                fail("report", f"mode {report.get('mode')}")
            check_structure(model, out, report, stderr, mode, has_value_info)
            amp_opt(amp_opt_path, dst, dst2, mode, rep2)
            diffs = onnx_compare.compare_models(out, onnx.load(dst2))
            if diffs:
                fail("idempotent", f"{len(diffs)} differences, "
                     f"first: {diffs[0][:300]}")
            with open(rep2) as f:
                if json.load(f)["casts_inserted"] != 0:
                    fail("idempotent", "the second run inserted casts")
            if numerics:
                check_numerics(model, out, mode, seed, disc)
        finally:
            shutil.rmtree(d, ignore_errors=True)
            _INFERRED.clear()
        return seed, mode, None, None
    except PropertyFailure as e:
        return seed, mode, str(e), model.SerializeToString() if model else None
    except Exception:  # noqa: BLE001
        tb = traceback.format_exc().strip().splitlines()
        return seed, mode, "internal: " + " | ".join(tb[-3:]), \
            model.SerializeToString() if model else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--amp-opt", required=True, help="path of amp-opt")
    p.add_argument("--count", type=int, default=200,
                   help="graphs checked in fp16 mode")
    p.add_argument("--bf16-count", type=int, default=None,
                   help="graphs checked in bf16 mode (default: count // 4)")
    p.add_argument("--seed", type=int, default=1, help="first seed")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--no-numerics", action="store_true",
                   help="skip the onnxruntime comparison")
    p.add_argument("--keep", metavar="DIR",
                   help="write each failing input model to DIR")
    p.add_argument("--max-shown", type=int, default=30,
                   help="failure lines printed (all are counted)")
    p.add_argument("--dump", type=int, metavar="SEED",
                   help="only write the model of SEED to --keep DIR")
    args = p.parse_args(argv)
    if args.dump is not None:
        model, _, _ = generate(args.dump)
        os.makedirs(args.keep or ".", exist_ok=True)
        path = os.path.join(args.keep or ".", f"seed{args.dump}.onnx")
        onnx.save(model, path)
        print(path)
        return 0
    bf16 = args.count // 4 if args.bf16_count is None else args.bf16_count
    amp_opt_path = os.path.abspath(args.amp_opt)
    start = time.time()
    work = tempfile.mkdtemp(prefix="amp-property-")
    # bf16 graphs use other seeds than the fp16 ones.
    tasks = [(args.seed + i, "fp16", amp_opt_path, work, not args.no_numerics)
             for i in range(args.count)]
    tasks += [(args.seed + 1000003 + i, "bf16", amp_opt_path, work,
               not args.no_numerics) for i in range(bf16)]
    failures = []
    passed = {"fp16": 0, "bf16": 0}
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(max(1, args.jobs)) as pool:
            for seed, mode, err, blob in pool.imap_unordered(
                    check_one, tasks, chunksize=8):
                if err is None:
                    passed[mode] += 1
                    continue
                failures.append((seed, mode, err))
                if args.keep and blob:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep,
                                           f"seed{seed}-{mode}.onnx"), "wb") as f:
                        f.write(blob)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failures.sort()
    for seed, mode, err in failures[:args.max_shown]:
        print(f"FAIL seed={seed} mode={mode} {err}")
    if len(failures) > args.max_shown:
        print(f"... {len(failures) - args.max_shown} more failures")
    by_prop: Dict[str, int] = {}
    for _, _, err in failures:
        key = err.split(":")[0]
        by_prop[key] = by_prop.get(key, 0) + 1
    if by_prop:
        print("failures by property: " + ", ".join(
            f"{k} {v}" for k, v in sorted(by_prop.items())))
    total = len(tasks)
    ok = passed["fp16"] + passed["bf16"]
    print(f"amp-property: {ok}/{total} graphs passed (fp16 {passed['fp16']}/"
          f"{args.count}, bf16 {passed['bf16']}/{bf16}), "
          f"{time.time() - start:.0f} s")
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
