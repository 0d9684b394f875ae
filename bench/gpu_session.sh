#!/usr/bin/env bash
# Every GPU check of issue 4 in one go, on a machine with a GPU, from a
# folder made by utils/gpu-bundle.sh (no LLVM/MLIR needed there):
#
#   bench/gpu_session.sh BUNDLE OUT_DIR [STAGE...]
#
# Stages (all by default, in this order):
#   env     the device, driver, CUDA libraries found, Python packages;
#   lit     the lit tests that need a CUDA device (cuda-vs-cpu.test,
#           device-cuda.test, device-cuda-models.test) plus the CPU
#           stand-ins, through lit;
#   seeds   test/python/runtime_cuda.py on three more random seeds, and its
#           convolution tests with AMPRT_CUDNN_FIND=1;
#   kernels bench/gpu_kernels.py (GEMM vs cuBLAS peak, AdamW vs bandwidth);
#   train   bench/train_step_bench.py run --device cuda on the artifacts in
#           BUNDLE/../artifacts (train_step_bench.py make --preset gpu);
#   train-calls train with --cuda-graph=off: the steps call by call, to
#           set against train's one graph launch a step;
#   train-nchw train with --channels-last=off: convolutions in the graph's
#           NCHW, to set against train's NHWC regions (the default on a
#           device);
#   train-find the CNN again with measured convolution algorithms on both
#           sides (AMPRT_CUDNN_FIND=1, torch.backends.cudnn.benchmark);
#   train-gemm the MLP at batch 8192, where its step is GEMM-bound: the
#           step's GEMM throughput against cuBLAS's peak (torch.matmul on
#           its largest product) in the same run (--gemm-peak);
#   train-bf16 train with --precision bf16 (amp-run --amp=bf16 against
#           bf16 autocast without a GradScaler);
#   peer    bench/torch_peer_bench.py: PyTorch eager with fused AdamW and
#           torch.compile (default and max-autotune) against amp-run --amp;
#   memcheck runtime_cuda.py under compute-sanitizer's memcheck;
#   profile amp-run with AMPRT_PROFILE=1 on each of those artifacts, fp32
#           and AMP, 30 steps: where a step's time goes, kernel by kernel
#           (PROFILE_MODELS: a subset of the artifacts' models);
#   compare-cost bench/compare_cost_bench.py on the device: one step of
#           --compare-precision against one fp32 step (issue 23), on the
#           artifacts' models at their batches; and the transformer
#           fixture's comparison on cuda and cpu (compare-<device>.json);
#   compare-profile AMPRT_PROFILE=1 on --compare-precision of the artifacts'
#           PROFILE_MODELS (default mlp), 1 and 4 steps, their difference
#           per step (bench/profile_diff.py).
# STAGE_TIMEOUT (seconds, default 400) bounds each stage. BUDGET (seconds)
# bounds them all together: each stage gets at most what is left, and the
# stages that would start with less than MIN_STAGE (default 40) left are
# skipped and listed, so that one device call ends in time and returns its
# logs. SEEDS (default "11 22 33") are the seeds stage's seeds.
# Each stage writes OUT_DIR/<stage>.log; the script goes on after a failed
# stage and exits non-zero if any failed or was skipped.
#
# A lent GPU gives a session 15 minutes of device time in all, the
# machine's start included; a device command may run 10 minutes. The
# stages in the order that decides issue 4 first, in one call:
#
#   BUDGET=500 SEEDS=11 bench/gpu_session.sh .gpu/bundle $OUT \
#     env seeds train lit profile
#
# (with `timeout_s` 560 and `carry` [".gpu"]); then kernels, memcheck,
# train-bf16 and more seeds in a second call if time is left.
set -uo pipefail
if [[ -z ${AMP_GS_STAGE:-} ]]; then
  if [[ $# -lt 2 ]]; then
    echo "usage: $0 BUNDLE OUT_DIR [env|lit|seeds|kernels|train|train-calls|train-nchw|train-find|train-gemm|train-bf16|peer|memcheck|profile|compare-cost|compare-profile]..." >&2
    exit 2
  fi
  repo=$(cd "$(dirname "$0")/.." && pwd)
  bundle=$(cd "$1" && pwd)
  out=$2
  shift 2
  stages=("$@")
  [[ ${#stages[@]} -eq 0 ]] && stages=(env lit seeds kernels train)
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  py=${PYTHON:-python3}
  export repo bundle out py SEEDS
fi
export PYTHONUNBUFFERED=1

# CUDA's libraries on the GPU machine: the toolkit's, else the ones the
# Python wheels (torch's nvidia-* packages) bring. (A stage's child
# inherits the paths.)
if [[ -z ${AMP_GS_STAGE:-} ]]; then
  cudalibs=()
  for name in libcudart.so.13 libcublasLt.so.13 libcudnn.so.9; do
    f=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
          -name "$name" 2>/dev/null | head -n 1)
    [[ -n $f ]] && cudalibs+=("$(dirname "$f")")
  done
  libpath=$bundle/lib
  for d in "${cudalibs[@]}"; do
    [[ :$libpath: == *:$d:* ]] || libpath=$libpath:$d
  done
  export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$bundle/bin:$PATH:/usr/local/cuda/bin
fi

failed=()
skipped=()
# From the script's start (bash's SECONDS), the library search included.
budget_end=${BUDGET:-1000000}
run_stage() {
  local name=$1
  local left=$((budget_end - SECONDS))
  if ((left < ${MIN_STAGE:-40})); then
    echo "=== $name: skipped, ${left} s of the budget left"
    skipped+=("$name")
    return
  fi
  local t=${STAGE_TIMEOUT:-400}
  ((t > left)) && t=$left
  echo "=== $name (at most $t s)"
  local t0=$SECONDS
  # The stage runs in a child of this script under one timeout, which
  # signals the child's whole process group: no command inside may start
  # a `timeout` of its own (that would take it out of the group).
  AMP_GS_STAGE=$name timeout -k 10 "$t" bash "$0" \
    > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  ((rc == 124 || rc == 137)) && echo "=== $name: stopped at $t s"
  echo "=== $name: exit $rc, $((SECONDS - t0)) s"
  [[ $rc -eq 0 ]] || failed+=("$name")
}

stage_env() {
  nvidia-smi || true
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$bundle/lib/libAmpRuntime.so"
  ldd "$bundle/bin/amp-run"
  "$py" -c "import sys, numpy, torch; print(sys.version); print('numpy', numpy.__version__, 'torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
  "$py" -c "import ctypes as C, sys; L = C.CDLL(sys.argv[1]); c = C.c_void_p(); r = L.amprt_context_create(b'cuda', C.byref(c)); L.amprt_last_error.restype = C.c_char_p; print('amprt_context_create(cuda) =', r, L.amprt_last_error(None)); sys.exit(r)" "$bundle/lib/libAmpRuntime.so"
}

stage_lit() {
  # A lit site config for the bundle (the build tree's has this machine's
  # paths in it); the tests and their inputs come from the checkout.
  mkdir -p "$bundle/test"
  cat > "$bundle/test/lit.site.cfg.py" <<EOF
config.llvm_tools_dir = "$bundle/bin"
config.llvm_shlib_ext = ".so"
config.amp_obj_root = "$bundle"
config.amp_src_root = "$repo"
config.amp_tools_dir = "$bundle/bin"
config.amp_testdata_dir = "$repo/../shared/testdata"
config.python_executable = "$(command -v "$py")"
config.ort_training_python = ""
config.amp_sanitizers = "OFF"
import lit.llvm
lit.llvm.initialize(lit_config, config)
lit_config.load_config(config, "$repo/test/lit.cfg.py")
EOF
  "$py" -c "import sys; sys.path.insert(0, sys.argv.pop(1)); from lit.main import main; main()" \
    "$bundle/lit" -v -a "$bundle/test" --filter 'cuda' --show-unsupported
}

stage_seeds() {
  local rc=0 s
  for s in ${SEEDS:-11 22 33}; do
    "$py" "$repo/test/python/runtime_cuda.py" --lib "$bundle/lib/libAmpRuntime.so" \
      --ops-def "$repo/include/amp/Runtime/Ops.def" --seed $s || rc=1
  done
  # The convolutions again with the algorithms cuDNN measures.
  AMPRT_CUDNN_FIND=1 "$py" "$repo/test/python/runtime_cuda.py" \
    --lib "$bundle/lib/libAmpRuntime.so" \
    --ops-def "$repo/include/amp/Runtime/Ops.def" -k conv || rc=1
  return $rc
}

stage_kernels() {
  "$py" "$repo/bench/gpu_kernels.py" --lib "$bundle/lib/libAmpRuntime.so" \
    --ops-def "$repo/include/amp/Runtime/Ops.def"
}

stage_train() {
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --markdown "$out/train-step.md"
}

stage_train-find() {
  # The CNN with measured convolution algorithms on both sides
  # (AMPRT_CUDNN_FIND=1, torch.backends.cudnn.benchmark).
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --models cnn --cudnn-benchmark \
    --markdown "$out/train-step-find.md"
}

stage_train-gemm() {
  # The MLP where its step is GEMM-bound (its preset batch of 512 is not).
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --models mlp --batch "${GEMM_BATCH:-8192}" --gemm-peak \
    --markdown "$out/train-step-gemm.md"
}

stage_train-calls() {
  # The steps call by call (--cuda-graph=off), against the graph of
  # stage train: what one launch a step saves.
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --amp-run-flag=--cuda-graph=off \
    --markdown "$out/train-step-calls.md"
}

stage_train-nchw() {
  # Convolutions channels first (--channels-last=off), against the NHWC
  # regions of stage train: what the layout gains the CNN.
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --amp-run-flag=--channels-last=off \
    --markdown "$out/train-step-nchw.md"
}

stage_train-bf16() {
  "$py" "$repo/bench/train_step_bench.py" run \
    --artifacts "$bundle/../artifacts" --amp-run "$bundle/bin/amp-run" \
    --device cuda --precision bf16 --markdown "$out/train-step-bf16.md"
}

stage_peer() {
  # PyTorch at its best (issue 26): eager with AdamW(fused=True),
  # torch.compile and its max-autotune mode, against amp-run --amp, fp16
  # and bf16. PEER_DEADLINE bounds the measurements started.
  "$py" "$repo/bench/torch_peer_bench.py" --artifacts "$bundle/../artifacts" \
    --amp-run "$bundle/bin/amp-run" --deadline "${PEER_DEADLINE:-300}" \
    --markdown "$out/peer.md"
}

stage_memcheck() {
  compute-sanitizer --tool memcheck --leak-check no \
    --error-exitcode 3 "$py" "$repo/test/python/runtime_cuda.py" \
    --lib "$bundle/lib/libAmpRuntime.so" \
    --ops-def "$repo/include/amp/Runtime/Ops.def" --seed 44
}

# The preset batch of artifact model $1 (the artifacts' sizes.json).
batch_of() {
  "$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['models'][sys.argv[2]]['batch'])" \
    "$bundle/../artifacts/sizes.json" "$1"
}

stage_compare-cost() {
  # Issue 23: one step of --compare-precision against one fp32 step, on the
  # benchmark models (weights from --init), each at its preset batch; then
  # the transformer fixture's comparison on cuda and on cpu side by side.
  local m b rc=0
  for m in mlp cnn transformer; do
    b=$(batch_of "$m")
    "$py" "$repo/bench/compare_cost_bench.py" --amp-run "$bundle/bin/amp-run" \
      --inputs "$bundle/../artifacts" --models "$m" --batch "$b" --init 1 \
      --steps 6 --repeat "${COMPARE_REPEAT:-2}" --device cuda || rc=1
  done
  local d=$repo/test/Inputs/fixtures/transformer dev
  for dev in cuda cpu; do
    echo "== fixture transformer, --compare-precision on $dev"
    "$bundle/bin/amp-run" "$d/training_model.onnx" "$d/optimizer_model.onnx" \
      --weights "$d/forward.onnx" --batch 64 --steps 2 --data synthetic:3 \
      --device $dev --quiet --compare-precision --compare-top 6 \
      --compare-report "$out/compare-$dev.json" || rc=1
  done
  return $rc
}

stage_compare-profile() {
  # Where a compared step's time goes: AMPRT_PROFILE=1 on --compare-precision
  # (each of its contexts prints its table when it goes) with 1 and with 4
  # steps; bench/profile_diff.py gives the kernel calls of one step, the
  # first step's one-time costs cancelled.
  local m b n rc=0
  for m in ${PROFILE_MODELS:-mlp}; do
    b=$(batch_of "$m")
    for n in 1 4; do
      AMPRT_PROFILE=1 "$bundle/bin/amp-run" "$bundle/../artifacts/$m/training_model.onnx" \
        "$bundle/../artifacts/$m/optimizer_model.onnx" --init 1 --batch "$b" \
        --steps $n --data synthetic:1 --device cuda --quiet --compare-precision \
        --compare-top 0 > "$out/compare-profile-$m-$n.log" 2>&1 || rc=1
    done
    echo "== $m --compare-precision, batch $b: kernel calls per step"
    grep "compared step took" "$out/compare-profile-$m-4.log"
    "$py" "$repo/bench/profile_diff.py" "$out/compare-profile-$m-1.log" \
      "$out/compare-profile-$m-4.log" 1 4 || rc=1
  done
  return $rc
}

stage_profile() {
  local d m rc=0
  for d in "$bundle"/../artifacts/*/; do
    [[ -z ${PROFILE_MODELS:-} || " $PROFILE_MODELS " == *" $(basename "$d") "* ]] ||
      continue
    m=$(batch_of "$(basename "$d")")
    for amp in "" --amp; do
      echo "== $(basename "$d") ${amp:-fp32} batch $m (first step left out)"
      # One step's calls: the count amp-run prints ("N + 1 runtime calls").
      local calls
      calls=$("$bundle/bin/amp-run" "$d/training_model.onnx" \
                "$d/optimizer_model.onnx" --init 1 --batch "$m" --steps 1 \
                --data synthetic:1 --device cuda $amp --quiet 2>&1 |
              sed -n 's/.* \([0-9]*\) + \([0-9]*\) runtime calls.*/\1 \2/p' |
              awk '{print $1 + $2}')
      AMPRT_PROFILE=1 AMPRT_PROFILE_SKIP=${calls:-0} "$bundle/bin/amp-run" \
        "$d/training_model.onnx" "$d/optimizer_model.onnx" --init 1 \
        --batch "$m" --steps 30 --data synthetic:1 --device cuda $amp \
        --quiet 2>&1 | tail -n 40 || rc=1
    done
  done
  return $rc
}

if [[ -n ${AMP_GS_STAGE:-} ]]; then
  "stage_$AMP_GS_STAGE"
  exit $?
fi

for s in "${stages[@]}"; do
  case $s in
    env|lit|seeds|kernels|train|train-calls|train-nchw|train-find|train-gemm|train-bf16|peer|memcheck|profile|compare-cost|compare-profile) run_stage "$s" ;;
    *) echo "unknown stage $s" >&2; failed+=("$s") ;;
  esac
done
echo "=== failed stages: ${failed[*]:-none}; skipped: ${skipped[*]:-none}"
[[ ${#failed[@]} -eq 0 && ${#skipped[@]} -eq 0 ]]
