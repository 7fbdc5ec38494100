#!/usr/bin/env bash
# Creates (or checks) the Ray venv the Ray Serve tests and bench use: .cache/ray-venv under the
# repository (git-ignored). Idempotent: a venv that already has everything is left as it is.
#
# Installs Ray 2.58.0 with the parts Ray Serve imports, pyzmq + msgpack (the fake engine's vLLM KV
# events) and this repository's Python client (clients/python, editable), from pip's local indexes
# only (PyPI itself is not reachable here): every package is looked up there first, so a missing
# one is named instead of pip waiting on a network. Exit 0 = the venv is ready; non-zero = it is not
# (the Ray tests then report themselves skipped and name this script).
#
# Usage: scripts/ray-venv.sh            (prints the venv's python on success)
#        RAY_VENV=/elsewhere scripts/ray-venv.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${RAY_VENV:-$root/.cache/ray-venv}"
python="${PYTHON:-python3}"
indexes=(/opt/pypi/simple /opt/pypi-more/simple)
pip_index=(--index-url "file://${indexes[0]}" --extra-index-url "file://${indexes[1]}")
packages=(ray==2.58.0 fastapi starlette uvicorn aiohttp prometheus_client grpcio pydantic requests watchfiles jinja2 pyzmq msgpack)
# what `import` checks (module names of the packages above)
modules="ray, ray.serve, fastapi, starlette, uvicorn, aiohttp, prometheus_client, grpc, pydantic, requests, watchfiles, jinja2, zmq, msgpack, select_service_client"

ready() {
  [ -x "$venv/bin/python" ] &&
    "$venv/bin/python" -c "import ray; assert ray.__version__ == '2.58.0', ray.__version__; import $modules" >/dev/null 2>&1
}

if ready; then
  echo "$venv/bin/python"
  exit 0
fi

# Each package must be served by one of the local indexes (PEP 503 names: lower case, '-' for '_').
missing=()
for spec in "${packages[@]}"; do
  name="${spec%%[=<>]*}"
  norm="$(echo "$name" | tr 'A-Z_.' 'a-z--')"
  found=""
  for dir in "${indexes[@]}"; do
    [ -f "$dir/$norm/index.html" ] && found=1
  done
  [ -n "$found" ] || missing+=("$name")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ray-venv: not in the local pip indexes (${indexes[*]}): ${missing[*]}" >&2
  exit 1
fi

mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pip_index[@]}" "${packages[@]}"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pip_index[@]}" --no-deps -e "$root/clients/python"
if ! ready; then
  echo "ray-venv: installed, but '$venv/bin/python' cannot import: $modules" >&2
  exit 1
fi
echo "$venv/bin/python"
