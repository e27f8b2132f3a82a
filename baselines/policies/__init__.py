"""The seats: the `Policy` interface every Scientist and Lab Manager implements, the baseline,
random, grounded and LLM seats (`seats`), the full-knowledge `oracle`, the `probes` that bound
what a reader of the public scenario can reach, the trained `structured` Scientist and the
served-model `chat` policy."""
