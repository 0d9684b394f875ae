#!/usr/bin/env python3
"""The layer rules of ../shared/DESIGN.md, checked on the includes.

Each layer (a folder under include/amp and lib, or kernels/ and tools/) may
include the headers of the layers it is allowed to use and nothing else of
amp-mlir; the runtime and the CUDA kernels include no MLIR or LLVM header
(a plain C/C++17 ABI). Every violation is printed as FILE:LINE: the include
and the rule it breaks, and the script exits 1; it prints
"layer-rules: N files, PASS" otherwise.

    layer_rules.py [ROOT]     ROOT: a source tree (default: this checkout)
"""

import os
import re
import sys

# The layers from the bottom up and the amp-mlir headers each may include
# (prefixes of the path after "amp/"). A layer may always include its own.
ALLOWED = {
    "Dialect/Train/IR": [],
    "Interfaces": ["Dialect/Train/IR"],
    "Dialect/Train/Transforms": ["Dialect/Train/IR", "Interfaces"],
    # The lowered form's ops, and the one header that lists the ABI.
    "Dialect/AmpRT": ["Runtime/Ops.def"],
    "Target/ONNX": ["Dialect/Train/IR"],
    # The ABI through its symbol list; Window.h is the pooling geometry the
    # lowering and the kernels share (one formula, two users).
    "Conversion": ["Dialect/Train/IR", "Dialect/AmpRT",
                   "Runtime/Ops.def", "Runtime/Window.h"],
    "Runtime": [],
    "Execution": ["Dialect/AmpRT", "Runtime"],
    "Driver": ["Dialect", "Interfaces", "Target", "Conversion", "Runtime",
               "Execution"],
    "Tools": ["Dialect", "Interfaces", "Target", "Conversion", "Runtime",
              "Execution", "Driver"],
}
# Layers that are a plain C/C++ ABI: no MLIR or LLVM headers.
PLAIN = {"Runtime", "kernels"}
# kernels/ (CUDA) may include the runtime's public headers and its own.
KERNELS_ALLOWED = ["Runtime"]
# Known departures, each a (file, included path) pair with the issue that
# removes it: the CUDA kernels reach the CPU runtime's private Internal.h
# through an include path (issue 22, item 3).
EXCEPTIONS = {("kernels/Common.cuh", "Internal.h")}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
SOURCES = (".h", ".cpp", ".cu", ".cuh", ".c", ".inc", ".def")


def layer_of(rel):
    """The layer of a file (path relative to the root), or None."""
    parts = rel.split("/")
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "tools":
        return "Tools"
    if parts[0] == "include" and len(parts) > 2 and parts[1] == "amp":
        rest = "/".join(parts[2:])
    elif parts[0] == "lib":
        rest = "/".join(parts[1:])
    else:
        return None
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if rest.startswith(layer + "/"):
            return layer
    return None


def check_file(root, rel, layer):
    errors = []
    with open(os.path.join(root, rel), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            if (rel, inc) in EXCEPTIONS:
                continue
            if layer in PLAIN and inc.split("/")[0] in ("mlir", "llvm"):
                errors.append(f"{rel}:{n}: #include \"{inc}\": {layer} is a "
                              "plain C/C++ ABI (no MLIR or LLVM headers)")
                continue
            if layer == "kernels":
                if inc.startswith("amp/") and not any(
                        inc[4:].startswith(p) for p in KERNELS_ALLOWED):
                    errors.append(f"{rel}:{n}: #include \"{inc}\": kernels/ "
                                  "may use the runtime's public headers only")
                elif "/" not in inc and inc.endswith(".h") and \
                        not os.path.exists(os.path.join(
                            root, os.path.dirname(rel), inc)) and \
                        os.path.exists(os.path.join(root, "lib", "Runtime",
                                                    inc)):
                    errors.append(f"{rel}:{n}: #include \"{inc}\": a private "
                                  "header of lib/Runtime")
                continue
            if not inc.startswith("amp/"):
                continue
            path = inc[4:]
            ok = path.startswith(layer + "/") or any(
                path.startswith(p) for p in ALLOWED[layer])
            # The aggregate registration headers (InitAll*.h) sit at the
            # top: the tools include them.
            if not ok and layer == "Tools" and path.startswith("InitAll"):
                ok = True
            if not ok:
                errors.append(f"{rel}:{n}: #include \"{inc}\": {layer} may "
                              "use " + (", ".join(ALLOWED[layer]) or
                                        "nothing of amp-mlir") +
                              " (../shared/DESIGN.md, Layers)")
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    errors, files = [], 0
    for top in ("include", "lib", "kernels", "tools"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCES):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                layer = layer_of(rel)
                if layer is None:
                    continue
                files += 1
                errors += check_file(root, rel, layer)
    for e in errors:
        print(e)
    print(f"layer-rules: {files} files, "
          f"{'FAIL (%d)' % len(errors) if errors else 'PASS'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
