"""The `replicalab` command line: one module per command, the options several commands share in
`options` (grouped in `groups`), the chat-model options in `llm_options`, errors in `errors`."""

from replicalab.baselines.cli.main import app

__all__ = ["app"]
