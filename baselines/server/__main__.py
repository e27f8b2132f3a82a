"""`python -m replicalab.baselines.server`: `replicalab serve` on its own, as a container runs it."""

import typer

from replicalab.baselines.cli.serve import serve

typer.run(serve)
