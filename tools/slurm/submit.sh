#!/bin/bash
# Submits a sharded attncap run to Slurm: a job array of N tasks (each one share of the photos) and
# the merge as a job that starts once every task has ended (afterany; the merge fails, naming the
# task, if one left no part). Prints the two job ids.
#
#   tools/slurm/submit.sh caption  -n 16 -i /shared/photos     -o /shared/run1 [-- attncap caption options]
#   tools/slurm/submit.sh features -n 16 -i /shared/photos.txt -o /shared/run2 [-- attncap features options]
#
# -i: a directory of photos or a file listing them; -o: an output folder every node sees;
# -a: the attncap binary as the nodes see it (default: attncap on PATH); -c: CPUs per task (2).
# Other sbatch settings (partition, account, time) come from SBATCH_* variables, e.g. SBATCH_PARTITION.
# Results: OUT/captions.jsonl, or the feature cache OUT/features/; logs in OUT/logs/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
kind=$1; shift
case $kind in caption|features) ;; *) usage ;; esac
tasks="" photos="" out="" attncap=attncap cpus=2
while getopts "n:i:o:a:c:h" opt; do
  case $opt in
    n) tasks=$OPTARG ;; i) photos=$OPTARG ;; o) out=$OPTARG ;; a) attncap=$OPTARG ;; c) cpus=$OPTARG ;; *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[ -n "$tasks" ] && [ -n "$photos" ] && [ -n "$out" ] || usage
[[ $tasks =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: -n wants a number of tasks, got '$tasks'" >&2; exit 2; }
shard_size=""  # the merge writes shard files of the size the tasks used
prev=""; for a in "$@"; do [ "$prev" = --shard-size ] && shard_size=$a; prev=$a; done
photos=$(realpath "$photos") && mkdir -p "$out/logs" && out=$(realpath "$out")
array=$(sbatch --parsable --array=0-$((tasks - 1)) --cpus-per-task="$cpus" --output="$out/logs/%x-%A_%a.out" --open-mode=append \
        --export=ALL,PHOTOS="$photos",OUT="$out",ATTNCAP="$attncap" "$here/$kind.sbatch" "$@")
array=${array%%;*}
# afterany rather than afterok + --kill-on-invalid-dep: after a failed task, a merge cancelled for
# "DependencyNeverSatisfied" says nothing of which task; merge.sbatch checks the parts and names it.
merge=$(sbatch --parsable --dependency=afterany:"$array" --output="$out/logs/%x-%j.out" \
        --export=ALL,KIND="$kind",OUT="$out",TASKS="$tasks",ATTNCAP="$attncap",SHARD_SIZE="$shard_size" "$here/merge.sbatch")
merge=${merge%%;*}
echo "array $array ($tasks tasks), merge $merge (after every task has ended)"
