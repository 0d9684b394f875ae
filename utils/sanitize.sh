#!/usr/bin/env bash
# Builds amp-mlir with ASan + UBSan in build-asan/ and runs the whole test
# suite there (the sanitizers abort on the first error).
set -euo pipefail
cd "$(dirname "$0")/.."
export AMP_BUILD_DIR=${AMP_BUILD_DIR:-build-asan}
export AMP_SKIP_EXAMPLE=1
export AMP_CMAKE_ARGS="-DAMP_ENABLE_SANITIZERS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo ${AMP_CMAKE_ARGS:-}"
# libMLIR.so is not instrumented: ASan must be first in the process, and
# leaks in MLIR's own global registries are not ours to report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
utils/setup.sh
utils/test.sh "$@"
