/* webhook_post internals exposed for unit tests. */
#ifndef BC_WORKER_WEBHOOK_WEBHOOK_POST_INTERNAL_H
#define BC_WORKER_WEBHOOK_WEBHOOK_POST_INTERNAL_H

/* Longest wait a Retry-After may ask for; a larger value is capped (the
 * retry schedule decides what to do with it). */
#define WEBHOOK_RETRY_AFTER_MAX_S (365.0 * 86400)

/* Seconds to wait according to a Retry-After value (RFC 9110 §10.2.3):
 * delta-seconds, or an HTTP-date (IMF-fixdate, RFC 850 or asctime form)
 * taken relative to now.  A date in the past gives 0.  Returns -1 when
 * value is NULL, empty or neither form. */
double webhook_parse_retry_after(const char *value, long long now);

/* The text of a response body for an error message: at most max bytes
 * (never cutting a UTF-8 character), invalid UTF-8 replaced, control
 * characters and runs of whitespace turned into one space, trimmed.
 * Caller frees; NULL when out of memory. */
char *webhook_body_quote(const char *body, size_t len, size_t max);

/* A copy of text[len] with every occurrence of the URL's user name,
 * password, query string and query values (as written and
 * percent-decoded, 3 bytes or longer) replaced by "***": receivers echo
 * the request line in error pages, and those credentials must not reach
 * our logs through the error message.  *ret_len is the new length.
 * Caller frees; NULL when out of memory. */
char *webhook_redact_url_secrets(const char *text, size_t len, const char *url, size_t *ret_len);

#endif
