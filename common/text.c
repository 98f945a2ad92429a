#include "common/text.h"

#include <string.h>

char *bc_trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = '\0';
        return s;
}
