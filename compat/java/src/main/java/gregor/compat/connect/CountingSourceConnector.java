package gregor.compat.connect;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source connector for the Connect check: one task writes "line-0" up to
 * "line-(count-1)" to a topic, one record per position, and stores the next
 * position as its source offset, so a restarted task goes on where the
 * committed offset says.
 */
public final class CountingSourceConnector extends SourceConnector {
    private Map<String, String> config;

    @Override
    public void start(Map<String, String> props) {
        config = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return CountingSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(config);
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
                .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "The topic to write to.")
                .define("count", ConfigDef.Type.INT, ConfigDef.Importance.HIGH, "How many lines to write in all.");
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public String version() {
        return "1";
    }
}
