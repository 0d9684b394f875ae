#!/usr/bin/env bash
# Renders the pictures the docs show, from shipped examples (test/Inputs,
# the crafted models of test/python/failure_models.py, scikit-learn's
# bundled digits), with the built tools, Graphviz's dot (setup installs it)
# and utils/plot_loss.py:
#   diagnostics-compare.svg  amp-run --compare-precision --compare-dot on
#                            the activation_overflow model: each node
#                            filled by the error it adds (docs/Diagnostics.md)
#   amp-graph-mlp.svg        amp-opt --auto-mixed-precision's dot= view of
#                            the MLP fixture's training graph: fp16 nodes,
#                            fp32 nodes, the casts (README.md)
#   loss-fp32-vs-amp.svg     the MLP fixture trained 300 steps on digits by
#                            amp-run in fp32, --amp and --amp=bf16: losses
#                            and the loss scale (README.md)
# Usage: utils/doc-pictures.sh [OUT_DIR [PICTURE...]]
#   OUT_DIR defaults to docs/images; PICTURE is a name above without .svg
#   (default: all of them).
# test/Execution/compare-precision.test renders diagnostics-compare and
# test/Docs/doc-pictures.test the others, into temporary folders.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/images}"
shift || true
build="${AMP_BUILD_DIR:-$root/build}"
python="${PYTHON:-python3}"
pictures=("$@")
if [ ${#pictures[@]} -eq 0 ]; then
  pictures=(diagnostics-compare amp-graph-mlp loss-fp32-vs-amp)
fi
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mlp="$root/test/Inputs/fixtures/mlp"

diagnostics_compare() {
  "${AMP_ORT_PYTHON:-$root/.venv-ort-training/bin/python}" \
    "$root/test/python/failure_models.py" \
    "$work/models" > /dev/null 2>&1
  local m="$work/models/activation_overflow"
  "$build/bin/amp-run" "$m/training_model.onnx" "$m/optimizer_model.onnx" \
    --weights "$m/forward.onnx" --batch 4 --steps 1 --data synthetic:3 \
    --compare-precision --compare-top 0 --compare-dot "$work/compare.dot" \
    > /dev/null 2>&1
  dot -Tsvg "$work/compare.dot" -o "$out/diagnostics-compare.svg"
}

amp_graph_mlp() {
  "$build/bin/amp-opt" "$mlp/training_model.onnx" \
    --auto-mixed-precision="dot=$work/amp.dot summary=false" \
    -o "$work/amp.onnx"
  dot -Tsvg "$work/amp.dot" -o "$out/amp-graph-mlp.svg"
}

loss_fp32_vs_amp() {
  # digits-accuracy.test's data: 8x8 images scaled to [0, 1], the first
  # 80% of a seeded permutation.
  "$python" - "$work/digits" <<'PY'
import os, sys
import numpy as np
from sklearn.datasets import load_digits
d = load_digits()
order = np.random.default_rng(0).permutation(len(d.target))
n = int(0.8 * len(order))
os.makedirs(sys.argv[1])
np.save(os.path.join(sys.argv[1], "input.npy"),
        (d.data / 16.0).astype(np.float32)[order][:n])
np.save(os.path.join(sys.argv[1], "labels.npy"),
        d.target.astype(np.int64)[order][:n])
PY
  local mode
  for mode in fp32 fp16 bf16; do
    local amp=()
    [ "$mode" = fp32 ] || amp=(--amp="$mode")
    "$build/bin/amp-run" "$mlp/training_model.onnx" \
      "$mlp/optimizer_model.onnx" --weights "$mlp/forward.onnx" \
      --data "$work/digits" --batch 32 --steps 300 --lr 3e-3 --seed 0 \
      "${amp[@]}" --log "$work/$mode.csv" --quiet 2> "$work/$mode.err" \
      || { cat "$work/$mode.err" >&2; exit 1; }
  done
  "$python" "$root/utils/plot_loss.py" "$work/fp32.csv" "$work/fp16.csv" \
    "$work/bf16.csv" --label fp32 --label "AMP fp16 (dynamic loss scale)" \
    --label "AMP bf16" \
    --title "MLP fixture, scikit-learn digits, batch 32, AdamW lr 3e-3" \
    -o "$out/loss-fp32-vs-amp.svg"
}

for p in "${pictures[@]}"; do
  case "$p" in
    diagnostics-compare | amp-graph-mlp | loss-fp32-vs-amp) "${p//-/_}" ;;
    *)
      echo "doc-pictures: unknown picture '$p'" >&2
      exit 1
      ;;
  esac
  echo "doc-pictures: wrote $out/$p.svg"
done
