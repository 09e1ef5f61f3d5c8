"""The .cvindex sidecar layout (version 02, csrc/io/record_index.h) in pure
Python, for tests that damage or forge indexes on purpose."""
import os
import struct

from _record_files import crc32c, masked_crc

HEADER = 64
ENTRY = 16
BLOCK = 256


def parse(raw):
    """(header fields dict, [(offset, header_crc, data_crc)], block CRCs)."""
    size, mtime, head, tail, n, b, ver = struct.unpack_from("<QqIIQII", raw, 8)
    blocks = n // BLOCK + 1
    crcs = list(struct.unpack_from("<%dI" % blocks, raw, HEADER))
    table = HEADER + 4 * blocks
    entries = [struct.unpack_from("<QII", raw, table + ENTRY * i) for i in range(n + 1)]
    return dict(size=size, mtime=mtime, head=head, tail=tail, n=n, block=b, version=ver), entries, crcs


def _block_crc(b, data):
    return masked_crc(struct.pack("<Q", b) + data)


def build(fields, entries):
    """An index with every checksum right (a forgery, when fields or entries lie)."""
    n = len(entries) - 1
    head = b"CVRIDX02" + struct.pack("<QqIIQII", fields["size"], fields["mtime"], fields["head"],
                                     fields["tail"], n, BLOCK, fields["version"])
    head += struct.pack("<I", masked_crc(head)) + bytes(12)
    table = b"".join(struct.pack("<QII", *e) for e in entries)
    blocks = n // BLOCK + 1
    crcs = b"".join(struct.pack("<I", _block_crc(b, table[b * BLOCK * ENTRY:(b + 1) * BLOCK * ENTRY]))
                    for b in range(blocks))
    return head + crcs + table


def local_version(path):
    """The local file layer's version string of `path` (io/fs_local.c)."""
    st = os.stat(path)
    return "%x-%x-%x-%x" % (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def restamp(path):
    """Make `path`'s index claim the file as it is now (size, mtime, edges,
    version), its entries unchanged: an index that trusts a file changed in
    place. For tests that prove a skip seeks instead of reading."""
    ipath = path + ".cvindex"
    fields, entries, _ = parse(open(ipath, "rb").read())
    data = open(path, "rb").read()
    k = min(len(data), 4096)
    fields.update(size=len(data), mtime=os.stat(path).st_mtime_ns, head=crc32c(data[:k]),
                  tail=crc32c(data[len(data) - k:]),
                  version=crc32c(local_version(path).encode()))
    with open(ipath, "wb") as f:
        f.write(build(fields, entries))
