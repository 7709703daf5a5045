#!/usr/bin/env bash
# The test suite on the oldest releases pyproject.toml allows (`uv pip install --resolution
# lowest-direct`): checks its lower bounds. Writes scripts/results/lowest_versions.txt.
#   bash scripts/check_lowest_versions.sh        (about 15 minutes on 2 cores)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(mktemp -d)/low"
command -v uv >/dev/null || python3 -m pip install -q uv
uv venv -q "$venv" --python "$(command -v python3)"
uv pip install -q --python "$venv" --resolution lowest-direct -e "$repo[tvm,test]"
out="$repo/scripts/results/lowest_versions.txt"
{
    echo "# $(date -u +%FT%TZ) commit $(git -C "$repo" rev-parse --short HEAD): uv pip install --resolution lowest-direct -e '.[tvm,test]', then python -m pytest -q"
    uv pip freeze --python "$venv" | grep -v '^-e '
    (cd "$repo" && GBXFER_SHARED_DATA=/nonexistent "$venv/bin/python" -m pytest -q -p no:cacheprovider 2>&1 | tail -1)
} | tee "$out"
rm -rf "$(dirname "$venv")"
