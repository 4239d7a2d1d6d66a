"""``python -m hf_syntax.cli``: the ``hf-syntax`` command without the console script."""

from hf_syntax.cli.commands import main

raise SystemExit(main())
