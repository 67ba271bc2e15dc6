#!/usr/bin/env python3
"""Raw TCP bandwidth over one connection (run_netns_test.sh's baseline).

  tcp_bw.py recv <ip> <port>            listens, prints "listening" (the script
                                        starts the sender on that line), accepts
                                        one connection, reads to EOF, answers
                                        one byte
  tcp_bw.py send <ip> <port> <mib>      connects, sends <mib> MiB,
                                        waits for the byte; prints
                                        "tcp_seconds <s> bytes <n>"
"""
import socket
import sys
import time


def recv(ip, port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((ip, port))
    srv.listen(1)
    print("listening", flush=True)
    srv.settimeout(30)
    conn, _ = srv.accept()
    conn.settimeout(60)
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    while conn.recv_into(view):
        pass
    conn.sendall(b"k")
    conn.close()
    srv.close()


def send(ip, port, mib):
    s = socket.create_connection((ip, port), timeout=5)
    s.settimeout(60)
    block = bytes(4 << 20)
    total = mib << 20
    t0 = time.monotonic()
    sent = 0
    while sent < total:
        s.sendall(block)
        sent += len(block)
    s.shutdown(socket.SHUT_WR)
    if s.recv(1) != b"k":
        sys.exit("tcp_bw: no acknowledgement from the receiver")
    took = time.monotonic() - t0
    s.close()
    print("tcp_seconds %.6f bytes %d" % (took, total))


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
