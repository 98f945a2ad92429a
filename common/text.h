/* Small text helpers shared by the parsers of configuration-like input
 * (config files, AWS profiles, header blocks). */
#ifndef BC_COMMON_TEXT_H
#define BC_COMMON_TEXT_H

/* Cuts spaces and tabs from both ends of s, and carriage returns from its
 * end (a file written on Windows), in place.  Returns s past its leading
 * blanks: a pointer into s, not a copy. */
char *bc_trim(char *s);

#endif
