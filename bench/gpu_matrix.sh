#!/usr/bin/env bash
# The GPU half of every study, in one prepared run (docs/gpu.md, "The prepared GPU run").
#
# Run from the project root on the GPU machine, after `bash .gpu/bin/device.sh install`:
#   bash bench/gpu_matrix.sh            # the default list: one 600 s device call
#   bash bench/gpu_matrix.sh --more     # the steps behind it, for the next call
# Rehearse on a CPU (what tests/bench/test_gpu_matrix.py does, with tiny models):
#   bash bench/gpu_matrix.sh --accelerator=cpu --tiny
#
# The default list is ordered by what only a GPU can answer: the seeds' one-GPU study cells
# first (gpu_host_sizing's 1-16 vCPU knee, the strategies cells on one GPU with the
# synchronous parameter server's variables on the GPU and on the CPU, cpu_vs_gpu's GPU
# cells), then the tf_cnn_benchmarks comparison; its limits add up to at most the budget
# (`--list` ends with their total). Everything else is behind `--more`.
#
# Each step runs under its own limit (timeout), the whole under --budget seconds (default
# 540: the device gives one command 600 s). A step starts only when the budget has its limit
# left (a study step: at least STUDY_MIN seconds, and it is given what is left); otherwise
# it is recorded as "skipped (budget)", the steps after it still get their turn, and the
# summary names the command that runs the ones left out. A study step runs its cells in
# passes (bench/study_cells.py run) and stops them in time to write its report. Everything
# the steps write (logs, run records, bench JSON, the profile summaries, the study reports,
# summary.md) goes into ONE tarball under --out (default $OUT).
#
# Options:
#   --accelerator=gpu|cpu   where the models run (default gpu)
#   --tiny                  tiny models, batch 8, a few steps, one run per study cell (the
#                           CPU rehearsal; GPU study setups rehearse on the CPU)
#   --budget=SECONDS        for all steps together (default 540)
#   --more                  the steps behind the default list instead of it
#   --only=A,B              run only these steps, from either list; 'r50*' (quoted): a prefix
#   --skip=A,B              leave these out (the same way)
#   --out=DIR               where the tarball goes (default $OUT, else ./gpu-matrix-out)
#   --tf_cnn_dir=DIR        tf_cnn_benchmarks' folder (default .gpu/tcb); absent: tpubench only
#   --list                  print the steps, their limits and commands, and the total; run nothing
set -u
cd "$(dirname "$0")/.." || exit 2

acc=gpu tiny=0 budget=540 only="" skip="" out="${OUT:-$PWD/gpu-matrix-out}" tcb=.gpu/tcb list=0
more=0
for a in "$@"; do
  case "$a" in
    --accelerator=gpu|--accelerator=cpu) acc=${a#*=} ;;
    --tiny) tiny=1 ;;
    --more) more=1 ;;
    --budget=*) budget=${a#*=} ;;
    --only=*) only=${a#*=} ;;
    --skip=*) skip=${a#*=} ;;
    --out=*) out=${a#*=} ;;
    --tf_cnn_dir=*) tcb=${a#*=} ;;
    --list) list=1 ;;
    *) echo "gpu_matrix.sh: unknown argument $a; accepted: --accelerator=gpu|cpu --tiny" \
         "--budget=S --more --only=A,B --skip=A,B --out=DIR --tf_cnn_dir=DIR --list" >&2; exit 2 ;;
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
# tables' batch 64, AlexNet 512), or tiny ones for a CPU rehearsal. A study step runs at
# --scale=full; the rehearsal makes its cells tiny and runs each once (--repeats=1), so that
# its report reads as a budget-cut GPU run's does ("not judged (needs 3 runs per cell ...)").
if [ "$tiny" = 1 ]; then
  T=(--tiny) B50=8 B32=8 B64=8 B512=8 BL=8 STEPS=4 SPL=2 PROF=(--train_steps=6 --steps_per_loop=1 --profile_steps=3,4) PROF_N=2
  PS_STEPS=(--train_steps=4 --steps_per_loop=2)
  STUDY_TINY=(--as_device=cpu --scale=full --set=tiny=true --set=train_steps=4 --set=steps_per_loop=2
    --set=batch_size=8 --set=jpeg_examples=64 --repeats=1)
else
  T=() B50=256 B32=128 B64=64 B512=512 BL=128 STEPS=60 SPL=20 PROF=(--train_steps=30 --steps_per_loop=5 --profile_steps=21,25) PROF_N=5
  PS_STEPS=(--train_steps=30 --steps_per_loop=10)
  STUDY_TINY=()
fi
ONE_GPU=()
[ "$acc" = gpu ] && ONE_GPU=(--num_gpus=1)
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
tier=default  # the list the steps below belong to; `tier=more` further down
selected() {  # step name against the list asked for (--more), --only and --skip
  if [ -n "$only" ]; then matches "$1" "$only" || return 1
  elif [ $more = 1 ]; then [ "$tier" = more ] || return 1
  else [ "$tier" = default ] || return 1
  fi
  if [ -n "$skip" ] && matches "$1" "$skip"; then return 1; fi
  return 0
}

if [ $list = 0 ]; then
  printf 'step\tstatus\tseconds\tlimit\tnote\tcommand\n' > "$W/steps.tsv"
  printf '{"accelerator": "%s", "tiny": %s, "budget": %s, "more": %s, "only": "%s"}\n' \
    "$acc" "$tiny" "$budget" "$more" "$only" > "$W/matrix.json"
fi
left_out=() listed=0 n_listed=0
# A CPU rehearsal's steps get at least this long: on a busy 2-core host a tiny run's TensorFlow
# start-up alone can take longer than a GPU machine's whole run.
TINY_LIMIT=120
step() {  # [least=S] [note=TEXT] step NAME LIMIT COMMAND...: @LIMIT@ in COMMAND is the limit given
  local name=$1 limit=$2 why=${note:-} need; shift 2
  selected "$name" || return 0
  [ "$tiny" = 1 ] && [ "$limit" -lt $TINY_LIMIT ] && limit=$TINY_LIMIT
  need=${least:-$limit}
  if [ $list = 1 ]; then
    listed=$(( listed + limit )) n_listed=$(( n_listed + 1 ))
    printf '%-28s %4ss  %s\n' "$name" "$limit" "${*//@LIMIT@/$limit}"; return 0
  fi
  local left=$(( budget - ($(date +%s) - t0) ))
  if [ $left -lt "$need" ] || [ $left -lt 1 ]; then
    printf '%s\tskipped (budget)\t0\t%s\tbudget: %ss left of the %ss it needs\t%s\n' \
      "$name" "$limit" "$(( left > 0 ? left : 0 ))" "$need" "$*" >> "$W/steps.tsv"
    left_out+=("$name"); echo "== $name: skipped (budget: ${left}s left, needs ${need}s)"; return 0
  fi
  [ "$limit" -gt $left ] && limit=$left
  local argv=("${@//@LIMIT@/$limit}")
  echo "== $name (limit ${limit}s): ${argv[*]}${why:+ ($why)}" | tee "$W/logs/$name.log"
  local s=$(date +%s) rc status
  timeout -k 10 "$limit" "${argv[@]}" >> "$W/logs/$name.log" 2>&1
  rc=$?
  case $rc in 0) status=ok ;; 124|137) status=timeout ;; *) status="failed($rc)" ;; esac
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$status" $(( $(date +%s) - s )) "$limit" "$why" \
    "${argv[*]}" >> "$W/steps.tsv"
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
    --timeout=@LIMIT@ --output="$W/json/$name.json" --logs_dir="$W/logs/$name" "${TCB[@]}" "${T[@]}"
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
# A study step starts with at least this much of the budget left (a run or two, the report).
STUDY_MIN=45
study() {  # NAME LIMIT STUDY SELECTION...: the study's one-GPU cells, in passes, then its report
  local name=$1 limit=$2 which=$3; shift 3
  least=$(( limit < STUDY_MIN ? limit : STUDY_MIN )) step "$name" "$limit" \
    "$PY" bench/study_cells.py run "$which" --device=gpu --max_devices=1 "$@" "${STUDY_TINY[@]}" \
    --results_dir="$W/studies/$name" --seconds=@LIMIT@
}
ps() {  # NAME LIMIT gpu|cpu: the seeds' synchronous parameter server on ONE GPU, variables there
  local name=$1 limit=$2 where=$3 why=""
  if [ "$acc" = cpu ] && [ "$where" = gpu ]; then  # refused on a CPU accelerator
    where=cpu why="CPU rehearsal: --parameter_device=cpu (gpu needs a GPU)"
  fi
  note=$why train "$name" "$limit" --model=resnet50 "${ONE_GPU[@]}" --strategy=central_storage \
    --parameter_device="$where" --per_replica_batch_size=$B64 --optimizer=sgd "${PS_STEPS[@]}"
}

# ---- the default list: one device call, limits within the 540 s budget ------------------------
step facts 20 bash -c "date -u; nproc; free -g | head -2; (nvidia-smi || echo 'no nvidia-smi'); \
  \"$PY\" -c 'import tensorflow as tf; print(\"tensorflow\", tf.__version__, tf.config.list_physical_devices())'; \
  (git rev-parse HEAD 2>/dev/null || echo 'no git here'); ls \"$tcb\" 2>/dev/null | head -3"
# 1. What only a GPU answers: the seeds' cells on one GPU.
# gpu_host_sizing's knee: ResNet-50 and AlexNet on the study's JPEG photos, the process pinned
# to 1, 2, 4, 8 and 16 vCPUs; 40 steps (10 warm-up) at batch 64, so one run of each of the ten
# cells fits (the study's 200 steps, AlexNet at 512, would take minutes a cell on one vCPU).
study study-gpu_host_sizing 210 gpu_host_sizing --part=train --models=resnet50,alexnet \
  --scale=full --set=train_steps=40 --set=batch_size=64 --set=jpeg_examples=1024
# strategies on one GPU: the study's `1 GPU` cell (ResNet-50), and the seed's parameter server
# (central_storage) on one GPU, its variables on that GPU and on the host CPU.
study study-strategies 50 strategies --part=train --models=resnet50
ps strategies-ps_gpu 40 gpu
ps strategies-ps_cpu 40 cpu
# cpu_vs_gpu's `1 GPU` cells: the six Keras models, the baseline of every CPU machine's figures.
study study-cpu_vs_gpu 90 cpu_vs_gpu --part=train
# 2. The tf_cnn_benchmarks comparison: ResNet-50 fp32 (not yet measured on a GPU).
gpu_bench r50-fp32 90 resnet50 resnet50_v1.5 $B32 fp32 tpubench,tf_cnn

# ---- behind --more: the rest, in the same order of wants (several calls' worth) ---------------
tier=more
# The knee again, ResNet-50 only, with the study's three runs per cell: a judged verdict.
study study-gpu_host_sizing-r50x3 480 gpu_host_sizing --part=train --models=resnet50 \
  --scale=full --set=train_steps=40 --set=batch_size=64 --set=jpeg_examples=1024
# Inference against vCPUs on the GPU (the study's infer part, ResNet-50, 1-8 vCPUs).
study study-gpu_host_sizing-infer 240 gpu_host_sizing --part=infer
gpu_bench inception3-fp16-xla 240 inception_v3 inception3 $B64 fp16:xla tpubench,tf_cnn
gpu_bench resnet152-fp16-xla 300 resnet152 resnet152 $B64 fp16:xla tpubench,tf_cnn
gpu_bench alexnet-fp16-xla 180 alexnet alexnet $B512 fp16:xla tpubench,tf_cnn
gpu_bench vgg16-fp16-xla 240 vgg16 vgg16 $B64 fp16:xla tpubench,tf_cnn
gpu_bench r50-fp32-xla 240 resnet50 resnet50_v1.5 $B32 fp32:xla tpubench,tf_cnn
# Measured once on an H200 (docs/gpu.md section 9): again, for the spread.
gpu_bench r50-fp16 150 resnet50 resnet50_v1.5 $B50 fp16 tpubench,tf_cnn
gpu_bench r50-fp16-xla 240 resnet50 resnet50_v1.5 $B50 fp16:xla tpubench,tf_cnn
study study-tpu_vs_gpu 300 tpu_vs_gpu
study study-cnn_scaling 420 cnn_scaling
step test-gpu 240 "$PY" -m pytest -q -p no:cacheprovider tests/hardware/test_gpu.py
train bilstm1024 120 --model=bilstm1024 --batch_size=$BL --train_steps=$STEPS --steps_per_loop=$SPL
profile profile-fp16 120 fp16
# XLA auto-clustering instead of the compiled step: fuses the element-wise ops around cuDNN's.
step r50-bf16-autojit 150 env TF_XLA_FLAGS=--tf_xla_auto_jit=2 "$PY" -m tpubench train \
  --accelerator="$acc" --use_synthetic_data --results_dir="$W/runs/r50-bf16-autojit" \
  --model_dir="$S/r50-bf16-autojit" "${T[@]}" --model=resnet50 --precision=bf16 --noxla \
  --batch_size=$B50 --train_steps=$STEPS --steps_per_loop=$SPL
gpu_bench r50-bf16-noxla 90 resnet50 resnet50_v1.5 $B50 bf16 tpubench
train r50-bf16-default 150 --model=resnet50 --precision=bf16 --batch_size=$B50 --train_steps=$STEPS --steps_per_loop=$SPL
profile profile-bf16 120 bf16

if [ $list = 1 ]; then
  over=""
  [ $listed -gt "$budget" ] && over="; over the budget: the steps past it are skipped (budget)"
  printf '%-28s %4ss  %s\n' total "$listed" "$n_listed steps; budget ${budget}s$over"
fi
exit 0
