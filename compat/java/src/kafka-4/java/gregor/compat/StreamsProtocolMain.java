package gregor.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Runs {@link StreamsProtocolChecks}, Kafka Streams with the streams
 * rebalance protocol of KIP-1071, against its own broker (which must list
 * "streams" in group.coordinator.rebalance.protocols) and prints one RESULT
 * line per step, streams-protocol-&lt;step&gt;, as {@link Main} does. The
 * steps build on each other (one application, one input topic): when
 * count, share or failover fails, which start and stop the instances the
 * later steps need, the later steps fail as not run. Only kafka-streams
 * 4.x has the protocol: this class is compiled from src/kafka-4 (see
 * pom.xml).
 *
 * <p>Usage: {@code StreamsProtocolMain <bootstrap host:port> <topic prefix>}.
 */
public final class StreamsProtocolMain {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: StreamsProtocolMain <bootstrap host:port> <topic prefix>");
            System.exit(2);
        }
        Clients clients = new Clients(args[0], args[1]);
        StreamsProtocolChecks streams = new StreamsProtocolChecks(clients);
        Map<String, Main.Check> steps = new LinkedHashMap<>();
        steps.put("count", streams::count);
        steps.put("internal-topics", streams::internalTopics);
        steps.put("share", streams::share);
        steps.put("describe", streams::describe);
        steps.put("failover", streams::failover);
        steps.put("delete", streams::delete);
        Set<String> prerequisites = Set.of("count", "share", "failover");
        Map<String, Main.Check> checks = Main.chained("streams-protocol", steps, prerequisites);
        boolean ok;
        try {
            ok = Main.runAll(clients, checks);
        } finally {
            streams.close();
        }
        System.exit(ok ? 0 : 1);
    }
}
