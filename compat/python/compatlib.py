"""Shared helpers of the Python compatibility scripts.

Each script is run by a Go test in compat/ as
    python SCRIPT BOOTSTRAP TOPIC_PREFIX
and prints one line per feature:
    RESULT <feature> ok|fail <message>
plus one `VERSION <client> <version>` line naming the installed client, read
from the package metadata. The Go test records every RESULT in COMPAT.md and
fails on any `fail`. A feature that raises is reported as failed; the
script carries on with the next one, so one broker bug does not hide others.
"""

import sys
import time
import traceback


def result(feature, ok, message):
    message = " ".join(str(message).split())  # one line
    print("RESULT %s %s %s" % (feature, "ok" if ok else "fail", message), flush=True)


def run(feature, fn):
    """Runs fn(); it returns a short message on success and raises on failure."""
    start = time.monotonic()
    try:
        msg = fn() or ""
    except Exception as e:  # every failure is a result, never a crash
        traceback.print_exc(file=sys.stderr)
        result(feature, False, "%s: %s" % (type(e).__name__, e))
        return
    result(feature, True, "%s (%.1fs)" % (msg, time.monotonic() - start))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def check_dense(acks, partitions):
    """acks are the (partition, offset) answers of one produce run, in the
    order given: every partition was used and each one's offsets run
    0, 1, 2, ... with no gap."""
    per = {}
    for part, off in acks:
        per.setdefault(part, []).append(off)
    check(sorted(per) == list(range(partitions)), "partitions used %s, want %s" % (sorted(per), list(range(partitions))))
    for part, offs in per.items():
        check(offs == list(range(len(offs))), "partition %d offsets %s not dense" % (part, offs[:5]))


def check_roundtrip(recs, acks, got):
    """acks are the (partition, offset) answers of producing recs to an
    empty one-partition topic and got the (key, value, headers, offset)
    records read back: offsets 0..n-1, and the records byte for byte."""
    n = len(recs)
    offs = sorted(o for _, o in acks)
    check(offs == list(range(n)), "acked offsets %s..., want 0..%d" % (offs[:3], n - 1))
    check([(k, v) for k, v, _, _ in got] == recs, "consumed records differ from produced")
    check([o for _, _, _, o in got] == list(range(n)), "consumed offsets not 0..%d" % (n - 1))
    return "%d records" % n


def check_split(got, sizes, n):
    """got holds what each of two group members consumed, sizes their
    assignments: the n records came once each, and both members had some."""
    keys = [k for g in got for k, _, _ in g]
    check(len(keys) == n and len(set(keys)) == n, "got %d records, %d distinct, want %d once each"
          % (len(keys), len(set(keys)), n))
    check(got[0] and got[1], "one member got nothing: %d/%d" % (len(got[0]), len(got[1])))
    return "assignment %s, records %d+%d" % (sizes, len(got[0]), len(got[1]))


def check_resumed(first, rest, recs):
    """A consumer read from offset 0 and committed 60; the group's next
    consumer read rest, which must be recs[60:] at offsets 60..99."""
    check(first[0][3] == 0, "first consumer started at %d" % first[0][3])
    check([o for _, _, _, o in rest[:40]] == list(range(60, 100)),
          "resumed at offsets %s, want 60..99" % [o for _, _, _, o in rest[:3]])
    check([(k, v) for k, v, _, _ in rest[:40]] == recs[60:], "resumed records differ")


def check_same_records(got, want, what):
    """got, (key, value, partition, offset) records read from any number of
    partitions, holds exactly the (key, value) pairs of want, in any order."""
    pairs = sorted((k, v) for k, v, _, _ in got)
    check(len(pairs) == len(want), "%s: %d records, want %d" % (what, len(pairs), len(want)))
    check(pairs == sorted(want), "%s: the records differ from the ones sent" % what)


def check_transactions(send, read):
    """The first half of the transactions feature: send(recs, commit) sends
    recs in one transaction of a transactional producer and commits or
    aborts it, read(isolation_level, n) reads the topic back with the
    client's consumer until it has n records. Three transactions of 30
    records, committed, aborted and committed: read_committed sees the 60
    committed records, read_uncommitted all 90. compat/script_helpers_test.go
    expects these records in <prefix>-txn."""
    first, aborted, second = (records(f, 30) for f in ("txn-first", "txn-aborted", "txn-second"))
    send(first, True)
    send(aborted, False)
    send(second, True)
    check_same_records(read("read_committed", 60), first + second, "read_committed")
    check_same_records(read("read_uncommitted", 90), first + aborted + second, "read_uncommitted")
    return "commit, abort, commit: read_committed sees 60 records, read_uncommitted 90"


def copy_in_transactions(n, copy_next, timeout=30.0):
    """The loop of the consume-transform-produce half of the transactions
    feature: copy_next() copies what one poll of a group's consumer returned
    in one transaction and returns how many records that was. Returns, once
    n records are copied, how many transactions it took."""
    copied, txns, deadline = 0, 0, time.monotonic() + timeout
    while copied < n:
        check(time.monotonic() < deadline, "copied %d of %d records" % (copied, n))
        done = copy_next()
        copied += done
        txns += done > 0
    check(copied == n, "copied %d records, want %d" % (copied, n))
    return txns


def transform(value):
    """The consume-transform-produce step of the transactions feature, from
    <prefix>-txn-in to <prefix>-txn-out: records("txn-in", n) become
    records("txn-out", n)."""
    return value.replace(b"txn-in", b"txn-out")


def wait_until(cond, what, timeout=30.0, step=0.05):
    """Polls cond() until it is true or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError("timed out waiting for " + what)
        time.sleep(step)


def records(prefix, n):
    """n distinct (key, value) byte pairs. Each value compresses well on its
    own: clients send a batch uncompressed when compressing does not shrink
    it (kafka-python does), and a batch may hold a single record.
    scriptRecords in compat/script_helpers_test.go makes the same ones."""
    return [(("k-%d" % i).encode(), ("%s value %d " % (prefix, i)).encode() * 20) for i in range(n)]


def args():
    if len(sys.argv) != 3:
        sys.exit("usage: %s BOOTSTRAP TOPIC_PREFIX" % sys.argv[0])
    return sys.argv[1], sys.argv[2]
