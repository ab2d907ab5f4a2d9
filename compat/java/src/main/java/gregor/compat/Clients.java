package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Builds the clients the checks use. Only what a client cannot run without is
 * set (bootstrap servers, serializers, a group id); everything else is
 * kafka-clients' default unless a check passes its own settings.
 */
final class Clients implements AutoCloseable {
    /** How long any single wait on the broker may take before a check fails. */
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final String bootstrap;
    private final String prefix;
    private final Admin admin;

    Clients(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.admin = newAdmin();
    }

    /** A topic or group name unique to this run. */
    String name(String suffix) {
        return prefix + "-" + suffix;
    }

    /** The bootstrap address the clients are given. */
    String bootstrap() {
        return bootstrap;
    }

    /** The shared admin client that checks use for setup. */
    Admin admin() {
        return admin;
    }

    Admin newAdmin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }

    KafkaProducer<String, String> producer(Map<String, Object> settings) {
        Map<String, Object> p = new HashMap<>(settings);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    KafkaProducer<String, String> producer() {
        return producer(Map.of());
    }

    /** A consumer in group (none when null) that starts at the earliest offset when it has none committed. */
    KafkaConsumer<String, String> consumer(String group, Map<String, Object> settings) {
        Map<String, Object> p = new HashMap<>(settings);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** Creates topic with the given partition count and replication factor 1. */
    void createTopic(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                .all().get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    /**
     * Reads every partition of topic from its beginning, without a group,
     * until want records have arrived; fails if they do not within TIMEOUT.
     */
    List<ConsumerRecord<String, String>> readAll(String topic, int partitions, int want) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(null, Map.of())) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (got.size() < want && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        Expect.that(got.size() >= want, "read " + got.size() + " of " + want + " records from " + topic);
        return got;
    }

    /** The log end offset of every partition of topic, summed. */
    long endOffsetSum(String topic, int partitions) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) {
            tps.add(new TopicPartition(topic, i));
        }
        try (KafkaConsumer<String, String> c = consumer(null, Map.of())) {
            return c.endOffsets(tps, TIMEOUT).values().stream().mapToLong(Long::longValue).sum();
        }
    }

    @Override
    public void close() {
        admin.close(TIMEOUT);
    }
}
