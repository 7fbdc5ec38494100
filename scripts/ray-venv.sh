#!/usr/bin/env bash
# Creates (or checks) the Ray venv the Ray Serve tests and bench use: .cache/ray-venv under the
# repository (git-ignored). Idempotent: a venv that already has everything is left as it is.
#
# Installs Ray 2.58.0 (Python >= 3.10) with the parts Ray Serve imports, pyzmq + msgpack (the fake
# engine's vLLM KV events) and this repository's Python client (clients/python, editable), with pip
# as this machine configures it: its config files and PIP_INDEX_URL, PIP_EXTRA_INDEX_URL,
# PIP_FIND_LINKS, PIP_NO_INDEX (the public index when nothing else is set, local indexes or wheel
# folders where those are set). Before installing, it prints every source and whether it answers
# (scripts/pip-sources.py; a source that does not answer is left out of this run rather than
# retried by pip for every package), then, when pip can say it (pip >= 22.2), every file it will
# fetch and from where. docs/development.md: "The Ray tests on another machine".
# Exit 0 = the venv is ready; non-zero = it is not (the Ray tests then report themselves skipped
# and name this script).
#
# Usage: scripts/ray-venv.sh            (prints the venv's python on success)
#        RAY_VENV=/elsewhere PYTHON=python3.12 scripts/ray-venv.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${RAY_VENV:-$root/.cache/ray-venv}"
python="${PYTHON:-python3}"
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

# Ray 2.58.0 has wheels for Python >= 3.10 only (pip would say no more than "no matching distribution")
old_python() { ! "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; }
mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
  if ! command -v "$python" >/dev/null; then
    echo "ray-venv: no $python here: set PYTHON to a python3 >= 3.10 (PYTHON=python3.12 $0)" >&2
    exit 1
  elif old_python "$python"; then
    echo "ray-venv: Ray 2.58.0 needs Python >= 3.10; $python is $("$python" --version 2>&1): set PYTHON (PYTHON=python3.12 $0)" >&2
    exit 1
  fi
  "$python" -m venv "$venv"
elif old_python "$venv/bin/python"; then
  echo "ray-venv: Ray 2.58.0 needs Python >= 3.10; $venv has $("$venv/bin/python" --version 2>&1): remove it and set PYTHON" >&2
  exit 1
fi
pip=("$venv/bin/python" -m pip)

echo "ray-venv: installing into $venv: ${packages[*]} and clients/python (editable)" >&2
# PIP_* overrides for this run, one NAME=VALUE a line: only when a configured source must be left out
sources="$("$venv/bin/python" "$root/scripts/pip-sources.py")"
overrides=(PIP_DISABLE_PIP_VERSION_CHECK=1)
while IFS= read -r line; do [ -n "$line" ] && overrides+=("$line"); done <<<"$sources"

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
if env "${overrides[@]}" "${pip[@]}" install --quiet --dry-run --ignore-installed --report "$report" "${packages[@]}" 2>/dev/null; then
  echo "ray-venv: pip will fetch:" >&2
  "$venv/bin/python" - "$report" >&2 <<'EOF'
import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    meta, info = item["metadata"], item.get("download_info", {})
    print(f"  {meta['name']} {meta['version']}  <- {info.get('url', '?')}")
EOF
else
  echo "ray-venv: (this pip cannot list the files before fetching them; installing)" >&2
fi

env "${overrides[@]}" "${pip[@]}" install --quiet "${packages[@]}"
env "${overrides[@]}" "${pip[@]}" install --quiet --no-deps -e "$root/clients/python"
if ! ready; then
  echo "ray-venv: installed, but '$venv/bin/python' cannot import: $modules" >&2
  exit 1
fi
echo "$venv/bin/python"
