/* Credentials documents: the JSON that ECS/EKS container endpoints and
 * IMDS return, and their ISO 8601 expiry times. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/cleanup.h"
#include "storage/creds-internal.h"

void aws_creds_done(struct aws_creds *c)
{
        if (!c)
                return;
        free(c->access_key);
        aws_secret_free(c->secret_key);
        aws_secret_free(c->session_token);
        memset(c, 0, sizeof(*c));
}

int creds_parse_time(const char *s, time_t *ret)
{
        struct tm tm = { 0 };
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.')
                for (p++; isdigit((unsigned char)*p); p++) {
                }
        long off = 0;
        if (*p == '+' || *p == '-') {
                /* Exactly "+HH:MM": sscanf alone would also take "+2:00",
                 * and the six bytes skipped below must all be there. */
                const char *d = p + 1;
                if (!isdigit((unsigned char)d[0]) || !isdigit((unsigned char)d[1]) ||
                    d[2] != ':' || !isdigit((unsigned char)d[3]) || !isdigit((unsigned char)d[4]))
                        return -EINVAL;
                int hh = (d[0] - '0') * 10 + (d[1] - '0'), mm = (d[3] - '0') * 10 + (d[4] - '0');
                off = (*p == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
                p += 6;
        } else if (*p == 'Z') {
                p++;
        }
        if (*p)
                return -EINVAL;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret = t - off;
        return 0;
}

BC_DEFINE_CLEANUP(cJSON *, cJSON_Delete)

static const char *str_field(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsString(v) && v->valuestring && *v->valuestring ? v->valuestring : NULL;
}

int creds_from_json(const char *body, const char *what, struct aws_creds *ret,
                    struct bc_error *err)
{
        _cleanup_(cJSON_Deletep) cJSON *j = cJSON_ParseWithLength(body, strlen(body));
        if (!cJSON_IsObject(j))
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "%s: response is not a JSON object", what);
        /* IMDS says {"Code": "Success", …}; anything else is its error. */
        const char *code = str_field(j, "Code");
        if (code && strcmp(code, "Success") != 0)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO, "%s: Code %.64s", what, code);
        const char *ak = str_field(j, "AccessKeyId"), *sk = str_field(j, "SecretAccessKey");
        const char *tok = str_field(j, "Token"), *exp = str_field(j, "Expiration");
        if (!ak || !sk)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "%s: response lacks AccessKeyId or SecretAccessKey", what);
        return creds_from_fields(ak, sk, tok, exp, what, ret, err);
}

int creds_from_fields(const char *ak, const char *sk, const char *tok, const char *exp,
                      const char *what, struct aws_creds *ret, struct bc_error *err)
{
        struct aws_creds c = { 0 };
        if (exp && creds_parse_time(exp, &c.expires) < 0)
                return bc_error_set(err, BC_FETCH_FAILED, EPROTO,
                                    "%s: Expiration is not an RFC 3339 time", what);
        c.access_key = strdup(ak);
        c.secret_key = strdup(sk);
        c.session_token = tok ? strdup(tok) : NULL;
        if (!c.access_key || !c.secret_key || (tok && !c.session_token)) {
                aws_creds_done(&c);
                return bc_error_set(err, BC_INTERNAL, ENOMEM, "out of memory");
        }
        *ret = c;
        return 0;
}
