"""Waiting for a job, following its live log and its progress: pushed by
PostgreSQL (LISTEN/NOTIFY), never polled.

Each call holds one connection that LISTENs (``boxcar_job_updates`` for
ends and progress, ``boxcar_logs`` for log batches).  The order is always:
LISTEN first, then read, then sleep until a notification about this job
arrives, then read again; so an end that happens between the read and the
sleep is not missed.  Notification payloads carry no job data (any role may
LISTEN), so the job is read with ``boxcar.job_json`` each time.

When the connection breaks (a PostgreSQL restart, a failover, a killed
backend), the call reconnects (backing off from 50 ms to 2 s, until its
timeout), LISTENs again and reads again: whatever happened while it was
away is in the tables.  Only the first connection's failure is raised at
once (a wrong password is not retried).  The listening connections use TCP
keepalives (unless the conninfo sets its own), so a connection that died
silently is noticed too.
"""

from __future__ import annotations

import json
import select
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Iterator, List, Optional, Sequence, Tuple, Union

import psycopg
from psycopg import conninfo as _conninfo

from .errors import ConnectionLost, NotFound, Timeout, from_psycopg
from .jobs import JobId
from .spec import FINAL_STATUSES, Job

JOB_UPDATES = "boxcar_job_updates"
LOGS = "boxcar_logs"

Source = Union[str, psycopg.Connection]


def _params_of(conn: psycopg.Connection) -> str:
    """A conninfo that reaches the same server as conn, as the same role
    (the password too, which conn.info.dsn leaves out)."""
    params = conn.info.get_parameters()
    if conn.info.password:
        params["password"] = conn.info.password
    return _conninfo.make_conninfo(**params)


class Listener:
    """A connection that LISTENs on some channels and survives losing them.

    ``source`` is a conninfo string (the listener opens and closes its own
    connection) or a psycopg Connection: one in autocommit mode and not in
    a transaction is used as is (LISTEN, then UNLISTEN on close); any other
    is left alone and a new connection is opened with its parameters.
    After a lost connection, a new one is always the listener's own.
    """

    def __init__(self, source: Source, channels: Sequence[str]) -> None:
        self.channels = list(channels)
        self.pending: Deque[psycopg.Notify] = deque()
        self._borrowed: Optional[psycopg.Connection] = None
        self.conn: Optional[psycopg.Connection] = None
        if isinstance(source, psycopg.Connection):
            self.conninfo = _params_of(source)
            if source.autocommit and source.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                self._borrowed = source
        else:
            self.conninfo = source
        self._ever_connected = False

    def _on_notify(self, n: psycopg.Notify) -> None:
        self.pending.append(n)

    def connect(self, deadline: Optional[float]) -> psycopg.Connection:
        """The live connection, LISTENing; reconnects after a loss."""
        if self.conn is not None and not self.conn.closed:
            return self.conn
        delay = 0.05
        while True:
            try:
                if self._borrowed is not None and not self._borrowed.closed:
                    conn = self._borrowed
                else:
                    self._borrowed = None
                    timeout = _remaining(deadline)
                    kw = {"connect_timeout": max(2, min(10, int(timeout)))} if timeout is not None else {}
                    conn = psycopg.connect(_with_keepalives(self.conninfo), autocommit=True, **kw)
                conn.add_notify_handler(self._on_notify)
                for ch in self.channels:
                    conn.execute("LISTEN " + ch)
                self.conn = conn
                self._ever_connected = True
                return conn
            except psycopg.OperationalError as e:
                self._drop()
                if not self._ever_connected:
                    raise from_psycopg(e) from e
                left = _remaining(deadline)
                if left is not None and left <= delay:
                    raise ConnectionLost("could not reconnect before the timeout: %s" % str(e).strip()) from e
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _drop(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            conn.remove_notify_handler(self._on_notify)
        except ValueError:
            pass
        if conn is not self._borrowed:
            conn.close()
        else:
            self._borrowed = None if conn.broken or conn.closed else self._borrowed

    def lost(self) -> None:
        """Called after an OperationalError: the next connect() reconnects."""
        if self.conn is not None and self.conn is self._borrowed:
            self._borrowed = None
        self._drop()

    def query(self, q: str, params: Any, deadline: Optional[float]) -> List[tuple]:
        """Runs q, reconnecting (and so LISTENing again) on a lost connection."""
        while True:
            conn = self.connect(deadline)
            try:
                return conn.execute(q, params).fetchall()
            except psycopg.OperationalError as e:
                if not conn.broken and not conn.closed:
                    raise from_psycopg(e) from e
                self.lost()
            except psycopg.Error as e:
                raise from_psycopg(e) from e

    def sleep(self, deadline: Optional[float]) -> bool:
        """Blocks until a notification is pending (True) or the deadline
        passes (False).  A lost connection returns True too: the caller
        reads again after reconnecting."""
        while not self.pending:
            conn = self.conn
            if conn is None or conn.closed:
                return True
            left = _remaining(deadline)
            if left is not None and left <= 0:
                return False
            try:
                with conn.lock:
                    ready, _, _ = select.select([conn.pgconn.socket], [], [], left)
                    if not ready:
                        continue
                    conn.pgconn.consume_input()
                    while True:
                        n = conn.pgconn.notifies()
                        if n is None:
                            break
                        self.pending.append(psycopg.Notify(n.relname.decode(), n.extra.decode(), n.be_pid))
                if conn.pgconn.status != psycopg.pq.ConnStatus.OK:
                    raise psycopg.OperationalError("the connection is broken")
            except (psycopg.OperationalError, OSError, ValueError):
                self.lost()
                return True
        return True

    def close(self) -> None:
        conn = self.conn
        if conn is not None and conn is self._borrowed and not conn.broken:
            try:
                for ch in self.channels:
                    conn.execute("UNLISTEN " + ch)
            except psycopg.Error:
                pass
        self._drop()

    def __enter__(self) -> "Listener":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _with_keepalives(conninfo: str) -> str:
    """conninfo with TCP keepalives unless it sets them: a connection lost
    without a word (a host gone, a NAT forgetting it) is noticed within
    about a minute (30 s idle, then 3 probes 10 s apart), and reopened."""
    params = _conninfo.conninfo_to_dict(conninfo)
    for k, v in (("keepalives", "1"), ("keepalives_idle", "30"),
                 ("keepalives_interval", "10"), ("keepalives_count", "3")):
        params.setdefault(k, v)
    return _conninfo.make_conninfo(**params)


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else deadline - time.monotonic()


def _payload(n: psycopg.Notify) -> dict:
    try:
        p = json.loads(n.payload)
        return p if isinstance(p, dict) else {}
    except ValueError:
        return {}


def _read_job(listener: Listener, job_id: str, deadline: Optional[float]) -> Job:
    row = listener.query("select boxcar.job_json(%s::uuid)", (job_id,), deadline)
    if row[0][0] is None:
        raise NotFound("job %s not found" % job_id, sqlstate="P0002")
    return row[0][0]


def _timeout(what: str, job_id: str, timeout: Optional[float]) -> Timeout:
    return Timeout("%s: job %s did not finish within %g s" % (what, job_id, timeout or 0), job_id)


def _take(listener: Listener, job_id: str, *, logs: bool = False, progress: bool = False) -> bool:
    """Consumes the pending notifications; True when one concerns job_id
    (its end, or also its progress / its log when asked)."""
    hit = False
    while listener.pending:
        n = listener.pending.popleft()
        if n.channel == LOGS:
            hit = hit or (logs and n.payload == job_id)
        elif n.channel == JOB_UPDATES:
            p = _payload(n)
            if p.get("id") == job_id and (p.get("status") in FINAL_STATUSES or progress):
                hit = True
    return hit


def _follow(source: Source, channels: List[str], job_id: str, timeout: Optional[float],
            what: str, **interest: bool) -> Iterator[Tuple[Listener, Optional[float]]]:
    """The loop wait, stream_logs and progress share: yields the listening
    connection (and the deadline) at once, then after each notification
    about the job (see _take) and after each reconnect; raises Timeout at
    the deadline.  The caller reads after each yield, never polls."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with Listener(source, channels) as listener:
        while True:
            try:
                listener.connect(deadline)
            except ConnectionLost as e:
                raise Timeout("%s: job %s: %s" % (what, job_id, e.message), job_id) from e
            yield listener, deadline
            while not _take(listener, job_id, **interest):
                if listener.conn is None:
                    break  # lost: reconnect, LISTEN, read again
                if not listener.sleep(deadline):
                    raise _timeout(what, job_id, timeout)


def wait(source: Source, job_id: JobId, timeout: Optional[float] = None) -> Job:
    """Waits until the job has a final status (succeeded, failed or
    cancelled: a retry's next attempt is not an end) and returns it as
    ``boxcar.job_json`` does.

    ``source``: a conninfo string or a psycopg Connection (see
    :class:`Listener`).  ``timeout`` in seconds (None: no limit) raises
    :class:`Timeout` naming the job.  An unknown job raises
    :class:`NotFound`.  A lost connection is reopened (see the module's
    text) within the same timeout.
    """
    job_id = str(job_id)
    for listener, deadline in _follow(source, [JOB_UPDATES], job_id, timeout, "wait"):
        job = _read_job(listener, job_id, deadline)
        if job.get("status") in FINAL_STATUSES:
            return job
    raise AssertionError("unreachable: _follow ends only by raising")


@dataclass
class LogChunk:
    """A piece of a job's output as the worker sent it: ``stream`` is
    ``"stdout"`` or ``"stderr"``; ``attempt`` and ``seq`` order the chunks."""

    attempt: int
    seq: int
    stream: str
    data: bytes


def stream_logs(source: Source, job_id: JobId, *, timeout: Optional[float] = None,
                batch: int = 1000) -> Iterator[LogChunk]:
    """Yields the job's live log (``boxcar.job_logs_after``) from its start
    (the current run's: attempt 1 on; a manual retry's earlier runs are kept
    under negative attempts, not shown), as the worker sends it (NOTIFY
    ``boxcar_logs``), and returns once the job has ended and every chunk
    was yielded.  ``timeout`` bounds the whole stream (:class:`Timeout`)."""
    job_id = str(job_id)
    cursor = (0, 0)
    for listener, deadline in _follow(source, [LOGS, JOB_UPDATES], job_id, timeout,
                                      "stream_logs", logs=True):
        # The status first, the chunks after: a final status was
        # committed with (or after) the job's last chunks.
        done = _read_job(listener, job_id, deadline).get("status") in FINAL_STATUSES
        while True:
            rows = listener.query("select attempt, seq, stream, data from "
                                  "boxcar.job_logs_after(%s::uuid, %s, %s, %s)",
                                  (job_id, cursor[0], cursor[1], batch), deadline)
            for attempt, seq, stream, data in rows:
                cursor = (attempt, seq)
                yield LogChunk(attempt, seq, "stdout" if stream == 1 else "stderr", bytes(data))
            if len(rows) < batch:
                break
        if done:
            return


@dataclass
class ProgressReport:
    """One progress report of a running job (``boxcar.job_progress``)."""

    seq: int
    attempt: int
    at: Any
    progress: Any


def progress(source: Source, job_id: JobId, *, after: int = 0,
             timeout: Optional[float] = None) -> Iterator[ProgressReport]:
    """Yields the job's progress reports after ``after`` (a report's seq),
    those already stored and then each new one as it is reported (NOTIFY
    ``boxcar_job_updates``), and returns once the job has ended and every
    report was yielded.  ``timeout`` bounds the whole (:class:`Timeout`)."""
    job_id = str(job_id)
    for listener, deadline in _follow(source, [JOB_UPDATES], job_id, timeout, "progress",
                                      progress=True):
        done = _read_job(listener, job_id, deadline).get("status") in FINAL_STATUSES
        rows = listener.query("select seq, attempt, at, progress from boxcar.job_progress(%s::uuid, %s::bigint)",
                              (job_id, after), deadline)
        for seq, attempt, at, prog in rows:
            after = seq
            yield ProgressReport(seq, attempt, at, prog)
        if done:
            return
