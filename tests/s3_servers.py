"""S3 servers on loopback for the s3:// tests: SeaweedFS (`weed server -s3`,
signatures checked against an identities file) and moto's server (a second S3
implementation), each started in a temporary folder on free ports, waited for,
and stopped (process group killed, folder removed) at the end of the session.
Also a tiny IMDSv2 server (the EC2 instance metadata protocol) for the
credential chain's metadata step.

Import the fixtures into a test module: `from s3_servers import seaweedfs, moto`.
"""
import contextlib
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest


def _server_env():
    """The environment for a server process: without a sanitizer's
    LD_PRELOAD (.ci/tsan, .ci/sanitize), which is for the engine in this
    process and crashes a server's interpreter or shim."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


ACCESS_KEY = "AKIACONVEYORTEST"
SECRET_KEY = "conveyor-test-secret-key-0123456789"
PUBLIC_BUCKET = "public"  # SeaweedFS lets anonymous clients read and list it


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url, proc, log, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}):\n{_tail(log)}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout} s:\n{_tail(log)}")


def _tail(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-3000:]
    except OSError:
        return ""


def _stop(proc):
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


class Server:
    """A running S3 server: endpoint, keys, and a boto3 client for setup."""

    def __init__(self, name, endpoint, proc, folder, checks_signatures):
        self.name = name
        self.endpoint = endpoint
        self.proc = proc
        self.folder = folder
        self.checks_signatures = checks_signatures
        self.access_key = ACCESS_KEY
        self.secret_key = SECRET_KEY

    def client(self):
        import boto3
        import botocore.config
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key,
                            config=botocore.config.Config(s3={"addressing_style": "path"},
                                                          retries={"max_attempts": 3}))

    def env(self, **extra):
        """An environment that points the engine at this server with the keys
        in AWS_ACCESS_KEY_ID (and nothing from the machine's ~/.aws)."""
        env = clean_aws_env()
        env.update({"AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key,
                    "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": "us-east-1"})
        env.update(extra)
        return env

    def stop(self):
        _stop(self.proc)
        shutil.rmtree(self.folder, ignore_errors=True)


def clean_aws_env(home=None):
    """os.environ without AWS_* / CONVEYOR_S3_* variables, the metadata
    service disabled, and HOME at an empty folder (no ~/.aws)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "CONVEYOR_S3_"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["HOME"] = home or tempfile.gettempdir() + "/conveyor-no-home"
    env["CONVEYOR_HTTP_BACKOFF_MS"] = "1"
    env["CONVEYOR_HTTP_ATTEMPTS"] = "3"
    return env


def start_seaweedfs():
    weed = shutil.which("weed")
    if weed is None:
        pytest.skip("SeaweedFS (weed) is not installed")
    folder = tempfile.mkdtemp(prefix="conveyor-weed-")
    config = os.path.join(folder, "s3.json")
    with open(config, "w") as f:
        json.dump({"identities": [
            {"name": "tester", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
             "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
            {"name": "anonymous", "actions": [f"Read:{PUBLIC_BUCKET}", f"List:{PUBLIC_BUCKET}"]},
        ]}, f)
    data = os.path.join(folder, "data")
    os.mkdir(data)
    ports = {}
    for name in ("master", "volume", "filer", "s3"):
        ports[name + ".port"], ports[name + ".port.grpc"] = free_port(), free_port()
    log = os.path.join(folder, "weed.log")
    args = [weed, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            "-master.volumeSizeLimitMB=16", "-volume.max=2000", "-volume.preStopSeconds=0", "-filer",
            "-s3", "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.iam=false",
            f"-s3.config={config}"]
    args += [f"-{flag}={port}" for flag, port in ports.items()]
    with open(log, "w") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=folder,
                                start_new_session=True, env=_server_env())
    server = Server("seaweedfs", f"http://127.0.0.1:{ports['s3.port']}", proc, folder, True)
    try:
        _wait_http(server.endpoint + "/", proc, log)
        # The gateway answers before a volume server has joined: wait until an
        # object can really be written.
        client = server.client()
        deadline = time.monotonic() + 60
        while True:
            try:
                client.create_bucket(Bucket="ready")
                client.put_object(Bucket="ready", Key="probe", Body=b"x")
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"SeaweedFS did not become writable:\n{_tail(log)}")
                time.sleep(0.5)
        client.create_bucket(Bucket=PUBLIC_BUCKET)
    except BaseException:
        server.stop()
        raise
    return server


def start_moto():
    exe = shutil.which("moto_server")
    if exe is None:
        pytest.skip("moto's server (moto[server]) is not installed")
    folder = tempfile.mkdtemp(prefix="conveyor-moto-")
    port = free_port()
    log = os.path.join(folder, "moto.log")
    with open(log, "w") as out:
        proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=out,
                                stderr=subprocess.STDOUT, cwd=folder, start_new_session=True,
                                env=_server_env())
    server = Server("moto", f"http://127.0.0.1:{port}", proc, folder, False)
    try:
        _wait_http(server.endpoint + "/moto-api/", proc, log)
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def seaweedfs():
    server = start_seaweedfs()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def moto():
    server = start_moto()
    yield server
    server.stop()


@pytest.fixture(scope="session", params=["seaweedfs", "moto"])
def s3_server(request):
    """Each S3 implementation in turn."""
    return request.getfixturevalue(request.param)


# ---- the instance metadata service (IMDSv2) ---------------------------------

class ImdsServer:
    """EC2's metadata protocol on loopback: PUT /latest/api/token gives a
    session token; the credentials paths answer only with that token."""

    TOKEN = "imds-session-token-for-tests"

    def __init__(self, role, access_key, secret_key, token="",
                 expiration="2099-01-01T00:00:00Z"):
        self.role = role
        self.keys = {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": access_key,
                     "SecretAccessKey": secret_key, "Token": token,
                     "Expiration": expiration, "LastUpdated": "2026-01-01T00:00:00Z"}
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body=b""):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_PUT(self):
                outer.requests.append(("PUT", self.path))
                if self.path == "/latest/api/token" and \
                        self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    return self._answer(200, outer.TOKEN.encode())
                self._answer(400)

            def do_GET(self):
                outer.requests.append(("GET", self.path))
                if self.headers.get("X-aws-ec2-metadata-token") != outer.TOKEN:
                    return self._answer(401)
                base = "/latest/meta-data/iam/security-credentials/"
                if self.path == base:
                    return self._answer(200, outer.role.encode())
                if self.path == base + outer.role:
                    return self._answer(200, json.dumps(outer.keys).encode())
                self._answer(404)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
