#!/usr/bin/env python3
"""Drives headless Chromium through boxcar ui with the DevTools protocol
(a small websocket client, standard library only): logs in through the
form, loads every page, checks what it shows against the database, follows
a running job's log, cancels it and retries a failed job with real mouse
clicks, checks that hostile job text stays text, and saves a screenshot of
each page.  Prints "PASS desc" / "FAIL desc" lines for t_ui.sh.

usage: ui_browser.py BASE_URL TOKEN SHOTS_DIR  (jobs' ids in the environment)
"""
import base64
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


class WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: text frames,
    client-masked, fragments and 64-bit lengths (screenshots)."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buf = bytearray()
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: %r" % head[:100])
        self.buf = bytearray(rest)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("devtools connection closed")
        self.buf += chunk

    def send(self, text):
        data = text.encode()
        n = len(data)
        head = bytearray([0x81])
        if n < 126:
            head.append(0x80 | n)
        elif n < 65536:
            head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
        self.sock.sendall(bytes(head) + mask + masked)

    def _frame(self):
        """One whole frame from the buffer, or None (nothing consumed)."""
        if len(self.buf) < 2:
            return None
        b0, b1 = self.buf[0], self.buf[1]
        n, off = b1 & 0x7F, 2
        if n == 126:
            if len(self.buf) < 4:
                return None
            n, off = int.from_bytes(self.buf[2:4], "big"), 4
        elif n == 127:
            if len(self.buf) < 10:
                return None
            n, off = int.from_bytes(self.buf[2:10], "big"), 10
        if len(self.buf) < off + n:
            return None
        payload = bytes(self.buf[off:off + n])
        del self.buf[:off + n]
        return b0, payload

    def recv(self, timeout=None):
        """The next text message; socket.timeout when none came in time
        (a partial frame stays in the buffer)."""
        msg = b""
        deadline = None if timeout is None else time.time() + timeout
        while True:
            f = self._frame()
            if f is None:
                left = None if deadline is None else deadline - time.time()
                if left is not None and left <= 0:
                    raise socket.timeout()
                self.sock.settimeout(left if left is not None else 60)
                self._fill()
                continue
            b0, payload = f
            op = b0 & 0x0F
            if op == 8:
                raise EOFError("devtools closed the connection")
            if op in (9, 10):
                continue
            msg += payload
            if b0 & 0x80:
                return msg.decode()


class Browser:
    def __init__(self, shots):
        self.shots = shots
        self.profile = tempfile.mkdtemp(prefix="boxcar-ui-chromium-")
        self.proc = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-dev-shm-usage", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and port is None:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("chromium exited at start")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        if port is None:
            raise RuntimeError("chromium did not open its DevTools port")
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv(timeout=60))
            if m.get("id") == my:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    del self.events[i]
                    return e
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(name)
            try:
                self.events.append(json.loads(self.ws.recv(timeout=left)))
            except socket.timeout:
                pass

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def goto(self, url):
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")

    def click(self, selector, navigates=True):
        """A real mouse click (pressed, released) at the element's centre."""
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                        " if (!e) return null; e.scrollIntoView({block: 'center'});"
                        " const r = e.getBoundingClientRect();"
                        " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if box is None:
            raise RuntimeError(f"no element {selector}")
        self.events.clear()
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                      clickCount=1)
        if navigates:
            self.wait_event("Page.loadEventFired")

    def wait_until(self, expr, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.eval(expr):
                    return True
            except RuntimeError:
                pass    # the page is being replaced (the log's reload)
            time.sleep(0.2)
        return False

    def shot(self, name):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        with open(os.path.join(self.shots, name + ".png"), "wb") as f:
            f.write(base64.b64decode(data))


def sql(query):
    return subprocess.run(["psql", "-X", "-qtA", "-v", "ON_ERROR_STOP=1", os.environ["DATABASE_URL"],
                           "-c", query], check=True, capture_output=True, text=True).stdout.strip()


failures = 0


def check(desc, cond, detail=""):
    global failures
    print(("PASS " if cond else "FAIL ") + desc, flush=True)
    if not cond:
        failures += 1
        if detail:
            print("# " + str(detail)[:500], flush=True)


def texts(b, selector):
    return b.eval(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)")


def login(b, base, token):
    b.goto(base + "/jobs")
    check("without a session a page sends the browser to the login form",
          b.eval("location.pathname") == "/login", b.eval("location.href"))
    b.eval("document.getElementById('token').value = 'wrong-token-0123456789'")
    b.click("#login")
    check("a wrong token is refused on the form",
          b.eval("document.querySelector('p.error') && document.querySelector('p.error').textContent") == "wrong token")
    b.eval(f"document.getElementById('token').value = {json.dumps(token)}")
    b.shot("login")
    b.click("#login")
    check("the token opens a session and lands on the queues page",
          b.eval("document.querySelector('h1').textContent") == "Queues")
    cookies = b.call("Network.getCookies", urls=[base + "/"])["cookies"]
    c = next((c for c in cookies if c["name"] == "boxcar_session"), None)
    check("the session cookie is HttpOnly and SameSite=Strict",
          c is not None and c["httpOnly"] and c.get("sameSite") == "Strict", cookies)


def overview_pages(b, base):
    shown = b.eval("[...document.querySelectorAll('#queues tbody tr')].map(r => [r.dataset.queue,"
                   " r.querySelector('.queued').textContent, r.querySelector('.running').textContent,"
                   " r.querySelector('.failed').textContent].join(':')).join(' ')")
    want = sql("select string_agg(queue || ':' || queued || ':' || running || ':' || failed_last_hour,"
               " ' ' order by queue) from boxcar.queue_overview()")
    check("the queues page shows queue_overview's queues, depth, running and failures", shown == want,
          f"{shown!r} != {want!r}")
    b.shot("queues")

    b.goto(base + "/workers")
    shown = b.eval("[...document.querySelectorAll('#workers tbody tr')].map(r => r.dataset.id + ':' +"
                   " r.querySelector('.state').textContent).join(' ')")
    want = sql("select string_agg(id || ':' || state, ' ' order by id) from boxcar.worker_status")
    check("the workers page shows worker_status", shown == want, f"{shown!r} != {want!r}")
    check("a running worker has a drain button",
          b.eval("!!document.querySelector('#workers button[data-action=drain]')"))
    b.shot("workers")

    b.goto(base + "/webhooks")
    shown = b.eval("[...document.querySelectorAll('#webhooks tbody tr')].map(r => r.dataset.id).join(' ')")
    want = sql("select string_agg(d->>'id', ' ') from boxcar.webhook_list(false, 200) d")
    check("the webhooks page lists the deliveries of webhook_list", shown == want and want != "",
          f"{shown!r} != {want!r}")
    check("an undelivered delivery has a redrive button",
          b.eval("!!document.querySelector('#webhooks button[data-action=redrive]')"))
    b.shot("webhooks")

    b.goto(base + "/schedules")
    shown = b.eval("[...document.querySelectorAll('#schedules tbody tr')].map(r => [r.dataset.id,"
                   " r.querySelector('.cron').textContent, r.querySelector('.tz').textContent,"
                   " r.querySelector('.state').textContent].join(':')).join(' ')")
    want = sql("select string_agg(concat_ws(':', s->>'name', s->>'cron', s->>'time_zone',"
               " case when (s->>'enabled')::boolean then 'enabled' else 'paused' end), ' ')"
               " from boxcar.schedule_ls() s")
    check("the schedules page shows schedule_ls's schedules, cron, zone and state",
          shown == want and want.count(":") == 6, f"{shown!r} != {want!r}")
    b.shot("schedules")


def us(ts):
    """A timestamp's text (ISO 8601, any offset) as epoch microseconds."""
    d = datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return round(d.timestamp() * 1e6)


ROW_IDS = "[...document.querySelectorAll('#jobs tbody tr')].map(r => r.dataset.id)"


def job_list(b, base):
    b.goto(base + "/jobs")
    ids = b.eval(ROW_IDS)
    want = sql("select string_agg(job->>'id', ' ') from boxcar.jobs_list(lim => 50)").split()
    check("the jobs page lists jobs newest first, as jobs_list", ids == want, f"{ids} != {want}")
    shown = b.eval("[...document.querySelectorAll('#jobs tbody td.id a')].map(a => a.textContent + ' ' +"
                   " a.title + ' ' + a.getAttribute('href'))")
    check("each id is shown short (8 hex digits), whole in its title and link",
          shown == [f"{i[:8]} {i} /jobs/{i}" for i in want], shown[:2])
    created = b.eval("[...document.querySelectorAll('#jobs tbody td.created time')].map(t => [t.title, t.textContent])")
    real = sql("select string_agg(extract(epoch from created_at)::text, ' ' order by created_at desc, id desc)"
               " from (select * from boxcar.jobs order by created_at desc, id desc limit 50) j").split()
    check("creation times are relative ('3 min ago'), the exact timestamp in the title",
          len(created) == len(want) and all(re.fullmatch(r"just now|\d+ (s|min|h|d) ago", t) for _, t in created)
          and [us(t) for t, _ in created] == [round(float(e) * 1e6) for e in real], (created[:2], real[:2]))
    b.eval("document.querySelector('#filters select').value = 'failed'")
    b.click("#filters button")
    ids = b.eval(ROW_IDS)
    want = sql("select string_agg(job->>'id', ' ') from boxcar.jobs_list(status => 'failed')").split()
    check("filtering by status through the form lists the failed jobs", ids == want and want, f"{ids} != {want}")
    b.shot("jobs-failed")


def job_pages(b, base, ids):
    b.goto(base + "/jobs/" + ids["OK_ID"])
    check("a job page shows the job's status", b.eval("document.getElementById('status').textContent") ==
          sql(f"select status from boxcar.jobs where id = '{ids['OK_ID']}'"))
    n = sql(f"select count(*) from boxcar.job_events_json('{ids['OK_ID']}')")
    check("and its events", str(b.eval("document.querySelectorAll('#events tbody tr').length")) == n)
    check("and its spec", "hello from the job" in b.eval("document.querySelector('#spec pre').textContent"))
    b.wait_until("document.getElementById('log').dataset.state === 'done'")
    check("and its log", "hello from the job" in b.eval("document.getElementById('log').textContent"),
          b.eval("document.getElementById('log').textContent"))
    b.shot("job")

    b.goto(base + "/jobs/" + ids["XSS_ID"])
    b.wait_until("document.getElementById('log').dataset.state === 'done'")
    check("a hostile spec is shown as text",
          "<img src=x onerror=" in b.eval("document.querySelector('#spec pre').textContent"))
    check("a hostile log is shown as text",
          "<img src=x onerror=" in b.eval("document.getElementById('log').textContent"),
          b.eval("document.getElementById('log').textContent"))
    check("and neither became markup: no img, no script ran",
          b.eval("document.querySelectorAll('main img, main script').length === 0"
                 " && document.title === 'boxcar: Job' && window.pwned === undefined"))
    b.shot("job-hostile")


def cancel_and_retry(b, base, ids):
    long_id = ids["LONG_ID"]
    b.goto(base + "/jobs/" + long_id)
    ok = b.wait_until("/tick 2\\b/.test(document.getElementById('log').textContent)", 60)
    first = b.eval("document.getElementById('log').textContent")
    grew = ok and b.wait_until(f"document.getElementById('log').textContent.length > {len(first)}", 15)
    check("the log follows the running job", ok and grew, first)
    b.shot("job-running")
    b.click("button[data-action=cancel]")
    check("cancel through the page asks the database to cancel",
          sql(f"select status = 'cancelled' or cancel_requested_at is not null from boxcar.jobs where id = '{long_id}'") == "t")
    done = False
    for _ in range(100):
        if sql(f"select status from boxcar.jobs where id = '{long_id}'") == "cancelled":
            done = True
            break
        time.sleep(0.2)
    check("and the worker stops the job", done)
    # The page the cancel led to follows the job and reloads once it ends.
    check("the page, left open, shows it cancelled",
          b.wait_until("document.getElementById('status').textContent === 'cancelled'"
                       " && document.getElementById('log').dataset.state === 'done'"))
    b.shot("job-cancelled")

    fail_id = ids["FAIL_ID"]
    b.goto(base + "/jobs/" + fail_id)
    check("a failed job has a retry button", b.eval("!!document.querySelector('button[data-action=retry]')"))
    b.click("button[data-action=retry]")
    by = sql(f"select details->>'requested_by' from boxcar.job_events where job_id = '{fail_id}'"
             " and kind = 'retry_requested'")
    check("retry through the page queues the job again, its event naming the operator", by == "ui:admin", by)
    check("with a fresh attempt budget",
          sql(f"select manual_retries from boxcar.jobs where id = '{fail_id}'") == "1")
    check("the page follows the retried job to its end (it fails again)",
          b.wait_until("document.getElementById('status').textContent === 'failed'"
                       " && document.getElementById('log').dataset.state === 'done'"
                       " && /failing/.test(document.getElementById('log').textContent)", 60))
    b.shot("job-retried")


def queue_charts(b, base, queue):
    """The queue's charts against boxcar.jobs: every bucket's succeeded and
    failed counts, its run-time median, and the bars' hover titles."""
    before = time.time() * 1e6
    b.goto(base + "/queue?name=" + urllib.parse.quote(queue, safe=""))
    after = time.time() * 1e6
    check("the queue page names the queue", b.eval("document.getElementById('queue-name').textContent") == queue)
    for span in ("hour", "day"):
        bk = b.eval(f"[...document.querySelectorAll('#chart-{span}-count g.bucket')].map(g => [g.dataset.start,"
                    " g.dataset.end, +g.dataset.succeeded, +g.dataset.failed,"
                    " [...g.querySelectorAll('title')].map(t => t.textContent)])")
        check(f"the last {span}'s chart has {12 if span == 'hour' else 24} buckets, the last one holding now",
              len(bk) == (12 if span == "hour" else 24)
              and us(bk[-1][0]) <= after and us(bk[-1][1]) > before, bk[-1:] if bk else bk)
        values = ",".join(f"('{s_}'::timestamptz, '{e}'::timestamptz)" for s_, e, *_ in bk)
        want = sql("select string_agg(concat_ws(':', ok, bad), ' ' order by lo) from (select b.lo,"
                   " (select count(*) from boxcar.jobs j where j.queue = " + lit(queue) + " and j.status = 'succeeded'"
                   "   and j.finished_at >= b.lo and j.finished_at < b.hi) ok,"
                   " (select count(*) from boxcar.jobs j where j.queue = " + lit(queue) + " and j.status = 'failed'"
                   "   and j.finished_at >= b.lo and j.finished_at < b.hi) bad"
                   f" from (values {values}) b(lo, hi)) x")
        shown = " ".join(f"{ok}:{bad}" for _, _, ok, bad, _ in bk)
        check(f"each bar of the last {span} is the count(*) of boxcar.jobs that succeeded and failed in its bucket",
              shown == want and sum(ok + bad for _, _, ok, bad, _ in bk) > 0, f"{shown} != {want}")
        titles = all(all(f"{ok} succeeded, {bad} failed" in t for t in ts) and ts
                     for _, _, ok, bad, ts in bk)
        check(f"and each bar's <title> (its hover) says the same numbers ({span})", titles, bk[:2])
        p50 = b.eval(f"[...document.querySelectorAll('#chart-{span}-run g.bucket')].map(g => g.dataset.p50)")
        want = sql("select string_agg(coalesce(round(m::numeric, 3)::text, 'none'), ' ' order by lo) from"
                   " (select b.lo, (select percentile_cont(0.5) within group (order by extract(epoch from"
                   "  j.finished_at - j.started_at)) from boxcar.jobs j where j.queue = " + lit(queue) +
                   "  and j.status in ('succeeded', 'failed') and j.finished_at >= b.lo and j.finished_at < b.hi) m"
                   f" from (values {values}) b(lo, hi)) x")
        got = " ".join(p if p == "none" else "%.3f" % float(p) for p in p50)
        check(f"the run-time chart's medians are the database's percentile_cont ({span})", got == want,
              f"{got} != {want}")
    check("the charts are SVG drawn by the server: no script, no style attribute, no outside reference",
          b.eval("document.querySelectorAll('svg.chart').length === 6"
                 " && !document.querySelector('main [style], svg script, svg image, svg use')"))
    b.shot("queue-charts")


def queue_spark(b, base, queue):
    """The queues page's small last-hour bars say what the queue's hour chart says."""
    for _ in range(2):  # twice, should a bucket's end fall between the two pages
        b.goto(base + "/queue?name=" + urllib.parse.quote(queue, safe=""))
        hour = b.eval("[...document.querySelectorAll('#chart-hour-count g.bucket')].map(g =>"
                      " [g.dataset.start, g.dataset.succeeded, g.dataset.failed].join(':'))")
        b.goto(base + "/")
        spark = b.eval(f"[...document.querySelectorAll('#queues tr[data-queue={json.dumps(queue)}] svg.spark g.bucket')]"
                       ".map(g => [g.dataset.start, g.dataset.succeeded, g.dataset.failed].join(':'))")
        if spark == hour:
            break
    check("the queues page shows each queue's last hour as bars, the hour chart's numbers", spark == hour and hour,
          f"{spark} != {hour}")
    b.shot("queues-spark")


def queue_charts_hostile(b, base, queue):
    b.goto(base + "/queue?name=" + urllib.parse.quote(queue, safe=""))
    check("a hostile queue name on its page stays text: no markup, no script ran",
          b.eval("document.getElementById('queue-name').textContent") == queue
          and b.eval("document.querySelectorAll('main img, main script').length === 0 && window.pwned === undefined"))


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def timeline(b, base, job_id, name):
    """The job's timeline against its events: a setup segment from each
    'claimed', a running one from each 'started', an upload one from each
    'exited'; the bar starts at the job's creation, ends at its end, and
    has no gap inside an attempt."""
    b.goto(base + "/jobs/" + job_id)
    segs = b.eval("[...document.querySelectorAll('#timeline g.seg')].map(g => [g.dataset.phase,"
                  " +g.dataset.attempt, +g.dataset.fromUs, +g.dataset.toUs, g.querySelector('title').textContent])")
    ev = [json.loads(x) for x in sql(f"select e from boxcar.job_events_json('{job_id}') e").splitlines()]
    row = json.loads(sql(f"select to_jsonb(j) from boxcar.jobs j where id = '{job_id}'"))
    starts = {"claimed": "setup", "started": "running", "exited": "upload"}
    want = [(starts[e["kind"]], us(e["at"])) for e in ev if e["kind"] in starts]
    got = [(p, f) for p, _, f, _, _ in segs if p != "waiting"]
    check(f"{name}: a segment starts at each claimed, started and exited event, in order",
          got == want and want, f"{got} != {want}")
    check(f"{name}: the bar starts at the job's creation and ends when it finished",
          segs and segs[0][0] == "waiting" and segs[0][2] == us(row["created_at"])
          and segs[-1][3] == us(row["finished_at"]), (segs[:1], segs[-1:], row["created_at"], row["finished_at"]))
    ends = {"retried", "released", "rescued", "finished", "retry_requested", "cancelled"}
    cuts = {us(e["at"]) for e in ev if e["kind"] in ends}
    joined = all(a[3] == z[2] or a[3] in cuts for a, z in zip(segs, segs[1:]))
    check(f"{name}: each segment ends where the next begins, but at an attempt's end", joined, segs)
    claims = [e["attempt"] for e in ev if e["kind"] == "claimed"]
    check(f"{name}: one setup per attempt, numbered as its claim",
          [a for p, a, _, _, _ in segs if p == "setup"] == claims, (segs, claims))
    check(f"{name}: each segment's <title> names its attempt and phase",
          all(t.startswith(f"attempt {a}: {p} ") for p, a, _, _, t in segs), segs[:2])
    b.shot(name)


def bulk(b, base, ids):
    """Ticks three failed jobs and a succeeded one, retries them: the three
    are queued again, the succeeded one is refused with its reason, an
    unticked failed one is untouched; then cancels all matching a filter."""
    q = "bulk"
    b.goto(base + "/jobs?queue=" + q + "&limit=100")
    pick = ids["BULK_FAILED"].split()[:3] + [ids["BULK_OK"]]
    left = ids["BULK_FAILED"].split()[3]
    for i in pick:
        b.eval(f"document.querySelector('#jobs tr[data-id=\"{i}\"] input[type=checkbox]').checked = true")
    b.shot("jobs-bulk-ticked")
    b.click("button[data-action=bulk-retry]")
    summary = b.eval("document.getElementById('bulk-summary').textContent")
    check("bulk retry answers with each outcome: 3 retried, 1 refused and why",
          summary == "3 retried, 1 refused: job is succeeded: only a failed or cancelled job can be retried",
          summary)
    outcome = b.eval("Object.fromEntries([...document.querySelectorAll('#bulk tbody tr')].map(r =>"
                     " [r.dataset.id, r.dataset.outcome]))")
    check("and a row per job", outcome == {**{i: "done" for i in pick[:3]}, pick[3]: "refused"}, outcome)
    st = {i: sql(f"select status || ' ' || manual_retries from boxcar.jobs where id = '{i}'") for i in pick + [left]}
    check("exactly the ticked failed jobs were retried; the succeeded and the unticked ones are untouched",
          [st[i] for i in pick[:3]] == ["queued 1"] * 3 and st[pick[3]] == "succeeded 0" and st[left] == "failed 0", st)
    by = sql("select string_agg(distinct details->>'requested_by', ' ') from boxcar.job_events"
             f" where kind = 'retry_requested' and job_id in ('{pick[0]}', '{pick[1]}', '{pick[2]}')")
    check("each retry's event names the operator", by == "ui:admin", by)
    b.shot("bulk-retried")

    b.goto(base + "/jobs?queue=" + q + "&status=queued")
    n = b.eval("document.querySelectorAll('#jobs tbody tr').length")
    b.eval("document.getElementById('bulk-all').checked = true")
    b.click("button[data-action=bulk-cancel]")
    summary = b.eval("document.getElementById('bulk-summary').textContent")
    check("cancel all matching the filter (queue and status) cancels every one of them",
          summary == f"{n} cancelled" and n == 3, (summary, n))
    st = sql(f"select string_agg(status, ' ' order by status) from boxcar.jobs where queue = '{q}'")
    check("and nothing else: the failed and succeeded ones stay",
          st == "cancelled cancelled cancelled failed succeeded", st)
    b.shot("bulk-cancelled")


def main():
    base, token, shots = sys.argv[1:4]
    os.makedirs(shots, exist_ok=True)
    ids = {k: os.environ[k] for k in ("OK_ID", "FAIL_ID", "LONG_ID", "XSS_ID", "BULK_FAILED", "BULK_OK",
                                      "CHART_QUEUE", "HOSTILE_QUEUE")}
    b = Browser(shots)
    try:
        login(b, base, token)
        overview_pages(b, base)
        job_list(b, base)
        job_pages(b, base, ids)
        cancel_and_retry(b, base, ids)
        queue_charts(b, base, ids["CHART_QUEUE"])
        queue_spark(b, base, ids["CHART_QUEUE"])
        queue_charts_hostile(b, base, ids["HOSTILE_QUEUE"])
        timeline(b, base, ids["OK_ID"], "timeline-ok")
        timeline(b, base, ids["FAIL_ID"], "timeline-retried")
        bulk(b, base, ids)
    except Exception as e:  # a broken step is a failure, not a crash
        check(f"the browser session ran to its end ({type(e).__name__}: {e})", False)
    finally:
        b.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
