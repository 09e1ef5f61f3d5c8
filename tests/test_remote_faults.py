"""Faults as object stores produce them, end to end through the Python API.

The stores are real servers started on loopback (tests/gcs_servers.py:
fake-gcs-server; tests/s3_servers.py: SeaweedFS, once s3:// is in the
tree), each behind tests/fault_proxy.py, and every result is compared
with the read of the same bytes from a local file:

- 503s and connections cut mid-body at a rate: TFRecordDataset (plain and
  interleaved in parallel), TextLineDataset, tf.io.gfile and read_file in a
  map give byte-identical results, no record lost or duplicated; the proxy
  counts the faults it injected (the engine does not publish its retry count
  to Python), so a run that saw none fails;
- persistent 503 -> UnavailableError naming the URL and listing each attempt;
  404 -> NotFoundError naming the URL; 403 -> PermissionDeniedError naming
  where the credentials came from, and no secret in the message, repr or
  traceback;
- a stalled response: dropping the iterator, and Ctrl-C while the main
  thread waits in next(), return (in a child process, so that a hang fails
  the test instead of wedging the run);
- resume mid-file from a remote object (it.save()/restore and
  tf.train.Checkpoint), the restored read a ranged GET from the saved offset;
- an object rewritten while being read -> DataLossError, never mixed bytes.

No time is asserted; every wait has a deadline."""
import contextlib
import gc
import itertools
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import traceback

import pytest

from fault_proxy import FaultProxy
from gcs_servers import FakeGcs, TokenServer, make_rsa_key, running, write_service_account_key

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
CHILD_TIMEOUT_S = 90
READY_TIMEOUT_S = 20
BUCKETS = itertools.count()

# Variables a store's client reads; cleared around every test.
STORE_VARIABLES = (
    "STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
    "GCE_METADATA_HOST", "CONVEYOR_GCS_ANONYMOUS", "CONVEYOR_GCS_ENDPOINT",
    "CONVEYOR_GCS_OAUTH_TOKEN_URI", "CONVEYOR_GCS_LIST_PAGE_SIZE",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
    "AWS_EC2_METADATA_DISABLED", "CONVEYOR_HTTP_ATTEMPTS", "CONVEYOR_HTTP_BACKOFF_MS",
    "CONVEYOR_HTTP_TIMEOUT_S")


def _cv():
    import conveyor
    return conveyor


# ---- the stores ---------------------------------------------------------------

class GcsStore:
    """A bucket in fake-gcs-server; the client is pointed at an endpoint with
    STORAGE_EMULATOR_HOST (as Google's own clients are)."""
    scheme = "gs"

    def __init__(self, server):
        self.server = server
        self.upstream = server.url
        self.bucket = server.bucket(f"faults-{next(BUCKETS)}")

    def put(self, name, data):
        self.server.put(self.bucket, name, data)

    def url(self, name):
        return f"gs://{self.bucket}/{name}"

    def client_env(self, endpoint):
        return {"STORAGE_EMULATOR_HOST": endpoint.split("://", 1)[1]}


def _s3_servers():
    """tests/s3_servers.py once s3:// has landed; None before."""
    try:
        import s3_servers
    except ImportError:
        return None
    return s3_servers


class S3Store:
    """A bucket in SeaweedFS (tests/s3_servers.py, signatures checked); the
    client is pointed at an endpoint with AWS_ENDPOINT_URL_S3 and the keys in
    the environment (the proxy forwards the signed bytes unchanged)."""
    scheme = "s3"

    def __init__(self, server):
        self.server = server
        self.upstream = server.endpoint
        self.bucket = f"faults-{next(BUCKETS)}"
        self._client = server.client()
        self._client.create_bucket(Bucket=self.bucket)

    def put(self, name, data):
        self._client.put_object(Bucket=self.bucket, Key=name, Body=data)

    def url(self, name):
        return f"s3://{self.bucket}/{name}"

    def client_env(self, endpoint):
        return {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": self.server.access_key,
                "AWS_SECRET_ACCESS_KEY": self.server.secret_key, "AWS_REGION": "us-east-1"}


STORES = ["gs", "s3"]


@pytest.fixture(scope="module", params=STORES)
def store(request):
    cv = _cv()
    if request.param == "gs":
        with running(FakeGcs) as server:
            s = GcsStore(server)
            _skip_unless_registered(cv, s)
            yield s
    else:
        s3_servers = _s3_servers()
        if s3_servers is None:
            pytest.skip("s3:// is not in this tree yet (tests/s3_servers.py)")
        server = s3_servers.start_seaweedfs()
        try:
            s = S3Store(server)
            _skip_unless_registered(cv, s)
            yield s
        finally:
            server.stop()


def _skip_unless_registered(cv, s):
    with environ(**s.client_env(s.upstream)):
        try:
            cv.io.gfile.exists(s.url("probe"))
        except cv.errors.UnimplementedError as e:
            pytest.skip(f"{s.scheme}:// is not registered in this build: {e}")


@contextlib.contextmanager
def environ(**values):
    """Set (value) or unset (None) variables; restore them after."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(autouse=True)
def clean_environment(tmp_path, monkeypatch):
    for name in STORE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no gcloud or AWS configuration of the machine's
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # never a real metadata server
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CONVEYOR_HTTP_BACKOFF_MS", "1")  # faults at a rate: short backoffs


@contextlib.contextmanager
def behind_proxy(store, proxy_cls=FaultProxy, **faults):
    """A fault proxy in front of the store, the client pointed at it."""
    with proxy_cls(upstream=store.upstream, **faults) as p:
        with environ(**store.client_env(p.url)):
            yield p


# ---- the data: local files and the same bytes in the bucket -------------------

def _records(seed, n):
    """Records of varied sizes (a few cross 64 KiB, the proxy's relay chunk)."""
    import random
    rng = random.Random(seed)
    out = []
    for i in range(n):
        size = rng.choice((1, 17, 300, 4000, 70000)) + rng.randrange(100)
        out.append((b"%d:%d:" % (seed, i)) + bytes(rng.randrange(256) for _ in range(64)) * (size // 64 + 1))
    return out


@pytest.fixture(scope="module")
def data(store, tmp_path_factory):
    """{"local": [paths], "urls": [urls], "text": (path, url), "records": [[bytes]]}."""
    cv = _cv()
    d = tmp_path_factory.mktemp(f"faults-{store.scheme}")
    local, urls, records = [], [], []
    for i in range(6):
        rs = _records(i, 60 + 10 * i)
        path = d / f"part-{i}.tfrecord"
        with cv.io.TFRecordWriter(str(path)) as w:
            for r in rs:
                w.write(r)
        store.put(f"data/part-{i}.tfrecord", path.read_bytes())
        local.append(str(path))
        urls.append(store.url(f"data/part-{i}.tfrecord"))
        records.append(rs)
    text = b"".join(b"line %d %s\n" % (i, b"x" * (i % 300)) for i in range(20000))
    (d / "lines.txt").write_bytes(text)
    store.put("data/lines.txt", text)
    return {"local": local, "urls": urls, "records": records,
            "text": (str(d / "lines.txt"), store.url("data/lines.txt"))}


def _values(ds):
    return [bytes(x) for x in ds.as_numpy_iterator()]


def read_everything(cv, files, text_file):
    """What each reader gives for these files (local paths or URLs)."""
    Dataset = cv.data.Dataset
    out = {}
    out["tfrecord"] = _values(cv.data.TFRecordDataset(files))
    out["interleave"] = _values(Dataset.from_tensor_slices(files).interleave(
        cv.data.TFRecordDataset, cycle_length=4, num_parallel_calls=4, deterministic=True))
    out["text"] = _values(cv.data.TextLineDataset(text_file))
    out["read_file"] = _values(Dataset.from_tensor_slices(files).map(
        cv.io.read_file, num_parallel_calls=4))
    gf = []
    for f in files:
        with cv.io.gfile.GFile(f, "rb") as g:
            gf.append(g.read())
        gf.append(b"%d" % cv.io.gfile.stat(f).length)
    out["gfile"] = gf
    return out


@pytest.fixture(scope="module")
def local_read(data):
    cv = _cv()
    got = read_everything(cv, data["local"], data["text"][0])
    assert got["tfrecord"] == [r for rs in data["records"] for r in rs]
    return got


FAULTS = {
    "503s": dict(error_rate=0.3),
    "cuts": dict(cut_rate=0.5),
    "503s+cuts+latency": dict(error_rate=0.2, cut_rate=0.3, latency_ms=5),
}


@pytest.mark.parametrize("faults", sorted(FAULTS))
def test_faults_at_a_rate_give_the_local_read(store, data, local_read, faults, monkeypatch):
    cv = _cv()
    monkeypatch.setenv("CONVEYOR_HTTP_ATTEMPTS", "40")
    with behind_proxy(store, seed=27, **FAULTS[faults]) as p:
        got = read_everything(cv, data["urls"], data["text"][1])
        counts = dict(p.counts)
    for reader, want in local_read.items():
        # Equal lists: every record in its place, none lost, none twice.
        assert len(got[reader]) == len(want), reader
        bad = [i for i, (a, b) in enumerate(zip(got[reader], want)) if a != b]
        assert not bad, (reader, bad[:5])
    if "error_rate" in FAULTS[faults]:
        assert counts["errors"] > 0, counts  # 503s answered, and retried
    if "cut_rate" in FAULTS[faults]:
        assert counts["cuts"] > 0, counts  # bodies cut, and resumed
    assert counts["requests"] == counts["forwarded"] + counts["errors"] + counts["stalls"]


# ---- errors after the retries ---------------------------------------------------

def _each_api(cv, url):
    """Ways a user reaches one object; each must raise."""
    Dataset = cv.data.Dataset
    return {
        "TFRecordDataset": lambda: _values(cv.data.TFRecordDataset(url)),
        "TextLineDataset": lambda: _values(cv.data.TextLineDataset(url)),
        "gfile.GFile": lambda: cv.io.gfile.GFile(url, "rb").read(),
        "gfile.stat": lambda: cv.io.gfile.stat(url),
        "read_file in a map": lambda: _values(Dataset.from_tensors(url).map(cv.io.read_file)),
    }


def test_persistent_503_is_unavailable_listing_the_attempts(store, data, monkeypatch):
    cv = _cv()
    monkeypatch.setenv("CONVEYOR_HTTP_ATTEMPTS", "3")
    url = data["urls"][0]
    with behind_proxy(store, error_rate=1.0) as p:
        for api, call in _each_api(cv, url).items():
            before = p.counts["errors"]
            with pytest.raises(cv.errors.UnavailableError) as e:
                call()
            msg = str(e.value)
            assert url in msg, (api, msg)
            assert "after 3 attempts" in msg, (api, msg)
            assert msg.count("503") >= 3, (api, msg)
            assert p.counts["errors"] - before == 3, (api, p.counts)


def test_not_found_names_the_url(store, data):
    cv = _cv()
    url = store.url("data/no-such-object.tfrecord")
    with behind_proxy(store, latency_ms=2):
        for api, call in _each_api(cv, url).items():
            with pytest.raises(cv.errors.NotFoundError) as e:
                call()
            assert url in str(e.value), (api, str(e.value))
        assert not cv.io.gfile.exists(url)


class _Deny:
    """A storage endpoint that refuses every request with 403, in the store's
    own error format, and records the Authorization headers it was sent."""

    def __init__(self, scheme):
        import http.server
        deny = self
        self.auths = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _refuse(self):
                deny.auths.append(self.headers.get("Authorization"))
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                if scheme == "gs":
                    body = json.dumps({"error": {"code": 403, "message": "denied", "errors": [
                        {"reason": "forbidden", "message": "denied"}]}}).encode()
                    ctype = "application/json"
                else:
                    body = (b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied"
                            b"</Code><Message>Access Denied</Message></Error>")
                    ctype = "application/xml"
                self.send_response(403)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _refuse

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def _credentials_for_403(store, tmp_path, stack):
    """(environment, where the message must say they came from, secrets that
    must not appear) for real credentials of the store's ecosystem."""
    if store.scheme == "gs":
        pem, public = make_rsa_key()
        tokens = stack.enter_context(_started(TokenServer(public)))
        key = write_service_account_key(tmp_path / "key.json", pem, tokens.token_uri)
        return ({"GOOGLE_APPLICATION_CREDENTIALS": str(key)},
                "the service-account key in $GOOGLE_APPLICATION_CREDENTIALS",
                ["test-token-", "BEGIN PRIVATE KEY", pem[60:100]])
    secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzz403secret"
    return ({"AWS_ACCESS_KEY_ID": "AKIAFAULTTESTKEY0403", "AWS_SECRET_ACCESS_KEY": secret,
             "AWS_REGION": "us-east-1"},
            "AWS_ACCESS_KEY_ID", [secret, "Signature="])


@contextlib.contextmanager
def _started(server):
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_permission_denied_names_the_source_and_no_secret(store, tmp_path, monkeypatch):
    cv = _cv()
    monkeypatch.setenv("CONVEYOR_HTTP_ATTEMPTS", "40")
    url = store.url("private/object.tfrecord")
    with contextlib.ExitStack() as stack:
        env, source, secrets = _credentials_for_403(store, tmp_path, stack)
        deny = stack.enter_context(_Deny(store.scheme))
        # 503s in front of the refusal: retried, then the 403 is the answer.
        p = stack.enter_context(FaultProxy(upstream=deny.url, error_rate=0.3, seed=3))
        if store.scheme == "gs":
            env["CONVEYOR_GCS_ENDPOINT"] = p.url  # keeps the credential chain
        else:
            env["AWS_ENDPOINT_URL_S3"] = p.url
        stack.enter_context(environ(**env))
        for api, call in _each_api(cv, url).items():
            with pytest.raises(cv.errors.PermissionDeniedError) as e:
                call()
            msg = str(e.value)
            assert url in msg, (api, msg)
            assert source in msg, (api, msg)
            shown = "\n".join([msg, repr(e.value), *traceback.format_exception(e.value)])
            for s in secrets:
                assert s not in shown, (api, s)
        assert p.counts["errors"] > 0
        # There was a secret to leak: the store was sent credentials.
        assert any(a for a in deny.auths), deny.auths


# ---- an object rewritten while it is read ----------------------------------------

class _CutFirstRangedGet(FaultProxy):
    """Cuts the body of the first ranged GET half-way, once `release` is set:
    the reader has taken bytes of the first version by then, and its resumed
    request meets the object as rewritten."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.release = threading.Event()
        self._cut_one = False

    def _forward(self, sock, head, body, cut_fraction):
        if not self._cut_one and b"\r\nrange:" in head.lower():
            self._cut_one = True
            return super()._forward(_HeldShutdown(sock, self.release), head, body, 0.5)
        return super()._forward(sock, head, body, cut_fraction)


class _HeldShutdown:
    """A socket whose shutdown waits for an event (at most 30 s)."""

    def __init__(self, sock, event):
        self._sock, self._event = sock, event

    def sendall(self, data):
        return self._sock.sendall(data)

    def shutdown(self, how):
        self._event.wait(30)
        return self._sock.shutdown(how)


def test_an_object_rewritten_while_read_is_data_loss(store, tmp_path):
    cv = _cv()
    old = [b"%05d" % i * 2000 for i in range(400)]  # 10 KB records, 4 MB
    new = [b"N%04d" % i * 2000 for i in range(400)]
    blobs = []
    for name, rs in (("old", old), ("new", new)):
        path = tmp_path / f"{name}.tfrecord"
        with cv.io.TFRecordWriter(str(path)) as w:
            for r in rs:
                w.write(r)
        blobs.append(path.read_bytes())
    store.put("rewritten.tfrecord", blobs[0])
    url = store.url("rewritten.tfrecord")
    with behind_proxy(store, proxy_cls=_CutFirstRangedGet) as p:
        it = cv.data.TFRecordDataset(url).as_numpy_iterator()
        got = [bytes(next(it))]
        store.put("rewritten.tfrecord", blobs[1])
        p.release.set()
        with pytest.raises(cv.errors.DataLossError) as e:
            for x in it:
                got.append(bytes(x))
        assert p.counts["cuts"] == 1
    # Only the first version's records, in order: never the new one's bytes.
    assert got == old[:len(got)] and len(got) < len(old)
    assert url in str(e.value) and "changed while being read" in str(e.value)


# ---- resume mid-file -------------------------------------------------------------

class _RangeRecorder(FaultProxy):
    """Records each request's line and Range header."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ranges = []

    def _forward(self, sock, head, body, cut_fraction):
        lines = head.split(b"\r\n")
        rng = [ln.split(b":", 1)[1].strip() for ln in lines[1:] if ln.lower().startswith(b"range:")]
        with self._lock:
            self.ranges.append(rng[0].decode() if rng else None)
        return super()._forward(sock, head, body, cut_fraction)


@pytest.mark.parametrize("how", ["save", "checkpoint"])
def test_resume_mid_file_from_a_remote_object(store, data, tmp_path, how, monkeypatch):
    cv = _cv()
    monkeypatch.setenv("CONVEYOR_HTTP_ATTEMPTS", "40")
    url = data["urls"][5]
    want = data["records"][5]
    k = 37
    ds = cv.data.TFRecordDataset(url)
    with behind_proxy(store, proxy_cls=_RangeRecorder, cut_rate=0.3, seed=5) as p:
        it = iter(ds)
        head = [bytes(next(it).numpy()) for _ in range(k)]
        if how == "save":
            state = it.save()
        else:
            ckpt = cv.train.Checkpoint(iterator=it)
            path = ckpt.save(str(tmp_path / "ckpt"))
        for _ in range(5):  # read on: the restore must go back
            next(it)
        del it
        gc.collect()
        with p._lock:
            p.ranges.clear()
        fresh = iter(ds)
        if how == "save":
            fresh.restore(state)
        else:
            cv.train.Checkpoint(iterator=fresh).restore(path)
        rest = [bytes(x.numpy()) for x in fresh]
        with p._lock:
            ranges = [r for r in p.ranges if r]
    assert head == want[:k]
    assert rest == want[k:]
    # The restored read starts where the state points, not at byte 0: open
    # sends its GET from byte 0 at once (it may be dropped before it goes
    # out), and the seek replaces it before the read waits.
    from_zero = [r for r in ranges if r.startswith("bytes=0-")]
    assert len(from_zero) <= 1 and ranges[len(from_zero):], ranges
    assert from_zero == ranges[:len(from_zero)], ranges


# ---- a stalled response: drop the iterator, Ctrl-C -------------------------------

def _run_child(store, body):
    """Run `body` in a child process with a stalling proxy `p` in front of
    the store (requests whose line has "stall" in it stall; the others are
    forwarded) and the client pointed at it; returns its stdout lines."""
    prelude = f"""
        import gc, os, signal, sys, threading, time
        sys.path[:0] = [{str(ROOT)!r}, {str(TESTS)!r}]
        from fault_proxy import FaultProxy
        import conveyor as cv

        class Proxy(FaultProxy):
            # Stalls a request when its line names a "stall" object.
            def _forward(self, sock, head, body, cut_fraction):
                if b"stall" in head.split(b"\\r\\n", 1)[0]:
                    self._count("stalls")
                    self._stop.wait()
                    return False
                return super()._forward(sock, head, body, cut_fraction)

        def wait_for_stall(p, n=1):
            deadline = time.monotonic() + {READY_TIMEOUT_S}
            while p.counts["stalls"] < n:
                if time.monotonic() > deadline:
                    print("no stall", p.counts, flush=True)
                    os._exit(3)
                time.sleep(0.01)

        p = Proxy(upstream={store.upstream!r}).start()
        for k, v in {_placeholder_env(store)!r}.items():
            os.environ[k] = v.replace("http://PROXY", p.url).replace("PROXY", p.url.split("//")[1])
        os.environ["CONVEYOR_HTTP_TIMEOUT_S"] = "3600"  # only giving up can end a stalled read
    """
    script = textwrap.dedent(prelude) + textwrap.dedent(body) + "\np.stop()\nprint('exit', flush=True)\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, cwd=str(ROOT))
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "Fatal Python error" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines and lines[-1] == "exit", (proc.stdout, proc.stderr[-3000:])
    return lines


def _placeholder_env(store):
    return store.client_env("http://PROXY")


def _stalled_url(store, data):
    """An object whose requests the child's proxy stalls (it exists)."""
    store.put("stall/part.tfrecord", pathlib.Path(data["local"][0]).read_bytes())
    return store.url("stall/part.tfrecord")


PIPELINES = {
    # The consumer's own thread waits in the request (opening the second file).
    "TFRecordDataset": "cv.data.TFRecordDataset([OK, STALLED])",
    # next() waits on a buffer; a worker waits in the request.
    "prefetch": ("cv.data.TFRecordDataset(OK).take(1).concatenate("
                 "cv.data.TFRecordDataset(STALLED)).prefetch(2)"),
    "interleave": ("cv.data.Dataset.from_tensor_slices([OK, STALLED]).interleave("
                   "cv.data.TFRecordDataset, cycle_length=2, num_parallel_calls=2)"),
    "read_file": ("cv.data.Dataset.from_tensor_slices([OK, STALLED]).map(cv.io.read_file, "
                  "num_parallel_calls=2)"),
}


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_ctrl_c_while_next_waits_on_a_stalled_request(store, data, pipeline):
    stalled, ok = _stalled_url(store, data), data["urls"][1]
    lines = _run_child(store, f"""
        STALLED, OK = {stalled!r}, {ok!r}
        it = iter({PIPELINES[pipeline]})

        def interrupt():
            wait_for_stall(p)
            time.sleep(0.2)  # let next() settle into its wait
            os.kill(os.getpid(), signal.SIGINT)

        t = threading.Thread(target=interrupt, daemon=True)
        t.start()
        start = time.monotonic()
        try:
            while True:  # records of the file that is not stalled may come first
                next(it)
            print("no interrupt", flush=True)
        except KeyboardInterrupt:
            print("interrupted %.3f" % (time.monotonic() - start), flush=True)
        t.join(10)
        print("stalls", p.counts["stalls"], flush=True)
        holder = [it]
        del it
        dropped = threading.Event()

        def drop():
            holder.clear()
            gc.collect()
            dropped.set()
        threading.Thread(target=drop, daemon=True).start()
        print("dropped" if dropped.wait(10) else "drop hangs", flush=True)
    """)
    assert lines[0].split()[0] == "interrupted", lines
    assert lines[1] != "stalls 0" and lines[2] == "dropped", lines


@pytest.mark.parametrize("pipeline", ["prefetch", "interleave", "read_file"])
def test_dropping_an_iterator_with_a_stalled_request_returns(store, data, pipeline):
    stalled, ok = _stalled_url(store, data), data["urls"][1]
    lines = _run_child(store, f"""
        STALLED, OK = {stalled!r}, {ok!r}
        holder = [iter({PIPELINES[pipeline]})]
        next(holder[0])  # the object that is served comes first
        wait_for_stall(p)  # a worker is inside the stalled request now
        dropped = threading.Event()

        def drop():
            start = time.monotonic()
            holder.clear()
            gc.collect()
            print("dropped %.3f" % (time.monotonic() - start), flush=True)
            dropped.set()
        t = threading.Thread(target=drop, daemon=True)
        t.start()
        if not dropped.wait(10):
            print("drop hangs", flush=True)
            os._exit(4)
        # The process goes on: a new pipeline over an object that is served.
        print("after", len(list(cv.data.TFRecordDataset(OK))), flush=True)
    """)
    assert lines[0].split()[0] == "dropped", lines
    assert lines[1].startswith("after ") and int(lines[1].split()[1]) > 0, lines
