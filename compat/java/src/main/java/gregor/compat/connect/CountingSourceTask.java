package gregor.compat.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** The task of {@link CountingSourceConnector}. */
public final class CountingSourceTask extends SourceTask {
    private static final Map<String, String> PARTITION = Map.of("source", "counter");

    private String topic;
    private int count;
    private long next;

    @Override
    public void start(Map<String, String> props) {
        topic = props.get("topic");
        count = Integer.parseInt(props.get("count"));
        Map<String, Object> stored = context.offsetStorageReader().offset(PARTITION);
        next = stored == null ? 0 : (Long) stored.get("position");
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        if (next >= count) {
            Thread.sleep(100);
            return null;
        }
        List<SourceRecord> batch = new ArrayList<>();
        for (int i = 0; i < 10 && next < count; i++, next++) {
            batch.add(new SourceRecord(PARTITION, Map.of("position", next + 1), topic, 0,
                    Schema.STRING_SCHEMA, "line-" + next));
        }
        return batch;
    }

    @Override
    public void stop() {
    }

    @Override
    public String version() {
        return "1";
    }
}
