package gregor.compat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

/**
 * Fetching from the closest replica (KIP-392) on a cluster whose brokers
 * sit in racks named after them ({@code broker.rack=r<id>}) with Kafka's
 * RackAwareReplicaSelector: a consumer whose {@code client.rack} is a
 * follower's rack reads every record, and its own metric
 * {@code preferred-read-replica} names that follower, so the leader sent
 * it there and the follower served it.
 */
final class RackReadsCheck {
    private static final int RECORDS = 300;
    private final Clients clients;

    RackReadsCheck(Clients clients) {
        this.clients = clients;
    }

    String run() throws Exception {
        String topic = clients.name("racks");
        clients.admin().createTopics(List.of(new NewTopic(topic, 1, (short) 3)))
                .all().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < RECORDS; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "near-" + i));
            }
            p.flush();
        }
        TopicDescription d = clients.admin().describeTopics(List.of(topic)).allTopicNames()
                .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).get(topic);
        Node leader = d.partitions().get(0).leader();
        Node follower = d.partitions().get(0).replicas().stream().filter(n -> n.id() != leader.id()).findFirst().orElseThrow();
        Expect.equal(follower.rack(), "r" + follower.id(), "rack of broker " + follower.id());

        TopicPartition tp = new TopicPartition(topic, 0);
        Map<String, Object> settings = Map.of(ConsumerConfig.CLIENT_RACK_CONFIG, follower.rack());
        try (KafkaConsumer<String, String> c = clients.consumer(null, settings)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int next = 0;
            long deadline = System.currentTimeMillis() + Clients.TIMEOUT.toMillis();
            while (next < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(java.time.Duration.ofMillis(200))) {
                    Expect.equal(r.value(), "near-" + next, "record at offset " + r.offset());
                    next++;
                }
            }
            Expect.equal(next, RECORDS, "records read");
            Object preferred = null;
            for (Map.Entry<MetricName, ? extends Metric> m : c.metrics().entrySet()) {
                MetricName n = m.getKey();
                if (n.name().equals("preferred-read-replica") && topic.equals(n.tags().get("topic"))) {
                    preferred = m.getValue().metricValue();
                }
            }
            Expect.equal(String.valueOf(preferred), String.valueOf(follower.id()), "preferred-read-replica metric");
        }
        return RECORDS + " records read by a consumer in rack " + follower.rack()
                + " from its preferred read replica, broker " + follower.id() + " (leader " + leader.id() + ")";
    }
}
