package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** Compression: by the producer (compression.type) and by the broker (the topic's compression.type). */
final class CodecChecks {
    private final Clients clients;

    CodecChecks(Clients clients) {
        this.clients = clients;
    }

    /** With compression.type=codec on the producer, records come back intact. */
    String codec(String codec) throws Exception {
        String topic = clients.name(codec);
        int n = 1000;
        clients.createTopic(topic, 1);
        List<String> values = new ArrayList<>();
        long base = System.currentTimeMillis() - 600_000;
        try (KafkaProducer<String, String> p = clients.producer(Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, 20))) {
            for (int i = 0; i < n; i++) {
                String v = codec + " record " + i + " " + "abc".repeat(i % 50);
                values.add(v);
                p.send(new ProducerRecord<>(topic, 0, base + i, "key-" + i, v));
            }
            p.flush();
        }
        List<ConsumerRecord<String, String>> got = clients.readAll(topic, 1, n);
        Expect.equal(got.size(), n, "records read");
        for (int i = 0; i < n; i++) {
            Expect.equal(got.get(i).value(), values.get(i), "value of record " + i);
            Expect.equal(got.get(i).key(), "key-" + i, "key of record " + i);
            Expect.equal(got.get(i).offset(), (long) i, "offset of record " + i);
            Expect.equal(got.get(i).timestamp(), base + i, "timestamp of record " + i);
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            var byTime = c.offsetsForTimes(Map.of(tp, base + 777), Clients.TIMEOUT).get(tp);
            Expect.that(byTime != null, "offsetsForTimes found nothing");
            Expect.equal(byTime.offset(), 777L, "offsetsForTimes offset inside a compressed batch");
            Expect.equal(byTime.timestamp(), base + 777, "offsetsForTimes timestamp");
            c.seek(tp, 555);
            List<ConsumerRecord<String, String>> from = new ArrayList<>();
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (from.isEmpty() && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(from::add);
            }
            Expect.that(!from.isEmpty(), "nothing fetched from offset 555");
            Expect.equal(from.get(0).offset(), 555L, "first offset fetched after seek(555)");
            Expect.equal(from.get(0).value(), values.get(555), "value at offset 555");
        }
        topicCodec(codec);
        return n + " " + codec + "-compressed records read back intact, also from a seek into a batch; "
                + "offsetsForTimes found a record inside a batch; "
                + "topic compression.type=" + codec + " read back too";
    }

    /**
     * A topic with compression.type=codec stores the default producer's
     * uncompressed batches compressed by the broker; the client must read
     * what the broker compressed. The topic is {@code <prefix>-<codec>-topic}.
     */
    private void topicCodec(String codec) throws Exception {
        String topic = clients.name(codec + "-topic");
        clients.admin().createTopics(List.of(new NewTopic(topic, 1, (short) 1)
                .configs(Map.of("compression.type", codec)))).all().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        int n = 500;
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, 0, "key-" + i, "broker-compressed " + i + " " + "xyz".repeat(i % 40)));
            }
            p.flush();
        }
        List<ConsumerRecord<String, String>> got = clients.readAll(topic, 1, n);
        for (int i = 0; i < n; i++) {
            Expect.equal(got.get(i).value(), "broker-compressed " + i + " " + "xyz".repeat(i % 40), "value of record " + i + " of " + topic);
        }
    }
}
