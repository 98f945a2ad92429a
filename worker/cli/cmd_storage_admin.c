/* `boxcar storage rm|retain|gc|share|unshare|public` (cmd_storage_admin.h). */
#include "worker/cli/cmd_storage_admin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "storage/storage.h"
#include "worker/config/config.h"
#include "worker/db/db.h"
#include "worker/gc/gc.h"
#include "worker/job/store.h"

/* Objects younger than this are never collected by `storage gc` unless
 * --grace says otherwise: the time a job may take between uploading its
 * layer and recording its version. */
#define DEFAULT_GRACE_S 3600.0

bool storage_admin_verb(const char *verb)
{
        return strcmp(verb, "rm") == 0 || strcmp(verb, "retain") == 0 || strcmp(verb, "gc") == 0 ||
               strcmp(verb, "share") == 0 || strcmp(verb, "unshare") == 0 ||
               strcmp(verb, "public") == 0;
}

static int usage(struct bc_error *err, const char *fmt, const char *arg)
{
        bc_error_set(err, BC_USAGE, EINVAL, fmt, arg);
        return bc_error_prefix(err, "see boxcar help storage");
}

static int duration(const char *opt, const char *val, double *ret, struct bc_error *err)
{
        if (!val || config_parse_duration(val, true, ret) < 0)
                return usage(err, "%s: want a duration (30s, 5m, 2h, 7d)", opt);
        return 0;
}

static int parse_retain(int argc, char **argv, struct storage_admin_args *a, struct bc_error *err)
{
        for (int i = 2; i < argc; i++) {
                const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
                if (strcmp(arg, "--keep-all") == 0) {
                        a->keep_all = true;
                } else if (strcmp(arg, "--keep-last") == 0) {
                        char *end = NULL;
                        a->keep_last = val ? strtol(val, &end, 10) : 0;
                        if (!val || *end || a->keep_last < 1 || a->keep_last > 1000000)
                                return usage(err, "--keep-last: want 1 to 1000000, not '%s'",
                                             val ? val : "");
                        i++;
                } else if (strcmp(arg, "--keep-within") == 0) {
                        int r = duration(arg, val, &a->keep_within_s, err);
                        if (r < 0)
                                return r;
                        if (a->keep_within_s <= 0)
                                return usage(err, "--keep-within: want more than 0, not '%s'",
                                             val);
                        i++;
                } else if (arg[0] == '-' || a->ref) {
                        return usage(err, "retain: unexpected '%s'", arg);
                } else {
                        a->ref = argv[i];
                }
        }
        if (!a->ref)
                return usage(err, "retain: want NAME%s", "");
        if (a->keep_all == (a->keep_last || a->keep_within_s))
                return usage(err,
                             "retain: want --keep-last and/or --keep-within, or "
                             "--keep-all%s",
                             "");
        return 0;
}

static int parse_gc(int argc, char **argv, struct storage_admin_args *a, struct bc_error *err)
{
        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--dry-run") == 0) {
                        a->dry_run = true;
                } else if (strcmp(argv[i], "--grace") == 0) {
                        int r = duration("--grace", i + 1 < argc ? argv[i + 1] : NULL, &a->grace_s,
                                         err);
                        if (r < 0)
                                return r;
                        i++;
                } else {
                        return usage(err, "gc: unexpected '%s'", argv[i]);
                }
        }
        return 0;
}

int storage_admin_parse(int argc, char **argv, struct storage_admin_args *a, struct bc_error *err)
{
        *a = (struct storage_admin_args){ .grace_s = DEFAULT_GRACE_S };
        if (strcmp(argv[1], "rm") == 0) {
                a->verb = ADMIN_RM;
                if (argc != 3 || argv[2][0] == '-')
                        return usage(err, "rm: want NAME[@VERSION]%s", "");
                a->ref = argv[2];
                return 0;
        }
        if (strcmp(argv[1], "share") == 0 || strcmp(argv[1], "unshare") == 0) {
                a->verb = strcmp(argv[1], "share") == 0 ? ADMIN_SHARE : ADMIN_UNSHARE;
                if (argc != 4 || argv[2][0] == '-' || argv[3][0] == '-')
                        return usage(err, "%s: want NAME SCOPE", argv[1]);
                a->ref = argv[2];
                a->scope = argv[3];
                return 0;
        }
        if (strcmp(argv[1], "public") == 0) {
                a->verb = ADMIN_PUBLIC;
                if (argc != 4 || argv[2][0] == '-' ||
                    (strcmp(argv[3], "on") != 0 && strcmp(argv[3], "off") != 0))
                        return usage(err, "public: want NAME on|off%s", "");
                a->ref = argv[2];
                a->public_on = strcmp(argv[3], "on") == 0;
                return 0;
        }
        if (strcmp(argv[1], "retain") == 0) {
                a->verb = ADMIN_RETAIN;
                return parse_retain(argc, argv, a, err);
        }
        a->verb = ADMIN_GC;
        return parse_gc(argc, argv, a, err);
}

static int rm(PGconn *conn, char *ref, struct bc_error *err)
{
        char *at = strchr(ref, '@');
        if (at)
                *at++ = '\0';
        const char *p[] = { ref, at };
        _cleanup_pgresult_ PGresult *res =
                at ? db_exec(conn, "select boxcar.remove_storage_version($1, $2)", 2, p, err)
                   : db_exec(conn, "select boxcar.remove_storage($1)", 1, p, err);
        if (!res)
                return -EPROTO;
        if (at)
                fprintf(stderr, "%s@%s removed\n", ref, at);
        else
                fprintf(stderr, "%s removed (%s versions)\n", ref, PQgetvalue(res, 0, 0));
        fputs("its objects are deleted by the next `boxcar storage gc` past the grace period\n",
              stderr);
        return 0;
}

static int retain(PGconn *conn, const struct storage_admin_args *a, struct bc_error *err)
{
        char last[32] = "", within[48] = "";
        if (a->keep_last)
                snprintf(last, sizeof(last), "%ld", a->keep_last);
        if (a->keep_within_s)
                snprintf(within, sizeof(within), "%.3f seconds", a->keep_within_s);
        const char *p[] = { a->ref, a->keep_last ? last : NULL, a->keep_within_s ? within : NULL };
        _cleanup_pgresult_ PGresult *res = db_exec(
                conn, "select boxcar.set_storage_retention($1, $2::integer, $3::interval)", 3, p,
                err);
        return res ? 0 : -EPROTO;
}

static int gc(PGconn *conn, const struct storage_admin_args *a, bool json, struct bc_error *err)
{
        _cleanup_(storage_config_freep) struct storage_config *s3 = NULL;
        const char *bucket = getenv("BOXCAR_S3_BUCKET");
        if (bucket && *bucket && storage_config_from_env(&s3, err) < 0)
                return bc_error_prefix(err, "S3 settings");
        struct gc_report rep;
        int r = gc_run(conn, s3, a->grace_s, a->dry_run, NULL, &rep, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *s = gc_report_json(&rep, a->dry_run);
        if (json && s)
                printf("%s\n", s);
        else
                printf("%s%ld versions removed by retention, %ld purged, %ld objects (%llu "
                       "bytes) deleted, %ld left for later; %llu bytes stored\n",
                       a->dry_run ? "dry run: " : "", rep.versions_removed, rep.versions_purged,
                       rep.objects_deleted, (unsigned long long)rep.bytes_reclaimed,
                       rep.objects_failed, (unsigned long long)rep.bytes_stored);
        return rep.objects_failed ? bc_error_set(err, BC_UPLOAD_FAILED, EIO,
                                                 "%ld objects could not be deleted (see the "
                                                 "log); the next run retries them",
                                                 rep.objects_failed)
                                  : 0;
}

/* share, unshare, public: the owner's choice of who else may read NAME. */
static int set_access(PGconn *conn, const struct storage_admin_args *a, struct bc_error *err)
{
        const char *p[] = { a->ref, a->verb == ADMIN_PUBLIC ? (a->public_on ? "true" : "false")
                                                            : a->scope };
        const char *sql = a->verb == ADMIN_SHARE     ? "select boxcar.share_storage($1, $2)"
                          : a->verb == ADMIN_UNSHARE ? "select boxcar.unshare_storage($1, $2)"
                                                     : "select boxcar.set_storage_public($1, $2)";
        _cleanup_pgresult_ PGresult *res = db_exec(conn, sql, 2, p, err);
        if (!res)
                return -EPROTO;
        if (a->verb == ADMIN_SHARE)
                fprintf(stderr, "%s: shared with scope %s (read-only)\n", a->ref, a->scope);
        else if (a->verb == ADMIN_UNSHARE)
                fprintf(stderr, "%s: %s with scope %s\n", a->ref,
                        strcmp(PQgetvalue(res, 0, 0), "t") == 0 ? "no longer shared"
                                                                : "was not shared",
                        a->scope);
        else
                fprintf(stderr, "%s: %s\n", a->ref,
                        a->public_on ? "public (every scope may read it)"
                                     : "not public (its owner and the scopes it is shared with)");
        return 0;
}

int storage_admin_run(PGconn *conn, const struct storage_admin_args *a, bool json,
                      struct bc_error *err)
{
        switch (a->verb) {
        case ADMIN_SHARE:
        case ADMIN_UNSHARE:
        case ADMIN_PUBLIC:
                return set_access(conn, a, err);
        case ADMIN_RM:
                return rm(conn, a->ref, err);
        case ADMIN_RETAIN:
                return retain(conn, a, err);
        case ADMIN_GC:
                return gc(conn, a, json, err);
        }
        return -EINVAL;
}
