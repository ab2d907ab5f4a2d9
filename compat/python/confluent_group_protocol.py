"""confluent-kafka (librdkafka's Python binding) with Kafka 4's consumer
group protocol (KIP-848, group.protocol=consumer) against a Gregor broker.

Usage: python confluent_group_protocol.py BOOTSTRAP TOPIC_PREFIX
Prints the VERSION line of confluent_compat.py and one RESULT line, for the
feature group-protocol (see compatlib and compat/group_protocol_test.go):

  - Members a and b split the 4-partition topic <prefix>; the client's
    AdminClient describes the group as a Stable group of type consumer
    whose members hold what each member's on_assign/on_revoke say it
    holds. A first round of records is consumed exactly once, each member
    reading only its own partitions, and auto-commits reach the end of
    every partition.
  - b leaves and c joins while a second round is being written: the
    commits do not go back, c takes partitions over, and the second round
    is consumed exactly once and committed; so is a third round, written
    once the group settled, each member reading its own partitions.
  - Members r1 and r2 of another group, with the broker's range assignor,
    subscribe to the pattern ^<prefix>-re-.*; <prefix>-re-2, created
    while they run, reaches them through the broker's assignment.

compat/group_protocol_test.go then checks the groups' commits with franz-go.
"""

import importlib.metadata
from collections import Counter

import confluent_kafka
from confluent_kafka import (ConsumerGroupTopicPartitions, ConsumerGroupState, ConsumerGroupType, Consumer, KafkaError,
                             Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from compatlib import args, check, run, wait_until

BOOTSTRAP, PREFIX = args()
CLIENT = "confluent-kafka-python"
TIMEOUT = 30.0
PARTITIONS = 4
PER_PARTITION = 25

ADMIN = AdminClient({"bootstrap.servers": BOOTSTRAP})


def create_topic(name):
    ADMIN.create_topics([NewTopic(name, PARTITIONS, 1)], operation_timeout=TIMEOUT)[name].result(TIMEOUT)


class Member:
    """A subscribed consumer of the consumer protocol, auto-committing every
    100 ms; assigned follows its rebalance callbacks."""

    def __init__(self, name, group, topics, **conf):
        self.name = name
        self.assigned = set()  # (topic, partition)
        self.got = []  # (value, topic, partition)
        self.c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.protocol": "consumer", "group.id": group,
                           "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": True,
                           "auto.commit.interval.ms": 100, "fetch.wait.max.ms": 100, **conf})
        self.c.subscribe(topics, on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_revoke)

    def on_assign(self, c, parts):
        self.assigned |= {(p.topic, p.partition) for p in parts}

    def on_revoke(self, c, parts):
        self.assigned -= {(p.topic, p.partition) for p in parts}

    def poll(self):
        for m in self.c.consume(num_messages=500, timeout=0.05):
            if m.error():
                check(m.error().code() == KafkaError._PARTITION_EOF, "%s: consume error: %s" % (self.name, m.error()))
                continue
            self.got.append((m.value().decode(), m.topic(), m.partition()))

    def close(self):
        if self.c is not None:
            self.c.close()  # commits, then leaves the group
            self.c = None


def poll_all(members):
    for m in members:
        if m.c is not None:
            m.poll()


def describe(group):
    return ADMIN.describe_consumer_groups([group])[group].result(TIMEOUT)


def settled(group, members, topics, during):
    """Polls the members (calling during() first) and returns the group's
    description once the members hold every partition of topics once
    between them, each some, and the broker describes the group as Stable
    with just these members holding just that; None until then."""
    during()
    poll_all(members)
    want = {(t, p) for t in topics for p in range(PARTITIONS)}
    held = [m.assigned for m in members]
    if not all(held) or sum(len(h) for h in held) != len(want) or set().union(*held) != want:
        return None
    d = describe(group)
    by_client = {md.client_id: {(tp.topic, tp.partition) for tp in md.assignment.topic_partitions} for md in d.members}
    if d.state != ConsumerGroupState.STABLE or by_client != {m.name: m.assigned for m in members}:
        return None
    return d


def wait_settled(group, members, topics, during=lambda: None):
    d = wait_until(lambda: settled(group, members, topics, during),
                   "%s to settle with members %s over %s" % (group, [m.name for m in members], topics), 45, 0)
    check(d.type == ConsumerGroupType.CONSUMER, "%s described as type %s, want CONSUMER" % (group, d.type))
    return d


class Writer:
    """Writes records valued <name>-p<partition>-<i> to topic: step()
    writes one to every partition, finish() waits for their delivery and
    returns the values."""

    def __init__(self, topic, name):
        self.topic, self.name = topic, name
        self.p = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 5})
        self.values, self.errors, self.n = [], [], 0

    def step(self):
        for part in range(PARTITIONS):
            v = "%s-p%d-%d" % (self.name, part, self.n)
            self.values.append(v)
            self.p.produce(self.topic, value=v.encode(), partition=part,
                           on_delivery=lambda err, msg: self.errors.append(err))
        self.n += 1
        self.p.poll(0)

    def finish(self):
        check(self.p.flush(TIMEOUT) == 0, "records of %s not delivered" % self.name)
        check(len(self.errors) == len(self.values) and not any(self.errors),
              "delivery errors: %s" % [e for e in self.errors if e][:3])
        return self.values


def produce_round(topic, name):
    """Writes PER_PARTITION records to every partition of topic and returns
    their values."""
    w = Writer(topic, name)
    for _ in range(PER_PARTITION):
        w.step()
    return w.finish()


def committed(group):
    res = ADMIN.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}


def end_offsets(topic):
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    res = ADMIN.list_offsets({tp: OffsetSpec.latest() for tp in tps})
    return {(tp.topic, tp.partition): res[tp].result(TIMEOUT).offset for tp in tps}


def consume_round(group, members, topic, name, produced, values=None, gone=()):
    """Produces the round name to topic (unless its values were written
    already, while the group changed), waits until the members consumed it
    and the group committed the end offsets of topic, and checks every
    value produced so far was consumed exactly once (by the members, or
    the members gone from the group). In a round the group did not change
    in, each member must have read it from exactly the partitions it holds."""
    settled_round = values is None
    if settled_round:
        values = produce_round(topic, name)
    produced.extend(values)

    def all_consumed():
        poll_all(members)
        return {v for m in list(members) + list(gone) for v, _, _ in m.got}.issuperset(values)
    wait_until(all_consumed, "round %s consumed" % name, TIMEOUT, 0)
    counts = Counter(v for m in list(members) + list(gone) for v, _, _ in m.got)
    check(counts == Counter(produced), "consumed %d records (%d distinct), want the %d produced once each; e.g. %s"
          % (sum(counts.values()), len(counts), len(produced),
             sorted(v for v in set(counts) | set(produced) if counts[v] != 1)[:3]))
    for m in members if settled_round else ():
        read = {(t, p) for v, t, p in m.got if v.startswith(name + "-")}
        mine = {tp for tp in m.assigned if tp[0] == topic}
        check(read == mine, "%s read round %s from %s but holds %s" % (m.name, name, sorted(read), sorted(mine)))
    ends = end_offsets(topic)

    def at_end():
        poll_all(members)
        got = committed(group)
        return all(got.get(tp) == off for tp, off in ends.items())
    wait_until(at_end, "%s to commit %s" % (group, ends), TIMEOUT, 0)


def members_scenario():
    """a and b consume the first round; b leaves and c joins while the
    second round is being written; a and c consume the third."""
    topic, group = PREFIX, PREFIX + "-g"
    create_topic(topic)
    produced = []
    a, b = Member("a", group, [topic]), Member("b", group, [topic])
    members = [a, b]
    try:
        d = wait_settled(group, members, [topic])
        check(d.partition_assignor == "uniform", "assignor %r, want the broker's default uniform" % d.partition_assignor)
        consume_round(group, members, topic, "first", produced)
        before = committed(group)

        w = Writer(topic, "second")
        for _ in range(5):
            w.step()
            poll_all(members)
        b.close()  # commits, then leaves
        c = Member("c", group, [topic])
        members = [a, c]
        wait_settled(group, members, [topic], during=w.step)
        for _ in range(5):
            w.step()
            poll_all(members)
        now = committed(group)
        check(all(now.get(tp, -1) >= off for tp, off in before.items()),
              "commits %s after b left and c joined, behind the %s committed before" % (now, before))
        consume_round(group, members, topic, "second", produced, values=w.finish(), gone=[b])

        consume_round(group, members, topic, "third", produced, gone=[b])
    finally:
        for m in (a, b) + tuple(members):
            m.close()
    wait_until(lambda: describe(group).state == ConsumerGroupState.EMPTY, group + " empty once every member left")
    listed = {g.group_id: g for g in ADMIN.list_consumer_groups().result(TIMEOUT).valid}
    check(group in listed and listed[group].type == ConsumerGroupType.CONSUMER,
          "list_consumer_groups shows %s as %s" % (group, group in listed and vars(listed[group])))
    return "a+b, then a+c after b left (under load), %d records once, commits at the end" % len(produced)


def regex_scenario():
    group, topic1, topic2 = PREFIX + "-re-g", PREFIX + "-re-1", PREFIX + "-re-2"
    create_topic(topic1)
    produced = []
    members = [Member(n, group, ["^" + PREFIX + "-re-.*"], **{"group.remote.assignor": "range"}) for n in ("r1", "r2")]
    try:
        d = wait_settled(group, members, [topic1])
        check(d.partition_assignor == "range", "assignor %r, want range" % d.partition_assignor)
        consume_round(group, members, topic1, "re1", produced)
        create_topic(topic2)
        d = wait_settled(group, members, [topic1, topic2])
        for m in members:
            n = len([tp for tp in m.assigned if tp[0] == topic2])
            check(n == PARTITIONS // 2, "%s holds %d partitions of %s, want half from the range assignor" % (m.name, n, topic2))
        consume_round(group, members, topic2, "re2", produced)
        got = {tp: off for tp, off in committed(group).items() if tp[0] == topic1}
        check(got == {(topic1, p): PER_PARTITION for p in range(PARTITIONS)}, "commits on %s now %s" % (topic1, got))
    finally:
        for m in members:
            m.close()
    return "regex picked up %s created later, %d records once" % (topic2, len(produced))


def test_group_protocol():
    return members_scenario() + "; " + regex_scenario()


def main():
    # the same row of the matrix as confluent_compat.py
    print("VERSION %s %s (librdkafka %s)" % (CLIENT, importlib.metadata.version("confluent-kafka"),
                                             confluent_kafka.libversion()[0]), flush=True)
    run("group-protocol", test_group_protocol)


if __name__ == "__main__":
    main()
