#!/usr/bin/env bash
# Writes the man pages of the three executables, from their own help texts
# (so the pages cannot disagree with `boxcar help`), into DIR:
#   scripts/man.sh BUILD_DIR OUT_DIR VERSION
set -euo pipefail
build=$1 out=$2 version=$3
mkdir -p "$out"
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)

# roff-escape a help text: backslashes, and lines starting with . or '.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

page() {  # page NAME SUMMARY SECTION-TEXT...
  local name=$1 summary=$2; shift 2
  {
    printf '.TH %s 1 "%s" "boxcar %s" "User Commands"\n' "${name^^}" "$date" "$version"
    printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
    while [[ $# -gt 0 ]]; do
      printf '.SH %s\n' "$1"
      if [[ $2 == :nf:* ]]; then
        printf '.nf\n'; printf '%s\n' "${2#:nf:}" | esc; printf '.fi\n'
      else
        printf '%s\n' "$2"   # roff already
      fi
      shift 2
    done
  } > "$out/$name.1"
}

cmds=$("$build/boxcar" --help)
all=""
for c in $(sed -n 's/^  \([a-z]*\) .*/\1/p' <<<"${cmds#*Commands:}"); do
  [[ $c == help ]] && continue
  all+=$'\n'"$("$build/boxcar" help "$c")"$'\n'
done
page boxcar "a PostgreSQL job queue worker that runs jobs in sandboxes" \
  DESCRIPTION ":nf:$cmds" \
  COMMANDS ":nf:$all" \
  DEPLOYMENT "The Debian package installs the boxcar-worker.service systemd unit, \
/etc/boxcar/worker.conf (settings, see boxcar help worker) and \
/etc/boxcar/worker.env (secrets: DATABASE_URL, AWS_ACCESS_KEY_ID, \
AWS_SECRET_ACCESS_KEY, BOXCAR_WEBHOOK_SECRET).  To deploy: fill in both files; \
run \\fBboxcar migrate\\fR once per release before the workers start (the unit \
also runs it as ExecStartPre; it is idempotent and takes an advisory lock); \
then \\fBsystemctl enable \\-\\-now boxcar-worker\\fR.  SIGTERM drains." \
  FILES ":nf:/etc/boxcar/worker.conf
/etc/boxcar/worker.env
/lib/systemd/system/boxcar-worker.service
/var/lib/boxcar/work" \
  "SEE ALSO" "boxcar-sandbox(1), boxcar-guard(1), /usr/share/doc/boxcar/README.md.gz"

page boxcar-sandbox "run a command in an isolated sandbox (the helper of boxcar worker)" \
  DESCRIPTION ":nf:$("$build/boxcar-sandbox" --help)" \
  "SEE ALSO" "boxcar(1)"

page boxcar-session-agent "runs a session's jobs inside its sandbox (the helper of boxcar worker)" \
  SYNOPSIS "boxcar-session-agent SOCKET_PATH [WORKSPACE]" \
  DESCRIPTION "An internal program: boxcar worker copies it into a live \
session's sandbox and runs it there for the session's life.  It connects to \
the worker's socket at SOCKET_PATH and runs each of the session's jobs: \
commands in their own process group, file operations inside the sandbox's \
root, and code in one kept interpreter per language \
(/usr/share/doc/boxcar/sessions.md.gz).  It exits when the worker closes the \
connection.  It is not meant to be run by hand." \
  "SEE ALSO" "boxcar(1), boxcar-sandbox(1)"

page boxcar-guard "the guard process of a boxcar job run with --sandbox none" \
  SYNOPSIS "boxcar-guard WORKER_PID PASS_FD CWD PATH ARGV0 [ARGS...]" \
  DESCRIPTION "An internal program: boxcar worker starts one per job under \
--sandbox none.  It runs the job in its own process group and kills that \
group when the worker dies.  It is not meant to be run by hand (exit status \
125 on a usage error)." \
  "SEE ALSO" "boxcar(1)"
