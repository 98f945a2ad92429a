#!/usr/bin/env python3
"""A stand-in for systemd's notification socket (sd_notify(3)): binds a unix
datagram socket at PATH and appends each message received to OUT, one line
per message: milliseconds since start, a tab, the message with its
newlines shown as '|'.  Runs until killed.

usage: notify_listen.py PATH OUT
"""
import os
import socket
import sys
import time

path, out = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
t0 = time.monotonic()
with open(out, "a", buffering=1) as f:
    f.write("# listening\n")
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        f.write("%d\t%s\n" % ((time.monotonic() - t0) * 1000, msg.replace("\n", "|")))
