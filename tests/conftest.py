"""Shared test setup: offline Hugging Face libraries, threads per xdist worker, paths to the real data (slices in
tests/data).

The environment variables are set at import time, before any test module imports torch/transformers/datasets/
evaluate, so nothing tries to reach the Hub (a hub look-up otherwise retries for ~20 s before failing), and so that
under pytest-xdist each worker (and the processes it starts) shares the cores with the other workers instead of
each starting a thread per core.
"""

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    _CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # as nproc
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _CORES // _WORKERS)))

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DATA = REPO_ROOT / "hf_syntax" / "sample_data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The full data sets beside the repository (../shared/data), for the few tests that check a whole set; the
    others read the slices shipped in tests/data."""
    from features_support import require_shared_data

    return require_shared_data()


@pytest.fixture(scope="session")
def sample_pairs() -> tuple[list[str], list[str]]:
    """The first 2,000 (ja, en) pairs of the embedded small_parallel_enja sample shipped in the package."""
    from hf_syntax.data.corpus import read_parallel

    folder = SAMPLE_DATA / "small_parallel_enja"
    columns, _ = read_parallel(folder / "train.ja.gz", folder / "train.en.gz", max_pairs=2000)
    return columns["source"], columns["target"]
