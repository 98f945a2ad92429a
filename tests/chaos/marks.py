#!/usr/bin/env python3
"""The mark collector of the sandboxed chaos run (chaos.sh, CHAOS_SANDBOX),
also the security suite's for bytes a job sends just before it exits.

A sandboxed job cannot append to a file outside its sandbox, so it sends
its key over TCP instead, through its network allow-list (the worker's
egress proxy) to this server, which appends every newline-terminated line
it receives to FILE: one line per command run, as the unsandboxed run's
`echo $K >> $M` gives.  A line cut short by a kill is dropped, never
counted as another key.

    marks.py FILE PORT_FILE     (writes the port it listens on to PORT_FILE)
"""
import os
import socketserver
import sys
import threading

path, port_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
out = open(path, "ab", buffering=0)


class Marks(socketserver.StreamRequestHandler):
    def handle(self):
        data = self.rfile.read()
        whole = data[: data.rfind(b"\n") + 1]
        if whole:
            with lock:
                out.write(whole)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Many jobs send their marks at once, and on a loaded host this
    # process may not run for a while: with socketserver's queue of 5 the
    # kernel dropped the rest's SYNs, and a SYN retried after 1 s and 3 s
    # outlived the 2 s a sandbox's proxy still forwards once its job has
    # exited, so a job's mark was lost though its command ran.
    request_queue_size = 512


server = Server(("127.0.0.1", 0), Marks)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
