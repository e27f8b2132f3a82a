"""ReplicaLab as an OpenEnv environment server (the `[server]` extra).

`app.create_app` builds the FastAPI app from `websocket` (`/ws` sessions), `http_routes`
(`/reset`, `/step`, `/state`, `/close`, `/schema`, `/health`, `/metadata`, `/capacity`),
`guards` (the token, bodies read within their limits) and `protocol` (connection cap, time for a
request's head); `settings` holds the operator's limits, `sessions` the bounded session table,
`environment` the Scientist's seat per session, `models` the wire types, `events` the log, `run`
the uvicorn server with its ready line, `loopback` a server on a free loopback port, and
`client.ReplicaLabClient` connects to one. `replicalab serve` (in the command line) runs it. The
rules stay in `replicalab.episode.Episode`; the server only translates. docs/serving.md is the
manual.
"""
