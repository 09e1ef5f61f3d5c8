"""gs:// in the engine (csrc/io/fs_gcs.c, csrc/io/gcs_credentials.c) against
real GCS emulators started on loopback (tests/gcs_servers.py): every table
method over fake-gcs-server and gcp-storage-emulator, and each credential
source that loopback can exercise, checked by what the token server was sent
and what Authorization header the storage server received.

The table is driven from C by tests/gcs/gcs_tool.c (built here against the
engine's objects, as tests/test_engine_c.py builds its programs), so these
tests need no binding."""
import itertools
import json
import os
import pathlib
import subprocess

import pytest

from gcs_servers import (FakeGcs, RecordingProxy, TokenServer, fake_gcs, emulator,  # noqa: F401
                         make_rsa_key, recording_proxy, running, token_server,
                         write_authorized_user, write_service_account_key)
from test_engine_c import engine_objects  # noqa: F401  (the compiled engine, shared)

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOOL_SOURCE = ROOT / "tests" / "gcs" / "gcs_tool.c"
GCS_VARIABLES = ("STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
                 "GCE_METADATA_HOST", "CONVEYOR_GCS_ANONYMOUS", "CONVEYOR_GCS_ENDPOINT",
                 "CONVEYOR_GCS_OAUTH_TOKEN_URI", "CONVEYOR_GCS_LIST_PAGE_SIZE")
TIMEOUT_S = 120
BUCKETS = itertools.count()


@pytest.fixture(scope="module")
def gcs_tool(engine_objects):  # noqa: F811
    out, objects, cflags, ldflags, env = engine_objects
    objects = [str(o) for o in objects]
    binary = out / "gcs_tool"
    proc = subprocess.run(["gcc", *cflags, str(TOOL_SOURCE), *objects, "-o", str(binary),
                           *ldflags], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return binary


@pytest.fixture
def home(tmp_path):
    """An empty HOME: no gcloud configuration unless a test writes one."""
    h = tmp_path / "home"
    h.mkdir()
    return h


def tool_env(home, **values):
    env = {k: v for k, v in os.environ.items() if k not in GCS_VARIABLES}
    env.pop("LD_PRELOAD", None)
    env["HOME"] = str(home)
    env["GCE_METADATA_HOST"] = "127.0.0.1:9"  # never the real metadata server from a test
    for k, v in values.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def run(tool, env, *commands, stdin=None, binary=False):
    """Run commands (lists of words) in one process; stdout (text unless binary)."""
    argv = [str(tool)]
    for i, c in enumerate(commands):
        if i:
            argv.append("--")
        argv += [str(w) for w in c]
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=TIMEOUT_S)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout if binary else proc.stdout.decode()


def pattern(n):
    """What gcs_tool's `put URL N` writes: byte i is i * 7 mod 251."""
    return bytes((i * 7) % 251 for i in range(n))


def skip_empty_uploads(server):
    if server.name == "gcp-storage-emulator":
        pytest.skip("gcp-storage-emulator fails on an empty media upload (a TypeError in its "
                    "_media_upload: request.data is None); real GCS and fake-gcs-server take it")


def assert_no_secret(text, *secrets):
    for s in ("test-token-", "BEGIN PRIVATE KEY", "s3cr3t", *secrets):
        assert s not in text, text


# ---- the file system over both emulators -------------------------------------

@pytest.fixture
def gs(gcs_tool, emulator, home):
    """(run(*commands) in the emulator's environment, emulator, bucket)."""
    bucket = emulator.bucket(f"bucket-{next(BUCKETS)}")
    env = tool_env(home, STORAGE_EMULATOR_HOST=emulator.host)

    def go(*commands, **kw):
        return run(gcs_tool, env, *commands, **kw)
    return go, emulator, bucket


def test_write_then_read_small_object(gs):
    go, server, b = gs
    data = b"hello\x00world\n" * 100
    assert go(["put", f"gs://{b}/dir/small.bin"], stdin=data) == ""
    assert server.get(b, "dir/small.bin") == data
    assert go(["cat", f"gs://{b}/dir/small.bin"], binary=True) == data
    assert go(["cat", f"gs://{b}/dir/small.bin", 5, 10], binary=True) == data[5:15]
    assert go(["cat", f"gs://{b}/dir/small.bin", len(data) - 3, 100], binary=True) == data[-3:]
    assert go(["cat", f"gs://{b}/dir/small.bin", len(data) + 10, 10], binary=True) == b""
    kind, size, mtime, version = go(["stat", f"gs://{b}/dir/small.bin"]).split()
    assert (kind, size) == ("file", f"size={len(data)}")
    assert int(mtime.split("=")[1]) > 0 and version != "version="


def test_empty_object(gs):
    go, server, b = gs
    skip_empty_uploads(server)
    assert go(["put", f"gs://{b}/empty"], stdin=b"") == ""
    assert server.get(b, "empty") == b""
    assert go(["cat", f"gs://{b}/empty"], binary=True) == b""
    assert go(["stat", f"gs://{b}/empty"]).startswith("file size=0 ")


def test_large_object_uses_a_resumable_upload(gs):
    go, server, b = gs
    n = 8 * 2**20 * 2 + 12345  # two full chunks and a tail
    assert go(["put", f"gs://{b}/big.bin", n]) == ""
    assert server.get(b, "big.bin") == pattern(n)
    got = go(["cat", f"gs://{b}/big.bin", 8 * 2**20 - 7, 100], binary=True)
    assert got == pattern(n)[8 * 2**20 - 7:8 * 2**20 + 93]


@pytest.mark.parametrize("n", [1000, 8 * 2**20 + 1000])
def test_an_aborted_or_killed_writer_leaves_no_object(gs, n):
    go, server, b = gs
    assert go(["put-abort", f"gs://{b}/aborted", n]) == ""
    assert server.get(b, "aborted") is None
    argv_out = subprocess.run  # the killed writer exits with 3 in the middle of its commands
    del argv_out
    with pytest.raises(AssertionError):
        go(["put-exit", f"gs://{b}/killed", n])
    assert server.get(b, "killed") is None
    assert server.names(b) == []


def test_names_are_encoded(gs):
    go, server, b = gs
    name = "odd dir/sp ace?#%+&=ü.txt"
    assert go(["put", f"gs://{b}/{name}"], stdin=b"x") == ""
    assert server.names(b) == [name]
    assert go(["cat", f"gs://{b}/{name}"], binary=True) == b"x"
    assert go(["ls", f"gs://{b}/odd dir"]) == "sp ace?#%+&=ü.txt\tfile\t1\n"


def test_stat_directories_buckets_and_missing(gs):
    go, server, b = gs
    server.put(b, "d/e/f.txt", b"abc")
    out = go(["stat", f"gs://{b}/d"], ["stat", f"gs://{b}/d/"], ["stat", f"gs://{b}/d/e"],
             ["stat", f"gs://{b}"], ["stat", f"gs://{b}/"], ["stat", f"gs://{b}/d/e/f.txt"],
             ["stat", f"gs://{b}/missing"], ["stat", f"gs://{b}/d/e/f"],
             ["stat", "gs://no-such-bucket-here/x"], ["stat", "gs://no-such-bucket-here"])
    lines = out.splitlines()
    assert all(line.startswith("dir size=0") for line in lines[:5]), lines
    assert lines[5].startswith("file size=3")
    assert lines[6] == f"ERROR NOT_FOUND: gs://{b}/missing: no such object or directory"
    assert lines[7].startswith(f"ERROR NOT_FOUND: gs://{b}/d/e/f")
    assert lines[8].startswith("ERROR NOT_FOUND: gs://no-such-bucket-here/x")
    assert lines[9] == "ERROR NOT_FOUND: gs://no-such-bucket-here: no such bucket"


def test_open_read_errors(gs):
    go, server, b = gs
    server.put(b, "d/f", b"abc")
    out = go(["cat", f"gs://{b}/d"], ["cat", f"gs://{b}/nope"], ["cat", f"gs://{b}/"])
    assert out.splitlines() == [
        f"ERROR FAILED_PRECONDITION: gs://{b}/d: is a directory, not an object",
        f"ERROR NOT_FOUND: gs://{b}/nope: no such object",
        f"ERROR FAILED_PRECONDITION: gs://{b}/: is a directory, not an object"]


def test_list_one_level_recursive_and_paged(gs):
    go, server, b = gs
    names = ["top.txt", "a/1", "a/2", "a/sub/3", "a/sub/deeper/4", "b/5", "a/z"]
    for n in names:
        server.put(b, n, n.encode())
    one = go(["ls", f"gs://{b}"])
    assert one == "a\tdir\t0\nb\tdir\t0\ntop.txt\tfile\t7\n"
    assert go(["ls", f"gs://{b}/a/"]) == "1\tfile\t3\n2\tfile\t3\nsub\tdir\t0\nz\tfile\t3\n"
    rec = go(["lsr", f"gs://{b}/a"])
    assert [line.split("\t")[0] for line in rec.splitlines()] == \
        ["1", "2", "sub/3", "sub/deeper/4", "z"]
    # Pages of 2: the same answers, several requests each.
    env_go = gs[0]
    paged = env_go(["setenv", "CONVEYOR_GCS_LIST_PAGE_SIZE", 2], ["ls", f"gs://{b}"],
                   ["ls", f"gs://{b}/a"], ["lsr", f"gs://{b}"])
    all_sorted = "".join(f"{n}\tfile\t{len(n)}\n" for n in sorted(names))
    assert paged == one + go(["ls", f"gs://{b}/a/"]) + all_sorted
    assert go(["ls", f"gs://{b}/nothing"]) == f"ERROR NOT_FOUND: gs://{b}/nothing: no such directory\n"


def test_make_dir_writes_a_placeholder_and_remove_dir_deletes_it(gs):
    go, server, b = gs
    skip_empty_uploads(server)
    out = go(["mkdir", f"gs://{b}/new"], ["stat", f"gs://{b}/new"], ["ls", f"gs://{b}/new"],
             ["ls", f"gs://{b}"], ["lsr", f"gs://{b}"])
    assert out == "dir size=0 mtime_ns=0 version=\nnew\tdir\t0\n"
    assert server.names(b) == ["new/"]  # as TensorFlow's GCS file system makes directories
    server.put(b, "new/f", b"1")
    assert go(["rmdir", f"gs://{b}/new"]) == \
        f"ERROR FAILED_PRECONDITION: gs://{b}/new: the directory is not empty\n"
    assert go(["rm", f"gs://{b}/new/f"], ["rmdir", f"gs://{b}/new"], ["stat", f"gs://{b}/new"]) \
        == f"ERROR NOT_FOUND: gs://{b}/new: no such object or directory\n"
    assert server.names(b) == []
    assert go(["rmdir", f"gs://{b}/new"]) == f"ERROR NOT_FOUND: gs://{b}/new: no such directory\n"
    assert go(["mkdir", f"gs://{b}"]) == ""
    assert go(["mkdir", "gs://no-such-bucket-here"]) == \
        "ERROR NOT_FOUND: gs://no-such-bucket-here: no such bucket\n"


def test_remove_copy_rename(gs):
    go, server, b = gs
    server.put(b, "src", b"payload")
    server.put(b, "other", b"other")
    out = go(["cp", f"gs://{b}/src", f"gs://{b}/dst/copy"],
             ["cp", f"gs://{b}/src", f"gs://{b}/other"],
             ["mv", f"gs://{b}/src", f"gs://{b}/other"],
             ["cp", f"gs://{b}/missing", f"gs://{b}/x"])
    lines = out.splitlines()
    assert lines[:2] == [f"ERROR ALREADY_EXISTS: gs://{b}/other: already exists"] * 2
    assert lines[2].startswith(f"ERROR NOT_FOUND: gs://{b}/missing"), lines
    assert server.get(b, "dst/copy") == b"payload"
    assert go(["mv", f"gs://{b}/src", f"gs://{b}/other", "overwrite"]) == ""
    assert server.get(b, "other") == b"payload" and server.get(b, "src") is None
    assert go(["rm", f"gs://{b}/other"], ["rm", f"gs://{b}/other"]) == \
        f"ERROR NOT_FOUND: gs://{b}/other: no such object\n"
    assert server.names(b) == ["dst/copy"]


# ---- credentials ---------------------------------------------------------------

@pytest.fixture
def bucket_with_object(fake_gcs):
    b = fake_gcs.bucket(f"creds-{next(BUCKETS)}")
    fake_gcs.put(b, "obj", b"12345")
    return b


@pytest.fixture
def rsa_key():
    return make_rsa_key()


def source_lines(out):
    return [line for line in out.splitlines() if line.startswith(("source=", "signed="))]


def test_emulator_host_without_and_with_scheme(gcs_tool, fake_gcs, bucket_with_object, home):
    for host in (fake_gcs.host, fake_gcs.url, fake_gcs.url + "/"):
        out = run(gcs_tool, tool_env(home, STORAGE_EMULATOR_HOST=host), ["source"],
                  ["stat", f"gs://{bucket_with_object}/obj"])
        assert out.splitlines()[:3] == ["source=the emulator at STORAGE_EMULATOR_HOST",
                                        f"endpoint={fake_gcs.url}", "signed=0"]
        assert out.splitlines()[3].startswith("file size=5")


def test_service_account_key_signs_a_jwt_and_reuses_the_token(
        gcs_tool, bucket_with_object, home, tmp_path, recording_proxy, rsa_key):
    pem, public = rsa_key
    tokens = TokenServer(public).start()
    try:
        key = write_service_account_key(tmp_path / "key.json", pem, tokens.token_uri)
        env = tool_env(home, GOOGLE_APPLICATION_CREDENTIALS=key,
                       CONVEYOR_GCS_ENDPOINT=recording_proxy.host)
        out = run(gcs_tool, env, ["source"], ["stat", f"gs://{bucket_with_object}/obj"],
                  ["cat", f"gs://{bucket_with_object}/obj"], ["fetches"])
        assert source_lines(out) == [
            "source=the service-account key in $GOOGLE_APPLICATION_CREDENTIALS", "signed=1"]
        assert "file size=5" in out and "12345" in out and out.endswith("fetches=1\n")
        assert len(tokens.grants) == 1
        grant = tokens.grants[0]
        assert grant["kind"] == "jwt" and grant["header"] == {"alg": "RS256", "typ": "JWT"}
        claims = grant["claims"]
        assert claims["iss"] == "conveyor-test@example.iam.gserviceaccount.com"
        assert claims["aud"] == tokens.token_uri
        assert claims["scope"] == "https://www.googleapis.com/auth/devstorage.read_write"
        assert claims["exp"] - claims["iat"] == 3600
        auths = recording_proxy.authorizations()
        # stat (one metadata GET) and cat (one media GET: open asks no metadata)
        assert len(auths) >= 2 and set(auths) == {"Bearer test-token-1"}

        # A token that expires within the refresh margin is asked for again.
        tokens.expires_in = 200
        tokens.grants.clear()
        del recording_proxy.seen[:]
        out = run(gcs_tool, env, ["stat", f"gs://{bucket_with_object}/obj"],
                  ["stat", f"gs://{bucket_with_object}/obj"], ["fetches"])
        assert out.endswith("fetches=2\n") and len(tokens.grants) == 2
        assert recording_proxy.authorizations() == ["Bearer test-token-1", "Bearer test-token-2"]
        assert_no_secret(out)
    finally:
        tokens.stop()


def test_a_rejected_key_is_permission_denied_naming_the_source(
        gcs_tool, bucket_with_object, home, tmp_path, recording_proxy, rsa_key):
    pem, _ = rsa_key
    _, other_public = make_rsa_key()
    tokens = TokenServer(other_public).start()  # verifies with a different key
    try:
        key = write_service_account_key(tmp_path / "key.json", pem, tokens.token_uri)
        env = tool_env(home, GOOGLE_APPLICATION_CREDENTIALS=key,
                       CONVEYOR_GCS_ENDPOINT=recording_proxy.host)
        out = run(gcs_tool, env, ["stat", f"gs://{bucket_with_object}/obj"])
        assert out.startswith("ERROR PERMISSION_DENIED: "), out
        assert "the service-account key in $GOOGLE_APPLICATION_CREDENTIALS" in out
        assert "invalid_grant" in out and tokens.grants == []
        assert recording_proxy.seen == []  # the storage server was never asked
        assert_no_secret(out, pem[40:80])
    finally:
        tokens.stop()


def test_a_missing_key_file_is_an_error_each_time(gcs_tool, home, tmp_path, fake_gcs,
                                                  bucket_with_object, token_server):
    key = tmp_path / "later.json"
    env = tool_env(home, GOOGLE_APPLICATION_CREDENTIALS=key,
                   CONVEYOR_GCS_OAUTH_TOKEN_URI=token_server.token_uri,
                   CONVEYOR_GCS_ENDPOINT=fake_gcs.host)
    out = run(gcs_tool, env, ["source"])
    assert out == f"ERROR NOT_FOUND: GCS credentials: cannot open {key}\n"
    key.write_text("{not json")
    out = run(gcs_tool, env, ["source"])
    assert out.startswith("ERROR INVALID_ARGUMENT: ") and str(key) in out
    key.write_text(json.dumps({"type": "external_account"}))
    assert run(gcs_tool, env, ["source"]).startswith("ERROR UNIMPLEMENTED: ")


@pytest.mark.parametrize("where", ["GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "HOME"])
def test_user_credentials(gcs_tool, bucket_with_object, home, tmp_path, recording_proxy,
                          token_server, where):
    if where == "HOME":
        path = home / ".config" / "gcloud" / "application_default_credentials.json"
        path.parent.mkdir(parents=True)
        env = {}
    elif where == "CLOUDSDK_CONFIG":
        path = tmp_path / "gcloud" / "application_default_credentials.json"
        path.parent.mkdir()
        env = {"CLOUDSDK_CONFIG": path.parent}
    else:
        path = tmp_path / "user.json"
        env = {"GOOGLE_APPLICATION_CREDENTIALS": path}
    write_authorized_user(path)
    env = tool_env(home, CONVEYOR_GCS_OAUTH_TOKEN_URI=token_server.token_uri,
                   CONVEYOR_GCS_ENDPOINT=recording_proxy.host, **env)
    out = run(gcs_tool, env, ["source"], ["stat", f"gs://{bucket_with_object}/obj"],
              ["stat", f"gs://{bucket_with_object}/obj"])
    want = ("the user credentials in $GOOGLE_APPLICATION_CREDENTIALS"
            if where == "GOOGLE_APPLICATION_CREDENTIALS"
            else "gcloud application-default credentials")
    assert source_lines(out) == [f"source={want}", "signed=1"]
    assert token_server.grants == [{
        "kind": "refresh_token", "grant_type": "refresh_token",
        "client_id": "cid.apps.googleusercontent.com", "client_secret": "s3cr3t&=",
        "refresh_token": "1//refresh/token+x"}]
    assert set(recording_proxy.authorizations()) == {"Bearer test-token-1"}
    assert_no_secret(out, "1//refresh")


def test_the_metadata_server(gcs_tool, bucket_with_object, home, recording_proxy, token_server):
    env = tool_env(home, GCE_METADATA_HOST=f"127.0.0.1:{token_server.port}",
                   CONVEYOR_GCS_ENDPOINT=recording_proxy.host)
    out = run(gcs_tool, env, ["source"], ["stat", f"gs://{bucket_with_object}/obj"], ["fetches"])
    assert source_lines(out) == ["source=the metadata server", "signed=1"]
    assert out.endswith("fetches=1\n")
    assert token_server.grants == [{"kind": "metadata"}]
    assert recording_proxy.authorizations() == ["Bearer test-token-1"]


def test_anonymous(gcs_tool, bucket_with_object, home, recording_proxy, token_server):
    # Forced, even with a metadata server there.
    env = tool_env(home, GCE_METADATA_HOST=f"127.0.0.1:{token_server.port}",
                   CONVEYOR_GCS_ANONYMOUS=1, CONVEYOR_GCS_ENDPOINT=recording_proxy.host)
    out = run(gcs_tool, env, ["source"], ["stat", f"gs://{bucket_with_object}/obj"])
    assert source_lines(out) == ["source=anonymous", "signed=0"]
    # The end of the chain: a metadata server that does not answer is asked once.
    env = tool_env(home, CONVEYOR_GCS_ENDPOINT=recording_proxy.host)  # GCE_METADATA_HOST: port 9
    out = run(gcs_tool, env, ["source"], ["stat", f"gs://{bucket_with_object}/obj"], ["source"])
    assert source_lines(out) == ["source=anonymous", "signed=0"] * 2
    assert token_server.grants == []
    assert set(recording_proxy.authorizations()) == {None}


def test_the_chain_is_resolved_again_when_the_environment_changes(
        gcs_tool, fake_gcs, bucket_with_object, home, token_server):
    env = tool_env(home, STORAGE_EMULATOR_HOST=fake_gcs.host)
    out = run(gcs_tool, env, ["source"], ["setenv", "CONVEYOR_GCS_ANONYMOUS", "1"], ["source"],
              ["unsetenv", "CONVEYOR_GCS_ANONYMOUS"],
              ["setenv", "GCE_METADATA_HOST", f"127.0.0.1:{token_server.port}"],
              ["unsetenv", "STORAGE_EMULATOR_HOST"], ["source"], ["reset"], ["source"],
              ["fetches"])
    assert [line for line in out.splitlines() if line.startswith("source=")] == [
        "source=the emulator at STORAGE_EMULATOR_HOST", "source=anonymous",
        "source=the metadata server", "source=the metadata server"]
    assert len(token_server.grants) == 2 and out.endswith("fetches=1\n")


def test_permission_denied_names_the_url_and_the_source(gcs_tool, home, tmp_path, token_server):
    import http.server
    import threading

    class Deny(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps({"error": {"code": 403, "message": "denied",
                                         "errors": [{"reason": "forbidden"}]}}).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        env = tool_env(home, GCE_METADATA_HOST=f"127.0.0.1:{token_server.port}",
                       CONVEYOR_GCS_ENDPOINT=f"127.0.0.1:{httpd.server_address[1]}")
        out = run(gcs_tool, env, ["stat", "gs://private-bucket/x"],
                  ["cat", "gs://private-bucket/x"], ["ls", "gs://private-bucket/x"])
        lines = out.splitlines()
        assert len(lines) == 3
        for line in lines:
            assert line.startswith("ERROR PERMISSION_DENIED: gs://private-bucket/x"), line
            assert "the metadata server" in line
        assert_no_secret(out)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_a_read_pins_the_generation_it_opened(gs):
    go, server, b = gs
    if server.name == "gcp-storage-emulator":
        pytest.skip("gcp-storage-emulator ignores ?generation= on media reads (GCS answers 404 "
                    "for a replaced generation)")
    server.put(b, "pinned", b"0123456789abcdef")
    out = go(["read-rewrite", f"gs://{b}/pinned", 8])
    lines = out.splitlines()
    assert lines[0] == "first=0123"
    # The new version is never mixed into the old one's bytes.
    assert lines[1] == "second=89ab" or lines[1].startswith(f"ERROR NOT_FOUND: gs://{b}/pinned"), \
        lines
    assert server.get(b, "pinned") == b"REWRITTEN!"


def test_the_json_scanner_takes_any_bytes(gcs_tool, home):
    import random
    listing = json.dumps({
        "kind": "storage#objects", "nextPageToken": "t\u00e9\\\"",
        "prefixes": ["a/", "b\\/\"c/"],
        "items": [{"name": "x\ud83d\ude00\n", "size": "12", "done": True},
                  {"name": "y", "size": 3, "nested": {"items": [[[]]], "s": "\\u12"}}]})
    inputs = [listing.encode(), b"", b"[", b"{" * 100000, b"[" * 100000 + b"]" * 100000,
              b'{"name":"\\ud800"}', b'{"name":"\\udc00\\u0041"}', b'{"size":"99999999999999999999"}',
              b'{"size":-5}', b'"\\u00', b'{"a\\\\b":1}', b'[1,2,"\\"",{}]']
    inputs += [listing.encode()[:i] for i in range(0, len(listing), 7)]
    rng = random.Random(27)
    inputs += [bytes(rng.choice(b'{}[]":,\\u0123 truefalsn\x00\xff') for _ in range(rng.randint(1, 300)))
               for _ in range(300)]
    env = tool_env(home)
    for data in inputs:
        out = run(gcs_tool, env, ["json"], stdin=data)
        assert out.startswith("json found="), (data[:100], out)
    # The well-formed listing: found=fields + items + array of the top-level (none).
    assert run(gcs_tool, env, ["json"], stdin=listing.encode()) != "json found=0\n"


# ---- through the binding: tf.io.gfile and the readers --------------------------

@pytest.fixture
def gs_py(fake_gcs, monkeypatch, home):
    """The emulator in this process's environment, for tf.io.gfile and the
    readers."""
    from conveyor.io import gfile
    for name in GCS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", fake_gcs.host)
    monkeypatch.setenv("HOME", str(home))
    b = fake_gcs.bucket(f"py-{next(BUCKETS)}")
    assert gfile.isdir(f"gs://{b}")
    return gfile, fake_gcs, b


def test_gfile_over_gs(gs_py, monkeypatch):
    gfile, server, b = gs_py
    root = f"gs://{b}"
    gfile.makedirs(f"{root}/data/sub")
    with gfile.GFile(f"{root}/data/a.txt", "w") as f:
        f.write("line one\nline two\n")
    with gfile.GFile(f"{root}/data/b.bin", "wb") as f:
        f.write(b"\x00\x01" * 1000)
    for i in range(7):
        server.put(b, f"data/sub/part-{i}.tfrecord", b"x" * i)
    assert gfile.exists(f"{root}/data/a.txt") and gfile.isdir(f"{root}/data")
    assert not gfile.exists(f"{root}/nope") and not gfile.isdir(f"{root}/data/a.txt")
    assert gfile.stat(f"{root}/data/b.bin").length == 2000
    assert sorted(gfile.listdir(f"{root}/data")) == ["a.txt", "b.bin", "sub/"] or \
        sorted(gfile.listdir(f"{root}/data")) == ["a.txt", "b.bin", "sub"]
    monkeypatch.setenv("CONVEYOR_GCS_LIST_PAGE_SIZE", "2")  # several pages
    assert gfile.glob(f"{root}/data/sub/*.tfrecord") == \
        [f"{root}/data/sub/part-{i}.tfrecord" for i in range(7)]
    walked = [(top, sorted(dirs), sorted(files)) for top, dirs, files in gfile.walk(f"{root}/data")]
    assert walked[0][2] == ["a.txt", "b.bin"] and len(walked) == 2
    with gfile.GFile(f"{root}/data/a.txt") as f:
        assert f.read() == "line one\nline two\n"
    gfile.copy(f"{root}/data/a.txt", f"{root}/copy.txt")
    gfile.rename(f"{root}/copy.txt", f"{root}/moved.txt")
    assert server.get(b, "moved.txt") == b"line one\nline two\n" and server.get(b, "copy.txt") is None
    gfile.remove(f"{root}/moved.txt")
    assert not gfile.exists(f"{root}/moved.txt")


def test_record_readers_over_gs_match_the_local_read(gs_py, tmp_path):
    gfile, server, b = gs_py
    import conveyor as cv
    local = tmp_path / "r.tfrecord"
    with cv.io.TFRecordWriter(str(local)) as w:
        for i in range(300):
            w.write(b"record %d " % i * (i % 17 + 1))
    server.put(b, "r/0.tfrecord", local.read_bytes())
    server.put(b, "r/1.tfrecord", local.read_bytes())
    want = [bytes(x) for x in cv.data.TFRecordDataset(str(local)).as_numpy_iterator()]
    for name in ("0", "1"):
        got = [bytes(x) for x in
               cv.data.TFRecordDataset(f"gs://{b}/r/{name}.tfrecord").as_numpy_iterator()]
        assert got == want
    text = b"".join(b"text line %d\n" % i for i in range(1000))
    server.put(b, "t.txt", text)
    lines = [bytes(x) for x in cv.data.TextLineDataset(f"gs://{b}/t.txt").as_numpy_iterator()]
    assert lines == text.splitlines()


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_records_around_the_refill_size_match_the_local_read(gs_py, tmp_path, compression):
    """A remote stream buffers what it reads ahead, so the record reader takes
    a payload straight from it and refills only 1 KiB for headers: records
    of every size around that (and larger than the stream's 64 KiB reads,
    and than a 1 MiB window) come out as the local read gives them; a
    compressed file takes the buffered path."""
    gfile, server, b = gs_py
    import conveyor as cv
    sizes = [0, 1, 1007, 1008, 1019, 1020, 1024, 1025, 4096, 70000, 3, 1 << 20, 1500000, 12]
    local = tmp_path / "mixed.tfrecord"
    opts = cv.io.TFRecordOptions(compression_type=compression or None)
    with cv.io.TFRecordWriter(str(local), opts) as w:
        for i, n in enumerate(sizes * 3):
            w.write(bytes((i + k) % 251 for k in range(n)))
    server.put(b, "mixed.tfrecord", local.read_bytes())
    want = [bytes(x) for x in cv.data.TFRecordDataset(str(local), compression).as_numpy_iterator()]
    assert [len(x) for x in want] == sizes * 3
    url = f"gs://{b}/mixed.tfrecord"
    got = [bytes(x) for x in cv.data.TFRecordDataset(url, compression).as_numpy_iterator()]
    assert got == want
    # Read ahead by an interleave (its futures receive the whole object).
    ds = cv.data.Dataset.from_tensor_slices([url, url]).interleave(
        lambda f: cv.data.TFRecordDataset(f, compression), cycle_length=1,
        num_parallel_calls=cv.data.AUTOTUNE, deterministic=True)
    assert [bytes(x) for x in ds.as_numpy_iterator()] == want * 2
    assert cv.data.experimental.IoStats.now().bytes_in_flight == 0


def test_pipeline_statistics_show_the_remote_io(gs_py):
    """it.stats().io counts the requests and bytes the pipeline's reads made
    (process-wide counters: compared before and after) and the budget."""
    gfile, server, b = gs_py
    import conveyor as cv
    server.put(b, "s.txt", b"".join(b"line %d\n" % i for i in range(5000)))
    before = cv.data.experimental.IoStats.now()
    it = iter(cv.data.TextLineDataset(f"gs://{b}/s.txt").prefetch(2))
    assert sum(1 for _ in it) == 5000
    io = it.stats().io
    assert io.requests > before.requests
    assert io.bytes_received - before.bytes_received >= 5000 * 6
    assert io.budget_requests > 0 and io.budget_bytes > 0
    assert "remote I/O" in str(it.stats())
    with pytest.raises(ValueError):
        cv.data.experimental.set_io_budget(bytes=-1)


def test_tfrecord_writer_to_gs(gs_py, tmp_path):
    gfile, server, b = gs_py
    import conveyor as cv
    local = tmp_path / "w.tfrecord"
    for path in (str(local), f"gs://{b}/w.tfrecord"):
        with cv.io.TFRecordWriter(path) as w:
            for i in range(100):
                w.write(b"rec %d" % i)
    assert server.get(b, "w.tfrecord") == local.read_bytes()


def test_list_files_over_gs(gs_py):
    gfile, server, b = gs_py
    import conveyor as cv
    for i in (2, 0, 1):
        server.put(b, f"r/{i}.tfrecord", b"")
    server.put(b, "r/skip.txt", b"")
    files = [bytes(x).decode() for x in
             cv.data.Dataset.list_files(f"gs://{b}/r/*.tfrecord", shuffle=False)
             .as_numpy_iterator()]
    assert files == [f"gs://{b}/r/{i}.tfrecord" for i in range(3)]
