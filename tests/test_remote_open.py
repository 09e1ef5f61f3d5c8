"""Opening an http(s) file costs no round trip: open_read starts the GET and
returns; size, version and errors come with its first answer. A real
http.server on loopback (it ignores Range: a 200 with the whole body)."""
import functools
import http.server
import threading

import pytest

import conveyor as cv


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "empty").write_bytes(b"")
    (root / "five").write_bytes(b"hello")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(timeout=10)


def test_empty_object_reads_as_empty(site):
    assert cv.io.read_file(site + "/empty") == b""
    assert list(cv.data.TFRecordDataset(site + "/empty")) == []
    with cv.io.gfile.GFile(site + "/empty", "rb") as f:
        assert f.size() == 0 and f.read() == b""


def test_size_and_a_first_read_elsewhere(site):
    assert cv.io.read_file(site + "/five") == b"hello"
    with cv.io.gfile.GFile(site + "/five", "rb") as f:
        assert f.size() == 5
        f.seek(3)
        assert f.read() == b"lo"


def test_a_missing_file_is_not_found_by_every_reader(site):
    url = site + "/nope"
    with pytest.raises(cv.errors.NotFoundError, match="nope: 404 Not Found"):
        cv.io.read_file(url)
    with pytest.raises(cv.errors.NotFoundError, match="nope: 404 Not Found"):
        cv.io.gfile.GFile(url, "rb").read()
    with pytest.raises(cv.errors.NotFoundError, match="nope: 404 Not Found"):
        list(cv.data.TFRecordDataset(url))
