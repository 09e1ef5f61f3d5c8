"""A map whose traced function read_file's its input opens the next
elements' files as it pulls them (kernels/common/open_ahead.c): their GETs
are in flight before a worker runs them, so requests in flight follow the
I/O budget, not the pool's threads. A real http.server on loopback that
holds every answer back (as an object store's first-byte latency does) and
counts the requests it serves at once."""
import gc
import http.server
import threading

import pytest

import conveyor as cv
from checkpoint_helpers import verify_resume
from conftest import fork_with_busy_threads, wait_for_child

N = 40


class _Server:
    def __init__(self, files, delay):
        self.files, self.delay = files, delay
        self.lock = threading.Lock()
        self.active = self.peak = self.gets = 0
        self.release = threading.Event()  # the "hang/" objects answer once set
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                name = self.path.lstrip("/")
                with server.lock:
                    server.gets += 1
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                try:
                    if name.startswith("hang/"):
                        server.release.wait(30)
                    else:
                        server.release.wait(server.delay)
                    body = server.files.get(name.split("/")[-1])
                    if body is None:
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    with server.lock:
                        server.active -= 1

            def do_HEAD(self):  # a missing object's stat (is it a directory?)
                body = server.files.get(self.path.split("/")[-1])
                self.send_response(404 if body is None else 200)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.srv.daemon_threads = True
        self.thread = threading.Thread(target=self.srv.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"

    def reset(self):
        with self.lock:
            self.peak = self.gets = 0

    def close(self):
        self.release.set()
        self.srv.shutdown()
        self.srv.server_close()
        self.thread.join(timeout=10)


def _body(i):
    return (b"file %03d " % i) * (50 + i * 7)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    bodies = {}
    for i in range(N):
        (root / f"f{i:03d}").write_bytes(_body(i))
        bodies[f"f{i:03d}"] = _body(i)
    return root, bodies


@pytest.fixture()
def server(files):
    srv = _Server(files[1], delay=0.3)
    try:
        yield srv
    finally:
        srv.close()


def _read(f):
    return cv.io.read_file(f)


def _urls(server, names):
    return [f"{server.url}/{n}" for n in names]


@pytest.mark.parametrize("calls", [None, 2])
def test_requests_in_flight_exceed_the_workers(server, files, calls):
    names = sorted(files[1])
    ds = cv.data.Dataset.from_tensor_slices(_urls(server, names)).map(
        _read, num_parallel_calls=calls)
    it = iter(ds)
    got = [next(it).numpy() for _ in range(N)]
    io = it.stats().io
    assert got == [files[1][n] for n in names]
    # Each file was asked for once (the open made ahead is the one read), and
    # far more were in flight at once than the map runs calls (a pipeline
    # holds at most cpu_budget + 4 pool threads: 6 here).
    assert server.gets == N
    assert server.peak >= 12, server.peak
    assert io.requests >= N


def test_values_and_order_equal_the_local_sequential_pipeline(server, files):
    root, bodies = files
    names = sorted(bodies)

    def pipeline(paths, calls, batch):
        ds = cv.data.Dataset.from_tensor_slices(paths).map(
            lambda f: (f, cv.io.read_file(f)), num_parallel_calls=calls)
        ds = ds.map(lambda f, b: cv.strings.length(b))
        return ds.batch(batch) if batch else ds

    local = [int(x) for x in pipeline([str(root / n) for n in names], None, 0)]
    assert local == [len(bodies[n]) for n in names]
    for calls in (None, 3, cv.data.AUTOTUNE):
        remote = [int(x) for x in pipeline(_urls(server, names), calls, 0)]
        assert remote == local, calls
        # map then batch runs fused (map_batch.c): the same, in batches.
        batched = [x.tolist() for x in pipeline(_urls(server, names), calls, 7)]
        assert sum(batched, []) == local, calls
        ds = cv.data.Dataset.from_tensor_slices(_urls(server, names)).map(
            _read, num_parallel_calls=calls).batch(7)
        assert [bytes(v) for b in ds for v in b.numpy()] == [bodies[n] for n in names]


def test_a_missing_file_fails_in_its_turn(server, files):
    names = sorted(files[1])[:12]
    names[5] = "missing"
    ds = cv.data.Dataset.from_tensor_slices(_urls(server, names)).map(
        _read, num_parallel_calls=3)
    it = iter(ds)
    got = []
    for i in range(len(names)):
        if i == 5:
            with pytest.raises(cv.errors.NotFoundError, match="missing"):
                next(it)
            continue
        got.append(next(it).numpy())
    with pytest.raises(StopIteration):
        next(it)
    assert got == [files[1][n] for n in names if n != "missing"]


@pytest.mark.parametrize("calls", [None, 2])
def test_dropping_the_iterator_while_requests_hang_returns(server, files, calls):
    names = sorted(files[1])
    urls = _urls(server, names[:3]) + [f"{server.url}/hang/{n}" for n in names[3:]]
    ds = cv.data.Dataset.from_tensor_slices(urls).map(_read, num_parallel_calls=calls)
    it = iter(ds)
    assert [next(it).numpy() for _ in range(3)] == [files[1][n] for n in names[:3]]
    done = threading.Event()

    def drop():
        nonlocal it
        del it
        gc.collect()
        done.set()

    t = threading.Thread(target=drop, daemon=True)
    t.start()
    # The requests still hang (release is not set): the drop must not wait for them.
    assert done.wait(20), "dropping the iterator waited for hanging requests"
    t.join(timeout=10)


@pytest.mark.parametrize("calls,batch", [(None, 0), (3, 0), (3, 5)])
def test_resume_with_files_opened_ahead(files, calls, batch):
    srv = _Server(files[1], delay=0.01)
    try:
        names = sorted(files[1])

        def make():
            ds = cv.data.Dataset.from_tensor_slices(_urls(srv, names)).map(
                _read, num_parallel_calls=calls)
            return ds.batch(batch) if batch else ds

        verify_resume(make, breaks=[0, 1, 3, 5])
    finally:
        srv.close()


def test_interleave_opens_its_futures_before_reading_slots(tmp_path):
    """A cycle of 4 remote TFRecord files, none answering yet: the next
    cycle's files (futures) are requested too, not only the 4 being read."""
    bodies = {}
    for i in range(16):
        path = tmp_path / f"r{i:02d}"
        with cv.io.TFRecordWriter(str(path)) as w:
            w.write(b"record of file %d" % i)
        bodies[path.name] = path.read_bytes()
    srv = _Server(bodies, delay=0)
    got = []
    try:
        urls = [f"{srv.url}/hang/{n}" for n in sorted(bodies)]
        ds = cv.data.Dataset.from_tensor_slices(urls).interleave(
            cv.data.TFRecordDataset, cycle_length=4, num_parallel_calls=2)
        it = iter(ds)
        t = threading.Thread(target=lambda: got.extend(bytes(x.numpy()) for x in it),
                             daemon=True)
        t.start()
        want = 4 + 8  # the cycle, and min(2 x cycle_length, 16) futures
        for _ in range(200):
            if srv.gets >= want:
                break
            threading.Event().wait(0.05)
        assert srv.gets >= want, srv.gets
    finally:
        srv.release.set()
    t.join(timeout=30)
    assert not t.is_alive()
    assert sorted(got) == sorted(b"record of file %d" % i for i in range(16))


@fork_with_busy_threads  # the I/O thread is inside curl, allocating, at fork()
def test_a_forked_child_opens_its_own_files(server, files):
    """Files opened ahead by the parent's iterator belong to the parent's I/O
    thread: a child forked meanwhile reads the same URLs with requests of its
    own."""
    import os
    import select
    names = sorted(files[1])
    urls = _urls(server, names)
    it = iter(cv.data.Dataset.from_tensor_slices(urls).map(_read, num_parallel_calls=2))
    assert next(it).numpy() == files[1][names[0]]  # the next files are opened ahead now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read two files that the parent opened ahead
        try:
            ok = all(bytes(cv.io.read_file(u)) == files[1][n]
                     for u, n in zip(urls[5:7], names[5:7]))
            os.write(w, b"1" if ok else b"0")
        except BaseException as e:  # noqa: BLE001 (the parent says what)
            os.write(w, repr(e).encode()[:200])
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 60)
        got = os.read(r, 200) if ready else b"timeout"
    finally:
        os.close(r)
        wait_for_child(pid)
    assert got == b"1"
    assert [next(it).numpy() for _ in range(N - 1)] == [files[1][n] for n in names[1:]]
