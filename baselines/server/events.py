"""The server's log: one line per session event (opened, reset, closed and why, refused) and
per refused or failed request, as text or JSON lines (`replicalab serve --log-json`).

A session appears under its `tag`, a digest of its id: the log never holds an HTTP session's
id, which works as a bearer secret."""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from typing import Any

LOGGER = "replicalab.server"
logger = logging.getLogger(LOGGER)


def tag(session_id: str) -> str:
    """A session's name in the log: 8 hex digits of its id's SHA-256."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:8]


def event(name: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log `name` with `fields` (JSON values); cheap when the logger is off."""
    if logger.isEnabledFor(level):
        logger.log(level, name, extra={"fields": fields})


class TextFormatter(logging.Formatter):
    """`2026-01-02T03:04:05Z INFO session_opened session=1a2b3c4d transport=ws`."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created))
        fields = getattr(record, "fields", {})
        parts = [stamp, record.levelname, record.getMessage()]
        parts += [
            f"{key}={json.dumps(value) if isinstance(value, str) and ' ' in value else value}"
            for key, value in fields.items()
        ]
        line = " ".join(str(part) for part in parts)
        return line + ("\n" + self.formatException(record.exc_info) if record.exc_info else "")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `ts`, `level`, `event` and the event's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname,
            "event": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(json_lines: bool, level: int = logging.INFO) -> None:
    """Send the server's events, and uvicorn's own warnings and errors, to stderr in one format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    for name, at in ((LOGGER, level), ("uvicorn.error", max(level, logging.WARNING))):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(at)
        named.propagate = False
