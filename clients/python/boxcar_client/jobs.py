"""Enqueue, read, list, cancel and retry: one SQL call each, on the caller's
connection and inside the caller's transaction (a job enqueued in a
transaction that rolls back never existed).  Nothing here commits."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Sequence, Union
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from .errors import NotFound, from_psycopg
from .spec import Job, JobSpec, JobSummary, NewJob

JobId = Union[str, UUID]


def _call(conn: psycopg.Connection, query: Any, params: Any = None) -> List[tuple]:
    try:
        return conn.execute(query, params).fetchall()
    except psycopg.Error as e:
        raise from_psycopg(e) from e


def enqueue(conn: psycopg.Connection, queue: str, spec: JobSpec, *,
            priority: Optional[int] = None,
            run_at: Optional[Union[_dt.datetime, str]] = None,
            max_attempts: Optional[int] = None,
            idempotency_key: Optional[str] = None,
            webhook_url: Optional[str] = None,
            depends_on: Optional[Sequence[JobId]] = None) -> str:
    """Enqueues one job with ``boxcar.enqueue`` and returns its id.

    Runs on ``conn`` in its current transaction: the job exists once (and
    if) the caller commits.  An argument left as None takes the server's
    default (priority 0, run_at now, max_attempts 3).  ``depends_on``: the
    job runs only after each of these jobs has succeeded.  A refused spec
    raises :class:`BadSpec` with the server's message, other refused
    arguments :class:`BadRequest`, a reused idempotency key for a different
    request :class:`Conflict`.
    """
    # Only the arguments given are named, so the server's defaults apply to
    # the others (and a server without depends_on still takes the rest).
    names = ["queue", "spec"]
    params: List[Any] = [queue, Jsonb(spec)]
    for name, value in (("priority", priority), ("run_at", run_at),
                        ("max_attempts", max_attempts), ("idempotency_key", idempotency_key),
                        ("webhook_url", webhook_url)):
        if value is not None:
            names.append(name)
            params.append(value)
    casts = {"queue": "::text", "spec": "::jsonb", "priority": "::integer",
             "run_at": "::timestamptz", "max_attempts": "::integer",
             "idempotency_key": "::text", "webhook_url": "::text", "depends_on": "::uuid[]"}
    if depends_on is not None:
        names.append("depends_on")
        params.append([str(d) for d in depends_on])
    q = "select boxcar.enqueue(%s)" % ", ".join("%s => %%s%s" % (n, casts[n]) for n in names)
    return str(_call(conn, q, params)[0][0])


def _element(job: NewJob) -> Jsonb:
    e = dict(job)
    if isinstance(e.get("run_at"), _dt.datetime):
        e["run_at"] = e["run_at"].isoformat()
    if e.get("depends_on") is not None:
        e["depends_on"] = [d if isinstance(d, int) else str(d) for d in e["depends_on"]]
    return Jsonb(e)


def enqueue_many(conn: psycopg.Connection, jobs: Sequence[NewJob]) -> List[str]:
    """Enqueues every job in one call (``boxcar.enqueue_many``) and returns
    their ids in order.  Each element is a :class:`NewJob` dict (``queue``,
    ``spec``, and optionally ``priority``, ``run_at``, ``max_attempts``,
    ``idempotency_key``, ``webhook_url``, ``depends_on`` whose entries are
    ids or the int index of an earlier element).  One refused element
    refuses them all; the message starts ``jobs[<index>]: ``."""
    rows = _call(conn, "select boxcar.enqueue_many(%s::jsonb[])", ([_element(j) for j in jobs],))
    return [str(i) for i in rows[0][0] or []]


def get(conn: psycopg.Connection, job_id: JobId) -> Job:
    """The job as ``boxcar.job_json`` gives it; :class:`NotFound` if none."""
    rows = _call(conn, "select boxcar.job_json(%s::uuid)", (str(job_id),))
    if rows[0][0] is None:
        raise NotFound("job %s not found" % job_id, sqlstate="P0002")
    return rows[0][0]


@dataclass
class JobPage:
    """One page of :func:`list_jobs`: ``jobs`` newest first, and ``next``,
    the cursor to pass as ``after`` for the following page (None after the
    last page)."""

    jobs: List[JobSummary]
    next: Optional[str]


def list_jobs(conn: psycopg.Connection, *, queue: Optional[str] = None,
              status: Optional[str] = None, since: Optional[_dt.datetime] = None,
              limit: int = 50, after: Optional[str] = None) -> JobPage:
    """A page of jobs, newest first (``boxcar.jobs_list``), optionally of one
    queue, one status, created at or after ``since``.  ``limit``: 1 to 1000."""
    rows = _call(conn, "select job, cursor from boxcar.jobs_list(queue => %s, status => %s, "
                       "since => %s, lim => %s, after => %s)",
                 (queue, status, since, limit, after))
    return JobPage([r[0] for r in rows], rows[-1][1] if len(rows) == limit else None)


def iter_jobs(conn: psycopg.Connection, **filters: Any) -> Iterator[JobSummary]:
    """Every job matching ``filters`` (as :func:`list_jobs`), page by page."""
    after = filters.pop("after", None)
    while True:
        page = list_jobs(conn, after=after, **filters)
        yield from page.jobs
        if page.next is None:
            return
        after = page.next


def cancel(conn: psycopg.Connection, job_id: JobId) -> str:
    """Cancels a job (``boxcar.cancel``): a queued one at once (returns
    ``"cancelled"``), a running one by its worker within about a second
    (returns ``"running"``; :func:`wait` for the end); a finished one keeps
    its status, which is returned."""
    return _call(conn, "select boxcar.cancel(%s::uuid)", (str(job_id),))[0][0]


def retry(conn: psycopg.Connection, job_id: JobId, requested_by: str) -> Job:
    """Queues a failed or cancelled job again (``boxcar.retry``), naming who
    asked; returns the job.  Any other status raises :class:`InvalidState`."""
    return _call(conn, "select boxcar.retry(%s::uuid, %s)", (str(job_id), requested_by))[0][0]
