#!/usr/bin/env bash
# The COCO detector's graph against its peers (bench/detector_peers.py): ours, ONNX Runtime (npm
# onnxruntime-node into bench/.cache, as bench/cnn.sh installs it) and XNNPACK, at 416x416 on 1 and 2
# threads. A dev tool only; a missing peer is skipped with a message.
set -u
cd "$(dirname "$0")/.."
if [ ! -d bench/.cache/node_modules/onnxruntime-node ] && command -v npm >/dev/null; then
  mkdir -p bench/.cache
  npm install --prefix bench/.cache --ignore-scripts --no-audit --no-fund onnxruntime-node >/dev/null 2>&1 ||
    echo "# npm install onnxruntime-node failed; ONNX Runtime will be skipped"
fi
if [ ! -x /usr/bin/python3 ]; then echo "detector: skipped (needs /usr/bin/python3 with numpy)"; exit 0; fi
exec /usr/bin/python3 bench/detector_peers.py "$@"
