package gregor.compat.connect;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink connector for the Connect check: one task appends each record's
 * value as a line to a file, flushing it whenever Connect commits the
 * group's offsets.
 */
public final class FileSinkConnector extends SinkConnector {
    private Map<String, String> config;

    @Override
    public void start(Map<String, String> props) {
        config = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return FileSinkTask.class;
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
                .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "The file to append lines to.");
    }

    @Override
    public String version() {
        return "1";
    }
}
