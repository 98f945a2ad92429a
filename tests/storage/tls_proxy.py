#!/usr/bin/env python3
"""A TLS-terminating TCP proxy for tests/storage/aws_settings.sh: it
accepts TLS on --port with --cert/--key (a certificate signed by the test's
own CA) and passes the plain bytes both ways to --upstream HOST:PORT (the
signature-checking S3 proxy), so boxcar's AWS_CA_BUNDLE is checked against
a real TLS handshake.  Python's ssl module, nothing else.

  tls_proxy.py --port P --cert server.pem --key server.key --upstream 127.0.0.1:PORT
"""
import argparse
import socket
import ssl
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, ctx, upstream):
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        conn.close()  # the client refused our certificate: the test's point
        return
    host, port = upstream.rsplit(":", 1)
    try:
        up = socket.create_connection((host, int(port)))
    except OSError:
        tls.close()
        return
    threading.Thread(target=pipe, args=(up, tls), daemon=True).start()
    pipe(tls, up)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--upstream", required=True)
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", a.port))
    ls.listen(64)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(conn, ctx, a.upstream), daemon=True).start()


if __name__ == "__main__":
    main()
