#!/usr/bin/env python3
"""A webhook receiver for boxcar's end-to-end tests (Python 3 stdlib only).

It verifies every request's Standard Webhooks signature with its own HMAC
and base64 code (deliberately not boxcar's), answers the way the test
asks, and records every delivery as one JSON line.

Behaviour ("mode") is a sequence of answers separated by ';', one used per
request, the last repeating:  "500;500;200" fails twice then succeeds.
Each answer is comma-separated:  STATUS[,sleep=SECONDS][,retry-after=VALUE]
[,location=URL]  or  "close" (drop the connection without answering).
Shorthands: "ok" = 200, "sleep:N" = "200,sleep=N",
"retry-after:N" = "503,retry-after=N".  With --per-id the sequence
advances per webhook-id instead of per request.

The mode comes from --mode, is replaced by the contents of --control FILE
whenever that file changes, or by POST /_admin/mode (body = mode).  A new
mode starts its sequence from the beginning.  GET /_admin/stats returns
counts as JSON.  Admin paths are never treated as deliveries.

A request whose signature or timestamp is bad is answered 401 (unless
--accept-invalid) whatever the mode, so a broken signer fails loudly.

Log lines (--log FILE, JSON per line): webhook_id, timestamp,
signature (the webhook-signature header), signature_valid (HMAC matches a
secret), timestamp_ok (within --tolerance), valid (both), reason, answered
(status or "close"), body (parsed JSON when it parses, else the text),
received_at (unix seconds, float), path, user_agent, content_type, and
with --save DIR, saved: DIR/N, where the request's headers ("Name: value"
lines) and exact body are kept as N.headers and N.body, for checking it
again later with other secrets (`boxcar webhooks verify --headers
DIR/N.headers --body DIR/N.body`).

Prints the port on stdout (one line) once listening; --port-file also
writes it to a file (atomically) for scripts.
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import http.server
import json
import os
import signal
import sys
import threading
import time

MAX_BODY = 16 << 20
ADMIN_PREFIX = "/_admin/"


def parse_secrets(value):
    """'whsec_<b64> whsec_<b64>' -> list of key bytes.  Raises ValueError."""
    keys = []
    for i, entry in enumerate(value.split(), 1):
        if not entry.startswith("whsec_"):
            raise ValueError("secret entry %d does not start with whsec_" % i)
        try:
            keys.append(base64.b64decode(entry[len("whsec_"):], validate=True))
        except (binascii.Error, ValueError):
            raise ValueError("secret entry %d is not valid base64" % i) from None
    if not keys:
        raise ValueError("no secret given")
    return keys


def expected_signatures(keys, msg_id, timestamp, body):
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    return [base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()).decode()
            for k in keys]


def check_signature(keys, msg_id, timestamp, signature_header, body):
    """(signature_valid, reason) for the HMAC part only."""
    if not msg_id:
        return False, "missing webhook-id"
    if not timestamp or not timestamp.isdigit():
        return False, "missing or malformed webhook-timestamp"
    if not signature_header:
        return False, "missing webhook-signature"
    given = [e[3:] for e in signature_header.split(" ") if e.startswith("v1,")]
    if not given:
        return False, "no v1 signature"
    for want in expected_signatures(keys, msg_id, timestamp, body):
        for g in given:
            if hmac.compare_digest(g.encode(), want.encode()):
                return True, ""
    return False, "no matching signature"


def parse_answer(text):
    text = text.strip()
    if text == "ok":
        text = "200"
    elif text.startswith("sleep:"):
        text = "200,sleep=" + text[len("sleep:"):]
    elif text.startswith("retry-after:"):
        text = "503,retry-after=" + text[len("retry-after:"):]
    parts = []
    for p in text.split(","):
        # An HTTP-date has commas of its own: a piece without '=' belongs
        # to the option before it ("retry-after=Wed, 21 Oct 2015 ...").
        if parts and "=" in parts[-1] and "=" not in p:
            parts[-1] += "," + p
        elif p.strip():
            parts.append(p.strip())
    if not parts:
        raise ValueError("empty answer")
    ans = {"status": None, "close": False, "sleep": 0.0, "headers": []}
    if parts[0] == "close":
        ans["close"] = True
    else:
        status = int(parts[0])
        if not 100 <= status <= 599:
            raise ValueError("status %d out of range" % status)
        ans["status"] = status
    for p in parts[1:]:
        key, _, value = p.partition("=")
        value = value.strip()
        if key == "sleep":
            ans["sleep"] = float(value)
        elif key == "retry-after":
            ans["headers"].append(("Retry-After", value))
        elif key == "location":
            ans["headers"].append(("Location", value))
        else:
            raise ValueError("unknown option %r" % key)
    return ans


def parse_mode(text):
    answers = [parse_answer(a) for a in text.split(";") if a.strip()]
    if not answers:
        raise ValueError("empty mode")
    return answers


class State:
    def __init__(self, args, keys):
        self.lock = threading.Lock()
        self.keys = keys
        self.tolerance = args.tolerance
        self.accept_invalid = args.accept_invalid
        self.per_id = args.per_id
        self.control = args.control
        self.control_stamp = None
        self.log = open(args.log, "a", encoding="utf-8") if args.log else None
        self.save_dir = args.save
        self.saved = 0
        self.set_mode(args.mode)
        self.stats = {"requests": 0, "valid": 0, "invalid": 0, "ids": set()}

    def set_mode(self, text):
        answers = parse_mode(text)
        with self.lock:
            self.mode_text = text
            self.answers = answers
            self.position = {}

    def reload_control(self):
        if not self.control:
            return
        try:
            st = os.stat(self.control)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self.control_stamp:
            return
        with open(self.control, encoding="utf-8") as f:
            text = f.read().strip()
        self.control_stamp = stamp
        if text:
            self.set_mode(text)

    def next_answer(self, msg_id):
        with self.lock:
            key = msg_id if self.per_id else ""
            n = self.position.get(key, 0)
            self.position[key] = n + 1
            return self.answers[min(n, len(self.answers) - 1)]

    def record(self, entry, valid, msg_id):
        line = json.dumps(entry, sort_keys=True)
        with self.lock:
            self.stats["requests"] += 1
            self.stats["valid" if valid else "invalid"] += 1
            if msg_id:
                self.stats["ids"].add(msg_id)
            if self.log:
                self.log.write(line + "\n")
                self.log.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "boxcar-test-receiver/1"
    # The headers and the body go out in two writes: with Nagle's algorithm
    # the body waited for the client's delayed ACK of the headers, 40 ms a
    # response on a kept-alive connection (at most ~25 deliveries/s each).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    def read_body(self):
        """The body, or None after answering 411/413 (boxcar always sends
        Content-Length; chunked uploads are not needed here)."""
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.reply(411, b"Content-Length required\n")
            return None
        n = int(length)
        if n > MAX_BODY:
            self.close_connection = True
            self.reply(413, b"body too large\n")
            return None
        return self.rfile.read(n)

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        st = self.server.state
        if self.path == ADMIN_PREFIX + "stats":
            with st.lock:
                out = dict(st.stats, ids=len(st.stats["ids"]), mode=st.mode_text)
            self.reply(200, json.dumps(out).encode() + b"\n")
        else:
            self.reply(404, b"not found\n")

    def do_POST(self):
        st = self.server.state
        received_at = time.time()
        body = self.read_body()
        if body is None:
            return
        if self.path.startswith(ADMIN_PREFIX):
            self.admin(body)
            return
        st.reload_control()
        self.deliver(st, body, received_at)

    def admin(self, body):
        if self.path != ADMIN_PREFIX + "mode":
            self.reply(404, b"not found\n")
            return
        try:
            self.server.state.set_mode(body.decode().strip())
        except (ValueError, UnicodeDecodeError) as e:
            self.reply(400, ("bad mode: %s\n" % e).encode())
            return
        self.reply(200, b"ok\n")

    def deliver(self, st, body, received_at):
        msg_id = self.headers.get("webhook-id")
        ts = self.headers.get("webhook-timestamp")
        sig_ok, reason = check_signature(st.keys, msg_id, ts,
                                         self.headers.get("webhook-signature"), body)
        ts_ok = bool(ts and ts.isdigit()) and (
            st.tolerance < 0 or abs(received_at - int(ts)) <= st.tolerance)
        if sig_ok and not ts_ok:
            reason = "timestamp outside tolerance"
        valid = sig_ok and ts_ok
        answer = st.next_answer(msg_id or "")
        if not valid and not st.accept_invalid:
            answer = {"status": 401, "close": False, "sleep": 0.0, "headers": []}
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        saved = None
        if st.save_dir:
            with st.lock:
                st.saved += 1
                saved = os.path.join(st.save_dir, "%d" % st.saved)
            with open(saved + ".headers", "w", encoding="utf-8") as f:
                f.write("".join("%s: %s\n" % kv for kv in self.headers.items()))
            with open(saved + ".body", "wb") as f:
                f.write(body)
        st.record({
            "webhook_id": msg_id,
            "timestamp": ts,
            "signature": self.headers.get("webhook-signature"),
            "saved": saved,
            "signature_valid": sig_ok,
            "timestamp_ok": ts_ok,
            "valid": valid,
            "reason": reason,
            "answered": "close" if answer["close"] else answer["status"],
            "body": parsed,
            "received_at": received_at,
            "path": self.path,
            "user_agent": self.headers.get("User-Agent"),
            "content_type": self.headers.get("Content-Type"),
        }, valid, msg_id)
        if answer["sleep"]:
            time.sleep(answer["sleep"])
        if answer["close"]:
            self.close_connection = True
            return
        text = b"ok\n" if 200 <= answer["status"] < 300 else (
            ("invalid signature: %s\n" % reason).encode() if not valid
            else ("mode answer %d\n" % answer["status"]).encode())
        try:
            self.reply(answer["status"], text, answer["headers"])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); the record stands


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # Many workers delivering at once must not find the backlog full.
    request_queue_size = 256


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0, help="0: any free port (default)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--secret", help="whsec_... (space-separated for several); default "
                   "$WEBHOOK_SECRET or $BOXCAR_WEBHOOK_SECRET")
    p.add_argument("--log", help="append one JSON line per delivery here")
    p.add_argument("--mode", default="200", help="answer sequence, see the module doc")
    p.add_argument("--control", help="file whose contents replace the mode when it changes")
    p.add_argument("--per-id", action="store_true", help="advance the sequence per webhook-id")
    p.add_argument("--tolerance", type=float, default=300,
                   help="accepted timestamp skew in seconds; negative disables (default 300)")
    p.add_argument("--accept-invalid", action="store_true",
                   help="answer by the mode even when the signature is bad (still recorded)")
    p.add_argument("--port-file", help="write the port here once listening")
    p.add_argument("--save", help="keep each delivery's headers and body in this directory")
    args = p.parse_args()

    secret = args.secret or os.environ.get("WEBHOOK_SECRET") or \
        os.environ.get("BOXCAR_WEBHOOK_SECRET")
    if not secret:
        p.error("no --secret, $WEBHOOK_SECRET or $BOXCAR_WEBHOOK_SECRET")
    try:
        keys = parse_secrets(secret)
        state = State(args, keys)
    except ValueError as e:
        p.error(str(e))

    server = Server((args.host, args.port), Handler)
    server.state = state
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print(port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
