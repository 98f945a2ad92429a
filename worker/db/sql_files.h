/* The SQL of migrations/ and sql/, compiled in by scripts/embed-sql.sh in
 * file-name order, so the binary alone can migrate a database. */
#ifndef BC_WORKER_DB_SQL_FILES_H
#define BC_WORKER_DB_SQL_FILES_H

struct sql_file {
        const char *name; /* "migrations/0001_jobs.sql", "sql/10_spec.sql" */
        const char *text;
};

extern const struct sql_file sql_files[];
extern const unsigned sql_files_count;

#endif
