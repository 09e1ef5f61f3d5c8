"""A fault-injecting HTTP/1.1 reverse proxy for tests and benchmarks (stdlib only).

    with FaultProxy(upstream="http://127.0.0.1:9000", latency_ms=20, error_rate=0.1,
                    cut_rate=0.1, stall_rate=0.0, seed=0) as p:
        client_endpoint = p.url      # http://127.0.0.1:<port>
        ...
        p.counts                     # {"requests": .., "forwarded": .., "errors": .., ...}

Per request, decided with one seeded RNG (the decisions are reproducible for
a given order of requests): a stall (the request is read, then nothing is
sent until the client gives up or the proxy stops), a 503 answer (with
Connection: close), or the request forwarded upstream; a forwarded answer
may be cut (the connection to the client closed) after a random number of
its body bytes, and its first byte is held back latency_ms.

Signed requests (S3 SigV4, GCS): the proxy forwards the request's bytes
unchanged, Host header included. The client signs for the host it talks to,
which is the proxy's host:port; the upstream then verifies the signature
against the Host header it receives, which is the same, so the signature
holds. Give the client the proxy's URL as its endpoint and the upstream
nothing else to check (moto_server and weed accept any Host; a store that
routes virtual-hosted buckets by Host needs path-style requests).

Each client connection is served by a thread, with a new upstream connection
per request (answers are framed by Content-Length or chunked encoding, read
to the end, so keep-alive to the client works)."""
import random
import select
import socket
import threading
import urllib.parse

__all__ = ["FaultProxy"]

_NO_BODY_STATUSES = (204, 304)


class _Closed(Exception):
    pass


class _Conn:
    """A socket with a read buffer: lines, exact reads, and what remains."""

    def __init__(self, sock, stop):
        self.sock = sock
        self.buf = b""
        self.stop = stop

    def _fill(self):
        while True:
            if self.stop.is_set():
                raise _Closed()
            ready, _, _ = select.select([self.sock], [], [], 0.2)
            if ready:
                break
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            raise _Closed()
        self.buf += data

    def until(self, marker):
        while marker not in self.buf:
            self._fill()
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def some(self, limit):
        if not self.buf:
            self._fill()
        out, self.buf = self.buf[:limit], self.buf[limit:]
        return out


def _header(head, name):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name:
            return v.strip()
    return None


class FaultProxy:
    def __init__(self, upstream, latency_ms=0, error_rate=0.0, cut_rate=0.0, stall_rate=0.0,
                 seed=0, host="127.0.0.1", port=0):
        u = urllib.parse.urlsplit(upstream)
        self.upstream = (u.hostname, u.port or 80)
        self.latency_ms = latency_ms
        self.error_rate = error_rate
        self.cut_rate = cut_rate
        self.stall_rate = stall_rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self._clients = set()
        self.counts = {"requests": 0, "forwarded": 0, "errors": 0, "cuts": 0, "stalls": 0}
        self._listener = socket.create_server((host, port))
        self.url = "http://%s:%d" % (host, self._listener.getsockname()[1])

    # -- life ------------------------------------------------------------
    def start(self):
        t = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        self._listener.close()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in list(self._threads):
            t.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _count(self, key):
        with self._lock:
            self.counts[key] += 1

    def _decide(self):
        with self._lock:
            r = self._rng.random()
            cut = self._rng.random() < self.cut_rate
            cut_fraction = self._rng.random()
        if r < self.stall_rate:
            return "stall", None
        if r < self.stall_rate + self.error_rate:
            return "error", None
        return "forward", cut_fraction if cut else None

    def _accept(self):
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._listener], [], [], 0.2)
                if not ready:
                    continue
                sock, _ = self._listener.accept()
            except OSError:
                return
            # As the stores behind it do (Go's net/http, object stores' front
            # ends): without it, Nagle holds an answer's last small segment
            # for the client's delayed ACK (40 ms) on a kept-alive connection.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._clients.add(sock)
            t = threading.Thread(target=self._serve, args=(sock,), name="fault-proxy-conn",
                                 daemon=True)
            t.start()
            self._threads = [x for x in self._threads if x.is_alive()] + [t]

    # -- one client connection ---------------------------------------------
    def _serve(self, sock):
        client = _Conn(sock, self._stop)
        try:
            while not self._stop.is_set():
                head = client.until(b"\r\n\r\n")
                length = int(_header(head, b"content-length") or 0)
                body = client.exact(length) if length else b""
                self._count("requests")
                action, cut_fraction = self._decide()
                if action == "stall":
                    self._count("stalls")
                    while not self._stop.is_set():  # until the client hangs up
                        client.some(1 << 16)
                    return
                if action == "error":
                    self._count("errors")
                    msg = b"injected fault"
                    sock.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n"
                                 b"Connection: close\r\n\r\n%s" % (len(msg), msg))
                    return
                self._count("forwarded")
                if not self._forward(sock, head, body, cut_fraction):
                    return
        except (_Closed, OSError):
            pass
        finally:
            with self._lock:
                self._clients.discard(sock)
            sock.close()

    def _forward(self, sock, head, body, cut_fraction):
        """Relay one exchange; False when the client connection must close."""
        method = head.split(b" ", 1)[0].upper()
        up_sock = socket.create_connection(self.upstream, timeout=30)
        up_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            up_sock.sendall(head + body)
            up = _Conn(up_sock, self._stop)
            rhead = up.until(b"\r\n\r\n")
            status = int(rhead.split(b" ", 2)[1])
            if self.latency_ms:
                self._stop.wait(self.latency_ms / 1000)
            chunked = (_header(rhead, b"transfer-encoding") or b"").lower() == b"chunked"
            length = _header(rhead, b"content-length")
            no_body = method == b"HEAD" or status in _NO_BODY_STATUSES or 100 <= status < 200
            total = 0 if no_body else (int(length) if length is not None and not chunked else None)
            cut_at = None
            if cut_fraction is not None and total:
                cut_at = int(total * cut_fraction)
            sock.sendall(rhead)
            if no_body:
                return True
            if chunked:
                while True:
                    size_line = up.until(b"\r\n")
                    size = int(size_line.split(b";")[0], 16)
                    sock.sendall(size_line + up.exact(size + 2))
                    if size == 0:
                        return True
            if total is None:  # to the upstream's close
                try:
                    while True:
                        sock.sendall(up.some(1 << 16))
                except _Closed:
                    return False
            sent = 0
            while sent < total:
                chunk = up.some(min(1 << 16, total - sent))
                if cut_at is not None and sent + len(chunk) >= cut_at:
                    sock.sendall(chunk[:cut_at - sent])
                    self._count("cuts")
                    sock.shutdown(socket.SHUT_RDWR)
                    return False
                sock.sendall(chunk)
                sent += len(chunk)
            return (_header(head, b"connection") or b"").lower() != b"close"
        finally:
            up_sock.close()
