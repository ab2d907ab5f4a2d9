package gregor.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The same clients across a broker crash. An idempotent producer and a
 * group consumer work, then the program prints {@code RESTART} and waits
 * for a line on stdin while the Go test kills the broker with SIGKILL and
 * starts it again on the same address and log dir. Afterwards the same
 * producer keeps sending (its producer id and sequence numbers must still
 * be accepted), the same consumer carries on from its position without
 * duplicates, and a new group member finds the offsets committed on both
 * sides of the crash.
 */
final class RestartCheck {
    private static final int PARTITIONS = 2;
    private static final int PER_ROUND = 500;
    private final Clients clients;

    RestartCheck(Clients clients) {
        this.clients = clients;
    }

    String run() throws Exception {
        String topic = clients.name("restart");
        String group = clients.name("restart-g");
        clients.createTopic(topic, PARTITIONS);
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
        Map<String, Object> manual = Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaProducer<String, String> p = clients.producer();
             KafkaConsumer<String, String> c = clients.consumer(group, manual)) {
            c.subscribe(List.of(topic));
            send(p, topic, 0);
            expectRecords(c, 0);
            c.commitSync(Clients.TIMEOUT);

            System.out.println("RESTART");
            System.out.flush();
            String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            Expect.equal(line, "GO", "line from the test after the restart");

            send(p, topic, PER_ROUND);
            expectRecords(c, PER_ROUND);
            c.commitSync(Clients.TIMEOUT);
        }
        try (KafkaConsumer<String, String> c = clients.consumer(group, manual)) {
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.copyOf(tps), Clients.TIMEOUT);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Clients.TIMEOUT);
            for (TopicPartition tp : tps) {
                Expect.that(committed.get(tp) != null, "no committed offset for " + tp + " after the restart");
                Expect.equal(committed.get(tp).offset(), end.get(tp), "committed offset of " + tp);
            }
        }
        Map<Integer, Integer> next = new HashMap<>();
        for (ConsumerRecord<String, String> r : clients.readAll(topic, PARTITIONS, 2 * PER_ROUND)) {
            int seq = next.merge(r.partition(), 1, Integer::sum) - 1;
            Expect.equal(r.value(), r.partition() + "-" + seq, "record at " + r.partition() + "/" + r.offset());
        }
        Expect.equal(clients.endOffsetSum(topic, PARTITIONS), (long) 2 * PER_ROUND, "records stored (duplicates?)");
        return "producer and consumer carried on across kill -9 and restart: " + 2 * PER_ROUND
                + " records stored once, in order; offsets committed before and after kept";
    }

    /** Sends PER_ROUND records spread over the partitions, values "<partition>-<sequence in partition>". */
    private void send(KafkaProducer<String, String> p, String topic, int first) throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int i = first; i < first + PER_ROUND; i++) {
            int partition = i % PARTITIONS;
            acks.add(p.send(new ProducerRecord<>(topic, partition, null, partition + "-" + i / PARTITIONS)));
        }
        p.flush();
        for (Future<RecordMetadata> f : acks) {
            f.get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    /** Polls c until it has the PER_ROUND records sent from first on, and nothing else. */
    private void expectRecords(KafkaConsumer<String, String> c, int first) throws Exception {
        List<String> got = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (got.size() < PER_ROUND && System.nanoTime() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
        }
        Expect.equal(got.size(), PER_ROUND, "records the consumer read from " + first);
        List<String> want = new ArrayList<>();
        for (int i = first; i < first + PER_ROUND; i++) {
            want.add((i % PARTITIONS) + "-" + i / PARTITIONS);
        }
        got.sort(null);
        want.sort(null);
        Expect.equal(got, want, "records the consumer read from " + first);
    }
}
