package gregor.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Runs {@link ShareGroupChecks}, share groups of KIP-932 through
 * KafkaShareConsumer and the Admin client, against its own broker and
 * prints one RESULT line per step, share-groups-&lt;step&gt;, as {@link Main}
 * does. The steps build on each other (one group, one topic): when config
 * or consume fails, which put the records into the group, the later steps
 * fail as not run; the later ones each find the group as the step before
 * left it, which they check. Only kafka-clients 4.x has these
 * APIs: this class is compiled from src/kafka-4 (see pom.xml).
 *
 * <p>Usage: {@code ShareGroupMain <bootstrap host:port> <topic prefix>}.
 */
public final class ShareGroupMain {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: ShareGroupMain <bootstrap host:port> <topic prefix>");
            System.exit(2);
        }
        Clients clients = new Clients(args[0], args[1]);
        ShareGroupChecks share = new ShareGroupChecks(clients);
        Map<String, Main.Check> steps = new LinkedHashMap<>();
        steps.put("config", share::config);
        steps.put("consume", share::consume);
        steps.put("describe", share::describe);
        steps.put("offsets", share::offsets);
        steps.put("alter", share::alter);
        steps.put("delete", share::delete);
        Map<String, Main.Check> checks = Main.chained("share-groups", steps, Set.of("config", "consume"));
        boolean ok;
        try {
            ok = Main.runAll(clients, checks);
        } finally {
            share.close();
        }
        System.exit(ok ? 0 : 1);
    }
}
