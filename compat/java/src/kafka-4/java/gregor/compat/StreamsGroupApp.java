package gregor.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.util.Set;
import org.apache.kafka.streams.KafkaStreams;

/**
 * One instance of {@link StreamsWordCount} (group.protocol=streams) that
 * runs until its standard input ends, for the kafka-cli row's
 * streams-groups feature (compat/tools_streams_groups_test.go), which
 * points Kafka's kafka-streams-groups tool at its group. It prints
 *
 * <pre>
 * STATE RUNNING
 * TASKS 0_0 0_1 1_0 1_1
 * CLOSED
 * </pre>
 *
 * a STATE line at every state change, a TASKS line (its active tasks)
 * whenever they change, and CLOSED once it has closed, leaving the group,
 * after its input ended. Its exit status is 1 if it went into ERROR or
 * did not close in time.
 *
 * <p>Usage: {@code StreamsGroupApp <bootstrap host:port> <application id> <input topic> <output topic>}.
 */
public final class StreamsGroupApp {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: StreamsGroupApp <bootstrap host:port> <application id> <input topic> <output topic>");
            System.exit(2);
        }
        KafkaStreams s = StreamsWordCount.create(args[0], args[1], args[2], args[3], Files.createTempDirectory("gregor-streams-app"));
        s.setStateListener((now, before) -> {
            synchronized (System.out) {
                System.out.println("STATE " + now);
                System.out.flush();
            }
        });
        s.start();
        Thread watcher = new Thread(() -> {
            Set<String> last = null;
            while (!Thread.currentThread().isInterrupted()) {
                Set<String> now;
                try {
                    now = StreamsWordCount.activeTasks(s);
                } catch (RuntimeException e) {
                    now = last;
                }
                if (now != null && !now.equals(last)) {
                    synchronized (System.out) {
                        System.out.println("TASKS " + String.join(" ", now));
                        System.out.flush();
                    }
                    last = now;
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "task-watcher");
        watcher.setDaemon(true);
        watcher.start();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        while (stdin.readLine() != null) {
            // runs until the input ends
        }
        watcher.interrupt();
        boolean error = s.state() == KafkaStreams.State.ERROR;
        StreamsWordCount.closeLeaving(s);
        System.out.println("CLOSED");
        System.out.flush();
        System.exit(error ? 1 : 0);
    }
}
