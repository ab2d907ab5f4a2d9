"""confluent-kafka (librdkafka's Python binding) against a Gregor broker.

Usage: python confluent_compat.py BOOTSTRAP TOPIC_PREFIX
Prints a VERSION line and one RESULT line per feature (see compatlib).
"""

import importlib.metadata
import os
import time
import warnings
from contextlib import closing
from functools import partial

import confluent_kafka
from confluent_kafka import (ConsumerGroupTopicPartitions, Consumer, KafkaError, Producer,
                             TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewPartitions, NewTopic, OffsetSpec, ResourceType)

from compatlib import (args, check, check_dense, check_resumed, check_roundtrip, check_same_records, check_split,
                       check_transactions, copy_in_transactions, records, run, transform, wait_until)

BOOTSTRAP, PREFIX = args()
CLIENT = "confluent-kafka-python"
TIMEOUT = 30.0


def admin():
    return AdminClient({"bootstrap.servers": BOOTSTRAP})


def create_topic(name, partitions=1, config=None):
    a = admin()  # the futures need the client alive until they resolve
    fs = a.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=TIMEOUT)
    fs[name].result(TIMEOUT)


def produce(topic, recs, partition=None, **conf):
    """Sends recs (to partition, if given) and returns their (partition,
    offset) as the broker acked them."""
    p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 5, **conf})
    return deliver(p, topic, recs, partition)


def deliver(p, topic, recs, partition=None):
    """Sends recs with producer p and waits for their delivery reports."""
    acks, errors = [], []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acks.append((msg.partition(), msg.offset()))

    for k, v in recs:
        extra = {} if partition is None else {"partition": partition}
        p.produce(topic, key=k, value=v, on_delivery=delivered, **extra)
        p.poll(0)
    left = p.flush(TIMEOUT)
    check(left == 0, "%d records not delivered" % left)
    check(not errors, "delivery errors: %s" % errors[:3])
    check(len(acks) == len(recs), "%d acks for %d records" % (len(acks), len(recs)))
    return acks


def consumer(group, **conf):
    return Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf})


def consume_all(c, n):
    """Polls c until it has n records, returning [(key, value, partition, offset)]."""
    got = []
    deadline = time.monotonic() + TIMEOUT
    while len(got) < n:
        check(time.monotonic() < deadline, "consumed %d of %d records" % (len(got), n))
        for m in c.consume(num_messages=500, timeout=0.5):
            if m.error():
                check(m.error().code() == KafkaError._PARTITION_EOF, "consume error: %s" % m.error())
                continue
            got.append((m.key(), m.value(), m.partition(), m.offset()))
    return got


def read_back(topic, n, partitions=1, **conf):
    c = consumer(PREFIX + "-reader-" + topic, **conf)
    try:
        c.assign([TopicPartition(topic, i, confluent_kafka.OFFSET_BEGINNING) for i in range(partitions)])
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
    check_dense(sorted(acks), 3)
    return "300 records over 3 partitions, offsets dense per partition; " + large_records()


def large_records():
    """A 900 KB record is stored and fetched whole under a 1 KB fetch limit
    (KIP-74); a 2 MB one is refused with MESSAGE_TOO_LARGE."""
    topic = PREFIX + "-large"
    big = os.urandom(900_000)
    acks = produce(topic, [(None, big)])
    check(acks == [(0, 0)], "900 KB record acked at %s" % acks)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "message.max.bytes": 4 << 20})
    errors = []
    p.produce(topic, value=os.urandom(2_000_000), on_delivery=lambda err, msg: errors.append(err))
    p.flush(TIMEOUT)
    check(len(errors) == 1 and errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE,
          "2 MB record: delivery report %s, want MSG_SIZE_TOO_LARGE" % errors)
    c = consumer(PREFIX + "-large-reader", **{"fetch.max.bytes": 1000, "max.partition.fetch.bytes": 1000,
                                              "message.max.bytes": 1000})
    try:
        c.assign([TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        got = consume_all(c, 1)
    finally:
        c.close()
    check(got[0][1] == big, "900 KB record came back different")
    return "900 KB record fetched under a 1 KB limit, 2 MB refused"


def test_consume():
    """Keys, values, headers and CreateTime timestamps come back as sent, and
    the consumer's offset lookups (watermarks, by time) agree."""
    topic, n = PREFIX + "-consume", 200
    base = int(time.time() * 1000) - 3600_000
    recs = records("consume", n)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 5})
    for i, (k, v) in enumerate(recs):
        p.produce(topic, key=k, value=v, timestamp=base + i * 1000, headers=[("h", str(i).encode()), ("empty", b"")])
    check(p.flush(TIMEOUT) == 0, "records not delivered")
    c = consumer(PREFIX + "-consume-reader")
    try:
        tp = TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)
        c.assign([tp])
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < n:
            check(time.monotonic() < deadline, "consumed %d of %d records" % (len(got), n))
            for m in c.consume(num_messages=500, timeout=0.5):
                check(not m.error(), "consume error: %s" % m.error())
                got.append(m)
        for i, m in enumerate(got):
            check((m.key(), m.value()) == recs[i] and m.offset() == i, "record %d differs" % i)
            check(m.timestamp() == (confluent_kafka.TIMESTAMP_CREATE_TIME, base + i * 1000),
                  "record %d timestamp %r, want CreateTime %d" % (i, m.timestamp(), base + i * 1000))
            check(m.headers() == [("h", str(i).encode()), ("empty", b"")], "record %d headers %r" % (i, m.headers()))
        marks = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=TIMEOUT)
        check(marks == (0, n), "watermarks %r, want (0, %d)" % (marks, n))
        found = c.offsets_for_times([TopicPartition(topic, 0, base + 150 * 1000 - 1)], timeout=TIMEOUT)[0]
        check(found.error is None and found.offset == 150, "offsets_for_times: %s, want offset 150" % found)
    finally:
        c.close()
    return "%d records with headers and timestamps; offset lookups agree" % n


def test_group():
    """Two members of one group, one dynamic and one static, share a
    4-partition topic; every record arrives once."""
    topic, group, n = PREFIX + "-group", PREFIX + "-group-g", 400
    create_topic(topic, 4)
    assigned = [set(), set()]

    def tracker(i):
        def on_assign(c, parts):
            assigned[i] |= {p.partition for p in parts}

        def on_revoke(c, parts):
            assigned[i] -= {p.partition for p in parts}
        return on_assign, on_revoke

    members = []
    for i in range(2):
        # member 1 is a static member (KIP-345)
        static = {"group.instance.id": PREFIX + "-static"} if i == 1 else {}
        c = consumer(group, **{"client.id": "member-%d" % i, "heartbeat.interval.ms": 500}, **static)
        on_assign, on_revoke = tracker(i)
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        members.append(c)
    got = [[], []]

    def poll_all():
        for i, c in enumerate(members):
            for m in c.consume(num_messages=500, timeout=0.1):
                check(not m.error(), "consume error: %s" % m.error())
                got[i].append((m.key(), m.partition(), m.offset()))

    def split():
        poll_all()
        return (assigned[0] and assigned[1] and not assigned[0] & assigned[1]
                and len(assigned[0] | assigned[1]) == 4)
    try:
        wait_until(split, "both members to share the 4 partitions", 60, 0)
        sizes = [len(a) for a in assigned]
        produce(topic, records("group", n))
        wait_until(lambda: poll_all() or len(got[0]) + len(got[1]) >= n, "%d records" % n, 60, 0)
    finally:
        for c in members:
            c.close()
    return check_split(got, sizes, n)


def test_commit():
    """A consumer commits offset 60; a new consumer of the group resumes there."""
    topic, group = PREFIX + "-commit", PREFIX + "-commit-g"
    recs = records("commit", 100)
    produce(topic, recs)
    c = consumer(group)
    try:
        c.assign([TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        first = consume_all(c, 60)
        c.commit(offsets=[TopicPartition(topic, 0, 60)], asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)[0].offset
        check(committed == 60, "committed() = %r, want 60" % committed)
    finally:
        c.close()
    c = consumer(group)
    try:
        c.subscribe([topic])
        rest = consume_all(c, 40)
    finally:
        c.close()
    check_resumed(first, rest, recs)
    a = admin()
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(TIMEOUT)
    offs = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}
    check(offs == {(topic, 0): 60}, "list_consumer_group_offsets: %s" % offs)
    return "resumed at 60; admin sees offset 60"


def test_admin():
    a = admin()
    # the group of test_commit is Empty; the static member of test_group
    # stays in its group until its session times out, as in Kafka
    topic, group = PREFIX + "-admin", PREFIX + "-commit-g"
    a.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])[topic].result(TIMEOUT)
    md = a.list_topics(timeout=TIMEOUT)
    check(topic in md.topics and len(md.topics[topic].partitions) == 2, "list_topics: %s" % md.topics.get(topic))
    desc = a.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(TIMEOUT)
    check(len(desc.partitions) == 2 and desc.partitions[0].leader.id == 1, "describe_topics: %s" % desc)
    # without an authorizer Kafka reports every operation a resource type supports
    ops = {o.name for o in desc.authorized_operations or []}
    check({"READ", "WRITE", "DESCRIBE", "ALTER_CONFIGS"} <= ops, "topic authorized operations %s" % ops)

    a.create_partitions([NewPartitions(topic, 5)])[topic].result(TIMEOUT)
    wait_until(lambda: len(a.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT).partitions) == 5,
               "5 partitions after create_partitions")

    res = ConfigResource(ResourceType.TOPIC, topic)
    conf = a.describe_configs([res])[res].result(TIMEOUT)
    check(conf["retention.ms"].value == "3600000", "retention.ms = %s" % conf["retention.ms"])
    a.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])])[res].result(TIMEOUT)
    conf = a.describe_configs([res])[res].result(TIMEOUT)
    check(conf["retention.ms"].value == "7200000" and conf["cleanup.policy"].value == "compact",
          "after incremental_alter_configs: %s %s" % (conf["retention.ms"], conf["cleanup.policy"]))
    with warnings.catch_warnings():  # deprecated by the client, still served by Kafka 4.1
        warnings.simplefilter("ignore", DeprecationWarning)
        fs = a.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "1800000"})])
    fs[res].result(TIMEOUT)
    conf = a.describe_configs([res])[res].result(TIMEOUT)
    check(conf["retention.ms"].value == "1800000", "after alter_configs: %s" % conf["retention.ms"])
    check(conf["cleanup.policy"].value == "delete",
          "alter_configs (not incremental) must reset cleanup.policy: %s" % conf["cleanup.policy"])

    cluster = a.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    check([n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1, "describe_cluster: %s" % cluster)
    ops = {o.name for o in cluster.authorized_operations or []}
    check({"DESCRIBE", "IDEMPOTENT_WRITE", "ALTER_CONFIGS"} <= ops, "cluster authorized operations %s" % ops)

    tp = TopicPartition(topic, 0)
    produce(topic, [(None, b"v%d" % i) for i in range(10)], partition=0)
    offs = a.list_offsets({tp: OffsetSpec.earliest()})[tp].result(TIMEOUT).offset
    check(offs == 0, "earliest offset %d, want 0" % offs)
    offs = a.list_offsets({tp: OffsetSpec.latest()})[tp].result(TIMEOUT).offset
    check(offs == 10, "latest offset %d, want 10" % offs)
    deleted = a.delete_records([TopicPartition(topic, 0, 4)])[tp].result(TIMEOUT)
    check(deleted.low_watermark == 4, "delete_records low watermark %d, want 4" % deleted.low_watermark)
    offs = a.list_offsets({tp: OffsetSpec.earliest()})[tp].result(TIMEOUT).offset
    check(offs == 4, "earliest offset after delete_records %d, want 4" % offs)

    listed = a.list_consumer_groups().result(TIMEOUT)
    check(not listed.errors, "list_consumer_groups errors: %s" % listed.errors)
    ids = [g.group_id for g in listed.valid]
    check(group in ids and PREFIX + "-group-g" in ids, "list_consumer_groups %s lacks %s" % (ids, group))
    gd = a.describe_consumer_groups([group], include_authorized_operations=True)[group].result(TIMEOUT)
    ops = {o.name for o in gd.authorized_operations or []}
    # Kafka's operations on a group (AclEntry.supportedOperations(GROUP)),
    # all of them without an authorizer.
    check(ops == {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}, "group authorized operations %s" % ops)
    check(gd.group_id == group and gd.state == confluent_kafka.ConsumerGroupState.EMPTY and
          gd.coordinator.id == 1, "describe_consumer_groups: %s" % gd)

    commit_group, commit_tp = group, TopicPartition(PREFIX + "-commit", 0, 30)
    a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(commit_group, [commit_tp])])[commit_group].result(TIMEOUT)
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(commit_group)])[commit_group].result(TIMEOUT)
    offs = {(t.topic, t.partition): t.offset for t in res.topic_partitions}
    check(offs == {(commit_tp.topic, 0): 30}, "after alter_consumer_group_offsets: %s" % offs)
    a.delete_consumer_groups([commit_group])[commit_group].result(TIMEOUT)
    ids = [g.group_id for g in a.list_consumer_groups().result(TIMEOUT).valid]
    check(commit_group not in ids, "deleted group still listed: %s" % ids)

    a.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    wait_until(lambda: topic not in a.list_topics(timeout=TIMEOUT).topics, "deleted topic to leave the list")
    return ("create/describe/delete topics, create_partitions, describe/alter/incremental_alter configs, "
            "describe_cluster, list_offsets, delete_records, list/describe/delete groups, alter/list group offsets")


def test_idempotence():
    n = 200
    topic = PREFIX + "-idempotence"
    recs = records("idempotence", n)
    acks = produce(topic, recs, **{"enable.idempotence": True, "max.in.flight.requests.per.connection": 5,
                                   "batch.num.messages": 20})
    check(sorted(o for _, o in acks) == list(range(n)), "acked offsets not 0..%d" % (n - 1))
    got = read_back(topic, n)
    check([(k, v) for k, v, _, _ in got] == recs, "consumed records differ")
    return "%d records once, in order, 20-record batches in flight" % n


def transactional(name):
    """A producer with a transactional.id, its transactions initialized."""
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": PREFIX + "-" + name, "linger.ms": 5})
    p.init_transactions(TIMEOUT)
    return p


def transact(p, topic, recs, commit):
    """Sends recs in one transaction of p, then commits or aborts it. The
    records are delivered first, so that even the aborted ones reach the log."""
    p.begin_transaction()
    deliver(p, topic, recs)
    p.commit_transaction(TIMEOUT) if commit else p.abort_transaction(TIMEOUT)


def test_transactions():
    """Commit, abort and commit (see compatlib.check_transactions), then
    consume-transform-produce."""
    topic = PREFIX + "-txn"
    create_topic(topic, 2)
    with closing(transactional("txn-id")) as p:
        done = check_transactions(partial(transact, p, topic),
                                  lambda level, n: read_back(topic, n, 2, **{"isolation.level": level}))
    return done + "; " + consume_transform_produce()


def consume_transform_produce():
    """A group reads <prefix>-txn-in; each consume() batch is copied,
    transformed, to <prefix>-txn-out in one transaction that also carries
    the consumer's positions (send_offsets_to_transaction with
    consumer_group_metadata()). The group's committed offsets reach the
    input's end, and a read_committed consumer finds the copies."""
    src, dst, group, n = PREFIX + "-txn-in", PREFIX + "-txn-out", PREFIX + "-txn-group", 100
    create_topic(src, 2)
    create_topic(dst, 2)
    produce(src, records("txn-in", n))
    c = consumer(group, **{"isolation.level": "read_committed"})
    try:
        c.subscribe([src])
        with closing(transactional("txn-eos")) as p:
            # at most 25 records a transaction, so that the copy takes several
            txns = copy_in_transactions(n, lambda: copy_consumed(p, c, dst, c.consume(num_messages=25, timeout=0.5)))
        tps = [TopicPartition(src, i) for i in range(2)]
        ends = [c.get_watermark_offsets(tp, TIMEOUT)[1] for tp in tps]
        wait_until(lambda: [tp.offset for tp in c.committed(tps, TIMEOUT)] == ends,
                   "%s's offsets at the end offsets %s of %s" % (group, ends, src))
    finally:
        c.close()
    check_same_records(read_back(dst, n, 2, **{"isolation.level": "read_committed"}), records("txn-out", n), dst)
    return ("%d records copied in %d transactions with send_offsets_to_transaction, the group's offsets "
            "at the input's end" % (n, txns))


def copy_consumed(p, c, dst, msgs):
    """Copies msgs, consumed by c, to dst in one transaction with c's positions."""
    if not msgs:
        return 0
    for m in msgs:
        check(not m.error(), "consume error: %s" % m.error())
    p.begin_transaction()
    deliver(p, dst, [(m.key(), transform(m.value())) for m in msgs])
    touched = sorted({(m.topic(), m.partition()) for m in msgs})
    positions = c.position([TopicPartition(topic, i) for topic, i in touched])
    p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), TIMEOUT)
    p.commit_transaction(TIMEOUT)
    return len(msgs)


def main():
    print("VERSION %s %s (librdkafka %s)" % (CLIENT, importlib.metadata.version("confluent-kafka"),
                                             confluent_kafka.libversion()[0]), flush=True)
    run("produce", test_produce)
    run("consume", test_consume)
    run("group", test_group)
    run("commit", test_commit)
    run("admin", test_admin)
    run("idempotence", test_idempotence)
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        run(codec, lambda: roundtrip(codec, **{"compression.type": codec}))
    run("transactions", test_transactions)


if __name__ == "__main__":
    main()
