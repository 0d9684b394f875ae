#!/usr/bin/env bash
# Makes a self-contained folder for running the CUDA tests and the GPU
# benchmarks on a machine that has a GPU and Python (torch, numpy) but no
# LLVM/MLIR 22, protobuf 3.21 or ONNX C++ libraries: a GPU box, a CI runner
# image, a rented instance.
#
#   utils/gpu-bundle.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR is a build configured with CUDA (AMP_ENABLE_CUDA=ON, e.g. the
# sm_80 + sm_90a one of docs/benchmarks/train-step.md). OUT_DIR gets:
#
#   bin/amp-run          amp-run linked against MLIR's and LLVM's static
#                        archives (Debian ships them beside libMLIR.so), so
#                        it needs neither libMLIR.so nor libLLVM.so (257 MB
#                        together, with z3/icu/xml2 behind them); the linker
#                        keeps only what amp-run uses (about 13 MB).
#   bin/FileCheck, not, count, lit/  what the lit tests need.
#   lib/                 libAmpRuntime.so and the shared libraries above that
#                        such a machine may lack (protobuf 3.21, onnx_proto,
#                        z3 for FileCheck; oneDNN, libgomp and Open MPI for
#                        the runtime). CUDA's own libraries are not copied:
#                        they come from the GPU machine.
#
# bench/gpu_session.sh runs everything from such a folder. The CUDA build
# itself is unchanged: this only relinks its objects.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out=$2
llvm=/usr/lib/llvm-22
cmake --build "$build" --target amp-run AmpRuntime
ldd "$build/lib/libAmpRuntime.so" | grep -q libcudart || {
  echo "$0: $build/lib/libAmpRuntime.so has no CUDA backend" \
       "(configure with -DAMP_ENABLE_CUDA=ON where nvcc is)" >&2
  exit 1
}
mkdir -p "$out/bin" "$out/lib"
out=$(cd "$out" && pwd)

# amp-run's own link line, with the MLIR and LLVM dylibs replaced by their
# archives and the rpath pointing at the bundle's lib/.
link=$(cd "$build" && ninja -t commands bin/amp-run | tail -n 1)
link=${link#*&& }
link=${link%% && *}
read -r -a words <<<"$link"
args=()
for w in "${words[@]}"; do
  case "$w" in
    */libMLIR.so*) args+=(-Wl,--start-group "$llvm"/lib/libMLIR*.a
                          "$llvm"/lib/libLLVM*.a -Wl,--end-group) ;;
    */libLLVM.so*) ;;
    -Wl,-rpath,*) args+=('-Wl,-rpath,$ORIGIN/../lib') ;;
    bin/amp-run) args+=("$out/bin/amp-run") ;;
    *) args+=("$w") ;;
  esac
done
linker=()
command -v ld.lld >/dev/null && linker=(-fuse-ld=lld)
(cd "$build" && "${args[@]}" "${linker[@]}" -lz /usr/lib/x86_64-linux-gnu/libzstd.so.1 -lpthread -ldl)

cp "$build/lib/libAmpRuntime.so" "$out/lib/"
for l in libprotobuf.so.32 libonnx_proto.so.1 libz3.so.4; do
  cp -L "/usr/lib/x86_64-linux-gnu/$l" "$out/lib/"
done
# Whatever else the runtime links that such a machine may lack (oneDNN and
# its OpenCL loader, GCC's OpenMP, Open MPI and what it links): every
# library ldd resolves, less the C/C++ runtime and CUDA's own.
ldd "$build/lib/libAmpRuntime.so" | awk '/=> \//{print $3}' | while read -r l; do
  case "$(basename "$l")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*) ;;
    libstdc++.so*|libgcc_s.so*|libz.so*|ld-linux*) ;;
    libcuda*|libcublas*|libcudnn*|libnccl*|libcudart*) ;;
    *) cp -L "$l" "$out/lib/" ;;
  esac
done
cp -L "$llvm/bin/FileCheck" "$llvm/bin/not" "$llvm/bin/count" "$out/bin/"
rm -rf "$out/lit"
cp -r "$llvm/utils/lit" "$out/lit"
find "$out/lit" -name __pycache__ -prune -exec rm -rf {} +
strip "$out/bin/amp-run"
# What amp-run still needs besides the C/C++ runtime and CUDA.
LD_LIBRARY_PATH="$out/lib" ldd "$out/bin/amp-run" |
  grep -v -E 'lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so|ld-linux|vdso|cuda|cublas|cudnn' || true
du -sh "$out"
