/* A .tar.gz written entry by entry with libarchive, without any of the
 * sanitizing boxcar's packer does (that is the point): the hostile and
 * hand-made archives of the storage unit tests. */
#ifndef BC_TESTS_UNIT_STORAGE_FAKE_ARCHIVE_H
#define BC_TESTS_UNIT_STORAGE_FAKE_ARCHIVE_H

#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include <archive.h>
#include <archive_entry.h>

struct fake_entry {
        const char *path;
        mode_t type;
        mode_t perm;
        const char *data; /* file data, or symlink/hardlink target */
        bool hardlink;
};

static void write_archive(const char *path, const struct fake_entry *e, size_t n)
{
        struct archive *a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
        struct archive_entry *ae = archive_entry_new();
        for (size_t i = 0; i < n; i++) {
                archive_entry_clear(ae);
                archive_entry_copy_pathname(ae, e[i].path);
                archive_entry_set_filetype(ae, e[i].type);
                archive_entry_set_perm(ae, e[i].perm);
                if (e[i].hardlink)
                        archive_entry_copy_hardlink(ae, e[i].data);
                else if (e[i].type == AE_IFLNK)
                        archive_entry_copy_symlink(ae, e[i].data);
                size_t len = e[i].type == AE_IFREG && !e[i].hardlink && e[i].data
                                     ? strlen(e[i].data)
                                     : 0;
                archive_entry_set_size(ae, (la_int64_t)len);
                assert_true(archive_write_header(a, ae) >= ARCHIVE_WARN);
                if (len)
                        archive_write_data(a, e[i].data, len);
        }
        archive_entry_free(ae);
        archive_write_close(a);
        archive_write_free(a);
}

#endif
