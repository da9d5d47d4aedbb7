#!/bin/bash
# A sharded attncap run over a handful of hosts with GNU parallel and ssh, no scheduler: N shares
# (default: one per host line in HOSTS), each run on whichever host is free, a failed share retried
# (on another host if one is free), then the merge here. Hosts must see PHOTOS and OUT at the same
# paths (NFS or the like) and have attncap (-a PATH) installed; HOSTS is a GNU parallel sshloginfile
# ("host", "4/host" for 4 shares at a time, ":" for this machine).
#
#   tools/slurm/parallel_ssh.sh caption  -H hosts.txt -i /shared/photos     -o /shared/run1 [-- caption options]
#   tools/slurm/parallel_ssh.sh features -H hosts.txt -i /shared/photos.txt -o /shared/run2 [-- features options]
#
# Each share is written as the Slurm tasks write theirs (caption: temp file + rename; features: its
# own resumable cache), so a retried share neither loses nor repeats photos; the merge is
# tools/slurm/merge.sbatch run as a plain script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
kind=$1; shift
case $kind in caption|features) ;; *) usage ;; esac
hosts="" photos="" out="" attncap=attncap shares=""
while getopts "H:i:o:a:n:h" opt; do
  case $opt in
    H) hosts=$OPTARG ;; i) photos=$OPTARG ;; o) out=$OPTARG ;; a) attncap=$OPTARG ;; n) shares=$OPTARG ;; *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
[ -n "$hosts" ] && [ -n "$photos" ] && [ -n "$out" ] || usage
command -v parallel >/dev/null || { echo "parallel_ssh.sh: needs GNU parallel (apt-get install parallel)" >&2; exit 1; }
shares=${shares:-$(grep -cvE '^\s*(#|$)' "$hosts")}
photos=$(realpath "$photos") && mkdir -p "$out/parts" && out=$(realpath "$out")
q() { printf '%q' "$1"; }
opts=""; for a in "$@"; do opts="$opts $(q "$a")"; done
shard_size=""; prev=""; for a in "$@"; do [ "$prev" = --shard-size ] && shard_size=$a; prev=$a; done
if [ "$kind" = caption ]; then
  if [ -d "$photos" ]; then src=$(q "$photos"); else src="- <$(q "$photos")"; fi
  cmd="p=$(q "$out")/parts/caption-\$(printf %05d {}).jsonl; t=\$p.tmp.\$\$; $(q "$attncap") caption --shard {}/$shares --json --quiet $opts $src >\$t && mv -f \$t \$p || { rm -f \$t; exit 1; }"
else
  list=$photos
  if [ -d "$photos" ]; then
    list="$out/photos.txt"
    find "$photos" -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) | LC_ALL=C sort >"$list"
  fi
  mkdir -p "$out/parts/done"
  cmd="c=features-\$(printf %05d {}); rm -f $(q "$out")/parts/done/\$c && $(q "$attncap") features --shard {}/$shares --quiet $opts --out $(q "$out")/parts/\$c --list $(q "$list") && touch $(q "$out")/parts/done/\$c"
fi
seq 0 $((shares - 1)) | parallel --sshloginfile "$hosts" --retries 3 --halt now,fail=1 --joblog "$out/parallel.log" "$cmd"
KIND=$kind OUT=$out TASKS=$shares ATTNCAP=$attncap SHARD_SIZE=$shard_size bash "$here/merge.sbatch"
