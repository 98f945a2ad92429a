#!/usr/bin/env python3
"""A reverse proxy in front of s3rver that does what s3rver does not and
real S3 does: it verifies every request's SigV4 signature, header-signed
or presigned (query), recomputed here from the request with the known
secret, independently of boxcar's signer; and it honours
If-None-Match: * on PUT (412 PreconditionFailed when the object exists,
checked with a HEAD upstream first).  Refusals are S3's own XML errors:

  403 SignatureDoesNotMatch   the signature is not the one the secret makes
  403 InvalidAccessKeyId      unknown key id
  403 AccessDenied            no signature at all, an expired presigned URL,
                              or a key id listed with --deny
  403 RequestTimeTooSkewed    x-amz-date more than 15 minutes off
  400 InvalidToken            a temporary key id without its session token
  400 XAmzContentSHA256Mismatch  the body is not the signed payload
  412 PreconditionFailed      If-None-Match: * and the object exists

Keys: the fixed pair --key AKID:SECRET (repeatable), and the file --keys
("AKID SECRET [TOKEN]" per line, re-read on each request) where
aws_mock.py writes the temporary credentials it hands out.

  sigv4_proxy.py --port P --upstream http://127.0.0.1:S3PORT --key S3RVER:S3RVER [--keys F] [--deny AKID]
"""
import argparse
import datetime
import hashlib
import hmac
import http.client
import os
import re
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "host",
       "expect", "content-length"}


def s3_quote(s, safe):
    return urllib.parse.quote(s, safe=safe)


def canonical_query(query, drop_signature):
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    pairs = [(k, v) for k, v in pairs if not (drop_signature and k == "X-Amz-Signature")]
    enc = sorted((s3_quote(k, "-_.~"), s3_quote(v, "-_.~")) for k, v in pairs)
    return "&".join("%s=%s" % kv for kv in enc)


def signing_key(secret, date, region, service):
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def error_xml(code, message, extra=""):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>%s'
            "<RequestId>proxy</RequestId></Error>" % (code, message, extra))


class Refuse(Exception):
    def __init__(self, status, code, message, extra=""):
        super().__init__(code)
        self.status, self.code, self.message, self.extra = status, code, message, extra


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if ARGS.log:
            with open(ARGS.log, "a") as f:
                f.write("%s %s\n" % (self.command, fmt % args))

    def keys(self):
        known = {}
        for kv in ARGS.key:
            akid, secret = kv.split(":", 1)
            known[akid] = (secret, None)
        if ARGS.keys and os.path.exists(ARGS.keys):
            for line in open(ARGS.keys):
                f = line.split()
                if len(f) >= 2:
                    known[f[0]] = (f[1], f[2] if len(f) > 2 else None)
        return known

    def reply(self, status, body, headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if not any(k.lower() == "content-length" for k, _ in headers):
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    # ---- signature ------------------------------------------------------
    def verify(self, body):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        presigned = "X-Amz-Signature" in q
        now = datetime.datetime.now(datetime.timezone.utc)
        if presigned:
            get = lambda k: (q.get(k) or [""])[0]
            if get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
                raise Refuse(400, "AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256")
            credential, signed, given = get("X-Amz-Credential"), get("X-Amz-SignedHeaders"), get("X-Amz-Signature")
            amz_date, token, payload = get("X-Amz-Date"), get("X-Amz-Security-Token") or None, "UNSIGNED-PAYLOAD"
            t = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
            if now > t + datetime.timedelta(seconds=int(get("X-Amz-Expires") or 0)):
                raise Refuse(403, "AccessDenied", "Request has expired")
        else:
            auth = self.headers.get("Authorization")
            if not auth:
                raise Refuse(403, "AccessDenied", "Access Denied")
            m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})", auth)
            if not m:
                raise Refuse(400, "AuthorizationHeaderMalformed", "The authorization header is malformed")
            credential, signed, given = m.groups()
            amz_date = self.headers.get("x-amz-date", "")
            token = self.headers.get("x-amz-security-token")
            payload = self.headers.get("x-amz-content-sha256")
            if not payload:
                raise Refuse(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
            t = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
            if abs((now - t).total_seconds()) > 900:
                raise Refuse(403, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
            if payload != "UNSIGNED-PAYLOAD" and hashlib.sha256(body).hexdigest() != payload:
                raise Refuse(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
        akid, date, region, service, term = credential.split("/")
        known = self.keys()
        if akid not in known:
            raise Refuse(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
        secret, want_token = known[akid]
        if want_token and token != want_token:
            raise Refuse(400, "InvalidToken", "The provided token is malformed or otherwise invalid.")
        names = signed.split(";")
        if "host" not in names:
            raise Refuse(400, "AuthorizationHeaderMalformed", "host must be signed")
        if token and not presigned and "x-amz-security-token" not in names:
            raise Refuse(400, "InvalidToken", "x-amz-security-token must be signed")
        hdrs = []
        for n in names:
            v = self.headers.get(n)
            if v is None:
                raise Refuse(403, "SignatureDoesNotMatch", "a signed header is missing: %s" % n)
            hdrs.append("%s:%s\n" % (n, re.sub(r"\s+", " ", v.strip())))
        path = s3_quote(urllib.parse.unquote(url.path), "/-_.~")
        creq = "\n".join([self.command, path, canonical_query(url.query, presigned),
                          "".join(hdrs), signed, payload])
        scope = "/".join([date, region, service, term])
        sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
        want = hmac.new(signing_key(secret, date, region, service), sts.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, given):
            raise Refuse(403, "SignatureDoesNotMatch",
                         "The request signature we calculated does not match the signature you provided. "
                         "Check your key and signing method.",
                         "<AWSAccessKeyId>%s</AWSAccessKeyId>" % akid)
        if akid in ARGS.deny:
            raise Refuse(403, "AccessDenied", "Access Denied")

    # ---- forwarding -----------------------------------------------------
    # s3rver knows only its own key id: what passed our check goes on
    # anonymously (no Authorization, no X-Amz-* query), which it allows.
    def upstream(self, method, body, drop_also=()):
        u = urllib.parse.urlsplit(ARGS.upstream)
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        drop = HOP | {"authorization", "x-amz-security-token"} | set(drop_also)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
        headers["Host"] = u.netloc
        if body or method in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        url = urllib.parse.urlsplit(self.path)
        query = [(k, v) for k, v in urllib.parse.parse_qsl(url.query, keep_blank_values=True)
                 if not k.startswith("X-Amz-")]
        path = url.path + ("?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote) if query else "")
        c.request(method, path, body=body if body else None, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r, data

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        try:
            self.verify(body)
            if self.command == "PUT" and self.headers.get("If-None-Match") == "*":
                r, _ = self.upstream("HEAD", b"", ("if-none-match", "content-type", "content-md5"))
                if r.status == 200:
                    raise Refuse(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold",
                                 "<Condition>If-None-Match</Condition>")
        except Refuse as e:
            self.log_message("refused %s: %s %s", self.path.split("?")[0], e.code, e.message)
            return self.reply(e.status, error_xml(e.code, e.message, e.extra), [("Content-Type", "application/xml")])
        r, data = self.upstream(self.command, body)
        # HEAD: the object's Content-Length, without a body.
        keep = HOP - {"content-length"} if self.command == "HEAD" else HOP
        headers = [(k, v) for k, v in r.getheaders() if k.lower() not in keep]
        self.reply(r.status, data, headers)

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = handle_any


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--key", action="append", default=[])
    ap.add_argument("--keys")
    ap.add_argument("--deny", action="append", default=[])
    ap.add_argument("--log")
    ARGS = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler).serve_forever()
