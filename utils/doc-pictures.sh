#!/usr/bin/env bash
# Renders the pictures the docs show, from shipped examples (test/Inputs,
# the crafted models of test/python/failure_models.py), with the built
# tools and Graphviz's dot (setup installs it):
#   diagnostics-compare.svg  amp-run --compare-precision --compare-dot on
#                            the activation_overflow model: each node
#                            filled by the error it adds (docs/Diagnostics.md)
# Usage: utils/doc-pictures.sh [OUT_DIR]   (default docs/images)
# test/Execution/compare-precision.test runs it into a temporary folder.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/images}"
build="${AMP_BUILD_DIR:-$root/build}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"${AMP_ORT_PYTHON:-$root/.venv-ort-training/bin/python}" \
  "$root/test/python/failure_models.py" \
  "$work/models" > /dev/null 2>&1
m="$work/models/activation_overflow"
"$build/bin/amp-run" "$m/training_model.onnx" "$m/optimizer_model.onnx" \
  --weights "$m/forward.onnx" --batch 4 --steps 1 --data synthetic:3 \
  --compare-precision --compare-top 0 --compare-dot "$work/compare.dot" \
  > /dev/null 2>&1
dot -Tsvg "$work/compare.dot" -o "$out/diagnostics-compare.svg"
echo "doc-pictures: wrote $out/diagnostics-compare.svg"
