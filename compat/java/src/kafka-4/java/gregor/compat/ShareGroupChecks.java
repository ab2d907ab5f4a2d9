package gregor.compat;

import static gregor.compat.AdminCalls.expectFailure;
import static gregor.compat.AdminCalls.get;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Share groups (KIP-932, "queues for Kafka") through kafka-clients' own
 * KafkaShareConsumer and Admin client, as steps on one share group and
 * one 3-partition topic:
 *
 * <ol>
 *   <li>config: the group's share.auto.offset.reset=earliest and
 *       share.heartbeat.interval.ms=1000 set with incrementalAlterConfigs
 *       on a GROUP resource and described back; a bad value refused. Half
 *       the records are written before any member exists, so only the
 *       earliest reset delivers them.
 *   <li>consume: two KafkaShareConsumers with explicit acknowledgement
 *       join; once both own partitions the other half is written. Member
 *       a RELEASEs the records whose index ends in 3 and REJECTs those
 *       ending in 7 on their first delivery and ACCEPTs the rest; b
 *       ACCEPTs all. A released record comes back once, with
 *       deliveryCount 2, and is accepted; a rejected one never comes back;
 *       every other record is delivered once, with deliveryCount 1: every
 *       record not rejected is accepted exactly once, and both members
 *       get records. Every acknowledgement commits without error.
 *   <li>describe: listGroups (share groups, and all groups) and
 *       describeShareGroups show the group Stable with both members and
 *       their partitions; altering or deleting its offsets or deleting the
 *       group is refused while it has members; after they close it is
 *       Empty.
 *   <li>offsets: listShareGroupOffsets gives each partition's start offset
 *       as its end offset, lag 0, and the leader epoch of the partition
 *       leader that wrote the state (0 on a new single-node topic, as the
 *       share coordinator keeps it).
 *   <li>alter: alterShareGroupOffsets to 0 on the empty group; the offsets
 *       read 0 with a lag of every record; a new consumer (implicit
 *       acknowledgement) gets every record again, each with deliveryCount 1;
 *       the start offsets are the end offsets again.
 *   <li>delete: deleteShareGroupOffsets of the topic leaves no offsets;
 *       deleteShareGroups removes the group (describe: GroupIdNotFound,
 *       listGroups: gone).
 * </ol>
 */
final class ShareGroupChecks implements AutoCloseable {
    private static final int PARTITIONS = 3;
    private static final int HALF = 150;
    private static final int RECORDS = 2 * HALF;

    private final Clients clients;
    private final Admin admin;
    private final String topic;
    private final String group;
    private final List<Member> open = new ArrayList<>();
    private final Set<TopicPartition> partitions = new TreeSet<>((x, y) -> Integer.compare(x.partition(), y.partition()));

    // What happened to each record (by index) in the consume step.
    private final Map<Integer, List<String>> history = new TreeMap<>();
    private final Set<Integer> released = new TreeSet<>();
    private final Set<Integer> rejected = new TreeSet<>();
    private final Set<Integer> accepted = new TreeSet<>();

    ShareGroupChecks(Clients clients) {
        this.clients = clients;
        this.admin = clients.admin();
        this.topic = clients.name("share");
        this.group = clients.name("share-g");
        for (int p = 0; p < PARTITIONS; p++) {
            partitions.add(new TopicPartition(topic, p));
        }
    }

    /** A KafkaShareConsumer of the group, subscribed to the topic. */
    private final class Member {
        final String name;
        final boolean explicit;
        final KafkaShareConsumer<String, String> consumer;
        int delivered;

        Member(String name, boolean explicit) {
            this.name = name;
            this.explicit = explicit;
            Map<String, Object> p = new HashMap<>();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, clients.bootstrap());
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            if (explicit) {
                p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
            }
            consumer = new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
            open.add(this);
            consumer.subscribe(List.of(topic));
        }

        /** How this member acknowledges record i on delivery count: only a releases and rejects, on first delivery. */
        AcknowledgeType decide(int i, int count) {
            if (name.equals("share-a") && count == 1 && i % 10 == 3) {
                return AcknowledgeType.RELEASE;
            }
            if (name.equals("share-a") && count == 1 && i % 10 == 7) {
                return AcknowledgeType.REJECT;
            }
            return AcknowledgeType.ACCEPT;
        }

        void close() {
            open.remove(this);
            consumer.close(Clients.TIMEOUT);
        }
    }

    private static String key(int i) {
        return Integer.toString(i);
    }

    private static String value(int i) {
        return "share value " + i;
    }

    /** Writes records from..from+n-1, record i to partition i % PARTITIONS. */
    private void produce(int from, int n) throws Exception {
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = from; i < from + n; i++) {
                p.send(new ProducerRecord<>(topic, i % PARTITIONS, key(i), value(i)));
            }
            p.flush();
        }
    }

    String config() throws Exception {
        clients.createTopic(topic, PARTITIONS);
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        expectFailure(admin.incrementalAlterConfigs(Map.of(res, List.of(set("share.auto.offset.reset", "sometimes")))).all(),
                InvalidConfigurationException.class, "share.auto.offset.reset=sometimes");
        get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                set("share.auto.offset.reset", "earliest"), set("share.heartbeat.interval.ms", "1000")))).all());
        Config described = get(admin.describeConfigs(List.of(res)).all()).get(res);
        for (Map.Entry<String, String> want : Map.of("share.auto.offset.reset", "earliest", "share.heartbeat.interval.ms", "1000").entrySet()) {
            ConfigEntry e = described.get(want.getKey());
            Expect.that(e != null, "describeConfigs of the group lacks " + want.getKey() + ": " + described);
            Expect.equal(e.value(), want.getValue(), "described " + want.getKey());
            Expect.equal(e.source(), ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG, "source of " + want.getKey());
        }
        produce(0, HALF);
        return "incrementalAlterConfigs on GROUP " + group + ": share.auto.offset.reset=earliest, share.heartbeat.interval.ms=1000, "
                + "described back as DYNAMIC_GROUP_CONFIG; share.auto.offset.reset=sometimes refused (InvalidConfigurationException); "
                + HALF + " records written before any member";
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    String consume() throws Exception {
        Member a = new Member("share-a", true);
        Member b = new Member("share-b", true);
        List<Member> both = List.of(a, b);
        awaitDescribed(both, "both members to own partitions, together all " + PARTITIONS, d -> assignedToAll(d, 2));
        // Both learn their assignment on their next heartbeats (1 s apart).
        pollFor(both, Duration.ofSeconds(3));
        produce(HALF, HALF);
        try {
            Expect.eventually(Clients.TIMEOUT, "every record to be accepted or rejected", () -> {
                for (Member m : both) {
                    poll(m);
                }
                return accepted.size() + rejected.size() == RECORDS;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; " + accepted.size() + " accepted, " + rejected.size() + " rejected, "
                    + released.size() + " released; undecided: " + undecided(), e);
        }
        // Nothing comes back: a record accepted or rejected is done.
        pollFor(both, Duration.ofSeconds(2));

        Expect.that(!released.isEmpty() && !rejected.isEmpty(),
                "a released " + released.size() + " and rejected " + rejected.size() + " records: it got no first deliveries of records ending in 3 or 7");
        for (int i : released) {
            List<String> h = history.get(i);
            Expect.that(h.size() == 2 && h.get(1).endsWith(":2:ACCEPT"), "record " + i + " released: deliveries " + h);
        }
        int deliveries = history.values().stream().mapToInt(List::size).sum();
        Expect.equal(deliveries, RECORDS + released.size(), "deliveries (every record once, released ones twice)");
        Expect.that(a.delivered > 0 && b.delivered > 0, "deliveries to a and b: " + a.delivered + " and " + b.delivered);
        Set<Integer> notRejected = new TreeSet<>();
        for (int i = 0; i < RECORDS; i++) {
            if (!rejected.contains(i)) {
                notRejected.add(i);
            }
        }
        Expect.equal(accepted, notRejected, "accepted records");
        return "2 KafkaShareConsumers (explicit acknowledgement) shared " + RECORDS + " records of " + PARTITIONS + " partitions, "
                + HALF + " written before they joined (earliest): a got " + a.delivered + ", b " + b.delivered + " deliveries; "
                + released.size() + " RELEASEd came back once with deliveryCount 2, " + rejected.size() + " REJECTed never came back, "
                + accepted.size() + " ACCEPTed exactly once; every acknowledgement committed";
    }

    /** Polls m once and acknowledges what it got, checking each delivery against the earlier ones. */
    private void poll(Member m) {
        ConsumerRecords<String, String> records = m.consumer.poll(Duration.ofMillis(100));
        for (ConsumerRecord<String, String> r : records) {
            int i = Integer.parseInt(r.key());
            Expect.equal(r.value(), value(i), m.name + ": value of record " + i);
            Expect.equal(r.partition(), i % PARTITIONS, m.name + ": partition of record " + i);
            Expect.that(r.deliveryCount().isPresent(), m.name + ": record " + i + " without a delivery count");
            int count = r.deliveryCount().get();
            List<String> h = history.computeIfAbsent(i, k -> new ArrayList<>());
            Expect.that(h.isEmpty() || (h.size() == 1 && released.contains(i)),
                    m.name + " got record " + i + " (deliveryCount " + count + ") again after " + h);
            Expect.equal(count, h.size() + 1, m.name + ": deliveryCount of record " + i + " after deliveries " + h);
            AcknowledgeType ack = m.decide(i, count);
            m.consumer.acknowledge(r, ack);
            h.add(m.name + ":" + count + ":" + ack.name());
            m.delivered++;
            switch (ack) {
                case RELEASE -> released.add(i);
                case REJECT -> rejected.add(i);
                default -> accepted.add(i);
            }
        }
        if (!records.isEmpty()) {
            Map<TopicIdPartition, Optional<KafkaException>> committed = m.consumer.commitSync(Clients.TIMEOUT);
            committed.forEach((tp, e) -> Expect.that(e.isEmpty(), m.name + ": acknowledgements of " + tp + " failed: " + e.orElse(null)));
        }
    }

    private void pollFor(List<Member> members, Duration d) {
        for (long end = System.nanoTime() + d.toNanos(); System.nanoTime() < end; ) {
            for (Member m : members) {
                poll(m);
            }
        }
    }

    private String undecided() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < RECORDS && out.size() < 20; i++) {
            if (!accepted.contains(i) && !rejected.contains(i)) {
                out.add(i + "=" + history.getOrDefault(i, List.of()));
            }
        }
        return out.toString();
    }

    /** Polls the members until describeShareGroups shows what ok wants; fails with the last description. */
    private void awaitDescribed(List<Member> members, String what, Predicate<ShareGroupDescription> ok) throws Exception {
        for (long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos(); ; ) {
            for (Member m : members) {
                poll(m);
            }
            ShareGroupDescription d = described();
            if (ok.test(d)) {
                return;
            }
            Expect.that(System.nanoTime() < deadline, "timed out waiting for " + what + "; last: " + d);
            Thread.sleep(50);
        }
    }

    private ShareGroupDescription described() throws Exception {
        return get(admin.describeShareGroups(List.of(group)).describedGroups().get(group));
    }

    /** n members, each with partitions, at the target assignment epoch, that together own every partition. */
    private boolean assignedToAll(ShareGroupDescription d, int n) {
        Set<TopicPartition> all = new HashSet<>();
        for (ShareMemberDescription m : d.members()) {
            if (m.assignment().topicPartitions().isEmpty() || m.memberEpoch() != d.targetAssignmentEpoch()) {
                return false;
            }
            all.addAll(m.assignment().topicPartitions());
        }
        return d.members().size() == n && all.equals(partitions);
    }

    String describe() throws Exception {
        List<Member> both = List.copyOf(open);
        Expect.equal(both.size(), 2, "open members after the consume step");
        try {
            awaitDescribed(both, "the group Stable with both members at the target assignment epoch", d -> d.groupState() == GroupState.STABLE && assignedToAll(d, 2));
            ShareGroupDescription d = described();
            Expect.equal(d.groupId(), group, "described group id");
            Map<String, ShareMemberDescription> byClient = new TreeMap<>();
            for (ShareMemberDescription m : d.members()) {
                byClient.put(m.clientId(), m);
                Expect.that(!m.consumerId().isEmpty(), "member without an id: " + m);
                Expect.equal(m.host(), "/127.0.0.1", "host of " + m.clientId());
            }
            Expect.equal(byClient.keySet(), Set.of("share-a", "share-b"), "client ids of the members");
            Expect.that(!byClient.get("share-a").consumerId().equals(byClient.get("share-b").consumerId()), "both members have the same id");
            Expect.that(d.groupEpoch() >= d.targetAssignmentEpoch() && d.targetAssignmentEpoch() > 0,
                    "group epoch " + d.groupEpoch() + ", assignment epoch " + d.targetAssignmentEpoch());
            Expect.equal(d.coordinator() == null ? null : d.coordinator().id(), 1, "coordinator node id");

            GroupListing listed = listed(ListGroupsOptions.forShareGroups());
            Expect.that(listed != null, "listGroups(forShareGroups) lacks " + group);
            Expect.equal(listed.type(), Optional.of(GroupType.SHARE), "listed type");
            Expect.equal(listed.groupState(), Optional.of(GroupState.STABLE), "listed state");
            Expect.equal(listed.protocol(), "share", "listed protocol type");
            GroupListing any = listed(new ListGroupsOptions());
            Expect.that(any != null && any.type().equals(Optional.of(GroupType.SHARE)), "listGroups() shows " + group + " as " + any);
            Expect.that(listed(ListGroupsOptions.forConsumerGroups()) == null, "listGroups(forConsumerGroups) lists the share group " + group);

            TopicPartition tp0 = new TopicPartition(topic, 0);
            expectFailure(admin.alterShareGroupOffsets(group, Map.of(tp0, 0L)).all(), GroupNotEmptyException.class,
                    "alterShareGroupOffsets with members");
            expectFailure(admin.deleteShareGroupOffsets(group, Set.of(topic)).all(), GroupNotEmptyException.class,
                    "deleteShareGroupOffsets with members");
            expectFailure(admin.deleteShareGroups(List.of(group)).all(), GroupNotEmptyException.class,
                    "deleteShareGroups with members");
        } finally {
            for (Member m : both) {
                m.close();
            }
        }
        ShareGroupDescription d = described();
        Expect.equal(d.groupState(), GroupState.EMPTY, "state after both members closed");
        Expect.equal(d.members().size(), 0, "members after both closed");
        GroupListing listed = listed(ListGroupsOptions.forShareGroups());
        Expect.equal(listed == null ? null : listed.groupState(), Optional.of(GroupState.EMPTY), "listed state after both members closed");
        return "listGroups (share, all; not among consumer groups) and describeShareGroups: Stable, 2 members with their client ids, "
                + "host and partitions at the assignment epoch, coordinator 1; alterShareGroupOffsets, deleteShareGroupOffsets and "
                + "deleteShareGroups refused while members are in (GroupNotEmptyException); Empty after they closed";
    }

    /** The group's listing among those listGroups(options) returns, or null. */
    private GroupListing listed(ListGroupsOptions options) throws Exception {
        for (GroupListing l : get(admin.listGroups(options).all())) {
            if (l.groupId().equals(group)) {
                return l;
            }
        }
        return null;
    }

    /** Each partition's end offset. */
    private Map<TopicPartition, Long> ends() throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (TopicPartition tp : partitions) {
            latest.put(tp, OffsetSpec.latest());
        }
        Map<TopicPartition, Long> out = new TreeMap<>((x, y) -> Integer.compare(x.partition(), y.partition()));
        get(admin.listOffsets(latest).all()).forEach((tp, info) -> out.put(tp, info.offset()));
        Expect.equal(out.values().stream().mapToLong(Long::longValue).sum(), (long) RECORDS, "records in " + topic + " (end offsets " + out + ")");
        return out;
    }

    private Map<TopicPartition, SharePartitionOffsetInfo> shareOffsets(ListShareGroupOffsetsSpec spec) throws Exception {
        return get(admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group));
    }

    /** Every partition's start offset and lag are as start and lag say, and its leader epoch is epoch (unless null). */
    private void expectOffsets(String what, Map<TopicPartition, Long> start, Map<TopicPartition, Long> lag, Optional<Integer> epoch) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> got = shareOffsets(new ListShareGroupOffsetsSpec());
        Expect.equal(got.keySet(), partitions, what + ": partitions listShareGroupOffsets lists");
        for (TopicPartition tp : partitions) {
            SharePartitionOffsetInfo info = got.get(tp);
            Expect.that(info != null, what + ": no start offset for " + tp + " (" + got + ")");
            Expect.equal(info.startOffset(), start.get(tp), what + ": start offset of " + tp);
            Expect.equal(info.lag(), Optional.of(lag.get(tp)), what + ": lag of " + tp);
        }
        for (TopicPartition tp : partitions) {
            Expect.that(epoch == null || got.get(tp).leaderEpoch().equals(epoch), what + ": leader epoch of " + tp + " is "
                    + got.get(tp).leaderEpoch() + ", want " + epoch
                    + " (Kafka's share coordinator keeps the epoch of the leader that last read or wrote the state)");
        }
    }

    String offsets() throws Exception {
        Map<TopicPartition, Long> ends = ends();
        Map<TopicPartition, Long> zero = new HashMap<>();
        for (TopicPartition tp : partitions) {
            zero.put(tp, 0L);
        }
        TopicPartition tp1 = new TopicPartition(topic, 1);
        Map<TopicPartition, SharePartitionOffsetInfo> one = shareOffsets(new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp1)));
        Expect.equal(one.keySet(), Set.of(tp1), "partitions listed for a spec of " + tp1);
        Expect.equal(one.get(tp1).startOffset(), ends.get(tp1), "start offset of " + tp1 + " asked for alone");
        expectOffsets("after every record was acknowledged", ends, zero, Optional.of(0));
        return "listShareGroupOffsets: start offsets " + ends + " (the end offsets), lag 0, leader epoch 0; a spec of one partition lists it alone";
    }

    String alter() throws Exception {
        Map<TopicPartition, Long> ends = ends();
        Map<TopicPartition, Long> zero = new HashMap<>();
        for (TopicPartition tp : partitions) {
            zero.put(tp, 0L);
        }
        get(admin.alterShareGroupOffsets(group, zero).all());
        // A new start offset is new state, of no leader yet.
        expectOffsets("after alterShareGroupOffsets to 0", zero, ends, Optional.empty());

        Member c = new Member("share-c", false);
        Set<Integer> seen = new TreeSet<>();
        try {
            Expect.eventually(Clients.TIMEOUT, "a new consumer to get all " + RECORDS + " records again", () -> {
                for (ConsumerRecord<String, String> r : c.consumer.poll(Duration.ofMillis(100))) {
                    int i = Integer.parseInt(r.key());
                    Expect.that(seen.add(i), "share-c got record " + i + " twice");
                    Expect.equal(r.deliveryCount(), Optional.of((short) 1), "deliveryCount of record " + i + " after the reset");
                }
                return seen.size() == RECORDS;
            });
            c.consumer.commitSync(Clients.TIMEOUT).forEach((tp, e) ->
                    Expect.that(e.isEmpty(), "share-c: acknowledgements of " + tp + " failed: " + e.orElse(null)));
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; got " + seen.size() + " records", e);
        } finally {
            c.close();
        }
        // The leader epoch is the offsets step's to check.
        expectOffsets("after share-c read every record again", ends, zero, null);
        return "alterShareGroupOffsets to 0 on the empty group: start offsets 0, lag " + ends + "; a new consumer (implicit acknowledgement) "
                + "got all " + RECORDS + " records again, each once with deliveryCount 1, and the start offsets are the end offsets again";
    }

    String delete() throws Exception {
        get(admin.deleteShareGroupOffsets(group, Set.of(topic)).topicResult(topic));
        Map<TopicPartition, SharePartitionOffsetInfo> got = shareOffsets(new ListShareGroupOffsetsSpec());
        Expect.equal(got, Map.of(), "listShareGroupOffsets after deleteShareGroupOffsets of " + topic);
        Expect.equal(described().groupState(), GroupState.EMPTY, "state after deleteShareGroupOffsets");

        get(admin.deleteShareGroups(List.of(group)).deletedGroups().get(group));
        expectFailure(admin.describeShareGroups(List.of(group)).describedGroups().get(group), GroupIdNotFoundException.class,
                "describeShareGroups of the deleted group");
        Expect.that(listed(ListGroupsOptions.forShareGroups()) == null, "listGroups(forShareGroups) still lists the deleted group");
        return "deleteShareGroupOffsets of " + topic + ": no offsets left; deleteShareGroups: describeShareGroups answers "
                + "GroupIdNotFoundException, listGroups no longer lists it";
    }

    @Override
    public void close() {
        for (Member m : List.copyOf(open)) {
            try {
                m.close();
            } catch (RuntimeException e) {
                System.err.println("closing " + m.name + ": " + e);
            }
        }
    }
}
