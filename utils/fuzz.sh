#!/usr/bin/env bash
# Builds the ONNX importer fuzzer with clang-22 (libFuzzer + ASan + UBSan) in
# build-fuzz/ and runs it on a corpus seeded with the test models.
#   utils/fuzz.sh [SECONDS]      run for SECONDS (default 60)
#   utils/fuzz.sh --build-only   only build (utils/setup.sh does this)
#   utils/fuzz.sh --smoke        30 s on the existing build; exit 77 (skip)
#                                when it was not built (ctest runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${AMP_FUZZ_BUILD_DIR:-build-fuzz}
MODE=run
SECONDS_TO_RUN=${1:-60}
case "${1:-}" in
  --build-only) MODE=build ;;
  --smoke) MODE=smoke; SECONDS_TO_RUN=30 ;;
esac
if [ "$MODE" = smoke ]; then
  if [ ! -x "$BUILD/bin/amp-fuzz-import" ]; then
    echo "SKIPPED: $BUILD/bin/amp-fuzz-import is not built (utils/setup.sh builds it when clang-22 is installed)"
    exit 77
  fi
elif [ ! -f "$BUILD/build.ninja" ]; then
  LAUNCHER=()
  command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -G Ninja -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DLLVM_USE_LINKER=lld \
    -DAMP_ENABLE_FUZZER=ON -DAMP_ENABLE_CUDA=OFF "${LAUNCHER[@]}" >/dev/null
fi
[ "$MODE" = smoke ] || cmake --build "$BUILD" --target amp-fuzz-import
[ "$MODE" = build ] && exit 0
CORPUS="$BUILD/fuzz-corpus"
mkdir -p "$CORPUS"
# Seeds: small real models (copies; the originals are never touched): the
# test inputs, and the shared external graphs where the checkout has them (a
# clone elsewhere does not; a failing find must not end the script).
roots=(test/Inputs)
[ -d ../shared/testdata/onnx-external ] && roots+=(../shared/testdata/onnx-external)
mapfile -t seeds < <(find "${roots[@]}" -name '*.onnx' -size -64k 2>/dev/null | sort | head -200)
for f in "${seeds[@]}"; do
  cp "$f" "$CORPUS/$(echo "$f" | md5sum | cut -c1-16).onnx"
done
mkdir -p "$BUILD/fuzz-artifacts"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
"$BUILD/bin/amp-fuzz-import" "$CORPUS" -max_total_time="$SECONDS_TO_RUN" \
  -rss_limit_mb=4096 -max_len=262144 -timeout=20 \
  -artifact_prefix="$BUILD/fuzz-artifacts/" -print_final_stats=1
