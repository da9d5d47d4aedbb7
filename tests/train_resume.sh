#!/usr/bin/env bash
# Resume after SIGKILL: a run killed mid-way and continued with --resume must end with exactly the
# same model file (byte for byte) as an uninterrupted run. Uses dropout, flipped features and
# several checkpoints, so the data order, the flip choices, the dropout masks and the Adam state
# all have to be restored exactly, and so does the weight average (--ema).
. "$(dirname "$0")/lib.sh"
FX=$(dirname "$0")/fixtures/train
args=(--data "$FX/captions.json" --features "$FX/features" --embed 48 --hidden 64 --att 32 --min-count 1
      --batch 4 --lr 0.005 --dropout 0.3 --lambda 0.5 --ema 0.9 --epochs 40 --patience 100 --checkpoint-every 3 --quiet)

t_begin train_resume_after_sigkill_is_byte_identical
"$A" train "${args[@]}" --out "$T/a.safetensors" >/dev/null 2>"$T/err_a" || t_fail "uninterrupted run: $(head -2 "$T/err_a")"
"$A" train "${args[@]}" --out "$T/b.safetensors" >/dev/null 2>"$T/err_b" &
pid=$!
# Kill once the first checkpoint exists, i.e. mid-run (up to a minute: valgrind on a busy machine is slow).
for _ in $(seq 1 6000); do [ -e "$T/b.safetensors.ckpt" ] && break; sleep 0.01; done
kill -9 $pid 2>/dev/null && killed=1 || killed=0
wait $pid 2>/dev/null
if [ ! -e "$T/b.safetensors.ckpt" ]; then t_fail "no checkpoint was written before the kill"
else
  rounds=0
  # Resume (and kill again once more, mid-way) until the run completes.
  while :; do
    rounds=$((rounds + 1))
    "$A" train "${args[@]}" --out "$T/b.safetensors" --resume >/dev/null 2>"$T/err_r" && break
    [ $rounds -ge 3 ] && break
  done
  if [ ! -s "$T/a.safetensors" ] || [ ! -s "$T/b.safetensors" ]; then t_fail "a model is missing: $(head -2 "$T/err_r")"
  elif cmp -s "$T/a.safetensors" "$T/b.safetensors"; then
    [ $killed = 1 ] && t_ok || t_skip "the run finished before it could be killed (machine too fast for this fixture)"
  else t_fail "resumed model differs from the uninterrupted one"; fi
fi

t_begin train_resume_refuses_other_features
# A checkpoint is tied to its encoder: resuming with another cache is refused with one line.
mkdir -p "$T/other"
sed 's/fake\.tflite/fakeXtflite/' "$FX/features/shard-00000.safetensors" >"$T/other/shard-00000.safetensors"
if [ -e "$T/a.safetensors.ckpt" ]; then
  expect_error "other encoder" "$A" train "${args[@]}" --features "$T/other" --out "$T/a.safetensors" --resume && t_ok
else t_skip "no checkpoint from the first test"; fi
t_begin train_same_model_for_any_thread_count
# Shards, not threads, define the arithmetic: one thread and two give the same bytes.
small=(--data "$FX/captions.json" --features "$FX/features" --embed 24 --hidden 32 --att 16 --min-count 1
       --batch 6 --dropout 0.3 --epochs 3 --checkpoint-every 0 --quiet)
if "$A" train "${small[@]}" --threads 1 --out "$T/t1.safetensors" >/dev/null 2>&1 &&
   "$A" train "${small[@]}" --threads 2 --out "$T/t2.safetensors" >/dev/null 2>&1; then
  cmp -s "$T/t1.safetensors" "$T/t2.safetensors" && t_ok || t_fail "models differ between 1 and 2 threads"
else t_fail "training failed"; fi
t_begin train_f16_cache_kept_half_gives_the_same_model
# An F16 cache stays F16 in memory and is converted a batch at a time; the same values stored as
# F32 are used directly. Both must give the same bytes (and the features must matter at all).
if "$A" train "${small[@]}" --features "$FX/features_f16" --out "$T/h16.safetensors" >/dev/null 2>"$T/err_h" &&
   "$A" train "${small[@]}" --features "$FX/features_f16_as_f32" --out "$T/h32.safetensors" >/dev/null 2>>"$T/err_h"; then
  if ! cmp -s "$T/h16.safetensors" "$T/h32.safetensors"; then t_fail "F16 and F32 caches of the same values give different models"
  elif cmp -s "$T/h16.safetensors" "$T/t1.safetensors"; then t_fail "rounding the features to F16 changed nothing: the test cannot see them"
  else t_ok; fi
else t_fail "training failed: $(head -2 "$T/err_h")"; fi
t_begin train_mapped_features_give_the_same_model
# Feature rows read from the mapped shard files (what a cache larger than memory gets) must train
# the same bytes as rows loaded into memory, for an F16 and an F32 cache.
ok=1
for fx in features_f16 features_f16_as_f32; do
  if ! "$A" train "${small[@]}" --features "$FX/$fx" --map-features --out "$T/m_$fx.safetensors" >/dev/null 2>"$T/err_m" ||
     ! "$A" train "${small[@]}" --features "$FX/$fx" --load-features --out "$T/l_$fx.safetensors" >/dev/null 2>>"$T/err_m"; then
    t_fail "$fx: training failed: $(head -2 "$T/err_m")"; ok=0; break
  elif ! cmp -s "$T/m_$fx.safetensors" "$T/l_$fx.safetensors"; then
    t_fail "$fx: mapped and loaded features give different models"; ok=0; break
  fi
done
if [ $ok = 1 ]; then
  loud=(); for a in "${small[@]}"; do [ "$a" = --quiet ] || loud+=("$a"); done
  "$A" train "${loud[@]}" --features "$FX/features_f16" --map-features --epochs 1 --out "$T/m3.safetensors" \
    2>&1 >/dev/null | grep -q "features read from their mapped shard files" || { t_fail "no note that features are mapped"; ok=0; }
fi
[ $ok = 1 ] && t_ok
t_end
