#!/usr/bin/env python3
"""Runs a command with its stdout and its stderr each on a pseudo-terminal
of its own (raw mode: the terminal driver adds no CR to a newline) and
saves what each received, byte for byte.

usage: on_tty.py OUT_FILE ERR_FILE CMD [ARG...]

Exits with the command's status.
"""
import os
import select
import subprocess
import sys
import tty

out_file, err_file, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
masters, slaves = [], []
for _ in range(2):
    m, s = os.openpty()
    tty.setraw(s)
    masters.append(m)
    slaves.append(s)
proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slaves[0], stderr=slaves[1])
for s in slaves:
    os.close(s)
got = {m: b"" for m in masters}
open_ = set(masters)
while open_:
    ready, _, _ = select.select(list(open_), [], [], 60)
    if not ready:
        break
    for m in ready:
        try:
            data = os.read(m, 65536)
        except OSError:  # EIO: the last writer closed the terminal
            data = b""
        if data:
            got[m] += data
        else:
            open_.discard(m)
rc = proc.wait()
with open(out_file, "wb") as f:
    f.write(got[masters[0]])
with open(err_file, "wb") as f:
    f.write(got[masters[1]])
sys.exit(rc)
