"""kafka-python (the pure-Python client) against a Gregor broker.

Usage: python kafka_python_compat.py BOOTSTRAP TOPIC_PREFIX
Prints a VERSION line and one RESULT line per feature (see compatlib).
"""

import importlib.metadata
import os
import threading
import time
from contextlib import closing
from functools import partial

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import MessageSizeTooLargeError
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec
from kafka.structs import OffsetAndMetadata

from compatlib import (args, check, check_dense, check_resumed, check_roundtrip, check_same_records, check_split,
                       check_transactions, copy_in_transactions, records, run, transform, wait_until)

BOOTSTRAP, PREFIX = args()
CLIENT = "kafka-python"


def admin():
    return KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id=PREFIX + "-admin")


def create_topic(name, partitions=1, configs=None):
    a = admin()
    try:
        a.create_topics({name: {"num_partitions": partitions, "replication_factor": 1,
                                "configs": configs or {}}}, wait_for_metadata=True)
    finally:
        a.close()


def produce(topic, recs, **conf):
    """Sends recs and returns their (partition, offset) as the broker acked them."""
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", **conf)
    try:
        futures = [p.send(topic, key=k, value=v) for k, v in recs]
        p.flush(timeout=30)
        return [(m.partition, m.offset) for m in (f.get(timeout=30) for f in futures)]
    finally:
        p.close(timeout=10)


def consume_all(consumer, n, timeout=30.0):
    """Polls consumer until it has n records, returning [(key, value, partition, offset)]."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        check(time.monotonic() < deadline, "consumed %d of %d records" % (len(got), n))
        for tp, msgs in consumer.poll(timeout_ms=500).items():
            got.extend((m.key, m.value, tp.partition, m.offset) for m in msgs)
    return got


def produce_to(tp, n):
    """Sends n records to one partition."""
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    try:
        for f in [p.send(tp.topic, value=b"v%d" % i, partition=tp.partition) for i in range(n)]:
            f.get(timeout=30)
    finally:
        p.close(timeout=10)


def read_back(topic, n, **conf):
    c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=None,
                      auto_offset_reset="earliest", enable_auto_commit=False, **conf)
    try:
        return consume_all(c, n)
    finally:
        c.close()


def roundtrip(feature, n=200, **conf):
    """Produces n records with conf and consumes them back, byte for byte."""
    topic = "%s-%s" % (PREFIX, feature)
    recs = records(feature, n)
    acks = produce(topic, recs, **conf)
    return check_roundtrip(recs, acks, read_back(topic, n))


def test_produce():
    topic = PREFIX + "-produce"
    create_topic(topic, 3)
    acks = produce(topic, records("produce", 300))
    check_dense(acks, 3)
    return "300 records over 3 partitions, offsets dense per partition; " + large_records()


def large_records():
    """A 900 KB record is stored and fetched whole under a 1 KB fetch limit
    (KIP-74); a 2 MB one is refused with MESSAGE_TOO_LARGE."""
    topic = PREFIX + "-large"
    big = os.urandom(900_000)
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", max_request_size=4 << 20)
    try:
        check(p.send(topic, value=big).get(timeout=30).offset == 0, "900 KB record not at offset 0")
        try:
            p.send(topic, value=os.urandom(2_000_000)).get(timeout=30)
            raise AssertionError("2 MB record accepted")
        except MessageSizeTooLargeError:
            pass
    finally:
        p.close(timeout=10)
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, max_partition_fetch_bytes=1000,
                      fetch_max_bytes=1000, auto_offset_reset="earliest")
    try:
        c.assign([TopicPartition(topic, 0)])
        got = consume_all(c, 1)
    finally:
        c.close()
    check(got[0][1] == big, "900 KB record came back different")
    return "900 KB record fetched under a 1 KB limit, 2 MB refused"


def test_consume():
    """Keys, values, headers and CreateTime timestamps come back as sent, and
    the consumer's offset lookups (earliest, latest, by time) agree."""
    topic, n = PREFIX + "-consume", 200
    base = int(time.time() * 1000) - 3600_000
    recs = records("consume", n)
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    try:
        futures = [p.send(topic, key=k, value=v, timestamp_ms=base + i * 1000,
                          headers=[("h", str(i).encode()), ("empty", b"")])
                   for i, (k, v) in enumerate(recs)]
        p.flush(timeout=30)
        offs = [f.get(timeout=30).offset for f in futures]
    finally:
        p.close(timeout=10)
    check(offs == list(range(n)), "acked offsets not 0..%d" % (n - 1))
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, enable_auto_commit=False)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < n:
            check(time.monotonic() < deadline, "consumed %d of %d records" % (len(got), n))
            for msgs in c.poll(timeout_ms=500).values():
                got.extend(msgs)
        for i, m in enumerate(got):
            check((m.key, m.value) == recs[i] and m.offset == i, "record %d differs" % i)
            check(m.timestamp == base + i * 1000 and m.timestamp_type == 0,
                  "record %d timestamp %d type %d, want %d CreateTime" % (i, m.timestamp, m.timestamp_type, base + i * 1000))
            check(list(m.headers) == [("h", str(i).encode()), ("empty", b"")], "record %d headers %r" % (i, m.headers))
        check(c.beginning_offsets([tp])[tp] == 0, "beginning_offsets %r" % c.beginning_offsets([tp]))
        check(c.end_offsets([tp])[tp] == n, "end_offsets %r, want %d" % (c.end_offsets([tp]), n))
        found = c.offsets_for_times({tp: base + 150 * 1000 - 1})[tp]
        check(found is not None and found.offset == 150 and found.timestamp == base + 150 * 1000,
              "offsets_for_times: %r, want offset 150" % (found,))
    finally:
        c.close()
    return "%d records with headers and timestamps; offset lookups agree" % n


def test_group():
    """Two members of one group share a 4-partition topic; every record arrives once."""
    topic, group, n = PREFIX + "-group", PREFIX + "-group-g", 400
    create_topic(topic, 4)
    members = [KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group,
                             auto_offset_reset="earliest", client_id="member-%d" % i,
                             heartbeat_interval_ms=500, session_timeout_ms=10000)
               for i in range(2)]
    got = [[], []]
    stop = threading.Event()
    errors = []

    def poll(i):
        try:
            while not stop.is_set():
                for tp, msgs in members[i].poll(timeout_ms=200).items():
                    got[i].extend((m.key, tp.partition, m.offset) for m in msgs)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    try:
        def split():
            try:
                a = [set(m.assignment()) for m in members]
            except RuntimeError:  # read while the poll thread rebalances
                return None
            if all(a) and a[0].isdisjoint(a[1]) and len(a[0] | a[1]) == 4:
                return [len(x) for x in a]
        sizes = wait_until(lambda: split() or errors, "both members to share the 4 partitions", 60)
        check(not errors, "poll failed: %r" % errors)
        produce(topic, records("group", n))
        wait_until(lambda: len(got[0]) + len(got[1]) >= n or errors, "%d records" % n, 60)
    finally:
        stop.set()
        for th in threads:
            th.join()
        for m in members:
            m.close()
    check(not errors, "poll failed: %r" % errors)
    return check_split(got, sizes, n)


def test_commit():
    """A consumer commits offset 60; a new consumer of the group resumes there."""
    topic, group = PREFIX + "-commit", PREFIX + "-commit-g"
    recs = records("commit", 100)
    produce(topic, recs)
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    try:
        c.assign([tp])
        first = consume_all(c, 60)
        c.commit({tp: OffsetAndMetadata(60, "half", -1)})
        committed = c.committed(tp)
        check(committed == 60, "committed() = %r, want 60" % committed)
    finally:
        c.close()
    c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        rest = consume_all(c, 40)
        c.commit()
    finally:
        c.close()
    check_resumed(first, rest, recs)
    a = admin()
    try:
        offsets = a.list_group_offsets({group: None})[group]
    finally:
        a.close()
    check(offsets[tp].offset == 100, "group offset after the second commit: %r, want 100" % (offsets.get(tp),))
    return "resumed at 60; the second consumer's commit is at 100"


def test_admin():
    a = admin()
    topic, group = PREFIX + "-admin", PREFIX + "-group-g"
    try:
        a.create_topics({topic: {"num_partitions": 2, "replication_factor": 1,
                                 "configs": {"retention.ms": "3600000"}}}, wait_for_metadata=True)
        check(topic in a.list_topics(), "created topic not listed")
        desc = a.describe_topics([topic])
        check(len(desc) == 1 and len(desc[0]["partitions"]) == 2,
              "describe_topics: %r" % desc)

        a.create_partitions({topic: 5})
        wait_until(lambda: len(a.describe_topics([topic])[0]["partitions"]) == 5,
                   "5 partitions after create_partitions")

        tp = TopicPartition(topic, 0)
        produce_to(tp, 10)
        ends = a.list_partition_offsets({tp: OffsetSpec.EARLIEST})
        check(ends[tp].offset == 0, "earliest offset %r, want 0" % (ends[tp],))
        ends = a.list_partition_offsets({tp: OffsetSpec.LATEST})
        check(ends[tp].offset == 10, "latest offset %r, want 10" % (ends[tp],))
        deleted = a.delete_records({tp: 4})
        check(deleted[tp]["low_watermark"] == 4, "delete_records: %r" % deleted)
        ends = a.list_partition_offsets({tp: OffsetSpec.EARLIEST})
        check(ends[tp].offset == 4, "earliest offset after delete_records %r, want 4" % (ends[tp],))

        res = ConfigResource(ConfigResourceType.TOPIC, topic)
        conf = a.describe_configs([res])["topic"][topic]
        check(conf.get("retention.ms", {}).get("value") == "3600000",
              "describe_configs retention.ms: %r" % conf.get("retention.ms"))
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                        {"retention.ms": "7200000", "cleanup.policy": "compact"})])
        conf = a.describe_configs([res], config_filter="all")["topic"][topic]
        check(conf["retention.ms"]["value"] == "7200000" and conf["cleanup.policy"]["value"] == "compact",
              "after alter_configs: retention.ms=%r cleanup.policy=%r"
              % (conf["retention.ms"]["value"], conf["cleanup.policy"]["value"]))
        broker = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        check("log.retention.hours" in broker["broker"]["1"], "broker configs lack log.retention.hours")

        groups = [g["group_id"] for g in a.list_groups()]
        check(group in groups, "list_groups %s lacks %s" % (groups, group))
        gd = a.describe_groups([group])[group]
        check(gd["protocol_type"] == "consumer" and gd["group_state"] == "Empty",
              "describe_groups: %r" % gd)

        cluster = a.describe_cluster()
        check([b["broker_id"] for b in cluster["brokers"]] == [1] and cluster["controller_id"] == 1,
              "describe_cluster: %r" % cluster)

        dirs = a.describe_log_dirs()
        names = [t["name"] for r in dirs for d in r["log_dirs"] for t in d["topics"]]
        check(topic in names, "describe_log_dirs lacks %s: %s" % (topic, names))

        commit_group, commit_tp = PREFIX + "-commit-g", TopicPartition(PREFIX + "-commit", 0)
        altered = a.alter_group_offsets(commit_group, {commit_tp: OffsetAndMetadata(30, "", -1)})
        check(altered[commit_tp].errno == 0, "alter_group_offsets: %r" % altered)
        offsets = a.list_group_offsets({commit_group: None})[commit_group]
        check(offsets[commit_tp].offset == 30, "after alter_group_offsets: %r" % offsets)
        removed = a.delete_group_offsets(commit_group, [commit_tp])
        check(removed[commit_tp].errno == 0, "delete_group_offsets: %r" % removed)
        offsets = a.list_group_offsets({commit_group: None})[commit_group]
        check(commit_tp not in offsets, "offsets left after delete_group_offsets: %r" % offsets)
        gone = a.delete_groups([commit_group])
        check(gone == {commit_group: "OK"}, "delete_groups: %r" % gone)
        check(commit_group not in [g["group_id"] for g in a.list_groups()], "deleted group still listed")

        a.delete_topics([topic])
        wait_until(lambda: topic not in a.list_topics(), "deleted topic to leave the list")
    finally:
        a.close()
    return ("create/describe/delete topics, create_partitions, describe/alter configs, describe_cluster, "
            "list offsets, delete_records, describe_log_dirs, list/describe/delete groups, "
            "alter/list/delete group offsets")


def test_idempotence():
    topic = PREFIX + "-idempotence"
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, enable_idempotence=True, acks="all")
    try:
        recs = records("idempotence", 200)
        futures = [p.send(topic, key=k, value=v) for k, v in recs]
        p.flush(timeout=30)
        offs = sorted(f.get(timeout=30).offset for f in futures)
        pid = p._transaction_manager.producer_id_and_epoch.producer_id
    finally:
        p.close(timeout=10)
    check(offs == list(range(200)), "acked offsets not 0..199")
    check(pid >= 0, "no producer id assigned: %r" % pid)
    got = read_back(topic, 200)
    check([(k, v) for k, v, _, _ in got] == recs, "consumed records differ")
    return "producer id %d, 200 records once" % pid


def transactional(name):
    """A producer with a transactional_id, its transactions initialized."""
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=PREFIX + "-" + name)
    p.init_transactions()
    return p


def transact(p, topic, recs, commit):
    """Sends recs in one transaction of p, then commits or aborts it."""
    p.begin_transaction()
    futures = [p.send(topic, key=k, value=v) for k, v in recs]
    p.flush(timeout=30)
    for f in futures:
        f.get(timeout=30)
    p.commit_transaction() if commit else p.abort_transaction()


def test_transactions():
    """Commit, abort and commit (see compatlib.check_transactions), then
    consume-transform-produce."""
    topic = PREFIX + "-txn"
    create_topic(topic, 2)
    with closing(transactional("txn-id")) as p:
        done = check_transactions(partial(transact, p, topic), lambda level, n: read_back(topic, n, isolation_level=level))
    return done + "; " + consume_transform_produce()


def consume_transform_produce():
    """A group reads <prefix>-txn-in; each poll's records are copied,
    transformed, to <prefix>-txn-out in one transaction that also carries
    the polled offsets (send_offsets_to_transaction with the consumer's
    group_metadata()). The group ends at the input's end offsets, and a
    read_committed consumer finds the copies."""
    src, dst, group, n = PREFIX + "-txn-in", PREFIX + "-txn-out", PREFIX + "-txn-group", 100
    create_topic(src, 2)
    create_topic(dst, 2)
    produce(src, records("txn-in", n))
    # at most 25 records a poll, so that the copy takes several transactions
    c = KafkaConsumer(src, bootstrap_servers=BOOTSTRAP, group_id=group, isolation_level="read_committed",
                      enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=25)
    try:
        with closing(transactional("txn-eos")) as p:
            txns = copy_in_transactions(n, lambda: copy_polled(p, c, dst, c.poll(timeout_ms=500)))
    finally:
        c.close()
    wait_committed_at_end(group, src, 2)
    check_same_records(read_back(dst, n, isolation_level="read_committed"), records("txn-out", n), dst)
    return ("%d records copied in %d transactions with send_offsets_to_transaction, the group's offsets "
            "at the input's end" % (n, txns))


def copy_polled(p, c, dst, polled):
    """Copies what one poll of c returned to dst in one transaction with the offsets."""
    if not polled:
        return 0
    p.begin_transaction()
    for msgs in polled.values():
        for m in msgs:
            p.send(dst, key=m.key, value=transform(m.value))
    offsets = {tp: OffsetAndMetadata(msgs[-1].offset + 1, "", -1) for tp, msgs in polled.items()}
    p.send_offsets_to_transaction(offsets, c.group_metadata())
    p.commit_transaction()
    return sum(len(msgs) for msgs in polled.values())


def wait_committed_at_end(group, topic, partitions):
    """Waits until group has committed the end offset of each partition of topic."""
    tps = [TopicPartition(topic, i) for i in range(partitions)]
    a = admin()
    try:
        ends = {tp: o.offset for tp, o in a.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps}).items()}

        def at_end():
            offsets = a.list_group_offsets({group: None})[group]
            return {tp: offsets[tp].offset if tp in offsets else None for tp in tps} == ends
        wait_until(at_end, "%s's offsets at the end offsets %s of %s" % (group, ends, topic))
    finally:
        a.close()


def main():
    print("VERSION %s %s" % (CLIENT, importlib.metadata.version("kafka-python")), flush=True)
    run("produce", test_produce)
    run("consume", test_consume)
    run("group", test_group)
    run("commit", test_commit)
    run("admin", test_admin)
    run("idempotence", test_idempotence)
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        run(codec, lambda: roundtrip(codec, compression_type=codec))
    run("transactions", test_transactions)


if __name__ == "__main__":
    main()
