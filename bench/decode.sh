#!/usr/bin/env bash
# Decode + resize of 12-megapixel JPEGs: ours (libjpeg-turbo's reduced decode) against ours before
# (stb_image, whole), Pillow's draft() and OpenCV's IMREAD_REDUCED_COLOR (bench/decode_peers.py; Debian
# python3-pil and python3-opencv, each skipped with a message when missing). The 12 MP photos are made
# once into bench/.cache/photos12mp (ignored by git).
set -u
cd "$(dirname "$0")/.."
if [ ! -x /usr/bin/python3 ]; then echo "decode: skipped (needs /usr/bin/python3 with numpy and Pillow)"; exit 0; fi
exec /usr/bin/python3 bench/decode_peers.py "$@"
