package gregor.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;

/** Producing: send futures, acks settings, size limits, the idempotent default producer. */
final class ProduceChecks {
    private final Clients clients;

    ProduceChecks(Clients clients) {
        this.clients = clients;
    }

    /**
     * The default producer sends to chosen partitions; every send future must
     * complete with the partition asked for and consecutive offsets from 0.
     * A send to a topic nobody created must auto-create it, as Kafka does by default.
     */
    String produce() throws Exception {
        String topic = clients.name("produce");
        int partitions = 3, n = 300;
        clients.createTopic(topic, partitions);
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        RecordMetadata auto;
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                acks.add(p.send(new ProducerRecord<>(topic, i % partitions, "k-" + i, "v-" + i)));
            }
            auto = p.send(new ProducerRecord<>(clients.name("produce-auto"), "k", "v"))
                    .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        for (int i = 0; i < n; i++) {
            RecordMetadata md = acks.get(i).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            Expect.equal(md.partition(), i % partitions, "partition of record " + i);
            Expect.equal(md.offset(), (long) (i / partitions), "offset of record " + i);
            Expect.that(md.timestamp() > 0, "record " + i + " has no timestamp");
        }
        Expect.equal(auto.offset(), 0L, "offset of the record in the auto-created topic");
        tooLarge(topic);
        otherAcks();
        Expect.equal(clients.endOffsetSum(topic, partitions), (long) n, "log end offsets summed");
        return n + " sends acknowledged at consecutive offsets on " + partitions + " partitions; topic auto-created on first send; "
                + "a 2 MB record refused with RecordTooLargeException; acks=1 and acks=0 sends stored";
    }

    /**
     * acks=1 sends are acknowledged with offsets; acks=0 sends get no answer
     * from the broker (offset -1 in the metadata) but are stored all the same.
     */
    private void otherAcks() throws Exception {
        String topic = clients.name("produce-acks");
        clients.createTopic(topic, 1);
        int n = 100;
        for (String acks : new String[] {"1", "0"}) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<String, String> p = clients.producer(Map.of(
                    ProducerConfig.ACKS_CONFIG, acks, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false))) {
                for (int i = 0; i < n; i++) {
                    sent.add(p.send(new ProducerRecord<>(topic, 0, null, "acks" + acks + "-" + i)));
                }
                p.flush();
            }
            for (int i = 0; i < n; i++) {
                long offset = sent.get(i).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).offset();
                long want = acks.equals("1") ? i : -1;
                Expect.equal(offset, want, "offset of acks=" + acks + " send " + i);
            }
        }
        List<ConsumerRecord<String, String>> got = clients.readAll(topic, 1, 2 * n);
        for (int i = 0; i < 2 * n; i++) {
            String want = (i < n ? "acks1-" : "acks0-") + (i % n);
            Expect.equal(got.get(i).value(), want, "record " + i + " of the acks=1 and acks=0 sends");
        }
    }

    /**
     * A record above the broker's message.max.bytes (1 MB by default), let
     * through by a producer allowing 3 MB requests, is refused by the
     * broker: RecordTooLargeException, Kafka's MESSAGE_TOO_LARGE.
     */
    private void tooLarge(String topic) throws Exception {
        try (KafkaProducer<String, String> p = clients.producer(Map.of(
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 3 << 20,
                ProducerConfig.BUFFER_MEMORY_CONFIG, 8L << 20))) {
            p.send(new ProducerRecord<>(topic, 0, null, "y".repeat(2 << 20))).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            throw new AssertionError("a 2 MB record was accepted");
        } catch (ExecutionException e) {
            Expect.that(e.getCause() instanceof RecordTooLargeException,
                    "a 2 MB record failed with " + e.getCause() + ", want RecordTooLargeException");
        }
    }

    /**
     * The default producer is idempotent with acks=all and five requests in
     * flight: 3000 sends to 3 partitions must land once each, in send order.
     */
    String idempotence() throws Exception {
        String topic = clients.name("idempotence");
        int partitions = 3, n = 3000;
        clients.createTopic(topic, partitions);
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                acks.add(p.send(new ProducerRecord<>(topic, i % partitions, null, Integer.toString(i / partitions))));
            }
            p.flush();
        }
        for (Future<RecordMetadata> f : acks) {
            f.get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        long[] next = new long[partitions];
        for (ConsumerRecord<String, String> r : clients.readAll(topic, partitions, n)) {
            long seq = next[r.partition()]++;
            Expect.equal(r.value(), Long.toString(seq), "value at " + r.partition() + "/" + r.offset());
            Expect.equal(r.offset(), seq, "offset in partition " + r.partition());
        }
        Expect.equal(clients.endOffsetSum(topic, partitions), (long) n, "log end offsets summed (duplicates?)");
        return n + " idempotent sends stored once each, in order";
    }
}
