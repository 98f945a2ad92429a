#!/usr/bin/env python3
"""Local stand-ins for the AWS credential endpoints, speaking their real
protocols, for tests/storage/run.sh:

  STS        POST /  Action=AssumeRoleWithWebIdentity (form body) -> the
             AssumeRoleWithWebIdentityResponse XML, or an ErrorResponse
             (403 AccessDenied for a wrong token or role)
  IMDSv2     PUT /latest/api/token (needs X-aws-ec2-metadata-token-ttl-seconds)
             GET /latest/meta-data/iam/security-credentials/[ROLE] with
             X-aws-ec2-metadata-token; 401 without a valid token
  container  GET /ecs/creds with Authorization: <token>; 403 otherwise

Every answer hands out new credentials (key ids ASIA<SOURCE><n>), valid for
--lifetime seconds.  Control and inspection, for the test only:

  GET  /_stats                      JSON counts of credential documents served
  POST /_set?lifetime=S&fail=NAME   change the lifetime / make NAME fail
                                    (sts, imds, ecs; fail= to clear)

Issued keys are appended to --keys FILE ("AKID SECRET TOKEN" per line), so
the signature-checking proxy (sigv4_proxy.py) accepts them.  Usage:
  aws_mock.py --port P --web-token-file F --role-arn ARN --ecs-token T --keys FILE
"""
import argparse
import datetime
import json
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"lifetime": 3600, "fail": "", "counts": {"sts": 0, "imds": 0, "ecs": 0}, "n": 0}
LOCK = threading.Lock()
IMDS_TOKENS = set()
ROLE = "boxcar-test-role"


def issue(source):
    with LOCK:
        STATE["n"] += 1
        STATE["counts"][source] += 1
        n = STATE["n"]
        lifetime = STATE["lifetime"]
    akid = "ASIA%s%04d" % (source.upper(), n)
    secret = "sec-%s-%d-%s" % (source, n, secrets.token_hex(12))
    token = "tok-%s-%d-%s" % (source, n, secrets.token_hex(24))
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=lifetime)
    with open(ARGS.keys, "a") as f:
        f.write("%s %s %s\n" % (akid, secret, token))
    return akid, secret, token, exp.strftime("%Y-%m-%dT%H:%M:%SZ")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype="text/plain"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    def failing(self, name):
        with LOCK:
            return STATE["fail"] == name

    # ---- STS ------------------------------------------------------------
    def sts(self):
        form = urllib.parse.parse_qs(self.body(), keep_blank_values=True)
        get = lambda k: (form.get(k) or [""])[0]
        ctype = self.headers.get("Content-Type", "")
        if get("Action") != "AssumeRoleWithWebIdentity" or get("Version") != "2011-06-15" \
                or not ctype.startswith("application/x-www-form-urlencoded") \
                or not get("RoleSessionName"):
            return self.sts_error(400, "InvalidAction", "bad AssumeRoleWithWebIdentity request")
        expected = open(ARGS.web_token_file).read().strip()
        if self.failing("sts") or get("WebIdentityToken") != expected or get("RoleArn") != ARGS.role_arn:
            return self.sts_error(403, "AccessDenied",
                                  "Not authorized to perform sts:AssumeRoleWithWebIdentity")
        akid, secret, token, exp = issue("sts")
        self.send(200, f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <AssumedRoleId>AROA0000:{get("RoleSessionName")}</AssumedRoleId>
      <Arn>{ARGS.role_arn}/{get("RoleSessionName")}</Arn>
    </AssumedRoleUser>
    <Provider>oidc.eks.example</Provider>
    <Credentials>
      <AccessKeyId>{akid}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{exp}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>system:serviceaccount:default:boxcar</SubjectFromWebIdentityToken>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>
""", "text/xml")

    def sts_error(self, status, code, msg):
        self.send(status, f"""<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>{code}</Code><Message>{msg}</Message></Error>
  <RequestId>00000000-0000-0000-0000-000000000001</RequestId>
</ErrorResponse>
""", "text/xml")

    def creds_json(self, source, imds):
        akid, secret, token, exp = issue(source)
        doc = {"AccessKeyId": akid, "SecretAccessKey": secret, "Token": token, "Expiration": exp}
        if imds:
            doc = {"Code": "Success", "LastUpdated": exp, "Type": "AWS-HMAC", **doc}
        else:
            doc["RoleArn"] = ARGS.role_arn
        self.send(200, json.dumps(doc), "application/json")

    # ---- IMDSv2 ---------------------------------------------------------
    def imds_token_ok(self):
        return self.headers.get("X-aws-ec2-metadata-token") in IMDS_TOKENS

    def do_PUT(self):
        self.body()
        if self.path != "/latest/api/token":
            return self.send(404, "not found")
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600 or self.headers.get("X-Forwarded-For"):
            return self.send(400, "missing or invalid ttl")
        tok = secrets.token_urlsafe(32)
        IMDS_TOKENS.add(tok)
        self.send(200, tok)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/_stats":
            with LOCK:
                return self.send(200, json.dumps(STATE["counts"]), "application/json")
        prefix = "/latest/meta-data/iam/security-credentials/"
        if path.startswith("/latest/"):
            if not self.imds_token_ok():  # IMDSv2 only: no token, no answer
                return self.send(401, "")
            if path == prefix:
                return self.send(200, ROLE)
            if path == prefix + ROLE:
                if self.failing("imds"):
                    return self.send(500, "")
                return self.creds_json("imds", True)
            return self.send(404, "")
        if path == "/ecs/creds":
            if self.failing("ecs") or self.headers.get("Authorization") != ARGS.ecs_token:
                return self.send(403, json.dumps({"code": "AccessDenied"}), "application/json")
            return self.creds_json("ecs", False)
        self.send(404, "not found")

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_set":
            q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
            self.body()
            with LOCK:
                if "lifetime" in q:
                    STATE["lifetime"] = int(q["lifetime"][0])
                if "fail" in q:
                    STATE["fail"] = q["fail"][0]
            return self.send(200, "ok")
        if url.path == "/":
            return self.sts()
        self.body()
        self.send(404, "not found")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--web-token-file", required=True)
    ap.add_argument("--role-arn", required=True)
    ap.add_argument("--ecs-token", required=True)
    ap.add_argument("--keys", required=True)
    ARGS = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler).serve_forever()
