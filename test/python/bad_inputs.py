#!/usr/bin/env python3
# ===- bad_inputs.py - Diagnostics of amp-translate/amp-opt on bad models -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Feeds malformed ONNX models to the tools and checks their diagnostics.

Every bad model is made at test time, in memory, from a small valid base
model, and written under --workdir. For each case both
    amp-translate --import-onnx BAD.onnx -o OUT.mlir
    amp-opt BAD.onnx -o OUT.onnx
must exit with code 1 (not a signal), print on stderr the bad file's name and
the expected words (case-insensitive; each group lists alternatives, one of
which must appear), and leave no OUT file behind.

    bad_inputs.py --tools BIN_DIR --workdir DIR [--case NAME ...] [--list]

Ends with `bad-inputs: N passed, M failed` (one count per case and tool).
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, List, Sequence, Tuple

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

# Words a parse failure may use.
PARSE_WORDS = ("parse", "protobuf", "truncated", "invalid", "malformed", "corrupt")
DUPLICATE_WORDS = ("duplicate", "already defined", "more than once", "redefin")


@dataclass
class Case:
    name: str
    description: str
    # Writes the bad model (and any side files) into the given directory and
    # returns its path.
    build: Callable[[str], str]
    # Each group is a tuple of alternatives; every group must match.
    expect: Sequence[Tuple[str, ...]]


# --------------------------------------------------------------------------
# The valid base model: Gemm_1 -> Relu_2 -> Add_3.
# --------------------------------------------------------------------------


def base_model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    weight = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "fc_weight")
    bias = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "fc_bias")
    nodes = [
        helper.make_node("Gemm", ["input_x", "fc_weight", "fc_bias"], ["gemm_out"], name="Gemm_1",
                         transB=1, alpha=1.0),
        helper.make_node("Relu", ["gemm_out"], ["relu_out"], name="Relu_2"),
        helper.make_node("Add", ["relu_out", "relu_out"], ["add_out"], name="Add_3"),
    ]
    graph = helper.make_graph(nodes, "base", [helper.make_tensor_value_info("input_x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("add_out", TensorProto.FLOAT, [2, 3])],
                              [weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _node(model: onnx.ModelProto, name: str) -> onnx.NodeProto:
    return next(n for n in model.graph.node if n.name == name)


def _init(model: onnx.ModelProto, name: str) -> TensorProto:
    return next(t for t in model.graph.initializer if t.name == name)


def _write(directory: str, filename: str, data: bytes) -> str:
    path = os.path.join(directory, filename)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _model_case(filename: str, mutate: Callable[[onnx.ModelProto], None]) -> Callable[[str], str]:
    def build(directory: str) -> str:
        model = base_model()
        mutate(model)
        return _write(directory, filename, model.SerializeToString())
    return build


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


def _truncated(directory: str) -> str:
    data = base_model().SerializeToString()
    # Cut in the middle, at the first length that protobuf cannot parse (a
    # cut at a field boundary would leave a valid, smaller message).
    for cut in range(len(data) // 2, len(data)):
        try:
            onnx.ModelProto().ParseFromString(data[:cut])
        except Exception:
            return _write(directory, "truncated.onnx", data[:cut])
    raise AssertionError("no truncation point breaks the protobuf")


def _garbage(directory: str) -> str:
    rng = random.Random(99)
    data = b"this is not an onnx model\n" + bytes(rng.getrandbits(8) for _ in range(256))
    onnx_model = onnx.ModelProto()
    try:
        onnx_model.ParseFromString(data)
    except Exception:
        return _write(directory, "garbage.onnx", data)
    raise AssertionError("garbage happens to parse")


def _ort_format(directory: str) -> str:
    # ONNX Runtime's ORT format (generate_artifacts(ort_format=True) writes
    # .ort files): a FlatBuffer, root offset then the identifier "ORTM".
    rng = random.Random(7)
    data = (16).to_bytes(4, "little") + b"ORTM" + bytes(rng.getrandbits(8) for _ in range(248))
    return _write(directory, "training_model.ort", data)


def _empty(directory: str) -> str:
    return _write(directory, "empty.onnx", b"")


def _undefined_input(m: onnx.ModelProto) -> None:
    _node(m, "Add_3").input[1] = "foo"


def _cycle(m: onnx.ModelProto) -> None:
    # Relu_2 reads Add_3's output and Add_3 reads Relu_2's: a cycle.
    _node(m, "Relu_2").input[0] = "add_out"


def _duplicate_output(m: onnx.ModelProto) -> None:
    m.graph.node.insert(2, helper.make_node("Neg", ["gemm_out"], ["relu_out"], name="Neg_4"))


def _output_is_graph_input(m: onnx.ModelProto) -> None:
    relu = _node(m, "Relu_2")
    relu.output[0] = "input_x"
    _node(m, "Add_3").input[:] = ["input_x", "input_x"]


def _attr_alpha_string(m: onnx.ModelProto) -> None:
    gemm = _node(m, "Gemm_1")
    for a in gemm.attribute:
        if a.name == "alpha":
            a.Clear()
            a.name, a.type, a.s = "alpha", AttributeProto.STRING, b"0.5"


def _attr_transa_float(m: onnx.ModelProto) -> None:
    _node(m, "Gemm_1").attribute.append(helper.make_attribute("transA", 1.0))


def _external_case(filename: str, absolute: bool) -> Callable[[str], str]:
    def build(directory: str) -> str:
        model = base_model()
        weight = _init(model, "fc_weight")
        data = weight.raw_data
        # The referenced file exists and holds the right bytes, so a tool
        # that follows the path would succeed: it must refuse it.
        if absolute:
            target = os.path.join(os.path.dirname(directory), "absolute.bin")
            location = target
        else:
            target = os.path.join(os.path.dirname(directory), "outside.bin")
            location = "../outside.bin"
        with open(target, "wb") as f:
            f.write(data)
        weight.ClearField("raw_data")
        weight.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", str(len(data)))):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        return _write(directory, filename, model.SerializeToString())
    return build


def _external_short(directory: str) -> str:
    """fc_weight's data file ends before offset + length."""
    model = base_model()
    weight = _init(model, "fc_weight")
    data = weight.raw_data
    with open(os.path.join(directory, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + data[: len(data) // 2])
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "16"), ("length", str(len(data)))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return _write(directory, "external_short.onnx", model.SerializeToString())


def _oversized(directory: str) -> str:
    """A valid model followed by zeros up to 2 GiB + 1 MiB: no protobuf can
    be that large. The file is sparse, so it costs no disk."""
    path = _write(directory, "oversized.onnx", base_model().SerializeToString())
    os.truncate(path, 2 ** 31 + 2 ** 20)
    return path


def _huge_dims(m: onnx.ModelProto) -> None:
    m.graph.initializer.append(TensorProto(name="huge_init", data_type=TensorProto.FLOAT,
                                           dims=[2 ** 40, 2 ** 40]))


def _negative_dim_initializer(m: onnx.ModelProto) -> None:
    m.graph.initializer.append(TensorProto(name="neg_init", data_type=TensorProto.FLOAT,
                                           dims=[3, -5]))


CASES: List[Case] = [
    Case("truncated", "a valid model cut in the middle", _truncated, [PARSE_WORDS]),
    Case("garbage", "bytes that are no protobuf", _garbage, [PARSE_WORDS]),
    Case("empty", "an empty file", _empty, [("empty", "no graph", "missing graph")]),
    Case("ort-format", "an ONNX Runtime ORT-format model (.ort)", _ort_format,
         [("ort-format", "ortm"), (".onnx",)]),
    Case("undefined-input", "Add_3 reads 'foo', which nothing defines",
         _model_case("undefined_input.onnx", _undefined_input),
         [("Add_3",), ("foo",), ("undefined", "not defined")]),
    Case("cycle", "Relu_2 and Add_3 read each other's output",
         _model_case("cycle.onnx", _cycle),
         [("Relu_2", "Add_3"), ("cycle", "topolog")]),
    Case("duplicate-output", "Relu_2 and Neg_4 both write relu_out",
         _model_case("duplicate_output.onnx", _duplicate_output),
         [("Relu_2", "Neg_4"), ("relu_out",), DUPLICATE_WORDS]),
    Case("output-is-graph-input", "Relu_2 writes the graph input input_x",
         _model_case("output_is_graph_input.onnx", _output_is_graph_input),
         [("Relu_2",), ("input_x",), DUPLICATE_WORDS]),
    Case("attr-alpha-string", "Gemm_1 has alpha as a STRING",
         _model_case("attr_alpha_string.onnx", _attr_alpha_string),
         [("Gemm_1",), ("alpha",), ("attribute", "type")]),
    Case("attr-transa-float", "Gemm_1 has transA as a FLOAT",
         _model_case("attr_transa_float.onnx", _attr_transa_float),
         [("Gemm_1",), ("transA",), ("attribute", "type")]),
    Case("external-outside", "fc_weight's external data is ../outside.bin",
         _external_case("external_outside.onnx", absolute=False),
         [("fc_weight",), ("outside",)]),
    Case("external-absolute", "fc_weight's external data has an absolute path",
         _external_case("external_absolute.onnx", absolute=True),
         [("fc_weight",), ("absolute", "outside")]),
    Case("external-short", "fc_weight's data file ends before its offset + length",
         _external_short, [("fc_weight",), ("beyond the end",), ("weights.bin",)]),
    Case("oversized", "a file of 2 GiB + 1 MiB (sparse)", _oversized,
         [("2 GiB",), ("larger",), ("external data",)]),
    Case("huge-dims", "initializer huge_init with dims [2^40, 2^40] and no data",
         _model_case("huge_dims.onnx", _huge_dims),
         [("huge_init",), ("dim", "size", "element", "overflow")]),
    Case("negative-dim", "initializer neg_init with dims [3, -5]",
         _model_case("negative_dim.onnx", _negative_dim_initializer),
         [("neg_init",), ("dim", "negative")]),
]


def build_case(case: Case, workdir: str) -> str:
    """Makes a fresh directory for the case and writes its bad model."""
    directory = os.path.join(workdir, case.name, "model")
    shutil.rmtree(os.path.dirname(directory), ignore_errors=True)
    os.makedirs(directory)
    return case.build(directory)


def check_stderr(stderr: str, bad_path: str, expect: Sequence[Tuple[str, ...]]) -> List[str]:
    text = stderr.lower()
    problems = []
    base = os.path.basename(bad_path).lower()
    if base not in text:
        problems.append(f"stderr does not name the file {os.path.basename(bad_path)!r}")
    # The expected words must come from the message, not from the file name
    # ("huge_dims.onnx" holds "dim").
    text = text.replace(bad_path.lower(), " ").replace(base, " ")
    for group in expect:
        if not any(word.lower() in text for word in group):
            problems.append("stderr lacks " + " or ".join(repr(w) for w in group))
    return problems


def run_case(case: Case, tools: str, workdir: str, timeout: float) -> List[Tuple[str, List[str]]]:
    """Returns [(tool label, problems)] for the two tools."""
    bad = build_case(case, workdir)
    out_dir = os.path.join(workdir, case.name, "out")
    os.makedirs(out_dir, exist_ok=True)
    runs = [
        ("amp-translate --import-onnx", [os.path.join(tools, "amp-translate"), "--import-onnx",
                                         bad, "-o"], os.path.join(out_dir, "out.mlir")),
        ("amp-opt", [os.path.join(tools, "amp-opt"), bad, "-o"], os.path.join(out_dir, "out.onnx")),
    ]
    results = []
    for label, argv, out in runs:
        for leftover in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, leftover))
        problems: List[str] = []
        try:
            proc = subprocess.run(argv + [out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            results.append((label, [f"timed out after {timeout:.0f}s"]))
            continue
        except OSError as e:
            results.append((label, [f"cannot run {argv[0]}: {e}"]))
            continue
        stderr = proc.stderr.decode(errors="replace")
        if proc.returncode < 0:
            problems.append(f"crashed with signal {-proc.returncode}")
        elif proc.returncode != 1:
            problems.append(f"exit code {proc.returncode}, expected 1")
        problems += check_stderr(stderr, bad, case.expect)
        left = sorted(os.listdir(out_dir))  # the output, or a temporary beside it
        if left:
            problems.append(f"left file(s) behind in {out_dir}: {', '.join(left)}")
        if problems:
            first = stderr.strip().splitlines()[:2]
            problems.append("stderr was: " + (" | ".join(first) if first else "(empty)"))
        results.append((label, problems))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", help="directory with amp-translate and amp-opt")
    parser.add_argument("--workdir", required=False, help="where the bad models are written")
    parser.add_argument("--case", action="append", help="run only this case (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args(argv)
    if args.list:
        for case in CASES:
            print(f"{case.name:24} {case.description}")
        return 0
    if not args.tools or not args.workdir:
        parser.error("--tools and --workdir are required")
    by_name = {c.name: c for c in CASES}
    selected = CASES
    if args.case:
        unknown = [n for n in args.case if n not in by_name]
        if unknown:
            parser.error(f"unknown case(s): {', '.join(unknown)}; --list shows them")
        selected = [by_name[n] for n in args.case]
    tools = os.path.abspath(args.tools)
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    passed = failed = 0
    for case in selected:
        for label, problems in run_case(case, tools, workdir, args.timeout):
            if problems:
                failed += 1
                print(f"FAIL {case.name} ({label}): " + "; ".join(problems))
            else:
                passed += 1
    print(f"bad-inputs: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
