/* Job output made harmless for a terminal: what `boxcar logs` (and the
 * JSON the other commands print) shows on a tty must not move the cursor,
 * rewrite the screen, set the window title, or answer back through the
 * terminal, whatever bytes the job wrote.
 *
 * Shown as it is: printable ASCII, "\n", "\t", "\r\n", and valid UTF-8
 * beyond U+009F.  Shown visibly instead (not reversible: `--raw` or
 * `--json` give the exact bytes):
 *   - C0 controls and DEL in caret notation, as `cat -v`: ESC is "^[",
 *     a lone CR "^M" (it would let a line overwrite another), NUL "^@",
 *     DEL "^?";
 *   - C1 controls encoded in UTF-8 (U+0080..U+009F; U+009B is a CSI to
 *     some terminals) as "\u009b";
 *   - bytes that are not UTF-8 (raw 0x80..0xff C1 bytes included, a
 *     sequence cut short, overlong forms, surrogates) as "\xNN".
 * A character split across two writes is kept until the next one. */
#ifndef BC_WORKER_CLI_TERM_SAFE_H
#define BC_WORKER_CLI_TERM_SAFE_H

#include <stdbool.h>
#include <stddef.h>

struct dynbuf;

/* One output stream's state; zero-initialised is ready. */
struct term_safe {
        unsigned char pend[4]; /* a UTF-8 sequence not yet complete */
        size_t n_pend, need;
        bool cr; /* a CR waits: "\r\n" passes, a lone CR does not */
};

/* Appends data, neutralised, to out.  Returns 0 or dynbuf's -ENOMEM or
 * -E2BIG (out may then hold part of it). */
int term_safe_feed(struct term_safe *t, const void *data, size_t len, struct dynbuf *out);
/* The end of the stream: appends what is held back, neutralised. */
int term_safe_end(struct term_safe *t, struct dynbuf *out);

/* A copy of a NUL-terminated text, neutralised as term_safe_feed does (a
 * field of a human table).  NULL on ENOMEM. */
char *term_safe_text(const char *s);

/* A copy of JSON text (a document cJSON or PostgreSQL printed) with DEL and
 * U+0080..U+009F escaped as \u007f and \u0080..\u009f: the same JSON
 * (outside strings JSON is ASCII without them), safe on a terminal (C0
 * controls are escaped by every JSON printer already).  NULL on ENOMEM. */
char *term_safe_json(const char *json);

#endif
