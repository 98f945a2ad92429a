#!/usr/bin/python3
"""SigV4 test vectors for boxcar's signer, made by Debian's python3-botocore
(an independent implementation) with a fixed clock.

  gen_vectors.py              writes tests/unit/storage/sigv4_vectors.h
  gen_vectors.py --live N     prints N fresh presign vectors (current time,
                              random keys) as tab-separated lines for
                              tests/storage/run.sh to replay through the C signer

Run it with /usr/bin/python3 so the Debian botocore is the one used.
"""
import datetime
import os
import random
import sys
from unittest import mock

import botocore
import botocore.auth
import botocore.session
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

AK = "AKIAIOSFODNN7EXAMPLE"
SK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TOKEN = "FQoGZXIvYXdzEJr//////////wEaDOn+token/with+plus=="


def fixed_clock(when):
    """Patches botocore.auth's clock, the one thing that varies."""
    real = datetime.datetime
    fake = mock.MagicMock(wraps=real)
    fake.utcnow.return_value = when
    fake.strptime = real.strptime
    return mock.patch.object(botocore.auth.datetime, "datetime", fake)


def presign(region, endpoint, bucket, key, method, expires, when, token=None, extra=None):
    session = botocore.session.get_session()
    if endpoint is None and region != "us-east-1":
        # botocore 1.29 presigns on the global endpoint; boxcar (like
        # newer SDKs) uses the regional one, and the host is signed.
        endpoint = "https://s3.%s.amazonaws.com" % region
    virtual = endpoint is None or endpoint.endswith(".amazonaws.com")
    cfg = Config(signature_version="s3v4",
                 s3={"addressing_style": "virtual" if virtual else "path"})
    client = session.create_client("s3", region_name=region, endpoint_url=endpoint,
                                   aws_access_key_id=AK, aws_secret_access_key=SK,
                                   aws_session_token=token, config=cfg)
    op = {"GET": "get_object", "PUT": "put_object", "HEAD": "head_object"}[method]
    params = {"Bucket": bucket, "Key": key}
    params.update(extra or {})
    with fixed_clock(when):
        return client.generate_presigned_url(op, Params=params, ExpiresIn=expires)


# botocore's parameter names → the raw query parameters they become.
EXTRA_QUERY = {
    "ResponseContentDisposition": "response-content-disposition",
    "ResponseContentType": "response-content-type",
    "VersionId": "versionId",
}


def header_sign(region, url, method, headers, body, when, token=None):
    creds = Credentials(AK, SK, token)
    req = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    with fixed_clock(when):
        botocore.auth.S3SigV4Auth(creds, "s3", region).add_auth(req)
    return req.headers["Authorization"], req.headers["X-Amz-Content-SHA256"]


def c_str(s):
    if s is None:
        return "NULL"
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if 32 <= b < 127 and c not in '"\\?':
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


PRESIGN_CASES = [
    # (description, region, endpoint, bucket, key, method, expires, token, extra)
    ("aws example key", "us-east-1", None, "examplebucket", "test.txt", "GET", 86400, None, None),
    ("spaces", "us-east-1", None, "examplebucket", "my dir/a file name.txt", "GET", 3600, None, None),
    ("unicode", "eu-west-1", None, "examplebucket", "donn\u00e9es/\u65e5\u672c\u8a9e/\U0001f600.bin", "GET", 600, None, None),
    ("plus and tilde", "us-east-1", None, "examplebucket", "a+b~c/d+e~f.tar.gz", "GET", 900, None, None),
    ("slashes", "us-west-2", None, "examplebucket", "a//b/./c/../d/", "GET", 60, None, None),
    ("reserved chars", "us-east-1", None, "examplebucket", "k=v&x;y,z:@$!*'()#[]%", "GET", 60, None, None),
    ("put path style", "us-east-1", "http://127.0.0.1:54569", "boxcar", "pre/sha256/ab/ab12.tar.gz", "PUT", 604800, None, None),
    ("head path style", "eu-central-1", "http://localhost:9000", "boxcar-test", "x y+z~", "HEAD", 1, None, None),
    ("session token", "us-east-1", None, "examplebucket", "secret/obj", "GET", 3600, TOKEN, None),
    ("token path style", "ap-south-1", "https://minio.example.com", "bkt", "\u00fcber/+~ /x", "PUT", 7200, TOKEN, None),
    ("query params", "us-east-1", None, "examplebucket", "report.csv", "GET", 300, None,
     {"ResponseContentDisposition": 'attachment; filename="r+1 ~.csv"',
      "ResponseContentType": "text/csv; charset=utf-8"}),
    ("version id", "us-east-1", "http://127.0.0.1:54569", "boxcar", "v/1", "GET", 120, None,
     {"VersionId": "3/L4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"}),
]

HEADER_CASES = [
    # (description, region, url, method, headers, body, token)
    ("get with range", "us-east-1", "https://examplebucket.s3.amazonaws.com/test.txt", "GET",
     [("Range", "bytes=0-9")], None, None),
    ("head path style", "us-east-1", "http://127.0.0.1:54569/boxcar/sha256/ab/abc.tar.gz", "HEAD",
     [], None, None),
    ("put if-none-match", "us-east-1", "http://127.0.0.1:54569/boxcar/p/sha256/00/x%20y.tar.gz", "PUT",
     [("If-None-Match", "*"), ("Content-Type", "application/gzip")], b"hello, world\n", None),
    ("session token", "eu-west-3", "https://bkt.s3.eu-west-3.amazonaws.com/a%2Bb/~/c", "GET",
     [("Range", "  bytes=0-1   ")], None, TOKEN),
    ("list query", "us-east-1", "https://examplebucket.s3.amazonaws.com/?prefix=J%20K&max-keys=2", "GET",
     [], None, None),
]

WHEN = datetime.datetime(2013, 5, 24, 0, 0, 0)


def split_url(url):
    base, _, query = url.partition("?")
    sig = [p.split("=", 1)[1] for p in query.split("&") if p.startswith("X-Amz-Signature=")][0]
    return base, sig


def generate(path):
    epoch = int(WHEN.replace(tzinfo=datetime.timezone.utc).timestamp())
    lines = ["/* Generated by tests/storage/gen_vectors.py with python3-botocore "
             + botocore.__version__ + "; do not edit. */",
             "#define VEC_NOW " + str(epoch),
             "static const struct presign_vector presign_vectors[] = {"]
    for desc, region, ep, bucket, key, method, exp, tok, extra in PRESIGN_CASES:
        url = presign(region, ep, bucket, key, method, exp, WHEN, tok, extra)
        base, sig = split_url(url)
        params = ", ".join("{ %s, %s }" % (c_str(EXTRA_QUERY[k]), c_str(v))
                           for k, v in (extra or {}).items())
        lines.append("        { %s, %s, %s, %s, %s, %s, %s, %d, %s,\n          { %s }, %d,\n          %s,\n          %s },"
                     % (c_str(desc), c_str(region), c_str(ep), c_str(bucket), c_str(key),
                        c_str(method), c_str(tok), exp, "1" if ep else "0",
                        params or "{ NULL, NULL }", len(extra or {}), c_str(base), c_str(sig)))
    lines.append("};")
    lines.append("static const struct header_vector header_vectors[] = {")
    for desc, region, url, method, headers, body, tok in HEADER_CASES:
        auth, payload = header_sign(region, url, method, headers, body, WHEN, tok)
        hdrs = ", ".join("{ %s, %s }" % (c_str(n), c_str(v)) for n, v in headers)
        lines.append("        { %s, %s, %s, %s, %s, { %s }, %d, %s,\n          %s },"
                     % (c_str(desc), c_str(region), c_str(url), c_str(method), c_str(tok),
                        hdrs or "{ NULL, NULL }", len(headers), c_str(payload), c_str(auth)))
    lines.append("};")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def live(n):
    """Fresh vectors at the current time with random awkward keys."""
    alphabet = "abcXYZ019 +~/-_.!*'()&$@=;:,?%\u00e9\u4e2d\U0001f680"
    now = datetime.datetime.utcnow().replace(microsecond=0)
    epoch = int(now.replace(tzinfo=datetime.timezone.utc).timestamp())
    rnd = random.Random(os.urandom(8))
    for _ in range(n):
        key = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40))).strip("/") or "k"
        method = rnd.choice(["GET", "PUT", "HEAD"])
        exp = rnd.choice([1, 60, 3600, 604800])
        tok = rnd.choice([None, TOKEN])
        ep = rnd.choice([None, "http://127.0.0.1:54569"])
        region = rnd.choice(["us-east-1", "eu-west-1"])
        url = presign(region, ep, "boxcar", key, method, exp, now, tok)
        base, sig = split_url(url)
        print("\t".join([region, ep or "-", "boxcar", key.encode().hex(), method, str(exp),
                         tok or "-", str(epoch), base, sig]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--live":
        live(int(sys.argv[2]))
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        generate(os.path.join(here, "..", "unit", "storage", "sigv4_vectors.h"))
