#!/usr/bin/env bash
# Create .venv (if needed) and install hf-syntax with everything the demo and the tests use.
# Idempotent: re-installs only when pyproject.toml changed since the last successful install.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.hf_syntax_installed"
want=$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$venv/bin/python" -m pip install -q --upgrade pip
  # The CPU wheel first, so nothing below pulls a CUDA build.
  "$venv/bin/python" -m pip install -q "torch==2.13.0"
  "$venv/bin/python" -m pip install -q -e "$root[parsers,minilm,dev,space]"
  echo "$want" > "$stamp"
fi
