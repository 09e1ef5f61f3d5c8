"""Hand-built tf.train.Example wire bytes, for tests of malformed protobufs."""


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def ld(tag, payload):
    """A length-delimited field: tag byte, varint length, payload."""
    return bytes([tag]) + varint(len(payload)) + payload


def entry(key, feature):
    """One entry of the Features map."""
    return ld(0x0A, ld(0x0A, key) + ld(0x12, feature))


def example(*entries):
    return ld(0x0A, b"".join(entries))
