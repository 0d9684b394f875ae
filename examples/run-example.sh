#!/usr/bin/env bash
# The main job on a shipped example: the MLP training graph made by
# onnxruntime-training's generate_artifacts goes into the train dialect and
# comes back out as ONNX, identical to the original; then the AMP and
# loss-scaling passes rewrite it for fp16 and the result is checked with
# onnx.checker and strict shape inference; last, amp-run trains the pair
# in AMP for 20 steps on the CPU backend and writes the weights (ONNX) and
# onnxruntime-training's checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
BIN="$BUILD_DIR/bin"
IN=test/Inputs/fixtures/mlp/training_model.onnx
OUT_DIR="$BUILD_DIR/example"
mkdir -p "$OUT_DIR"
echo "== amp-translate --import-onnx $IN"
"$BIN/amp-translate" --import-onnx "$IN" -o "$OUT_DIR/training_model.mlir"
grep -c '= train\.' "$OUT_DIR/training_model.mlir" | sed 's/^/   ops in the train dialect: /'
echo "== amp-opt $OUT_DIR/training_model.mlir -o $OUT_DIR/training_model.out.onnx"
"$BIN/amp-opt" "$OUT_DIR/training_model.mlir" -o "$OUT_DIR/training_model.out.onnx"
echo "== compare with the original (Python onnx)"
"${PYTHON:-python3}" test/python/onnx_compare.py "$IN" "$OUT_DIR/training_model.out.onnx" \
  && echo "   round trip identical: $IN"
echo "== amp-opt $IN --auto-mixed-precision --loss-scaling -o $OUT_DIR/training_model.amp.onnx"
"$BIN/amp-opt" "$IN" --auto-mixed-precision="report=$OUT_DIR/amp-report.json" \
  --loss-scaling -o "$OUT_DIR/training_model.amp.onnx"
"${PYTHON:-python3}" - "$OUT_DIR/training_model.amp.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m, full_check=True)
onnx.shape_inference.infer_shapes(m, strict_mode=True)
assert {"amp.loss_scale", "amp.growth_tracker"} <= {i.name for i in m.graph.input}
assert "amp.all_finite" in {o.name for o in m.graph.output}
print(f"   valid ONNX: {len(m.graph.node)} nodes, "
      f"{sum(n.op_type == 'Cast' for n in m.graph.node)} casts")
PY
OPT=test/Inputs/fixtures/mlp/optimizer_model.onnx
echo "== amp-run $IN $OPT --amp --steps 20 (the runtime's CPU backend)"
"$BIN/amp-run" "$IN" "$OPT" --weights test/Inputs/fixtures/mlp/checkpoint \
  --amp --batch 8 --steps 20 --data synthetic:1 \
  --log "$OUT_DIR/loss.csv" --ort-checkpoint "$OUT_DIR/checkpoint" \
  -o "$OUT_DIR/trained.onnx"
"${PYTHON:-python3}" - "$OUT_DIR/loss.csv" "$OUT_DIR/trained.onnx" <<'PY'
import csv, sys, onnx
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 20 and all(r["all_finite"] == "1" for r in rows)
m = onnx.load(sys.argv[2])
print(f"   20 steps: loss {float(rows[0]['loss']):.4f} -> {float(rows[-1]['loss']):.4f}, "
      f"scale {rows[-1]['loss_scale']}; {len(m.graph.initializer)} trained weights "
      f"in {sys.argv[2]}, onnxruntime-training's checkpoint beside it")
PY
