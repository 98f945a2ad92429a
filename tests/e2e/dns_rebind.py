#!/usr/bin/env python3
"""A DNS server for the URL guard's rebinding test (stdlib only, UDP).

usage: dns_rebind.py BIND_ADDR NAME FIRST_A LATER_A LOG READY

Answers A queries for NAME with FIRST_A the first time and LATER_A every
time after (TTL 0: nothing may cache it), the classic DNS rebinding
attacker; AAAA queries for NAME get no answer (NOERROR), anything else is
NXDOMAIN.  Appends "A <address>" to LOG for every A answer given; creates
READY once it listens.
"""
import socket
import struct
import sys

bind, name, first, later, log, ready = sys.argv[1:7]
want = name.lower().rstrip(".")


def qname(msg, off):
    labels = []
    while True:
        n = msg[off]
        off += 1
        if n == 0:
            return ".".join(labels).lower(), off
        labels.append(msg[off:off + n].decode("ascii", "replace"))
        off += n


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((bind, 53))
    open(ready, "w").close()
    answered = 0
    while True:
        msg, peer = s.recvfrom(512)
        if len(msg) < 12:
            continue
        qid, _flags, qd = struct.unpack("!HHH", msg[:6])
        if qd != 1:
            continue
        try:
            q, off = qname(msg, 12)
            qtype, _qclass = struct.unpack("!HH", msg[off:off + 4])
        except (IndexError, struct.error):
            continue
        question = msg[12:off + 4]
        rcode, answers = 0, b""
        if q != want:
            rcode = 3
        elif qtype == 1:
            addr = first if answered == 0 else later
            answered += 1
            answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(addr)
            with open(log, "a") as f:
                f.write(f"A {addr}\n")
        header = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, 1 if answers else 0, 0, 0)
        s.sendto(header + question + answers, peer)


if __name__ == "__main__":
    main()
