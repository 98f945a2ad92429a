"""Typed shapes of a job spec (docs/job-spec.schema.json) and of what the
SQL API returns.

The spec types mirror the JSON Schema one to one: every object of the
schema is a TypedDict here with the same keys, the same required keys and
the same enums (tests/test_spec_schema.py walks the schema and fails on any
difference, so the two cannot drift apart).  They are only type hints: the
server checks every spec in ``boxcar.enqueue`` and its message is what a
caller sees (:class:`boxcar_client.BadSpec`).
"""

# No "from __future__ import annotations": with string annotations
# Python 3.11 loses Required[] and so the TypedDicts' required keys.
from typing import Any, Dict, List, Literal, Required, TypedDict, Union

Json = Any


class Code(TypedDict, total=False):
    """``code``: a function ``main`` whose return value is ``result.return_value``."""

    language: Required[Literal["python", "node", "bash"]]
    source: Required[str]
    arguments: Dict[str, Json]


class SealedSecret(TypedDict, total=False):
    """A secret sealed with ``boxcar secrets seal`` (``secrets.NAME``)."""

    sealed: Required[str]
    key: str


class Volume(TypedDict, total=False):
    """A read-only volume: a presigned ``url`` (with ``sha256``) or a ``storage``."""

    name: Required[str]
    mount: Required[str]
    url: str
    sha256: str
    storage: str
    version: str


class Artifact(TypedDict, total=False):
    """The read-write ``/workspace``, saved as a new version of ``storage``."""

    storage: Required[str]
    mount: Literal["/workspace"]
    base: str


class Image(TypedDict, total=False):
    """The job's root filesystem: a version of an image storage."""

    storage: Required[str]
    version: str


class Limits(TypedDict, total=False):
    timeout_s: float
    memory_mb: int
    cpus: float
    pids: int
    disk_mb: int
    files: int
    output_bytes: int


class NetworkAllow(TypedDict, total=False):
    """``network: {"allow": ["host:port", "cidr:port", ...]}``."""

    allow: Required[List[str]]


class Webhook(TypedDict, total=False):
    """At least one of ``url`` and ``progress`` (each stored progress report
    also a ``job.progress`` delivery; the URL then may be enqueue's)."""

    url: str
    progress: bool


class Retry(TypedDict, total=False):
    """Job failures that are retried like infrastructure failures."""

    on: Required[List[Literal["NONZERO_EXIT", "TIMEOUT", "OOM"]]]


class SessionFrom(TypedDict, total=False):
    session: Required[str]
    version: str


# ``session``: the live sandbox the job runs in (docs/sessions.md).  The
# functional syntax because one key, "from", is a Python keyword.
SessionRef = TypedDict(
    "SessionRef",
    {"id": Required[str], "idle_timeout_s": float, "from": SessionFrom},
    total=False,
)


class FileOp(TypedDict, total=False):
    """One operation of a session's ``files`` job, carried out in order."""

    op: Required[Literal["write", "read", "list", "stat", "mkdir", "remove", "move"]]
    path: Required[str]
    content: str
    encoding: Literal["utf-8", "base64"]
    parents: bool
    recursive: bool
    to: str


class JobSpec(TypedDict, total=False):
    """A job spec: exactly one of ``command``, ``script``, ``code`` or ``files``.

    See docs/job-spec.md for every field's default and range.
    """

    version: Literal[1]
    command: List[str]
    script: str
    code: Code
    env: Dict[str, str]
    secrets: Dict[str, Union[str, SealedSecret]]
    workdir: str
    startup_script: str
    startup_timeout_s: float
    volumes: List[Volume]
    artifact: Artifact
    image: Image
    limits: Limits
    network: Union[Literal["none", "host"], NetworkAllow]
    webhook: Webhook
    retry: Retry
    session: SessionRef
    stdin: str
    files: List[FileOp]


# Where each object of the schema lives here (the drift test's map).
SCHEMA_TYPES: Dict[str, type] = {
    "": JobSpec,
    "code": Code,
    "secrets{}": SealedSecret,
    "volumes[]": Volume,
    "artifact": Artifact,
    "image": Image,
    "limits": Limits,
    "network": NetworkAllow,
    "webhook": Webhook,
    "retry": Retry,
    "session": SessionRef,
    "session.from": SessionFrom,
    "files[]": FileOp,
}


Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FINAL_STATUSES = frozenset(("succeeded", "failed", "cancelled"))


class JobError(TypedDict, total=False):
    """``job.error``: a code (docs/job-spec.md, "Error codes") and a message."""

    code: Required[str]
    message: Required[str]
    dependency: str


class JobSummary(TypedDict, total=False):
    """A line of ``boxcar.jobs_list``: no spec, no result."""

    id: str
    queue: str
    status: Status
    priority: int
    attempts: int
    max_attempts: int
    manual_retries: int
    run_at: str
    created_at: str
    started_at: str
    finished_at: str
    worker_id: str
    error: JobError


class Job(JobSummary, total=False):
    """A job as ``boxcar.job_json`` returns it: a summary's fields and its
    spec, result and the rest."""

    spec: JobSpec
    result: Dict[str, Json]
    webhook_url: str
    idempotency_key: str
    depends_on: List[str]
    progress: Json
    waiting: str


class NewJob(TypedDict, total=False):
    """One element of :func:`boxcar_client.enqueue_many` (``boxcar.enqueue_many``).

    ``depends_on`` entries are job ids, or the int index of an EARLIER
    element of the same call.  ``run_at`` may be a datetime or ISO-8601 text.
    """

    queue: Required[str]
    spec: Required[JobSpec]
    priority: int
    run_at: Any
    max_attempts: int
    idempotency_key: str
    webhook_url: str
    depends_on: List[Union[str, int]]
