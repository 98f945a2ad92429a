/* `boxcar worker --print-config`: the configuration the worker would run
 * with, one setting a line in the configuration file's grammar, each with
 * the source that gave it (flag, variable, file or default).  What may
 * hold a password (CONFIG_OPT_SECRET: the database URLs) is named, never
 * printed, whichever source gave it. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/config/config-internal.h"
#include "worker/config/config_file.h"

int config_sources_note(struct sources *src, int id, enum config_source from, const char *v)
{
        int i = id - OPT_FIRST;
        if (i < 0 || i >= OPT_COUNT)
                return 0;
        const struct config_option *o = config_option_by_id(id);
        /* Repeated flags add up: their texts are joined as one value of
         * the file would give them (';' between queues' caps, ',' between
         * CIDRs); any other option's last text wins. */
        if (src->from[i] == from && src->text[i] && o && (o->flags & CONFIG_OPT_REPEAT)) {
                char *joined = NULL;
                if (asprintf(&joined, "%s%s%s", src->text[i], id == OPT_ALLOW_URL_CIDR ? "," : ";",
                             v) < 0)
                        return -ENOMEM;
                free(src->text[i]);
                src->text[i] = joined;
                return 0;
        }
        char *copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        free(src->text[i]);
        src->text[i] = copy;
        src->from[i] = from;
        return 0;
}

void config_sources_done(struct sources *src)
{
        for (int i = 0; i < OPT_COUNT; i++) {
                free(src->text[i]);
                src->text[i] = NULL;
        }
}

/* One "key = value" line; quoted when the value has blanks at its ends,
 * which the file's grammar would trim. */
static void print_setting(FILE *f, const char *key, const char *v)
{
        size_t n = strlen(v);
        bool quote = n && (strchr(" \t", v[0]) || strchr(" \t", v[n - 1]));
        fprintf(f, quote ? "%s = \"%s\"\n" : "%s = %s\n", key, v);
}

/* The settings that SOURCE gave, under a heading. */
static void print_source(FILE *f, const struct sources *src, const struct worker_config *c,
                         enum config_source source, const char *heading)
{
        fprintf(f, "\n# %s\n", heading);
        for (const struct config_option *o = config_worker_options; o->name; o++) {
                int i = o->id - OPT_FIRST;
                if ((o->flags & CONFIG_OPT_META) || src->from[i] != source)
                        continue;
                const char *text = src->text[i];
                if (source == SOURCE_DEFAULT && o->id == OPT_WORKER_ID)
                        text = c->worker_id; /* made up: the one this run would use */
                else if (source == SOURCE_DEFAULT)
                        text = (o->flags & CONFIG_OPT_VALUE) ? o->def : NULL;
                if (source != SOURCE_DEFAULT && (o->flags & CONFIG_OPT_SECRET))
                        fprintf(f, "# %s: set, not shown (it may hold a password)\n", o->name);
                else if (text)
                        print_setting(f, o->name, text);
                else
                        fprintf(f, "# %s: %s\n", o->name, o->def);
        }
}

void config_print(FILE *f, const struct sources *src, const struct worker_config *c)
{
        fputs("# boxcar worker --print-config: each setting, under the source that gave\n"
              "# it (flag > variable > file > default), in the configuration file's\n"
              "# grammar.\n",
              f);
        print_source(f, src, c, SOURCE_FLAG, "From flags:");
        print_source(f, src, c, SOURCE_ENV,
                     "From variables (BOXCAR_ and the key in capitals; DATABASE_URL):");
        char heading[PATH_MAX + 32];
        snprintf(heading, sizeof(heading),
                 "From the file %s:", src->config_path ? src->config_path : CONFIG_FILE_DEFAULT);
        print_source(f, src, c, SOURCE_FILE, heading);
        print_source(f, src, c, SOURCE_DEFAULT, "Built-in defaults:");
}
