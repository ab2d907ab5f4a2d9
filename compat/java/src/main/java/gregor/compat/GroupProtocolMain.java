package gregor.compat;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Runs {@link GroupProtocolChecks}, the consumer group protocol of KIP-848
 * ({@code group.protocol=consumer}), against its own broker and prints the
 * group-protocol RESULT line as {@link Main} does. Only kafka-clients 4.x
 * runs it: 3.x has the protocol as a preview only.
 *
 * <p>Usage: {@code GroupProtocolMain <bootstrap host:port> <topic prefix>}.
 */
public final class GroupProtocolMain {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: GroupProtocolMain <bootstrap host:port> <topic prefix>");
            System.exit(2);
        }
        Clients clients = new Clients(args[0], args[1]);
        Map<String, Main.Check> checks = new LinkedHashMap<>();
        checks.put("group-protocol", new GroupProtocolChecks(clients)::all);
        System.exit(Main.runAll(clients, checks) ? 0 : 1);
    }
}
