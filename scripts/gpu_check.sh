#!/usr/bin/env bash
# The CUDA checks of issue 41 on a machine with a GPU: the gpu-marked tests and the CPU dtype tests they share
# builders with. Usage: scripts/gpu_check.sh [pytest options]
set -euo pipefail
cd "$(dirname "$0")/.."
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU visible to torch'; print(torch.__version__, torch.cuda.get_device_name())"
exec python -m pytest -q tests/test_gpu.py tests/test_dtypes.py "$@"
