# boxcar-session-agent's kept Python interpreter (agent/code.c), run as
# `python3 -u -c THIS`.  Requests come on fd 3: "<source bytes> <arguments
# bytes>\n", the source, the arguments (a JSON object).  Each source runs
# in one globals dict kept across requests; then, if it (re)defined a
# callable main, main(**arguments).  The answer goes to fd 4:
# "<status> <value bytes> <error bytes>\n", the value (JSON text), the
# error (a traceback); status 0 ok, 1 an exception.  The output the code
# printed is flushed before the answer is written, so the agent has it in
# its pipes when the answer arrives.
import json
import os
import sys
import traceback

VALUE_MAX = 4 * 1024 * 1024
ERROR_MAX = 64 * 1024


def _boxcar_agent():
    # Off fds 3 and 4, non-inheritable (PEP 446): the code's own
    # subprocesses never see the agent's pipes.
    rfd, wfd = os.dup(3), os.dup(4)
    os.close(3)
    os.close(4)
    buf = bytearray()

    def fill():
        chunk = os.read(rfd, 1 << 20)
        if not chunk:
            raise EOFError
        buf.extend(chunk)

    def take(n):
        while len(buf) < n:
            fill()
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def line():
        while b"\n" not in buf:
            fill()
        i = buf.index(b"\n")
        out = bytes(buf[:i])
        del buf[: i + 1]
        return out

    def answer(status, value, error):
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:
                pass
        v = value.encode("utf-8", "backslashreplace")
        e = error.encode("utf-8", "backslashreplace")
        if len(v) > VALUE_MAX:
            status, v = 1, b"null"
            e = b"main() returned %d bytes of JSON, more than %d" % (len(value), VALUE_MAX)
        if len(e) > ERROR_MAX:
            e = b"...\n" + e[-ERROR_MAX:]
        data = b"%d %d %d\n" % (status, len(v), len(e)) + v + e
        while data:
            data = data[os.write(wfd, data):]

    g = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        try:
            slen, alen = (int(x) for x in line().split())
            source = take(slen).decode("utf-8", "surrogateescape")
            arguments = take(alen).decode("utf-8", "surrogateescape")
        except EOFError:
            return
        status, value, error = 0, "null", ""
        try:
            code = compile(source, "<code>", "exec", dont_inherit=True)
            before = g.get("main")
            exec(code, g)
            main = g.get("main")
            if callable(main) and main is not before:
                kwargs = json.loads(arguments) if arguments else {}
                if not isinstance(kwargs, dict):
                    raise TypeError("arguments: not a JSON object")
                result = main(**kwargs)
                try:
                    value = json.dumps(result, allow_nan=False)
                except (TypeError, ValueError, RecursionError) as e:
                    status, value = 1, "null"
                    error = "main() returned a value that is not JSON: %s" % e
        except Exception as e:
            # The wrapper's own frame (the exec or the call) is not the
            # code's: the traceback starts below it.
            status, value = 1, "null"
            error = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
        answer(status, value, error)


_boxcar_agent()
