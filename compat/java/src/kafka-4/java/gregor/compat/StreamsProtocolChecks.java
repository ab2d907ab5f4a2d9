package gregor.compat;

import static gregor.compat.AdminCalls.expectFailure;
import static gregor.compat.AdminCalls.get;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * Kafka Streams with its own rebalance protocol (KIP-1071,
 * {@code group.protocol=streams}: StreamsGroupHeartbeat and
 * StreamsGroupDescribe) through kafka-streams' KafkaStreams and
 * kafka-clients' Admin client, as steps on one application
 * ({@link StreamsWordCount}, a word count through a repartition topic into
 * a state store) over one 4-partition input topic, so 8 tasks (2
 * subtopologies):
 *
 * <ol>
 *   <li>count: instance a (its own state directory) runs alone, gets all 8
 *       tasks, and the last count of every word of the first 200 lines,
 *       read_committed from the output, is its number of occurrences.
 *   <li>internal-topics: the broker created the repartition topic
 *       &lt;app&gt;-counts-repartition and the changelog
 *       &lt;app&gt;-counts-changelog (no other topic of the application),
 *       each with the input's 4 partitions, with the configs Streams asks
 *       for in its topology: the changelog compacted, the repartition
 *       topic cleanup.policy=delete with retention.ms=-1 and
 *       segment.bytes=52428800, both message.timestamp.type=CreateTime.
 *   <li>share: instance b (another state directory, same JVM) joins; each
 *       instance ends up with some of the tasks, none with a task of the
 *       other, together all 8; 200 more lines are counted right.
 *   <li>describe: listGroups of streams groups lists the group (type
 *       streams, Stable); describeStreamsGroups shows it Stable with the
 *       two members, each the consumer of one instance's stream thread
 *       with the tasks that instance runs (assignment = target
 *       assignment, member epoch = target assignment epoch, distinct
 *       process ids), and the topology's two subtopologies as the
 *       application built them, and the sticky assignor;
 *       deleteStreamsGroups is refused (GroupNotEmpty).
 *   <li>failover: a closes, leaving the group; b ends up with all 8 tasks
 *       and the group with one member; the last 200 lines are counted
 *       right (every line once); listStreamsGroupOffsets gives the end
 *       offset of every input partition.
 *   <li>delete: b closes, leaving the group; the group is Empty with no
 *       members; deleteStreamsGroups deletes it: describe says
 *       GroupIdNotFound and listGroups no longer lists it.
 * </ol>
 */
final class StreamsProtocolChecks implements AutoCloseable {
    static final int PARTITIONS = 4;
    static final int LINES = 600;

    private final Clients clients;
    private final String in, out, app;
    private KafkaStreams a, b;

    StreamsProtocolChecks(Clients clients) {
        this.clients = clients;
        this.in = clients.name("sp-in");
        this.out = clients.name("sp-out");
        this.app = clients.name("sp-app");
    }

    String count() throws Exception {
        clients.createTopic(in, PARTITIONS);
        clients.createTopic(out, PARTITIONS);
        write(0, 200);
        a = start("a");
        awaitTasks("a alone to run every task", () -> Map.of("a", StreamsWordCount.activeTasks(a)));
        awaitCounts(200);
        return "one instance with group.protocol=streams ran all " + PARTITIONS * 2 + " tasks and counted 200 lines";
    }

    String internalTopics() throws Exception {
        Admin admin = clients.admin();
        Set<String> topics = get(admin.listTopics().names());
        Set<String> own = topics.stream().filter(t -> t.startsWith(app + "-")).collect(Collectors.toCollection(TreeSet::new));
        String repartition = app + "-" + StreamsWordCount.STORE + "-repartition";
        String changelog = app + "-" + StreamsWordCount.STORE + "-changelog";
        Expect.equal(own, new TreeSet<>(List.of(repartition, changelog)), "the application's topics");
        Map<String, TopicDescription> d = get(admin.describeTopics(List.of(repartition, changelog)).allTopicNames());
        for (String t : List.of(repartition, changelog)) {
            Expect.equal(d.get(t).partitions().size(), PARTITIONS, "partitions of " + t + " (the input " + in + " has " + PARTITIONS + ")");
            Expect.that(!d.get(t).isInternal(), t + " is described as one of the broker's internal topics");
        }
        ConfigResource rc = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        ConfigResource rr = new ConfigResource(ConfigResource.Type.TOPIC, repartition);
        Map<ConfigResource, Config> configs = get(admin.describeConfigs(List.of(rc, rr)).all());
        Expect.equal(configs.get(rc).get("cleanup.policy").value(), "compact", changelog + " cleanup.policy");
        Expect.equal(configs.get(rr).get("cleanup.policy").value(), "delete", repartition + " cleanup.policy");
        Expect.equal(configs.get(rr).get("retention.ms").value(), "-1", repartition + " retention.ms");
        Expect.equal(configs.get(rr).get("segment.bytes").value(), "52428800", repartition + " segment.bytes");
        for (ConfigResource r : List.of(rc, rr)) {
            Expect.equal(configs.get(r).get("message.timestamp.type").value(), "CreateTime", r.name() + " message.timestamp.type");
        }
        return "the broker created " + repartition + " and " + changelog + " with " + PARTITIONS + " partitions each";
    }

    String share() throws Exception {
        b = start("b");
        awaitTasks("a and b to share the tasks", () -> Map.of("a", StreamsWordCount.activeTasks(a), "b", StreamsWordCount.activeTasks(b)));
        Set<String> ta = StreamsWordCount.activeTasks(a), tb = StreamsWordCount.activeTasks(b);
        write(200, 400);
        awaitCounts(400);
        return "a runs " + ta + ", b runs " + tb + "; 400 lines counted";
    }

    String describe() throws Exception {
        Admin admin = clients.admin();
        Map<String, GroupListing> listed = new HashMap<>();
        for (GroupListing l : get(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all())) {
            listed.put(l.groupId(), l);
        }
        GroupListing l = listed.get(app);
        Expect.that(l != null, "listGroups (streams groups) does not list " + app + ": " + listed);
        Expect.equal(l.type().orElse(null), GroupType.STREAMS, "listed type of " + app);
        Expect.equal(l.groupState().orElse(null), GroupState.STABLE, "listed state of " + app);

        // The consumer client ids of each instance's stream threads.
        Map<String, String> instanceOf = new HashMap<>();
        Map<String, KafkaStreams> instances = Map.of("a", a, "b", b);
        for (Map.Entry<String, KafkaStreams> e : instances.entrySet()) {
            for (ThreadMetadata t : e.getValue().metadataForLocalThreads()) {
                instanceOf.put(t.consumerClientId(), e.getKey());
            }
        }
        StreamsGroupDescription d = stableDescription(2);
        Expect.equal(d.groupId(), app, "described group id");
        Set<String> processes = new TreeSet<>();
        Set<String> seen = new TreeSet<>();
        for (StreamsGroupMemberDescription m : d.members()) {
            String inst = instanceOf.get(m.clientId());
            Expect.that(inst != null, "member " + m.memberId() + " has client id " + m.clientId() + ", no stream thread's consumer " + instanceOf.keySet());
            seen.add(inst);
            processes.add(m.processId());
            Set<String> local = StreamsWordCount.activeTasks(instances.get(inst));
            Expect.equal(tasks(m.assignment()), local, "active tasks of member " + m.memberId() + " (instance " + inst + ") as described, and as the instance runs them");
            Expect.equal(tasks(m.targetAssignment()), local, "target active tasks of member " + m.memberId());
            Expect.that(m.assignment().standbyTasks().isEmpty() && m.assignment().warmupTasks().isEmpty(),
                    "member " + m.memberId() + " has standby or warm-up tasks: " + m.assignment());
            Expect.equal(m.memberEpoch(), d.targetAssignmentEpoch(), "member epoch of " + m.memberId() + " of the stable group");
            Expect.equal(m.topologyEpoch(), d.topologyEpoch(), "topology epoch of member " + m.memberId());
            Expect.that(!m.isClassic(), "member " + m.memberId() + " is described as a classic member");
        }
        Expect.equal(seen, new TreeSet<>(List.of("a", "b")), "instances among the members");
        Expect.equal(processes.size(), 2, "distinct process ids of the two instances' members " + processes);
        checkSubtopologies(d);
        expectFailure(admin.deleteStreamsGroups(List.of(app)).all(), GroupNotEmptyException.class, "deleteStreamsGroups with two members");
        // Kafka 4.4 answers StreamsGroupDescribe v1 (KIP-1331) with the
        // name of the assignor of the next assignment: its default
        // group.streams.assignors is [sticky].
        Expect.equal(d.assignorName().orElse(null), "sticky", "assignorName of the described group");
        return "listed and described Stable, epoch " + d.groupEpoch() + ", with members and tasks as the instances run them";
    }

    String failover() throws Exception {
        StreamsWordCount.closeLeaving(a);
        a = null;
        awaitTasks("b to run every task after a left", () -> Map.of("b", StreamsWordCount.activeTasks(b)));
        StreamsGroupDescription d = stableDescription(1);
        Expect.equal(tasks(d.members().iterator().next().assignment()), StreamsWordCount.allTasks(PARTITIONS), "b's described tasks");
        write(400, LINES);
        awaitCounts(LINES);
        Map<TopicPartition, Long> ends = endOffsets();
        Map<TopicPartition, Long> committed = new HashMap<>();
        Expect.eventually(Clients.TIMEOUT, "committed offsets of " + app + " at the end of " + in, () -> {
            try {
                Map<TopicPartition, OffsetAndMetadata> got = clients.admin()
                        .listStreamsGroupOffsets(Map.of(app, new ListStreamsGroupOffsetsSpec()))
                        .partitionsToOffsetAndMetadata(app).get();
                committed.clear();
                got.forEach((tp, o) -> {
                    if (tp.topic().equals(in) && o != null) {
                        committed.put(tp, o.offset());
                    }
                });
                return committed.equals(ends);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        return "b took over all tasks; " + LINES + " lines counted once each; committed offsets " + committed;
    }

    String delete() throws Exception {
        StreamsWordCount.closeLeaving(b);
        b = null;
        Admin admin = clients.admin();
        StreamsGroupDescription[] d = {null};
        Expect.eventually(Clients.TIMEOUT, "the group to be Empty", () -> {
            try {
                d[0] = get(admin.describeStreamsGroups(List.of(app)).all()).get(app);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            return d[0].groupState() == GroupState.EMPTY;
        });
        Expect.that(d[0].members().isEmpty(), "the Empty group has members " + d[0].members());
        get(admin.deleteStreamsGroups(List.of(app)).all());
        expectFailure(admin.describeStreamsGroups(List.of(app)).all(), GroupIdNotFoundException.class, "describeStreamsGroups after the delete");
        for (GroupListing l : get(admin.listGroups(ListGroupsOptions.forStreamsGroups()).all())) {
            Expect.that(!l.groupId().equals(app), "listGroups still lists the deleted " + app + ": " + l);
        }
        return "both instances left; the Empty group deleted";
    }

    @Override
    public void close() {
        for (KafkaStreams s : new KafkaStreams[] {a, b}) {
            if (s != null) {
                s.close(Duration.ofSeconds(30));
            }
        }
    }

    /** The group's description once it is Stable with n members all at the target assignment epoch. */
    private StreamsGroupDescription stableDescription(int n) throws Exception {
        StreamsGroupDescription[] d = {null};
        long deadline = System.nanoTime() + 3 * Clients.TIMEOUT.toNanos();
        while (true) {
            d[0] = get(clients.admin().describeStreamsGroups(List.of(app)).all()).get(app);
            boolean settled = d[0].groupState() == GroupState.STABLE && d[0].members().size() == n
                    && d[0].members().stream().allMatch(m -> m.memberEpoch() == d[0].targetAssignmentEpoch());
            if (settled) {
                return d[0];
            }
            Expect.that(System.nanoTime() < deadline, "the group did not settle Stable with " + n + " members: " + d[0]);
            Thread.sleep(200);
        }
    }

    /**
     * The subtopologies are the application's, as Streams sends them in
     * its heartbeat: 0 reads in and writes the repartition topic, 1 reads
     * the repartition topic into the counts with their changelog.
     */
    private void checkSubtopologies(StreamsGroupDescription d) {
        String repartition = app + "-" + StreamsWordCount.STORE + "-repartition";
        String changelog = app + "-" + StreamsWordCount.STORE + "-changelog";
        Map<String, StreamsGroupSubtopologyDescription> subs = new TreeMap<>();
        d.subtopologies().forEach(s -> subs.put(s.subtopologyId(), s));
        Expect.equal(subs.keySet(), new TreeSet<>(List.of("0", "1")), "subtopology ids of " + d.subtopologies());
        StreamsGroupSubtopologyDescription s0 = subs.get("0"), s1 = subs.get("1");
        Expect.equal(s0.sourceTopics(), List.of(in), "source topics of subtopology 0");
        Expect.equal(s0.repartitionSinkTopics(), List.of(repartition), "repartition sink topics of subtopology 0");
        Expect.equal(s0.stateChangelogTopics().keySet(), Set.of(), "changelog topics of subtopology 0");
        Expect.equal(s1.repartitionSourceTopics().keySet(), Set.of(repartition), "repartition source topics of subtopology 1");
        Expect.equal(s1.stateChangelogTopics().keySet(), Set.of(changelog), "changelog topics of subtopology 1");
        // Streams names a repartition topic a subtopology reads as a
        // repartition source topic only, and the output topic no sink.
        Expect.equal(s1.sourceTopics(), List.of(), "source topics of subtopology 1");
        Expect.equal(s1.repartitionSinkTopics(), List.of(), "repartition sink topics of subtopology 1");
        Expect.equal(s0.repartitionSourceTopics().keySet(), Set.of(), "repartition source topics of subtopology 0");
        Expect.equal(s1.stateChangelogTopics().get(changelog).topicConfigs().get("cleanup.policy"), "compact",
                "cleanup.policy of " + changelog + " in the described topology");
    }

    /** Active tasks of an assignment as "subtopology_partition". */
    private static Set<String> tasks(StreamsGroupMemberAssignment assignment) {
        Set<String> out = new TreeSet<>();
        for (StreamsGroupMemberAssignment.TaskIds ids : assignment.activeTasks()) {
            for (int p : ids.partitions()) {
                out.add(ids.subtopologyId() + "_" + p);
            }
        }
        return out;
    }

    private KafkaStreams start(String name) throws Exception {
        Path dir = Files.createTempDirectory("gregor-streams-" + name);
        KafkaStreams s = StreamsWordCount.create(clients.bootstrap(), app, in, out, dir);
        s.start();
        long deadline = System.nanoTime() + 2 * Clients.TIMEOUT.toNanos();
        while (s.state() != KafkaStreams.State.RUNNING) {
            Expect.that(System.nanoTime() < deadline && s.state() != KafkaStreams.State.ERROR,
                    "instance " + name + " is " + s.state());
            Thread.sleep(50);
        }
        return s;
    }

    interface TaskView {
        Map<String, Set<String>> get();
    }

    /**
     * Waits until the instances' active tasks are all the tasks, each
     * instance having some and no task two; fails after 90 s naming what
     * each ran.
     */
    private void awaitTasks(String what, TaskView view) throws Exception {
        Set<String> all = StreamsWordCount.allTasks(PARTITIONS);
        long deadline = System.nanoTime() + 3 * Clients.TIMEOUT.toNanos();
        while (true) {
            Map<String, Set<String>> now = new TreeMap<>(view.get());
            Set<String> union = new TreeSet<>();
            int sum = 0;
            boolean each = true;
            for (Set<String> t : now.values()) {
                union.addAll(t);
                sum += t.size();
                each &= !t.isEmpty();
            }
            if (each && union.equals(all) && sum == all.size()) {
                return;
            }
            Expect.that(System.nanoTime() < deadline, "timed out waiting for " + what + ": the instances run " + now);
            Thread.sleep(100);
        }
    }

    /** Writes input lines [from, to), line i with key i. */
    private void write(int from, int to) throws Exception {
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = from; i < to; i++) {
                p.send(new ProducerRecord<>(in, String.valueOf(i), StreamsWordCount.line(i)));
            }
            p.flush();
        }
    }

    private Map<TopicPartition, Long> endOffsets() {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < PARTITIONS; i++) {
            tps.add(new TopicPartition(in, i));
        }
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of())) {
            return new HashMap<>(c.endOffsets(tps, Clients.TIMEOUT));
        }
    }

    /**
     * Reads the output read_committed until every word's last count is its
     * count in the first n lines, and for a second more, in which no count
     * may change; a count above the final one (a line counted twice) fails
     * at once.
     */
    private void awaitCounts(int n) throws Exception {
        Map<String, Long> expected = StreamsWordCount.counts(n);
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < PARTITIONS; i++) {
            tps.add(new TopicPartition(out, i));
        }
        Map<String, Long> last = new TreeMap<>();
        try (KafkaConsumer<String, String> c = clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"))) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.nanoTime() + 3 * Clients.TIMEOUT.toNanos();
            long settled = 0;
            while (System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(r -> {
                    long v = Long.parseLong(r.value());
                    Expect.that(v <= expected.getOrDefault(r.key(), 0L), "after " + n + " lines: " + r.key() + " counted " + v
                            + " times at " + r.topic() + "-" + r.partition() + "@" + r.offset() + ", want at most " + expected.get(r.key()));
                    last.put(r.key(), v);
                });
                if (!last.equals(expected)) {
                    settled = 0;
                } else if (settled == 0) {
                    settled = System.nanoTime();
                } else if (System.nanoTime() - settled > 1_000_000_000L) {
                    return;
                }
            }
        }
        throw new AssertionError("after " + n + " lines: last counts " + last + ", want " + expected);
    }
}
