"""Speed, memory and skill measurements, each a `python -m benchmarks.<name>`; figures and commands in RESULTS.md."""
