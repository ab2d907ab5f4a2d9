package gregor.compat;

import static gregor.compat.AdminCalls.expectFailure;
import static gregor.compat.AdminCalls.get;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** AdminClient on topics, partitions, the cluster and its log dirs. */
final class AdminTopicChecks {
    private final Clients clients;

    AdminTopicChecks(Clients clients) {
        this.clients = clients;
    }

    /** createTopics (and its duplicate error), listTopics, describeTopics, deleteTopics. */
    String topics() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-topic");
        NewTopic nt = new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "7200000"));
        get(admin.createTopics(List.of(nt)).all());
        try {
            get(admin.createTopics(List.of(nt)).all());
            throw new AssertionError("creating " + topic + " twice succeeded");
        } catch (ExecutionException e) {
            Expect.that(e.getCause() instanceof TopicExistsException,
                    "second create failed with " + e.getCause() + ", want TopicExistsException");
        }
        Expect.that(get(admin.listTopics().names()).contains(topic), "listTopics lacks " + topic);
        int self = get(admin.describeCluster().nodes()).iterator().next().id();
        TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        Expect.equal(d.name(), topic, "described name");
        Expect.equal(d.partitions().size(), 3, "described partitions");
        Expect.that(!d.isInternal(), "topic described as internal");
        Expect.that(d.topicId() != null && !d.topicId().toString().equals("AAAAAAAAAAAAAAAAAAAAAA"), "no topic id");
        for (var p : d.partitions()) {
            Expect.that(p.leader() != null && p.leader().id() == self, "partition " + p.partition() + " leader " + p.leader());
            Expect.equal(p.replicas().size(), 1, "replicas of partition " + p.partition());
            Expect.equal(p.isr().size(), 1, "isr of partition " + p.partition());
        }
        TopicDescription byId = get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(d.topicId())))
                .allTopicIds()).get(d.topicId());
        Expect.equal(byId.name(), topic, "name of the topic described by id");
        get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(d.topicId()))).all());
        Expect.eventually(Clients.TIMEOUT, topic + " to leave listTopics",
                () -> !names(admin).contains(topic));
        try {
            get(admin.describeTopics(List.of(topic)).allTopicNames());
            throw new AssertionError("describing deleted " + topic + " succeeded");
        } catch (ExecutionException e) {
            Expect.that(e.getCause() instanceof UnknownTopicOrPartitionException,
                    "describing a deleted topic failed with " + e.getCause() + ", want UnknownTopicOrPartitionException");
        }
        recreate(admin, topic);
        refusals(admin);
        return "created (duplicate refused), listed, described by name and id (3 partitions led by node "
                + self + "), deleted by id, re-created and used; validateOnly, bad replication factor, "
                + "bad config and too few partitions refused";
    }

    /** A topic re-created under a deleted one's name starts empty, with a new id, and works. */
    private void recreate(Admin admin, String topic) throws Exception {
        get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
        try (KafkaProducer<String, String> p = clients.producer()) {
            p.send(new ProducerRecord<>(topic, 0, null, "after re-creation")).get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        var got = clients.readAll(topic, 1, 1);
        Expect.equal(got.get(0).offset(), 0L, "first offset of the re-created topic");
        Expect.equal(got.get(0).value(), "after re-creation", "first record of the re-created topic");
    }

    /** What Kafka refuses, it refuses with the same errors. */
    private void refusals(Admin admin) throws Exception {
        String ghost = clients.name("admin-validate-only");
        get(admin.createTopics(List.of(new NewTopic(ghost, 2, (short) 1)), new CreateTopicsOptions().validateOnly(true)).all());
        Expect.that(!names(admin).contains(ghost), "validateOnly created " + ghost);
        expectFailure(admin.createTopics(List.of(new NewTopic(clients.name("admin-rf3"), 1, (short) 3))).all(),
                InvalidReplicationFactorException.class, "replication factor 3 on one broker");
        expectFailure(admin.createTopics(List.of(new NewTopic(clients.name("admin-badconf"), 1, (short) 1)
                        .configs(Map.of("retention.ms", "soon")))).all(),
                InvalidConfigurationException.class, "retention.ms=soon");
        String two = clients.name("admin-shrink");
        clients.createTopic(two, 2);
        expectFailure(admin.createPartitions(Map.of(two, NewPartitions.increaseTo(1))).all(),
                InvalidPartitionsException.class, "shrinking to 1 partition");
    }

    private static Set<String> names(Admin admin) {
        try {
            return get(admin.listTopics().names());
        } catch (Exception e) {
            throw new AssertionError("listTopics: " + e, e);
        }
    }

    /** createPartitions grows a topic from 2 to 5; the new partitions are described and take records. */
    String partitions() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-partitions");
        clients.createTopic(topic, 2);
        get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
        Expect.eventually(Clients.TIMEOUT, "describeTopics to show 5 partitions", () -> {
            try {
                return get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic).partitions().size() == 5;
            } catch (Exception e) {
                throw new AssertionError("describeTopics: " + e, e);
            }
        });
        RecordMetadata md;
        try (KafkaProducer<String, String> p = clients.producer()) {
            md = p.send(new ProducerRecord<>(topic, 4, "k", "to a new partition"))
                    .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        Expect.equal(md.partition(), 4, "partition of the record sent to partition 4");
        Expect.equal(md.offset(), 0L, "offset in the new partition");
        return "grew 2 -> 5 partitions; produced to partition 4";
    }

    /** describeCluster names one node, this broker, a controller and a cluster id. */
    String cluster() throws Exception {
        DescribeClusterResult r = clients.admin().describeCluster(
                new DescribeClusterOptions().includeAuthorizedOperations(true));
        Collection<Node> nodes = get(r.nodes());
        Node controller = get(r.controller());
        String id = get(r.clusterId());
        Expect.equal(nodes.size(), 1, "nodes");
        Expect.that(id != null && !id.isEmpty(), "no cluster id");
        Expect.that(controller != null && !controller.isEmpty(), "no controller");
        Expect.that(get(r.authorizedOperations()) != null && get(r.authorizedOperations()).contains(AclOperation.DESCRIBE),
                "authorized operations " + get(r.authorizedOperations()));
        FeatureMetadata features = get(clients.admin().describeFeatures().featureMetadata());
        Expect.that(features != null, "describeFeatures returned nothing");
        return "cluster " + id + ", nodes " + nodes + ", controller " + controller.id()
                + ", authorized operations, describeFeatures";
    }

    /** describeLogDirs and describeReplicaLogDirs see a topic's partitions, with the bytes written to them. */
    String logDirs() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-logdirs");
        clients.createTopic(topic, 2);
        try (KafkaProducer<String, String> p = clients.producer()) {
            for (int i = 0; i < 20; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "log dir record " + i));
            }
            p.flush();
        }
        int self = get(admin.describeCluster().nodes()).iterator().next().id();
        Map<String, LogDirDescription> dirs = get(admin.describeLogDirs(List.of(self)).allDescriptions()).get(self);
        Expect.equal(dirs.size(), 1, "log dirs of node " + self);
        LogDirDescription dir = dirs.values().iterator().next();
        Expect.that(dir.error() == null, "log dir error " + dir.error());
        ReplicaInfo p0 = dir.replicaInfos().get(new TopicPartition(topic, 0));
        ReplicaInfo p1 = dir.replicaInfos().get(new TopicPartition(topic, 1));
        Expect.that(p0 != null && p1 != null, "log dir lacks the partitions of " + topic);
        Expect.that(p0.size() > 20 * "log dir record 0".length(), "size of partition 0: " + p0.size());
        Expect.equal(p1.size(), 0L, "size of the empty partition 1");
        Expect.that(dir.totalBytes().isPresent() && dir.totalBytes().getAsLong() > 0, "no total bytes for the log dir");

        TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, self);
        var info = get(admin.describeReplicaLogDirs(List.of(replica)).all()).get(replica);
        Expect.equal(info.getCurrentReplicaLogDir(), dirs.keySet().iterator().next(), "replica log dir");
        return "one log dir, partition sizes " + p0.size() + " and 0 bytes, replica dir found";
    }
}
