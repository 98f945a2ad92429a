// @boxcar/client: a thin Node.js client over boxcar's SQL API (README.md).
export { Boxcar, FINAL, POOL_APPLICATION_NAME } from './lib/boxcar.js';
export { enqueue, enqueueMany } from './lib/enqueue.js';
export { BoxcarError, BoxcarTimeoutError, JobFailedError } from './lib/errors.js';
export { APPLICATION_NAME } from './lib/listener.js';
export { Session } from './lib/session.js';
export { verifyWebhook, WebhookVerificationError } from './lib/webhook.js';
