/* Code mode: {"language", "source", "arguments"} becomes a small wrapper
 * program that loads the source, calls main(**arguments) (Python),
 * main(arguments) (Node) or main ARGUMENTS_JSON (bash), and writes main's
 * return value as JSON to /workspace/.boxcar/return.json, which the worker
 * reads into result.return_value and removes before the workspace is
 * saved. */
#ifndef BC_WORKER_JOB_CODE_H
#define BC_WORKER_JOB_CODE_H

#include "common/error.h"
#include "worker/spec/spec.h"

/* The return value's file, relative to the workspace. */
#define CODE_RETURN_FILE ".boxcar/return.json"
#define CODE_RETURN_MAX (4u * 1024 * 1024)

/* Writes the wrapper, the source and the arguments into meta_dir (the
 * host directory the job sees at inner_meta).  *ret_argv gets the command
 * to run inside the job (NULL-terminated; free each string and the array). */
int code_prepare(const struct job_spec *spec, const char *meta_dir, const char *inner_meta,
                 const char *inner_workspace, char ***ret_argv, struct bc_error *err);

#endif
