"""Hand-made PNG files for the PNG tests: any bit depth, color type, row
filters, Adam7 interlacing, tRNS, IDAT split, and damaged variants.

Written from the PNG specification with zlib; used where neither
TensorFlow's encoder nor PIL writes the variant (2- and 4-bit gray,
16-bit gray + alpha, chosen filters, many IDAT chunks).
"""
import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]
SAMPLES_PER_PIXEL = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data, crc=None):
    c = zlib.crc32(kind + data) if crc is None else crc
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", c & 0xFFFFFFFF)


def ihdr(width, height, bit_depth=8, color_type=2, interlace=0, compression=0, filter_method=0):
    return chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type,
                                      compression, filter_method, interlace))


def _pack_row(values, bit_depth):
    if bit_depth == 16:
        return np.asarray(values, ">u2").tobytes()
    if bit_depth == 8:
        return np.asarray(values, np.uint8).tobytes()
    per = 8 // bit_depth
    out = bytearray((len(values) * bit_depth + 7) // 8)
    for i, v in enumerate(values):
        out[i // per] |= (int(v) << (8 - bit_depth * (i % per + 1))) & 0xFF
    return bytes(out)


def _filter(kind, row, prev, bpp):
    prev = prev if prev is not None else bytes(len(row))
    out = bytearray(len(row))
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 0:
            pred = 0
        elif kind == 1:
            pred = a
        elif kind == 2:
            pred = b
        elif kind == 3:
            pred = (a + b) // 2
        else:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        out[i] = (row[i] - pred) & 0xFF
    return bytes(out)


def raw_rows(samples, bit_depth, color_type, interlace=False, filters=(0,)):
    """The filtered, uncompressed image data of `samples` ([h, w, spp])."""
    samples = np.asarray(samples)
    spp = SAMPLES_PER_PIXEL[color_type]
    bpp = max(1, spp * bit_depth // 8)
    passes = ([samples] if not interlace else
              [samples[y0::dy, x0::dx] for x0, y0, dx, dy in ADAM7])
    raw = bytearray()
    k = 0
    for p in passes:
        if p.shape[0] == 0 or p.shape[1] == 0:
            continue
        prev = None
        for r in p.reshape(p.shape[0], -1):
            row = _pack_row(r, bit_depth)
            f = filters[k % len(filters)]
            k += 1
            raw.append(f)
            raw += _filter(f, row, prev, bpp)
            prev = row
    return bytes(raw)


def make_png(samples, bit_depth, color_type, plte=None, trns=None, interlace=False,
             filters=(0,), idat_chunks=1, before_idat=b"", after_idat=b"", raw=None):
    """A PNG of `samples` ([height, width, samples per pixel] of sample
    values), filtered row by row with `filters` in turn."""
    samples = np.asarray(samples)
    h, w = samples.shape[:2]
    if raw is None:
        raw = raw_rows(samples, bit_depth, color_type, interlace, filters)
    z = zlib.compress(raw)
    out = SIGNATURE + ihdr(w, h, bit_depth, color_type, int(interlace))
    if plte is not None:
        out += chunk(b"PLTE", bytes(plte))
    if trns is not None:
        out += chunk(b"tRNS", bytes(trns))
    out += before_idat
    step = max(1, -(-len(z) // max(1, idat_chunks)))
    for i in range(0, len(z), step):
        out += chunk(b"IDAT", z[i:i + step])
    return out + after_idat + chunk(b"IEND", b"")


def chunks(data):
    """[(offset, length, kind)] of the chunks of a PNG."""
    out, pos = [], 8
    while pos + 12 <= len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        out.append((pos, n, data[pos + 4:pos + 8]))
        pos += 12 + n
    return out


def fix_crcs(data):
    """`data` with every chunk's CRC recomputed (to damage what is inside)."""
    b = bytearray(data)
    for pos, n, kind in chunks(data):
        if pos + 12 + n <= len(b):
            b[pos + 8 + n:pos + 12 + n] = struct.pack(">I", zlib.crc32(bytes(b[pos + 4:pos + 8 + n])))
    return bytes(b)
