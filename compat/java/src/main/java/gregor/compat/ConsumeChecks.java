package gregor.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;

/** Reading back without a group: record fields, positioning, large records, long polling. */
final class ConsumeChecks {
    private final Clients clients;

    ConsumeChecks(Clients clients) {
        this.clients = clients;
    }

    /**
     * Records with keys, null keys, headers, explicit timestamps and one of
     * 300 KB come back from a consumer without a group exactly as sent, at
     * consecutive offsets per partition.
     */
    String consume() throws Exception {
        String topic = clients.name("consume");
        int partitions = 2, n = 200;
        clients.createTopic(topic, partitions);
        long base = System.currentTimeMillis() - 60_000;
        Map<String, ProducerRecord<String, String>> sent = new HashMap<>();
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < n; i++) {
                String value = i == n / 2 ? "big-" + i + "-" + "x".repeat(300 * 1024) : "value-" + i;
                String key = i % 10 == 0 ? null : "key-" + i;
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % partitions, base + i, key, value);
                r.headers().add("index", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                r.headers().add("empty", new byte[0]);
                r.headers().add("null", null);
                sent.put(value, r);
                p.send(r);
            }
            p.flush();
        }
        long[] next = new long[partitions];
        for (ConsumerRecord<String, String> got : clients.readAll(topic, partitions, n)) {
            ProducerRecord<String, String> want = sent.remove(got.value());
            Expect.that(want != null, "unexpected or repeated record at " + got.partition() + "/" + got.offset());
            Expect.equal(got.partition(), want.partition(), "partition");
            Expect.equal(got.offset(), next[got.partition()]++, "offset in partition " + got.partition());
            Expect.equal(got.key(), want.key(), "key");
            Expect.equal(got.timestamp(), want.timestamp(), "timestamp");
            Expect.equal(got.timestampType(), TimestampType.CREATE_TIME, "timestamp type");
            Expect.equal(headerText(got.headers().toArray()), headerText(want.headers().toArray()), "headers");
        }
        Expect.that(sent.isEmpty(), sent.size() + " records never arrived");
        String big = seekChecks(topic, base, n);
        String idle = idleFetches(topic);
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of(
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(tps);
            c.seekToBeginning(tps);
            int[] count = {0};
            Expect.eventually(Clients.TIMEOUT, "a read_committed consumer to read every record",
                    () -> { count[0] += c.poll(Duration.ofMillis(100)).count(); return count[0] >= n; });
            Expect.equal(count[0], n, "records read with read_committed");
        }
        return n + " records (null keys, headers, timestamps, one of 300 KB) read back intact, also read_committed; "
                + big + "; " + idle;
    }

    /**
     * A consumer at the end of a topic with nothing new waits in the broker
     * (fetch.max.wait.ms, 500 ms by default) instead of spinning: over two
     * seconds of polling it sends a handful of fetches, not hundreds. (A
     * slow machine only lowers the count.)
     * listTopics and partitionsFor see the topic.
     */
    private String idleFetches(String topic) {
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of())) {
            Expect.that(c.listTopics(Clients.TIMEOUT).containsKey(topic), "listTopics lacks " + topic);
            Expect.equal(c.partitionsFor(topic, Clients.TIMEOUT).size(), 2, "partitionsFor " + topic);
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
            c.assign(tps);
            c.seekToEnd(tps);
            long start = System.nanoTime();
            long deadline = start + Clients.TIMEOUT.toNanos();
            int records = 0;
            double fetches = 0;
            // At least two seconds, and until a fetch has gone out.
            while (System.nanoTime() < deadline
                    && (System.nanoTime() - start < Duration.ofSeconds(2).toNanos() || fetches == 0)) {
                records += c.poll(Duration.ofMillis(200)).count();
                fetches = fetchTotal(c);
            }
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            Expect.equal(records, 0, "records polled at the end of an idle topic");
            Expect.that(fetches > 0, "no fetch sent in " + elapsedMs + " ms");
            // A broker that waits fetch.max.wait.ms (500) allows about two fetches a second.
            long allowed = 2 * elapsedMs / 500 + 4;
            Expect.that(fetches <= allowed, fetches + " fetches in " + elapsedMs
                    + " ms of idle polling, at most " + allowed + " expected with fetch.max.wait.ms=500");
            return "idle consumer sent " + (long) fetches + " fetches in " + elapsedMs + " ms; listTopics and partitionsFor";
        }
    }

    /** The consumer's fetch-total metric: fetch requests sent so far. */
    private static double fetchTotal(KafkaConsumer<String, String> c) {
        return c.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("fetch-total")
                        && e.getKey().group().equals("consumer-fetch-manager-metrics"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
                .sum();
    }

    /**
     * offsetsForTimes and seek position a consumer; with
     * max.partition.fetch.bytes far below the 300 KB record the broker must
     * still return it (the first batch always goes out whole).
     */
    private String seekChecks(String topic, long base, int n) {
        TopicPartition tp = new TopicPartition(topic, 0);
        int bigIndex = n / 2; // even, so in partition 0, at offset bigIndex / 2
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of(
                ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 1024,
                ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 1024))) {
            c.assign(List.of(tp));
            Map<TopicPartition, OffsetAndTimestamp> byTime =
                    c.offsetsForTimes(Map.of(tp, base + bigIndex), Clients.TIMEOUT);
            Expect.that(byTime.get(tp) != null, "offsetsForTimes found nothing");
            Expect.equal(byTime.get(tp).offset(), (long) bigIndex / 2, "offsetsForTimes offset");
            Expect.equal(c.beginningOffsets(List.of(tp), Clients.TIMEOUT).get(tp), 0L, "beginningOffsets");
            Expect.that(c.offsetsForTimes(Map.of(tp, base + n), Clients.TIMEOUT).get(tp) == null,
                    "offsetsForTimes after the last record found an offset");
            c.seek(tp, byTime.get(tp).offset());
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (got.isEmpty() && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            Expect.that(!got.isEmpty(), "nothing fetched with max.partition.fetch.bytes=1024 at the 300 KB record");
            Expect.equal(got.get(0).offset(), (long) bigIndex / 2, "first offset after seek");
            Expect.that(got.get(0).value().startsWith("big-"), "the record after seek is not the 300 KB one");
        }
        return "offsetsForTimes, seek, and a 300 KB record fetched with max.partition.fetch.bytes=1024";
    }

    private static List<String> headerText(Header[] headers) {
        List<String> out = new ArrayList<>();
        for (Header h : headers) {
            out.add(h.key() + "=" + (h.value() == null ? "(null)" : new String(h.value(), StandardCharsets.UTF_8)));
        }
        return out;
    }
}
