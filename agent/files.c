#include "agent/files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/fileops.h"

/* Operations done per turn of the loop at most. */
#define FILES_PER_STEP 16

static void files_req_free(struct files_req *f)
{
        if (!f)
                return;
        free(f->req.ops);
        free(f->payload);
        free(f);
}

void files_start(struct agent *a, uint32_t seq, const char *payload, size_t len)
{
        struct files_req *f = calloc(1, sizeof(*f));
        if (f)
                f->payload = malloc(len ? len : 1);
        int r = f && f->payload ? 0 : -ENOMEM;
        if (r == 0) {
                memcpy(f->payload, payload, len);
                r = sw_decode_files(f->payload, len, &f->req);
        }
        if (r < 0) {
                files_req_free(f);
                struct sw_file_result res = { .index = 0, .err = -r };
                conn_send_file_result(&a->conn, seq, &res);
                conn_send_files_done(&a->conn, seq);
                return;
        }
        f->seq = seq;
        struct files_req **p = &a->files;
        while (*p)
                p = &(*p)->next;
        *p = f;
}

static void answer(struct agent *a, struct files_req *f)
{
        const struct sw_file_req *op = &f->req.ops[f->done];
        struct fileop_result res;
        fileop_run(op, a->workspace, f->req.max_read, &res);
        struct sw_file_result out = { .index = f->done,
                                      .err = res.err,
                                      .truncated = res.truncated,
                                      .size = res.size,
                                      .n_entries = res.n_entries,
                                      .entries = res.entries,
                                      .data = res.data,
                                      .data_len = res.data_len };
        conn_send_file_result(&a->conn, f->seq, &out);
        fileop_result_done(&res);
        f->done++;
}

bool files_step(struct agent *a)
{
        for (int i = 0; i < FILES_PER_STEP && a->files; i++) {
                if (conn_backlogged(&a->conn) || a->conn.dead)
                        break;
                struct files_req *f = a->files;
                if (f->done < f->req.n) {
                        answer(a, f);
                        continue;
                }
                conn_send_files_done(&a->conn, f->seq);
                a->files = f->next;
                files_req_free(f);
        }
        return a->files != NULL;
}

void files_free_all(struct agent *a)
{
        while (a->files) {
                struct files_req *f = a->files;
                a->files = f->next;
                files_req_free(f);
        }
}
