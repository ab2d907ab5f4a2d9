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
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * kafka-clients' own SASL and TLS code against the broker: the sasl and
 * tls features. Run as {@code Main <PLAINTEXT bootstrap> <prefix> security};
 * the secured listeners come in environment variables the Go test sets:
 * GREGOR_SASL_PLAINTEXT (the PLAIN user admin with password admin-secret,
 * and SCRAM-SHA-256 and SCRAM-SHA-512 credentials of the user java with
 * java-secret), GREGOR_SSL and GREGOR_SASL_SSL (SCRAM-SHA-512), and
 * GREGOR_TRUSTSTORE, a PKCS12 trust store (password ts-secret) holding the
 * broker's certificate. Topics are created through the PLAINTEXT bootstrap.
 */
final class SecurityChecks {
    private static final int RECORDS = 100;

    private final Clients clients;

    SecurityChecks(Clients clients) {
        this.clients = clients;
    }

    /** PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 logins each write and read back; a wrong password is refused. */
    String sasl() throws Exception {
        String addr = env("GREGOR_SASL_PLAINTEXT");
        String[][] logins = {{"PLAIN", "admin", "admin-secret"}, {"SCRAM-SHA-256", "java", "java-secret"},
            {"SCRAM-SHA-512", "java", "java-secret"}};
        for (String[] l : logins) {
            Map<String, Object> login = login("SASL_PLAINTEXT", l[0], l[1], l[2]);
            roundtrip(clients.name("sasl-" + l[0].toLowerCase()), addr, login, addr, login);
        }
        String refused = refusal(addr, login("SASL_PLAINTEXT", "SCRAM-SHA-256", "java", "wrong"), SaslAuthenticationException.class);
        return RECORDS + " records written and read with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; wrong password: " + refused;
    }

    /**
     * Writes over SASL_SSL (SCRAM-SHA-512) and reads over SSL, trusting the
     * broker's certificate from the trust store; a client without it fails
     * the handshake.
     */
    String tls() throws Exception {
        Map<String, Object> ssl = new HashMap<>(Map.of(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL"));
        String msg = roundtrip(clients.name("tls"), env("GREGOR_SASL_SSL"), trusting(login("SASL_SSL", "SCRAM-SHA-512", "java", "java-secret")),
                env("GREGOR_SSL"), trusting(new HashMap<>(ssl)));
        String refused = refusal(env("GREGOR_SSL"), ssl, SslAuthenticationException.class);
        return msg + " written over SASL_SSL and read over SSL; untrusted: " + refused;
    }

    private static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException(name + " is not set");
        }
        return v;
    }

    static Map<String, Object> login(String protocol, String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Map<String, Object> p = new HashMap<>();
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol);
        p.put(SaslConfigs.SASL_MECHANISM, mechanism);
        p.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + user + "\" password=\"" + password + "\";");
        return p;
    }

    private static Map<String, Object> trusting(Map<String, Object> p) {
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, env("GREGOR_TRUSTSTORE"));
        p.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, "ts-secret");
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
        return p;
    }

    /**
     * Creates topic (one partition), writes RECORDS records to it through
     * addr with login, and reads them back through readAddr with readLogin:
     * the same keys and values at offsets 0, 1, 2, ...
     */
    private String roundtrip(String topic, String addr, Map<String, Object> login, String readAddr, Map<String, Object> readLogin)
            throws Exception {
        clients.createTopic(topic, 1);
        Map<String, Object> p = new HashMap<>(login);
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, "k-" + i, topic + " value " + i))
                        .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
        }
        Map<String, Object> c = new HashMap<>(readLogin);
        c.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, readAddr);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tp = List.of(new TopicPartition(topic, 0));
            consumer.assign(tp);
            consumer.seekToBeginning(tp);
            long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
            while (got.size() < RECORDS && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
            }
        }
        Expect.equal(got.size(), RECORDS, topic + ": records read");
        for (int i = 0; i < RECORDS; i++) {
            ConsumerRecord<String, String> r = got.get(i);
            Expect.that(r.offset() == i && r.key().equals("k-" + i) && r.value().equals(topic + " value " + i),
                    topic + ": record " + i + " read as " + r.key() + "=" + r.value() + " at " + r.offset());
        }
        return RECORDS + " records";
    }

    /** How an admin client logging in with login through addr was refused; it must be refused with want. */
    private static String refusal(String addr, Map<String, Object> login, Class<? extends Exception> want) throws Exception {
        Map<String, Object> p = new HashMap<>(login);
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, addr);
        try (Admin admin = Admin.create(p)) {
            admin.describeCluster().clusterId().get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Expect.that(want.isInstance(e.getCause()), "refused with " + e.getCause() + ", want " + want.getSimpleName());
            return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
        }
        throw new AssertionError("the admin client was served");
    }
}
