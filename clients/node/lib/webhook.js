// Verifying a boxcar webhook delivery with the official Standard Webhooks
// library: boxcar signs "webhook-id.webhook-timestamp.body" with HMAC-SHA256
// under the scope's secret (`boxcar webhooks secret --scope S`, "whsec_…")
// and sends one "v1,<base64>" signature per live secret in
// webhook-signature.  Timestamps more than 5 minutes from now are refused.
import standardwebhooks from 'standardwebhooks';

const { Webhook, WebhookVerificationError } = standardwebhooks;
export { WebhookVerificationError };

// Headers as Node's IncomingMessage gives them (lower-case names; an array
// for a repeated header), a Fetch Headers object, or any plain object.
function plainHeaders(headers) {
  if (!headers || typeof headers !== 'object') throw new TypeError('headers: must be an object or a Headers');
  const entries = typeof headers.entries === 'function' && typeof headers.get === 'function'
    ? [...headers.entries()] : Object.entries(headers);
  const out = {};
  for (const [k, v] of entries) out[k.toLowerCase()] = Array.isArray(v) ? v[0] : String(v);
  return out;
}

// verifyWebhook(secret, headers, body) → the event ({type, timestamp,
// data}) when the signature and timestamp hold, else throws
// WebhookVerificationError.  secret: "whsec_…", or several (an array, or
// space-separated) while a rotation's old and new secrets both sign.
// body: the raw request body, exactly as received (string or Buffer):
// parsed JSON re-serialized is not what was signed.
export function verifyWebhook(secret, headers, body) {
  const secrets = Array.isArray(secret) ? secret : String(secret ?? '').split(/\s+/).filter(Boolean);
  if (secrets.length === 0) throw new TypeError('secret: the scope\'s webhook secret ("whsec_…")');
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) {
    if (body instanceof Uint8Array) body = Buffer.from(body);
    else throw new TypeError('body: the raw request body (string or Buffer), not parsed JSON');
  }
  const h = plainHeaders(headers);
  let last;
  for (const s of secrets) {
    try {
      return new Webhook(s).verify(body, h);
    } catch (e) {
      if (!(e instanceof WebhookVerificationError)) throw e;
      last = e;
    }
  }
  throw last;
}
