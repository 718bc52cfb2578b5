#!/usr/bin/python3
"""A hostile peer for gossipd's ZeroMQ port (Debian's python3-zmq).

It connects a DEALER to a daemon's ROUTER, as a real neighbour does, and sends what a broken or hostile
peer could: random bytes, truncated frames, huge length fields, a wrong version, broken checksums, a
wrong dimension, NaN/Inf payloads, replayed frames, frames claiming another sender's id, rounds far in
the past or future, undecodable membership frames, and a flood of valid-looking frames. Frames are built
from the wire format of engine/frame.h (written again here from the documented layout, so a change of
the format on one side only shows up as a test failure).

Usage: hostile_peer.py ENDPOINT ATTACK [--sender S] [--incarnation I] [--round R] [--dim D] [--count N]
Attacks are listed in ATTACKS; each prints one line saying what it sent.
"""
import argparse
import math
import os
import random
import struct
import sys
import time

import zmq

MAGIC = 0x44505347  # "GSPD"
VERSION = 4  # engine/frame.h kFrameVersion
HEADER_BYTES = 52
MODEL, MEMBERSHIP = 1, 6
FP32_CODEC, CODEC_VERSION = 1, 1


def _crc_table():
    poly = 0x82F63B78  # CRC-32C (Castagnoli), reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def header(kind=MODEL, sender=1, incarnation=0, rnd=0, epoch=0, seq=0, payload=b"", version=VERSION,
           length=None, payload_crc=None, degree=0, corrupt_header_crc=False):
    """The 52-byte frame header; by default with a correct length and both checksums."""
    body = struct.pack("<IBBHIQQIQII", MAGIC, version, kind, degree, sender, incarnation, rnd, epoch, seq,
                       len(payload) if length is None else length,
                       crc32c(payload) if payload_crc is None else payload_crc)
    crc = crc32c(body)
    if corrupt_header_crc:
        crc ^= 1
    return body + struct.pack("<I", crc)


def fp32_payload(values, dim=None):
    """An fp32 codec payload: u8 codec, u8 version, u16 param, u32 dim, then little-endian floats."""
    return struct.pack("<BBHI", FP32_CODEC, CODEC_VERSION, 0, len(values) if dim is None else dim) + \
        struct.pack("<%df" % len(values), *values)


ATTACKS = {}


def attack(fn):
    ATTACKS[fn.__name__] = fn
    return fn


@attack
def random_bytes(a, send):
    rng = random.Random(1)
    for parts in (1, 2, 3, 4):
        for _ in range(5):
            send([bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) for _ in range(parts)])
    return "20 messages of random bytes in 1-4 parts"


@attack
def truncated(a, send):
    p = fp32_payload([0.0] * a.dim)
    h = header(sender=a.sender, incarnation=a.incarnation, rnd=a.round, payload=p)
    for cut in (0, 1, 4, 20, 51):
        send([h[:cut], p])
    send([h, p[: len(p) // 2]])  # the header names the whole payload
    return "5 truncated headers, 1 truncated payload"


@attack
def huge_length(a, send):
    send([header(sender=a.sender, rnd=a.round, length=0xFFFFFFFF, payload_crc=0), b""])
    send([header(sender=a.sender, rnd=a.round, length=(1 << 30) + 1, payload_crc=0), b"x" * 16])
    return "2 headers with length fields past the 1 GiB limit"


@attack
def wrong_version(a, send):
    p = fp32_payload([0.0] * a.dim)
    for v in (0, 1, 2, 255):
        send([header(sender=a.sender, incarnation=a.incarnation, rnd=a.round, payload=p, version=v), p])
    return "4 frames with versions 0, 1, 2, 255"


@attack
def bad_checksums(a, send):
    p = fp32_payload([0.0] * a.dim)
    send([header(sender=a.sender, incarnation=a.incarnation, rnd=a.round, payload=p, corrupt_header_crc=True), p])
    send([header(sender=a.sender, incarnation=a.incarnation, rnd=a.round, payload=p, payload_crc=crc32c(p) ^ 1), p])
    return "1 frame with a bad header checksum, 1 with a bad payload checksum"


def _model(a, rnd, payload, sender=None):
    s = a.sender if sender is None else sender
    return [header(sender=s, incarnation=a.incarnation, rnd=rnd, payload=payload), payload]


@attack
def bad_payloads(a, send):
    """Checksummed model frames from the neighbour's id whose payloads the decoder refuses: NaN for round
    r, +Inf for r+1 and a body cut short for r+2 (all within the engine's window of 2 rounds ahead)."""
    bad = [fp32_payload([math.nan] + [0.0] * (a.dim - 1)),
           fp32_payload([0.0] * (a.dim - 1) + [math.inf]),
           fp32_payload([0.0] * a.dim)[:-4]]
    for k, p in enumerate(bad):
        send(_model(a, a.round + k, p))
    return "NaN, +Inf and a short body for rounds %d..%d" % (a.round, a.round + 2)


@attack
def wrong_dimension(a, send):
    send(_model(a, a.round, fp32_payload([0.5] * (a.dim + 1))))
    return "a model of dimension %d instead of %d for round %d" % (a.dim + 1, a.dim, a.round)


@attack
def replayed(a, send):
    p = fp32_payload([0.0] * a.dim)
    f = _model(a, a.round, p)
    for _ in range(3):
        send(f)
    return "the same model frame 3 times for round %d" % a.round


@attack
def impersonation(a, send):
    p = fp32_payload([0.0] * a.dim)
    send(_model(a, a.round, p, sender=a.target))      # the target's own id
    send(_model(a, a.round, p, sender=4242))          # an id nobody has
    send(_model(a, a.round, p, sender=0xFFFFFFFF))    # the reserved id
    return "model frames claiming the target's own id, id 4242 and the reserved id"


@attack
def far_rounds(a, send):
    p = fp32_payload([0.0] * a.dim)
    send(_model(a, 0, p))
    # Far enough ahead that the node cannot reach it between the script reading its round and this frame
    # arriving (a 2-node logistic run does thousands of rounds a second: +1000 was passed, and refused as late).
    send(_model(a, a.round + 10**9, p))
    send(_model(a, (1 << 64) - 1, p))
    return "model frames for round 0, round %d and round 2^64-1" % (a.round + 10**9)


@attack
def bad_membership(a, send):
    rng = random.Random(2)
    for n in (0, 1, 7, 300):
        p = bytes(rng.randrange(256) for _ in range(n))
        send([header(kind=MEMBERSHIP, sender=a.sender, incarnation=a.incarnation, payload=p), p])
    return "4 checksummed membership frames with random payloads"


@attack
def flood(a, send):
    """A flood of valid-looking frames: correct checksums, the neighbour's id, rounds outside the window."""
    p = fp32_payload([0.25] * a.dim)
    frames = [_model(a, a.round + 1000000 + k, p) for k in range(64)]
    for k in range(a.count):
        send(frames[k % len(frames)])
    return "%d valid-looking model frames (%d bytes each)" % (a.count, HEADER_BYTES + len(p))


def read_key_file(path):
    """(public, secret) Z85 keys of a gossipd key file: lines "public <z85>" and "secret <z85>"."""
    keys = dict(line.split(None, 1) for line in open(path) if line.strip())
    return keys["public"].strip().encode(), keys["secret"].strip().encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("attack", choices=sorted(ATTACKS))
    ap.add_argument("--sender", type=int, default=1, help="the id the frames claim (a real neighbour's)")
    ap.add_argument("--incarnation", type=int, default=0)
    ap.add_argument("--target", type=int, default=0, help="the attacked node's id")
    ap.add_argument("--round", type=int, default=0)
    ap.add_argument("--dim", type=int, default=8, help="the model's dimension")
    ap.add_argument("--count", type=int, default=100000, help="flood: frames to send")
    ap.add_argument("--hold", help="after sending, stay connected until this file exists (at most 120 s)")
    ap.add_argument("--curve-keys", metavar="DIR", help="CurveZMQ: take the server key from DIR/cluster.key")
    ap.add_argument("--curve-node-key", metavar="FILE",
                    help="CurveZMQ: authenticate with this key file (gossipd keygen's format); "
                         "default with --curve-keys: a fresh key nobody listed")
    ap.add_argument("--linger-ms", type=int, default=-1,
                    help="how long closing waits for unsent frames (-1: until all are written)")
    a = ap.parse_args()
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    # Every frame must reach the daemon (the test counts them): block on a full queue and let close wait
    # until all is written. The test's own deadline bounds the wait.
    s.setsockopt(zmq.LINGER, a.linger_ms)
    if a.curve_keys:
        s.curve_serverkey = read_key_file(os.path.join(a.curve_keys, "cluster.key"))[0]
        public, secret = read_key_file(a.curve_node_key) if a.curve_node_key else zmq.curve_keypair()
        s.curve_publickey = public
        s.curve_secretkey = secret
    s.setsockopt(zmq.SNDHWM, 100000)
    s.setsockopt(zmq.ROUTING_ID, b"x" + os.urandom(4))
    s.connect(a.endpoint)

    def send(parts):
        s.send_multipart(parts, copy=False)

    what = ATTACKS[a.attack](a, send)
    if a.hold:
        # Stay connected until the caller has seen every frame counted: libzmq may discard messages a
        # ROUTER has not read yet when their sender disconnects, and the daemon reads a flood slowly
        # (its inbox is capped). A flooder that stays connected is also the harder case.
        deadline = time.monotonic() + 120
        while not os.path.exists(a.hold) and time.monotonic() < deadline:
            time.sleep(0.05)
    s.close()
    ctx.term()
    print("hostile_peer %s: sent %s" % (a.attack, what))


if __name__ == "__main__":
    sys.exit(main())
