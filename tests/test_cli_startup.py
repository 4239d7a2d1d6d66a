"""The ``hf-syntax`` console script answers ``--help`` and argument errors without importing torch or transformers
(``hf_syntax_cli``), still runs commands with the real package, and ``translate`` reads its input before the model."""

import subprocess
import sys

import pytest

from hf_syntax.cli import main

LAUNCH = ("import sys\nfrom hf_syntax_cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as end:\n"
          "    print('exit', end.code, file=sys.stderr)\n"
          "print('heavy:', sorted({'torch', 'transformers'} & set(sys.modules)), file=sys.stderr)\n")


def launch(*arguments: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """The console script's entry point in a fresh process, as `hf-syntax ARGUMENTS` runs it."""
    return subprocess.run([sys.executable, "-c", LAUNCH, *arguments], stdin=stdin, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("arguments", [("--help",), ("study", "--help"), ("translate",), ("export", "--format", "x")])
def test_help_and_argument_errors_import_neither_torch_nor_transformers(arguments):
    finished = launch(*arguments)
    assert "heavy: []" in finished.stderr, finished.stderr
    expected_exit = 0 if "--help" in arguments else 2
    assert f"exit {expected_exit}" in finished.stderr, finished.stderr
    if expected_exit == 0:
        assert "usage: hf-syntax" in finished.stdout
    else:
        assert "error: " in finished.stderr


def test_a_command_runs_with_the_whole_package_loaded(tmp_path):
    finished = launch("translate", "--model", str(tmp_path / "missing"))
    assert "exit 2" in finished.stderr and "heavy: ['torch', 'transformers']" in finished.stderr, finished.stderr
    assert f"error: {tmp_path / 'missing'}" in finished.stderr  # the model folder's own error, from hf_syntax


def test_translate_checks_stdin_before_it_loads_the_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", None)  # as `hf-syntax translate --model M <&-`
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "--model", str(tmp_path / "missing")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: stdin is closed: give the input lines on stdin, e.g. < input.txt")
