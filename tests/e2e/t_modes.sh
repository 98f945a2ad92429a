# Code mode in Python, Node and bash; startup scripts with dedup; workdir.
source "$(dirname "$0")/../lib.sh"
eval "$("$BOXCAR_ROOT/scripts/s3.sh" start)"
export BOXCAR_S3_PREFIX="modes-$$"
fresh_db e2e_modes
start_worker modes-w --concurrency 4 --lease 10s --poll-interval 500ms --sandbox "$E2E_SANDBOX"
run() { local id; id=$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])))' "$1" | "$BOXCAR" enqueue --spec -); "$BOXCAR" status --wait "$id" >/dev/null; echo "$id"; }

py=$(run '{"code": {"language": "python", "source": "import os\ndef main(a, b):\n    return {\"sum\": a + b, \"cwd\": os.getcwd()}", "arguments": {"a": 2, "b": 40}}}')
is "python: main(**arguments) returns JSON" "$(job_field $py "status || ' ' || (result->'return_value'->>'sum') || ' ' || (result->'return_value'->>'cwd')")" "succeeded 42 /workspace"
pyasync=$(run '{"code": {"language": "python", "source": "import asyncio\nasync def main(n):\n    await asyncio.sleep(0)\n    return [n] * 2", "arguments": {"n": "x"}}}')
is "python: an async main is awaited" "$(job_field $pyasync "result->>'return_value'")" '["x", "x"]'
pyexc=$(run '{"code": {"language": "python", "source": "def main():\n    raise ValueError(\"boom\")"}}')
is "python: an exception fails the job" "$(job_field $pyexc "status || ' ' || (error->>'code')")" "failed NONZERO_EXIT"
check "with the traceback on stderr" bash -c "psql -XqtA '$DATABASE_URL' -c \"select result->>'stderr' from boxcar.jobs where id = '$pyexc'\" | grep -q 'Traceback.*' && psql -XqtA '$DATABASE_URL' -c \"select result->>'stderr' from boxcar.jobs where id = '$pyexc'\" | grep -q 'ValueError: boom'"
pynomain=$(run '{"code": {"language": "python", "source": "x = 1"}}')
is "python: no main() is reported" "$(job_field $pynomain "status || ' ' || (result->>'stderr' like '%defines no main%')")" "failed true"
pyset=$(run '{"code": {"language": "python", "source": "def main():\n    return {1, 2}"}}')
is "python: a non-JSON return value is reported" "$(job_field $pyset "status || ' ' || (result->>'stderr' like '%not JSON%')")" "failed true"

node=$(run '{"code": {"language": "node", "source": "function main(args) { return {sum: args.a + args.b, argv: process.argv.length}; }", "arguments": {"a": 1, "b": 2}}}')
is "node: main(arguments) returns JSON" "$(job_field $node "status || ' ' || (result->'return_value'->>'sum')")" "succeeded 3"
nodeasync=$(run '{"code": {"language": "node", "source": "module.exports.main = async (a) => { await new Promise(r => setTimeout(r, 10)); return a.s.toUpperCase(); };", "arguments": {"s": "hi"}}}')
is "node: an exported async main is awaited" "$(job_field $nodeasync "result->'return_value'")" '"HI"'
nodeexc=$(run '{"code": {"language": "node", "source": "function main() { throw new Error(\"kaput\"); }"}}')
is "node: an exception fails the job with its stack" "$(job_field $nodeexc "status || ' ' || (result->>'stderr' like '%Error: kaput%')")" "failed true"
nodebig=$(run '{"code": {"language": "node", "source": "function main() { return 10n; }"}}')
is "node: a non-JSON return value is reported" "$(job_field $nodebig "status || ' ' || (result->>'stderr' like '%not JSON%')")" "failed true"

bash_ok=$(run '{"code": {"language": "bash", "source": "main() { n=$(echo \"$1\" | sed -E \"s/.*\\\"n\\\": ?([0-9]+).*/\\\\1/\"); echo \"{\\\"double\\\": $((n * 2))}\" >&3; echo log line; }", "arguments": {"n": 21}}}')
is "bash: main gets the arguments as \$1 and returns JSON on fd 3" "$(job_field $bash_ok "status || ' ' || (result->'return_value'->>'double') || ' ' || (result->>'stdout')")" "succeeded 42 log line"
bash_bad=$(run '{"code": {"language": "bash", "source": "main() { echo not-json >&3; }"}}')
is "bash: a non-JSON return value fails the job" "$(job_field $bash_bad "status || ' ' || (error->>'message')")" "failed main() returned a value that is not JSON"

# Startup scripts: own outcome, dedup by sha256 on the same artifact.
s1=$(run '{"script": "cat setup.log", "startup_script": "echo installed >> setup.log", "artifact": {"storage": "agent-1"}}')
is "the startup script runs before the command" "$(job_field $s1 "status || ' ' || (result->'startup'->>'skipped') || ' ' || (result->'startup'->>'exit_code') || ' ' || (result->>'stdout')")" "succeeded false 0 installed"
s2=$(run '{"script": "cat setup.log", "startup_script": "echo installed >> setup.log", "artifact": {"storage": "agent-1"}}')
is "an unchanged startup script is skipped on the same artifact" "$(job_field $s2 "(result->'startup'->>'skipped') || ' ' || (result->>'stdout')")" "true installed"
s3=$(run '{"script": "cat setup.log", "startup_script": "echo v2 >> setup.log", "artifact": {"storage": "agent-1"}}')
is "a changed startup script runs again" "$(job_field $s3 "(result->'startup'->>'skipped') || ' ' || (result->>'stdout')")" "false installed
v2"
sfail=$(run '{"command": ["echo", "main ran"], "startup_script": "echo oops >&2; exit 3"}')
is "a failing startup script is reported and does not stop the command" "$(job_field $sfail "status || ' ' || (result->'startup'->>'exit_code') || ' ' || (result->'startup'->>'stderr') || (result->>'stdout')")" "succeeded 3 oops
main ran"
stime=$(run '{"command": ["true"], "startup_script": "sleep 30", "startup_timeout_s": 1}')
is "the startup script has its own timeout" "$(job_field $stime "status || ' ' || (result->'startup'->>'timed_out')")" "succeeded true"
is "its outcome is in the audit trail" "$(sql "select count(*) from boxcar.job_events where job_id = '$stime' and kind = 'startup_done'")" "1"

# Retry policy: the job's own failures are final unless retry.on names them.
rid=$(echo '{"command": ["sh", "-c", "exit 5"], "retry": {"on": ["NONZERO_EXIT"]}}' | "$BOXCAR" enqueue --max-attempts 2 --spec -)
"$BOXCAR" status --wait "$rid" >/dev/null
is "retry.on NONZERO_EXIT retries a failing command up to max_attempts" "$(job_field $rid "status || ' ' || attempts || ' ' || (error->>'code')")" "failed 2 NONZERO_EXIT"
is "each retry is in the audit trail" "$(sql "select count(*) from boxcar.job_events where job_id = '$rid' and kind = 'retried'")" "1"
tid=$(echo '{"command": ["sleep", "10"], "limits": {"timeout_s": 1}, "retry": {"on": ["NONZERO_EXIT"]}}' | "$BOXCAR" enqueue --max-attempts 3 --spec -)
"$BOXCAR" status --wait "$tid" >/dev/null
is "a TIMEOUT not named in retry.on is final" "$(job_field $tid "status || ' ' || attempts || ' ' || (error->>'code')")" "failed 1 TIMEOUT"

wd=$(run '{"script": "pwd", "workdir": "/workspace/src/app"}')
is "workdir is created and entered" "$(job_field $wd "result->>'stdout'")" "/workspace/src/app"
tap_done
