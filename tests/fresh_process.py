"""Run Python code in a fresh interpreter where hf_syntax is NOT importable.

That is the situation of a user who only has an exported model folder and `trust_remote_code=True`: the model must
load from the folder's own files. hf_syntax is installed in editable mode here, so the child runs with `-I -S` (no
site hooks, hence no editable finder) and gets the site-packages directories back explicitly.
"""

import os
import site
import subprocess
import sys
from pathlib import Path

_PRELUDE = (
    "import sys, importlib.util\n"
    "sys.path[:0] = {paths!r}\n"
    "assert importlib.util.find_spec('hf_syntax') is None, 'hf_syntax is importable in the fresh process'\n"
)


def command_without_hf_syntax(code: str, workdir: Path, extra_paths=()) -> tuple[list[str], dict]:
    """The command line and environment of a clean interpreter running `code` (`extra_paths` go first on its path)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_MODULES_CACHE=str(Path(workdir) / "hf_modules"))
    script = _PRELUDE.format(paths=[*map(str, extra_paths), *site.getsitepackages()]) + code
    return [sys.executable, "-I", "-S", "-c", script], env


def run_without_hf_syntax(code: str, workdir: Path, timeout: int = 600) -> str:
    """Run `code` in a clean interpreter with cwd `workdir`; return its stdout, fail with its stderr."""
    command, env = command_without_hf_syntax(code, workdir)
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"fresh process failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout
