package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Consumer groups with the classic protocol (JoinGroup/SyncGroup, the
 * client's default): sharing partitions, and resuming from committed offsets.
 * One thread drives both consumers of a group, polling them in turn, so
 * neither blocks the other's rebalance.
 */
final class GroupChecks {
    private final Clients clients;

    GroupChecks(Clients clients) {
        this.clients = clients;
    }

    /**
     * Two consumers in one group split a 4-partition topic between them and
     * together receive every record exactly once, each only from its own partitions.
     */
    String group() throws Exception {
        String topic = clients.name("group");
        String group = clients.name("group-g");
        int partitions = 4, n = 400;
        clients.createTopic(topic, partitions);
        try (KafkaConsumer<String, String> a = clients.consumer(group, Map.of());
             KafkaConsumer<String, String> b = clients.consumer(group, Map.of())) {
            a.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "the first consumer to own all partitions",
                    () -> { a.poll(Duration.ofMillis(100)); return a.assignment().size() == partitions; });
            b.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "the partitions to be split between two consumers", () -> {
                a.poll(Duration.ofMillis(100));
                b.poll(Duration.ofMillis(100));
                Set<TopicPartition> all = new HashSet<>(a.assignment());
                all.addAll(b.assignment());
                return !a.assignment().isEmpty() && !b.assignment().isEmpty()
                        && all.size() == partitions
                        && a.assignment().size() + b.assignment().size() == partitions;
            });
            try (KafkaProducer<String, String> p = clients.producer()) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(topic, i % partitions, null, "g-" + i));
                }
                p.flush();
            }
            List<String> seen = new ArrayList<>();
            Map<String, Integer> perConsumer = new HashMap<>();
            Expect.eventually(Clients.TIMEOUT, "every record to reach the group", () -> {
                for (KafkaConsumer<String, String> c : List.of(a, b)) {
                    String who = c == a ? "first" : "second";
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                        Expect.that(c.assignment().contains(new TopicPartition(topic, r.partition())),
                                who + " consumer got a record of partition " + r.partition() + " it does not own");
                        seen.add(r.value());
                        perConsumer.merge(who, 1, Integer::sum);
                    }
                }
                return seen.size() >= n;
            });
            Expect.equal(seen.size(), n, "records received by the group");
            Expect.equal(new HashSet<>(seen).size(), n, "distinct records received by the group");
            String split = "assignment " + a.assignment().size() + "+" + b.assignment().size() + " partitions; "
                    + n + " records received once (" + perConsumer + ")";
            return split + "; " + pattern(topic, n);
        }
    }

    /** A consumer of another group subscribed by regular expression finds topic and reads all n records. */
    private String pattern(String topic, int n) throws Exception {
        try (KafkaConsumer<String, String> c = clients.consumer(clients.name("group-pattern"), Map.of())) {
            c.subscribe(Pattern.compile(Pattern.quote(topic) + "|" + Pattern.quote(topic) + "-nonexistent.*"));
            Set<String> seen = new HashSet<>();
            Expect.eventually(Clients.TIMEOUT, "the pattern subscriber to read every record", () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= n;
            });
            Expect.equal(c.subscription(), Set.of(topic), "topics the pattern matched");
        }
        return "pattern subscription read all " + n;
    }

    /**
     * A consumer with auto-commit off reads part of a topic and calls
     * commitSync(); a new consumer in the same group starts exactly at the
     * committed offset and reads the rest.
     */
    String commit() throws Exception {
        String topic = clients.name("commit");
        String group = clients.name("commit-g");
        int n = 100;
        clients.createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "c-" + i));
            }
            p.flush();
        }
        Map<String, Object> settings = Map.of(
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 30);
        long consumed;
        try (KafkaConsumer<String, String> first = clients.consumer(group, settings)) {
            first.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Expect.eventually(Clients.TIMEOUT, "the first consumer to read records",
                    () -> { first.poll(Duration.ofMillis(100)).forEach(got::add); return !got.isEmpty(); });
            consumed = got.size();
            Expect.that(consumed < n, "max.poll.records=30 returned " + consumed + " records");
            first.commitSync(Clients.TIMEOUT);
            OffsetAndMetadata committed = first.committed(Set.of(tp), Clients.TIMEOUT).get(tp);
            Expect.that(committed != null, "committed() returned nothing after commitSync()");
            Expect.equal(committed.offset(), consumed, "committed offset");
        }
        try (KafkaConsumer<String, String> second = clients.consumer(group, settings)) {
            second.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            Expect.eventually(Clients.TIMEOUT, "the second consumer to read the rest", () -> {
                second.poll(Duration.ofMillis(100)).forEach(got::add);
                return got.size() >= n - consumed;
            });
            Expect.equal(got.get(0).offset(), consumed, "first offset the new consumer read");
            Expect.equal(got.size(), (int) (n - consumed), "records the new consumer read");
            for (int i = 0; i < got.size(); i++) {
                Expect.equal(got.get(i).value(), "c-" + (consumed + i), "value at offset " + got.get(i).offset());
            }
        }
        return "committed offset " + consumed + "; a new group member resumed there and read " + (n - consumed)
                + "; " + autoCommit(topic, n) + "; " + commitAsync(topic, n);
    }

    /** commitAsync with explicit offsets reports success to its callback, and committed() sees the offset. */
    private String commitAsync(String topic, int n) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = clients.consumer(clients.name("commit-async"), Map.of())) {
            c.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "an assignment", () -> { c.poll(Duration.ofMillis(100)); return !c.assignment().isEmpty(); });
            Exception[] result = {null};
            boolean[] done = {false};
            c.commitAsync(Map.of(tp, new OffsetAndMetadata(42, "async")), (offsets, e) -> { result[0] = e; done[0] = true; });
            Expect.eventually(Clients.TIMEOUT, "the commitAsync callback", () -> { c.poll(Duration.ofMillis(50)); return done[0]; });
            Expect.that(result[0] == null, "commitAsync failed: " + result[0]);
            Expect.equal(c.committed(Set.of(tp), Clients.TIMEOUT).get(tp), new OffsetAndMetadata(42, "async"), "committed after commitAsync");
        }
        return "commitAsync acknowledged";
    }

    /**
     * With the defaults (enable.auto.commit=true), closing a consumer commits
     * what it consumed: a new member of the group then finds nothing left
     * and the committed offset is the end of the partition.
     */
    private String autoCommit(String topic, int n) throws Exception {
        String group = clients.name("commit-auto");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = clients.consumer(group, Map.of())) {
            c.subscribe(List.of(topic));
            int[] got = {0};
            Expect.eventually(Clients.TIMEOUT, "an auto-committing consumer to read every record", () -> {
                got[0] += c.poll(Duration.ofMillis(100)).count();
                return got[0] >= n;
            });
        }
        try (KafkaConsumer<String, String> c = clients.consumer(group, Map.of())) {
            OffsetAndMetadata committed = c.committed(Set.of(tp), Clients.TIMEOUT).get(tp);
            Expect.that(committed != null, "close() committed nothing");
            Expect.equal(committed.offset(), (long) n, "offset committed by close()");
        }
        return "close() auto-committed offset " + n;
    }
}
