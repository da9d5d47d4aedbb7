#!/usr/bin/env bash
# make test-slurm: the recipes in tools/slurm/ on a real Slurm. Installs Debian's slurm-wlm, munge
# and parallel (root, Debian's mirror only), starts a one-node cluster on localhost (2 CPUs) in a
# temporary folder: munged (its own key and socket), slurmctld and slurmd (their own ports and
# state); submits a captioning array (24 COCO photos, the default model, 3 tasks) and a
# feature-extraction array (the 100 COCO photos, the small MobileNetV1 encoder, 5 tasks), each with
# its merge as a dependent job; kills one task of each half-way and has Slurm requeue it; and checks
# the merged captions and feature cache against one process run here, byte for byte; has a task of
# each kind fail on a file that is not a photo and checks that its merge fails, naming it. Then the same
# with GNU parallel (tools/slurm/parallel_ssh.sh, hosts ":" = this machine). The daemons are stopped
# at the end, failure or not. Prints timings and "test-slurm: N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
A="$ROOT/build/attncap"
DATA=${ATTNCAP_DATA:-$ROOT/../shared}
PHOTOS="$DATA/data/coco/images"
SMALL="$DATA/encoders/mobilenet_v1_0.25_128_quant.tflite"
N_CAPTION=${N_CAPTION:-24}
pass=0 fail=0
ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
die() { echo "test-slurm: $*" >&2; exit 1; }
t_start=$(date +%s)

[ -x "$A" ] || die "build first (make all): $A missing"
if [ ! -d "$PHOTOS" ] || [ ! -f "$SMALL" ]; then # as the suite does without ../shared
  echo "test-slurm: skipped: needs $PHOTOS and $SMALL (set ATTNCAP_DATA)"; exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (apt-get, munged as user munge, slurmd)"
export ATTNCAP_DATA=$DATA
# the shipped model and its encoder, wherever the jobs run from
export ATTNCAP_MODEL=${ATTNCAP_MODEL:-$ROOT/models/attncap.safetensors}
export ATTNCAP_ENCODER=${ATTNCAP_ENCODER:-$ROOT/models/mobilenet_v2_1.0_224_quant.tflite}
# the encoder from ../shared (make models), only once the data is known to be there: without it the
# recipe skips above instead of failing on an offline download
[ -f "$ATTNCAP_ENCODER" ] || (cd "$ROOT" && bash tools/get_encoder.sh) || die "cannot get $ATTNCAP_ENCODER (make models)"
[ -f "$ATTNCAP_MODEL" ] && [ -f "$ATTNCAP_ENCODER" ] || die "needs $ATTNCAP_MODEL and $ATTNCAP_ENCODER (make models)"

# ---- install ----
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v parallel >/dev/null; then
  echo "# installing slurm-wlm munge parallel"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends slurm-wlm munge parallel >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge parallel >/dev/null; } ||
    die "apt-get install slurm-wlm munge parallel failed"
fi
echo "# $(slurmctld -V), $(munged -V 2>&1 | head -1), GNU parallel $(parallel --version | head -1 | awk '{print $3}')"

# ---- a one-node cluster in W ----
W=$(mktemp -d /tmp/attncap-slurm.XXXXXX)
chmod 755 "$W"
mkdir -p "$W/munge" "$W/state" "$W/spool" "$W/logs"
export SLURM_CONF="$W/slurm.conf"
stop_cluster() {
  if [ -f "$W/slurmctld.pid" ]; then
    scontrol shutdown >/dev/null 2>&1 # stops slurmctld and slurmd
    for _ in $(seq 1 50); do
      kill -0 "$(cat "$W/slurmctld.pid" 2>/dev/null)" 2>/dev/null || kill -0 "$(cat "$W/slurmd.pid" 2>/dev/null)" 2>/dev/null || break
      sleep 0.2
    done
  fi
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do # whatever did not stop
    [ -f "$W/$f" ] && kill "$(cat "$W/$f")" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "# kept $W"; else rm -rf "$W"; fi
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

chown munge:munge "$W/munge" && chmod 711 "$W/munge"
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$W/munge/munge.key" && chmod 400 "$W/munge/munge.key"
runuser -u munge -- /usr/sbin/munged --socket="$W/munge/munge.socket" --key-file="$W/munge/munge.key" \
  --log-file="$W/munge/munged.log" --pid-file="$W/munge/munged.pid" --seed-file="$W/munge/munged.seed" ||
  die "munged did not start: $(tail -2 "$W/munge/munged.log")"

H=$(hostname -s)
cat >"$SLURM_CONF" <<EOF
ClusterName=attncaptest
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/logs/slurmctld.log
SlurmdLogFile=$W/logs/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobRequeue=1
KillWait=2
MinJobAge=600
NodeName=attncap0 NodeAddr=127.0.0.1 NodeHostname=$H CPUs=2 State=UNKNOWN
PartitionName=test Nodes=attncap0 Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start: $(tail -3 "$W/logs/slurmctld.log")"
slurmd -f "$SLURM_CONF" -N attncap0 || die "slurmd did not start: $(tail -3 "$W/logs/slurmd.log")"
for _ in $(seq 1 60); do sinfo -h -o %t 2>/dev/null | grep -qx idle && break; sleep 0.5; done
sinfo -h -o %t | grep -qx idle || die "node not idle: $(sinfo 2>&1); $(tail -3 "$W/logs/slurmctld.log")"
echo "# cluster up: 1 node, $(sinfo -h -o %c) CPUs, $(($(date +%s) - t_start)) s since start"

# ---- inputs and the one-process reference runs ----
ls "$PHOTOS" | grep -iE '\.jpe?g$' | LC_ALL=C sort | sed "s|^|$PHOTOS/|" >"$W/photos.txt"
head -n "$N_CAPTION" "$W/photos.txt" >"$W/caption.txt"
n_all=$(wc -l <"$W/photos.txt")
FEAT_OPTS=(--encoder "$SMALL" --size 128 --fp16 --shard-size 4)
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "# one process: $N_CAPTION photos captioned (default model), $n_all photos' features (MobileNetV1 0.25 at 128); load $(load)"
t0=$(date +%s.%N)
"$A" caption --json --quiet --threads 2 - <"$W/caption.txt" >"$W/one_captions.jsonl" || die "one-process caption failed"
t1=$(date +%s.%N)
"$A" features "${FEAT_OPTS[@]}" --threads 2 --quiet --out "$W/one_features" --list "$W/photos.txt" || die "one-process features failed"
t2=$(date +%s.%N)
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN {printf "%.1f photos/s (%.2f s)", n / (b - a), b - a}'; }
echo "# one process, 2 threads: caption $(rate "$N_CAPTION" "$t0" "$t1"), features $(rate "$n_all" "$t1" "$t2")"

# ---- a wrapper that has Slurm kill one task half-way the first time it runs ----
# First attempt of task KILL_TASK: run attncap, stop it as soon as it has written something (a
# feature shard file, or caption lines into the task's temporary part), then `scontrol requeue`
# the task: Slurm kills it (the stopped attncap too) and queues it again. Later attempts: attncap.
cat >"$W/attncap-killed-once" <<EOF
#!/bin/bash
if [ "\${SLURM_ARRAY_TASK_ID:-}" = "\${KILL_TASK:-none}" ] && [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  out=""; prev=""; for a in "\$@"; do [ "\$prev" = --out ] && out=\$a; prev=\$a; done
  stdout=\$(readlink /proc/\$\$/fd/1)
  "$A" "\$@" <&0 & pid=\$! # (an & command's stdin is /dev/null unless given)
  for _ in \$(seq 1 4000); do
    if [ -n "\$out" ]; then ls "\$out" 2>/dev/null | grep -q '^shard-.*safetensors\$' && break
    else [ -s "\$stdout" ] && break; fi
    kill -0 \$pid 2>/dev/null || break
    sleep 0.005
  done
  kill -STOP \$pid
  if [ -n "\$out" ]; then n=\$(ls "\$out" | grep -c '^shard-.*safetensors\$'); else n=\$(stat -c %s "\$stdout"); fi
  echo "\$n" >"$W/killed-\$SLURM_ARRAY_JOB_ID"
  echo "attncap-killed-once: stopped attncap (pid \$pid) after it wrote \$n (\${out:-\$stdout}); requeueing" >&2
  scontrol requeue "\${SLURM_ARRAY_JOB_ID}_\${SLURM_ARRAY_TASK_ID}"
  sleep 600 # killed by Slurm
  exit 1
fi
exec "$A" "\$@"
EOF
chmod +x "$W/attncap-killed-once"

# submit KIND TASKS KILL_TASK INPUT OUT -- options: the recipe, with the wrapper; sets ARRAY and MERGE
submit() {
  local kind=$1 tasks=$2 kill_task=$3 input=$4 out=$5; shift 6
  local line
  line=$(KILL_TASK=$kill_task bash "$ROOT/tools/slurm/submit.sh" "$kind" -n "$tasks" -c 1 -i "$input" -o "$out" \
         -a "$W/attncap-killed-once" -- "$@") || die "submit.sh $kind failed"
  echo "# $kind: $line"
  ARRAY=$(sed -n 's/^array \([0-9]*\) .*/\1/p' <<<"$line") MERGE=$(sed -n 's/.*merge \([0-9]*\) .*/\1/p' <<<"$line")
}
state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -1 | cut -d= -f2; }
ended() { # JOB SECONDS: wait up to SECONDS for JOB to end (any end: the checks then read its state)
  for _ in $(seq 1 $(($2 * 2))); do case $(state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT) return ;; esac; sleep 0.5; done
}

t_sub=$(date +%s.%N)
submit caption 3 0 "$W/caption.txt" "$W/run_caption" --
CAP_ARRAY=$ARRAY CAP_MERGE=$MERGE
submit features 5 1 "$W/photos.txt" "$W/run_features" -- "${FEAT_OPTS[@]}"
FEAT_ARRAY=$ARRAY FEAT_MERGE=$MERGE

# Wait for both merges. A requeued task waits out Slurm's requeue delay (2 minutes in 22.05) unless
# told it may start now: that is all we shorten, and only 3 s after the kill. slurmd refuses to launch
# a job whose credential is no newer than its kill, in whole seconds ("Job 5 already killed, do not
# launch batch job"), and slurmctld takes the refusal as the task failing: a rerun started within
# the second of the kill failed CI on 2026-11-29 and 2 of 18 runs here.
deadline=$(($(date +%s) + 480))
declare -A hurried=() t_done=()
while :; do
  for a in "$CAP_ARRAY" "$FEAT_ARRAY"; do
    kt=$([ "$a" = "$CAP_ARRAY" ] && echo 0 || echo 1)
    if [ -f "$W/killed-$a" ] && [ -z "${hurried[$a]:-}" ] && [ "$(state "${a}_$kt")" = PENDING ] &&
       [ $(($(date +%s) - $(stat -c %Y "$W/killed-$a"))) -ge 3 ]; then
      scontrol update JobId="${a}_$kt" StartTime=now && hurried[$a]=1
    fi
  done
  for m in "$CAP_MERGE" "$FEAT_MERGE"; do
    s=$(state "$m")
    case $s in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) [ -n "${t_done[$m]:-}" ] || t_done[$m]=$(date +%s.%N) ;; esac
  done
  [ -n "${t_done[$CAP_MERGE]:-}" ] && [ -n "${t_done[$FEAT_MERGE]:-}" ] && break
  if [ "$(date +%s)" -gt "$deadline" ]; then squeue; bad slurm_runs "timed out after 8 minutes"; break; fi
  sleep 1
done

# ---- checks ----
check_run() { # name array merge: every task COMPLETED, the killed one with Restarts=1; the merge COMPLETED
  local name=$1 array=$2 merge=$3 kt=$4 why=""
  local ms; ms=$(state "$merge")
  [ "$ms" = COMPLETED ] || why="merge job $merge is $ms: $(cat "$W"/run_$name/logs/attncap-merge-*.out 2>/dev/null | tail -3)"
  local restarts; restarts=$(scontrol show job "${array}_$kt" | grep -o 'Restarts=[0-9]*' | cut -d= -f2)
  local killed; killed=$(cat "$W/killed-$array" 2>/dev/null)
  if [ -z "$why" ] && [ "${restarts:-0}" != 1 ]; then why="task $kt was not requeued (Restarts=${restarts:-?})"; fi
  if [ -z "$why" ] && { [ -z "$killed" ] || [ "$killed" -lt 1 ]; }; then why="task $kt was not killed half-way (had written '${killed}')"; fi
  if [ -z "$why" ]; then
    echo "# $name: task $kt killed after writing $killed $([ "$name" = caption ] && echo "bytes of its part (a temporary file)" || echo "shard files"), requeued by Slurm, rerun"
    ok "slurm_${name}_array_with_a_requeued_task"
  else
    bad "slurm_${name}_array_with_a_requeued_task" "$why"
    explain "$array" "$merge" "$W/run_$name/logs"
  fi
}
explain() { # ARRAY MERGE LOGDIR: what Slurm says of each job, the task logs, slurmctld's lines on them
  local j
  for j in $(squeue -h -j "$1" -t all -o %i 2>/dev/null) "$2"; do
    echo "#   $j: $(scontrol show job "$j" 2>/dev/null | grep -oE '(JobState|Reason|ExitCode|Restarts|Dependency)=[^ ]*' | tr '\n' ' ')"
  done
  tail -n 5 "$3"/*.out 2>/dev/null | sed 's/^/#   /'
  grep -E "JobId=($1|$2)[_( ]" "$W/logs/slurmctld.log" | tail -n 30 | sed 's/^/#   /'
}
check_run caption "$CAP_ARRAY" "$CAP_MERGE" 0
check_run features "$FEAT_ARRAY" "$FEAT_MERGE" 1

if cmp -s "$W/one_captions.jsonl" "$W/run_caption/captions.jsonl"; then
  ok "slurm_captions_byte_identical ($(wc -l <"$W/run_caption/captions.jsonl") photos)"
else bad slurm_captions_byte_identical "$(diff "$W/one_captions.jsonl" "$W/run_caption/captions.jsonl" 2>&1 | head -4)"; fi

same_cache() { # A B: the same shard files, byte for byte
  local d=""
  [ "$(ls "$1" | grep -c '^shard-')" = "$(ls "$2" 2>/dev/null | grep -c '^shard-')" ] || { echo "shard counts $(ls "$1" | grep -c '^shard-') vs $(ls "$2" 2>/dev/null | grep -c '^shard-')"; return 1; }
  for s in "$1"/shard-*.safetensors; do cmp -s "$s" "$2/$(basename "$s")" || d="$d $(basename "$s")"; done
  [ -z "$d" ] || { echo "differ:$d"; return 1; }
}
if why=$(same_cache "$W/one_features" "$W/run_features/features"); then
  ok "slurm_features_byte_identical ($(ls "$W/one_features" | grep -c '^shard-') shard files, $n_all photos)"
else bad slurm_features_byte_identical "$why"; fi

# One task rerun alone (a failed task's remedy): an array of one with SHARDS=5 must take share 2 of 5,
# the photos task 2 of the array took, not every photo.
rj=$(sbatch --parsable --array=2 --cpus-per-task=1 --output="$W/logs/rerun-%A_%a.out" \
     --export=ALL,SHARDS=5,PHOTOS="$W/photos.txt",OUT="$W/rerun",ATTNCAP="$A" "$ROOT/tools/slurm/features.sbatch" "${FEAT_OPTS[@]}")
ended "${rj%%;*}_2" 60
if [ "$(state "${rj%%;*}_2")" = COMPLETED ] && why=$(same_cache "$W/run_features/parts/features-00002" "$W/rerun/parts/features-00002"); then
  ok "slurm_one_task_rerun_alone"
else bad slurm_one_task_rerun_alone "${why:-job ${rj%%;*}_2 is $(state "${rj%%;*}_2"): $(tail -3 "$W"/logs/rerun-*.out)}"; fi

# A task that fails (a file that is not a photo in its share) fails the merge, naming the task, and
# the merge writes nothing: afterany starts it, and it checks the parts itself (a failed feature
# task's cache is there, unmarked).
{ head -n 4 "$W/caption.txt"; echo "$W/not-a-photo.jpg"; } >"$W/bad.txt"
echo "not a photo" >"$W/not-a-photo.jpg"
check_failed_task() { # KIND OUTPUT [options]: the merge FAILED, named the failed task, wrote no OUTPUT
  local kind=$1 output=$2; shift 2
  submit "$kind" 2 none "$W/bad.txt" "$W/bad_$kind" -- "$@"
  ended "$MERGE" 120
  local task; task=$(grep -l "not-a-photo.jpg" "$W"/bad_$kind/logs/attncap-$kind-*.out 2>/dev/null | sed -n 's/.*_\([0-9]*\)\.out$/\1/p')
  if [ "$(state "$MERGE")" = FAILED ] && [ ! -e "$W/bad_$kind/$output" ] && [ -n "$task" ] &&
     grep -q "no part from task(s) $task " "$W"/bad_$kind/logs/attncap-merge-*.out; then
    ok "slurm_failed_${kind}_task_fails_the_merge ($(grep -h "no part" "$W"/bad_$kind/logs/attncap-merge-*.out | sed 's/.*; //'))"
  else
    bad "slurm_failed_${kind}_task_fails_the_merge" "merge $MERGE is $(state "$MERGE"), failed task '$task'"
    explain "$ARRAY" "$MERGE" "$W/bad_$kind/logs"
  fi
}
check_failed_task caption captions.jsonl
check_failed_task features features "${FEAT_OPTS[@]}"

wall() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }
echo "# Slurm wall time from submission to merged output: caption $(wall "$t_sub" "${t_done[$CAP_MERGE]:-$t_sub}") s, features $(wall "$t_sub" "${t_done[$FEAT_MERGE]:-$t_sub}") s (both arrays at once, 1 CPU per task, including a requeued task each)"

# ---- GNU parallel (hosts ":" = this machine, 2 shares at a time) ----
echo "2/:" >"$W/hosts"
t3=$(date +%s.%N)
if bash "$ROOT/tools/slurm/parallel_ssh.sh" features -H "$W/hosts" -n 4 -i "$W/photos.txt" -o "$W/par_features" -a "$A" \
     -- "${FEAT_OPTS[@]}" --threads 1 >"$W/par.out" 2>&1 &&
   why=$(same_cache "$W/one_features" "$W/par_features/features"); then
  ok "parallel_features_byte_identical"
else bad parallel_features_byte_identical "${why:-$(tail -3 "$W/par.out")}"; fi
t4=$(date +%s.%N)
if bash "$ROOT/tools/slurm/parallel_ssh.sh" caption -H "$W/hosts" -n 3 -i "$W/caption.txt" -o "$W/par_caption" -a "$A" \
     -- --threads 1 >"$W/par.out" 2>&1 && cmp -s "$W/one_captions.jsonl" "$W/par_caption/captions.jsonl"; then
  ok "parallel_captions_byte_identical"
else bad parallel_captions_byte_identical "$(tail -3 "$W/par.out")"; fi
t5=$(date +%s.%N)
echo "# GNU parallel, 2 shares at a time x 1 thread: features $(rate "$n_all" "$t3" "$t4"), caption $(rate "$N_CAPTION" "$t4" "$t5"); load $(load)"

echo "test-slurm: $pass passed, $fail failed ($(($(date +%s) - t_start)) s)"
[ "$fail" -eq 0 ]
