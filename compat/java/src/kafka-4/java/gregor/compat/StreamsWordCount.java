package gregor.compat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams application of the streams-protocol checks
 * ({@link StreamsProtocolChecks}) and of the kafka-cli row's streams-groups
 * feature ({@link StreamsGroupApp}): a word count of the lines of an input
 * topic whose groupBy goes through a repartition topic and whose counts
 * live in the state store "counts", backed by a changelog topic, with
 * Kafka Streams' own rebalance protocol of KIP-1071
 * ({@code group.protocol=streams}): the group coordinator, not the
 * client, assigns the tasks and creates both internal topics. Exactly
 * once (exactly_once_v2), so that a task moving between instances can
 * count no record twice.
 */
final class StreamsWordCount {
    private static final String[] WORDS = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"};

    /** The name of the count's state store: its changelog is &lt;app&gt;-counts-changelog. */
    static final String STORE = "counts";

    private StreamsWordCount() {}

    /** Input line i. */
    static String line(int i) {
        return WORDS[i % 7] + " " + WORDS[i % 5] + " " + WORDS[i % 3];
    }

    /** The count of every word in input lines [0, n). */
    static Map<String, Long> counts(int n) {
        Map<String, Long> m = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            for (String w : line(i).split(" ")) {
                m.merge(w, 1L, Long::sum);
            }
        }
        return m;
    }

    static Topology topology(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .mapValues(String::valueOf)
                .to(out, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** An instance of application app with its own state directory. */
    static KafkaStreams create(String bootstrap, String app, String in, String out, Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "exactly_once_v2");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        return new KafkaStreams(topology(in, out), p);
    }

    /** The active tasks of the instance's stream threads, as "subtopology_partition". */
    static Set<String> activeTasks(KafkaStreams s) {
        Set<String> tasks = new TreeSet<>();
        for (ThreadMetadata t : s.metadataForLocalThreads()) {
            for (TaskMetadata task : t.activeTasks()) {
                tasks.add(task.taskId().subtopology() + "_" + task.taskId().partition());
            }
        }
        return tasks;
    }

    /** Every task of the word count over an input of the given partitions: two subtopologies. */
    static Set<String> allTasks(int partitions) {
        Set<String> tasks = new TreeSet<>();
        for (int sub = 0; sub < 2; sub++) {
            for (int p = 0; p < partitions; p++) {
                tasks.add(sub + "_" + p);
            }
        }
        return tasks;
    }

    /** Closes the instance, leaving the group (so that its tasks move at once) after committing. */
    static void closeLeaving(KafkaStreams s) {
        boolean closed = s.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                .withTimeout(Duration.ofSeconds(60)));
        Expect.that(closed, "the streams instance did not close within 60 s (state " + s.state() + ")");
    }
}
