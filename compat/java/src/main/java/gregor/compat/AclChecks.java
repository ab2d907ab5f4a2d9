package gregor.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The acls feature: an Admin logged in as the super user admin creates,
 * describes and deletes ACLs, and alice's producer and group consumer
 * (kafka-clients' defaults: an idempotent producer) meet them as
 * kafka-clients' exceptions. Run in Main's security mode; GREGOR_ACL_SASL is
 * a SASL_PLAINTEXT listener of a broker with the StandardAuthorizer and the
 * PLAIN users admin (admin-secret, a super user) and alice (alice-secret).
 */
final class AclChecks {
    private static final int RECORDS = 10;

    private final Clients clients;

    AclChecks(Clients clients) {
        this.clients = clients;
    }

    String acls() throws Exception {
        String addr = System.getenv("GREGOR_ACL_SASL");
        Expect.that(addr != null && !addr.isEmpty(), "GREGOR_ACL_SASL is not set");
        String topic = clients.name("acl"), group = clients.name("acl-group");
        try (Admin admin = Admin.create(at(addr, plain("admin")))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            String refused = produceRefused(addr, topic, TopicAuthorizationException.class);

            admin.createAcls(List.of(allow(ResourceType.TOPIC, topic, AclOperation.WRITE),
                    allow(ResourceType.TOPIC, topic, AclOperation.DESCRIBE), allow(ResourceType.TOPIC, topic, AclOperation.READ)))
                    .all().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            produce(addr, topic);
            try {
                consume(addr, topic, group);
                throw new AssertionError("alice consumed in a group she may not read");
            } catch (GroupAuthorizationException e) {
                // as Kafka refuses it
            }
            admin.createAcls(List.of(allow(ResourceType.GROUP, group, AclOperation.READ))).all()
                    .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            Expect.equal(consume(addr, topic, group), RECORDS, "records alice read in her group");

            AclBindingFilter hers = new AclBindingFilter(ResourcePatternFilter.ANY,
                    new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
            Expect.equal(admin.describeAcls(hers).values().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).size(), 4,
                    "alice's ACLs described");
            AclBinding write = allow(ResourceType.TOPIC, topic, AclOperation.WRITE);
            Expect.equal(admin.deleteAcls(List.of(write.toFilter())).all().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).size(), 1,
                    "ACLs deleted by the WRITE filter");
            // Without WRITE on any topic her idempotent producer gets no
            // producer id (KIP-679).
            String refusedAgain = produceRefused(addr, topic, ClusterAuthorizationException.class);
            return "refused before: " + refused + "; " + RECORDS + " records written and read after the grants; 4 ACLs described; "
                    + "refused after WRITE was deleted: " + refusedAgain;
        }
    }

    /** user's PLAIN login (password user-secret). */
    private static Map<String, Object> plain(String user) {
        return SecurityChecks.login("SASL_PLAINTEXT", "PLAIN", user, user + "-secret");
    }

    private static Map<String, Object> at(String addr, Map<String, Object> login) {
        Map<String, Object> p = new HashMap<>(login);
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr);
        return p;
    }

    private static AclBinding allow(ResourceType type, String name, AclOperation op) {
        return new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", op, AclPermissionType.ALLOW));
    }

    /** alice writes RECORDS records to topic. */
    private static void produce(String addr, String topic) throws Exception {
        Map<String, Object> p = at(addr, plain("alice"));
        p.put("max.block.ms", 20000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, "k-" + i, "v-" + i)).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
        }
    }

    /** How alice's producer was refused; it must be with want. */
    private static String produceRefused(String addr, String topic, Class<? extends AuthorizationException> want) throws Exception {
        try {
            produce(addr, topic);
        } catch (ExecutionException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            Expect.that(want.isInstance(cause), "alice refused with " + cause + ", want " + want.getSimpleName());
            return cause.getClass().getSimpleName();
        }
        throw new AssertionError("alice wrote without WRITE on the topic");
    }

    /** alice reads topic in group from its start; the records read. */
    private static int consume(String addr, String topic, String group) {
        Map<String, Object> p = at(addr, plain("alice"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (got.size() < RECORDS && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        return got.size();
    }
}
