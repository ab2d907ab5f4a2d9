package gregor.compat;

import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Drives org.apache.kafka:kafka-clients against a broker and prints one line
 * per feature on stdout:
 *
 * <pre>
 * VERSION kafka-clients 4.4.0
 * RESULT produce ok 100 records acknowledged in order
 * RESULT gzip fail read back 499 of 500 records
 * </pre>
 *
 * Usage: {@code Main <bootstrap host:port> <topic prefix> [restart|rack-reads|security]}; with
 * {@code restart} only {@link RestartCheck} runs, which needs the caller to
 * restart the broker when it prints RESTART; with {@code rack-reads} only
 * {@link RackReadsCheck}, which needs a three-broker cluster in racks; with
 * {@code security} only {@link SecurityChecks} and {@link AclChecks}, which
 * need a broker with secured listeners besides the PLAINTEXT bootstrap and
 * one with an authorizer. Every check makes
 * its own topics and groups under the prefix, so one failing check does not
 * cascade into the next. The clients keep their default settings (an
 * idempotent acks=all producer, the classic consumer group protocol) except
 * where a check states otherwise. The exit status is 0 when every check
 * passed and 1 otherwise; the RESULT lines say which. The codec checks
 * write 1000 records to partition 0 of {@code <prefix>-<codec>}, the
 * idempotence check 1000 to each of 3 partitions of {@code <prefix>-idempotence},
 * where the Go test checks the stored batches' codec and producer id.
 */
public final class Main {
    /** One feature check; it throws (usually {@link Expect}) when the client saw the broker misbehave. */
    interface Check {
        String run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3
                || (args.length == 3 && !java.util.Set.of("restart", "rack-reads", "security").contains(args[2]))) {
            System.err.println("usage: Main <bootstrap host:port> <topic prefix> [restart|rack-reads|security]");
            System.exit(2);
        }
        Clients clients = new Clients(args[0], args[1]);
        Map<String, Check> checks = new LinkedHashMap<>();
        if (args.length == 3 && args[2].equals("security")) {
            SecurityChecks security = new SecurityChecks(clients);
            checks.put("sasl", security::sasl);
            checks.put("tls", security::tls);
            checks.put("acls", new AclChecks(clients)::acls);
            System.exit(runAll(clients, checks) ? 0 : 1);
        }
        if (args.length == 3) {
            checks.put(args[2], args[2].equals("restart") ? new RestartCheck(clients)::run : new RackReadsCheck(clients)::run);
            System.exit(runAll(clients, checks) ? 0 : 1);
        }
        ProduceChecks produce = new ProduceChecks(clients);
        checks.put("produce", produce::produce);
        checks.put("consume", new ConsumeChecks(clients)::consume);
        checks.put("idempotence", produce::idempotence);
        CodecChecks codecs = new CodecChecks(clients);
        for (String codec : new String[] {"gzip", "snappy", "lz4", "zstd"}) {
            checks.put(codec, () -> codecs.codec(codec));
        }
        GroupChecks groups = new GroupChecks(clients);
        RebalanceChecks rebalances = new RebalanceChecks(clients);
        checks.put("group", () -> groups.group() + "; " + rebalances.all());
        checks.put("commit", groups::commit);
        checks.put("transactions", new TransactionChecks(clients)::transactions);
        checks.put("streams", new StreamsChecks(clients)::streams);
        checks.put("connect", new ConnectChecks(clients)::connect);
        AdminTopicChecks topics = new AdminTopicChecks(clients);
        checks.put("admin-topics", topics::topics);
        checks.put("admin-partitions", topics::partitions);
        checks.put("admin-cluster", topics::cluster);
        checks.put("admin-logdirs", topics::logDirs);
        AdminGroupChecks groupAdmin = new AdminGroupChecks(clients);
        checks.put("admin-groups", groupAdmin::groups);
        checks.put("admin-offsets", groupAdmin::offsets);
        checks.put("admin-configs", new AdminConfigChecks(clients)::configs);

        System.exit(runAll(clients, checks) ? 0 : 1);
    }

    /**
     * Names a feature's steps {@code <feature>-<step>} and chains them: once a
     * prerequisite step fails, every step after it fails as not run.
     */
    static Map<String, Check> chained(String feature, Map<String, Check> steps, java.util.Set<String> prerequisites) {
        Map<String, Check> checks = new LinkedHashMap<>();
        String[] failed = {null};
        for (Map.Entry<String, Check> s : steps.entrySet()) {
            checks.put(feature + "-" + s.getKey(), () -> {
                if (failed[0] != null) {
                    throw new AssertionError("not run: " + feature + "-" + failed[0] + " failed");
                }
                try {
                    return s.getValue().run();
                } catch (Throwable e) {
                    if (prerequisites.contains(s.getKey())) {
                        failed[0] = s.getKey();
                    }
                    throw e;
                }
            });
        }
        return checks;
    }

    /** Prints the VERSION line, runs every check printing its RESULT line, closes clients; true if all passed. */
    static boolean runAll(Clients clients, Map<String, Check> checks) throws Exception {
        System.out.println("VERSION kafka-clients " + clientVersion());
        boolean allOk = true;
        for (Map.Entry<String, Check> c : checks.entrySet()) {
            String line;
            long start = System.nanoTime();
            try {
                line = "ok " + c.getValue().run();
            } catch (Throwable e) {
                allOk = false;
                line = "fail " + describe(e);
                System.err.println("check " + c.getKey() + " failed:");
                e.printStackTrace();
            }
            long millis = (System.nanoTime() - start) / 1_000_000;
            System.out.println("RESULT " + c.getKey() + " " + line.replaceAll("\\s+", " ") + " [" + millis + " ms]");
            System.out.flush();
        }
        clients.close();
        return allOk;
    }

    /** The version kafka-clients reports, from the properties file inside its jar. */
    static String clientVersion() throws Exception {
        Properties p = new Properties();
        try (InputStream in = Main.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            p.load(in);
        }
        return p.getProperty("version", "unknown");
    }

    /** The exception and its causes on one line. */
    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (b.length() > 0) {
                b.append(" <- ");
            }
            b.append(t instanceof AssertionError ? "" : t.getClass().getSimpleName() + ": ").append(t.getMessage());
        }
        return b.toString();
    }
}
