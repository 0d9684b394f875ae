#!/usr/bin/env python3
# Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
"""Generates the ONNX part of the `train` dialect from the `onnx` package.

Reads every operator schema (all versions) of the ONNX domains below from
`onnx.defs.get_all_schemas_with_history()` and writes, deterministically:

  include/amp/Dialect/Train/IR/TrainOnnxOps.td
      one typed op per (domain, op_type), built from the newest version;
  lib/Dialect/Train/IR/OnnxSchemas.inc
      plain-data schema tables for every version (see OnnxSchema.h);
  docs/Dialects/TrainOpsList.md
      a table of all ops, including the hand-written com.microsoft ones,
      which it reads back from lib/Dialect/Train/IR/OnnxSchemasMicrosoft.inc.

The C++ build never runs this script: its outputs are committed. Rerun it
after upgrading onnx:  python3 utils/gen_onnx_ods.py [--root DIR] [--check]
(`--check` only compares the outputs with the files on disk).
"""

import argparse
import collections
import os
import re
import sys

import onnx
from onnx import defs
from onnx.defs import OpSchema

# ONNX domain (as onnx reports it) -> prefix of the op's C++ class name.
DOMAINS = collections.OrderedDict([
    ("", ""),
    ("ai.onnx.ml", "Ml"),
    ("ai.onnx.preview", "Preview"),
    ("ai.onnx.preview.training", "PreviewTraining"),
])

# Ops with canonicalization patterns of their own. None today: the train
# dialect's canonicalization (lib/Dialect/Train/IR/TrainFolders.cpp) folds
# every ONNX node that HostEvaluation.h evaluates, whatever its op.
CANONICALIZED = set()

# Mirrors the mnemonic rule of Train_OnnxOp in TrainBase.td (documentation
# only: the .td computes the real mnemonic).
MNEMONIC_PREFIX = {"": "", "com.microsoft": "ms.", "ai.onnx.preview.training": "preview."}

AttrType = OpSchema.AttrType
# onnx attribute type -> (OnnxAttrKind enumerator, ODS attribute constraint,
# short name used in the docs). GRAPH attributes become regions.
ATTR_KINDS = {
    AttrType.FLOAT: ("Float", "F32Attr", "float"),
    AttrType.INT: ("Int", "I64Attr", "int"),
    AttrType.STRING: ("String", "StrAttr", "string"),
    AttrType.TENSOR: ("Tensor", "AnyAttr", "tensor"),
    AttrType.GRAPH: ("Graph", None, "graph"),
    AttrType.FLOATS: ("Floats", "DenseF32ArrayAttr", "floats"),
    AttrType.INTS: ("Ints", "DenseI64ArrayAttr", "ints"),
    AttrType.STRINGS: ("Strings", "StrArrayAttr", "strings"),
    AttrType.TENSORS: ("Tensors", "AnyAttr", "tensors"),
    AttrType.GRAPHS: ("Graphs", "AnyAttr", "graphs"),
    AttrType.SPARSE_TENSOR: ("SparseTensor", "AnyAttr", "sparse_tensor"),
    AttrType.SPARSE_TENSORS: ("SparseTensors", "AnyAttr", "sparse_tensors"),
    AttrType.TYPE_PROTO: ("TypeProto", "AnyAttr", "type_proto"),
    AttrType.TYPE_PROTOS: ("TypeProtos", "AnyAttr", "type_protos"),
}
KIND_DOC = {v[0]: v[2] for v in ATTR_KINDS.values()}

Option = OpSchema.FormalParameterOption
OPTION_NAMES = {Option.Single: "Single", Option.Optional: "Optional",
                Option.Variadic: "Variadic"}

# Names that cannot be C++ identifiers in generated code (builder parameters,
# Properties members) or that would collide with the locals of ODS builders.
CXX_KEYWORDS = set("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr
constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false float for
friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union
unsigned using virtual void volatile wchar_t while xor xor_eq
odsBuilder odsState resultTypes operands attributes properties
""".split())

# Accessor names (after `get`) that the Op class already defines with an
# incompatible meaning.
RESERVED_ACCESSORS = {"Operation", "Context", "Loc", "Operands", "Results",
                      "Operand", "Result", "Regions", "Properties",
                      "Attributes", "ODSOperands", "ODSResults",
                      "OperationName", "AttributeNames", "Adaptor"}

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def camel(name):
    """ODS accessor suffix: llvm::convertToCamelFromSnakeCase(name, true)."""
    if not name:
        return ""
    out = [name[0].upper() if name[0].islower() else name[0]]
    i = 1
    while i < len(name):
        c = name[i]
        if c == "_" and i != len(name) - 1 and name[i + 1].islower():
            out.append(name[i + 1].upper())
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


# --------------------------------------------------------------------------
# Schema collection
# --------------------------------------------------------------------------

def collect():
    groups = collections.defaultdict(list)
    for s in defs.get_all_schemas_with_history():
        if s.domain in DOMAINS:
            groups[(s.domain, s.name)].append(s)
    for versions in groups.values():
        versions.sort(key=lambda s: s.since_version)
        seen = set()
        for s in versions:
            if s.since_version in seen:
                raise SystemExit("duplicate schema %s %s %d" % (s.domain, s.name,
                                                                s.since_version))
            seen.add(s.since_version)
    domain_order = list(DOMAINS)
    return collections.OrderedDict(
        sorted(groups.items(), key=lambda kv: (domain_order.index(kv[0][0]), kv[0][1])))


def sorted_attrs(schema):
    return [schema.attributes[n] for n in sorted(schema.attributes)]


def signature(schema):
    """What a typed op fixes: formal parameter names/options, attributes."""
    return (tuple((p.name, p.option) for p in schema.inputs),
            tuple((p.name, p.option) for p in schema.outputs),
            tuple(sorted((a.name, a.type) for a in schema.attributes.values())))


def fits_typed_op(old, newest):
    """Whether nodes of schema version `old` can be held by the typed op made
    from `newest`: its parameters are a prefix of the newest's (same names; a
    Single may have become Optional) whose extra ones are optional or
    variadic, and its attributes (all optional in ODS) a subset with the same
    kinds. The verifier checks nodes against their own version."""
    SINGLE, OPTIONAL, VARIADIC = (defs.OpSchema.FormalParameterOption.Single,
                                  defs.OpSchema.FormalParameterOption.Optional,
                                  defs.OpSchema.FormalParameterOption.Variadic)

    def params_fit(a, b):
        if len(a) > len(b):
            return False
        for p, q in zip(a, b):
            if p.name != q.name:
                return False
            if p.option != q.option and not (p.option == SINGLE and q.option == OPTIONAL):
                return False
        return all(q.option in (OPTIONAL, VARIADIC) for q in b[len(a):])

    new_attrs = {a.name: a.type for a in newest.attributes.values()}
    return (params_fit(list(old.inputs), list(newest.inputs)) and
            params_fit(list(old.outputs), list(newest.outputs)) and
            all(new_attrs.get(a.name) == a.type for a in old.attributes.values()))


# --------------------------------------------------------------------------
# Typed op planning
# --------------------------------------------------------------------------

class TypedOp:
    def __init__(self, schema):
        self.schema = schema
        self.domain = schema.domain
        self.op_type = schema.name
        self.cls = "Train_%s%sOp" % (DOMAINS[schema.domain], schema.name)
        self.operands = []   # (ods name, option, onnx name)
        self.results = []
        self.attrs = []      # (name, ods constraint)
        self.regions = []    # names


def plan_typed_op(schema):
    """Returns (TypedOp, None) or (None, reason)."""
    op = TypedOp(schema)
    if not IDENT_RE.match(schema.name):
        return None, "op type is not a C++ identifier"
    for params in (schema.inputs, schema.outputs):
        for i, p in enumerate(params):
            if p.option == Option.Variadic and i != len(params) - 1:
                return None, "variadic parameter %s is not the last" % p.name
    attr_names = []
    for a in sorted_attrs(schema):
        if not IDENT_RE.match(a.name) or a.name in CXX_KEYWORDS:
            return None, "attribute name `%s` is not usable in C++" % a.name
        if camel(a.name) in RESERVED_ACCESSORS:
            return None, "attribute `%s` clashes with an Op class accessor" % a.name
        kind = ATTR_KINDS[a.type]
        if kind[1] is None:
            op.regions.append(a.name)
        else:
            op.attrs.append((a.name, kind[1]))
        attr_names.append(a.name)

    # Accessors owned by attributes and regions: these names are fixed.
    taken = {}

    def claim(accessors, owner):
        for acc in accessors:
            if acc in taken and taken[acc] != owner:
                return False
        for acc in accessors:
            taken[acc] = owner
        return True

    for name, _ in op.attrs:
        c = camel(name)
        if not claim([c, c + "Attr", c + "AttrName"], ("attr", name)):
            return None, "attribute `%s` clashes with another attribute" % name
    for name in op.regions:
        if not claim([camel(name)], ("region", name)):
            return None, "region `%s` clashes with an attribute" % name
    raw_taken = set(attr_names)

    def place(pname, kind, suffixes):
        """Chooses an ODS name for an operand/result: the ONNX name, renamed
        (ONNX names of inputs/outputs are not visible in the model) if it
        clashes."""
        base = pname if IDENT_RE.match(pname) else re.sub(r"\W", "_", pname)
        if not IDENT_RE.match(base):
            base = "v_" + base
        candidates = [base, base + ("_in" if kind == "operand" else "_out"),
                      base + "_" + kind] + ["%s_%d" % (base, i) for i in range(2, 10)]
        for cand in candidates:
            if cand in CXX_KEYWORDS or cand in raw_taken:
                continue
            c = camel(cand)
            if c in RESERVED_ACCESSORS:
                continue
            if claim([c + s for s in suffixes], (kind, pname)):
                raw_taken.add(cand)
                return cand
        return None

    for p in schema.inputs:
        n = place(p.name, "operand", ["", "Mutable"])
        if n is None:
            return None, "input `%s` cannot be named" % p.name
        op.operands.append((n, p.option, p.name))
    for p in schema.outputs:
        n = place(p.name, "result", [""])
        if n is None:
            return None, "output `%s` cannot be named" % p.name
        op.results.append((n, p.option, p.name))
    return op, None


# --------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------

def summary_of(schema):
    doc = (schema.doc or "").strip()
    text = re.sub(r"\s+", " ", doc)
    m = re.search(r"(.+?[.!?])(\s|$)", text)
    first = m.group(1) if m else text
    first = first.replace("\\", "").replace('"', "'").replace("`", "").strip()
    if len(first) > 120:
        first = first[:117].rstrip() + "..."
    return first or ("ONNX %s operator" % schema.name)


def description_of(schema):
    doc = (schema.doc or "").strip("\n")
    lines = [l.rstrip() for l in doc.splitlines()]
    text = "\n".join(lines).replace("}]", "} ]")
    return text


def param_doc(p, option):
    suffix = {Option.Single: "", Option.Optional: "?", Option.Variadic: "..."}[option]
    return "%s%s: %s" % (p.name, suffix, p.type_str)


# --------------------------------------------------------------------------
# TrainOnnxOps.td
# --------------------------------------------------------------------------

def banner(first_line, version):
    """The opening lines of a generated C++/TableGen file."""
    return [first_line, "//",
            "// Generated by utils/gen_onnx_ods.py from onnx %s -- do not edit." % version,
            "//", "// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0", "//",
            "//===----------------------------------------------------------------------===//"]


def emit_td(groups, typed, version):
    out = banner("//===- TrainOnnxOps.td - Typed ONNX ops (generated) -------*- tablegen -*-===//",
                 version)
    w = out.append
    w("//")
    w("// One op per (domain, op_type) of the ONNX domains \"\", ai.onnx.ml,")
    w("// ai.onnx.preview and ai.onnx.preview.training, built from the newest")
    w("// schema version. Inputs/outputs are AnyType (optional: AnyTypeOrNone,")
    w("// variadic: Variadic<AnyType>); attributes keep their ONNX names and are all")
    w("// optional (required-ness is checked by the schema verifier); graph")
    w("// attributes are regions. Older versions with the same signature import as")
    w("// the same op (see OnnxSchemas.inc, matchesTypedOp).")
    w("//")
    w("//===----------------------------------------------------------------------===//")
    w("")
    w("#ifndef AMP_DIALECT_TRAIN_IR_TRAINONNXOPS_TD")
    w("#define AMP_DIALECT_TRAIN_IR_TRAINONNXOPS_TD")
    w("")
    w('include "amp/Dialect/Train/IR/TrainBase.td"')
    w("")
    current_domain = None
    for (domain, name), versions in groups.items():
        op = typed.get((domain, name))
        if op is None:
            continue
        s = op.schema
        if domain != current_domain:
            current_domain = domain
            w("//===----------------------------------------------------------------------===//")
            w("// Domain \"%s\"" % domain)
            w("//===----------------------------------------------------------------------===//")
            w("")
        graph_list = ", ".join('"%s"' % r for r in op.regions)
        w('def %s : Train_OnnxOp<"%s", "%s", %d, [%s], []> {'
          % (op.cls, domain, name, s.since_version, graph_list))
        w('  let summary = "%s";' % summary_of(s))
        desc = description_of(s)
        if desc:
            w("  let description = [{")
            for line in desc.splitlines():
                w(("    " + line) if line else "")
            w("  }];")
        args = []
        for (n, opt, _), p in zip(op.operands, s.inputs):
            ty = {Option.Single: "AnyType", Option.Optional: "AnyTypeOrNone",
                  Option.Variadic: "Variadic<AnyType>"}[opt]
            args.append("%s:$%s" % (ty, n))
        for n, cons in op.attrs:
            args.append("OptionalAttr<%s>:$%s" % (cons, n))
        w("  let arguments = (ins%s);" % format_list(args, "  let arguments = (ins"))
        res = []
        for (n, opt, _) in op.results:
            ty = {Option.Single: "AnyType", Option.Optional: "AnyTypeOrNone",
                  Option.Variadic: "Variadic<AnyType>"}[opt]
            res.append("%s:$%s" % (ty, n))
        w("  let results = (outs%s);" % format_list(res, "  let results = (outs"))
        if (op.domain, op.op_type) in CANONICALIZED:
            w("  let hasCanonicalizer = 1;")
        if op.regions:
            w("  let regions = (region%s);" % format_list(
                ["AnyRegion:$%s" % r for r in op.regions], "  let regions = (region"))
        else:
            w("  let assemblyFormat = \"`(` operands `)` attr-dict `:` "
              "functional-type(operands, results)\";")
        w("}")
        w("")
    w("#endif // AMP_DIALECT_TRAIN_IR_TRAINONNXOPS_TD")
    return "\n".join(out) + "\n"


def format_list(items, lead):
    """Formats the items of a dag after `lead` (e.g. "  let results = (outs"),
    one per line when they do not fit on one."""
    if not items:
        return ""
    one = " " + ", ".join(items)
    if len(lead) + len(one) + 2 <= 80:
        return one
    return " " + (",\n" + " " * (len(lead) + 1)).join(items)


# --------------------------------------------------------------------------
# OnnxSchemas.inc
# --------------------------------------------------------------------------

def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Pool:
    """Deduplicates the static arrays of the .inc."""

    def __init__(self, prefix, ctype):
        self.prefix = prefix
        self.ctype = ctype
        self.index = {}
        self.defs = []

    def get(self, items):
        if not items:
            return None
        key = tuple(items)
        if key not in self.index:
            name = "%s%d" % (self.prefix, len(self.index))
            self.index[key] = name
            self.defs.append((name, items))
        return self.index[key]


def emit_inc(groups, typed, version):
    types = Pool("kOnnxTy", "const char *const")
    params = Pool("kOnnxPar", "::amp::train::OnnxParamSchema")
    attrs = Pool("kOnnxAttr", "::amp::train::OnnxAttrSchema")
    cons = Pool("kOnnxTc", "::amp::train::OnnxTypeConstraintSchema")
    entries = []
    for (domain, name), versions in groups.items():
        op = typed.get((domain, name))
        for s in versions:
            def par(p):
                return "{%s, %s, ::amp::train::OnnxParamOption::%s, %s, %d}" % (
                    c_str(p.name), c_str(p.type_str), OPTION_NAMES[p.option],
                    "true" if p.is_homogeneous else "false", p.min_arity)
            ins = params.get([par(p) for p in s.inputs])
            outs = params.get([par(p) for p in s.outputs])
            at = attrs.get(["{%s, ::amp::train::OnnxAttrKind::%s, %s}" % (
                c_str(a.name), ATTR_KINDS[a.type][0], "true" if a.required else "false")
                for a in sorted_attrs(s)])
            tcs = []
            for tc in s.type_constraints:
                allowed = list(tc.allowed_type_strs)
                tname = types.get([c_str(t) for t in allowed])
                tcs.append("{%s, %s, %d}" % (c_str(tc.type_param_str),
                                             tname or "nullptr", len(allowed)))
            tcn = cons.get(tcs)
            match = op is not None and fits_typed_op(s, versions[-1])
            entries.append("    {%s, %s, %d, %s,\n     %s, %d, %s, %d, %s, %d, %s, %d}," % (
                c_str(domain), c_str(name), s.since_version, "true" if match else "false",
                ins or "nullptr", len(s.inputs), outs or "nullptr", len(s.outputs),
                at or "nullptr", len(s.attributes), tcn or "nullptr", len(tcs)))
    out = banner("//===- OnnxSchemas.inc - ONNX schema tables (generated) ---------*- C++ -*-===//",
                 version)
    w = out.append
    w("//")
    w("// Every version of every operator of the domains \"\", ai.onnx.ml,")
    w("// ai.onnx.preview and ai.onnx.preview.training, sorted by (domain, op_type,")
    w("// since_version). Identical arrays are shared. matchesTypedOp is true when")
    w("// a typed op was generated from the newest version and this version fits it:")
    w("// its inputs/outputs are a prefix of the newest's (extras optional), its")
    w("// attributes a subset with the same kinds (see fits_typed_op).")
    w("//")
    w("// Included once, by lib/Dialect/Train/IR/OnnxSchema.cpp, inside an")
    w("// anonymous namespace in namespace amp::train; it only defines static")
    w("// constant arrays and needs OnnxSchema.h.")
    w("//")
    w("//===----------------------------------------------------------------------===//")
    w("")
    w("// Allowed type lists of type constraints.")
    for name, items in types.defs:
        w("static const char *const %s[] = {%s};" % (name, ", ".join(items)))
    w("")
    def emit_arrays(comment, pool, ctype):
        w(comment)
        for name, items in pool.defs:
            w("static const %s %s[] = {" % (ctype, name))
            for it in items:
                w("    %s," % it)
            w("};")
        w("")

    emit_arrays("// Formal inputs/outputs: name, type, option, homogeneous, min arity.",
                params, "::amp::train::OnnxParamSchema")
    emit_arrays("// Attributes: name, kind, required.", attrs, "::amp::train::OnnxAttrSchema")
    emit_arrays("// Type constraints: name, allowed types, number of allowed types.",
                cons, "::amp::train::OnnxTypeConstraintSchema")
    w("// domain, op_type, since_version, matchesTypedOp, inputs, #inputs,")
    w("// outputs, #outputs, attributes, #attributes, constraints, #constraints.")
    w("static const ::amp::train::OnnxOpSchema kGeneratedOnnxSchemas[] = {")
    out.extend(entries)
    w("};")
    return "\n".join(out) + "\n", len(entries)


# --------------------------------------------------------------------------
# Reading the hand-written com.microsoft tables back (for the op list)
# --------------------------------------------------------------------------

def read_microsoft(root):
    """Parses OnnxSchemasMicrosoft.inc into simple records. The file is hand
    written in the same layout as OnnxSchemas.inc."""
    path = os.path.join(root, "lib/Dialect/Train/IR/OnnxSchemasMicrosoft.inc")
    td = os.path.join(root, "include/amp/Dialect/Train/IR/TrainMicrosoftOps.td")
    if not os.path.exists(path):
        return []
    text = open(path).read()
    text = re.sub(r"//[^\n]*", "", text)
    arrays = {}
    for m in re.finditer(r"static const (?:::amp::train::)?(\w+)\s*(?:\*const\s*)?"
                         r"(\w+)\[\]\s*=\s*\{(.*?)\};", text, re.S):
        arrays[m.group(2)] = (m.group(1), m.group(3))
    typed = set()
    if os.path.exists(td):
        for m in re.finditer(r'Train_OnnxOp<"([^"]*)",\s*"(\w+)",\s*(\d+)', open(td).read()):
            typed.add((m.group(1), m.group(2)))

    def strings(body):
        return re.findall(r'"((?:[^"\\]|\\.)*)"', body)

    def params(name):
        if name == "nullptr":
            return []
        res = []
        for m in re.finditer(r'\{"(\w*)",\s*"([^"]*)",\s*(?:::amp::train::)?'
                             r'OnnxParamOption::(\w+)', arrays[name][1]):
            res.append((m.group(1), m.group(2), m.group(3)))
        return res

    def attrs(name):
        if name == "nullptr":
            return []
        return [(m.group(1), m.group(2), m.group(3) == "true") for m in re.finditer(
            r'\{"(\w+)",\s*(?:::amp::train::)?OnnxAttrKind::(\w+),\s*(true|false)\}',
            arrays[name][1])]

    def constraints(name):
        if name == "nullptr":
            return []
        res = []
        for m in re.finditer(r'\{"(\w+)",\s*(\w+),\s*(\d+)\}', arrays[name][1]):
            res.append((m.group(1), strings(arrays[m.group(2)][1])))
        return res

    body = arrays.get("kMicrosoftOnnxSchemas", ("", ""))[1]
    ops = []
    for m in re.finditer(r'\{"([^"]*)",\s*"(\w+)",\s*(\d+),\s*(true|false),\s*(\w+),\s*\d+,'
                         r'\s*(\w+),\s*\d+,\s*(\w+),\s*\d+,\s*(\w+),\s*\d+\}', body):
        ops.append(dict(domain=m.group(1), name=m.group(2), since=int(m.group(3)),
                        typed=(m.group(1), m.group(2)) in typed,
                        ins=params(m.group(5)), outs=params(m.group(6)),
                        attrs=attrs(m.group(7)), tcs=constraints(m.group(8))))
    return ops


# --------------------------------------------------------------------------
# docs/Dialects/TrainOpsList.md
# --------------------------------------------------------------------------

def short_type(t):
    t = re.sub(r"tensor\((\w+)\)", r"\1", t)
    return t


def md_escape(s):
    return s.replace("|", "\\|")


def emit_md(groups, typed, skipped, ms_ops, version):
    out = []
    w = out.append
    w("<!-- Generated by utils/gen_onnx_ods.py from onnx %s -- do not edit. -->" % version)
    w("")
    w("# `train` dialect: ONNX operator list")
    w("")
    w("Every operator the `train` dialect has a schema for: the ONNX domains, "
      "generated from onnx %s, and the hand-written com.microsoft (ONNX Runtime "
      "training) operators. For each operator: its domain, the since_version of "
      "the newest schema (the one the typed op is built from) and all versions, "
      "its inputs and outputs with their type constraint (`?` optional, `...` "
      "variadic), its attributes (`!` required) and the allowed types of its type "
      "constraints (`tensor(...)` dropped). Element types such as `float16` stand "
      "for `tensor(float16)`." % version)
    w("")
    w("The op column gives the typed op's name; `train.node` means the operator "
      "has no typed op and imports as the generic op. A version marked `*` has "
      "other inputs, outputs or attributes than the newest one: nodes of that "
      "version import as `train.node` (OnnxSchemas.inc: matchesTypedOp = false).")
    w("")

    def row(op_name, domain, since, versions, ins, outs, attrs, tcs):
        w("| %s | `%s` | %s | %s | %s | %s | %s | %s |" % (
            op_name, domain or '""', since, versions, md_escape("<br>".join(ins)) or "-",
            md_escape("<br>".join(outs)) or "-", md_escape("<br>".join(attrs)) or "-",
            md_escape("<br>".join(tcs)) or "-"))

    header = ("| op | domain | since | versions | inputs | outputs | attributes | "
              "type constraints |")
    rule = "|---|---|---|---|---|---|---|---|"
    current = None
    count = collections.Counter()
    for (domain, name), versions in groups.items():
        if domain != current:
            if current is not None:
                w("")
            current = domain
            w("## Domain `%s`" % (domain or '""'))
            w("")
            w(header)
            w(rule)
        s = versions[-1]
        op = typed.get((domain, name))
        if op is not None:
            count[domain] += 1
            opname = "`train.%s%s`" % (MNEMONIC_PREFIX.get(domain, domain + "."), name)
        else:
            opname = "`train.node` (%s)" % name
        ins = [param_doc(p, p.option) for p in s.inputs]
        outs = [param_doc(p, p.option) for p in s.outputs]
        ats = ["%s%s: %s" % (a.name, "!" if a.required else "", KIND_DOC[ATTR_KINDS[a.type][0]])
               for a in sorted_attrs(s)]
        tcs = ["%s: %s" % (tc.type_param_str, ", ".join(short_type(t) for t in
                                                        tc.allowed_type_strs))
               for tc in s.type_constraints]
        vers = ", ".join("%d%s" % (v.since_version,
                                   "" if op is not None and fits_typed_op(v, s) else "*")
                         for v in versions)
        if s.deprecated:
            vers += " (deprecated)"
        row(opname, domain, s.since_version, vers, ins, outs, ats, tcs)
    w("")
    if ms_ops:
        w("## Hand-written ONNX Runtime operators")
        w("")
        w("From lib/Dialect/Train/IR/OnnxSchemasMicrosoft.inc (see that file for "
          "their source). Most are in domain `com.microsoft`; a few ONNX Runtime "
          "training operators are registered by ONNX Runtime in the default domain.")
        w("")
        w(header)
        w(rule)
        for o in sorted(ms_ops, key=lambda o: (o["domain"] != "com.microsoft", o["name"])):
            opt = {"Single": "", "Optional": "?", "Variadic": "..."}
            ins = ["%s%s: %s" % (n, opt[k], t) for n, t, k in o["ins"]]
            outs = ["%s%s: %s" % (n, opt[k], t) for n, t, k in o["outs"]]
            ats = ["%s%s: %s" % (n, "!" if r else "", KIND_DOC[k]) for n, k, r in o["attrs"]]
            tcs = ["%s: %s" % (n, ", ".join(short_type(t) for t in ts)) for n, ts in o["tcs"]]
            if o["typed"] or (o["domain"], o["name"]) in typed:
                opname = "`train.%s%s`" % (MNEMONIC_PREFIX.get(o["domain"], o["domain"] + "."),
                                           o["name"])
            else:
                opname = "`train.node` (%s)" % o["name"]
            row(opname, o["domain"], o["since"], str(o["since"]), ins, outs, ats, tcs)
        w("")
    w("## Operators without a typed op")
    w("")
    if skipped:
        w("These import as the generic `train.node`:")
        w("")
        for (domain, name), reason in sorted(skipped.items()):
            w("* `%s` %s: %s" % (domain or '""', name, reason))
    else:
        w("None: every operator of the generated domains has a typed op.")
    w("")
    w("## Counts")
    w("")
    for domain in DOMAINS:
        total = sum(1 for k in groups if k[0] == domain)
        nvers = sum(len(v) for k, v in groups.items() if k[0] == domain)
        w("* `%s`: %d typed ops of %d operators, %d schema versions" % (
            domain or '""', count[domain], total, nvers))
    if ms_ops:
        w("* hand-written ONNX Runtime operators: %d typed ops for %d schemas "
          "(LayerNormalization-1 of ORT uses the generated LayerNormalization op)" % (
              sum(1 for o in ms_ops if o["typed"]), len(ms_ops)))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: this script's parent directory)")
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if an output differs from the file on disk")
    args = ap.parse_args()

    version = onnx.__version__
    groups = collect()
    typed, skipped = {}, {}
    for key, versions in groups.items():
        op, reason = plan_typed_op(versions[-1])
        if op is None:
            skipped[key] = reason
        else:
            typed[key] = op

    td = emit_td(groups, typed, version)
    inc, nentries = emit_inc(groups, typed, version)
    md = emit_md(groups, typed, skipped, read_microsoft(args.root), version)
    outputs = [
        ("include/amp/Dialect/Train/IR/TrainOnnxOps.td", td),
        ("lib/Dialect/Train/IR/OnnxSchemas.inc", inc),
        ("docs/Dialects/TrainOpsList.md", md),
    ]
    differ = False
    for rel, text in outputs:
        path = os.path.join(args.root, rel)
        old = open(path).read() if os.path.exists(path) else None
        if args.check:
            if old != text:
                print("out of date: %s" % rel)
                differ = True
            continue
        if old != text:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    per_domain = collections.Counter(k[0] for k in typed)
    print("onnx %s: %d typed ops (%s), %d skipped, %d schema entries" % (
        version, len(typed), ", ".join('"%s": %d' % (d, per_domain[d]) for d in DOMAINS),
        len(skipped), nentries))
    for key, reason in sorted(skipped.items()):
        print("  skipped %s %s: %s" % (key[0] or '""', key[1], reason))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
