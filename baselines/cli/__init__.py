"""The `replicalab` command line: one module per command, the shared options and errors in
`common`, the chat-model options in `llm_options`."""

from replicalab.baselines.cli.main import app

__all__ = ["app"]
