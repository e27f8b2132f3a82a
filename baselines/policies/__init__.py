"""The seats: the `Policy` interface every Scientist and Lab Manager implements, the baseline,
random, grounded and LLM seats (`seats`), the full-knowledge `oracle`, the `probes` and
`readers` that bound what a reader of the public scenario can reach, the cheap rules fitted on
the train split (`learned_readers`, `openings`), the trained `structured` Scientist and the
served-model `chat` policy."""
