#!/usr/bin/env bash
# Prepares, on this machine and before any device time is spent, everything
# a lent GPU needs for the checks of issue 4, in .gpu/ (gitignored):
#
#   utils/gpu-prep.sh [BUILD_DIR]     # BUILD_DIR: default build/ (setup.sh)
#
#   .gpu/bundle     utils/gpu-bundle.sh of BUILD_DIR: amp-run linked without
#                   libMLIR.so, libAmpRuntime.so with the CUDA backend, lit
#                   and FileCheck (BUILD_DIR must have been configured with
#                   nvcc found: AMP_ENABLE_CUDA=AUTO or ON)
#   .gpu/artifacts  bench/train_step_bench.py make --preset gpu: the MLP, CNN
#                   and transformer training artifacts at GPU sizes, without
#                   their weights (the GPU image has torch but no
#                   onnxruntime-training, so they are made here)
#
# The artifacts need torch and onnxruntime-training in one interpreter:
# the test venv of utils/setup.sh (.venv-ort-training) gets torch 2.4.1
# (examples/fixtures/gen_fixtures.py's version; its TorchScript exporter)
# when it lacks it: a few GB from PyPI, once.
#
# Then it checks that what the device tool sends (the working tree and
# .gpu/, 64 MiB at most) fits, and prints the device call. Device time is
# 15 minutes a session, the start included: bench/gpu_session.sh's BUDGET
# keeps the first call inside one 10-minute command.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
venv=${AMP_ORT_TRAINING_VENV:-.venv-ort-training}

[[ -x $build/bin/amp-run ]] || { echo "$0: no $build/bin/amp-run; run utils/setup.sh first" >&2; exit 1; }
rm -rf .gpu/bundle .gpu/bundle.tar.xz
utils/gpu-bundle.sh "$build" .gpu/bundle

if ! "$venv/bin/python" -c "import torch, onnxruntime.training" 2>/dev/null; then
  echo "gpu-prep: installing torch 2.4.1 into $venv (for the artifacts)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.4.1
fi
rm -rf .gpu/artifacts
"$venv/bin/python" bench/train_step_bench.py make --out .gpu/artifacts --preset gpu

# What the device tool sends: tracked and untracked-not-ignored files, plus
# the carried .gpu/. The bundle's libraries (oneDNN, z3) can take it past
# the tool's 64 MiB: then it travels as .gpu/bundle.tar.xz, which the device
# command unpacks first (python3's tarfile: no xz tool needed there).
sent_size() {
  local tree gpu
  tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } |
          du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
  gpu=$(du -sb .gpu | cut -f1)
  echo $((tree + gpu))
}
unpack=
if (($(sent_size) >= 64 << 20)); then
  echo "gpu-prep: packing .gpu/bundle into .gpu/bundle.tar.xz"
  tar -C .gpu -cJf .gpu/bundle.tar.xz bundle
  rm -rf .gpu/bundle
  unpack='python3 -c "import tarfile; tarfile.open(\".gpu/bundle.tar.xz\").extractall(\".gpu\")" && '
fi
total=$(sent_size)
printf 'gpu-prep: working tree and .gpu: %d MiB of 64\n' $((total >> 20))
if ((total >= 64 << 20)); then
  echo "gpu-prep: too large for the device tool's 64 MiB" >&2
  du -sh .gpu/* >&2
  exit 1
fi
cat <<EOF
gpu-prep: ready. The device call (tool \`run\`, carry [".gpu"], timeout_s 560):
  ${unpack}BUDGET=500 SEEDS=11 bash bench/gpu_session.sh .gpu/bundle \$OUT env seeds train lit profile
then, with the time left: kernels memcheck train-bf16 (docs/benchmarks/gpu-h100.md).
EOF
