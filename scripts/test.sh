#!/usr/bin/env bash
# Set up (scripts/bootstrap.sh) and run the whole test suite offline.
# Most of the suite's time is fresh Python processes (exports loaded elsewhere, the CLI, tiny training runs), which
# use one core each: pytest-xdist runs the test files on up to 4 workers (HF_SYNTAX_TEST_WORKERS overrides; 0 runs
# them in this process). A file stays on one worker, so its module fixtures are built once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
cd "$root"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cores=$(nproc)
workers=${HF_SYNTAX_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
exec "$root/.venv/bin/python" -m pytest -q --numprocesses "$workers" --dist loadfile "$@"
