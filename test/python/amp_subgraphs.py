#!/usr/bin/env python3
# ===- amp_subgraphs.py - AMP through If/Loop/Scan, checked in ONNX and ORT =-=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Builds ONNX models with If, Loop and Scan subgraphs, runs
`amp-opt --auto-mixed-precision` on each and checks the result:

1. the output passes onnx.checker (full check) and strict shape inference;
2. structure: the element type of every subgraph input and output and of
   every node output, read from the exported model, is the one expected
   (a loop-carried value has one type: initial value, body input, body
   output and final value agree), and the number of Cast nodes in each
   graph and subgraph is the expected one (no cast inside a loop body for a
   value carried in low precision);
3. idempotence: a second run writes the same model;
4. numerics: onnxruntime (CPU, optimizations off) runs the original and the
   rewritten model on the same seeded inputs; every output element passes
       |amp - ref| <= ATOL * scale + RTOL * |ref|
   with (RTOL, ATOL) = (2e-2, 1e-2) and scale = max(1, max |ref|).

Prints one line per model and a last line `amp-subgraphs: N models, F failed`.
Exit 1 on any failure.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RTOL, ATOL = 2e-2, 1e-2
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def weight(name, shape, rng):
    w = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    return numpy_helper.from_array(w, name)


def model(graph, opset=17):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def loop_model(rng):
    """h = x; repeat 3: h = Relu(MatMul(h, W)) (carried), scan-out h.
    Y = MatMul(h_final, W). W is captured by the body."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["mm"], name="body_mm"),
            helper.make_node("Relu", ["mm"], ["h_out"], name="body_relu"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Identity", ["h_out"], ["h_scan"], name="body_scan"),
        ],
        "body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("h_in", F32, [4, 8])],
        [vi("cond_out", TensorProto.BOOL, []), vi("h_out", F32, [4, 8]),
         vi("h_scan", F32, [4, 8])],
    )
    g = helper.make_graph(
        [
            helper.make_node("Loop", ["M", "", "x"], ["h_final", "h_all"],
                             name="loop", body=body),
            helper.make_node("MatMul", ["h_final", "W"], ["Y"], name="head"),
        ],
        "loop_model",
        [vi("x", F32, [4, 8])],
        [vi("Y", F32, [4, 8]), vi("h_all", F32, [3, 4, 8])],
        [weight("W", [8, 8], rng),
         numpy_helper.from_array(np.array(3, np.int64), "M")],
    )
    # Expected: the carried value and the scan output are fp16 everywhere;
    # casts only in the main graph: x and W to fp16 (W once, used in the
    # body and by `head`), Y and h_all back to f32.
    expect = {
        "types": {"h_in": F16, "h_out": F16, "h_scan": F16, "mm": F16,
                  "h_final": F16, "h_all_fp16": F16, "h_all": F32},
        "casts": {"loop_model": 4, "body": 0},
    }
    return model(g), expect


def loop_deny_model(rng):
    """A deny op (Exp) between the allow MatMul and the carried value: the
    value is fp16, next to the MatMul that reads it (Grappler's clear next
    to allow); the body casts the MatMul's output up for Exp and Exp's
    output down, one cast each per iteration, as an fp32 carried value
    would need too. The final value is a graph output: the Loop's result is
    renamed `h_final_fp16` and the cast back to f32 takes `h_final`."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["mm"], name="body_mm"),
            helper.make_node("Exp", ["mm"], ["h_out"], name="body_exp"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        ],
        "body",
        [vi("iter", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("h_in", F32, [4, 8])],
        [vi("cond_out", TensorProto.BOOL, []), vi("h_out", F32, [4, 8])],
    )
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["h_final"], name="loop",
                          body=body)],
        "loop_deny_model",
        [vi("x", F32, [4, 8])],
        [vi("h_final", F32, [4, 8])],
        [weight("W", [8, 8], rng),
         numpy_helper.from_array(np.array(2, np.int64), "M")],
    )
    expect = {
        "types": {"h_in": F16, "mm": F16, "h_out": F32, "h_final_fp16": F16,
                  "h_final": F32},
        "casts": {"loop_deny_model": 3, "body": 2},
    }
    return model(g), expect


def if_model(rng):
    """Both branches produce the If result; the result feeds an allow op."""
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "W"], ["t"], name="then_mm")],
        "then_g", [], [vi("t", F32, [4, 8])])
    else_g = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["e"], name="else_relu")],
        "else_g", [], [vi("e", F32, [4, 8])])
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["a"], name="mm"),
            helper.make_node("If", ["c"], ["r"], name="if",
                             then_branch=then_g, else_branch=else_g),
            helper.make_node("MatMul", ["r", "W"], ["Y"], name="mm2"),
        ],
        "if_model",
        [vi("x", F32, [4, 8]), vi("c", TensorProto.BOOL, [])],
        [vi("Y", F32, [4, 8])],
        [weight("W", [8, 8], rng)],
    )
    expect = {
        "types": {"a": F16, "t": F16, "e": F16, "r": F16},
        "casts": {"if_model": 3, "then_g": 0, "else_g": 0},
    }
    return model(g), expect


def if_deny_model(rng):
    """One branch ends in a deny op: the If result stays f32 (a deny node
    feeds it and it leads to an infer/deny consumer), the allow MatMul in
    the other branch still runs fp16 and is cast back inside its branch,
    where the branch output is renamed after the cast."""
    then_g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["t"], name="then_mm")],
        "then_g", [], [vi("t", F32, [4, 8])])
    else_g = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["e"], name="else_exp")],
        "else_g", [], [vi("e", F32, [4, 8])])
    g = helper.make_graph(
        [
            helper.make_node("If", ["c"], ["r"], name="if",
                             then_branch=then_g, else_branch=else_g),
            helper.make_node("Softmax", ["r"], ["Y"], name="softmax"),
        ],
        "if_deny_model",
        [vi("x", F32, [4, 8]), vi("c", TensorProto.BOOL, [])],
        [vi("Y", F32, [4, 8])],
        [weight("W", [8, 8], rng)],
    )
    expect = {
        "types": {"t": F16, "e": F32, "r": F32},
        "casts": {"if_deny_model": 2, "then_g": 1, "else_g": 0},
    }
    return model(g), expect


def scan_model(rng):
    """Scan over 5 rows: s = Add(s, MatMul(x_t, W)) (state), y_t = s."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["x_t", "W"], ["p"], name="body_mm"),
            helper.make_node("MatMul", ["s_in", "W"], ["q"], name="body_mm2"),
            helper.make_node("Add", ["p", "q"], ["s_out"], name="body_add"),
            helper.make_node("Identity", ["s_out"], ["y_t"], name="body_id"),
        ],
        "body",
        [vi("s_in", F32, [8]), vi("x_t", F32, [8])],
        [vi("s_out", F32, [8]), vi("y_t", F32, [8])],
    )
    g = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan",
                          body=body, num_scan_inputs=1)],
        "scan_model",
        [vi("s0", F32, [8]), vi("xs", F32, [5, 8])],
        [vi("s_final", F32, [8]), vi("ys", F32, [5, 8])],
        [weight("W", [8, 8], rng)],
    )
    expect = {
        "types": {"s_in": F16, "x_t": F16, "p": F16, "q": F16, "s_out": F16,
                  "y_t": F16, "s_final_fp16": F16, "s_final": F32},
        "casts": {"scan_model": 5, "body": 0},
    }
    return model(g), expect


MODELS = [loop_model, loop_deny_model, if_model, if_deny_model, scan_model]


def graphs(g, out):
    """Every graph and subgraph, by name."""
    out[g.name] = g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graphs(a.g, out)
    return out


def value_types(m):
    """Element type of every named value, subgraphs included (from the
    model's declarations after strict shape inference)."""
    inferred = onnx.shape_inference.infer_shapes(m, check_type=True,
                                                 strict_mode=True)
    types = {}
    for g in graphs(inferred.graph, {}).values():
        for v in list(g.input) + list(g.output) + list(g.value_info):
            if v.type.HasField("tensor_type"):
                types[v.name] = v.type.tensor_type.elem_type
    return types


def feeds(m, rng):
    out = {}
    for i in m.graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value for d in t.shape.dim]
        if t.elem_type == TensorProto.BOOL:
            out[i.name] = np.array(rng.integers(0, 2) == 1)
        else:
            out[i.name] = (rng.uniform(-1, 1, shape)).astype(np.float32)
    return out


def run_ort(m, inputs):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def amp(amp_opt, src, dst):
    r = subprocess.run([amp_opt, src, "--auto-mixed-precision=summary=false",
                        "-o", dst], capture_output=True, text=True)
    return r.returncode, r.stderr


def check(name, build, amp_opt, tmp, seed):
    rng = np.random.default_rng(seed)
    m, expect = build(rng)
    onnx.checker.check_model(m, full_check=True)
    src = os.path.join(tmp, name + ".onnx")
    dst = os.path.join(tmp, name + ".amp.onnx")
    dst2 = os.path.join(tmp, name + ".amp2.onnx")
    onnx.save(m, src)
    rc, err = amp(amp_opt, src, dst)
    if rc:
        return [f"amp-opt failed: {err.strip()}"]
    errors = []
    out = onnx.load(dst)
    try:
        onnx.checker.check_model(out, full_check=True)
        types = value_types(out)
    except Exception as e:  # noqa: BLE001 - report any checker failure
        return [f"checker/shape inference: {e}"]
    for v, want in expect["types"].items():
        got = types.get(v)
        if got != want:
            errors.append(f"type of {v}: {got} (expected {want})")
    for gname, g in graphs(out.graph, {}).items():
        casts = sum(1 for n in g.node if n.op_type == "Cast")
        want = expect["casts"].get(gname)
        if want is not None and casts != want:
            errors.append(f"{casts} Cast nodes in graph {gname} (expected {want})")
    rc, err = amp(amp_opt, dst, dst2)
    if rc or open(dst, "rb").read() != open(dst2, "rb").read():
        errors.append("second run changed the model (not idempotent)")
    inputs = feeds(m, np.random.default_rng(seed + 1))
    for cond in ([True, False] if "c" in inputs else [None]):
        if cond is not None:
            inputs["c"] = np.array(cond)
        ref = run_ort(m, inputs)
        got = run_ort(out, inputs)
        for o, r, a in zip(m.graph.output, ref, got):
            if a.dtype != r.dtype or a.shape != r.shape:
                errors.append(f"output {o.name}: {a.dtype}{a.shape} vs "
                              f"{r.dtype}{r.shape}")
                continue
            scale = max(1.0, float(np.max(np.abs(r))))
            bound = ATOL * scale + RTOL * np.abs(r)
            err = np.abs(a.astype(np.float64) - r)
            if np.any(err > bound):
                errors.append(f"output {o.name} (c={cond}): max error "
                              f"{err.max():.3g} over the bound")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--amp-opt", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for build in MODELS:
            name = build.__name__
            errors = check(name, build, args.amp_opt, tmp, args.seed)
            print(f"{'FAIL' if errors else 'ok'}: {name}")
            for e in errors:
                print(f"  {e}")
            failed += bool(errors)
    print(f"amp-subgraphs: {len(MODELS)} models, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
