package gregor.compat;

import static gregor.compat.AdminCalls.expectFailure;
import static gregor.compat.AdminCalls.get;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;

/** AdminClient on topic and broker configs. */
final class AdminConfigChecks {
    private final Clients clients;

    AdminConfigChecks(Clients clients) {
        this.clients = clients;
    }

    /** describeConfigs and incrementalAlterConfigs (SET, then DELETE) on a topic. */
    String configs() throws Exception {
        Admin admin = clients.admin();
        String topic = clients.name("admin-configs");
        clients.createTopic(topic, 1);
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        ConfigEntry before = entry(admin, res, "retention.ms");
        Expect.equal(before.source(), ConfigEntry.ConfigSource.DEFAULT_CONFIG, "source of retention.ms before");
        Expect.equal(before.value(), "604800000", "default retention.ms");
        Expect.that(entry(admin, res, "cleanup.policy") != null, "cleanup.policy not described");

        get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET)))).all());
        ConfigEntry set = entry(admin, res, "retention.ms");
        Expect.equal(set.value(), "3600000", "retention.ms after SET");
        Expect.equal(set.source(), ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "source after SET");
        Expect.equal(entry(admin, res, "max.message.bytes").value(), "2000000", "max.message.bytes after SET");

        get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all());
        ConfigEntry deleted = entry(admin, res, "retention.ms");
        Expect.equal(deleted.value(), "604800000", "retention.ms after DELETE");
        Expect.equal(deleted.source(), ConfigEntry.ConfigSource.DEFAULT_CONFIG, "source after DELETE");
        get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND)))).all());
        Expect.equal(entry(admin, res, "cleanup.policy").value(), "delete,compact", "cleanup.policy after APPEND");
        get(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT)))).all());
        Expect.equal(entry(admin, res, "cleanup.policy").value(), "compact", "cleanup.policy after SUBTRACT");
        expectFailure(admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all(),
                InvalidConfigurationException.class, "setting an unknown topic config");

        int self = get(admin.describeCluster().nodes()).iterator().next().id();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(self));
        Expect.equal(entry(admin, broker, "log.retention.hours").value(), "168", "broker log.retention.hours");
        Expect.equal(entry(admin, broker, "num.partitions").value(), "1", "broker num.partitions");
        return "described defaults; SET retention.ms and max.message.bytes; DELETE restored the default; "
                + "APPEND and SUBTRACT on cleanup.policy; unknown config refused; broker configs described";
    }

    private static ConfigEntry entry(Admin admin, ConfigResource res, String name) throws Exception {
        Config c = get(admin.describeConfigs(List.of(res)).all()).get(res);
        Expect.that(c != null, "no configs described for " + res);
        ConfigEntry e = c.get(name);
        Expect.that(e != null, name + " missing from " + c.entries().stream().map(ConfigEntry::name).collect(Collectors.toList()));
        return e;
    }
}
