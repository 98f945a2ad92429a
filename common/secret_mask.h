/* Masks secret values in a stream of job output (live log chunks, final
 * stdout/stderr, output rows), as GitHub Actions masks secrets: every
 * occurrence of a value is replaced by "***" before the bytes are stored.
 *
 * What is masked: each value of at least SECRET_MASK_MIN_LEN bytes, and,
 * for a value holding newlines, each of its lines (a trailing "\r"
 * dropped) of at least SECRET_MASK_MIN_LEN bytes, since a job printing a
 * multi-line key line by line would otherwise show it.  Shorter values
 * are not masked: "***" in place of every "abc" or "1" would destroy
 * ordinary output while hiding nothing a reader could not guess.
 *
 * How: one Aho-Corasick automaton over all values, so the cost per byte
 * does not grow with their number.  Occurrences that overlap (two values,
 * or one value twice) are masked together as one "***" covering their
 * union, so no byte of any occurrence survives; occurrences that only
 * touch ("abcdabcd") give one "***" each.  A value split across writes is
 * still masked: bytes that may be the start of a value are held back until
 * the next bytes decide it (at most the longest value's length).
 *
 * Limit: the output is the input with occurrences replaced; a value that
 * itself contains "***" could be formed anew by a replacement next to
 * other text ("a" + "***" for the value "a***"); values are secrets, not
 * asterisks, so this is not guarded against.
 *
 * One struct secret_mask masks one stream at a time; it is not thread-
 * safe.  It holds copies of the values and of held-back output: it wipes
 * them (explicit_bzero) when freed. */
#ifndef BC_COMMON_SECRET_MASK_H
#define BC_COMMON_SECRET_MASK_H

#include <stdbool.h>
#include <stddef.h>

#define SECRET_MASK_MIN_LEN 4
#define SECRET_MASK_REPLACEMENT "***"
/* Most bytes the values may add up to (their lines count apart): building
 * the automaton takes up to ~100 bytes of memory per byte of them. */
#define SECRET_MASK_MAX_TOTAL (1u << 20)

struct secret_mask;

/* values[i] of lens[i] bytes (any bytes, NUL included); n may be 0;
 * duplicates are fine.  Copies what it needs: the caller's values may be
 * wiped after the call.  Returns NULL with errno ENOMEM, or E2BIG when the
 * values add up to more than SECRET_MASK_MAX_TOTAL bytes. */
struct secret_mask *secret_mask_new(const char *const *values, const size_t *lens, size_t n);

/* NULL-safe; wipes the copies of the values and the held-back bytes. */
void secret_mask_free(struct secret_mask *m);

/* Receives masked output; returns < 0 to stop (that value is returned by
 * the write or flush that called it). */
typedef int (*secret_mask_emit_fn)(void *ctx, const char *p, size_t n);

/* Feeds the next n bytes of the stream; emits, through emit, every byte
 * that is decided (masked or not), in order, before returning.  Returns 0,
 * or emit's negative value: the stream is then broken (free the mask or
 * flush it before reuse; held bytes may be lost). */
int secret_mask_write(struct secret_mask *m, const char *p, size_t n, secret_mask_emit_fn emit,
                      void *ctx);

/* End of the stream, or a point where held bytes must go out (the live
 * log's flush at job end): emits what is held back, masked, and starts the
 * next bytes afresh (a value split across a flush is not masked).  Returns
 * 0 or emit's negative value. */
int secret_mask_flush(struct secret_mask *m, secret_mask_emit_fn emit, void *ctx);

/* True when nothing is masked (n was 0, or every value was short): the
 * caller may bypass the mask.  NULL-safe (true). */
bool secret_mask_empty(const struct secret_mask *m);

#endif
