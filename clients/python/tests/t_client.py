"""boxcar_client against a real PostgreSQL and a real worker, started by
tests/clients/t_python.sh, which sets DATABASE_URL, BOXCAR (the CLI),
BOXCAR_ROOT, RECEIVER_PORT / RECEIVER_SAVE (a webhook receiver keeping
each request), and SESSIONS=1 when session jobs can run.  Prints TAP."""

import base64
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import psycopg

import boxcar_client as bc
import tap
from tap import eq, ok, scenario

URL = os.environ["DATABASE_URL"]
BOXCAR = os.environ["BOXCAR"]
ROOT = os.environ["BOXCAR_ROOT"]
HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
PY = "/usr/bin/python3"


def connect(**kw):
    return psycopg.connect(URL, **kw)


def sh(script, **spec):
    return dict({"command": ["sh", "-c", script]}, **spec)


def run_job(conn, spec, queue="default", timeout=60, **kw):
    jid = bc.enqueue(conn, queue, spec, **kw)
    conn.commit()
    return bc.wait(URL, jid, timeout=timeout)


def raises(cls, fn):
    """The exception fn raises, if of cls; else None (a failed check says what)."""
    try:
        fn()
    except cls as e:
        return e
    except Exception as e:  # noqa: BLE001 - reported as the wrong class
        return ("wrong class", e)
    return None


def server_error(query, params=()):
    """The primary message psql-side (the server's own words) for a query."""
    with connect(autocommit=True) as c:
        try:
            c.execute(query, params)
        except psycopg.Error as e:
            return e.diag.message_primary
    return None


@scenario
def transactions():
    with connect() as conn:
        jid = bc.enqueue(conn, "default", {"command": ["true"]})
        conn.rollback()
        e = raises(bc.NotFound, lambda: bc.get(conn, jid))
        ok(isinstance(e, bc.NotFound), "a job enqueued in a rolled back transaction never existed", e)
        conn.rollback()
        job = run_job(conn, sh("echo out; echo err >&2"), priority=5, max_attempts=2)
        eq((job["status"], job["result"]["stdout"], job["result"]["stderr"]),
           ("succeeded", "out\n", "err\n"), "enqueue + commit + wait gives the job's result")
        eq((job["priority"], job["max_attempts"]), (5, 2), "enqueue's options reach the job")
        # The spec is typed: a JobSpec literal is the spec as sent.
        spec: bc.JobSpec = {"code": {"language": "python", "source": "def main(n): return n * 2",
                                     "arguments": {"n": 21}}}
        job = run_job(conn, spec)
        eq(job["result"].get("return_value"), 42, "a code job's return value comes back")


@scenario
def idempotency():
    with connect() as conn:
        key = "py-%s" % uuid.uuid4()
        a = bc.enqueue(conn, "default", {"command": ["true"]}, idempotency_key=key)
        b = bc.enqueue(conn, "default", {"command": ["true"]}, idempotency_key=key)
        conn.commit()
        eq(a, b, "the same request under one idempotency key gives the same job")
        e = raises(bc.Conflict, lambda: bc.enqueue(conn, "default", {"command": ["false"]}, idempotency_key=key))
        conn.rollback()
        ok(isinstance(e, bc.Conflict) and e.message == "idempotency_key: already used by job %s with a different spec" % a
           and e.sqlstate == "23505" and e.hint, "a different request under it: Conflict, the server's message and hint", e)


@scenario
def bad_input():
    with connect() as conn:
        e = raises(bc.BadSpec, lambda: bc.enqueue(conn, "default", {"command": []}))
        conn.rollback()
        want = server_error("select boxcar.enqueue('default', '{\"command\": []}')")
        ok(isinstance(e, bc.BadSpec) and e.message == want == "BAD_SPEC: command: must be a non-empty array of strings"
           and str(e) == want and e.sqlstate == "22023" and isinstance(e.__cause__, psycopg.Error),
           "a bad spec: BadSpec with the server's message unchanged", e, want)
        e = raises(bc.BadSpec, lambda: bc.enqueue(conn, "default", {"command": ["x"], "colour": "red"}))  # type: ignore
        conn.rollback()
        ok(isinstance(e, bc.BadSpec) and e.message == "BAD_SPEC: colour: unknown field", "an unknown field names it", e)
        e = raises(bc.BadRequest, lambda: bc.enqueue(conn, "../x", {"command": ["true"]}))
        conn.rollback()
        ok(isinstance(e, bc.BadRequest) and not isinstance(e, bc.BadSpec) and e.message.startswith("queue: must be"),
           "a bad queue name: BadRequest (not BadSpec), the server's message", e)
        e = raises(bc.BadRequest, lambda: bc.enqueue(conn, "default", {"command": ["true"]}, priority=10 ** 6))
        conn.rollback()
        ok(isinstance(e, bc.BadRequest) and e.message == "priority: must be between -32768 and 32767",
           "a bad priority: the server's message", e)
        missing = str(uuid.uuid4())
        for name, fn in (("get", lambda: bc.get(conn, missing)), ("cancel", lambda: bc.cancel(conn, missing)),
                         ("retry", lambda: bc.retry(conn, missing, "tester")),
                         ("wait", lambda: bc.wait(URL, missing, timeout=5))):
            e = raises(bc.NotFound, fn)
            conn.rollback()
            ok(isinstance(e, bc.NotFound) and e.message == "job %s not found" % missing,
               "%s of an unknown job: NotFound naming it" % name, e)
        e = raises(bc.BadRequest, lambda: bc.wait(URL, "job-7", timeout=5))
        ok(isinstance(e, bc.BadRequest) and e.message == 'invalid input syntax for type uuid: "job-7"',
           "wait for an id that is not a UUID: BadRequest, the server's message", e)
        e = raises(bc.BadRequest, lambda: bc.list_jobs(conn, status="done"))
        conn.rollback()
        ok(isinstance(e, bc.BadRequest) and e.message == "status: done is not one of queued, running, succeeded, failed, cancelled",
           "list_jobs with a bad status: the server's message", e)


@scenario
def wait_timeout_and_cancel():
    with connect() as conn:
        tomorrow = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        later = bc.enqueue(conn, "default", {"command": ["true"]}, run_at=tomorrow)
        conn.commit()
        t0 = time.monotonic()
        e = raises(bc.Timeout, lambda: bc.wait(URL, later, timeout=1.5))
        took = time.monotonic() - t0
        ok(isinstance(e, bc.Timeout) and later in str(e) and e.job_id == later and isinstance(e, TimeoutError)
           and 1.4 < took < 3, "wait gives up at its timeout (%.2f s) with an error naming the job" % took, e)
        eq(bc.cancel(conn, later), "cancelled", "cancel of a queued job: cancelled at once")
        conn.commit()
        job = bc.wait(URL, later, timeout=5)
        eq((job["status"], job["error"]["code"]), ("cancelled", "CANCELLED"), "wait returns the cancelled job")
        eq(bc.cancel(conn, later), "cancelled", "cancel of a finished job returns its status")
        conn.commit()

        # A running job: its worker kills it; wait hears of the end.
        jid = bc.enqueue(conn, "default", sh("echo started; sleep 60"))
        conn.commit()
        first = next(iter(bc.stream_logs(URL, jid, timeout=20)))
        eq(first.data, b"started\n", "the job is running (its first log line streamed)")
        eq(bc.cancel(conn, jid), "running", "cancel of a running job: running until its worker kills it")
        conn.commit()
        t0 = time.monotonic()
        job = bc.wait(URL, jid, timeout=20)
        took = time.monotonic() - t0
        ok(job["status"] == "cancelled" and took < 5, "a running job ends cancelled, wait returns in %.2f s" % took, job["status"])


@scenario
def retry():
    with connect() as conn:
        job = run_job(conn, sh("echo attempt; exit 3"))
        eq((job["status"], job["error"]["code"]), ("failed", "NONZERO_EXIT"), "a failing job: wait returns it failed")
        again = bc.retry(conn, job["id"], "py-tester")
        conn.commit()
        eq((again["status"], again["manual_retries"]), ("queued", 1), "retry queues it again and returns the job")
        job = bc.wait(URL, job["id"], timeout=30)
        eq((job["status"], job["manual_retries"], job["attempts"]), ("failed", 1, 1), "and it runs again")
        ok_job = run_job(conn, {"command": ["true"]})
        e = raises(bc.InvalidState, lambda: bc.retry(conn, ok_job["id"], "py-tester"))
        conn.rollback()
        ok(isinstance(e, bc.InvalidState) and e.message == "job %s is succeeded: only a failed or cancelled job can be retried" % ok_job["id"],
           "retry of a succeeded job: InvalidState with the server's message", e)
        e = raises(bc.BadRequest, lambda: bc.retry(conn, job["id"], " "))
        conn.rollback()
        ok(isinstance(e, bc.BadRequest) and e.message.startswith("requested_by:"), "retry without a name: refused", e)


@scenario
def listing():
    with connect() as conn:
        q = "pylist-%d" % os.getpid()
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        ids = [bc.enqueue(conn, q, {"command": ["true"]}, run_at=later) for _ in range(7)]
        conn.commit()
        page = bc.list_jobs(conn, queue=q, limit=3)
        eq([j["id"] for j in page.jobs], ids[::-1][:3], "list_jobs: newest first, limit rows")
        ok(page.next is not None, "a full page has a cursor for the next")
        eq([j["id"] for j in bc.iter_jobs(conn, queue=q, limit=3)], ids[::-1], "iter_jobs walks every page once")
        eq(bc.list_jobs(conn, queue=q, status="succeeded").jobs, [], "a status filter")
        for i in ids:
            bc.cancel(conn, i)
        conn.commit()
        eq(len(bc.list_jobs(conn, queue=q, status="cancelled").jobs), 7, "cancelled ones listed as such")


@scenario
def logs_while_running():
    with connect() as conn:
        jid = bc.enqueue(conn, "default", sh("echo one; sleep 1.5; echo two >&2; sleep 0.5; echo three"))
        conn.commit()
        got = []
        for c in bc.stream_logs(URL, jid, timeout=30):
            got.append((time.time(), c))
        job = bc.get(conn, jid)
        conn.rollback()
        text = [(c.stream, c.data) for _, c in got]
        joined_out = b"".join(d for s, d in text if s == "stdout")
        eq((joined_out, b"".join(d for s, d in text if s == "stderr")), (b"one\nthree\n", b"two\n"),
           "stream_logs yields stdout and stderr, all of it, then ends")
        fin = datetime.datetime.fromisoformat(job["finished_at"]).timestamp()
        ok(got and got[0][0] < fin - 1.0, "the first line arrived while the job ran (%.2f s before its end)"
           % (fin - got[0][0] if got else 0))
        ok([c.seq for _, c in got] == sorted(c.seq for _, c in got), "chunks in order")


@scenario
def no_polling():
    """While waiting, the listener's backend runs no statement: it sleeps
    on the socket until the end is pushed."""
    with connect() as conn:
        jid = bc.enqueue(conn, "default", {"command": ["sleep", "2"]})
        conn.commit()
    app = "pywait-%d" % os.getpid()
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("job", bc.wait(URL + "?application_name=" + app, jid, timeout=30)))
    t.start()
    time.sleep(0.5)
    with connect(autocommit=True) as a:
        q = "select pid, query_start, state from pg_stat_activity where application_name = %s"
        before = a.execute(q, (app,)).fetchall()
        time.sleep(1.0)
        after = a.execute(q, (app,)).fetchall()
    t.join(30)
    ok(len(before) == 1 and before == after and before[0][2] == "idle",
       "the waiting connection ran no statement for 1 s (idle, same query_start)", before, after)
    eq(res.get("job", {}).get("status"), "succeeded", "and the wait returned the finished job")


@scenario
def wait_across_dropped_connection():
    with connect() as conn:
        jid = bc.enqueue(conn, "default", {"command": ["sleep", "2"]})
        conn.commit()
    app = "pydrop-%d" % os.getpid()
    res = {}

    def waiter():
        try:
            res["job"] = bc.wait(URL + "?application_name=" + app, jid, timeout=30)
        except Exception as e:  # noqa: BLE001
            res["error"] = e
    t = threading.Thread(target=waiter)
    t.start()
    with connect(autocommit=True) as a:
        pids = []
        for _ in range(50):
            pids = [r[0] for r in a.execute("select pid from pg_stat_activity where application_name = %s", (app,))]
            if pids:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        killed = a.execute("select pg_terminate_backend(%s)", (pids[0],)).fetchone()[0] if pids else False
        st = a.execute("select status from boxcar.jobs where id = %s", (jid,)).fetchone()[0]
        ok(killed and st in ("queued", "running"), "the listener's backend was terminated (pg_terminate_backend) "
           "while the job was %s" % st)
        new = []
        for _ in range(50):
            new = [r[0] for r in a.execute("select pid from pg_stat_activity where application_name = %s "
                                           "and pid <> %s", (app, pids[0] if pids else 0))]
            if new:
                break
            time.sleep(0.1)
        listening = a.execute("select count(*) from pg_stat_activity where pid = any(%s) and query ilike 'listen%%' "
                              "or pid = any(%s) and query ilike '%%job_json%%'", (new, new)).fetchone()[0]
        ok(new and listening, "wait reconnected: a new backend LISTENs and reads the job", pids, new)
    t.join(30)
    eq(res.get("job", {}).get("status"), "succeeded", "wait still returned the finished job", res.get("error"))


@scenario
def wait_on_callers_connection():
    with connect(autocommit=True) as conn:
        job = bc.wait(conn, bc.enqueue(conn, "default", {"command": ["echo", "x"]}), timeout=30)
        eq(job["result"]["stdout"], "x\n", "wait on an autocommit connection uses it")
        n = conn.execute("select count(*) from pg_listening_channels()").fetchone()[0]
        eq(n, 0, "and stops listening on it afterwards")
    with connect() as conn:
        jid = bc.enqueue(conn, "default", {"command": ["true"]})
        conn.commit()
        conn.execute("select 1")  # a transaction of the caller's, open
        job = bc.wait(conn, jid, timeout=30)
        eq((job["status"], conn.info.transaction_status), ("succeeded", psycopg.pq.TransactionStatus.INTRANS),
           "a connection in a transaction is left alone (a new one waits)")


@scenario
def webhooks():
    port, save = os.environ.get("RECEIVER_PORT"), os.environ.get("RECEIVER_SAVE")
    with connect() as conn:
        job = run_job(conn, {"command": ["true"]}, webhook_url="http://127.0.0.1:%s/hook" % port)
        for _ in range(300):
            st = conn.execute("select status from boxcar.webhook_deliveries where job_id = %s", (job["id"],)).fetchone()
            conn.rollback()
            if st and st[0] == "delivered":
                break
            time.sleep(0.1)
    saved = None
    for f in sorted(os.listdir(save)):
        if f.endswith(".body") and job["id"] in open(os.path.join(save, f), errors="replace").read():
            saved = os.path.join(save, f[:-5])
    if not ok(saved, "the worker delivered the job's webhook"):
        return
    body = open(saved + ".body", "rb").read()
    headers = {}
    for line in open(saved + ".headers"):
        k, _, v = line.rstrip("\r\n").partition(":")
        headers[k.strip()] = v.strip()
    secret = subprocess.run([BOXCAR, "webhooks", "secret", "--scope", "default"], capture_output=True,
                            text=True, check=True).stdout
    secret = next(w for w in secret.split() if w.startswith("whsec_"))
    payload = bc.verify_webhook(secret, headers, body)
    eq((payload["type"], payload["data"]["job_id"]), ("job.succeeded", job["id"]),
       "verify_webhook accepts boxcar's delivery with the scope's secret and returns its body")
    ok(bc.verify_webhook(secret, {k.upper(): v for k, v in headers.items()}, body.decode()),
       "headers in any case, body as str")
    wrong = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    ok(bc.verify_webhook("%s %s" % (wrong, secret), headers, body), "either of two secrets (a rotation)")
    for desc, args, want in (
            ("a tampered body", (secret, headers, body.replace(b"succeeded", b"failed")), "no matching signature"),
            ("a wrong secret", (wrong, headers, body), "no matching signature"),
            ("a changed webhook-id", (secret, dict(headers, **{"webhook-id": "msg_x"}), body), "no matching signature"),
            ("no signature", (secret, {k: v for k, v in headers.items() if k.lower() != "webhook-signature"}, body),
             "webhook-signature missing")):
        e = raises(bc.WebhookVerificationError, lambda: bc.verify_webhook(*args))
        ok(isinstance(e, bc.WebhookVerificationError) and str(e).startswith(want), "%s is rejected (%s)" % (desc, e))
    ts = int(headers["webhook-timestamp"])
    e = raises(bc.WebhookVerificationError, lambda: bc.verify_webhook(secret, headers, body, now=ts + 301))
    ok(isinstance(e, bc.WebhookVerificationError) and str(e) == "stale timestamp: 301 s before now, tolerance 300 s",
       "an old timestamp is rejected (%s)" % e)
    ok(bc.verify_webhook(secret, headers, body, now=ts + 299), "within the tolerance it is accepted")
    ok(bc.verify_webhook(secret, headers, body, now=ts + 10 ** 6, tolerance=None), "tolerance=None skips the check")

    # The same verdicts as the project's own verifier (boxcar webhooks verify).
    tampered = saved + ".tampered"
    with open(tampered, "wb") as f:
        f.write(body.replace(b"succeeded", b"failed"))

    def cli(sec, body_file):
        return subprocess.run([BOXCAR, "webhooks", "verify", "--secret", sec, "--headers", saved + ".headers",
                               "--body", body_file, "--tolerance", "none"], capture_output=True, text=True).returncode
    eq((cli(secret, saved + ".body"), cli(secret, tampered), cli(wrong, saved + ".body")), (0, 1, 1),
       "boxcar webhooks verify agrees: valid, tampered, wrong secret")

    # And the official standardwebhooks library, through clients/node when it has it.
    node_dir = os.path.join(ROOT, "clients", "node")
    lib = os.path.join(node_dir, "node_modules", "standardwebhooks")
    if not (shutil.which("node") and os.path.isdir(lib)):
        tap.skip("the Node standardwebhooks library agrees", "clients/node/node_modules/standardwebhooks is not installed")
        return
    js = ("const {Webhook} = require(%s); const [s, h, b] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
          "const r = []; for (const [sec, body] of [[s, b], [s, b.replace('succeeded', 'failed')], [%s, b]]) {"
          "try { new Webhook(sec).verify(body, h); r.push('valid'); } catch (e) { r.push('invalid'); } }"
          "console.log(r.join(' '));") % (json.dumps(lib), json.dumps(wrong))
    out = subprocess.run(["node", "-e", js], input=json.dumps([secret, headers, body.decode()]),
                         capture_output=True, text=True)
    py = []
    for sec, b in ((secret, body), (secret, body.replace(b"succeeded", b"failed")), (wrong, body)):
        try:
            bc.verify_webhook(sec, headers, b)
            py.append("valid")
        except bc.WebhookVerificationError:
            py.append("invalid")
    eq(out.stdout.strip(), " ".join(py), "the Node standardwebhooks library gives the same verdicts (%s)" % out.stderr.strip())


@scenario
def sessions():
    if os.environ.get("SESSIONS") != "1":
        tap.skip("sessions", "session jobs need the namespace sandbox as root, and S3")
        return
    sid = "py-%d" % os.getpid()
    with bc.Session(URL, sid, timeout=120, limits={"disk_mb": 128}) as s:
        s.write("notes/todo.txt", "buy milk\n")
        eq(s.read("notes/todo.txt"), "buy milk\n", "Session.write then .read: text back as str")
        s.write("bin.dat", b"\x00\x01\xff")
        eq(s.read("bin.dat"), b"\x00\x01\xff", "bytes back as bytes")
        eq([(e["name"], e["type"]) for e in s.list("notes")], [("todo.txt", "file")], "Session.list names the entries")
        eq(s.stat("bin.dat").get("size"), 3, "Session.stat gives the size")
        r = s.run(["cat", "notes/todo.txt"])
        eq((r["stdout"], r["exit_code"]), ("buy milk\n", 0), "Session.run sees the files (one sandbox)")
        eq(s.run("tr a-z A-Z", stdin="piped\n")["stdout"], "PIPED\n", "a string runs with sh, stdin given")
        eq(s.run("exit 3")["exit_code"], 3, "a non-zero exit is returned")
        e = raises(bc.JobFailed, lambda: s.run("exit 3", check=True))
        ok(isinstance(e, bc.JobFailed) and e.code == "NONZERO_EXIT", "or raised with check=True", e)
        s.mkdir("d1/d2")
        s.move("notes/todo.txt", "d1/d2/t.txt")
        s.remove("notes", recursive=True)
        eq(s.run("ls -R d1 | tr '\\n' ' '; test -e notes || echo gone")["stdout"], "d1: d2  d1/d2: t.txt gone\n",
           "mkdir, move and remove")
        s.code("x = 41")
        eq(s.code("def main():\n    return x + 1"), 42, "Session.code keeps the interpreter's variables")
        e = raises(bc.JobFailed, lambda: s.read("missing"))
        ok(isinstance(e, bc.JobFailed) and e.code == "FILE_OP_FAILED"
           and str(e).startswith("files[0] (read missing): No such file"), "a failing file op: JobFailed, the worker's message", e)
        ok(s.end() in ("ending", "ended"), "Session.end ends it")


@scenario
def batches_and_dependencies():
    with connect() as conn:
        ids = bc.enqueue_many(conn, [
            {"queue": "default", "spec": sh("sleep 1; echo a")},
            {"queue": "default/other", "spec": sh("echo b"), "depends_on": [0], "priority": 2},
            {"queue": "default", "spec": sh("echo c"), "depends_on": [0, 1]},
        ])
        conn.commit()
        eq(len(ids), 3, "enqueue_many returns an id per job, in order")
        jobs = [bc.wait(URL, i, timeout=60) for i in ids]
        eq([j["status"] for j in jobs], ["succeeded"] * 3, "the three ran")
        eq((jobs[1]["queue"], jobs[1]["priority"], jobs[1].get("depends_on")), ("default/other", 2, [ids[0]]),
           "an element's options and its depends_on (an index, read back as the id)")
        ok(jobs[1]["started_at"] >= jobs[0]["finished_at"] and jobs[2]["started_at"] >= jobs[1]["finished_at"],
           "each dependent started after its dependencies ended")
        e = raises(bc.BadSpec, lambda: bc.enqueue_many(conn, [{"queue": "default", "spec": {"command": ["true"]}},
                                                              {"queue": "default", "spec": {"command": []}}]))
        conn.rollback()
        ok(isinstance(e, bc.BadSpec) and e.message == "jobs[1]: BAD_SPEC: command: must be a non-empty array of strings",
           "one bad element refuses the call, naming its index (BadSpec)", e)
        # depends_on on enqueue, and a failing dependency.
        a = bc.enqueue(conn, "default", sh("exit 1"))
        b = bc.enqueue(conn, "default", {"command": ["true"]}, depends_on=[a])
        conn.commit()
        jb = bc.wait(URL, b, timeout=60)
        eq((jb["status"], jb["error"]["code"], jb["error"].get("dependency")), ("cancelled", "DEPENDENCY_FAILED", a),
           "enqueue(depends_on=...) on a job that fails: cancelled, DEPENDENCY_FAILED naming it")
        e = raises(bc.BadRequest, lambda: bc.enqueue(conn, "default", {"command": ["true"]},
                                                    depends_on=["00000000-0000-0000-0000-000000000000"]))
        conn.rollback()
        ok(isinstance(e, bc.BadRequest) and "00000000-0000-0000-0000-000000000000" in e.message,
           "an unknown dependency is refused, naming it", e)


@scenario
def progress_reports():
    with connect() as conn:
        jid = bc.enqueue(conn, "default", sh(
            'for i in 1 2 3; do echo "{\\"step\\": $i}" >> "$BOXCAR_PROGRESS"; sleep 0.7; done'))
        conn.commit()
        got = [(time.time(), r) for r in bc.progress(URL, jid, timeout=60)]
        job = bc.get(conn, jid)
        conn.rollback()
    eq([r.progress for _, r in got][-1:], [{"step": 3}], "progress yields the reports, the last one {step: 3}")
    fin = datetime.datetime.fromisoformat(job["finished_at"]).timestamp()
    ok(got and got[0][0] < fin - 0.5, "the first report arrived while the job ran")
    ok(all(a[1].seq < b[1].seq for a, b in zip(got, got[1:])), "reports in order")
    eq(job.get("progress"), {"step": 3}, "get() shows the latest report")


@scenario
def readme_example():
    src = open(os.path.join(PKG, "README.md")).read()
    example = re.search(r"```python\n(.*?)```", src, re.S).group(1)
    ok(len(example.strip().splitlines()) <= 10, "the README's example is ten lines at most")
    out = subprocess.run([PY, "-c", example], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=PKG), cwd=tempfile.gettempdir())
    eq((out.returncode, out.stdout), (0, "succeeded hello\nstdout b'hello\\n'\n"),
       "the README's example runs as written (%s)" % out.stderr.strip()[-300:])


@scenario
def readme_session_example():
    if os.environ.get("SESSIONS") != "1":
        tap.skip("the README's session example runs", "session jobs need the namespace sandbox as root, and S3")
        return
    src = open(os.path.join(PKG, "README.md")).read()
    example = re.findall(r"```python\n(.*?)```", src, re.S)[1]
    prelude = "import os, boxcar_client as boxcar\nurl = os.environ['DATABASE_URL']\n"
    out = subprocess.run([PY, "-c", prelude + example], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=PKG), cwd=tempfile.gettempdir())
    eq((out.returncode, out.stdout), (0, "buy milk\n\n1 notes/todo.txt\n\npiped\n\n['todo.txt']\n"),
       "the README's session example runs (with its url and import)", out.stderr.strip()[-500:])


@scenario
def packs_offline():
    tmp = tempfile.mkdtemp(prefix="boxcar-py-pack-")
    try:
        src = os.path.join(tmp, "src")
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "dist", "*.egg-info"))
        b = subprocess.run([PY, "-m", "build", "--no-isolation", "--outdir", os.path.join(tmp, "dist"), src],
                           capture_output=True, text=True, timeout=300)
        files = sorted(os.listdir(os.path.join(tmp, "dist"))) if b.returncode == 0 else []
        ok(b.returncode == 0 and any(f.endswith(".whl") for f in files) and any(f.endswith(".tar.gz") for f in files),
           "python3 -m build --no-isolation makes a wheel and an sdist offline (%s)" % " ".join(files),
           b.stderr[-2000:])
        whl = next(os.path.join(tmp, "dist", f) for f in files if f.endswith(".whl"))
        venv = os.path.join(tmp, "venv")
        subprocess.run([PY, "-m", "venv", "--system-site-packages", venv], check=True, timeout=120)
        pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-deps", whl],
                             capture_output=True, text=True, timeout=300)
        ok(pip.returncode == 0, "pip install --no-index --no-deps of the wheel into an empty venv", pip.stderr[-2000:])
        app = os.path.join(tmp, "app")
        os.mkdir(app)
        with open(os.path.join(app, "main.py"), "w") as f:
            f.write("import os, psycopg, boxcar_client\n"
                    "print(boxcar_client.__file__)\n"
                    "with psycopg.connect(os.environ['DATABASE_URL'], autocommit=True) as c:\n"
                    "    job = boxcar_client.wait(c, boxcar_client.enqueue(c, 'default', {'command': ['echo', 'packed']}), timeout=60)\n"
                    "print(job['result']['stdout'].strip())\n")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        r = subprocess.run([os.path.join(venv, "bin", "python"), "main.py"], cwd=app, env=env,
                           capture_output=True, text=True, timeout=120)
        lines = r.stdout.splitlines()
        ok(r.returncode == 0 and len(lines) == 2 and lines[0].startswith(venv) and lines[1] == "packed",
           "the installed package (from the venv, not the source tree) enqueues and waits for a job",
           r.stdout, r.stderr[-2000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    tap.done()
