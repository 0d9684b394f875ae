#!/usr/bin/env bash
# Builds amp-mlir with ASan + UBSan in build-asan/ and runs the whole test
# suite there (the sanitizers abort on the first error).
set -euo pipefail
cd "$(dirname "$0")/.."
export AMP_BUILD_DIR=${AMP_BUILD_DIR:-build-asan}
export AMP_SKIP_EXAMPLE=1
export AMP_CMAKE_ARGS="-DAMP_ENABLE_SANITIZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo ${AMP_CMAKE_ARGS:-}"
# libMLIR.so/libLLVM.so are not instrumented. LLVM's allocator headers,
# inlined into our instrumented code, poison slabs that the uninstrumented
# library then hands out unpoisoned-in-its-eyes: "use-after-poison" false
# positives. allow_user_poisoning=0 ignores that manual poisoning; real
# heap/stack errors are still caught. Leaks in MLIR's global registries are
# not ours to report (the fuzz build checks the importer for leaks).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
utils/setup.sh
utils/test.sh "$@"
