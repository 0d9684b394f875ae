#!/usr/bin/env bash
# Sets up amp-mlir on Debian 12: installs every Debian and PyPI package the
# build and the tests need (idempotent, non-interactive), configures and
# builds with CMake + Ninja, then runs the main job on a shipped example.
#
#   utils/setup.sh            # install, build, run the example
#   AMP_SKIP_EXAMPLE=1 utils/setup.sh
#   AMP_BUILD_DIR=build-asan AMP_CMAKE_ARGS=-DAMP_ENABLE_SANITIZERS=ON utils/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${AMP_BUILD_DIR:-build}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

APT_PACKAGES=(
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools  # MLIR 22 + lit/FileCheck
  libprotobuf-dev protobuf-compiler libonnx-dev           # ONNX protobuf in C++
  libflatbuffers-dev                                      # ORT checkpoints
  ninja-build cmake g++ lld ccache                        # build
  clang-22 libclang-rt-22-dev                             # libFuzzer target (+ its ASan/UBSan runtimes)
  clang-format-22 clang-tidy-22                           # utils/check-format.sh, .clang-tidy
  graphviz                                                # docs pictures (utils/doc-pictures.sh)
  openmpi-bin libopenmpi-dev                              # the runtime's "mpi" communicators, mpirun for their tests
  libdnnl-dev                                             # oneDNN: the CPU backend's fast GEMMs (docs/RuntimeABI.md)
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# Test tooling (Python is never needed by the C++ build).
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -q --disable-pip-version-check \
  -r utils/requirements-test.txt 2>&1 | grep -v "Running pip as the 'root' user" || true

# cuDNN's frontend, the header-only C++ API over cuDNN's graph API that the
# CUDA backend's fused attention uses (kernels/Attention.cu): the include/
# folder of its PyPI wheel (one pinned file, checked by its hash), unpacked
# into .deps/cudnn-frontend (gitignored). Without it the build still
# succeeds, and attention runs on the host.
CUDNN_FE_VERSION=1.32.0
CUDNN_FE_SHA256=c6006556017a4d1c914c52a556c71b1267f2d6a0500f742e7b4edef539878df0
CUDNN_FE_DIR=.deps/cudnn-frontend
if [ "$(cat "$CUDNN_FE_DIR/VERSION" 2>/dev/null)" != "$CUDNN_FE_VERSION" ] \
   || [ ! -f "$CUDNN_FE_DIR/include/cudnn_frontend.h" ]; then
  fe_tmp=$(mktemp -d)
  echo "nvidia-cudnn-frontend==$CUDNN_FE_VERSION --hash=sha256:$CUDNN_FE_SHA256" \
    > "$fe_tmp/requirements.txt"
  # The wheel holds a Python module too; only its headers are used, so the
  # one wheel (CPython 3.11, x86-64) serves every host.
  "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --python-version 3.11 --implementation cp --abi cp311 \
    -d "$fe_tmp" -r "$fe_tmp/requirements.txt" 2>&1 \
    | grep -v "Running pip as the 'root' user" || true
  fe_whl=$(ls "$fe_tmp"/nvidia_cudnn_frontend-*.whl 2>/dev/null | head -n 1 || true)
  if [ -n "$fe_whl" ]; then
    "$PYTHON" - "$fe_whl" "$fe_tmp/out" <<'EOF'
import sys
import zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist()
                               if n.startswith("include/")])
EOF
    rm -rf "$CUDNN_FE_DIR"
    mkdir -p "$CUDNN_FE_DIR"
    mv "$fe_tmp/out/include" "$CUDNN_FE_DIR/include"
    echo "$CUDNN_FE_VERSION" > "$CUDNN_FE_DIR/VERSION"
  else
    echo "setup: nvidia-cudnn-frontend $CUDNN_FE_VERSION not downloaded;" \
         "the CUDA backend's attention will run on the host"
  fi
  rm -rf "$fe_tmp"
fi

# ONNX Runtime's training build (the com.microsoft gradient, accumulator and
# optimizer kernels) runs the rewritten training graphs in the loss-scaling
# tests. It cannot share an environment with the plain onnxruntime above, so
# it gets its own virtualenv (gitignored); the tests that need it are
# reported UNSUPPORTED when it is missing.
ORT_TRAINING_VENV=${AMP_ORT_TRAINING_VENV:-.venv-ort-training}
if [ -z "${AMP_SKIP_ORT_TRAINING:-}" ]; then
  if [ ! -x "$ORT_TRAINING_VENV/bin/python" ]; then
    "$PYTHON" -m venv "$ORT_TRAINING_VENV"
  fi
  "$ORT_TRAINING_VENV/bin/python" -m pip install -q --disable-pip-version-check \
    -r utils/requirements-ort-training.txt 2>&1 \
    | grep -v "Running pip as the 'root' user" || true
fi

# The venv's absolute path (AMP_ORT_TRAINING_VENV may be either).
case "$ORT_TRAINING_VENV" in
  /*) ORT_TRAINING_VENV_ABS=$ORT_TRAINING_VENV ;;
  *) ORT_TRAINING_VENV_ABS=$PWD/$ORT_TRAINING_VENV ;;
esac

LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -G Ninja -S . -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DLLVM_USE_LINKER=lld \
  -DAMP_PYTHON="$("$PYTHON" -c "import sys; print(sys.executable)")" \
  -DAMP_ORT_TRAINING_PYTHON="$ORT_TRAINING_VENV_ABS/bin/python" \
  "${LAUNCHER[@]}" ${AMP_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR"

# The importer fuzzer: a separate clang-22 build with libFuzzer, ASan and
# UBSan (the test suite runs a 30 s smoke of it).
if [ -z "${AMP_SKIP_FUZZ:-}" ] && command -v clang++-22 >/dev/null; then
  utils/fuzz.sh --build-only
fi

if [ -z "${AMP_SKIP_EXAMPLE:-}" ]; then
  examples/run-example.sh "$BUILD_DIR"
fi
