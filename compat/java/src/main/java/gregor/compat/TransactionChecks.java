package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;

/**
 * Transactions: a transactional producer's commits and aborts as
 * read_committed and read_uncommitted consumers see them, consume-transform-
 * produce with the group's offsets sent to the transaction, and a second
 * producer with the same transactional.id fencing the first.
 */
final class TransactionChecks {
    private final Clients clients;

    TransactionChecks(Clients clients) {
        this.clients = clients;
    }

    String transactions() throws Exception {
        String topic = clients.name("txn");
        int partitions = 3, n = 30;
        clients.createTopic(topic, partitions);
        try (KafkaProducer<String, String> p = transactional("txn-id")) {
            p.initTransactions();
            send(p, topic, "committed-", n, true);
            send(p, topic, "aborted-", n, false);
            send(p, topic, "later-", n, true);
        }
        List<String> committed = values(read(topic, partitions, "read_committed", 2 * n));
        Expect.equal(committed.size(), 2 * n, "records read_committed");
        Expect.that(committed.stream().noneMatch(v -> v.startsWith("aborted-")), "read_committed returned an aborted record");
        List<String> all = values(read(topic, partitions, "read_uncommitted", 3 * n));
        Expect.equal(all.size(), 3 * n, "records read_uncommitted");
        String version = transactionVersion();
        String eos = consumeTransformProduce();
        String fenced = fencing();
        return n + " committed, " + n + " aborted, " + n + " committed: read_committed sees " + committed.size()
                + ", read_uncommitted " + all.size() + "; " + version + "; " + eos + "; " + fenced;
    }

    /**
     * Which transactions protocol the client ran: Kafka 4's client sees
     * transaction.version 2 finalized and runs transactions V2 (KIP-890 part 2),
     * whose every commit or abort bumps the producer epoch; 3.x runs V1, which
     * keeps it. The three transactions above started at epoch 0.
     */
    private String transactionVersion() throws Exception {
        String id = clients.name("txn-id");
        TransactionDescription d = clients.admin().describeTransactions(List.of(id)).description(id)
                .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        boolean v2 = !Main.clientVersion().startsWith("3.");
        Expect.equal(d.producerEpoch(), v2 ? 3 : 0, "the producer epoch after three transactions");
        return (v2 ? "transactions V2" : "transactions V1") + " (epoch " + d.producerEpoch() + " after three transactions)";
    }

    /** Reads an input topic in a group and writes each record to an output topic, committing the group's offsets in the transaction. */
    private String consumeTransformProduce() throws Exception {
        String in = clients.name("txn-in"), out = clients.name("txn-out"), group = clients.name("txn-group");
        int partitions = 2, n = 100;
        clients.createTopic(in, partitions);
        clients.createTopic(out, partitions);
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(in, i % partitions, null, "in-" + i));
            }
            p.flush();
        }
        int copied = 0;
        try (KafkaProducer<String, String> p = transactional("txn-eos");
             KafkaConsumer<String, String> c = clients.consumer(group, Map.of(
                     ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                     ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false))) {
            p.initTransactions();
            c.subscribe(List.of(in));
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (copied < n && System.nanoTime() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : recs) {
                    p.send(new ProducerRecord<>(out, r.partition(), null, r.value().replace("in-", "out-")));
                    offsets.put(new TopicPartition(in, r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                p.commitTransaction();
            }
        }
        Expect.equal(copied, n, "records copied");
        List<String> got = values(read(out, partitions, "read_committed", n));
        Expect.equal(got.size(), n, "records in the output topic");
        Map<TopicPartition, OffsetAndMetadata> committed = clients.admin().listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        long sum = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
        Expect.equal(sum, (long) n, "the group's offsets committed by the transactions, summed");
        return n + " records copied with sendOffsetsToTransaction, the group's offsets at " + sum;
    }

    /** A second producer with the same transactional.id fences the first, whose open transaction is aborted. */
    private String fencing() throws Exception {
        String topic = clients.name("txn-fence");
        clients.createTopic(topic, 1);
        try (KafkaProducer<String, String> zombie = transactional("txn-fence");
             KafkaProducer<String, String> fresh = transactional("txn-fence")) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, null, "zombie")).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            fresh.initTransactions();
            fresh.beginTransaction();
            fresh.send(new ProducerRecord<>(topic, 0, null, "fresh"));
            fresh.commitTransaction();
            try {
                zombie.commitTransaction();
                throw new AssertionError("the fenced producer committed");
            } catch (ProducerFencedException expected) {
                // as Kafka: the old epoch is fenced
            } catch (KafkaException e) {
                Expect.that(e.getCause() instanceof ProducerFencedException, "the fenced producer's commit failed with " + e);
            }
        }
        List<String> got = values(read(topic, 1, "read_committed", 1));
        Expect.equal(got, List.of("fresh"), "read_committed after fencing");
        return "a second producer fenced the first (ProducerFencedException), whose record stayed invisible";
    }

    private KafkaProducer<String, String> transactional(String id) {
        return clients.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, clients.name(id)));
    }

    private static void send(KafkaProducer<String, String> p, String topic, String prefix, int n, boolean commit) {
        p.beginTransaction();
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(topic, prefix + i));
        }
        if (commit) {
            p.commitTransaction();
        } else {
            p.flush();
            p.abortTransaction();
        }
    }

    /** Reads every partition from the beginning with the isolation level until want records or a quiet second after TIMEOUT. */
    private List<ConsumerRecord<String, String>> read(String topic, int partitions, String isolation, int want) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (got.size() < want && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            // Anything beyond want (an aborted record leaking) shows up in one more poll.
            c.poll(Duration.ofMillis(500)).forEach(got::add);
        }
        return got;
    }

    private static List<String> values(List<ConsumerRecord<String, String>> recs) {
        List<String> out = new ArrayList<>();
        recs.forEach(r -> out.add(r.value()));
        return out;
    }
}
