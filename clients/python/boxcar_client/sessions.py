"""Sessions (docs/sessions.md): a live sandbox kept between one agent's
jobs.  Each call of :class:`Session` enqueues one job of the session (in
autocommit: it runs at once) and waits for it, pushed (see :func:`wait`)."""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import psycopg

from .errors import BoxcarError, JobFailed, from_psycopg
from .jobs import enqueue
from .live import Source, _params_of, wait
from .spec import FileOp, Job, JobSpec, Limits


class Session:
    """The session ``id`` of the scope of ``queue`` (``acme`` for
    ``acme/agents``; a queue without ``/`` is its own scope).

    ``source`` is a conninfo string or a psycopg Connection whose
    parameters are used: the session keeps a connection of its own, in
    autocommit, since each job must be committed before it can run (close
    it with :meth:`close` or a ``with`` block).  ``timeout`` bounds each
    call's wait in seconds (:class:`Timeout`); ``idle_timeout_s`` and
    ``limits`` go into every job's spec (the first job's sandbox limits hold
    for the session's life).  A job that fails raises :class:`JobFailed`
    with the job's error message (for :meth:`run`, only with check=True).
    """

    def __init__(self, source: Source, id: str, *, queue: str = "default",
                 timeout: Optional[float] = 600, idle_timeout_s: Optional[float] = None,
                 limits: Optional[Limits] = None) -> None:
        self.id = id
        self.queue = queue
        self.timeout = timeout
        self._ref: Dict[str, Any] = {"id": id}
        if idle_timeout_s is not None:
            self._ref["idle_timeout_s"] = idle_timeout_s
        self._limits = limits
        conninfo = _params_of(source) if isinstance(source, psycopg.Connection) else source
        try:
            self.conn = psycopg.connect(conninfo, autocommit=True)
        except psycopg.Error as e:
            raise from_psycopg(e) from e

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def job(self, fields: JobSpec) -> Job:
        """Runs one job of the session (``fields`` merged into its spec)
        and returns it finished, whatever its status."""
        spec: Dict[str, Any] = {"session": dict(self._ref)}
        if self._limits:
            spec["limits"] = dict(self._limits)
        spec.update(fields)
        job_id = enqueue(self.conn, self.queue, spec)  # type: ignore[arg-type]
        return wait(self.conn, job_id, timeout=self.timeout)

    def run(self, command: Union[Sequence[str], str], *, stdin: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None, workdir: Optional[str] = None,
            check: bool = False) -> Dict[str, Any]:
        """Runs a command (an argv list, or a string run by /bin/sh) in the
        session's sandbox and returns its ``result`` (``stdout``,
        ``stderr``, ``exit_code``, ...).  A non-zero exit is returned, or
        raised as :class:`JobFailed` with check=True; any other failure
        (timeout, OOM, ...) is raised."""
        # A string as sh -c, not as "script": the worker writes a session's
        # script.sh once and refuses to write it again for the next job.
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        fields: Dict[str, Any] = {"command": argv}
        if stdin is not None:
            fields["stdin"] = stdin
        if env is not None:
            fields["env"] = dict(env)
        if workdir is not None:
            fields["workdir"] = workdir
        job = self.job(fields)  # type: ignore[arg-type]
        err = job.get("error") or {}
        if job["status"] != "succeeded" and (check or err.get("code") != "NONZERO_EXIT"):
            raise JobFailed(job)
        return job.get("result") or {}

    def code(self, source: str, *, language: str = "python",
             arguments: Optional[Mapping[str, Any]] = None) -> Any:
        """Runs ``code`` in the session's interpreter of that language (its
        variables persist between calls) and returns ``main``'s value."""
        c: Dict[str, Any] = {"language": language, "source": source}
        if arguments is not None:
            c["arguments"] = dict(arguments)
        job = self.job({"code": c})  # type: ignore[typeddict-item]
        if job["status"] != "succeeded":
            raise JobFailed(job)
        return (job.get("result") or {}).get("return_value")

    def files(self, ops: List[FileOp]) -> List[Dict[str, Any]]:
        """Carries out file operations in order and returns each one's
        outcome (``result.files``).  One that fails raises
        :class:`JobFailed` (FILE_OP_FAILED, naming it); the others still ran."""
        job = self.job({"files": ops})
        if job["status"] != "succeeded":
            raise JobFailed(job)
        return (job.get("result") or {}).get("files") or []

    def read(self, path: str) -> Union[str, bytes]:
        """The file's content: str when it is UTF-8 text, else bytes.  A
        file longer than the job's ``limits.output_bytes`` (default 1 MiB)
        raises BoxcarError rather than returning part of it."""
        r = self.files([{"op": "read", "path": path}])[0]
        if r.get("truncated"):
            raise BoxcarError("read %s: %s bytes, more than limits.output_bytes allows" % (path, r.get("size")))
        if r.get("encoding") == "base64":
            return base64.b64decode(r["content"])
        return r["content"]

    def read_bytes(self, path: str) -> bytes:
        data = self.read(path)
        return data.encode() if isinstance(data, str) else data

    def write(self, path: str, data: Union[str, bytes], *, parents: bool = True) -> None:
        """Writes the file whole (making missing parent directories unless
        parents=False)."""
        op: Dict[str, Any] = {"op": "write", "path": path, "parents": parents}
        if isinstance(data, str):
            op["content"] = data
        else:
            op["content"], op["encoding"] = base64.b64encode(data).decode(), "base64"
        self.files([op])  # type: ignore[list-item]

    def list(self, path: str = ".") -> List[Dict[str, Any]]:
        """A directory's entries (``name``, ``type``, ``size``, ``mode``, ``mtime``)."""
        return self.files([{"op": "list", "path": path}])[0].get("entries") or []

    def stat(self, path: str) -> Dict[str, Any]:
        return self.files([{"op": "stat", "path": path}])[0].get("stat") or {}

    def mkdir(self, path: str, *, parents: bool = True) -> None:
        self.files([{"op": "mkdir", "path": path, "parents": parents}])

    def remove(self, path: str, *, recursive: bool = False) -> None:
        self.files([{"op": "remove", "path": path, "recursive": recursive}])

    def move(self, path: str, to: str) -> None:
        self.files([{"op": "move", "path": path, "to": to}])

    def end(self) -> str:
        """Ends the session (``boxcar.end_session``): ``"ending"`` while its
        worker checkpoints and stops it, ``"ended"`` when it was not live."""
        try:
            return self.conn.execute("select boxcar.end_session(boxcar.queue_scope(%s), %s)",
                                     (self.queue, self.id)).fetchone()[0]
        except psycopg.Error as e:
            raise from_psycopg(e) from e
