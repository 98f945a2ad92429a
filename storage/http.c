#include "storage/http.h"
#include "version.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_result;

static void do_init(void)
{
        init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_global_init(struct bc_error *err)
{
        pthread_once(&init_once, do_init);
        if (init_result != CURLE_OK)
                return bc_error_set(err, BC_INTERNAL, EIO, "curl_global_init: %s",
                                    curl_easy_strerror(init_result));
        return 0;
}

void http_policy_of(const struct storage_config *cfg, struct http_policy *ret)
{
        *ret = (struct http_policy){ 4, 250, 8000, 10, 30, NULL };
        if (!cfg)
                return;
        ret->ca_bundle = cfg->ca_bundle;
        ret->retries = cfg->retries < 0 ? 0 : cfg->retries > 20 ? 20 : cfg->retries;
        ret->retry_base_ms = cfg->retry_base_ms < 0 ? 0 : cfg->retry_base_ms;
        ret->retry_max_ms = cfg->retry_max_ms < 0 ? 0 : cfg->retry_max_ms;
        ret->connect_timeout_s = cfg->connect_timeout_s > 0 ? cfg->connect_timeout_s : 10;
        ret->low_speed_time_s = cfg->low_speed_time_s > 0 ? cfg->low_speed_time_s : 30;
}

char *http_redact(const char *url)
{
        const char *p = strstr(url, "://");
        const char *host = p ? p + 3 : url;
        /* Drop user:password@ if someone put credentials there. */
        const char *end_auth = host + strcspn(host, "/?#");
        const char *at = memchr(host, '@', (size_t)(end_auth - host));
        if (at)
                host = at + 1;
        size_t n = strcspn(host, "?#");
        char *r = NULL;
        if (asprintf(&r, "%.*s%.*s", p ? (int)(p + 3 - url) : 0, url, (int)n, host) < 0)
                return strdup("(url)");
        return r;
}

void http_setup(CURL *c, const struct http_policy *p, char *errbuf)
{
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)p->connect_timeout_s);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)p->low_speed_time_s);
        /* S3 keys may contain "/./" or "/../": send them verbatim. */
        curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "boxcar/" BOXCAR_VERSION);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        if (p->ca_bundle)
                curl_easy_setopt(c, CURLOPT_CAINFO, p->ca_bundle);
        errbuf[0] = '\0';
}

bool http_retryable(CURLcode cc, long status)
{
        switch (cc) {
        case CURLE_OK:
                return status >= 500 || status == 429 || status == 408;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_GOT_NOTHING:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
                return true;
        default:
                return false;
        }
}

void http_backoff(const struct http_policy *p, int attempt)
{
        long ms = p->retry_base_ms;
        for (int i = 1; i < attempt && ms < p->retry_max_ms; i++)
                ms *= 2;
        if (ms > p->retry_max_ms)
                ms = p->retry_max_ms;
        /* Full jitter on the upper half, so replicas that failed together
         * do not come back together. */
        unsigned int rnd = 0;
        if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
                rnd = (unsigned int)time(NULL);
        if (ms > 1)
                ms = ms / 2 + (long)(rnd % (unsigned long)(ms / 2 + 1));
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

void http_s3_error_code(const char *body, char out[static 64])
{
        out[0] = '\0';
        const char *s = body ? strstr(body, "<Code>") : NULL;
        if (!s)
                return;
        s += 6;
        size_t n = strcspn(s, "<");
        if (n > 63)
                n = 63;
        /* Keep it to the token S3 documents, nothing echoed from input. */
        size_t o = 0;
        for (size_t i = 0; i < n; i++)
                if ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                    (s[i] >= '0' && s[i] <= '9'))
                        out[o++] = s[i];
        out[o] = '\0';
}

void http_describe(CURLcode cc, long status, const char *errbuf, const char *body,
                   char out[static 256])
{
        if (cc != CURLE_OK) {
                snprintf(out, 256, "%s", errbuf && *errbuf ? errbuf : curl_easy_strerror(cc));
                return;
        }
        char code[64];
        http_s3_error_code(body, code);
        if (*code)
                snprintf(out, 256, "HTTP %ld (%s)", status, code);
        else
                snprintf(out, 256, "HTTP %ld", status);
}

void http_keep_head(struct dynbuf *b, const char *data, size_t n)
{
        size_t room = b->cap > b->len ? b->cap - b->len : 0;
        (void)dynbuf_add(b, data, n < room ? n : room);
}

size_t http_body_head_cb(char *ptr, size_t size, size_t nmemb, void *dynbuf)
{
        size_t n = size * nmemb;
        http_keep_head(dynbuf, ptr, n);
        return n;
}

size_t http_body_whole_cb(char *ptr, size_t size, size_t nmemb, void *dynbuf)
{
        size_t n = size * nmemb;
        return dynbuf_add(dynbuf, ptr, n) == 0 ? n : 0;
}
