package gregor.compat;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams, exactly once (processing.guarantee=exactly_once_v2): a
 * word count whose groupBy goes through a repartition topic and whose
 * counts live in a state store backed by a compacted changelog topic, both
 * created by Streams. Half of the input is counted, the application is
 * closed, the other half is written, and a new instance with an empty
 * state directory takes over: it must restore the counts from the
 * changelog and go on from the committed offsets, so that the last count
 * of every word read_committed from the output equals its number of
 * occurrences, none counted twice or missed.
 */
final class StreamsChecks {
    private static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"};

    private final Clients clients;

    StreamsChecks(Clients clients) {
        this.clients = clients;
    }

    String streams() throws Exception {
        String in = clients.name("streams-in"), out = clients.name("streams-out"), app = clients.name("streams-app");
        int partitions = 3, lines = 300;
        clients.createTopic(in, partitions);
        clients.createTopic(out, partitions);
        Map<String, Long> expected = new TreeMap<>();
        List<String> input = new ArrayList<>();
        for (int i = 0; i < lines; i++) {
            String line = WORDS[i % 7] + " " + WORDS[i % 5] + " " + WORDS[i % 3];
            input.add(line);
            for (String w : line.split(" ")) {
                expected.merge(w, 1L, Long::sum);
            }
        }
        Map<String, Long> half = new TreeMap<>();
        for (String line : input.subList(0, lines / 2)) {
            for (String w : line.split(" ")) {
                half.merge(w, 1L, Long::sum);
            }
        }

        write(in, input.subList(0, lines / 2));
        try (KafkaStreams first = start(app, in, out)) {
            awaitCounts(out, partitions, half);
        }
        write(in, input.subList(lines / 2, lines));
        try (KafkaStreams second = start(app, in, out)) {
            awaitCounts(out, partitions, expected);
        }

        String changelog = app + "-counts-changelog";
        Set<String> topics = clients.admin().listTopics().names().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        Expect.that(topics.contains(changelog), "no changelog topic " + changelog + " among " + topics);
        Expect.that(topics.stream().anyMatch(t -> t.startsWith(app) && t.endsWith("-repartition")), "no repartition topic among " + topics);
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        Config config = clients.admin().describeConfigs(List.of(res)).all()
                .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).get(res);
        Expect.equal(config.get("cleanup.policy").value(), "compact", "the changelog's cleanup.policy");
        return lines + " lines counted exactly once across a restart that restored " + expected.size()
                + " counts from the compacted changelog, through a repartition topic";
    }

    private void write(String topic, List<String> lines) throws Exception {
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (String line : lines) {
                p.send(new ProducerRecord<>(topic, null, line));
            }
            p.flush();
        }
    }

    /** Starts the word count with a fresh state directory and waits until it runs. */
    private KafkaStreams start(String app, String in, String out) throws Exception {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .mapValues(String::valueOf)
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, clients.bootstrap());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "exactly_once_v2");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("gregor-streams").toString());
        // A closed Streams member does not leave its group; the next
        // instance's rebalance waits for its session to expire.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.start();
        long deadline = System.nanoTime() + 2 * Clients.TIMEOUT.toNanos();
        while (streams.state() != KafkaStreams.State.RUNNING) {
            Expect.that(System.nanoTime() < deadline && streams.state() != KafkaStreams.State.ERROR,
                    "the streams application is " + streams.state());
            Thread.sleep(50);
        }
        return streams;
    }

    /** Reads the output read_committed until every word's last count is the expected one. */
    private void awaitCounts(String out, int partitions, Map<String, Long> expected) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(out, i));
        }
        Map<String, Long> last = new TreeMap<>();
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.nanoTime() + 2 * Clients.TIMEOUT.toNanos();
            while (!last.equals(expected) && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(r -> last.put(r.key(), Long.parseLong(r.value())));
            }
        }
        Expect.that(last.equals(expected), "last counts " + last + ", want " + expected);
    }
}
