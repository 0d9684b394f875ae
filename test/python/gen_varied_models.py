#!/usr/bin/env python3
# ===- gen_varied_models.py - Deterministic corpus of varied ONNX models -=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Writes N varied, valid ONNX models for the import/export round-trip test.

The same seed and count always give the same files. Each model is built from
a few "blocks" (a tensor zoo, control flow, local functions, training ops, a
random chain of real operators, ...) at one opset version, then decorated
with doc strings, metadata, odd value names and unnamed nodes. Every model is
validated with onnx.checker (full check) and strict shape inference before it
is written; models that contain an unranked graph input, which the checker
refuses although the IR allows it, are checked with that input given a rank.

    gen_varied_models.py OUT_DIR [--count 300] [--seed 1234] [--verify-ort]

As a module: `generate(out_dir, count, seed) -> Summary`.
"""

import argparse
import collections
import os
import random
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import onnx
import onnx.defs
from onnx import AttributeProto, TensorProto, TypeProto, helper, numpy_helper

NEWEST_OPSET = onnx.defs.onnx_opset_version()
OPSETS = sorted({7, 9, 11, 13, 15, 17, 18, 21, 23, NEWEST_OPSET})
ML_DOMAIN = "ai.onnx.ml"
MS_DOMAIN = "com.microsoft"
FN_DOMAIN = "local.functions"
CUSTOM_DOMAIN = "org.amp.unknown"
TRAINING_DOMAIN = "ai.onnx.preview.training"

T = TensorProto

# Element type -> the lowest IR version that defines it.
DTYPE_IR: Dict[int, int] = {
    T.FLOAT: 3, T.UINT8: 3, T.INT8: 3, T.UINT16: 3, T.INT16: 3, T.INT32: 3, T.INT64: 3,
    T.STRING: 3, T.BOOL: 3, T.FLOAT16: 3, T.DOUBLE: 3, T.UINT32: 3, T.UINT64: 3,
    T.COMPLEX64: 3, T.COMPLEX128: 3, T.BFLOAT16: 4, T.FLOAT8E4M3FN: 9, T.FLOAT8E4M3FNUZ: 9,
    T.FLOAT8E5M2: 9, T.FLOAT8E5M2FNUZ: 9, T.UINT4: 10, T.INT4: 10,
}
# Types newer than the list above; used at the newest opset only.
for _name, _ir in (("FLOAT4E2M1", 11), ("FLOAT8E8M0", 12), ("UINT2", 13), ("INT2", 13),
                   ("FLOAT6E2M3", 14), ("FLOAT6E3M2", 14)):
    if hasattr(T, _name):
        DTYPE_IR[getattr(T, _name)] = _ir

# Value names that exercise escaping in the MLIR printer and parser.
ODD_NAMES = ["/model/layer.0/Add_output_0", "onnx::MatMul_12", "x:0", "a b",
             "quote\"and\\slash", "grüße_ω", "123starts_with_digit", "%percent", "@at#hash"]
DOC_STRINGS = ["plain doc", "multi\nline\ndoc", "unicode: µ, ∑, 漢字", "quotes \" and \\ backslash",
               "", "  leading and trailing spaces  ", "tab\tseparated"]


def _schema_at(op: str, opset: int, domain: str = ""):
    try:
        return onnx.defs.get_schema(op, opset, domain)
    except Exception:  # Not defined at this version.
        return None


def identity_supports(dtype: int, opset: int) -> bool:
    schema = _schema_at("Identity", opset)
    if schema is None:
        return False
    name = helper.tensor_dtype_to_string(dtype).replace("TensorProto.", "").lower()
    return f"tensor({name})" in schema.type_constraints[0].allowed_type_strs


# --------------------------------------------------------------------------
# Tensor values
# --------------------------------------------------------------------------


def random_array(rng: random.Random, dtype: int, shape: Sequence[int]) -> np.ndarray:
    """Random values of an ONNX element type, with special values (NaN with
    payload, infinities, -0.0, denormals) mixed in for float types."""
    size = int(np.prod(shape)) if len(shape) else 1
    seed = rng.getrandbits(32)
    gen = np.random.default_rng(seed)
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    if dtype == T.STRING:
        pool = [b"", b"a", b"hello world", "ünïcödé".encode(), b"\x00\x01bin", b"x" * 40,
                b"\xff\xfenot utf-8"]
        vals = [pool[int(i)] for i in gen.integers(0, len(pool), size)]
        return np.array(vals, dtype=object).reshape(shape)
    if dtype == T.BOOL:
        return gen.integers(0, 2, size).astype(np.bool_).reshape(shape)
    if dtype in (T.FLOAT, T.DOUBLE):
        vals = (gen.standard_normal(size) * gen.choice([1e-3, 1, 1e4])).astype(np_dtype)
        specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1.5]
        for i in range(size):
            if gen.random() < 0.15:
                vals[i] = specials[int(gen.integers(0, len(specials)))]
        arr = vals.reshape(shape)
        if size and dtype == T.FLOAT and gen.random() < 0.5:
            flat = arr.reshape(-1).view(np.uint32)
            flat[0] = 0x7FC12345  # quiet NaN with a payload
        return arr
    if dtype in (T.COMPLEX64, T.COMPLEX128):
        re = gen.standard_normal(size)
        im = gen.standard_normal(size)
        return (re + 1j * im).astype(np_dtype).reshape(shape)
    if dtype in (T.FLOAT16, T.BFLOAT16):
        # Any 16-bit pattern is a valid value, NaN payloads included.
        return gen.integers(0, 1 << 16, size, dtype=np.uint16).view(np_dtype).reshape(shape)
    if np.dtype(np_dtype).kind == "V" or dtype >= T.FLOAT8E4M3FN:
        return _random_small_type(gen, dtype, np_dtype, size).reshape(shape)
    info = np.iinfo(np_dtype)
    lo, hi = int(info.min), int(info.max)
    vals = gen.integers(lo, hi, size, dtype=np_dtype, endpoint=True)
    return vals.reshape(shape)


def _random_small_type(gen, dtype: int, np_dtype, size: int) -> np.ndarray:
    bits = {T.UINT4: 4, T.INT4: 4}
    for name, width in (("FLOAT4E2M1", 4), ("UINT2", 2), ("INT2", 2),
                        ("FLOAT6E2M3", 6), ("FLOAT6E3M2", 6)):
        if hasattr(T, name):
            bits[getattr(T, name)] = width
    width = bits.get(dtype, 8)
    raw = gen.integers(0, 1 << width, size, dtype=np.uint8)
    if dtype in (T.INT4, getattr(T, "INT2", -1)):
        signed = raw.astype(np.int8)
        signed[signed >= (1 << (width - 1))] -= 1 << width
        return signed.astype(np_dtype)
    if dtype in (T.UINT4, getattr(T, "UINT2", -1)):
        return raw.astype(np_dtype)
    return raw.view(np_dtype)


def _packed_types() -> set:
    return {getattr(T, n) for n in ("UINT4", "INT4", "FLOAT4E2M1", "UINT2", "INT2") if hasattr(T, n)}


def make_tensor(name: str, arr: np.ndarray, dtype: int, raw: bool) -> TensorProto:
    """A tensor holding `arr` bit for bit, in raw_data or in the typed field
    the ONNX spec assigns to `dtype`."""
    if raw and dtype != T.STRING:
        tensor = numpy_helper.from_array(arr, name)
        tensor.data_type = dtype
        return tensor
    tensor = TensorProto(name=name, data_type=dtype, dims=list(arr.shape))
    flat = np.ascontiguousarray(arr).reshape(-1)
    if dtype == T.STRING:
        tensor.string_data.extend(flat.tolist())
    elif dtype in (T.FLOAT, T.COMPLEX64):
        tensor.float_data.extend(flat.view(np.float32).tolist())
    elif dtype in (T.DOUBLE, T.COMPLEX128):
        tensor.double_data.extend(flat.view(np.float64).tolist())
    elif dtype == T.INT64:
        tensor.int64_data.extend(flat.tolist())
    elif dtype in (T.UINT32, T.UINT64):
        tensor.uint64_data.extend(flat.astype(np.uint64).tolist())
    elif dtype in _packed_types():
        # Sub-byte integers and FLOAT4 pack into bytes, one byte per int32.
        tensor.int32_data.extend(numpy_helper.from_array(arr).raw_data)
    elif flat.dtype.kind in "iub":
        tensor.int32_data.extend(flat.astype(np.int32).tolist())
    else:
        # 16-, 8- and 6-bit floats: the bit pattern of each element.
        bits = np.uint16 if flat.dtype.itemsize == 2 else np.uint8
        tensor.int32_data.extend(flat.view(bits).astype(np.int32).tolist())
    return tensor


def value_info_for(name: str, tensor: TensorProto) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))


# --------------------------------------------------------------------------
# Model builder
# --------------------------------------------------------------------------


class Builder:
    """Collects the parts of one model and the facts for the summary."""

    def __init__(self, rng: random.Random, opset: int, index: int):
        self.rng = rng
        self.opset = opset
        self.index = index
        self.nodes: List[onnx.NodeProto] = []
        self.inits: List[TensorProto] = []
        self.sparse_inits: List[onnx.SparseTensorProto] = []
        self.inputs: List[onnx.ValueInfoProto] = []
        self.outputs: List[onnx.ValueInfoProto] = []
        self.value_info: List[onnx.ValueInfoProto] = []
        self.functions: List[onnx.FunctionProto] = []
        self.domains: Dict[str, int] = {"": opset}
        self.min_ir = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
        self.features: collections.Counter = collections.Counter()
        self.counter = 0
        self.unnamed_rate = rng.choice([0.0, 0.0, 0.1, 0.3, 1.0])
        self.doc_rate = rng.choice([0.0, 0.2, 0.6])
        self.odd_names = rng.random() < 0.25
        self.external: List[str] = []
        self.unranked: List[str] = []
        self.inits_as_inputs = False

    # Names -----------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.counter += 1
        if self.odd_names and self.rng.random() < 0.2:
            return f"{self.rng.choice(ODD_NAMES)}_{self.counter}"
        return f"{base}_{self.counter}"

    def doc(self) -> str:
        if self.rng.random() < self.doc_rate:
            self.features["doc_strings"] += 1
            return self.rng.choice(DOC_STRINGS) or "x"
        return ""

    def need_ir(self, version: int) -> None:
        self.min_ir = max(self.min_ir, version)

    def use_domain(self, domain: str, version: int) -> None:
        self.domains[domain] = max(self.domains.get(domain, 0), version)

    # Graph parts -----------------------------------------------------------
    def node(self, op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "",
             name: Optional[str] = None, into: Optional[list] = None, **attrs) -> onnx.NodeProto:
        if name is None:
            name = "" if self.rng.random() < self.unnamed_rate else self.fresh(op)
        if not name:
            self.features["unnamed_nodes"] += 1
        node = helper.make_node(op, list(inputs), list(outputs), name=name or None,
                                domain=domain or None, doc_string=self.doc() or None)
        for key, value in attrs.items():
            node.attribute.append(value if isinstance(value, AttributeProto)
                                  else helper.make_attribute(key, value))
        for attr in node.attribute:
            attr_doc = self.doc() if self.rng.random() < 0.2 else ""
            if attr_doc:
                attr.doc_string = attr_doc
        if "" in node.input:
            self.features["empty_optional_inputs"] += 1
        if "" in node.output:
            self.features["omitted_optional_outputs"] += 1
        (self.nodes if into is None else into).append(node)
        self.features[f"op:{domain or 'ai.onnx'}"] += 1
        return node

    def init(self, tensor: TensorProto) -> str:
        doc = self.doc()
        if doc:
            tensor.doc_string = doc
        self.inits.append(tensor)
        return tensor.name

    def const(self, base: str, arr: np.ndarray, dtype: int, raw: Optional[bool] = None) -> str:
        raw = self.rng.random() < 0.5 if raw is None else raw
        return self.init(make_tensor(self.fresh(base), arr, dtype, raw))

    def graph_input(self, name: str, elem: int, shape, doc: bool = True) -> str:
        vi = helper.make_tensor_value_info(name, elem, shape)
        if doc:
            vi.doc_string = self.doc()
        self.inputs.append(vi)
        return name

    def graph_output(self, name: str, elem: int, shape) -> None:
        vi = helper.make_tensor_value_info(name, elem, shape)
        vi.doc_string = self.doc()
        self.outputs.append(vi)

    # Assembly --------------------------------------------------------------
    def build(self) -> onnx.ModelProto:
        inputs = list(self.inputs)
        if self.inits_as_inputs:
            known = {vi.name for vi in inputs}
            inputs += [value_info_for(t.name, t) for t in self.inits if t.name not in known]
        graph = helper.make_graph(self.nodes, self.fresh("main_graph"), inputs, self.outputs,
                                  self.inits, doc_string=self.doc() or None,
                                  value_info=self.value_info,
                                  sparse_initializer=self.sparse_inits or None)
        opsets = [helper.make_opsetid(d, v) for d, v in self.domains.items()]
        self.rng.shuffle(opsets)
        for d, v in self.domains.items():
            if d not in ("", ML_DOMAIN, TRAINING_DOMAIN):
                self.features[f"domain:{d}"] += 1
        ir = max(self.min_ir, helper.find_min_ir_version_for(
            [o for o in opsets if o.domain in ("", ML_DOMAIN, TRAINING_DOMAIN)]))
        model = helper.make_model(graph, opset_imports=opsets, functions=self.functions or None,
                                  ir_version=ir)
        model.producer_name = self.rng.choice(["amp-mlir-gen", "pytorch", "onnxruntime", ""])
        model.producer_version = self.rng.choice(["", "1.0", "2.5.1+cu121"])
        if self.rng.random() < 0.3:
            model.domain = "org.amp.models"
            model.model_version = self.rng.randint(1, 1 << 40)
        model.doc_string = self.doc()
        if self.rng.random() < 0.5:
            entries = [("author", "gen_varied_models"), ("index", str(self.index)),
                       ("note", self.rng.choice(DOC_STRINGS)), ("empty", "")]
            onnx.helper.set_model_props(model, dict(entries[: self.rng.randint(1, 4)]))
            self.features["metadata_props"] += 1
        self.features[f"opset:{self.opset}"] += 1
        self.features[f"ir:{ir}"] += 1
        return model


# --------------------------------------------------------------------------
# Blocks. Each adds a self-contained piece with its own inputs and outputs.
# --------------------------------------------------------------------------


def _storage_choice(b: Builder, dtype: int) -> bool:
    """raw_data or the typed field; alternates per model so that every type
    is seen in both storages."""
    return dtype != T.STRING and (b.index // len(BLOCKS) + dtype + b.counter) % 2 == 0


def block_tensor_zoo(b: Builder) -> None:
    """Initializers of many element types, raw and typed, scalar and empty."""
    rng = b.rng
    allowed = [d for d, ir in DTYPE_IR.items()
               if ir <= 4 or b.opset >= 19 and (ir <= 10 or b.opset == NEWEST_OPSET)]
    if b.inits_as_inputs:
        allowed = [d for d in allowed if d != T.BFLOAT16]
    shapes = [[], [0], [1], [3], [2, 3], [2, 0, 4], [1, 1, 5], [4, 3]]
    for dtype in rng.sample(allowed, rng.randint(4, len(allowed))):
        shape = rng.choice(shapes)
        raw = _storage_choice(b, dtype)
        b.need_ir(DTYPE_IR[dtype])
        arr = random_array(rng, dtype, shape)
        name = b.const(f"w_{helper.tensor_dtype_to_string(dtype)[12:].lower()}", arr, dtype, raw)
        b.features[f"dtype:{helper.tensor_dtype_to_string(dtype)[12:]}:{'raw' if raw else 'typed'}"] += 1
        b.features["scalar_tensors" if not shape else "empty_tensors" if 0 in shape else "tensors"] += 1
        if identity_supports(dtype, b.opset) and rng.random() < 0.8:
            out = b.fresh("zoo_out")
            b.node("Identity", [name], [out])
            b.graph_output(out, dtype, shape)
        else:
            b.features["unused_initializers"] += 1
    if not b.outputs:
        name = b.const("w_float", random_array(rng, T.FLOAT, [2]), T.FLOAT)
        out = b.fresh("zoo_out")
        b.node("Identity", [name], [out])
        b.graph_output(out, T.FLOAT, [2])


def block_sparse(b: Builder) -> None:
    """Sparse initializers (linear and coordinate indices) and a Constant
    with a sparse_value attribute."""
    rng = b.rng
    b.need_ir(6)
    for _ in range(rng.randint(1, 3)):
        dtype = rng.choice([T.FLOAT, T.INT64, T.FLOAT16, T.INT32, T.DOUBLE])
        dense_shape = rng.choice([[6], [3, 4], [2, 3, 2]])
        sparse = _random_sparse(b, dtype, dense_shape, coordinate=rng.random() < 0.5)
        b.sparse_inits.append(sparse)
        b.features["sparse_initializers"] += 1
        if rng.random() < 0.5:
            # The checker types a sparse initializer as sparse_tensor, which
            # no standard op accepts: an unknown-domain op reads it.
            b.use_domain(CUSTOM_DOMAIN, 1)
            out = b.fresh("densified")
            b.node("Densify", [sparse.values.name], [out], domain=CUSTOM_DOMAIN)
            b.graph_output(out, dtype, dense_shape)
    sparse = _random_sparse(b, T.FLOAT, [5], coordinate=False, name=b.fresh("sv"))
    out = b.fresh("sparse_const")
    b.node("Constant", [], [out], sparse_value=sparse)
    b.graph_output(out, T.FLOAT, [5])
    b.features["attr:sparse_tensor"] += 1


def _random_sparse(b: Builder, dtype: int, dense_shape, coordinate: bool,
                   name: Optional[str] = None) -> onnx.SparseTensorProto:
    rng = b.rng
    total = int(np.prod(dense_shape))
    nnz = rng.randint(0, min(total, 4))
    linear = sorted(rng.sample(range(total), nnz))
    values = make_tensor(name or b.fresh("sparse"), random_array(rng, dtype, [nnz]), dtype,
                         _storage_choice(b, dtype))
    if coordinate and len(dense_shape) > 1:
        coords = np.array(np.unravel_index(np.array(linear, dtype=np.intp), dense_shape), dtype=np.int64).T.reshape(nnz, len(dense_shape))
        indices = make_tensor("", coords, T.INT64, rng.random() < 0.5)
    else:
        indices = make_tensor("", np.array(linear, dtype=np.int64), T.INT64, rng.random() < 0.5)
    return helper.make_sparse_tensor(values, indices, dense_shape)


def block_symbolic_inputs(b: Builder) -> None:
    """Graph inputs with symbolic, unknown and denoted dims; value_info."""
    rng = b.rng
    x = b.graph_input(b.fresh("x_sym"), T.FLOAT, ["batch", 4])
    y = b.graph_input(b.fresh("y_unknown"), T.FLOAT, [None, 4])
    s = b.graph_input(b.fresh("s_scalar"), T.FLOAT, [])
    b.inputs[-3].type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    if rng.random() < 0.5:
        b.inputs[-3].type.denotation = "TENSOR"
    b.features["symbolic_dims"] += 1
    b.features["unknown_dims"] += 1
    b.features["scalar_inputs"] += 1
    t1 = b.fresh("sum")
    b.node("Add", [x, y], [t1])
    t2 = b.fresh("scaled")
    b.node("Mul", [t1, s], [t2])
    if rng.random() < 0.7:
        vi = helper.make_tensor_value_info(t1, T.FLOAT, ["batch", 4] if rng.random() < 0.5 else None)
        vi.doc_string = b.doc()
        b.value_info.append(vi)
        b.features["value_info"] += 1
    b.graph_output(t2, T.FLOAT, ["batch", 4])
    if rng.random() < 0.3:
        # An unranked graph input: allowed by the IR, refused by the checker.
        u = b.graph_input(b.fresh("unranked"), T.FLOAT, None)
        b.unranked.append(u)
        out = b.fresh("unranked_out")
        b.node("Relu", [u], [out])
        b.graph_output(out, T.FLOAT, [None])
        b.outputs[-1].type.tensor_type.ClearField("shape")
        b.unranked.append(out)
        b.features["unranked_graph_inputs"] += 1
    if b.min_ir >= 8 or b.opset >= 13:
        b.need_ir(8)
        sp = helper.make_sparse_tensor_value_info(b.fresh("sparse_in"), T.FLOAT, [3, "n"])
        b.inputs.append(sp)
        b.features["sparse_tensor_type"] += 1


def block_seq_opt_map(b: Builder) -> None:
    """seq(tensor), optional(...) and map(...) typed values."""
    rng = b.rng
    s = b.fresh("seq_in")
    b.inputs.append(helper.make_tensor_sequence_value_info(s, T.FLOAT, ["n"]))
    n = b.fresh("seq_len")
    b.node("SequenceLength", [s], [n])
    b.graph_output(n, T.INT64, [])
    idx = b.const("seq_index", np.array(0, dtype=np.int64), T.INT64)
    e = b.fresh("seq_elem")
    b.node("SequenceAt", [s, idx], [e])
    b.graph_output(e, T.FLOAT, ["n"])
    a = b.const("seq_part", random_array(rng, T.FLOAT, [2]), T.FLOAT)
    built = b.fresh("seq_built")
    b.node("SequenceConstruct", [a, a], [built])
    b.outputs.append(helper.make_tensor_sequence_value_info(built, T.FLOAT, [2]))
    cat = b.fresh("seq_cat")
    b.node("ConcatFromSequence", [built], [cat], axis=0)
    b.graph_output(cat, T.FLOAT, [4])
    b.features["seq_types"] += 1
    if b.opset >= 15:
        b.need_ir(8)
        elem = helper.make_tensor_type_proto(T.FLOAT, [3])
        o = b.fresh("opt_in")
        b.inputs.append(helper.make_value_info(o, helper.make_optional_type_proto(elem)))
        has = b.fresh("opt_has")
        b.node("OptionalHasElement", [o], [has])
        b.graph_output(has, T.BOOL, [])
        got = b.fresh("opt_get")
        b.node("OptionalGetElement", [o], [got])
        b.graph_output(got, T.FLOAT, [3])
        so = b.fresh("opt_seq_in")
        seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.INT64, None))
        b.inputs.append(helper.make_value_info(so, helper.make_optional_type_proto(seq_type)))
        has2 = b.fresh("opt_seq_has")
        b.node("OptionalHasElement", [so], [has2])
        b.graph_output(has2, T.BOOL, [])
        wrapped = b.fresh("opt_made")
        b.node("Optional", [a], [wrapped])
        b.outputs.append(helper.make_value_info(
            wrapped, helper.make_optional_type_proto(helper.make_tensor_type_proto(T.FLOAT, [2]))))
        empty = b.fresh("opt_empty")
        b.node("Optional", [], [empty], type=helper.make_tensor_type_proto(T.INT32, None))
        b.outputs.append(helper.make_value_info(
            empty, helper.make_optional_type_proto(helper.make_tensor_type_proto(T.INT32, None))))
        b.features["optional_types"] += 1
        b.features["attr:type_proto"] += 1
    b.use_domain(ML_DOMAIN, 1)
    m = b.fresh("map_in")
    b.inputs.append(helper.make_value_info(
        m, helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, None))))
    dense = b.fresh("map_dense")
    b.node("CastMap", [m], [dense], domain=ML_DOMAIN, cast_to="TO_FLOAT", map_form="SPARSE",
           max_map=3)
    b.graph_output(dense, T.FLOAT, [1, 3])
    probs = b.fresh("probs")
    b.inputs.append(helper.make_tensor_value_info(probs, T.FLOAT, [None, 3]))
    zipped = b.fresh("zipped")
    b.node("ZipMap", [probs], [zipped], domain=ML_DOMAIN, classlabels_int64s=[3, 1, 4])
    b.outputs.append(helper.make_value_info(zipped, helper.make_sequence_type_proto(
        helper.make_map_type_proto(T.INT64, helper.make_tensor_type_proto(T.FLOAT, [])))))
    b.features["map_types"] += 1


def _subgraph(b: Builder, nodes, inputs, outputs, inits=(), doc=True) -> onnx.GraphProto:
    graph = helper.make_graph(nodes, b.fresh("sub"), inputs, outputs, list(inits),
                              doc_string=(b.doc() if doc else "") or None)
    b.features["subgraphs"] += 1
    return graph


def _maybe_untyped(b: Builder, vi: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    # Subgraph outputs may leave their type to inference.
    if b.rng.random() < 0.3:
        return helper.make_empty_tensor_value_info(vi.name)
    return vi


def _if_node(b: Builder, cond: str, outer: str, shape, depth: int, into: list) -> str:
    """An If whose branches read `outer` from the enclosing scope; branches
    may hold their own initializers and a nested If."""
    rng = b.rng
    then_nodes: list = []
    t_out = b.fresh("then_out")
    if depth > 0 and rng.random() < 0.6:
        inner = _if_node(b, cond, outer, shape, depth - 1, then_nodes)
        b.node("Relu", [inner], [t_out], into=then_nodes)
        b.features["nested_subgraphs"] += 1
    else:
        b.node("Relu", [outer], [t_out], into=then_nodes)
    else_nodes: list = []
    e_out = b.fresh("else_out")
    bias = make_tensor(b.fresh("else_bias"), random_array(rng, T.FLOAT, [1]), T.FLOAT,
                       rng.random() < 0.5)
    branch_inits = [bias]
    if b.inits_as_inputs:  # IR 3 allows no initializer a subgraph cannot list as input
        b.node("Constant", [], [bias.name], into=else_nodes, value=bias)
        branch_inits = []
    b.node("Add", [outer, bias.name], [e_out], into=else_nodes)
    then_g = _subgraph(b, then_nodes, [], [_maybe_untyped(b, helper.make_tensor_value_info(
        t_out, T.FLOAT, shape))])
    else_g = _subgraph(b, else_nodes, [], [_maybe_untyped(b, helper.make_tensor_value_info(
        e_out, T.FLOAT, shape))], inits=branch_inits)
    out = b.fresh("if_out")
    b.node("If", [cond], [out], then_branch=then_g, else_branch=else_g, into=into)
    b.features["control_flow:If"] += 1
    b.features["outer_scope_refs"] += 1
    return out


def block_if(b: Builder) -> None:
    x = b.graph_input(b.fresh("if_x"), T.FLOAT, [2, 3])
    cond = b.graph_input(b.fresh("if_cond"), T.BOOL, [])
    out = _if_node(b, cond, x, [2, 3], depth=b.rng.randint(0, 2), into=b.nodes)
    b.graph_output(out, T.FLOAT, [2, 3])


def block_loop(b: Builder) -> None:
    """Loop with loop-carried state, a scan output, an outer-scope read and,
    in some models, an empty optional trip count or condition."""
    rng = b.rng
    w = b.const("loop_w", random_array(rng, T.FLOAT, [2]), T.FLOAT)
    v0 = b.graph_input(b.fresh("loop_v0"), T.FLOAT, [2])
    it, c_in, v_in = b.fresh("iter"), b.fresh("cond_in"), b.fresh("v_in")
    c_out, v_out, scan = b.fresh("cond_out"), b.fresh("v_out"), b.fresh("scan_out")
    body: list = []
    b.node("Add", [v_in, w], [v_out], into=body)
    b.node("Identity", [c_in], [c_out], into=body)
    if rng.random() < 0.4:
        inner = _if_node(b, c_in, v_out, [2], 0, body)
        b.node("Identity", [inner], [scan], into=body)
        b.features["nested_subgraphs"] += 1
    else:
        b.node("Identity", [v_out], [scan], into=body)
    body_g = _subgraph(b, body,
                       [helper.make_tensor_value_info(it, T.INT64, []),
                        helper.make_tensor_value_info(c_in, T.BOOL, []),
                        helper.make_tensor_value_info(v_in, T.FLOAT, [2])],
                       [helper.make_tensor_value_info(c_out, T.BOOL, []),
                        helper.make_tensor_value_info(v_out, T.FLOAT, [2]),
                        _maybe_untyped(b, helper.make_tensor_value_info(scan, T.FLOAT, [2]))])
    if rng.random() < 0.3 and b.opset >= 11:
        body_g.input[1].type.tensor_type.ClearField("shape")  # unranked subgraph input
    mode = rng.choice(["both", "no_trip", "no_cond"])
    trip = "" if mode == "no_trip" else b.const("trip", np.array(3, dtype=np.int64), T.INT64)
    cond = "" if mode == "no_cond" else b.const("keep_going", np.array(True), T.BOOL)
    final, scans = b.fresh("loop_final"), b.fresh("loop_scans")
    b.node("Loop", [trip, cond, v0], [final, scans], body=body_g)
    b.graph_output(final, T.FLOAT, [2])
    b.graph_output(scans, T.FLOAT, [None, 2])
    b.features["control_flow:Loop"] += 1
    b.features["outer_scope_refs"] += 1


def block_scan(b: Builder) -> None:
    rng = b.rng
    s0 = b.graph_input(b.fresh("scan_s0"), T.FLOAT, [2])
    xs = b.graph_input(b.fresh("scan_xs"), T.FLOAT, [5, 2])
    s_in, x_in, s_out, y = b.fresh("s_in"), b.fresh("x_in"), b.fresh("s_out"), b.fresh("y")
    body: list = []
    b.node("Add", [s_in, x_in], [s_out], into=body)
    b.node("Identity", [s_out], [y], into=body)
    body_g = _subgraph(b, body, [helper.make_tensor_value_info(s_in, T.FLOAT, [2]),
                                 helper.make_tensor_value_info(x_in, T.FLOAT, [2])],
                       [helper.make_tensor_value_info(s_out, T.FLOAT, [2]),
                        helper.make_tensor_value_info(y, T.FLOAT, [2])])
    final, ys = b.fresh("scan_final"), b.fresh("scan_ys")
    attrs = {"num_scan_inputs": 1}
    if rng.random() < 0.6:
        attrs["scan_input_directions"] = [rng.randint(0, 1)]
        attrs["scan_output_axes"] = [0]
    b.node("Scan", [s0, xs], [final, ys], body=body_g, **attrs)
    b.graph_output(final, T.FLOAT, [2])
    b.graph_output(ys, T.FLOAT, [5, 2])
    b.features["control_flow:Scan"] += 1


def block_functions(b: Builder) -> None:
    """Model-local functions with attributes, defaults (attribute_proto),
    ref_attr_name references, and one function calling another."""
    rng = b.rng
    # IR 8 has local functions but no attribute defaults (attribute_proto).
    defaults = b.opset >= 18 or rng.random() < 0.5
    b.need_ir(9 if defaults else 8)
    b.use_domain(FN_DOMAIN, 1)
    fn_opsets = [helper.make_opsetid("", b.opset), helper.make_opsetid(FN_DOMAIN, 1)]
    alpha_ref = AttributeProto(name="alpha", ref_attr_name="alpha", type=AttributeProto.FLOAT)
    beta_ref = AttributeProto(name="value_float", ref_attr_name="beta", type=AttributeProto.FLOAT)
    inner_nodes = [
        helper.make_node("LeakyRelu", ["X"], ["T"], name="leaky"),
        helper.make_node("Constant", [], ["B"], name="" if rng.random() < 0.5 else "beta_const"),
        helper.make_node("Mul", ["T", "B"], ["Y"]),
    ]
    inner_nodes[0].attribute.append(alpha_ref)
    inner_nodes[1].attribute.append(beta_ref)
    inner = helper.make_function(FN_DOMAIN, "ScaledLeaky", ["X"], ["Y"], inner_nodes, fn_opsets,
                                 attributes=["alpha"] if defaults else ["alpha", "beta"],
                                 attribute_protos=[helper.make_attribute("beta", 2.0)]
                                 if defaults else None,
                                 doc_string=b.doc() or None)
    pass_ref = AttributeProto(name="alpha", ref_attr_name="slope", type=AttributeProto.FLOAT)
    perm_ref = AttributeProto(name="perm", ref_attr_name="perm", type=AttributeProto.INTS)
    outer_nodes = [
        helper.make_node("ScaledLeaky", ["A"], ["L"], domain=FN_DOMAIN, name="call_inner"),
        helper.make_node("Transpose", ["L"], ["Tr"], name="tr"),
        helper.make_node("Add", ["Tr", "Z"], ["O"], name="add"),
    ]
    outer_nodes[0].attribute.append(pass_ref)
    if not defaults:
        outer_nodes[0].attribute.append(helper.make_attribute("beta", 1.5))
    outer_nodes[1].attribute.append(perm_ref)
    outer = helper.make_function(FN_DOMAIN, "LeakyTransposeAdd", ["A", "Z"], ["O"], outer_nodes,
                                 fn_opsets, attributes=["slope"] if defaults else ["slope", "perm"],
                                 attribute_protos=[helper.make_attribute("perm", [1, 0]),
                                                   helper.make_attribute("tag", "fn-default")]
                                 if defaults else None,
                                 doc_string=b.doc() or None)
    b.functions += [inner, outer]
    x = b.graph_input(b.fresh("fn_x"), T.FLOAT, [2, 3])
    z = b.graph_input(b.fresh("fn_z"), T.FLOAT, [3, 2])
    y1 = b.fresh("fn_y1")
    attrs = {"alpha": 0.25}
    if rng.random() < 0.5 or not defaults:
        attrs["beta"] = 0.5
    b.node("ScaledLeaky", [x], [y1], domain=FN_DOMAIN, **attrs)
    b.graph_output(y1, T.FLOAT, [2, 3])
    y2 = b.fresh("fn_y2")
    outer_attrs = {"slope": 0.1} if defaults else {"slope": 0.1, "perm": [1, 0]}
    b.node("LeakyTransposeAdd", [x, z], [y2], domain=FN_DOMAIN, **outer_attrs)
    b.graph_output(y2, T.FLOAT, [3, 2])
    b.features["functions"] += 2
    b.features["ref_attr_name"] += 3


def block_training(b: Builder) -> None:
    """Forward + backward with com.microsoft gradient ops, an accumulator,
    a preview-training optimizer and an op from an unknown domain."""
    rng = b.rng
    b.use_domain(MS_DOMAIN, 1)
    x = b.graph_input(b.fresh("input"), T.FLOAT, ["batch", 4])
    labels = b.graph_input(b.fresh("labels"), T.INT64, ["batch"])
    w = b.const("fc.weight", random_array(rng, T.FLOAT, [3, 4]), T.FLOAT)
    bias = b.const("fc.bias", random_array(rng, T.FLOAT, [3]), T.FLOAT)
    logits, act = b.fresh("logits"), b.fresh("act")
    b.node("Gemm", [x, w, bias], [logits], transB=1)
    b.node("Relu", [logits], [act])
    loss, log_prob = b.fresh("loss"), b.fresh("log_prob")
    b.node("SoftmaxCrossEntropyLoss", [act, labels], [loss, log_prob], reduction="mean")
    seed = b.const("loss_grad", np.array(1.0, dtype=np.float32), T.FLOAT)
    d_act, d_logits, d_w = b.fresh("act_grad"), b.fresh("logits_grad"), b.fresh("fc.weight_grad")
    b.node("SoftmaxCrossEntropyLossGrad", [seed, log_prob, labels], [d_act], domain=MS_DOMAIN,
           reduction="mean")
    b.node("ReluGrad", [d_act, act], [d_logits], domain=MS_DOMAIN)
    b.node("Gemm", [d_logits, x], [d_w], transA=1)
    buf = b.graph_input(b.fresh("fc.weight_grad.accumulation.buffer"), T.FLOAT, [3, 4])
    reset = b.graph_input(b.fresh("lazy_reset_grad"), T.BOOL, [1])
    flag, buf_out = b.fresh("fc.weight_grad.accumulation.out"), b.fresh("buffer_out")
    b.node("InPlaceAccumulatorV2", [buf, d_w, reset], [flag, buf_out], domain=MS_DOMAIN)
    b.graph_output(loss, T.FLOAT, [])
    b.graph_output(flag, T.BOOL, [1])
    b.graph_output(buf_out, T.FLOAT, [3, 4])
    if rng.random() < 0.5:
        yielded = b.fresh("yield_grad")
        b.node("YieldOp", [loss], [yielded], domain=MS_DOMAIN, non_differentiable_outputs=[0],
               full_shape_outputs=[0])
        b.graph_output(yielded, T.FLOAT, [])
    if rng.random() < 0.5:
        b.use_domain(TRAINING_DOMAIN, 1)
        r = b.const("lr", np.array(0.01, dtype=np.float32), T.FLOAT)
        step = b.const("step", np.array(3, dtype=np.int64), T.INT64)
        h = b.graph_input(b.fresh("adagrad_h"), T.FLOAT, [3, 4])
        w_new, h_new = b.fresh("w_new"), b.fresh("h_new")
        b.node("Adagrad", [r, step, w, d_w, h], [w_new, h_new], domain=TRAINING_DOMAIN,
               decay_factor=0.1, epsilon=1e-6, norm_coefficient=0.001)
        b.graph_output(w_new, T.FLOAT, [3, 4])
        b.graph_output(h_new, T.FLOAT, [3, 4])
    b.use_domain(CUSTOM_DOMAIN, 2)
    mystery = b.fresh("mystery")
    b.node("MysteryOp", [act, ""], [mystery, ""], domain=CUSTOM_DOMAIN, level=3)
    b.graph_output(mystery, T.FLOAT16, ["batch", 3, "mystery_dim"])
    b.features["training_ops"] += 1


def block_attribute_zoo(b: Builder) -> None:
    """Every attribute kind, on an unknown-domain op and on real ops."""
    rng = b.rng
    b.use_domain(CUSTOM_DOMAIN, 1)
    b.need_ir(8)
    x = b.graph_input(b.fresh("attr_x"), T.FLOAT, [2, 2])
    sub_out = b.fresh("g_out")
    sub_nodes: list = []
    b.node("Neg", [x], [sub_out], into=sub_nodes)  # outer-scope read
    body = _subgraph(b, sub_nodes, [], [helper.make_tensor_value_info(sub_out, T.FLOAT, [2, 2])])
    tensor = make_tensor(b.fresh("attr_t"), random_array(rng, T.INT32, [3]), T.INT32,
                         rng.random() < 0.5)
    tensor2 = make_tensor(b.fresh("attr_t2"), random_array(rng, T.STRING, [2]), T.STRING, False)
    sparse = _random_sparse(b, T.FLOAT, [4], False, name=b.fresh("attr_sp"))
    tp = helper.make_tensor_type_proto(T.FLOAT16, ["n", 2])
    attrs: Dict[str, object] = {
        "f": float(np.float32(rng.uniform(-3, 3))), "f_nan": float("nan"), "f_negzero": -0.0,
        "i": rng.randint(-(1 << 62), 1 << 62), "s": "strïng\nwith newline",
        "s_bytes": b"\x00\xffraw", "t": tensor, "g": body,
        "floats": [1.5, float("inf"), -0.0], "ints": [0, -1, 1 << 40],
        "strings": ["a", "", "ü"], "tensors": [tensor2],
        "graphs": [_subgraph(b, [], [], [], doc=False)],
        "sparse_tensor": sparse, "type_proto": tp,
        "type_protos": [tp, helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.INT8, None))],
        "sparse_tensors": [sparse],
    }
    node = b.node("KitchenSink", [x], [b.fresh("sink_out")], domain=CUSTOM_DOMAIN, **attrs)
    for kind, kname in ((AttributeProto.FLOATS, "empty_floats"), (AttributeProto.INTS, "empty_ints"),
                        (AttributeProto.STRINGS, "empty_strings"),
                        (AttributeProto.TENSORS, "empty_tensors"),
                        (AttributeProto.GRAPHS, "empty_graphs"),
                        (AttributeProto.TYPE_PROTOS, "empty_type_protos"),
                        (AttributeProto.SPARSE_TENSORS, "empty_sparse_tensors")):
        node.attribute.append(AttributeProto(name=kname, type=kind))
    b.graph_output(node.output[0], T.FLOAT, [2, 2])
    for kind in ("float", "int", "string", "tensor", "graph", "floats", "ints", "strings",
                 "tensors", "graphs", "sparse_tensor", "sparse_tensors", "type_proto",
                 "type_protos", "empty_lists"):
        b.features[f"attr:{kind}"] += 1
    # Real ops: Constant in each of its forms available at this opset.
    forms = [("value", make_tensor("", random_array(rng, T.FLOAT, [2]), T.FLOAT, rng.random() < 0.5),
              T.FLOAT, [2])]
    if b.opset >= 12:
        forms += [("value_float", 0.5, T.FLOAT, []), ("value_floats", [1.0, 2.0], T.FLOAT, [2]),
                  ("value_int", 7, T.INT64, []), ("value_ints", [1, 2, 3], T.INT64, [3]),
                  ("value_string", "s", T.STRING, []), ("value_strings", ["p", "q"], T.STRING, [2])]
    for key, value, dtype, shape in rng.sample(forms, min(3, len(forms))):
        out = b.fresh("const")
        b.node("Constant", [], [out], **{key: value})
        b.graph_output(out, dtype, shape)
    cast = b.fresh("cast")
    cast_attrs = {"to": T.FLOAT16}
    if b.opset >= 19:
        cast_attrs["saturate"] = 0
    b.node("Cast", [x], [cast], **cast_attrs)
    b.graph_output(cast, T.FLOAT16, [2, 2])
    if b.opset >= 9:
        fill = b.fresh("filled")
        shape_t = b.const("fill_shape", np.array([2, 2], dtype=np.int64), T.INT64)
        b.node("ConstantOfShape", [shape_t], [fill],
               value=make_tensor("", np.array([3], dtype=np.int32), T.INT32, rng.random() < 0.5))
        b.graph_output(fill, T.INT32, [2, 2])
    gemm = b.fresh("gemm")
    b.node("Gemm", [x, x], [gemm], alpha=0.5, beta=2.0, transA=1, transB=0)
    b.graph_output(gemm, T.FLOAT, [2, 2])


def block_optional_io(b: Builder) -> None:
    """Empty optional inputs in the middle and omitted optional outputs."""
    rng = b.rng
    x = b.graph_input(b.fresh("opt_x"), T.FLOAT, [1, 2, 4, 4])
    options: List[Callable[[], None]] = []

    def clip():
        hi = b.const("clip_max", np.array(0.5, dtype=np.float32), T.FLOAT)
        y = b.fresh("clipped")
        b.node("Clip", [x, "", hi], [y])
        b.graph_output(y, T.FLOAT, [1, 2, 4, 4])

    def resize():
        scales = b.const("scales", np.array([1, 1, 2, 2], dtype=np.float32), T.FLOAT)
        y = b.fresh("resized")
        b.node("Resize", [x, "", scales], [y], mode="nearest")
        b.graph_output(y, T.FLOAT, [1, 2, 8, 8])

    def dropout():
        mode = b.const("training_mode", np.array(False), T.BOOL)
        y = b.fresh("dropped")
        b.node("Dropout", [x, "", mode], [y])
        b.graph_output(y, T.FLOAT, [1, 2, 4, 4])

    def layer_norm():
        scale = b.const("ln_scale", random_array(rng, T.FLOAT, [4]), T.FLOAT)
        y, inv = b.fresh("ln_y"), b.fresh("ln_inv_std")
        b.node("LayerNormalization", [x, scale], [y, "", inv], axis=-1, epsilon=1e-5)
        b.graph_output(y, T.FLOAT, [1, 2, 4, 4])
        b.graph_output(inv, T.FLOAT, [1, 2, 4, 1])

    def lstm():
        seq = b.graph_input(b.fresh("lstm_x"), T.FLOAT, [3, 1, 2])
        w = b.const("lstm_w", random_array(rng, T.FLOAT, [1, 16, 2]), T.FLOAT)
        r = b.const("lstm_r", random_array(rng, T.FLOAT, [1, 16, 4]), T.FLOAT)
        h0 = b.const("lstm_h0", np.zeros([1, 1, 4], dtype=np.float32), T.FLOAT)
        y_h = b.fresh("lstm_y_h")
        b.node("LSTM", [seq, w, r, "", "", h0], ["", y_h], hidden_size=4)
        b.graph_output(y_h, T.FLOAT, [1, 1, 4])

    def maxpool():
        y = b.fresh("pooled")
        b.node("MaxPool", [x], [y], kernel_shape=[2, 2], strides=[2, 2])
        b.graph_output(y, T.FLOAT, [1, 2, 2, 2])

    def pad():
        pads = b.const("pads", np.array([1, 1, 1, 1], dtype=np.int64), T.INT64)
        axes = b.const("pad_axes", np.array([2, 3], dtype=np.int64), T.INT64)
        y = b.fresh("padded")
        b.node("Pad", [x, pads, "", axes], [y], mode="reflect")
        b.graph_output(y, T.FLOAT, [1, 2, 6, 6])

    options += [lstm, maxpool]
    if b.opset >= 11:
        options.append(clip)
    if b.opset >= 13:
        options += [resize, dropout]
    if b.opset >= 17:
        options.append(layer_norm)
    if b.opset >= 18:
        options.append(pad)
    for fn in rng.sample(options, min(len(options), rng.randint(2, 4))):
        fn()


# Operators the random chain leaves out: control flow and ops whose
# attributes or inputs need content the sampler cannot invent.
CHAIN_SKIP = {"If", "Loop", "Scan", "SequenceMap", "Constant", "ConstantOfShape", "Range",
              "RandomNormal", "RandomUniform", "EyeLike", "Multinomial", "RandomNormalLike",
              "RandomUniformLike", "Bernoulli", "StringNormalizer", "TfIdfVectorizer",
              "RegexFullMatch", "StringSplit", "StringConcat", "Upsample", "Resize",
              "Col2Im", "CenterCropPad", "Optional", "Attention", "RotaryEmbedding",
              "TensorScatter", "RMSNormalization",
              # onnx's inference does not check their label shapes
              "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}
SHAPES = [[2, 3], [3], [2, 3, 4], [1, 3, 4, 4], [], [3, 3]]
CHAIN_ELEMS = [T.FLOAT, T.FLOAT, T.FLOAT, T.INT64, T.INT32, T.FLOAT16, T.DOUBLE, T.BOOL, T.UINT8]


def _type_str(tp: TypeProto) -> Optional[str]:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        if not tp.tensor_type.elem_type:
            return None
        return f"tensor({helper.tensor_dtype_to_string(tp.tensor_type.elem_type)[12:].lower()})"
    if kind == "sequence_type":
        inner = _type_str(tp.sequence_type.elem_type)
        return f"seq({inner})" if inner else None
    if kind == "optional_type":
        inner = _type_str(tp.optional_type.elem_type)
        return f"optional({inner})" if inner else None
    return None


def _elem_from_str(type_str: str) -> Optional[int]:
    if not type_str.startswith("tensor("):
        return None
    name = type_str[7:-1].upper()
    return getattr(T, name, None) if name != "STRING" else T.STRING


_SCHEMAS_BY_OPSET: Dict[int, list] = {}


def chain_schemas(opset: int) -> list:
    if opset not in _SCHEMAS_BY_OPSET:
        latest: Dict[str, onnx.defs.OpSchema] = {}
        for s in onnx.defs.get_all_schemas_with_history():
            if s.domain != "" or s.since_version > opset or s.name in CHAIN_SKIP:
                continue
            if s.name not in latest or latest[s.name].since_version < s.since_version:
                latest[s.name] = s
        usable = []
        for s in sorted(latest.values(), key=lambda s: s.name):
            if s.deprecated:
                continue
            if any(a.required and a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS,
                                             AttributeProto.STRING, AttributeProto.STRINGS,
                                             AttributeProto.SPARSE_TENSOR)
                   for a in s.attributes.values()):
                continue
            usable.append(s)
        _SCHEMAS_BY_OPSET[opset] = usable
    return _SCHEMAS_BY_OPSET[opset]


def _required_attr(b: Builder, attr) -> Optional[AttributeProto]:
    rng = b.rng
    kind = attr.type
    if kind == AttributeProto.INT:
        if attr.name == "to":
            return helper.make_attribute(attr.name, rng.choice([T.FLOAT, T.INT64, T.FLOAT16, T.INT32]))
        return helper.make_attribute(attr.name, rng.choice([1, 1, 3]))
    if kind == AttributeProto.INTS:
        return helper.make_attribute(attr.name, rng.choice([[0], [1], [1, 1], [2, 2]]))
    if kind == AttributeProto.FLOAT:
        return helper.make_attribute(attr.name, rng.choice([0.5, 1.0, 1e-3]))
    if kind == AttributeProto.FLOATS:
        return helper.make_attribute(attr.name, [1.0])
    if kind == AttributeProto.TENSOR:
        return helper.make_attribute(attr.name, make_tensor("", np.array([1.0], dtype=np.float32),
                                                            T.FLOAT, True))
    return None


def _infer(model: onnx.ModelProto) -> Optional[onnx.ModelProto]:
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    except Exception:
        return None


def block_random_chain(b: Builder) -> None:
    """A chain of real ONNX operators sampled from the schemas of this opset.
    Each candidate node is kept only if strict type and shape inference
    accepts it; attributes are explicit defaults or simple values."""
    rng = b.rng
    schemas = chain_schemas(b.opset)
    pool: Dict[str, TypeProto] = {}
    local_inits: List[TensorProto] = []
    local_inputs: List[onnx.ValueInfoProto] = []
    for _ in range(rng.randint(1, 3)):
        elem = rng.choice(CHAIN_ELEMS[:3] + [T.INT64])
        shape = rng.choice(SHAPES[:4])
        vi = helper.make_tensor_value_info(b.fresh("chain_in"), elem, shape)
        local_inputs.append(vi)
        pool[vi.name] = vi.type
    nodes: List[onnx.NodeProto] = []
    produced: List[str] = []
    target = rng.randint(3, 10)
    attempts = 0
    while len(produced) < target and attempts < 60:
        attempts += 1
        schema = rng.choice(schemas)
        node, new_inits = _try_chain_node(b, schema, pool)
        if node is None:
            continue
        graph = helper.make_graph(nodes + [node], "probe", local_inputs, [],
                                  local_inits + new_inits)
        probe = helper.make_model(graph, opset_imports=[helper.make_opsetid("", b.opset)],
                                  ir_version=max(b.min_ir, 8))
        inferred = _infer(probe)
        if inferred is None:
            continue
        types = {vi.name: vi.type for vi in inferred.graph.value_info}
        if not all(o == "" or (o in types and _type_str(types[o]) and
                               _has_full_rank(types[o])) for o in node.output):
            continue
        nodes.append(node)
        local_inits += new_inits
        for t in new_inits:
            pool[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
        for o in node.output:
            if o:
                pool[o] = types[o]
                produced.append(o)
        b.features[f"chain_op:{schema.name}"] += 1
    if not produced:
        out = b.fresh("chain_out")
        nodes.append(helper.make_node("Identity", [local_inputs[0].name], [out], name=b.fresh("id")))
        pool[out] = local_inputs[0].type
        produced.append(out)
    for n in nodes:
        if b.rng.random() < b.unnamed_rate:
            n.name = ""
            b.features["unnamed_nodes"] += 1
        d = b.doc()
        if d:
            n.doc_string = d
        if "" in n.input:
            b.features["empty_optional_inputs"] += 1
        if "" in n.output:
            b.features["omitted_optional_outputs"] += 1
    b.nodes += nodes
    b.inits += local_inits
    b.inputs += local_inputs
    outs = set(rng.sample(produced, min(len(produced), rng.randint(1, 3))) + [produced[-1]])
    for name in produced:
        if name in outs:
            b.outputs.append(helper.make_value_info(name, pool[name]))
        elif rng.random() < 0.5:
            b.value_info.append(helper.make_value_info(name, pool[name]))
            b.features["value_info"] += 1
    b.features["random_chains"] += 1


def _has_full_rank(tp: TypeProto) -> bool:
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return tp.tensor_type.HasField("shape")
    return kind in ("sequence_type", "optional_type")


def _try_chain_node(b: Builder, schema, known: Dict[str, TypeProto]):
    """Returns (node, new initializers) or (None, []); `known` is not changed."""
    rng = b.rng
    pool = dict(known)
    constraints = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    bound: Dict[str, str] = {}
    inputs: List[str] = []
    new_inits: List[TensorProto] = []
    for formal in schema.inputs:
        option = formal.option
        allowed = constraints.get(formal.type_str, [formal.type_str])
        if formal.type_str in bound:
            allowed = [bound[formal.type_str]]
        if option == onnx.defs.OpSchema.FormalParameterOption.Optional and rng.random() < 0.4:
            inputs.append("")
            continue
        count = rng.randint(1, 3) if option == onnx.defs.OpSchema.FormalParameterOption.Variadic else 1
        for _ in range(count):
            candidates = [n for n, tp in pool.items() if _type_str(tp) in allowed]
            if candidates and rng.random() < 0.8:
                name = rng.choice(candidates)
            else:
                elems = [e for e in (_elem_from_str(s) for s in allowed) if e is not None
                         and e in CHAIN_ELEMS]
                if not elems:
                    return None, []
                elem = rng.choice(elems)
                shape = rng.choice(SHAPES)
                if elem == T.INT64:
                    arr = np.array(rng.choices([0, 1, 2, -1], k=int(np.prod(shape)) if shape else 1),
                                   dtype=np.int64).reshape(shape)
                else:
                    arr = random_array(rng, elem, shape)
                tensor = make_tensor(b.fresh("chain_c"), arr, elem, rng.random() < 0.5)
                new_inits.append(tensor)
                name = tensor.name
                pool_type = helper.make_tensor_type_proto(elem, shape)
                pool[name] = pool_type
            inputs.append(name)
            if formal.type_str in constraints:
                bound[formal.type_str] = _type_str(pool[name])
                if not formal.is_homogeneous:
                    bound.pop(formal.type_str, None)
    while inputs and inputs[-1] == "":
        inputs.pop()
    outputs: List[str] = []
    for formal in schema.outputs:
        option = formal.option
        if option == onnx.defs.OpSchema.FormalParameterOption.Optional and rng.random() < 0.5:
            outputs.append("")
        else:
            outputs.append(b.fresh(f"{schema.name.lower()}_out"))
            if option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
                break
    while outputs and outputs[-1] == "":
        outputs.pop()
    if not outputs:
        return None, []
    node = helper.make_node(schema.name, inputs, outputs, name=b.fresh(schema.name))
    for attr in schema.attributes.values():
        if attr.required:
            value = _required_attr(b, attr)
            if value is None:
                return None, []
            node.attribute.append(value)
        elif attr.default_value.type != AttributeProto.UNDEFINED and rng.random() < 0.3:
            value = AttributeProto()
            value.CopyFrom(attr.default_value)
            value.name = attr.name
            node.attribute.append(value)
    return node, new_inits


BLOCKS: List[Tuple[str, Callable[[Builder], None], int]] = [
    ("tensor_zoo", block_tensor_zoo, 7),
    ("random_chain", block_random_chain, 7),
    ("if", block_if, 7),
    ("loop", block_loop, 11),
    ("scan", block_scan, 9),
    ("functions", block_functions, 13),
    ("training", block_training, 13),
    ("attribute_zoo", block_attribute_zoo, 11),
    ("optional_io", block_optional_io, 7),
    ("symbolic_inputs", block_symbolic_inputs, 7),
    ("seq_opt_map", block_seq_opt_map, 11),
    ("sparse", block_sparse, 11),
]


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


class Summary:
    def __init__(self):
        self.count = 0
        self.features: collections.Counter = collections.Counter()
        self.files: List[str] = []

    def text(self) -> str:
        f = self.features
        lines = [f"generated {self.count} models"]

        def group(prefix: str, title: str) -> None:
            items = sorted((k[len(prefix):], v) for k, v in f.items() if k.startswith(prefix))
            if items:
                lines.append(f"  {title}: " + ", ".join(f"{k}={v}" for k, v in items))

        group("opset:", "opsets")
        group("ir:", "IR versions")
        group("block:", "blocks")
        group("dtype:", "initializer types (storage)")
        group("attr:", "attribute kinds")
        group("op:", "nodes per domain")
        group("control_flow:", "control flow")
        group("domain:", "extra opset domains")
        chain = [k for k in f if k.startswith("chain_op:")]
        lines.append(f"  random-chain operators: {len(chain)} distinct, "
                     f"{sum(f[k] for k in chain)} nodes")
        rest = sorted((k, v) for k, v in f.items() if ":" not in k)
        lines.append("  features: " + ", ".join(f"{k}={v}" for k, v in rest))
        return "\n".join(lines)


def build_model(index: int, seed: int) -> Tuple[onnx.ModelProto, Builder]:
    rng = random.Random(seed * 1_000_003 + index)
    primary_name, primary, min_opset = BLOCKS[index % len(BLOCKS)]
    opset = rng.choice([o for o in OPSETS if o >= min_opset])
    b = Builder(rng, opset, index)
    if opset <= 8 and rng.random() < 0.5:
        b.inits_as_inputs = True  # IR 3 style: every initializer is an input
    chosen = [(primary_name, primary)]
    extras = [(n, f) for n, f, m in BLOCKS if m <= opset and n != primary_name]
    chosen += rng.sample(extras, rng.randint(0, 2))
    if primary_name != "random_chain" and rng.random() < 0.4:
        chosen.append(("random_chain", block_random_chain))
    for name, fn in chosen:
        fn(b)
        b.features[f"block:{name}"] += 1
    if b.inits_as_inputs and (b.sparse_inits or b.min_ir > 3):
        b.inits_as_inputs = False
    if b.inits_as_inputs:
        b.features["initializers_as_inputs"] += 1
    else:
        b.need_ir(4)  # IR 3 requires every initializer to be a graph input
    return b.build(), b


def check(model: onnx.ModelProto, b: Builder, path: Optional[str] = None) -> None:
    """onnx.checker (full) + strict inference; unranked inputs get a rank in
    a copy first, since the checker insists on a shape for graph inputs."""
    probe = model
    if b.unranked:
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        for vi in list(probe.graph.input) + list(probe.graph.output):
            if vi.name in b.unranked:
                vi.type.tensor_type.shape.dim.add()
    if path is not None:
        onnx.checker.check_model(path, full_check=True)  # resolves external data
        return
    onnx.checker.check_model(probe, full_check=True)
    onnx.shape_inference.infer_shapes(probe, check_type=True, strict_mode=True)


def externalize(model: onnx.ModelProto, b: Builder, out_dir: str, stem: str) -> List[str]:
    """Moves some initializers to external files next to the model; returns
    the files written."""
    rng = b.rng
    candidates = [t for t in model.graph.initializer
                  if t.HasField("raw_data") and len(t.raw_data) >= 4]
    if not candidates:
        return []
    chosen = rng.sample(candidates, min(len(candidates), rng.randint(1, 3)))
    shared = f"{stem}.weights"
    files = []
    offset = 0
    blob = bytearray()
    for t in chosen:
        data = t.raw_data
        if rng.random() < 0.5:
            location, start = shared, offset
            pad = (-offset) % 16
            blob += b"\0" * pad
            start = offset + pad
            blob += data
            offset = start + len(data)
        else:
            location, start = f"{stem}.{len(b.external)}.bin", 0
            files.append(os.path.join(out_dir, location))
            with open(files[-1], "wb") as f:
                f.write(data)
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(start)), ("length", str(len(data)))):
            entry = t.external_data.add()
            entry.key, entry.value = k, v
        b.external.append(t.name)
    if blob:
        files.append(os.path.join(out_dir, shared))
        with open(files[-1], "wb") as f:
            f.write(blob)
    b.features["external_data_tensors"] += len(chosen)
    return files


def generate(out_dir: str, count: int = 300, seed: int = 1234, verify_ort: bool = False) -> Summary:
    os.makedirs(out_dir, exist_ok=True)
    summary = Summary()
    ort_ok = ort_tried = 0
    for index in range(count):
        model, b = build_model(index, seed)
        stem = f"varied_{index:04d}"
        path = os.path.join(out_dir, f"{stem}.onnx")
        try:
            check(model, b)
        except Exception as e:
            blocks = ",".join(k[6:] for k in b.features if k.startswith("block:"))
            raise RuntimeError(f"generated model {index} (opset {b.opset}, blocks {blocks}) "
                               f"is invalid: {e}") from e
        if b.rng.random() < 0.07 and not b.unranked:
            inline = onnx.ModelProto()
            inline.CopyFrom(model)
            files = externalize(model, b, out_dir, stem)
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            try:
                check(model, b, path)
            except Exception:
                # Shape inference cannot read external data, so a tensor
                # whose values drive a shape (Resize scales, Reshape shape)
                # must stay inline: keep this model fully inline.
                for extra in files:
                    os.remove(extra)
                model = inline
                b.features["external_data_tensors"] -= len(b.external)
                b.external = []
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        summary.count += 1
        summary.features.update(b.features)
        summary.files.append(path)
        if verify_ort:
            ort_tried += 1
            ort_ok += _ort_loads(path)
    if verify_ort:
        summary.features["onnxruntime_loads"] = ort_ok
        summary.features["onnxruntime_tried"] = ort_tried
    return summary


def _ort_loads(path: str) -> bool:
    try:
        import onnxruntime
        opts = onnxruntime.SessionOptions()
        opts.log_severity_level = 4
        onnxruntime.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        return True
    except Exception:
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--verify-ort", action="store_true",
                        help="also count how many models onnxruntime can load")
    args = parser.parse_args(argv)
    summary = generate(args.out_dir, args.count, args.seed, args.verify_ort)
    print(summary.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
