#!/usr/bin/env bash
# Prints the bin folder of Node.js MAJOR (e.g. 22) for this machine, installing the npm registry's
# node-<os>-<arch>@MAJOR package (the official binary, no download step of its own) into
# .cache/node/MAJOR the first time. .ci/run uses it to run the test suite under every Node line
# package.json "engines" lists.
set -euo pipefail
major=${1:?usage: scripts/node-line.sh MAJOR}
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "node-line: no Node package for $(uname -m)" >&2; exit 1 ;;
esac
pkg="node-$(uname -s | tr '[:upper:]' '[:lower:]')-$arch"
dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/node/$major"
if ! "$dir/node_modules/$pkg/bin/node" --version >/dev/null 2>&1; then
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$pkg@$major" >&2
fi
echo "$dir/node_modules/$pkg/bin"
