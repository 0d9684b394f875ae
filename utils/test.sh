#!/usr/bin/env bash
# Runs the whole amp-mlir test suite (lit tests through ctest) on the build
# made by utils/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${AMP_BUILD_DIR:-build}
cmake --build "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
