#!/usr/bin/env python3
"""The layer rules of ../shared/DESIGN.md, checked on the includes.

Each layer (a folder under include/amp and lib, or kernels/ and tools/) may
include the headers of the layers it is allowed to use and nothing else of
amp-mlir; the runtime and the CUDA kernels include no MLIR or LLVM header
(a plain C/C++17 ABI); the runtime's backend interface (Runtime/Backend)
serves lib/Runtime and kernels/ alone, and its host/device arithmetic
(Runtime/Math) uses no STL container. Every violation is printed as FILE:LINE: the include
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
    # The runtime's scalar arithmetic, compiled for the host and (by nvcc)
    # the device: the ABI's dtype codes and nothing else.
    "Runtime/Math": ["Runtime/Runtime.h"],
    # The backend interface and the argument checks: the ABI's headers and
    # the arithmetic.
    "Runtime/Backend": ["Runtime/Runtime.h", "Runtime/Kernels.h",
                        "Runtime/Ops.def", "Runtime/Math"],
    # The C ABI and the CPU kernels; Runtime/Math and Runtime/Backend are its
    # own (below it in the tree).
    "Runtime": [],
    "Execution": ["Dialect/AmpRT", "Runtime"],
    "Driver": ["Dialect", "Interfaces", "Target", "Conversion", "Runtime",
               "Execution"],
    "Tools": ["Dialect", "Interfaces", "Target", "Conversion", "Runtime",
              "Execution", "Driver"],
}
# Layers that are a plain C/C++ ABI: no MLIR or LLVM headers.
PLAIN = {"Runtime", "Runtime/Math", "Runtime/Backend", "kernels"}
# kernels/ (CUDA) may include the runtime's headers (amp/Runtime: the ABI,
# Runtime/Math, Runtime/Backend) and its own.
KERNELS_ALLOWED = ["Runtime"]
# Headers only some layers may include, though others may use their parent:
# the backend interface is the runtime's and its backends' (its functions
# are not exported by libAmpRuntime.so).
PRIVATE_TO = {"Runtime/Backend": {"Runtime", "kernels"}}
# Runtime/Math is scalar arithmetic that nvcc compiles for the device too.
CONTAINERS = {"vector", "string", "map", "unordered_map", "set",
              "unordered_set", "list", "deque", "functional", "memory"}
# Known departures, each a (file, included path) pair with the issue that
# removes it. None at present (issue 22, item 3 removed the last: the CUDA
# kernels reaching lib/Runtime/Internal.h through an include path).
EXCEPTIONS = set()

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
            if layer == "Runtime/Math" and inc in CONTAINERS:
                errors.append(f"{rel}:{n}: #include <{inc}>: Runtime/Math is "
                              "host and device arithmetic (no STL containers)")
                continue
            private = [p for p in PRIVATE_TO if inc.startswith(f"amp/{p}/")]
            if private and layer != private[0] and \
                    layer not in PRIVATE_TO[private[0]]:
                errors.append(f"{rel}:{n}: #include \"{inc}\": {private[0]} "
                              "is private to " + ", ".join(
                                  sorted(PRIVATE_TO[private[0]])))
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
