package gregor.compat;

import static gregor.compat.AdminCalls.expectFailure;
import static gregor.compat.AdminCalls.get;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.UnknownMemberIdException;

/** AdminClient on consumer groups, their offsets, and partition offsets. */
final class AdminGroupChecks {
    private final Clients clients;

    AdminGroupChecks(Clients clients) {
        this.clients = clients;
    }

    /**
     * While one consumer is in a group: listConsumerGroups finds it,
     * describeConsumerGroups shows it Stable with that member's partitions,
     * listConsumerGroupOffsets returns what it committed. After it leaves the
     * group is Empty and its offsets remain.
     */
    String groups() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-groups");
        String group = clients.name("admin-groups-g");
        clients.createTopic(topic, 2);
        TopicPartition tp0 = new TopicPartition(topic, 0), tp1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> c = clients.consumer(group,
                Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false))) {
            c.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "the consumer to be assigned both partitions",
                    () -> { c.poll(Duration.ofMillis(100)); return c.assignment().size() == 2; });
            c.commitSync(Map.of(tp0, new OffsetAndMetadata(0, "meta-0"), tp1, new OffsetAndMetadata(0)), Clients.TIMEOUT);

            Collection<ConsumerGroupListing> listed = get(admin.listConsumerGroups().all());
            Expect.that(listed.stream().anyMatch(l -> l.groupId().equals(group)),
                    "listConsumerGroups lacks " + group + ": " + listed);
            ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
            Expect.equal(d.state().toString(), "Stable", "state with a member");
            Expect.equal(d.partitionAssignor(), "range", "assignor (the default range/cooperative-sticky list picks range)");
            Expect.equal(d.members().size(), 1, "members");
            Expect.equal(d.members().iterator().next().assignment().topicPartitions(), Set.of(tp0, tp1), "member assignment");
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            Expect.equal(offsets.get(tp0), new OffsetAndMetadata(0, "meta-0"), "listed offset of partition 0");
            expectFailure(admin.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(7))).all(),
                    UnknownMemberIdException.class, "alterConsumerGroupOffsets on a group with a member");
            expectFailure(admin.deleteConsumerGroups(List.of(group)).all(),
                    GroupNotEmptyException.class, "deleteConsumerGroups on a group with a member");
        }
        ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
        Expect.equal(d.state().toString(), "Empty", "state after the member closed");
        Map<TopicPartition, OffsetAndMetadata> offsets =
                get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        Expect.equal(offsets.keySet(), Set.of(tp0, tp1), "partitions with offsets after the member left");

        get(admin.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(7))).all());
        get(admin.deleteConsumerGroupOffsets(group, Set.of(tp1)).all());
        offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        Expect.equal(offsets, Map.of(tp0, new OffsetAndMetadata(7)), "offsets after alter (p0=7) and delete (p1)");

        get(admin.deleteConsumerGroups(List.of(group)).all());
        Expect.that(get(admin.listConsumerGroups().all()).stream().noneMatch(l -> l.groupId().equals(group)),
                "deleted group still listed");
        Expect.that(get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).isEmpty(),
                "deleted group still has offsets");
        return "listed, described Stable with 1 member then Empty, offsets listed with metadata, altered and "
                + "deleted (both refused while a member is in), group deleted";
    }

    /** listOffsets: earliest, latest, by timestamp and max timestamp. */
    String offsets() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-offsets");
        clients.createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 3_600_000;
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, base + i * 1000L, null, "t-" + i));
            }
            p.flush();
        }
        Map<String, OffsetSpec> specs = Map.of(
                "earliest", OffsetSpec.earliest(),
                "latest", OffsetSpec.latest(),
                "timestamp", OffsetSpec.forTimestamp(base + 3500),
                "max-timestamp", OffsetSpec.maxTimestamp(),
                "earliest-local", OffsetSpec.earliestLocal(),
                "latest-tiered", OffsetSpec.latestTiered());
        Map<String, ListOffsetsResult.ListOffsetsResultInfo> got = new java.util.HashMap<>();
        for (var e : specs.entrySet()) {
            got.put(e.getKey(), get(admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp)));
        }
        Expect.equal(got.get("earliest").offset(), 0L, "earliest offset");
        Expect.equal(got.get("latest").offset(), 10L, "latest offset");
        Expect.equal(got.get("timestamp").offset(), 4L, "offset for a timestamp between records 3 and 4");
        Expect.equal(got.get("timestamp").timestamp(), base + 4000, "timestamp found");
        Expect.equal(got.get("max-timestamp").offset(), 9L, "offset of the max timestamp");
        Expect.equal(got.get("max-timestamp").timestamp(), base + 9000, "max timestamp");
        Expect.equal(got.get("earliest-local").offset(), 0L, "earliest local offset");
        Expect.equal(got.get("latest-tiered").offset(), -1L, "latest tiered offset (no tiered storage)");
        String pending = "";
        OffsetSpec earliestPendingUpload = earliestPendingUploadSpec();
        if (earliestPendingUpload != null) {
            // ListOffsets v11 or nothing: the client refuses an older broker.
            Expect.equal(get(admin.listOffsets(Map.of(tp, earliestPendingUpload)).partitionResult(tp)).offset(), -1L,
                    "earliest pending upload offset (no tiered storage)");
            pending = ", earliest pending upload -1";
        }

        DeletedRecords deleted = get(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(6))).lowWatermarks().get(tp));
        Expect.equal(deleted.lowWatermark(), 6L, "low watermark after deleteRecords");
        Expect.equal(get(admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp)).offset(), 6L,
                "earliest offset after deleteRecords");
        Expect.equal(clients.readAll(topic, 1, 4).get(0).offset(), 6L, "first offset a consumer reads after deleteRecords");
        return "earliest 0, latest 10, by timestamp 4, max timestamp 9, earliest local 0, latest tiered -1" + pending
                + "; deleteRecords moved the start to 6";
    }

    /** OffsetSpec.earliestPendingUpload(), which kafka-clients before 4.2 lack: found by reflection so this compiles against 3.x too. */
    private static OffsetSpec earliestPendingUploadSpec() throws Exception {
        try {
            return (OffsetSpec) OffsetSpec.class.getMethod("earliestPendingUpload").invoke(null);
        } catch (NoSuchMethodException absent) {
            return null;
        }
    }
}
