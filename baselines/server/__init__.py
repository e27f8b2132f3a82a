"""ReplicaLab as an OpenEnv environment server (the `[server]` extra).

`app.create_app` builds the FastAPI app (OpenEnv's endpoints: `/ws` sessions, `/reset`, `/step`,
`/state`, `/schema`, `/health`, `/metadata`), `sessions` holds the bounded session table,
`environment` adapts the Gymnasium Scientist env to OpenEnv's `Environment`, `models` holds the
wire types, `client.ReplicaLabClient` connects to a server, and `cli.serve` is `replicalab serve`.
The rules stay in `replicalab.episode.Episode`; the server only translates. docs/serving.md is
the manual.
"""
