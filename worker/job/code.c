#include "worker/job/code.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/io.h"

/* argv: META RETURN_FILE.  A missing main, an exception, or a value json
 * cannot encode exits 1 with the traceback on stderr. */
static const char python_wrapper[] =
        "import asyncio, importlib.util, inspect, json, os, sys, traceback\n"
        "meta, out = sys.argv[1], sys.argv[2]\n"
        "sys.argv = [os.path.join(meta, 'main.py')]\n"
        "spec = importlib.util.spec_from_file_location('__main_code__', sys.argv[0])\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "try:\n"
        "    spec.loader.exec_module(mod)\n"
        "except BaseException:\n"
        "    traceback.print_exc(); sys.exit(1)\n"
        "main = getattr(mod, 'main', None)\n"
        "if not callable(main):\n"
        "    print('boxcar: the code defines no main() function', file=sys.stderr); sys.exit(1)\n"
        "with open(os.path.join(meta, 'arguments.json')) as f:\n"
        "    args = json.load(f)\n"
        "try:\n"
        "    value = main(**args)\n"
        "    if inspect.isawaitable(value):\n"
        "        value = asyncio.run(value)\n"
        "except BaseException:\n"
        "    traceback.print_exc(); sys.exit(1)\n"
        "try:\n"
        "    text = json.dumps(value, allow_nan=False)\n"
        "except (TypeError, ValueError) as e:\n"
        "    print(f'boxcar: main() returned a value that is not JSON: {e}', file=sys.stderr)\n"
        "    sys.exit(1)\n"
        "os.makedirs(os.path.dirname(out), exist_ok=True)\n"
        "with open(out, 'w') as f:\n"
        "    f.write(text)\n";

static const char node_wrapper[] =
        "'use strict';\n"
        "const fs = require('fs'), path = require('path');\n"
        "const [meta, out] = process.argv.slice(2);\n"
        "process.argv = [process.argv[0], path.join(meta, 'main.js')];\n"
        "function fail(msg) { console.error(msg); process.exit(1); }\n"
        "(async () => {\n"
        "  let mod;\n"
        "  try { mod = require(path.join(meta, 'main.js')); } catch (e) { fail(e && e.stack || String(e)); }\n"
        "  const main = mod && mod.main;\n"
        "  if (typeof main !== 'function') fail('boxcar: the code defines no main() function');\n"
        "  const args = JSON.parse(fs.readFileSync(path.join(meta, 'arguments.json'), 'utf8'));\n"
        "  let value;\n"
        "  try { value = await main(args); } catch (e) { fail(e && e.stack || String(e)); }\n"
        "  let text;\n"
        "  try { text = JSON.stringify(value === undefined ? null : value); } catch (e) {\n"
        "    fail('boxcar: main() returned a value that is not JSON: ' + e.message); }\n"
        "  if (text === undefined) fail('boxcar: main() returned a value that is not JSON');\n"
        "  fs.mkdirSync(path.dirname(out), { recursive: true });\n"
        "  fs.writeFileSync(out, text);\n"
        "})();\n";

/* bash: main gets the arguments JSON as $1; what it writes to fd 3 is its
 * return value (checked to be JSON by the worker). */
static const char bash_wrapper[] =
        "meta=$1 out=$2\n"
        "mkdir -p \"${out%/*}\" || exit 1\n"
        "source \"$meta/main.sh\" || exit 1\n"
        "if ! declare -F main >/dev/null; then\n"
        "  echo 'boxcar: the code defines no main() function' >&2; exit 1\n"
        "fi\n"
        "main \"$(cat \"$meta/arguments.json\")\" 3>\"$out\"\n";

/* Node does not see functions a script merely declares: export main. */
static const char node_export[] =
        "\n;if (typeof main === 'function') { module.exports.main = main; }\n";

static int write_text(const char *dir, const char *name, const char *a, const char *b,
                      struct bc_error *err)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        _cleanup_fd_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                   0644);
        if (fd < 0)
                return bc_error_set(err, BC_SANDBOX_SETUP, errno, "create %s: %m", path);
        const char *parts[] = { a, b };
        for (int i = 0; i < 2; i++) {
                int r = parts[i] ? bc_write_all(fd, parts[i], strlen(parts[i])) : 0;
                if (r < 0)
                        return bc_error_set(err, BC_SANDBOX_SETUP, -r, "write %s: %s", path,
                                            strerror(-r));
        }
        return 0;
}

int code_prepare(const struct job_spec *spec, const char *meta_dir, const char *inner_meta,
                 const char *inner_workspace, char ***ret_argv, struct bc_error *err)
{
        const char *lang = spec->code_language;
        bool py = strcmp(lang, "python") == 0, node = strcmp(lang, "node") == 0;
        const char *ext = py ? "py" : node ? "js" : "sh";
        char main_name[16], wrapper_name[24];
        snprintf(main_name, sizeof(main_name), "main.%s", ext);
        snprintf(wrapper_name, sizeof(wrapper_name), "wrapper.%s", ext);
        int r = write_text(meta_dir, main_name, spec->code_source, node ? node_export : NULL, err);
        if (r >= 0)
                r = write_text(meta_dir, "arguments.json", spec->code_arguments, NULL, err);
        if (r >= 0)
                r = write_text(meta_dir, wrapper_name,
                               py     ? python_wrapper
                               : node ? node_wrapper
                                      : bash_wrapper,
                               NULL, err);
        if (r < 0)
                return r;
        char **argv = calloc(5, sizeof(char *));
        if (!argv)
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        bool ok = (argv[0] = strdup(py ? "python3" : node ? "node" : "/bin/bash")) != NULL;
        ok &= asprintf(&argv[1], "%s/%s", inner_meta, wrapper_name) >= 0;
        ok &= (argv[2] = strdup(inner_meta)) != NULL;
        ok &= asprintf(&argv[3], "%s/%s", inner_workspace, CODE_RETURN_FILE) >= 0;
        if (!ok) {
                for (int i = 0; i < 4; i++)
                        free(argv[i]);
                free(argv);
                return bc_error_set(err, BC_SANDBOX_SETUP, ENOMEM, "out of memory");
        }
        *ret_argv = argv;
        return 0;
}
