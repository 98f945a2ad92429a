"""boxcar_client: a thin Python client for boxcar's SQL API (psycopg 3).

Enqueue inside your own transaction, wait for results pushed by
PostgreSQL (LISTEN, no polling), follow live logs and progress, list,
cancel and retry jobs, verify webhooks, and drive sessions.  See
clients/python/README.md.
"""

from .errors import (BadRequest, BadSpec, BoxcarError, Conflict, ConnectionLost, InvalidState,
                     JobFailed, NotFound, PermissionDenied, Timeout, WebhookVerificationError)
from .jobs import JobPage, cancel, enqueue, enqueue_many, get, iter_jobs, list_jobs, retry
from .live import LogChunk, ProgressReport, progress, stream_logs, wait
from .sessions import Session
from .spec import FINAL_STATUSES, FileOp, Job, JobSpec, JobSummary, NewJob
from .webhooks import verify_webhook

__version__ = "0.1.0"

__all__ = [
    "BadRequest", "BadSpec", "BoxcarError", "Conflict", "ConnectionLost", "InvalidState",
    "JobFailed", "NotFound", "PermissionDenied", "Timeout", "WebhookVerificationError",
    "JobPage", "cancel", "enqueue", "enqueue_many", "get", "iter_jobs", "list_jobs", "retry",
    "LogChunk", "ProgressReport", "progress", "stream_logs", "wait",
    "Session", "FINAL_STATUSES", "FileOp", "Job", "JobSpec", "JobSummary", "NewJob",
    "verify_webhook",
]
