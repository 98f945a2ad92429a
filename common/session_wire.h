/* The session agent's wire format: frames between the worker and
 * boxcar-session-agent, the process that stays inside a session's
 * sandbox between the session's jobs and runs each of them there
 * (agent/, worker/session/).  Both ends are boxcar's, but the agent
 * shares its sandbox (and uid) with the session's own jobs, so the worker
 * treats every frame it reads as untrusted: lengths are capped, fields
 * are checked, nothing is taken for granted.
 *
 * A frame: a header (struct sw_header, host byte order: both ends run on
 * one host), then `len` bytes of payload.  Payloads are packed fields:
 * u8/u32/i32/u64/i64 in host byte order, strings NUL-terminated, byte
 * blobs as a u32 length then the bytes.  The readers below never read
 * past the payload and fail (-EBADMSG) on anything short or malformed. */
#ifndef BC_COMMON_SESSION_WIRE_H
#define BC_COMMON_SESSION_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dynbuf.h"

#define SW_VERSION "boxcar-session-agent 1"
/* Largest payload either end accepts (stdin, a file written or read, a
 * code job's source and arguments fit in it with room to spare). */
#define SW_PAYLOAD_MAX (6u * 1024 * 1024)
/* Largest chunk of output in one SA_OUTPUT frame. */
#define SW_OUTPUT_CHUNK 65536u

enum sw_type {
        /* worker -> agent */
        SW_RUN = 'R',   /* run a command: struct sw_run */
        SW_KILL = 'K',  /* SIGKILL job seq's process group (empty payload) */
        SW_FILES = 'F', /* file operations: struct sw_files */
        SW_CODE = 'C',  /* code in the kept interpreter: struct sw_code */
        /* agent -> worker */
        SA_HELLO = 'H',      /* payload: SW_VERSION, NUL-terminated; seq 0 */
        SA_STARTED = 's',    /* i32 pid (in the sandbox's pid namespace) */
        SA_OUTPUT = 'o',     /* u8 stream (1 stdout, 2 stderr), then the bytes */
        SA_EXIT = 'x',       /* struct sw_exit */
        SA_FILE = 'f',       /* one operation's result: struct sw_file_result */
        SA_FILES_DONE = 'F', /* after the last SA_FILE of a SW_FILES (empty) */
        SA_CODE_DONE = 'c',  /* struct sw_code_done */
};

struct sw_header {
        uint32_t len; /* payload bytes, at most SW_PAYLOAD_MAX */
        uint8_t type; /* enum sw_type */
        uint8_t pad[3];
        uint32_t seq; /* the job's number in the session (1, 2, …); 0: none */
};

/* SW_RUN payload: u32 argc, argc strings; u32 envc, envc strings ("K=V");
 * cwd string; blob stdin.  The command gets its own session (setsid) and
 * process group, the stdin bytes on a pipe (then EOF), its stdout and
 * stderr relayed as SA_OUTPUT frames, and SA_STARTED then SA_EXIT.
 * Output written after the command's own exit (by what it left running)
 * is read and dropped: nothing it left behind blocks on a full pipe or
 * dies of SIGPIPE. */
struct sw_run {
        char **argv; /* NULL-terminated; the strings point into the payload */
        char **env;  /* NULL-terminated */
        const char *cwd;
        const char *stdin_data;
        uint32_t stdin_len;
};

/* SA_EXIT payload: i32 wstatus, i32 exec_errno (0, or why the command
 * could not be started: then wstatus says exit 127 or 126), u64 cpu_us,
 * u64 max_rss_kb (the command's process tree as its own wait4 saw it). */
struct sw_exit {
        int32_t wstatus;
        int32_t exec_errno;
        uint64_t cpu_us;
        uint64_t max_rss_kb;
};

enum sw_file_op {
        SW_FILE_WRITE = 1,  /* path, data; flags: SW_FILE_PARENTS */
        SW_FILE_READ = 2,   /* path; at most max_read bytes come back */
        SW_FILE_LIST = 3,   /* path: a directory's entries (not recursive) */
        SW_FILE_STAT = 4,   /* path (not followed when a symlink) */
        SW_FILE_MKDIR = 5,  /* path; flags: SW_FILE_PARENTS */
        SW_FILE_REMOVE = 6, /* path; flags: SW_FILE_RECURSIVE */
        SW_FILE_MOVE = 7,   /* path -> to */
};
#define SW_FILE_PARENTS 1u
#define SW_FILE_RECURSIVE 2u

/* SW_FILES payload: u32 max_read, u32 n, then n operations, each u8 op,
 * u8 flags, string path, string to (empty unless MOVE), blob data (empty
 * unless WRITE).  Paths are as the job sees them (relative ones from
 * /workspace) and resolve inside the sandbox's root, by the agent, in the
 * sandbox: a symlink the session planted can point nowhere but into the
 * sandbox.  At most SW_FILES_MAX operations. */
#define SW_FILES_MAX 1000u
struct sw_file_req {
        uint8_t op; /* enum sw_file_op */
        uint8_t flags;
        const char *path;
        const char *to;
        const char *data;
        uint32_t data_len;
};
struct sw_files {
        uint32_t max_read;
        uint32_t n;
        struct sw_file_req *ops; /* n; owned by the parser's caller (free) */
};

/* One stat record (SA_FILE's entries): the path's own (STAT, and a
 * WRITE's or MKDIR's result) or a directory's entries (LIST, sorted by
 * name).  u8 type, u32 mode (permission bits), u64 size, i64 mtime_ns,
 * string name (the entry's name for LIST, the path otherwise). */
#define SW_ENTRIES_MAX 10000u
struct sw_entry {
        char type; /* 'f' file, 'd' directory, 'l' symlink, 'o' other */
        uint32_t mode;
        uint64_t size;
        int64_t mtime_ns;
        const char *name;
};

/* SA_FILE payload: u32 index (of the operation), i32 err (0, or the
 * errno it failed with), u8 truncated (READ: the file is longer than
 * max_read), u64 size (READ: the file's whole size), u32 n_entries, the
 * entries, then blob data (READ: the bytes read). */
struct sw_file_result {
        uint32_t index;
        int32_t err;
        bool truncated;
        uint64_t size;
        uint32_t n_entries;
        struct sw_entry *entries; /* owned by the parser's caller (free) */
        const char *data;
        uint32_t data_len;
};

/* SW_CODE payload: string language ("python" or "node"), string source,
 * string arguments (a JSON object's text), u32 envc and envc strings,
 * string cwd.  The agent keeps one interpreter per language alive across
 * the session's code jobs: the source runs in the same globals as the
 * previous ones, then main(**arguments) if the source defines main.  Its
 * output comes as SA_OUTPUT frames of seq, then SA_CODE_DONE.  The
 * interpreter gets env and cwd when it starts (its first job's). */
struct sw_code {
        const char *language;
        const char *source;
        const char *arguments;
        char **env; /* NULL-terminated */
        const char *cwd;
};

enum sw_code_status {
        SW_CODE_OK = 0,        /* return_value holds main's value as JSON, or "null" */
        SW_CODE_ERROR = 1,     /* an exception: error holds its traceback */
        SW_CODE_CRASHED = 2,   /* the interpreter died (error says how): the next
                                * code job of this language gets a fresh one */
        SW_CODE_NO_INTERP = 3, /* the interpreter could not be started */
};

/* SA_CODE_DONE payload: u8 status, string return_value (JSON text), string
 * error, i32 wstatus (CRASHED: how the interpreter ended). */
struct sw_code_done {
        uint8_t status;
        const char *return_value;
        const char *error;
        int32_t wstatus;
};

/* Appends one frame to out (header and payload).  0, or -ENOMEM / -EMSGSIZE. */
int sw_frame_begin(struct dynbuf *out, enum sw_type type, uint32_t seq, size_t *ret_start);
int sw_frame_end(struct dynbuf *out, size_t start);
/* Field writers for the frame begun last (they append to out). */
int sw_put_u8(struct dynbuf *out, uint8_t v);
int sw_put_u32(struct dynbuf *out, uint32_t v);
int sw_put_i32(struct dynbuf *out, int32_t v);
int sw_put_u64(struct dynbuf *out, uint64_t v);
int sw_put_i64(struct dynbuf *out, int64_t v);
int sw_put_str(struct dynbuf *out, const char *s);
int sw_put_blob(struct dynbuf *out, const void *data, uint32_t len);
int sw_put_strv(struct dynbuf *out, char *const *v); /* u32 count, then strings */

/* Whole-message encoders (one frame each, appended to out). */
int sw_encode_run(struct dynbuf *out, uint32_t seq, const struct sw_run *r);
int sw_encode_files(struct dynbuf *out, uint32_t seq, const struct sw_files *f);
int sw_encode_code(struct dynbuf *out, uint32_t seq, const struct sw_code *c);
int sw_encode_exit(struct dynbuf *out, uint32_t seq, const struct sw_exit *x);
int sw_encode_file_result(struct dynbuf *out, uint32_t seq, const struct sw_file_result *r);
int sw_encode_code_done(struct dynbuf *out, uint32_t seq, const struct sw_code_done *d);

/* A reader over one frame's payload. */
struct sw_reader {
        const char *p;
        size_t left;
};
int sw_get_u8(struct sw_reader *r, uint8_t *ret);
int sw_get_u32(struct sw_reader *r, uint32_t *ret);
int sw_get_i32(struct sw_reader *r, int32_t *ret);
int sw_get_u64(struct sw_reader *r, uint64_t *ret);
int sw_get_i64(struct sw_reader *r, int64_t *ret);
int sw_get_str(struct sw_reader *r, const char **ret); /* points into the payload */
int sw_get_blob(struct sw_reader *r, const char **ret, uint32_t *ret_len);
/* u32 count (at most max), then strings: *ret is a new NULL-terminated
 * array (free it) of pointers into the payload. */
int sw_get_strv(struct sw_reader *r, uint32_t max, char ***ret);

/* Whole-message decoders: the results point into payload (which must
 * outlive them); arrays they allocate are named above.  -EBADMSG on a
 * malformed payload, -ENOMEM. */
int sw_decode_run(const char *payload, size_t len, struct sw_run *ret);
int sw_decode_files(const char *payload, size_t len, struct sw_files *ret);
int sw_decode_code(const char *payload, size_t len, struct sw_code *ret);
int sw_decode_exit(const char *payload, size_t len, struct sw_exit *ret);
int sw_decode_file_result(const char *payload, size_t len, struct sw_file_result *ret);
int sw_decode_code_done(const char *payload, size_t len, struct sw_code_done *ret);

/* Incremental frame reading from a byte stream (a socket): feed what was
 * read, then take whole frames.  A frame whose header says more than
 * SW_PAYLOAD_MAX is an error (-EMSGSIZE): the peer is broken or hostile. */
struct sw_stream {
        struct dynbuf buf;
        size_t taken; /* bytes of buf already returned as frames */
};
void sw_stream_init(struct sw_stream *s);
void sw_stream_done(struct sw_stream *s);
/* 0, -EMSGSIZE (the next frame's header is bad), -ENOBUFS (more buffered
 * than two whole frames: take every whole frame after each feed, and feed
 * at most a frame's size at a time), -ENOMEM.  Invalidates the payloads
 * take handed out. */
int sw_stream_feed(struct sw_stream *s, const void *data, size_t len);
/* 1 with *ret_hdr and *ret_payload (valid until the next feed or take),
 * 0 when no whole frame is there yet, negative on a bad header. */
int sw_stream_take(struct sw_stream *s, struct sw_header *ret_hdr, const char **ret_payload);

#endif
