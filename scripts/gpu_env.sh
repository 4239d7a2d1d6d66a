# Sourced by the scripts that run on a CUDA machine (gpu_check.sh, gpu_study.sh): offline settings, and the
# packages such an image lacks, from wheels carried in .whl/ (made beforehand where pip works: see
# benchmarks/results/gpu_check.README.md), installed into a private folder without touching the image's own.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then
    site=$(mktemp -d /tmp/hf_syntax_site.XXXX)
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl || exit 1
    export PYTHONPATH="$site:$PWD"
else
    export PYTHONPATH="$PWD"
fi
"$python" - <<'PY' | tee "$out/machine.txt"
import torch, transformers
print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)
print("GPU:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (it then runs on CPU)")
PY
