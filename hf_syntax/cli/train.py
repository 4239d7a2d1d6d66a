"""``hf-syntax train``: run the recipe a config file is for (its ``recipe:`` key: translation or glue)."""

from __future__ import annotations

from hf_syntax.cli.common import CliError, described
from hf_syntax.recipes.runs import add_config_arguments, add_translation_run_arguments


def command_train(options) -> None:
    """Run the recipe the config file's ``recipe:`` key names: ``glue`` (``training/run_glue_pos.py``) or
    ``translation`` (``training/train_translation.py``, also when the file has no such key)."""
    from hf_syntax.recipes.config import recipe_of

    argv = ["--config", options.config]
    for override in options.overrides:
        argv += ["--set", override]
    if recipe_of(options.config) == "glue":
        from hf_syntax.recipes.glue.run import main as glue_main

        translation_only = [flag for flag in ("resume_from_checkpoint", "skip_empty", "push_to_hub", "hub_model_id")
                            if getattr(options, flag)]
        if translation_only:
            raise CliError(f"{options.config} is a GLUE config (recipe: glue); --{translation_only[0].replace('_', '-')} "
                           f"is an option of the translation recipe only.")
        glue_main(argv + (["--set", f"output_dir={options.output_dir}"] if options.output_dir else []))
        return
    from hf_syntax.recipes.translation.run import main

    for flag in ("output_dir", "resume_from_checkpoint", "hub_model_id"):
        if getattr(options, flag):
            argv += [f"--{flag}", getattr(options, flag)]
    for flag in ("skip_empty", "push_to_hub", "debug"):
        if getattr(options, flag):
            argv.append(f"--{flag}")
    main(argv)  # its errors exit with status 2 themselves


def add_commands(commands) -> None:
    """Register ``train``."""
    train = commands.add_parser("train", help="train a translation or GLUE model from a config file",
                                description=described(command_train))
    add_config_arguments(train, set_example="model.type=dbsa", required=True)
    add_translation_run_arguments(train)
    train.set_defaults(run=command_train)
