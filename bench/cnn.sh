#!/usr/bin/env bash
# The CNN benchmark against its peers (bench/cnn_peers.py). ONNX Runtime comes from npm
# (onnxruntime-node) into bench/.cache, ignored by git: --ignore-scripts, since its install script
# fetches from a host we need not reach, while the CPU library ships inside the package. A dev tool
# only; without npm or the network the peer is skipped with a message.
set -u
cd "$(dirname "$0")/.."
if [ ! -d bench/.cache/node_modules/onnxruntime-node ] && command -v npm >/dev/null; then
  mkdir -p bench/.cache
  npm install --prefix bench/.cache --ignore-scripts --no-audit --no-fund onnxruntime-node >/dev/null 2>&1 ||
    echo "# npm install onnxruntime-node failed; ONNX Runtime will be skipped"
fi
if [ ! -x /usr/bin/python3 ]; then echo "cnn: skipped (needs /usr/bin/python3 with numpy)"; exit 0; fi
exec /usr/bin/python3 bench/cnn_peers.py "$@"
