#!/usr/bin/env bash
# The GPU half of every study, in one prepared run (docs/gpu.md, "The prepared GPU run").
#
# Run from the project root on the GPU machine, after `bash .gpu/bin/device.sh install`:
#   bash bench/gpu_matrix.sh
# Rehearse on a CPU (what tests/bench/test_gpu_matrix.py does, with tiny models):
#   bash bench/gpu_matrix.sh --accelerator=cpu --tiny
#
# Steps run in priority order, each under its own timeout, the whole under --budget seconds
# (default 540: the device gives one command 600 s); a step whose turn comes with less than
# 20 s of the budget left is recorded as "skipped (budget)" and the summary names the command
# that runs the rest. Everything the steps write (logs, run records, bench JSON, the profile
# summaries, the study reports, summary.md) goes into ONE tarball under --out (default $OUT).
#
# Options:
#   --accelerator=gpu|cpu   where the models run (default gpu)
#   --tiny                  tiny models, batch 8, a few steps (the CPU rehearsal)
#   --budget=SECONDS        for all steps together (default 540)
#   --only=A,B              run only these steps; 'r50*' (quoted) selects by prefix
#   --skip=A,B              leave these out (the same way)
#   --out=DIR               where the tarball goes (default $OUT, else ./gpu-matrix-out)
#   --tf_cnn_dir=DIR        tf_cnn_benchmarks' folder (default .gpu/tcb); absent: tpubench only
#   --list                  print the steps and their commands; run nothing
set -u
cd "$(dirname "$0")/.." || exit 2

acc=gpu tiny=0 budget=540 only="" skip="" out="${OUT:-$PWD/gpu-matrix-out}" tcb=.gpu/tcb list=0
for a in "$@"; do
  case "$a" in
    --accelerator=gpu|--accelerator=cpu) acc=${a#*=} ;;
    --tiny) tiny=1 ;;
    --budget=*) budget=${a#*=} ;;
    --only=*) only=${a#*=} ;;
    --skip=*) skip=${a#*=} ;;
    --out=*) out=${a#*=} ;;
    --tf_cnn_dir=*) tcb=${a#*=} ;;
    --list) list=1 ;;
    *) echo "gpu_matrix.sh: unknown argument $a; accepted: --accelerator=gpu|cpu --tiny" \
         "--budget=S --only=A,B --skip=A,B --out=DIR --tf_cnn_dir=DIR --list" >&2; exit 2 ;;
  esac
done
case "$budget" in ''|*[!0-9]*) echo "gpu_matrix.sh: --budget=$budget: accepted: whole seconds" >&2; exit 2 ;; esac

# On the GPU machine the install leaves TensorFlow and tpubench in a site folder.
if [ "$acc" = gpu ] && [ -f .gpu/bin/env.sh ] && [ -f /tmp/tpb-gpu/env.sh ]; then . .gpu/bin/env.sh; fi
PY=${PYTHON:-python3}
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} PYTHONUNBUFFERED=1
[ "$acc" = cpu ] && export CUDA_VISIBLE_DEVICES=""

stamp=$(date -u +%Y%m%dT%H%M%SZ)
W=${TMPDIR:-/tmp}/gpu-matrix-$stamp       # packed at the end
S=${TMPDIR:-/tmp}/gpu-matrix-$stamp.scratch  # model dirs, checkpoints: never packed
if [ $list = 1 ]; then W='$W' S='$S'; else mkdir -p "$W/logs" "$W/json" "$W/runs" "$S" || exit 1; fi
t0=$(date +%s)

# Sizes: the issue's (ResNet-50 batch 256, fp32 128; 60 steps of which 20 warm-up; the seed
# tables' batch 64, AlexNet 512), or tiny ones for a CPU rehearsal.
if [ "$tiny" = 1 ]; then
  T=(--tiny) B50=8 B32=8 B64=8 B512=8 BL=8 STEPS=4 SPL=2 PROF=(--train_steps=6 --steps_per_loop=1 --profile_steps=3,4) PROF_N=2 SCALE=smoke
else
  T=() B50=256 B32=128 B64=64 B512=512 BL=128 STEPS=60 SPL=20 PROF=(--train_steps=30 --steps_per_loop=5 --profile_steps=21,25) PROF_N=5 SCALE=full
fi
TCB=()
if [ -f "$tcb/tf_cnn_benchmarks.py" ] || [ -f "$tcb/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py" ]; then
  TCB=(--tf_cnn_dir="$tcb")
fi

matches() {  # NAME LIST: NAME is in LIST (a profile step brings its -top step; 'x*': a prefix)
  local n=$1 x
  for x in ${2//,/ }; do
    case "$x" in
      *\*) case "$n" in "${x%\*}"*) return 0 ;; esac ;;
      *) { [ "$n" = "$x" ] || [ "$n" = "$x-top" ]; } && return 0 ;;
    esac
  done
  return 1
}
selected() {  # step name against --only / --skip
  if [ -n "$only" ] && ! matches "$1" "$only"; then return 1; fi
  if [ -n "$skip" ] && matches "$1" "$skip"; then return 1; fi
  return 0
}

[ $list = 1 ] || printf 'step\tstatus\tseconds\tlimit\tnote\n' > "$W/steps.tsv"
left_out=()
step() {  # step NAME LIMIT_SECONDS COMMAND...
  local name=$1 limit=$2; shift 2
  selected "$name" || return 0
  if [ $list = 1 ]; then printf '%-22s %4ss  %s\n' "$name" "$limit" "$*"; return 0; fi
  local left=$(( budget - ($(date +%s) - t0) ))
  if [ $left -lt 20 ]; then
    printf '%s\tskipped\t0\t%s\tbudget\n' "$name" "$limit" >> "$W/steps.tsv"
    left_out+=("$name"); echo "== $name: skipped (budget: ${left}s left)"; return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit}s): $*" | tee "$W/logs/$name.log"
  local s=$(date +%s) rc status
  timeout -k 10 "$limit" "$@" >> "$W/logs/$name.log" 2>&1
  rc=$?
  case $rc in 0) status=ok ;; 124|137) status=timeout ;; *) status="failed($rc)" ;; esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" $(( $(date +%s) - s )) "$limit" "$*" >> "$W/steps.tsv"
  echo "   $status in $(( $(date +%s) - s ))s"
}

pack() {
  rm -rf "$S"
  find "$W" -type d \( -name model_dirs -o -name data \) -prune -exec rm -rf {} + 2>/dev/null
  if [ $list = 0 ]; then
    "$PY" bench/gpu_matrix_summary.py "$W" "${left_out[@]}" > "$W/summary.md" 2>> "$W/logs/summary.log"
    cat "$W/summary.md"
  fi
  mkdir -p "$out" && tar -czf "$out/gpu-matrix-$stamp.tar.gz" -C "$(dirname "$W")" "$(basename "$W")" \
    && echo "packed: $out/gpu-matrix-$stamp.tar.gz ($(du -h "$out/gpu-matrix-$stamp.tar.gz" | cut -f1))"
  rm -rf "$W"
}
[ $list = 1 ] || trap pack EXIT

gpu_bench() {  # NAME LIMIT MODEL TF_CNN_MODEL BATCH CELLS CONTENDERS
  local name=$1 limit=$2
  step "$name" "$limit" "$PY" bench/gpu.py --accelerator="$acc" --model="$3" --tf_cnn_model="$4" \
    --batch_size="$5" --cells="$6" --contenders="$7" --steps=$STEPS --steps_per_loop=$SPL \
    --timeout="$limit" --output="$W/json/$name.json" --logs_dir="$W/logs/$name" "${TCB[@]}" "${T[@]}"
}
train() {  # NAME LIMIT FLAGS...: one tpubench train run, its record kept
  local name=$1 limit=$2; shift 2
  step "$name" "$limit" "$PY" -m tpubench train --accelerator="$acc" --use_synthetic_data \
    --results_dir="$W/runs/$name" --model_dir="$S/$name" "${T[@]}" "$@"
}
profile() {  # NAME LIMIT PRECISION: a profiled run, then its top kernels as text
  local name=$1 limit=$2
  train "$name" "$limit" --model=resnet50 --precision="$3" --noxla --batch_size=$B50 "${PROF[@]}"
  step "$name-top" 60 "$PY" bench/profile_top.py "$S/$name" --steps=$PROF_N --top=30 --keep="$W/profiles/$name"
}
study() {  # NAME LIMIT: the study's cells on this accelerator, through `tpubench study run`
  local name=$1 limit=$2
  step "study-$name" "$limit" bash -c "\"$PY\" bench/study_cells.py $name $acc \"$W/studies/$name.yaml\"; \
    rc=\$?; [ \$rc = 3 ] && exit 0; [ \$rc = 0 ] || exit \$rc; \
    \"$PY\" -m tpubench study run \"$W/studies/$name.yaml\" --scale=$SCALE --results_dir=\"$W/studies/$name\""
}

# ---- the steps, most wanted first ------------------------------------------------------------
step facts 60 bash -c "date -u; nproc; free -g | head -2; (nvidia-smi || echo 'no nvidia-smi'); \
  \"$PY\" -c 'import tensorflow as tf; print(\"tensorflow\", tf.__version__, tf.config.list_physical_devices())'; \
  (git rev-parse HEAD 2>/dev/null || echo 'no git here'); ls \"$tcb\" 2>/dev/null | head -3"
gpu_bench r50-fp16 150 resnet50 resnet50_v1.5 $B50 fp16 tpubench,tf_cnn
gpu_bench r50-bf16-noxla 90 resnet50 resnet50_v1.5 $B50 bf16 tpubench
train r50-bf16-default 150 --model=resnet50 --precision=bf16 --batch_size=$B50 --train_steps=$STEPS --steps_per_loop=$SPL
gpu_bench r50-fp16-xla 240 resnet50 resnet50_v1.5 $B50 fp16:xla tpubench,tf_cnn
profile profile-bf16 120 bf16
step test-gpu 240 "$PY" -m pytest -q -p no:cacheprovider tests/hardware/test_gpu.py
gpu_bench r50-fp32 150 resnet50 resnet50_v1.5 $B32 fp32 tpubench,tf_cnn
train bilstm1024 120 --model=bilstm1024 --batch_size=$BL --train_steps=$STEPS --steps_per_loop=$SPL
profile profile-fp16 120 fp16
# XLA auto-clustering instead of the compiled step: fuses the element-wise ops around cuDNN's.
step r50-bf16-autojit 150 env TF_XLA_FLAGS=--tf_xla_auto_jit=2 "$PY" -m tpubench train \
  --accelerator="$acc" --use_synthetic_data --results_dir="$W/runs/r50-bf16-autojit" \
  --model_dir="$S/r50-bf16-autojit" "${T[@]}" --model=resnet50 --precision=bf16 --noxla \
  --batch_size=$B50 --train_steps=$STEPS --steps_per_loop=$SPL
gpu_bench inception3-fp16-xla 240 inception_v3 inception3 $B64 fp16:xla tpubench,tf_cnn
gpu_bench resnet152-fp16-xla 300 resnet152 resnet152 $B64 fp16:xla tpubench,tf_cnn
gpu_bench alexnet-fp16-xla 180 alexnet alexnet $B512 fp16:xla tpubench,tf_cnn
gpu_bench vgg16-fp16-xla 240 vgg16 vgg16 $B64 fp16:xla tpubench,tf_cnn
study cpu_vs_gpu 240
study tpu_vs_gpu 300
study cnn_scaling 420
gpu_bench r50-fp32-xla 240 resnet50 resnet50_v1.5 $B32 fp32:xla tpubench,tf_cnn
exit 0
