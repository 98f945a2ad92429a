"""Checking boxcar's webhook requests (Standard Webhooks, standardwebhooks.com).

The official ``standardwebhooks`` package is not in Debian and not used
here: this is the scheme written out (about 40 lines), checked in the tests
against requests boxcar's worker really sent and against ``boxcar webhooks
verify``.  A request is authentic when one ``v1,<signature>`` of its
``webhook-signature`` header is base64(HMAC-SHA256(key, "<webhook-id>.
<webhook-timestamp>.<body>")) for the key of a secret given, compared in
constant time; and fresh when ``webhook-timestamp`` is within ``tolerance``
seconds of now (either way), which refuses replays of old requests.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Iterable, Mapping, Optional, Union

from .errors import WebhookVerificationError

DEFAULT_TOLERANCE_S = 300


def _key(secret: str) -> bytes:
    raw = secret[len("whsec_"):] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("webhook secret: not whsec_ followed by base64") from None


def verify_webhook(secret: Union[str, Iterable[str]], headers: Mapping[str, str],
                   body: Union[bytes, str], *, tolerance: Optional[float] = DEFAULT_TOLERANCE_S,
                   now: Optional[float] = None) -> Any:
    """Checks a webhook request and returns its body parsed as JSON.

    ``secret``: the scope's secret as ``boxcar webhooks secret`` prints it
    (``whsec_…``), or several (a list, or space-separated: during a
    rotation either may sign).  ``headers``: the request's headers, any
    case.  ``body``: the exact bytes received (not re-serialized JSON).
    ``tolerance``: seconds allowed between the request's timestamp and
    ``now`` (default 300; None skips the check).  Raises
    :class:`WebhookVerificationError` saying what is wrong; a malformed
    secret raises ValueError.
    """
    secrets = secret.split() if isinstance(secret, str) else list(secret)
    keys = [_key(s) for s in secrets]
    if not keys:
        raise ValueError("webhook secret: none given")
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sig_header = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not msg_id:
        raise WebhookVerificationError("webhook-id missing")
    if not ts:
        raise WebhookVerificationError("webhook-timestamp missing")
    if not (ts.isascii() and ts.isdigit()):
        raise WebhookVerificationError("webhook-timestamp is not decimal seconds")
    if not sig_header:
        raise WebhookVerificationError("webhook-signature missing")
    data = body.encode() if isinstance(body, str) else bytes(body)
    signed = msg_id.encode() + b"." + ts.encode() + b"." + data
    expected = [base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()) for k in keys]
    given = [p[3:].encode() for p in sig_header.split() if p.startswith("v1,")]
    if not given:
        raise WebhookVerificationError("webhook-signature has no v1 signature")
    # Every pair is compared (no early exit), each in constant time.
    match = False
    for g in given:
        for e in expected:
            match |= hmac.compare_digest(g, e)
    if not match:
        raise WebhookVerificationError(
            "no matching signature (%d v1 signature%s checked against %d secret%s; wrong secret, "
            "or id, timestamp or body changed)"
            % (len(given), "" if len(given) == 1 else "s", len(keys), "" if len(keys) == 1 else "s"))
    if tolerance is not None:
        skew = (time.time() if now is None else now) - int(ts)
        if abs(skew) > tolerance:
            raise WebhookVerificationError("stale timestamp: %d s %s now, tolerance %g s"
                                           % (abs(skew), "ahead of" if skew < 0 else "before", tolerance))
    try:
        return json.loads(data)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
