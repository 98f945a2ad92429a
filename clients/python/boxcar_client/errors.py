"""The errors the client raises.

Every error the server raises inside a boxcar function surfaces as a
:class:`BoxcarError` subclass chosen by its SQLSTATE, with the server's
message unchanged (``str(e)``, ``e.message``) and the SQLSTATE, DETAIL and
HINT beside it; the psycopg exception is ``e.__cause__``.  Errors of the
client's own (a wait that timed out, a job that failed under
:class:`~boxcar_client.Session`) are subclasses too.

    BoxcarError
    ├── BadRequest        22023: an argument is refused (the message names it);
    │                     22P02: a value of the wrong form (a job id not a UUID)
    │   └── BadSpec       ... a job spec is (message "BAD_SPEC: <field>: ...",
    │                     or "jobs[<i>]: BAD_SPEC: ..." from enqueue_many)
    ├── NotFound          P0002: no such job
    ├── InvalidState      55000: not now (retry of a running job, ...)
    ├── Conflict          23505: an idempotency key used for another request
    ├── PermissionDenied  42501: the role may not do this
    ├── ConnectionLost    the connection broke (outside wait, which reconnects)
    ├── Timeout           wait/stream gave up (also a builtin TimeoutError)
    ├── JobFailed         a Session call's job failed: .job holds it
    └── WebhookVerificationError  verify_webhook refused a request
"""

from __future__ import annotations

import re
from typing import Any, Optional

import psycopg


class BoxcarError(Exception):
    """Base class: ``message`` is the server's (or the client's) text as is."""

    def __init__(self, message: str, *, sqlstate: Optional[str] = None,
                 detail: Optional[str] = None, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint


class BadRequest(BoxcarError):
    """SQLSTATE 22023: an argument was refused; the message names it."""


class BadSpec(BadRequest):
    """A job spec was refused (``BAD_SPEC: <field>: <rule>``)."""


class NotFound(BoxcarError):
    """SQLSTATE P0002: the job (or session) does not exist."""


class InvalidState(BoxcarError):
    """SQLSTATE 55000: the job's status does not allow this now."""


class Conflict(BoxcarError):
    """SQLSTATE 23505: an idempotency key already names a different request."""


class PermissionDenied(BoxcarError):
    """SQLSTATE 42501: the connected role may not call this."""


class ConnectionLost(BoxcarError):
    """The connection to PostgreSQL broke during a call."""


class Timeout(BoxcarError, TimeoutError):
    """A wait ended before the job did; ``job_id`` names the job."""

    def __init__(self, message: str, job_id: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class JobFailed(BoxcarError):
    """A job a helper waited for ended failed or cancelled; ``job`` is its
    ``boxcar.job_json`` and ``code`` its error code; the message is the
    job's error message as the worker wrote it."""

    def __init__(self, job: Any) -> None:
        err = (job or {}).get("error") or {}
        self.code = err.get("code", "")
        super().__init__(err.get("message") or "job %s ended %s" % (job.get("id"), job.get("status")))
        self.job = job


class WebhookVerificationError(BoxcarError):
    """A webhook request is not authentic (or too old); the message says why."""


_BY_STATE = {
    "22023": BadRequest,
    "22P02": BadRequest,  # a job id that is not a UUID
    "P0002": NotFound,
    "55000": InvalidState,
    "23505": Conflict,
    "42501": PermissionDenied,
}
_BAD_SPEC = re.compile(r"^(jobs\[\d+\]: )?BAD_SPEC: ")


def from_psycopg(e: psycopg.Error) -> BoxcarError:
    """The BoxcarError for a psycopg error (its message unchanged)."""
    diag = e.diag
    message = diag.message_primary or str(e).strip()
    state = e.sqlstate
    cls: type = _BY_STATE.get(state or "", BoxcarError)
    if cls is BadRequest and _BAD_SPEC.match(message):
        cls = BadSpec
    if state is None and isinstance(e, psycopg.OperationalError):
        cls = ConnectionLost
    err = cls(message, sqlstate=state, detail=diag.message_detail, hint=diag.message_hint)
    err.__cause__ = e
    return err
