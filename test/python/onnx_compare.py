#!/usr/bin/env python3
# ===- onnx_compare.py - Structural comparison of two ONNX models -------=== #
#
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
#
# ===--------------------------------------------------------------------=== #
"""Compares two ONNX models field by field for the import/export round trip.

The comparison walks the protobuf descriptors, so every field the `onnx`
package knows is compared, including fields added after this file was
written. A few fields get special treatment:

* Tensors (initializers, attribute tensors, sparse tensor parts) are compared
  by name, dims, data type and their decoded values, byte for byte. Where the
  values live (raw_data, a typed field, or external data) may change; such a
  change is reported as a note, not a difference.
* A node whose name is empty in the first model may get any non-empty name in
  the second, as long as the generated names are unique within their graph
  or function body.
* Lists whose order carries no meaning are matched by key: node attributes by
  name, opset imports by domain, initializers and value_info by name, local
  functions by (domain, name, overload), metadata_props by key. An order
  change is a note.

Use as a module (`compare_models(a, b)`) or as a command:
    onnx_compare.py A.onnx B.onnx
which prints the differences and exits with 1 if there are any.
"""

import argparse
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import onnx
from google.protobuf.descriptor import FieldDescriptor
from onnx import numpy_helper

__all__ = ["compare_models", "compare_files", "load_model", "Comparison"]

_TENSOR_STORAGE_FIELDS = frozenset(
    [
        "float_data",
        "int32_data",
        "string_data",
        "int64_data",
        "raw_data",
        "double_data",
        "uint64_data",
        "data_location",
        "external_data",
    ]
)


@dataclass
class Comparison:
    """Accumulates differences (failures) and notes (accepted changes)."""

    a_dir: Optional[str] = None
    b_dir: Optional[str] = None
    # Accept an unnamed node staying unnamed (for comparing models that did
    # not go through the exporter, e.g. a model with itself).
    allow_empty_names: bool = False
    differences: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def diff(self, path: str, msg: str) -> None:
        self.differences.append(f"{path}: {msg}")

    def note(self, path: str, msg: str) -> None:
        self.notes.append(f"{path}: {msg}")


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _float_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _double_bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _scalar_equal(fd: FieldDescriptor, x, y) -> bool:
    # Floats compare by bit pattern: NaN payloads and -0.0 must survive.
    if fd.cpp_type == FieldDescriptor.CPPTYPE_FLOAT:
        return _float_bits(x) == _float_bits(y)
    if fd.cpp_type == FieldDescriptor.CPPTYPE_DOUBLE:
        return _double_bits(x) == _double_bits(y)
    return x == y


def _show_scalar(fd: FieldDescriptor, value) -> str:
    if fd.enum_type is not None:
        enum_value = fd.enum_type.values_by_number.get(value)
        if enum_value is not None:
            return enum_value.name
    if fd.cpp_type == FieldDescriptor.CPPTYPE_FLOAT:
        return f"{value!r} (0x{_float_bits(value):08x})"
    return _short(value)


def _is_repeated(fd: FieldDescriptor) -> bool:
    # protobuf >= 5 has `is_repeated`; older releases only `label`.
    if hasattr(fd, "is_repeated"):
        return fd.is_repeated
    return fd.label == FieldDescriptor.LABEL_REPEATED


# --------------------------------------------------------------------------
# Generic walk
# --------------------------------------------------------------------------


def _node_label(node: onnx.NodeProto, index: int) -> str:
    name = node.name if node.name else "<unnamed>"
    return f"[{index} {node.op_type} '{name}']"


def _key_attr(a: onnx.AttributeProto):
    return a.name


def _key_opset(o: onnx.OperatorSetIdProto):
    return o.domain


def _key_name(v):
    return v.name


def _key_sparse(s: onnx.SparseTensorProto):
    return s.values.name


def _key_function(f: onnx.FunctionProto):
    return (f.domain, f.name, getattr(f, "overload", ""))


def _key_meta(e: onnx.StringStringEntryProto):
    return e.key


# (message full name, field name) -> key function. Lists whose order has no
# meaning are matched by key; the rest are positional.
_KEYED_FIELDS: Dict[Tuple[str, str], Callable] = {
    ("onnx.NodeProto", "attribute"): _key_attr,
    ("onnx.ModelProto", "opset_import"): _key_opset,
    ("onnx.FunctionProto", "opset_import"): _key_opset,
    ("onnx.GraphProto", "initializer"): _key_name,
    ("onnx.GraphProto", "value_info"): _key_name,
    ("onnx.FunctionProto", "value_info"): _key_name,
    ("onnx.GraphProto", "sparse_initializer"): _key_sparse,
    ("onnx.ModelProto", "functions"): _key_function,
    ("onnx.FunctionProto", "attribute_proto"): _key_attr,
}


_HOLDS_GRAPH: Dict[str, bool] = {}


def _may_hold_graph(descriptor) -> bool:
    """Whether a message of this type can contain a graph or function (whose
    unnamed nodes need the special rule), directly or nested."""
    name = descriptor.full_name
    if name not in _HOLDS_GRAPH:
        seen, stack, found = set(), [descriptor], False
        while stack and not found:
            d = stack.pop()
            if d.full_name in seen:
                continue
            seen.add(d.full_name)
            found = d.full_name in ("onnx.GraphProto", "onnx.FunctionProto")
            stack += [fd.message_type for fd in d.fields if fd.message_type is not None]
        _HOLDS_GRAPH[name] = found
    return _HOLDS_GRAPH[name]


# The encoding of `data_location: EXTERNAL` (field 14, varint 1) in a tensor.
_EXTERNAL_MARK = bytes([14 << 3, onnx.TensorProto.EXTERNAL])


def _same_bytes(cmp: Comparison, x, y) -> bool:
    """Fast path: equal encodings are equal, unless the message may hold a
    graph (unnamed-node rule) or external data read from different folders."""
    if _may_hold_graph(x.DESCRIPTOR):
        if x.DESCRIPTOR.full_name != "onnx.AttributeProto" or x.type in (
                onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            return False
    xb = x.SerializeToString(deterministic=True)
    if xb != y.SerializeToString(deterministic=True):
        return False
    # Conservative: a chance match of the marker only costs the slow path.
    return cmp.a_dir == cmp.b_dir or _EXTERNAL_MARK not in xb


def _compare_message(cmp: Comparison, path: str, x, y, skip=()) -> None:
    if not skip and _same_bytes(cmp, x, y):
        return
    full_name = x.DESCRIPTOR.full_name
    special = _SPECIAL.get(full_name)
    if special is not None and not skip:
        special(cmp, path, x, y)
        return
    # Which member of a oneof is set is information of its own: dim_value 0
    # is not an unknown dimension, and a tensor type is not a sequence type.
    for oneof in x.DESCRIPTOR.oneofs:
        ox, oy = x.WhichOneof(oneof.name), y.WhichOneof(oneof.name)
        if ox != oy:
            cmp.diff(f"{path}.{oneof.name}" if path else oneof.name, f"set field {ox} != {oy}")
    for fd in x.DESCRIPTOR.fields:
        if fd.name in skip:
            continue
        if fd.containing_oneof is not None:
            if x.WhichOneof(fd.containing_oneof.name) != fd.name or \
                    y.WhichOneof(fd.containing_oneof.name) != fd.name:
                continue
        _compare_field(cmp, path, x, y, fd)


def _compare_field(cmp: Comparison, path: str, x, y, fd: FieldDescriptor) -> None:
    sub = f"{path}.{fd.name}" if path else fd.name
    owner = x.DESCRIPTOR.full_name
    xv = getattr(x, fd.name)
    yv = getattr(y, fd.name)
    if _is_repeated(fd):
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            _compare_map(cmp, sub, fd, xv, yv)
        elif fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            key = _KEYED_FIELDS.get((owner, fd.name))
            if fd.message_type.full_name == "onnx.StringStringEntryProto":
                _compare_string_pairs(cmp, sub, xv, yv)
            elif key is not None:
                _compare_keyed(cmp, sub, xv, yv, key)
            else:
                _compare_positional(cmp, sub, xv, yv)
        else:
            _compare_scalar_list(cmp, sub, fd, xv, yv)
        return
    if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        hx, hy = x.HasField(fd.name), y.HasField(fd.name)
        if hx != hy:
            cmp.diff(sub, f"present {hx} != {hy}")
        elif hx:
            _compare_message(cmp, sub, xv, yv)
        return
    if not _scalar_equal(fd, xv, yv):
        cmp.diff(sub, f"{_show_scalar(fd, xv)} != {_show_scalar(fd, yv)}")


def _compare_scalar_list(cmp, path, fd, xv, yv) -> None:
    if len(xv) != len(yv):
        cmp.diff(path, f"length {len(xv)} != {len(yv)}: {_short(list(xv))} vs {_short(list(yv))}")
        return
    for i, (p, q) in enumerate(zip(xv, yv)):
        if not _scalar_equal(fd, p, q):
            cmp.diff(f"{path}[{i}]", f"{_show_scalar(fd, p)} != {_show_scalar(fd, q)}")
            return


def _compare_positional(cmp, path, xv, yv) -> None:
    if len(xv) != len(yv):
        cmp.diff(path, f"length {len(xv)} != {len(yv)}")
    for i, (p, q) in enumerate(zip(xv, yv)):
        label = f"[{i}]"
        if hasattr(p, "name") and isinstance(getattr(p, "name"), str) and p.name:
            label = f"[{i} '{p.name}']"
        _compare_message(cmp, f"{path}{label}", p, q)


def _compare_keyed(cmp, path, xv, yv, key) -> None:
    xkeys = [key(m) for m in xv]
    ykeys = [key(m) for m in yv]
    if len(set(xkeys)) != len(xkeys) or len(set(ykeys)) != len(ykeys):
        # Duplicate keys (an invalid model, or a lossy round trip): fall back
        # to positional comparison so nothing is hidden.
        _compare_positional(cmp, path, xv, yv)
        return
    ymap = dict(zip(ykeys, yv))
    for k, m in zip(xkeys, xv):
        if k not in ymap:
            cmp.diff(f"{path}[{k!r}]", "missing in second model")
            continue
        _compare_message(cmp, f"{path}[{k!r}]", m, ymap[k])
    xset = set(xkeys)
    extra = [k for k in ykeys if k not in xset]
    for k in extra:
        cmp.diff(f"{path}[{k!r}]", "not in first model")
    if not extra and len(xkeys) == len(ykeys) and xkeys != ykeys:
        cmp.note(path, "order changed")


def _compare_string_pairs(cmp, path, xv, yv) -> None:
    xp = [(e.key, e.value) for e in xv]
    yp = [(e.key, e.value) for e in yv]
    if xp == yp:
        return
    if sorted(xp) == sorted(yp):
        cmp.note(path, "order changed")
        return
    xd, yd = dict(xp), dict(yp)
    for k in xd:
        if k not in yd:
            cmp.diff(f"{path}[{k!r}]", "missing in second model")
        elif xd[k] != yd[k]:
            cmp.diff(f"{path}[{k!r}]", f"{_short(xd[k])} != {_short(yd[k])}")
    for k in yd:
        if k not in xd:
            cmp.diff(f"{path}[{k!r}]", "not in first model")
    if xd == yd:
        cmp.diff(path, f"entries differ (duplicates?): {_short(xp)} vs {_short(yp)}")


def _compare_map(cmp, path, fd, xv, yv) -> None:
    if set(xv.keys()) != set(yv.keys()):
        cmp.diff(path, f"keys {sorted(xv.keys())} != {sorted(yv.keys())}")
        return
    value_fd = fd.message_type.fields_by_name["value"]
    for k in xv:
        if value_fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
            _compare_message(cmp, f"{path}[{k!r}]", xv[k], yv[k])
        elif not _scalar_equal(value_fd, xv[k], yv[k]):
            cmp.diff(f"{path}[{k!r}]", f"{_short(xv[k])} != {_short(yv[k])}")


# --------------------------------------------------------------------------
# Tensors
# --------------------------------------------------------------------------


def _storage_kind(t: onnx.TensorProto) -> str:
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return "external"
    if t.HasField("raw_data"):
        return "raw_data"
    for name in ("float_data", "int32_data", "string_data", "int64_data",
                 "double_data", "uint64_data"):
        if len(getattr(t, name)):
            return name
    return "none"


def _read_external(t: onnx.TensorProto, base_dir: Optional[str]) -> bytes:
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location")
    if not location:
        raise ValueError("external data without 'location'")
    path = location if os.path.isabs(location) else os.path.join(base_dir or ".", location)
    offset = int(info.get("offset", "0"))
    with open(path, "rb") as f:
        f.seek(offset)
        if "length" in info:
            data = f.read(int(info["length"]))
            if len(data) != int(info["length"]):
                raise ValueError(f"external data '{location}' is shorter than 'length'")
            return data
        return f.read()


def _tensor_values(t: onnx.TensorProto, base_dir: Optional[str]):
    if t.data_type == onnx.TensorProto.STRING and t.data_location != onnx.TensorProto.EXTERNAL:
        # Raw bytes, not decoded text: strings need not be UTF-8.
        values = np.empty(len(t.string_data), dtype=object)
        values[:] = list(t.string_data)
        return values.reshape(tuple(t.dims)) if values.size == np.prod(t.dims) else values
    if t.data_location == onnx.TensorProto.EXTERNAL:
        inline = onnx.TensorProto()
        inline.CopyFrom(t)
        inline.raw_data = _read_external(t, base_dir)
        inline.data_location = onnx.TensorProto.DEFAULT
        del inline.external_data[:]
        t = inline
    return numpy_helper.to_array(t)


def _values_equal(x: np.ndarray, y: np.ndarray) -> bool:
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype == object:
        return list(x.flat) == list(y.flat)
    return np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()


def _first_value_mismatch(x: np.ndarray, y: np.ndarray) -> str:
    if x.shape != y.shape:
        return f"decoded shape {x.shape} != {y.shape}"
    if x.dtype != y.dtype:
        return f"decoded dtype {x.dtype} != {y.dtype}"
    xf, yf = x.reshape(-1), y.reshape(-1)
    for i in range(xf.size):
        if x.dtype == object:
            same = xf[i] == yf[i]
        else:
            same = xf[i : i + 1].tobytes() == yf[i : i + 1].tobytes()
        if not same:
            return f"values differ at flat index {i}: {_short(xf[i])} != {_short(yf[i])}"
    return "values differ"


def _compare_tensor(cmp: Comparison, path: str, x: onnx.TensorProto, y: onnx.TensorProto) -> None:
    _compare_message(cmp, path, x, y, skip=_TENSOR_STORAGE_FIELDS)
    if x.data_type != y.data_type or list(x.dims) != list(y.dims):
        return
    try:
        xv = _tensor_values(x, cmp.a_dir)
    except Exception as e:  # Unknown data type or unreadable data.
        xv = e
    try:
        yv = _tensor_values(y, cmp.b_dir)
    except Exception as e:
        yv = e
    if isinstance(xv, Exception) or isinstance(yv, Exception):
        if isinstance(xv, Exception) and isinstance(yv, Exception):
            # Neither side decodes (e.g. a data type numpy cannot hold):
            # require the stored fields to match exactly instead.
            for name in sorted(_TENSOR_STORAGE_FIELDS):
                _compare_field(cmp, path, x, y, x.DESCRIPTOR.fields_by_name[name])
        elif isinstance(yv, Exception):
            cmp.diff(path, f"values of second model cannot be decoded: {yv}")
        else:
            cmp.diff(path, f"values of first model cannot be decoded: {xv}")
        return
    if not _values_equal(xv, yv):
        cmp.diff(path, _first_value_mismatch(xv, yv))
        return
    kx, ky = _storage_kind(x), _storage_kind(y)
    if kx != ky:
        cmp.note(path, f"storage {kx} -> {ky}")


# --------------------------------------------------------------------------
# Graphs, nodes and functions
# --------------------------------------------------------------------------


def _compare_nodes(cmp: Comparison, path: str, xs: Sequence[onnx.NodeProto],
                   ys: Sequence[onnx.NodeProto]) -> None:
    if len(xs) != len(ys):
        cmp.diff(path, f"node count {len(xs)} != {len(ys)}")
    generated = []
    for i, (p, q) in enumerate(zip(xs, ys)):
        sub = f"{path}{_node_label(p, i)}"
        if p.op_type != q.op_type or p.domain != q.domain:
            cmp.diff(sub, f"op {p.domain}::{p.op_type} != {q.domain}::{q.op_type}")
            if len(xs) != len(ys):
                return  # Everything after a count mismatch would be noise.
            continue
        if p.name:
            if p.name != q.name:
                cmp.diff(f"{sub}.name", f"{_short(p.name)} != {_short(q.name)}")
        elif not q.name:
            if not cmp.allow_empty_names:
                cmp.diff(f"{sub}.name", "unnamed node must get a generated non-empty name")
        else:
            generated.append((sub, q.name))
        _compare_message(cmp, sub, p, q, skip=("name",))
    if generated:
        counts: Dict[str, int] = {}
        for q in ys:
            counts[q.name] = counts.get(q.name, 0) + 1
        for sub, name in generated:
            if counts[name] > 1:
                cmp.diff(f"{sub}.name", f"generated name {name!r} is not unique")


def _compare_graph(cmp: Comparison, path: str, x: onnx.GraphProto, y: onnx.GraphProto) -> None:
    _compare_nodes(cmp, f"{path}.node", x.node, y.node)
    _compare_message(cmp, path, x, y, skip=("node",))


def _compare_function(cmp: Comparison, path: str, x: onnx.FunctionProto,
                      y: onnx.FunctionProto) -> None:
    _compare_nodes(cmp, f"{path}.node", x.node, y.node)
    _compare_message(cmp, path, x, y, skip=("node",))


_SPECIAL = {
    "onnx.TensorProto": _compare_tensor,
    "onnx.GraphProto": _compare_graph,
    "onnx.FunctionProto": _compare_function,
}


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def load_model(path: str) -> onnx.ModelProto:
    """Parses a model without resolving external data (the comparator reads
    it itself, relative to the model's directory)."""
    with open(path, "rb") as f:
        data = f.read()
    model = onnx.ModelProto()
    model.ParseFromString(data)
    return model


def compare_models(a, b, a_dir: Optional[str] = None, b_dir: Optional[str] = None,
                   notes: Optional[List[str]] = None,
                   allow_empty_names: bool = False) -> List[str]:
    """Returns the differences between models `a` and `b` (empty: identical
    for the round-trip contract). `a` and `b` are ModelProtos or file paths;
    `a_dir`/`b_dir` locate external data (default: the files' directories).
    Accepted changes, such as a tensor moved from raw_data to a typed field,
    are appended to `notes` when given. With `allow_empty_names`, a node
    unnamed in `a` may stay unnamed in `b` (the exporter must name it)."""
    if isinstance(a, (str, os.PathLike)):
        a_dir = a_dir if a_dir is not None else os.path.dirname(os.path.abspath(a))
        a = load_model(a)
    if isinstance(b, (str, os.PathLike)):
        b_dir = b_dir if b_dir is not None else os.path.dirname(os.path.abspath(b))
        b = load_model(b)
    cmp = Comparison(a_dir=a_dir, b_dir=b_dir, allow_empty_names=allow_empty_names)
    _compare_message(cmp, "model", a, b)
    if notes is not None:
        notes.extend(cmp.notes)
    return cmp.differences


def compare_files(a_path: str, b_path: str,
                  allow_empty_names: bool = False) -> Tuple[List[str], List[str]]:
    """Like compare_models on two files; returns (differences, notes)."""
    notes: List[str] = []
    diffs = compare_models(a_path, b_path, notes=notes, allow_empty_names=allow_empty_names)
    return diffs, notes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="the reference model")
    parser.add_argument("b", help="the model to check against it")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print notes")
    parser.add_argument("--allow-empty-names", action="store_true",
                        help="accept nodes unnamed in A staying unnamed in B")
    parser.add_argument("--max", type=int, default=50,
                        help="print at most this many differences (0: all)")
    args = parser.parse_args(argv)
    try:
        diffs, notes = compare_files(args.a, args.b, args.allow_empty_names)
    except Exception as e:  # Unreadable or unparsable input.
        print(f"onnx_compare: error: {e}", file=sys.stderr)
        return 2
    shown = diffs if args.max <= 0 else diffs[: args.max]
    for d in shown:
        print(d)
    if len(shown) < len(diffs):
        print(f"... {len(diffs) - len(shown)} more differences")
    if not args.quiet:
        for n in notes:
            print(f"note: {n}")
    if diffs:
        print(f"{len(diffs)} difference(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
