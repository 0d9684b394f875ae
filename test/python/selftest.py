#!/usr/bin/env python3
# ===- selftest.py - Tests of the round-trip test scripts themselves ----=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Checks the test scripts without the real tools:

* onnx_compare finds no difference between a model and itself, finds one for
  every kind of mutation, and accepts the documented changes (storage,
  order, generated node names, inlined external data) with a note;
* gen_varied_models is deterministic and its models are valid;
* every bad_inputs case really is malformed;
* roundtrip_check and bad_inputs drive stand-in tools (small Python scripts
  written at run time) and report injected bugs and crashes.

    selftest.py [--testdata DIR] [--workdir DIR] [--quick]

Ends with `selftest: N passed, M failed`.
"""

import argparse
import copy
import io
import os
import shutil
import sys
import tempfile
import contextlib
from typing import Callable, Dict, Iterator, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import AttributeProto, TensorProto, helper, numpy_helper  # noqa: E402

import bad_inputs  # noqa: E402
import gen_varied_models  # noqa: E402
import onnx_compare  # noqa: E402
import roundtrip_check  # noqa: E402


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok: bool, what: str) -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {what}")
        return ok


# --------------------------------------------------------------------------
# Walking models
# --------------------------------------------------------------------------


def graphs_of(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph and every subgraph, depth first."""
    def walk(g):
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    yield from walk(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    for sub in a.graphs:
                        yield from walk(sub)
    yield from walk(model.graph)


def all_nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    for g in graphs_of(model):
        yield from g.node
    for f in model.functions:
        yield from f.node


def all_attrs(model: onnx.ModelProto) -> Iterator[AttributeProto]:
    for n in all_nodes(model):
        yield from n.attribute


def first(it, pred=lambda x: True):
    return next((x for x in it if pred(x)), None)


# --------------------------------------------------------------------------
# Mutations: each changes something the comparator must report. They return
# False when the model has nothing to mutate.
# --------------------------------------------------------------------------


def _m_op_type(m):
    n = first(m.graph.node)
    if n is None:
        return False
    n.op_type += "X"
    return True


def _m_input_name(m):
    n = first(all_nodes(m), lambda n: len(n.input) and n.input[0])
    if n is None:
        return False
    n.input[0] += "_renamed"
    return True


def _m_output_name(m):
    n = first(all_nodes(m), lambda n: len(n.output))
    if n is None:
        return False
    n.output[0] += "_renamed"
    return True


def _m_drop_empty_input(m):
    n = first(all_nodes(m), lambda n: "" in list(n.input)[:-1])
    if n is None:
        return False
    inputs = [i for i in n.input if i]
    n.ClearField("input")
    n.input.extend(inputs)
    return True


def _m_drop_empty_output(m):
    n = first(all_nodes(m), lambda n: "" in list(n.output))
    if n is None:
        return False
    outputs = [o for o in n.output if o]
    n.ClearField("output")
    n.output.extend(outputs)
    return True


def _m_domain(m):
    n = first(all_nodes(m), lambda n: n.domain)
    if n is None:
        return False
    n.domain = ""
    return True


def _m_node_doc(m):
    n = first(all_nodes(m), lambda n: n.doc_string)
    if n is None:
        return False
    n.doc_string = ""
    return True


def _m_node_name(m):
    n = first(m.graph.node, lambda n: n.name)
    if n is None:
        return False
    n.name += "_2"
    return True


def _m_attr_int(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.INT and not a.ref_attr_name)
    if a is None:
        return False
    a.i += 1
    return True


def _m_attr_int_to_float(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.INT and not a.ref_attr_name)
    if a is None:
        return False
    value = a.i
    a.ClearField("i")
    a.type, a.f = AttributeProto.FLOAT, float(value)
    return True


def _m_attr_float_bits(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.FLOAT and not a.ref_attr_name)
    if a is None:
        return False
    a.f = -a.f if a.f == 0.0 else float(np.nextafter(np.float32(a.f), np.float32(np.inf)))
    return True


def _m_attr_nan_payload(m):
    a = first(all_attrs(m), lambda a: a.name == "f_nan")
    if a is None:
        return False
    a.f = float(np.array([0x7FC00002], dtype=np.uint32).view(np.float32)[0])
    return True


def _m_attr_removed(m):
    n = first(all_nodes(m), lambda n: len(n.attribute))
    if n is None:
        return False
    del n.attribute[0]
    return True


def _m_attr_ints(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.INTS and len(a.ints))
    if a is None:
        return False
    a.ints.append(0)
    return True


def _m_empty_list_attr_type(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.INTS and not len(a.ints))
    if a is None:
        return False
    a.type = AttributeProto.FLOATS
    return True


def _m_ref_attr_name(m):
    a = first(all_attrs(m), lambda a: a.ref_attr_name)
    if a is None:
        return False
    a.ref_attr_name += "_x"
    return True


def _m_type_proto_attr(m):
    a = first(all_attrs(m), lambda a: a.type == AttributeProto.TYPE_PROTO)
    if a is None:
        return False
    a.tp.tensor_type.elem_type = TensorProto.DOUBLE
    return True


def _numeric_init(m, raw: Optional[bool] = None):
    def ok(t):
        if t.data_type in (TensorProto.STRING, 0) or t.data_location == TensorProto.EXTERNAL:
            return False
        if raw is not None and t.HasField("raw_data") != raw:
            return False
        return int(np.prod(t.dims)) > 0 if len(t.dims) else True
    for g in graphs_of(m):
        t = first(g.initializer, ok)
        if t is not None:
            return t
    return None


def _m_init_raw_bit(m):
    t = _numeric_init(m, raw=True)
    if t is None:
        return False
    data = bytearray(t.raw_data)
    data[0] ^= 0x01
    t.raw_data = bytes(data)
    return True


def _m_init_typed_value(m):
    t = _numeric_init(m, raw=False)
    if t is None:
        return False
    for name in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        field = getattr(t, name)
        if len(field):
            field[0] = field[0] + 1 if field[0] != field[0] + 1 else 0
            if name in ("float_data", "double_data") and np.isnan(field[0]):
                field[0] = 1.0
            elif t.data_type == TensorProto.BOOL:
                field[0] = 1 - int(bool(field[0] - 1))
            elif t.data_type in (TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT8E4M3FN):
                field[0] = (field[0] - 1) ^ 1
            return True
    return False


def _m_init_dims(m):
    for g in graphs_of(m):
        for t in g.initializer:
            if len(t.dims) == 2 and t.dims[0] != t.dims[1]:
                t.dims[0], t.dims[1] = t.dims[1], t.dims[0]
                return True
    return False


def _m_init_dtype(m):
    t = first(m.graph.initializer, lambda t: t.data_type == TensorProto.FLOAT and t.HasField("raw_data"))
    if t is None:
        return False
    t.data_type = TensorProto.INT32
    return True


def _m_init_removed(m):
    if not len(m.graph.initializer):
        return False
    del m.graph.initializer[0]
    return True


def _m_init_name(m):
    t = first(m.graph.initializer)
    if t is None:
        return False
    t.name += "_renamed"
    return True


def _m_string_tensor(m):
    t = first(m.graph.initializer, lambda t: t.data_type == TensorProto.STRING and len(t.string_data))
    if t is None:
        return False
    t.string_data[0] = t.string_data[0] + b"\xff"
    return True


def _m_sparse_value(m):
    s = first(m.graph.sparse_initializer, lambda s: len(s.values.dims) and s.values.dims[0] > 0)
    if s is None:
        return False
    arr = numpy_helper.to_array(s.values).copy()
    flat = arr.reshape(-1).view(np.uint8)
    flat[0] ^= 1
    s.values.CopyFrom(numpy_helper.from_array(arr, s.values.name))
    return True


def _m_sparse_indices(m):
    s = first(m.graph.sparse_initializer, lambda s: len(s.indices.dims) == 1 and s.indices.dims[0] > 0)
    if s is None:
        return False
    idx = numpy_helper.to_array(s.indices).copy()
    total = int(np.prod(s.dims))
    if idx[-1] + 1 >= total:
        return False
    idx[-1] += 1
    s.indices.CopyFrom(numpy_helper.from_array(idx, s.indices.name))
    return True


def _tensor_input(m, pred):
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            for d in vi.type.tensor_type.shape.dim:
                if pred(d):
                    return d
    return None


def _m_dim_param(m):
    d = _tensor_input(m, lambda d: d.HasField("dim_param"))
    if d is None:
        return False
    d.dim_param += "2"
    return True


def _m_dim_value_to_param(m):
    d = _tensor_input(m, lambda d: d.HasField("dim_value"))
    if d is None:
        return False
    d.dim_param = "p"
    return True


def _m_dim_value_to_unknown(m):
    d = _tensor_input(m, lambda d: d.HasField("dim_value"))
    if d is None:
        return False
    d.ClearField("dim_value")
    return True


def _m_shape_removed(m):
    vi = first(m.graph.input, lambda vi: vi.type.HasField("tensor_type")
               and vi.type.tensor_type.HasField("shape") and len(vi.type.tensor_type.shape.dim) == 0)
    if vi is None:
        return False
    vi.type.tensor_type.ClearField("shape")  # a scalar becomes unranked
    return True


def _m_output_elem_type(m):
    vi = first(m.graph.output, lambda vi: vi.type.HasField("tensor_type"))
    if vi is None:
        return False
    vi.type.tensor_type.elem_type = (TensorProto.DOUBLE if vi.type.tensor_type.elem_type != TensorProto.DOUBLE
                                     else TensorProto.FLOAT)
    return True


def _m_seq_to_tensor(m):
    vi = first(m.graph.input, lambda vi: vi.type.HasField("sequence_type"))
    if vi is None:
        return False
    inner = vi.type.sequence_type.elem_type.tensor_type.elem_type
    vi.type.CopyFrom(helper.make_tensor_type_proto(inner, None))
    return True


def _m_value_info_removed(m):
    if not len(m.graph.value_info):
        return False
    del m.graph.value_info[0]
    return True


def _m_subgraph_node(m):
    for g in list(graphs_of(m))[1:]:
        n = first(g.node)
        if n is not None:
            n.op_type += "X"
            return True
    return False


def _m_subgraph_output(m):
    for g in list(graphs_of(m))[1:]:
        if len(g.output):
            g.output[0].name += "_x"
            return True
    return False


def _m_function_node(m):
    f = first(m.functions, lambda f: len(f.node))
    if f is None:
        return False
    f.node[-1].input[0] += "_x"
    return True


def _m_function_attr_default(m):
    f = first(m.functions, lambda f: len(f.attribute_proto))
    if f is None:
        return False
    f.attribute_proto[0].CopyFrom(helper.make_attribute(f.attribute_proto[0].name, 123))
    return True


def _m_function_attribute_list(m):
    f = first(m.functions, lambda f: len(f.attribute))
    if f is None:
        return False
    f.attribute.append("extra")
    return True


def _m_opset_version(m):
    m.opset_import[0].version += 1
    return True


def _m_ir_version(m):
    m.ir_version += 1
    return True


def _m_producer(m):
    m.producer_name += "x"
    return True


def _m_metadata(m):
    if not len(m.metadata_props):
        return False
    m.metadata_props[0].value += "x"
    return True


def _m_graph_doc(m):
    m.graph.doc_string += " changed"
    return True


def _m_node_order(m):
    if len(m.graph.node) < 2 or m.graph.node[0].op_type == m.graph.node[1].op_type:
        return False
    a, b = copy.deepcopy(m.graph.node[0]), copy.deepcopy(m.graph.node[1])
    m.graph.node[0].CopyFrom(b)
    m.graph.node[1].CopyFrom(a)
    return True


MUTATIONS: Dict[str, Callable[[onnx.ModelProto], bool]] = {
    name[3:]: fn for name, fn in sorted(globals().items()) if name.startswith("_m_")
}


# --------------------------------------------------------------------------
# Accepted changes: the comparator must report no difference.
# --------------------------------------------------------------------------


def _a_storage(m) -> bool:
    changed = False
    for g in graphs_of(m):
        for t in g.initializer:
            if t.data_location == TensorProto.EXTERNAL or t.data_type == TensorProto.STRING:
                continue
            arr = numpy_helper.to_array(t)
            new = gen_varied_models.make_tensor(t.name, arr, t.data_type, not t.HasField("raw_data"))
            new.doc_string = t.doc_string
            t.CopyFrom(new)
            changed = True
    return changed


def _a_attr_order(m) -> bool:
    changed = False
    for n in all_nodes(m):
        if len(n.attribute) > 1:
            attrs = list(reversed([copy.deepcopy(a) for a in n.attribute]))
            del n.attribute[:]
            n.attribute.extend(attrs)
            changed = True
    return changed


def _a_opset_order(m) -> bool:
    domains = [o.domain for o in m.opset_import]
    if len(domains) < 2 or len(set(domains)) != len(domains):
        return False  # duplicate domains are compared in order
    ops = list(reversed([copy.deepcopy(o) for o in m.opset_import]))
    del m.opset_import[:]
    m.opset_import.extend(ops)
    return True


def _a_init_order(m) -> bool:
    if len(m.graph.initializer) < 2:
        return False
    inits = list(reversed([copy.deepcopy(t) for t in m.graph.initializer]))
    del m.graph.initializer[:]
    m.graph.initializer.extend(inits)
    return True


def name_unnamed_nodes(m: onnx.ModelProto, unique: bool = True) -> bool:
    changed = False
    containers = list(graphs_of(m)) + list(m.functions)
    for g in containers:
        taken = {n.name for n in g.node if n.name}
        counter = 0
        for n in g.node:
            if not n.name:
                counter += 1
                name = f"{n.op_type}_gen{counter}" if unique else "gen"
                while unique and name in taken:
                    counter += 1
                    name = f"{n.op_type}_gen{counter}"
                n.name = name
                taken.add(name)
                changed = True
    return changed


ACCEPTED: Dict[str, Callable[[onnx.ModelProto], bool]] = {
    "storage raw<->typed": _a_storage,
    "attribute order": _a_attr_order,
    "opset_import order": _a_opset_order,
    "initializer order": _a_init_order,
    "generated node names": name_unnamed_nodes,
}


# --------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------


def load_corpus(testdata: Optional[str], varied_dir: str) -> List[Tuple[str, onnx.ModelProto, str]]:
    items = []
    for path in roundtrip_check.find_models(varied_dir):
        items.append((os.path.basename(path), onnx_compare.load_model(path), os.path.dirname(path)))
    if testdata and os.path.isdir(testdata):
        for path in roundtrip_check.find_models(testdata):
            items.append((os.path.relpath(path, testdata), onnx_compare.load_model(path),
                          os.path.dirname(path)))
    return items


def test_comparator(r: Results, corpus) -> None:
    for name, model, base in corpus:
        diffs = onnx_compare.compare_models(model, copy.deepcopy(model), base, base,
                                            allow_empty_names=True)
        r.check(not diffs, f"compare {name} with itself: {diffs[:2]}")
    # Mutations and accepted changes on the small models only (speed).
    corpus = [c for c in corpus if c[1].ByteSize() < 64 * 1024]
    for mname, mutate in MUTATIONS.items():
        applied = 0
        for name, model, base in corpus:
            mutated = copy.deepcopy(model)
            if not mutate(mutated):
                continue
            applied += 1
            diffs = onnx_compare.compare_models(model, mutated, base, base, allow_empty_names=True)
            r.check(bool(diffs), f"mutation '{mname}' on {name} not detected")
        r.check(applied > 0, f"mutation '{mname}' found nothing to mutate in the corpus")
    for aname, change in ACCEPTED.items():
        applied = 0
        for name, model, base in corpus:
            changed = copy.deepcopy(model)
            if not change(changed):
                continue
            applied += 1
            notes: List[str] = []
            diffs = onnx_compare.compare_models(model, changed, base, base, notes=notes)
            if aname != "generated node names":
                # Unnamed nodes staying unnamed are differences of their own.
                diffs = [d for d in diffs if "unnamed node" not in d]
            r.check(not diffs, f"accepted change '{aname}' on {name} reported: {diffs[:2]}")
            if aname != "generated node names":
                r.check(bool(notes), f"accepted change '{aname}' on {name} left no note")
        r.check(applied > 0, f"accepted change '{aname}' found nothing to change")
    # The exporter must name unnamed nodes, uniquely.
    unnamed = [(n, m, b) for n, m, b in corpus if any(not x.name for x in m.graph.node)]
    r.check(bool(unnamed), "corpus has unnamed nodes")
    for name, model, base in unnamed[:10]:
        diffs = onnx_compare.compare_models(model, copy.deepcopy(model), base, base)
        r.check(any("unnamed node" in d for d in diffs), f"unnamed node kept on {name} accepted")
        dup = copy.deepcopy(model)
        name_unnamed_nodes(dup, unique=False)
        if sum(1 for n in dup.graph.node if n.name == "gen") > 1:
            diffs = onnx_compare.compare_models(model, dup, base, base)
            r.check(any("not unique" in d for d in diffs), f"duplicate generated names on {name} accepted")


def test_external_inline(r: Results, varied_dir: str, work: str) -> None:
    externals = [p for p in roundtrip_check.find_models(varied_dir)
                 if any(t.data_location == TensorProto.EXTERNAL
                        for t in onnx_compare.load_model(p).graph.initializer)]
    r.check(bool(externals), "generator wrote models with external data")
    inline_dir = os.path.join(work, "inlined")
    os.makedirs(inline_dir, exist_ok=True)
    for path in externals:
        model = onnx.load(path)  # resolves and inlines the external data
        out = os.path.join(inline_dir, os.path.basename(path))
        onnx.save(model, out)
        notes: List[str] = []
        diffs = onnx_compare.compare_models(path, out, notes=notes, allow_empty_names=True)
        r.check(not diffs, f"inlined external data of {path} reported: {diffs[:2]}")
        r.check(any("external" in n for n in notes), f"inlining {path} left no note")
        broken = onnx.load(path, load_external_data=False)
        t = first(broken.graph.initializer, lambda t: t.data_location == TensorProto.EXTERNAL)
        for e in t.external_data:
            if e.key == "offset":
                e.value = str(int(e.value) + 1)
        diffs = onnx_compare.compare_models(broken, onnx.load(path, load_external_data=False),
                                            os.path.dirname(path), os.path.dirname(path))
        r.check(bool(diffs), f"moved external offset on {path} not detected")
        # Same model text, different bytes in the data file of a copy.
        copy_dir = os.path.join(work, "external-copy", os.path.basename(path)[: -len(".onnx")])
        shutil.rmtree(copy_dir, ignore_errors=True)
        os.makedirs(copy_dir)
        stem = os.path.basename(path)[: -len(".onnx")]
        for f in os.listdir(os.path.dirname(path)):
            if f == stem + ".onnx" or (f.startswith(stem + ".") and not f.endswith(".onnx")):
                data = open(os.path.join(os.path.dirname(path), f), "rb").read()
                if not f.endswith(".onnx"):
                    data = data[:-1] + bytes([data[-1] ^ 1])
                with open(os.path.join(copy_dir, f), "wb") as out_file:
                    out_file.write(data)
        diffs = onnx_compare.compare_models(path, os.path.join(copy_dir, stem + ".onnx"),
                                            allow_empty_names=True)
        r.check(bool(diffs), f"changed external data beside a copy of {path} not detected")


def test_generator(r: Results, work: str, count: int) -> str:
    first_dir, second_dir = os.path.join(work, "gen-a"), os.path.join(work, "gen-b")
    for d in (first_dir, second_dir):
        shutil.rmtree(d, ignore_errors=True)
    summary = gen_varied_models.generate(first_dir, count, seed=1234)
    gen_varied_models.generate(second_dir, count, seed=1234)
    r.check(summary.count == count, f"generator wrote {summary.count} of {count} models")
    names = sorted(os.listdir(first_dir))
    r.check(names == sorted(os.listdir(second_dir)), "generator file lists differ between runs")
    for n in names:
        with open(os.path.join(first_dir, n), "rb") as f1, open(os.path.join(second_dir, n), "rb") as f2:
            r.check(f1.read() == f2.read(), f"generator is not deterministic for {n}")
    for block, _, _ in gen_varied_models.BLOCKS:
        r.check(summary.features.get(f"block:{block}", 0) > 0, f"generator never used block {block}")
    return first_dir


def test_bad_inputs(r: Results, work: str) -> None:
    cases_dir = os.path.join(work, "bad")
    for case in bad_inputs.CASES:
        path = bad_inputs.build_case(case, cases_dir)
        if case.name == "oversized":
            # No protobuf parser takes it (and reading it costs 2 GiB).
            r.check(os.path.getsize(path) > 2 ** 31, "bad case oversized passes 2 GiB")
            continue
        if case.name == "external-short":
            # The checker does not read external data; loading it must fail.
            try:
                loaded = onnx.load(path)
                numpy_helper.to_array(loaded.graph.initializer[0])
                ok = False
            except Exception:
                ok = True
            r.check(ok, "bad case external-short loads")
            continue
        with open(path, "rb") as f:
            data = f.read()
        try:
            model = onnx.ModelProto()
            model.ParseFromString(data)
        except Exception:
            r.check(case.name in ("truncated", "garbage", "ort-format"), f"bad case {case.name} does not parse")
            continue
        r.check(case.name not in ("truncated", "garbage"), f"bad case {case.name} parses")
        try:
            onnx.checker.check_model(path, full_check=True)
            ok = False
        except Exception:
            ok = True
        r.check(ok, f"onnx.checker accepts bad case {case.name}")


FAKE_TOOL = r'''#!{python}
# Stand-in for amp-translate / amp-opt used by selftest.py only. The ".mlir"
# it writes is the model, base64-encoded. FAKE_AMP_BUG injects faults.
import base64, os, signal, sys
HEADER = "// fake-amp\n"

def graphs_of(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from graphs_of(sub)

def parse_model(data, base):
    sys.dont_write_bytecode = True
    sys.path.insert(0, {here!r})
    import onnx, onnx_compare
    model = onnx.ModelProto()
    model.ParseFromString(data)
    if not model.HasField("graph"):
        raise ValueError("empty model: no graph")
    bodies = list(graphs_of(model.graph)) + list(model.functions)
    for g in bodies:
        for t in getattr(g, "initializer", []):
            if t.data_location == onnx.TensorProto.EXTERNAL:
                t.raw_data = onnx_compare._read_external(t, base)
                t.data_location = onnx.TensorProto.DEFAULT
                del t.external_data[:]
        taken = set(n.name for n in g.node)
        for i, n in enumerate(g.node):
            if not n.name:
                n.name = "gen_%d" % i
                while n.name in taken:
                    n.name += "_"
                taken.add(n.name)
    bug = os.environ.get("FAKE_AMP_BUG", "")
    if bug == "drop_doc":
        for g in bodies:
            for n in g.node:
                n.doc_string = ""
    if bug == "storage":
        import selftest
        selftest._a_storage(model)
    return model.SerializeToString()

def main():
    args = sys.argv[1:]
    if args and args[0] in ("--import-onnx", "--export-onnx"):
        args = args[1:]
    src, out = args[0], args[args.index("-o") + 1]
    bug = os.environ.get("FAKE_AMP_BUG", "")
    if bug == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    try:
        with open(src, "rb") as f:
            data = f.read()
        if src.endswith(".mlir"):
            text = data.decode()
            if not text.startswith(HEADER):
                raise ValueError("not a fake-amp file")
            payload = base64.b64decode(text[len(HEADER):].split("\n", 1)[0])
        else:
            payload = parse_model(data, os.path.dirname(os.path.abspath(src)))
        if out.endswith(".mlir"):
            extra = ""
            if bug == "unstable_text":
                extra = str(os.getpid())
            with open(out, "w") as f:
                f.write(HEADER + base64.b64encode(payload).decode() + "\n" + extra)
        else:
            with open(out, "wb") as f:
                f.write(payload)
    except Exception as e:
        print(f"{{src}}: error: {{e}}", file=sys.stderr)
        if os.path.exists(out):
            os.remove(out)
        sys.exit(1)

main()
'''


def write_fake_tools(bin_dir: str) -> None:
    os.makedirs(bin_dir, exist_ok=True)
    text = FAKE_TOOL.format(python=sys.executable, here=HERE)
    for tool in ("amp-translate", "amp-opt"):
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)


def run_captured(fn, argv) -> Tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = fn(argv)
    return rc, buf.getvalue()


def _pick_subset(src: str, dst: str, testdata: Optional[str], quick: bool) -> int:
    """Copies a few generated models into `dst`: one with external data and
    one with node doc strings (so that the 'drop_doc' bug shows)."""
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    paths = roundtrip_check.find_models(src)
    models = {p: onnx_compare.load_model(p) for p in paths}
    picked = [first(paths, lambda p: any(t.data_location == TensorProto.EXTERNAL
                                         for t in models[p].graph.initializer)),
              first(paths, lambda p: any(n.doc_string for n in models[p].graph.node))]
    picked = sorted({p for p in picked if p} or set(paths[:2]))
    for p in picked:
        stem = os.path.basename(p)[: -len(".onnx")]
        for f in os.listdir(src):  # the model and its external data files
            if f == stem + ".onnx" or (f.startswith(stem + ".") and not f.endswith(".onnx")):
                shutil.copy(os.path.join(src, f), dst)
    if testdata and not quick:
        mnist = os.path.join(testdata, "onnxruntime", "mnist.onnx")
        if os.path.exists(mnist):
            shutil.copy(mnist, dst)
    return len([p for p in os.listdir(dst) if p.endswith(".onnx")])


def test_drivers(r: Results, work: str, testdata: Optional[str], varied_count: int,
                 quick: bool) -> None:
    bin_dir = os.path.join(work, "fake-bin")
    write_fake_tools(bin_dir)
    rc, out = run_captured(roundtrip_check.main, [
        "--tools", bin_dir, "--corpus", "varied", "--varied-count", str(varied_count),
        "--workdir", os.path.join(work, "rt-varied")])
    r.check(rc == 0 and f"roundtrip: {varied_count} passed, 0 failed" in out,
            f"roundtrip over varied models with a faithful stand-in: rc={rc}\n{out}")
    subset = os.path.join(work, "subset")
    total = _pick_subset(os.path.join(work, "rt-varied", "roundtrip-varied", "corpus"), subset,
                         testdata, quick)
    expectations = [] if quick else [("", 0, f"roundtrip: {total} passed, 0 failed")]
    expectations += [("storage", 0, f"roundtrip: {total} passed, 0 failed"),
                     ("drop_doc", 1, "doc_string"),
                     ("unstable_text", 1, "y.mlir != z.mlir"),
                     ("crash", 1, "crashed with signal")]
    for bug, want_rc, want_text in expectations:
        os.environ["FAKE_AMP_BUG"] = bug
        try:
            rc, out = run_captured(roundtrip_check.main, [
                "--tools", bin_dir, "--corpus", subset, "--workdir", os.path.join(work, f"rt-{bug or 'ok'}")])
        finally:
            os.environ.pop("FAKE_AMP_BUG", None)
        r.check(rc == want_rc and want_text in out,
                f"roundtrip with stand-in bug '{bug}': rc={rc}, expected {want_rc} and {want_text!r}\n{out}")
    # bad_inputs: the faithful stand-in accepts most bad models or words its
    # errors differently; the driver must still count every case and tool.
    some = ["truncated", "garbage", "empty"]
    rc, out = run_captured(bad_inputs.main, ["--tools", bin_dir, "--workdir", os.path.join(work, "bad-run")]
                           + [a for c in some for a in ("--case", c)])
    n = len(some) * 2
    last = out.strip().splitlines()[-1] if out.strip() else ""
    counts = [int(w) for w in last.replace(",", " ").split() if w.isdigit()]
    r.check(last.startswith("bad-inputs:") and sum(counts) == n and rc == (1 if counts[1] else 0),
            f"bad_inputs driver over stand-ins: rc={rc}, last line {last!r}")
    for case in ("truncated", "garbage", "empty"):  # the stand-in reports these as asked
        r.check(f"FAIL {case} " not in out, f"bad_inputs case {case} fails with the stand-in:\n{out}")
    os.environ["FAKE_AMP_BUG"] = "crash"
    try:
        rc, out = run_captured(bad_inputs.main, ["--tools", bin_dir, "--workdir",
                                                 os.path.join(work, "bad-crash"), "--case", "garbage"])
    finally:
        os.environ.pop("FAKE_AMP_BUG", None)
    r.check(rc == 1 and "crashed with signal" in out, f"bad_inputs does not report a crash: {out}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--testdata", help="external test data to include")
    parser.add_argument("--workdir")
    parser.add_argument("--quick", action="store_true", help="fewer generated models")
    args = parser.parse_args(argv)
    own = args.workdir is None
    work = tempfile.mkdtemp(prefix="amp-selftest-") if own else os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    r = Results()
    try:
        count = 24 if args.quick else 96
        varied_dir = test_generator(r, work, count)
        corpus = load_corpus(args.testdata, varied_dir)
        test_comparator(r, corpus)
        test_external_inline(r, varied_dir, work)
        test_bad_inputs(r, work)
        test_drivers(r, work, args.testdata, 4 if args.quick else 12, args.quick)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    print(f"selftest: {r.passed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
