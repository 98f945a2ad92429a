/* Jobs of claims whose commit is not known (in_doubt.h). */
#include "worker/daemon/in_doubt.h"

#include <stdio.h>
#include <string.h>

void in_doubt_add(struct in_doubt *d, const char *id)
{
        in_doubt_take(d, id);
        snprintf(d->ids[d->next % IN_DOUBT_MAX], sizeof(d->ids[0]), "%s", id);
        d->next++;
}

bool in_doubt_take(struct in_doubt *d, const char *id)
{
        for (unsigned i = 0; i < IN_DOUBT_MAX; i++) {
                if (d->ids[i][0] && strcmp(d->ids[i], id) == 0) {
                        d->ids[i][0] = '\0';
                        return true;
                }
        }
        return false;
}
