# The client of scripts/work-per-request.sh: N_PER requests on each of CONC threads through
# the proxy, by PATH (https-new, https-keep, http-new); prints a summary line with errors.
#
#   client.py PROXY_PORT ORIGIN_PORT CA_PEM N_PER CONC [PATH]
import socket
import ssl
import sys
import threading
import time

proxy_port, origin_port, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n_per, conc = int(sys.argv[4]), int(sys.argv[5])
path = sys.argv[6] if len(sys.argv) > 6 else "https-new"
tls = ssl.create_default_context(cafile=ca)
tls.check_hostname = False


def read_to_close(sock):
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    assert b" 200 " in data[:20], data[:100]


def tunnel():
    """A CONNECT tunnel to the origin through the proxy, answered 200."""
    sock = socket.create_connection(("127.0.0.1", proxy_port))
    target = f"localhost:{origin_port}"
    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def http_new(state):
    sock = socket.create_connection(("127.0.0.1", proxy_port))
    host = f"127.0.0.1:{origin_port}"
    sock.sendall(
        f"GET http://{host}/x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    )
    read_to_close(sock)
    sock.close()


def https_new(state):
    # The last connection's session is offered again, as HTTP clients' TLS stacks do.
    conn = tls.wrap_socket(tunnel(), server_hostname="localhost", session=state.get("session"))
    host = f"localhost:{origin_port}"
    conn.sendall(f"GET /x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    read_to_close(conn)
    state["session"] = conn.session
    state["resumed"] = state.get("resumed", 0) + conn.session_reused
    conn.close()


def https_keep(state):
    if "file" not in state:
        conn = tls.wrap_socket(tunnel(), server_hostname="localhost")
        state["conn"], state["file"] = conn, conn.makefile("rb")
    conn, f = state["conn"], state["file"]
    conn.sendall(f"GET /x HTTP/1.1\r\nHost: localhost:{origin_port}\r\n\r\n".encode())
    status = f.readline()
    assert b" 200 " in status, status
    length = 0
    while (line := f.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    f.read(length)


one = {"http-new": http_new, "https-new": https_new, "https-keep": https_keep}[path]
errors = []
resumed = []


def worker():
    state = {}
    for _ in range(n_per):
        try:
            one(state)
        except Exception as e:  # counted and shown: a run with errors is not a measurement
            errors.append(repr(e))
    resumed.append(state.get("resumed", 0))


threads = [threading.Thread(target=worker) for _ in range(conc)]
start = time.time()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.time() - start
print(
    f"{n_per * conc} requests in {elapsed:.2f}s errors={len(errors)} resumed={sum(resumed)} "
    f"{errors[:2]}"
)
