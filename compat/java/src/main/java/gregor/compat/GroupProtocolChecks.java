package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * The consumer group protocol of KIP-848 ({@code group.protocol=consumer}):
 * the coordinator assigns the partitions through ConsumerGroupHeartbeat,
 * without JoinGroup/SyncGroup. Members commit with commitSync() after every
 * poll that returned records and in onPartitionsRevoked, the documented way
 * to hand partitions over without delivering a record twice, so the records
 * of each partition must reach the group exactly once and in offset order
 * across every change of owner; a member that loses its partitions (fenced)
 * fails the check. One thread polls every consumer in turn; each client
 * heartbeats from its own background thread.
 */
final class GroupProtocolChecks {
    private static final int PARTITIONS = 6;
    private static final Map<String, Object> PROTOCOL = Map.of(
            ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer",
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);

    private final Clients clients;

    GroupProtocolChecks(Clients clients) {
        this.clients = clients;
    }

    /** The classic protocol as a Java consumer of the same group speaks it, told of rebalances within half a second. */
    private static final Map<String, Object> CLASSIC = Map.of(
            ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20,
            ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);

    String all() throws Exception {
        return members() + "; " + pattern() + "; " + brokerPattern() + "; " + migration();
    }

    /** A member of the group under test; it checks every record it receives against {@code next}. */
    private final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Map<TopicPartition, Long> next;
        int received;
        String lost;

        Member(String name, String group, String topic, Map<TopicPartition, Long> next) {
            this(name, group, topic, next, PROTOCOL);
        }

        Member(String name, String group, String topic, Map<TopicPartition, Long> next, Map<String, Object> settings) {
            this.name = name;
            this.next = next;
            consumer = clients.consumer(group, settings);
            consumer.subscribe(List.of(topic), this);
        }

        /**
         * Polls once. Every record must be of a partition the member owns and
         * be the next offset of that partition the group has not received yet.
         */
        void poll() {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            Expect.that(lost == null, name + " lost partitions " + lost + ": the coordinator fenced it");
            for (ConsumerRecord<String, String> r : records) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                Expect.that(consumer.assignment().contains(tp), name + " got a record of " + tp + ", which it does not own");
                Expect.equal(r.offset(), next.getOrDefault(tp, 0L),
                        name + ": offset of the record of " + tp + " after those the group received (a gap loses records, a repeat re-delivers them)");
                next.put(tp, r.offset() + 1);
                received++;
            }
            if (!records.isEmpty()) {
                consumer.commitSync(Clients.TIMEOUT);
            }
        }

        String memberId() {
            return consumer.groupMetadata().memberId();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            consumer.commitSync(Clients.TIMEOUT);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            lost = partitions.toString();
        }
    }

    /**
     * While a producer keeps writing to a 6-partition topic, three members
     * split it 2+2+2; one of them leaves (close) and the other two take its
     * partitions over (3+3) from its committed offsets; a fourth joins
     * (2+2+2 again). Every member reads records after every change, every
     * record reaches the group once and in order, and the last commits are
     * the end of each partition. The admin client describes the group
     * (ConsumerGroupDescribe) with its members' assignments.
     */
    String members() throws Exception {
        String topic = clients.name("gp");
        String group = clients.name("gp-g");
        clients.createTopic(topic, PARTITIONS);
        Map<TopicPartition, Long> next = new HashMap<>();
        List<Member> live = new ArrayList<>();
        try (Feed feed = new Feed(topic)) {
            for (String name : List.of("a", "b", "c")) {
                live.add(new Member(name, group, topic, next));
            }
            awaitSplit("three members to own 2 partitions each", live);
            awaitEachReads(live);

            Member c = live.get(2);
            Set<TopicPartition> cOwned = Set.copyOf(c.consumer.assignment());
            Map<TopicPartition, OffsetAndMetadata> cCommitted = c.consumer.committed(cOwned, Clients.TIMEOUT);
            for (TopicPartition tp : cOwned) {
                Expect.equal(cCommitted.get(tp) == null ? null : cCommitted.get(tp).offset(), next.getOrDefault(tp, 0L), "c's committed offset of " + tp);
            }
            c.consumer.close(Clients.TIMEOUT);
            live.remove(c);
            awaitSplit("the two remaining members to own 3 partitions each", live);
            awaitEachReads(live);

            live.add(new Member("d", group, topic, next));
            awaitSplit("a, b and the new member d to own 2 partitions each", live);
            awaitEachReads(live);
            String described = expectDescribed(group, live);

            long total = feed.stop();
            awaitRecords(live, total);
            expectCommitted(live.get(2), topic, next);
            return "3 members split " + PARTITIONS + " partitions 2+2+2; c left and a and b took its partitions over from its commits (3+3); "
                    + "d joined (2+2+2); " + total + " records, written meanwhile, received once, in order, committed; " + described;
        } finally {
            for (Member m : live) {
                m.consumer.close(Clients.TIMEOUT);
            }
        }
    }

    /**
     * Online migration between the protocols, as a rolling upgrade of a
     * group's consumers does it: two members of the classic protocol (the
     * Java client's default assignors, range first: eager) split the topic
     * 3+3; a member of the consumer protocol joins the live group, which
     * becomes a consumer group (2+2+2) whose classic members rebalance
     * through JoinGroup and SyncGroup; when it leaves, the group is classic
     * again (3+3). A producer writes throughout; every record reaches the
     * group once, in order, and the last commits are the end of each
     * partition; no member is fenced.
     */
    String migration() throws Exception {
        String topic = clients.name("gp-mig");
        String group = clients.name("gp-mig-g");
        clients.createTopic(topic, PARTITIONS);
        Map<TopicPartition, Long> next = new HashMap<>();
        List<Member> live = new ArrayList<>();
        try (Feed feed = new Feed(topic)) {
            live.add(new Member("classic-a", group, topic, next, CLASSIC));
            live.add(new Member("classic-b", group, topic, next, CLASSIC));
            awaitSplit("two classic members to own 3 partitions each", live);
            awaitEachReads(live);
            expectType(group, live, GroupType.CLASSIC);

            Member c = new Member("consumer-c", group, topic, next, PROTOCOL);
            live.add(c);
            awaitSplit("the classic members and consumer-protocol member c to own 2 partitions each", live);
            awaitEachReads(live);
            expectType(group, live, GroupType.CONSUMER);

            c.consumer.close(Clients.TIMEOUT);
            live.remove(c);
            awaitSplit("the classic members to own 3 partitions each again", live);
            awaitEachReads(live);
            expectType(group, live, GroupType.CLASSIC);

            long total = feed.stop();
            awaitRecords(live, total);
            expectCommitted(live.get(0), topic, next);
            return "online migration: 2 classic members (3+3), a consumer-protocol member joined the live group (consumer group, 2+2+2) and left "
                    + "(classic group, 3+3); " + total + " records, written meanwhile, received once, in order, committed";
        } finally {
            for (Member m : live) {
                m.consumer.close(Clients.TIMEOUT);
            }
        }
    }

    /** The group's committed offsets, as member m reads them, are next: the offsets after the last records received. */
    private static void expectCommitted(Member m, String topic, Map<TopicPartition, Long> next) {
        Map<TopicPartition, OffsetAndMetadata> committed = m.consumer.committed(Set.copyOf(next.keySet()), Clients.TIMEOUT);
        for (int p = 0; p < PARTITIONS; p++) {
            TopicPartition tp = new TopicPartition(topic, p);
            Expect.equal(committed.get(tp) == null ? null : committed.get(tp).offset(), next.getOrDefault(tp, 0L), "committed offset of " + tp);
        }
    }

    /** Polls the members until describeConsumerGroups shows the group of this type with all of them. */
    private void expectType(String group, List<Member> members, GroupType type) throws Exception {
        awaitDescribed(group, members, "describeConsumerGroups to show a " + type + " group of " + members.size() + " members",
                d -> d.type() == type && d.members().size() == members.size());
    }

    /** Polls the members until describeConsumerGroups describes the group as ok wants; fails with what and the last description. */
    private void awaitDescribed(String group, List<Member> members, String what, Predicate<ConsumerGroupDescription> ok) throws Exception {
        for (long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos(); ; ) {
            for (Member m : members) {
                m.poll();
            }
            ConsumerGroupDescription d = clients.admin().describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            if (ok.test(d)) {
                return;
            }
            Expect.that(System.nanoTime() < deadline, what + "; last: " + d);
            Thread.sleep(50);
        }
    }

    /** Writes records round-robin to every partition of a topic from its own thread, each acknowledged before the next. */
    private final class Feed implements AutoCloseable {
        private final KafkaProducer<String, String> producer = clients.producer();
        private final Thread thread;
        private volatile boolean stopped;
        private volatile long sent;
        private volatile Exception failed;

        Feed(String topic) {
            thread = new Thread(() -> {
                try {
                    for (long i = 0; !stopped; i++) {
                        producer.send(new ProducerRecord<>(topic, (int) (i % PARTITIONS), null, "live-" + i)).get();
                        sent = i + 1;
                    }
                } catch (Exception e) {
                    failed = e;
                }
            }, "feed");
            thread.start();
        }

        /** Stops writing; returns how many records were written. */
        long stop() throws Exception {
            stopped = true;
            thread.join();
            if (failed != null) {
                throw failed;
            }
            return sent;
        }

        @Override
        public void close() throws Exception {
            stopped = true;
            thread.join();
            producer.close();
        }
    }

    /** Polls every member until each has received a record it had not before. */
    private void awaitEachReads(List<Member> members) throws InterruptedException {
        Map<Member, Integer> before = new HashMap<>();
        for (Member m : members) {
            before.put(m, m.received);
        }
        Expect.eventually(Clients.TIMEOUT, "every member to read records of its partitions " + owned(members), () -> {
            boolean all = true;
            for (Member m : members) {
                m.poll();
                all &= m.received > before.get(m);
            }
            return all;
        });
    }

    /** Polls every member until they own disjoint, equal shares of all partitions. */
    private void awaitSplit(String what, List<Member> members) throws InterruptedException {
        try {
            awaitSplitOnce(what, members);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; they own " + owned(members), e.getCause());
        }
    }

    private static Map<String, Set<TopicPartition>> owned(List<Member> members) {
        Map<String, Set<TopicPartition>> owned = new TreeMap<>();
        for (Member m : members) {
            owned.put(m.name, m.consumer.assignment());
        }
        return owned;
    }

    private void awaitSplitOnce(String what, List<Member> members) throws InterruptedException {
        Expect.eventually(Clients.TIMEOUT, what, () -> {
            Set<TopicPartition> all = new HashSet<>();
            int sum = 0;
            boolean even = true;
            for (Member m : members) {
                m.poll();
                all.addAll(m.consumer.assignment());
                sum += m.consumer.assignment().size();
                even &= m.consumer.assignment().size() == PARTITIONS / members.size();
            }
            return even && sum == PARTITIONS && all.size() == PARTITIONS;
        });
    }

    /** Polls every member until the group has received total records. */
    private void awaitRecords(List<Member> members, long total) throws InterruptedException {
        Map<TopicPartition, Long> next = members.get(0).next;
        try {
            Expect.eventually(Clients.TIMEOUT, total + " records to reach the group", () -> {
                for (Member m : members) {
                    m.poll();
                }
                return next.values().stream().mapToLong(Long::longValue).sum() >= total;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; received up to " + next + ", members own " + owned(members), e.getCause());
        }
        Expect.equal(next.values().stream().mapToLong(Long::longValue).sum(), total, "records the group received");
    }

    /**
     * describeConsumerGroups (ConsumerGroupDescribe): a consumer group,
     * Stable, the uniform assignor, and exactly the members with the
     * partitions their consumers own, as current and target assignment.
     */
    private String expectDescribed(String group, List<Member> members) throws Exception {
        Map<String, Set<TopicPartition>> want = new TreeMap<>();
        for (Member m : members) {
            want.put(m.memberId(), Set.copyOf(m.consumer.assignment()));
        }
        awaitDescribed(group, members, "describeConsumerGroups to show the stable group " + want, d -> {
            Map<String, Set<TopicPartition>> got = new TreeMap<>(), target = new TreeMap<>();
            for (MemberDescription md : d.members()) {
                got.put(md.consumerId(), md.assignment().topicPartitions());
                target.put(md.consumerId(), md.targetAssignment().map(a -> a.topicPartitions()).orElse(null));
            }
            return d.type() == GroupType.CONSUMER && d.state() == ConsumerGroupState.STABLE
                    && "uniform".equals(d.partitionAssignor()) && got.equals(want) && target.equals(want);
        });
        return "describeConsumerGroups: consumer group, Stable, uniform, " + members.size() + " members with their partitions";
    }

    /**
     * subscribe(Pattern): the client matches the pattern against the topics
     * its metadata lists (refreshed every second here, instead of every 5
     * minutes) and subscribes by name; a topic created after subscribing
     * joins the subscription and is assigned and read.
     */
    String pattern() throws Exception {
        String prefix = clients.name("gp-pat-");
        clients.createTopic(prefix + "a", 2);
        Map<String, Object> settings = new HashMap<>(PROTOCOL);
        settings.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1000);
        try (KafkaConsumer<String, String> c = clients.consumer(clients.name("gp-pat-g"), settings)) {
            c.subscribe(Pattern.compile(Pattern.quote(prefix) + ".*"));
            Expect.eventually(Clients.TIMEOUT, "the pattern subscriber to own " + prefix + "a",
                    () -> { c.poll(Duration.ofMillis(100)); return c.assignment().size() == 2; });
            clients.createTopic(prefix + "b", 2);
            readNew(c, prefix + "b", 2, "pattern");
            Expect.equal(c.subscription(), Set.of(prefix + "a", prefix + "b"), "topics the pattern matched");
            Expect.equal(c.assignment().size(), 4, "partitions of the pattern subscriber");
        }
        return "subscribe(Pattern) picked up a topic created after subscribing";
    }

    /**
     * subscribe(SubscriptionPattern): the coordinator matches the regular
     * expression (SubscribedTopicRegex); a topic created after subscribing,
     * the first that matches, is assigned and read.
     */
    String brokerPattern() throws Exception {
        String prefix = clients.name("gp-re2-");
        try (KafkaConsumer<String, String> c = clients.consumer(clients.name("gp-re2-g"), PROTOCOL)) {
            subscribeRegex(c, prefix + ".*");
            for (int i = 0; i < 5; i++) {
                c.poll(Duration.ofMillis(100));
            }
            Expect.equal(c.assignment(), Set.of(), "assignment before any topic matches");
            clients.createTopic(prefix + "a", 2);
            readNew(c, prefix + "a", 2, "re2");
            Expect.equal(c.assignment(), Set.of(new TopicPartition(prefix + "a", 0), new TopicPartition(prefix + "a", 1)),
                    "assignment of the regex subscriber");
        }
        return "subscribe(SubscriptionPattern) picked up a topic created after subscribing";
    }

    /** Writes 10 records to each of the topic's partitions, has c read all of them, each once, and commit. */
    private void readNew(KafkaConsumer<String, String> c, String topic, int partitions, String prefix) throws InterruptedException {
        produce(topic, partitions, 10, prefix);
        Set<String> seen = new HashSet<>();
        Expect.eventually(Clients.TIMEOUT, "the subscriber to read the " + 10 * partitions + " records of " + topic, () -> {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                Expect.that(r.topic().equals(topic), "a record of " + r.topic());
                Expect.that(seen.add(r.value()), r.value() + " received twice");
            }
            return seen.size() == 10 * partitions;
        });
        c.commitSync(Clients.TIMEOUT);
    }

    /** KafkaConsumer.subscribe(SubscriptionPattern), which kafka-clients 3.x lacks: called by reflection so this compiles against 3.x too. */
    private static void subscribeRegex(KafkaConsumer<String, String> c, String regex) throws Exception {
        Class<?> cls = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
        KafkaConsumer.class.getMethod("subscribe", cls).invoke(c, cls.getConstructor(String.class).newInstance(regex));
    }

    /** Writes perPartition records "prefix-p-i" to each partition of topic. */
    private void produce(String topic, int partitions, int perPartition, String prefix) {
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < perPartition; i++) {
                for (int part = 0; part < partitions; part++) {
                    p.send(new ProducerRecord<>(topic, part, null, prefix + "-" + part + "-" + i));
                }
            }
            p.flush();
        }
    }
}
