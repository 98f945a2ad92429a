/* What goes into a layer (layer_diff.c), for the layer builder (layer.c).
 * The API is storage.h, storage_layer_build. */
#ifndef BC_STORAGE_LAYER_INTERNAL_H
#define BC_STORAGE_LAYER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/pack-internal.h"
#include "storage/storage.h"

struct layer_plan {
        bool whole;          /* write every walked item instead of v */
        struct pack_item *v; /* the layer's entries, sorted by path */
        size_t n;
        uint64_t changed_bytes;
        uint64_t changed_entries;
        uint64_t whiteouts;
};

/* Chooses the entries of the layer that turns below (NULL: nothing) into
 * tree, the tree of the walked list l (attrs[i]: item i's attributes in
 * it, NULL when it is not part of it).  Entries borrow l's paths; free
 * the plan with layer_plan_done before l. */
int layer_plan(const struct storage_tree *tree, const struct storage_tree *below,
               const struct pack_list *l, char *const *attrs, struct layer_plan *ret,
               struct bc_error *err);
void layer_plan_done(struct layer_plan *p);

#endif
