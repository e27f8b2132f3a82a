"""`python -m replicalab.baselines.cli`: the `replicalab` command, as its console script runs it."""

from replicalab.baselines.cli.main import app

app()
