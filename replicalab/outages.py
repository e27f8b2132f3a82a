"""Which refused moves are a server's failure rather than a model's: the rule a results table and
a resume share, read from the log alone so that any log, old or new, is judged the same way.

A model call that fails for the transport (no connection, no answer in time, or an error status
a client retries: 408, 409, 429, every 5xx) says nothing about the model; the same episode on a
working server could have gone otherwise. A refusal the server meant (400, 401, 404), a 200 whose
body is not a chat completion, and text the model wrote that does not parse are the model's (or
its set-up's) and are scored: playing them again would give the same.
"""

from __future__ import annotations

import re

from replicalab.models import EpisodeLog

RETRIED_STATUSES = frozenset({408, 409, 429})
"""With every 5xx, the error statuses a client retries: the server is busy or down, not refusing."""
SERVER_ERROR_CODES = frozenset({"llm_timeout", "llm_connection_error"})
"""Failed-call codes that are always the transport's."""
HTTP_ERROR_CODE = "llm_http_error"  # its message starts with "HTTP <status>"
GENERATE_ERROR_CODE = "generate_error"  # a `GenerateFn` that raised: "generate_fn raised <Type>: <str>"
_STATUS = re.compile(r"HTTP (\d{3})\b")
_RAISED_CALL_ERROR = "generate_fn raised LLMCallError: "  # a chat backend used as a GenerateFn


def retried_status(status: int) -> bool:
    """Whether an error `status` is retried: the server is failing, not refusing the request."""
    return status in RETRIED_STATUSES or status >= 500


def is_server_error(code: str | None, message: str | None) -> bool:
    """Whether a refused move with this error code and message is the server's failure."""
    message = message or ""
    if code == GENERATE_ERROR_CODE and message.startswith(_RAISED_CALL_ERROR):
        code, _, message = message.removeprefix(_RAISED_CALL_ERROR).partition(": ")
    if code in SERVER_ERROR_CODES:
        return True
    status = _STATUS.match(message) if code == HTTP_ERROR_CODE else None
    return status is not None and retried_status(int(status.group(1)))


def server_errors(log: EpisodeLog) -> int:
    """How many of the episode's moves were refused for a server's failure; an episode with any
    is not the model's to be scored on."""
    return sum(
        1
        for step in log.steps
        if step.error_code is not None and is_server_error(step.error_code, step.error_message)
    )
