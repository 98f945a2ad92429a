/* Shared by api.c, api_jobs.c and api_sessions.c: reading a result into the structs of
 * worker/db/api.h. */
#ifndef BC_WORKER_DB_API_INTERNAL_H
#define BC_WORKER_DB_API_INTERNAL_H

#include "worker/db/api.h"

/* Takes res (freed on failure too): its first column, one JSON value a
 * row, into ret. */
int api_json_rows_from(PGresult *res, struct api_json_rows *ret, struct bc_error *err);

/* Runs a call whose one row and column is a word (a status): copies it,
 * cut at API_STATUS_MAX. */
int api_status_call(PGconn *conn, const char *sql, int nparams, const char *const *params,
                    char ret_status[API_STATUS_MAX], struct bc_error *err);

/* Zeroed room for one struct of size a row of res (for none too: never
 * NULL when it worked); NULL with err set and res cleared when out of
 * memory. */
void *api_rows_for(PGresult *res, size_t size, struct bc_error *err);

#endif
