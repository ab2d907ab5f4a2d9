package gregor.compat;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Group membership changes beyond the first join: a member leaving, the
 * cooperative-sticky protocol (the second of the client's default
 * assignors), and a static member (group.instance.id) coming back.
 * As in GroupChecks, one thread polls every consumer in turn.
 */
final class RebalanceChecks {
    private static final int PARTITIONS = 4;
    private final Clients clients;

    RebalanceChecks(Clients clients) {
        this.clients = clients;
    }

    /** Runs every check of this class; the group feature includes them. */
    String all() throws Exception {
        return leave() + "; " + cooperative() + "; " + staticMember();
    }

    /** When one of two members closes, the other takes all partitions and reads what follows. */
    String leave() throws Exception {
        String topic = clients.name("group-leave");
        String group = clients.name("group-leave-g");
        clients.createTopic(topic, PARTITIONS);
        try (KafkaConsumer<String, String> a = clients.consumer(group, Map.of())) {
            a.subscribe(List.of(topic));
            try (KafkaConsumer<String, String> b = clients.consumer(group, Map.of())) {
                b.subscribe(List.of(topic));
                Expect.eventually(Clients.TIMEOUT, "two members to share the partitions", () -> {
                    a.poll(Duration.ofMillis(100));
                    b.poll(Duration.ofMillis(100));
                    return !a.assignment().isEmpty() && !b.assignment().isEmpty()
                            && a.assignment().size() + b.assignment().size() == PARTITIONS;
                });
            }
            Expect.eventually(Clients.TIMEOUT, "the remaining member to own every partition",
                    () -> { a.poll(Duration.ofMillis(100)); return a.assignment().size() == PARTITIONS; });
            int n = produce(topic, "leave");
            Set<String> seen = new HashSet<>();
            Expect.eventually(Clients.TIMEOUT, "the remaining member to read every record", () -> {
                a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= n;
            });
        }
        return "a member left and the other took all " + PARTITIONS + " partitions";
    }

    /**
     * Two members with only the cooperative-sticky assignor: the second join
     * moves half the partitions without revoking the first member's others.
     */
    String cooperative() throws Exception {
        String topic = clients.name("group-coop");
        String group = clients.name("group-coop-g");
        clients.createTopic(topic, PARTITIONS);
        Map<String, Object> coop = Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                CooperativeStickyAssignor.class.getName());
        try (KafkaConsumer<String, String> a = clients.consumer(group, coop);
             KafkaConsumer<String, String> b = clients.consumer(group, coop)) {
            a.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "the first member to own every partition",
                    () -> { a.poll(Duration.ofMillis(100)); return a.assignment().size() == PARTITIONS; });
            b.subscribe(List.of(topic));
            Expect.eventually(Clients.TIMEOUT, "a cooperative split 2+2", () -> {
                a.poll(Duration.ofMillis(100));
                b.poll(Duration.ofMillis(100));
                return a.assignment().size() == PARTITIONS / 2 && b.assignment().size() == PARTITIONS / 2;
            });
            int n = produce(topic, "coop");
            Set<String> seen = new HashSet<>();
            Expect.eventually(Clients.TIMEOUT, "the cooperative group to read every record", () -> {
                a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                b.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= n;
            });
        }
        return "cooperative-sticky split 2+2";
    }

    /**
     * A static member closes without leaving the group; coming back with the
     * same group.instance.id it gets its partitions back and resumes after
     * what it committed.
     */
    String staticMember() throws Exception {
        String topic = clients.name("group-static");
        String group = clients.name("group-static-g");
        clients.createTopic(topic, PARTITIONS);
        Map<String, Object> settings = Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
        int n = produce(topic, "static-a");
        Set<TopicPartition> first;
        try (KafkaConsumer<String, String> c = clients.consumer(group, settings)) {
            c.subscribe(List.of(topic));
            Set<String> seen = new HashSet<>();
            Expect.eventually(Clients.TIMEOUT, "the static member to read every record", () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= n;
            });
            first = Set.copyOf(c.assignment());
            c.commitSync(Clients.TIMEOUT);
        }
        int m = produce(topic, "static-b");
        try (KafkaConsumer<String, String> c = clients.consumer(group, settings)) {
            c.subscribe(List.of(topic));
            Set<String> seen = new HashSet<>();
            Expect.eventually(Clients.TIMEOUT, "the returning static member to read the new records", () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() >= m;
            });
            Expect.equal(c.assignment(), first, "assignment of the returning static member");
            Expect.that(seen.stream().allMatch(v -> v.startsWith("static-b")), "re-read records committed before the restart");
        }
        return "static member came back to its partitions";
    }

    /** Writes 25 records to each partition; returns how many. */
    private int produce(String topic, String prefix) {
        int n = 25 * PARTITIONS;
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, i % PARTITIONS, null, prefix + "-" + i));
            }
            p.flush();
        }
        return n;
    }
}
