"""Object stores on loopback for benchmarks/remote_storage.py and
benchmarks/remote_jpeg.py: the servers the tests start (tests/gcs_servers.py:
fake-gcs-server; tests/s3_servers.py: SeaweedFS, once s3:// has landed)
behind tests/fault_proxy.py with a first-byte latency, and for each store
what a client needs to reach it:

    with open_store("gcs", latency_ms=30) as st:
        st.put(name, data); st.url(name)          # gs://bucket/name
        st.env                                    # variables for conveyor's client
        st.plain_get_url(name)                    # an http URL a plain GET can fetch
        st.fsspec()                               # a gcsfs / s3fs file system at the proxy
        st.proxy.counts

Stdlib and the stores' own Python clients only; the caller owns the process."""
import contextlib
import os
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from fault_proxy import FaultProxy  # noqa: E402

STORES = ("gcs", "s3")


class _Store:
    scheme = ""

    def __init__(self, server, bucket, proxy):
        self.server, self.bucket, self.proxy = server, bucket, proxy
        self.endpoint = proxy.url

    def url(self, name):
        return f"{self.scheme}://{self.bucket}/{name}"


class GcsStore(_Store):
    scheme = "gs"

    @property
    def env(self):
        return {"STORAGE_EMULATOR_HOST": self.endpoint.split("://", 1)[1]}

    def put(self, name, data):
        self.server.put(self.bucket, name, data)

    def plain_get_url(self, name):
        q = urllib.parse.quote(name, safe="")
        return f"{self.endpoint}/storage/v1/b/{self.bucket}/o/{q}?alt=media"

    def fsspec(self):
        return fs_for("gcs", self.endpoint, {})


class S3Store(_Store):
    scheme = "s3"

    def __init__(self, server, bucket, proxy):
        super().__init__(server, bucket, proxy)
        self._client = server.client()

    @property
    def env(self):
        return {"AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_ACCESS_KEY_ID": self.server.access_key,
                "AWS_SECRET_ACCESS_KEY": self.server.secret_key, "AWS_REGION": "us-east-1"}

    def put(self, name, data):
        self._client.put_object(Bucket=self.bucket, Key=name, Body=data)

    def plain_get_url(self, name):
        """A presigned URL for the proxy's host: a plain GET needs no signing."""
        import boto3
        import botocore.config
        c = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                         aws_access_key_id=self.server.access_key,
                         aws_secret_access_key=self.server.secret_key,
                         config=botocore.config.Config(s3={"addressing_style": "path"}))
        return c.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": name},
                                        ExpiresIn=3600)

    def fsspec(self):
        return fs_for("s3", self.endpoint, self.env)


def available(kind):
    """None when the store can run here, else why not."""
    if kind == "gcs":
        from gcs_servers import FakeGcs
        return None if FakeGcs.binary() else "fake-gcs-server is not installed"
    try:
        import s3_servers  # noqa: F401
    except ImportError:
        return "s3:// is not in this tree yet (tests/s3_servers.py)"
    import shutil
    return None if shutil.which("weed") else "SeaweedFS (weed) is not installed"


@contextlib.contextmanager
def open_store(kind, latency_ms=0, bucket="bench"):
    """A started server and a latency proxy in front of it; both stopped after."""
    if kind == "gcs":
        from gcs_servers import FakeGcs
        server = FakeGcs().start()
        cls = GcsStore
    else:
        import s3_servers
        server = s3_servers.start_seaweedfs()
        cls = S3Store
    try:
        if kind == "gcs":
            b = server.bucket(bucket)
        else:
            server.client().create_bucket(Bucket=bucket)
            b = bucket
        upstream = server.url if kind == "gcs" else server.endpoint
        with FaultProxy(upstream=upstream, latency_ms=latency_ms) as proxy:
            yield cls(server, b, proxy)
    finally:
        server.stop()


def fs_for(kind, endpoint, client_env):
    """A gcsfs / s3fs file system at `endpoint` (in a child process, which has
    no server object): anonymous for the emulator, the keys for S3."""
    if kind == "gcs":
        # The plain GCS file system: gcsfs's default (ExtendedGcsFileSystem)
        # first probes the bucket's type over gRPC, which an emulator does not
        # serve (a 60 s timeout per process).
        from gcsfs.core import GCSFileSystem
        return GCSFileSystem(endpoint_url=endpoint, token="anon")
    import s3fs
    return s3fs.S3FileSystem(key=client_env.get("AWS_ACCESS_KEY_ID"),
                             secret=client_env.get("AWS_SECRET_ACCESS_KEY"),
                             client_kwargs={"endpoint_url": endpoint,
                                            "region_name": client_env.get("AWS_REGION", "us-east-1")},
                             config_kwargs={"s3": {"addressing_style": "path"}})
