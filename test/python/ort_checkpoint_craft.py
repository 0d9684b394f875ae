#!/usr/bin/env python3
"""Writes crafted onnxruntime-training checkpoints (FlatBuffers, identifier
ODTC) holding the MLP fixture's parameters, for amp-run's checks:

  step-only   an optimizer group with a step count and no moments
  partial     moments for one parameter of four
  bad-shape   a moment flattened to 1-D
  duplicate   one tensor listed twice under the same name
  shared      many distinct names pointing at one 1 MiB raw_data
  dup-property  a property bag naming "epoch" as an int and as a string
  external    the parameters in OUT.data, laid out as onnxruntime-training
              1.19 lays them out (ModuleState.has_external_data; each
              Tensor's external_data_offset, 4-byte aligned)
  external-beyond  the same, with the last parameter's offset past the end
              of OUT.data

Usage: ort_checkpoint_craft.py FORWARD.onnx CASE OUT. Needs numpy, onnx and
the `flatbuffers` package (an onnxruntime dependency).

  ort_checkpoint_craft.py describe CKPT   prints where a checkpoint keeps
      each tensor: `module external_data=<bool>`, then per tensor
      `<param|moment> <name> inline <bytes>` or `... external <offset>`
"""

import sys

import flatbuffers
import numpy as np
import onnx
from onnx import numpy_helper


def tensor(b, name, arr=None, raw_offset=None, dims=None, external=None):
    """A Tensor table: name (slot 0), dims (2), data_type FLOAT (3),
    raw_data (4), from `arr` or an existing byte vector; or, with
    `external` (a bytearray: the data file), external_data_offset (6)."""
    n = b.CreateString(name)
    if external is not None:
        external.extend(bytes(-len(external) % 4))
        offset = len(external)
        external.extend(arr.astype(np.float32).tobytes())
        dims = list(arr.shape)
    elif arr is not None:
        raw_offset = b.CreateByteVector(arr.astype(np.float32).tobytes())
        dims = list(arr.shape)
    b.StartVector(8, len(dims), 8)
    for d in reversed(dims):
        b.PrependInt64(d)
    dv = b.EndVector()
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(0, n, 0)
    b.PrependUOffsetTRelativeSlot(2, dv, 0)
    b.PrependInt32Slot(3, 1, 0)
    if external is not None:
        b.PrependInt64Slot(6, offset, -1)
    else:
        b.PrependUOffsetTRelativeSlot(4, raw_offset, 0)
    return b.EndObject()


def vector(b, offsets):
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def group(b, step, states):
    """An OptimizerGroup: name, step, learning rate, [(param, [moments])]."""
    tables = []
    for param, moments in states:
        p = b.CreateString(param)
        mv = vector(b, moments)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, p, 0)
        b.PrependUOffsetTRelativeSlot(1, mv, 0)
        tables.append(b.EndObject())
    sv = vector(b, tables)
    name = b.CreateString("group0")
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.PrependInt64Slot(1, step, 0)
    b.PrependFloat32Slot(2, 1e-3, 0)
    b.PrependUOffsetTRelativeSlot(3, sv, 0)
    return b.EndObject()


def property_bag(b, ints, strings):
    """A PropertyBag: ints (slot 0) and strings (slot 2), each a list of
    (name, value) tables."""
    lists = []
    for items, is_string in ((ints, False), (strings, True)):
        tables = []
        for name, value in items:
            n = b.CreateString(name)
            v = b.CreateString(value) if is_string else None
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, n, 0)
            if is_string:
                b.PrependUOffsetTRelativeSlot(1, v, 0)
            else:
                b.PrependInt64Slot(1, value, 0)
            tables.append(b.EndObject())
        lists.append(vector(b, tables))
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(0, lists[0], 0)
    b.PrependUOffsetTRelativeSlot(2, lists[1], 0)
    return b.EndObject()


def checkpoint(b, params, groups=(), bag=None, external=False):
    pv = vector(b, params)
    fv = vector(b, [])
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(0, pv, 0)
    b.PrependUOffsetTRelativeSlot(1, fv, 0)
    if external:
        b.PrependBoolSlot(3, True, False)
    module = b.EndObject()
    gv = vector(b, list(groups)) if groups else None
    b.StartObject(4)
    b.PrependInt32Slot(0, 2, 0)
    b.PrependUOffsetTRelativeSlot(1, module, 0)
    if gv is not None:
        b.PrependUOffsetTRelativeSlot(2, gv, 0)
    if bag is not None:
        b.PrependUOffsetTRelativeSlot(3, bag, 0)
    b.Finish(b.EndObject(), file_identifier=b"ODTC")
    return bytes(b.Output())


def describe(path):
    """Where the checkpoint at `path` keeps each tensor."""
    from flatbuffers import number_types as N
    from flatbuffers import table
    buf = bytearray(open(path, "rb").read())
    root = table.Table(buf, flatbuffers.encode.Get(
        N.UOffsetTFlags.packer_type, buf, 0))

    def sub(t, slot):
        o = t.Offset(4 + 2 * slot)
        return table.Table(t.Bytes, t.Indirect(o + t.Pos)) if o else None

    def tables(t, slot):
        o = t.Offset(4 + 2 * slot)
        if not o:
            return []
        start = t.Vector(o)
        return [table.Table(t.Bytes, t.Indirect(start + 4 * i))
                for i in range(t.VectorLen(o))]

    def string(t, slot):
        return t.String(t.Offset(4 + 2 * slot) + t.Pos).decode()

    def where(t):
        o = t.Offset(4 + 2 * 6)
        ext = t.Get(N.Int64Flags, o + t.Pos) if o else -1
        if ext >= 0:
            return f"external {ext}"
        o = t.Offset(4 + 2 * 4)
        return f"inline {t.VectorLen(o) if o else 0}"

    module = sub(root, 1)
    o = module.Offset(4 + 2 * 3)
    ext = bool(module.Get(N.BoolFlags, o + module.Pos)) if o else False
    print(f"module external_data={ext}")
    for t in tables(module, 0) + tables(module, 1):
        print(f"param {string(t, 0)} {where(t)}")
    for g in tables(root, 2):
        for st in tables(g, 3):
            for t in tables(st, 1):
                print(f"moment {string(st, 0)}/{string(t, 0)} {where(t)}")


def main():
    if sys.argv[1] == "describe":
        return describe(sys.argv[2])
    forward, case, out = sys.argv[1:4]
    w = {t.name: numpy_helper.to_array(t)
         for t in onnx.load(forward).graph.initializer}
    b = flatbuffers.Builder(1 << 16)
    if case in ("external", "external-beyond"):
        data = bytearray()
        params = [tensor(b, n, a, external=data) for n, a in sorted(w.items())]
        if case == "external-beyond":
            # The last tensor's offset, moved past the end of the file.
            params[-1] = tensor(b, sorted(w)[-1], w[sorted(w)[-1]],
                                external=bytearray(len(data) + 4))
        with open(out + ".data", "wb") as f:
            f.write(data)
        with open(out, "wb") as f:
            f.write(checkpoint(b, params, external=True))
        return
    params = [tensor(b, n, a) for n, a in sorted(w.items())]
    first = sorted(w)[0]
    groups = ()
    bag = None
    if case == "dup-property":
        bag = property_bag(b, [("epoch", 3)], [("epoch", "three")])
    elif case == "step-only":
        groups = [group(b, 1000, [])]
    elif case == "partial":
        groups = [group(b, 5, [(first, [
            tensor(b, "momentum0", np.zeros_like(w[first])),
            tensor(b, "momentum1", np.zeros_like(w[first]))])])]
    elif case == "bad-shape":
        matrix = next(n for n in sorted(w) if w[n].ndim >= 2)
        groups = [group(b, 5, [(matrix, [
            tensor(b, "momentum0", np.zeros_like(w[matrix]).reshape(-1))])])]
    elif case == "duplicate":
        params.append(params[0])
    elif case == "shared":
        raw = b.CreateByteVector(bytes(1 << 20))
        params += [tensor(b, f"junk{i}", raw_offset=raw, dims=[1 << 18])
                   for i in range(64)]
    else:
        raise SystemExit("unknown case " + case)
    with open(out, "wb") as f:
        f.write(checkpoint(b, params, groups, bag))


if __name__ == "__main__":
    main()
