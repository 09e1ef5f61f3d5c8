"""The HTTP client (csrc/io/http.c, http_stream.c) and the http(s):// scheme
(csrc/io/fs_http.c), driven from C by tests/c/http_test.c against real
servers on loopback: a ThreadingHTTPServer serving test bytes with Range
support, and tests/fault_proxy.py in front of it (503s, cut bodies, stalls,
latency). The program is built against the engine's sources as
tests/test_engine_c.py builds its programs (with ThreadSanitizer in
test_under_thread_sanitizer)."""
import contextlib
import email.utils
import hashlib
import http.server
import os
import pathlib
import random
import re
import shutil
import subprocess
import threading

import pytest

from fault_proxy import FaultProxy

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
PROGRAM = ROOT / "tests" / "c" / "http_test.c"
DATA = random.Random(0).randbytes(20 << 20)
SMALL = random.Random(1).randbytes(3 << 20)

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("pkg-config") is None,
                                reason="needs gcc and pkg-config")


# ---- the program -------------------------------------------------------------

def _build(sanitizer):
    """The http_test binary against the engine's objects (kept in build/ctest/)."""
    import test_engine_c as tec
    saved = os.environ.get("CV_SANITIZE")
    try:
        if sanitizer:
            os.environ["CV_SANITIZE"] = sanitizer
        cflags, ldflags = tec._flags()
    finally:
        if saved is None:
            os.environ.pop("CV_SANITIZE", None)
        else:
            os.environ["CV_SANITIZE"] = saved
    key = hashlib.sha256(" ".join(cflags).encode()).hexdigest()[:12]
    out = ROOT / "build" / "ctest" / key
    out.mkdir(parents=True, exist_ok=True)
    env = tec._compiler_env()
    newest_header = max(p.stat().st_mtime for p in CSRC.rglob("*.h"))
    objects = []
    for layer in tec.ENGINE_LAYERS:
        for src in sorted((CSRC / layer).rglob("*.c")):
            obj = out / (str(src.relative_to(CSRC)).replace("/", "__") + ".o")
            if not (obj.exists() and obj.stat().st_mtime > max(src.stat().st_mtime, newest_header)):
                proc = subprocess.run(["gcc", *cflags, "-c", str(src), "-o", str(obj)],
                                      capture_output=True, text=True, env=env)
                assert proc.returncode == 0, proc.stderr
            objects.append(str(obj))
    binary = out / ("http_test" + ("_" + sanitizer if sanitizer else ""))
    proc = subprocess.run(["gcc", *cflags, str(PROGRAM), *objects, "-o", str(binary), *ldflags],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return binary


@pytest.fixture(scope="module")
def program():
    return _build("thread" if os.environ.get("CV_SANITIZE") == "thread" else None)


def run(binary, *args, timeout=120, **env):
    """Run the program; its "key value" lines as a dict (and "error": (code, message))."""
    full_env = dict(os.environ)
    full_env.pop("LD_PRELOAD", None)
    full_env.update({"CONVEYOR_HTTP_BACKOFF_MS": "1", "CONVEYOR_HTTP_ATTEMPTS": "6"})
    full_env.update({k: str(v) for k, v in env.items()})
    full_env.setdefault("TSAN_OPTIONS", f"halt_on_error=1 suppressions={ROOT / '.ci' / 'tsan.supp'}")
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = {"stdout": proc.stdout}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "error":
            code, _, message = value.partition(" ")
            out["error"] = (code, message)
        else:
            out[key] = value
    return out


# ---- the server --------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except ConnectionError:  # the client (or the proxy) cut the connection
            self.close_connection = True

    def _object(self, body, etag, head=False):
        size = len(body)
        start, end, status = 0, size, 200
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if m:
            start = int(m.group(1))
            end = min(size, int(m.group(2)) + 1) if m.group(2) else size
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", email.utils.formatdate(1700000000, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if head:
            return
        try:
            for i in range(start, end, 1 << 18):
                self.wfile.write(body[i:min(end, i + (1 << 18))])
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _answer(self, status, body=b"", ctype="text/plain", close=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _route(self, head):
        srv = self.server
        with srv.lock:
            srv.hits[self.path] = srv.hits.get(self.path, 0) + 1
            hits = srv.hits[self.path]
        if self.path == "/obj/data":
            return self._object(DATA, '"data-v1"', head)
        if self.path == "/obj/small":
            return self._object(SMALL, '"small-v1"', head)
        if self.path == "/nohead/small":
            if head:
                return self._answer(405)
            return self._object(SMALL, '"small-v1"')
        if self.path == "/status/403":
            return self._answer(403, b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>"
                                b"<Message>Access Denied</Message></Error>", "application/xml")
        if self.path.startswith("/status/"):
            return self._answer(int(self.path[8:]), b"no")
        if self.path == "/flaky":  # two 503s (Retry-After: 0), then the object
            if hits <= 2:
                self.send_response(503)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self._object(SMALL, '"small-v1"', head)
        if self.path == "/changing":  # the first answer is cut mid-body; the object then changes
            if hits == 1:
                self.send_response(200)
                self.send_header("Content-Length", str(len(SMALL)))
                self.send_header("ETag", '"v1"')
                self.end_headers()
                self.wfile.write(SMALL[:len(SMALL) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            return self._object(SMALL[::-1], '"v2"', head)
        if self.path == "/stall":  # the request is read; no answer comes
            srv.stop.wait(60)
            self.close_connection = True
            return
        self._answer(404, b"{\"error\": {\"errors\": [{\"reason\": \"notFound\"}]}}", "application/json")

    def do_GET(self):
        self._route(False)

    def do_HEAD(self):
        self._route(True)


@contextlib.contextmanager
def serve():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.lock = threading.Lock()
    srv.hits = {}
    srv.stop = threading.Event()
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv, f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.stop.set()
        srv.shutdown()
        srv.server_close()
        t.join(timeout=10)


@pytest.fixture(scope="module")
def server():
    with serve() as s:
        yield s


# ---- the tests ---------------------------------------------------------------

def test_read_whole_object(program, server, tmp_path):
    _, url = server
    out = run(program, "read", url + "/obj/data", tmp_path / "out", 777777)
    assert "error" not in out, out
    assert out["size"] == str(len(DATA)) and out["version"] == '"data-v1"'
    assert out["mtime_ns"] == str(1700000000 * 10**9)
    assert (tmp_path / "out").read_bytes() == DATA
    assert out["bytes_in_flight"] == "0"


def test_read_through_cuts_and_503s_loses_no_byte(program, server, tmp_path):
    _, url = server
    with FaultProxy(upstream=url, latency_ms=5, error_rate=0.25, cut_rate=0.5, seed=7) as p:
        out = run(program, "read", p.url + "/obj/data", tmp_path / "out", 1 << 20,
                  CONVEYOR_HTTP_ATTEMPTS=30)
        counts = dict(p.counts)
    assert "error" not in out, out
    assert (tmp_path / "out").read_bytes() == DATA
    assert counts["cuts"] > 0 and counts["errors"] > 0, counts
    assert int(out["retries"]) >= counts["cuts"] + counts["errors"] - 1


def test_stream_signs_each_attempt_on_the_callers_thread(program, server, tmp_path):
    _, url = server
    with FaultProxy(upstream=url, cut_rate=0.5, seed=5) as p:
        out = run(program, "stream", p.url + "/obj/small", tmp_path / "out", CONVEYOR_HTTP_ATTEMPTS=30)
        counts = dict(p.counts)
    assert "error" not in out, out
    assert (tmp_path / "out").read_bytes() == SMALL
    assert int(out["signed"]) == counts["requests"] and out["signed_off_thread"] == "0"
    assert "secret-" not in out["stdout"]


def test_not_found(program, server):
    _, url = server
    out = run(program, "stat", url + "/obj/missing")
    assert out["error"][0] == "NOT_FOUND"
    assert out["error"][1].startswith(url + "/obj/missing: 404 Not Found")
    out = run(program, "read", url + "/obj/missing", "/dev/null")
    assert out["error"][0] == "NOT_FOUND"


def test_forbidden_names_the_credentials_source_never_the_credentials(program, server):
    _, url = server
    out = run(program, "get", url + "/status/403")
    assert out["error"] == ("PERMISSION_DENIED", f"{url}/status/403: 403 Forbidden (AccessDenied: "
                            "Access Denied; credentials from the test's keys)")
    assert out["attempts"] == "1" and "secret-" not in out["stdout"]


def test_persistent_503_is_unavailable_listing_the_attempts(program, server):
    _, url = server
    out = run(program, "get", url + "/status/503", CONVEYOR_HTTP_ATTEMPTS=4)
    assert out["error"] == ("UNAVAILABLE", f"{url}/status/503: the request failed after 4 attempts: "
                            + "; ".join(["503 Service Unavailable"] * 4))
    assert out["retries"] == "3" and out["signed"] == "4"


def test_retry_after_and_recovery(program, server):
    srv, url = server
    out = run(program, "get", url + "/flaky")
    assert out["status"] == "200" and out["attempts"] == "3" and out["retries"] == "2"
    assert out["body_size"] == str(len(SMALL))


def test_head_refused_falls_back_to_a_one_byte_get(program, server, tmp_path):
    _, url = server
    out = run(program, "read", url + "/nohead/small", tmp_path / "out")
    assert out["size"] == str(len(SMALL)) and out["version"] == '"small-v1"'
    assert (tmp_path / "out").read_bytes() == SMALL


def test_object_changed_during_a_resumed_read_is_data_loss(program, tmp_path):
    with serve() as (_, url):
        out = run(program, "stream", url + "/changing", tmp_path / "out")
    assert out["error"][0] == "DATA_LOSS"
    assert "changed while being read" in out["error"][1] and url + "/changing" in out["error"][1]


def test_stalled_server_times_out_per_attempt(program, tmp_path):
    with serve() as (_, url):
        out = run(program, "stream", url + "/stall", tmp_path / "out",
                  CONVEYOR_HTTP_TIMEOUT_S=1, CONVEYOR_HTTP_ATTEMPTS=2)
    assert out["error"] == ("UNAVAILABLE", f"{url}/stall: the request failed after 2 attempts: "
                            "stalled; stalled")


@pytest.mark.parametrize("how,code", [("cancel", "CANCELLED"), ("interrupt", "INTERRUPTED")])
def test_giving_up_on_a_stalled_request_returns(program, how, code):
    # The stall timeout is far beyond the run's own timeout: only the
    # cancellation can end the read.
    with serve() as (_, url):
        with FaultProxy(upstream=url, stall_rate=1.0) as p:
            out = run(program, how, p.url + "/obj/small", timeout=60, CONVEYOR_HTTP_TIMEOUT_S=3600)
            assert p.counts["stalls"] >= 1
    assert out["error"][0] == code


def test_a_body_within_its_budget_share_arrives_before_its_reader(program, server):
    # 3 MiB, over the first window (1 MiB), under the share of the default
    # budget (4 MiB): received whole while nobody reads (an interleave's
    # future), not paused a window short until its reader comes.
    _, url = server
    with FaultProxy(upstream=url, latency_ms=5) as p:
        out = run(program, "ahead", p.url + "/obj/small", len(SMALL))
    assert "error" not in out, out
    assert out["received_before_read"] == str(len(SMALL))
    assert out["ok"] == str(len(SMALL))


def test_many_streams_progress_on_one_io_thread(program, server, tmp_path):
    _, url = server
    with FaultProxy(upstream=url, latency_ms=20, cut_rate=0.05, seed=7) as p:
        out = run(program, "many", p.url + "/obj/data", 32, len(DATA), tmp_path / "out",
                  CONVEYOR_HTTP_ATTEMPTS=30)
    assert "error" not in out, out
    assert out["io_threads"] == "1"
    assert int(out["max_requests_in_flight"]) > 1
    assert (tmp_path / "out").read_bytes() == DATA


def test_many_streams_within_a_small_io_budget(program, server, tmp_path):
    # 16 streams, at most 4 requests in flight and 2 MiB held ahead by all of
    # them: every stream still reaches its end, byte for byte.
    _, url = server
    out = run(program, "many", url + "/obj/data", 16, len(DATA), tmp_path / "out", 2 << 20, 4)
    assert "error" not in out, out
    assert 1 <= int(out["max_requests_in_flight"]) <= 4
    assert (tmp_path / "out").read_bytes() == DATA


def test_self_checks(program):
    out = run(program)
    assert out["stdout"].strip().endswith(", 0 failed")


@pytest.mark.skipif(os.environ.get("CV_SANITIZED") is not None and os.environ.get("CV_SANITIZE") != "thread",
                    reason="an ASan run builds its own programs")
def test_under_thread_sanitizer(server, tmp_path):
    binary = _build("thread")
    _, url = server
    run(binary)
    with FaultProxy(upstream=url, error_rate=0.1, cut_rate=0.3, seed=11) as p:
        out = run(binary, "many", p.url + "/obj/small", 8, len(SMALL), tmp_path / "out",
                  CONVEYOR_HTTP_ATTEMPTS=30, timeout=300)
    assert "error" not in out, out
    assert (tmp_path / "out").read_bytes() == SMALL
    out = run(binary, "cancel", url + "/status/503", CONVEYOR_HTTP_BACKOFF_MS=200,
              CONVEYOR_HTTP_ATTEMPTS=1000, timeout=300)
    assert out["error"][0] == "CANCELLED"
