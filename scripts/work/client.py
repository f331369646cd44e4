# The client of scripts/work-per-request.sh: N_PER requests on each of CONC threads through
# the proxy, by PATH (https-new, https-keep, http-new); prints a summary line with errors.
import socket, ssl, sys, threading, time
proxy_port, origin_port, ca, n_per, conc = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
mode = sys.argv[6] if len(sys.argv) > 6 else "https-new"
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False
errs = []
def one(st):
    if mode == "http-new":
        s = socket.create_connection(("127.0.0.1", proxy_port))
        s.sendall(f"GET http://127.0.0.1:{origin_port}/x HTTP/1.1\r\nHost: 127.0.0.1:{origin_port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            d = s.recv(65536)
            if not d: break
            data += d
        assert b" 200 " in data[:20], data[:100]
        s.close()
        return
    if mode == "https-keep":
        if "t" not in st:
            s = socket.create_connection(("127.0.0.1", proxy_port))
            s.sendall(f"CONNECT localhost:{origin_port} HTTP/1.1\r\nHost: localhost:{origin_port}\r\n\r\n".encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += s.recv(4096)
            st["t"] = ctx.wrap_socket(s, server_hostname="localhost")
            st["f"] = st["t"].makefile("rb")
        t, f = st["t"], st["f"]
        t.sendall(f"GET /x HTTP/1.1\r\nHost: localhost:{origin_port}\r\n\r\n".encode())
        line = f.readline(); assert b" 200 " in line, line
        n = 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b""): break
            if h.lower().startswith(b"content-length:"): n = int(h.split(b":")[1])
        f.read(n)
        return
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(f"CONNECT localhost:{origin_port} HTTP/1.1\r\nHost: localhost:{origin_port}\r\n\r\n".encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    assert buf.startswith(b"HTTP/1.1 200"), buf
    t = ctx.wrap_socket(s, server_hostname="localhost", session=st.get("s"))
    t.sendall(f"GET /x HTTP/1.1\r\nHost: localhost:{origin_port}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        d = t.recv(65536)
        if not d: break
        data += d
    assert b" 200 " in data[:20], data[:100]
    st["s"] = t.session; st["r"] = st.get("r", 0) + t.session_reused
    t.close()
reused = []
def worker():
    st = {}
    for _ in range(n_per):
        try: one(st)
        except Exception as e: errs.append(repr(e))
    reused.append(st.get("r", 0))
ts = [threading.Thread(target=worker) for _ in range(conc)]
t0 = time.time()
[t.start() for t in ts]; [t.join() for t in ts]
print(f"{n_per*conc} requests in {time.time()-t0:.2f}s errors={len(errs)} reused={sum(reused)} {errs[:2]}")
