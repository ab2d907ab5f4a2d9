package gregor.compat;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Kafka Connect: a distributed worker (ConnectDistributed, its own JVM, as
 * connect-distributed.sh starts it) with exactly-once source support keeps
 * its configs, offsets and statuses in compacted topics it creates, and
 * runs a source connector writing numbered lines to a topic and a sink
 * connector appending that topic to a file, both created over the REST
 * API. The worker is stopped, the source is asked for more lines, and a
 * new worker goes on from the committed source offset and sink group
 * offsets: the file holds every line once, in order. The connectors are
 * this program's own (gregor.compat.connect); the runtime is Kafka's.
 */
final class ConnectChecks {
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private final Clients clients;

    ConnectChecks(Clients clients) {
        this.clients = clients;
    }

    String connect() throws Exception {
        String topic = clients.name("connect-lines"), group = clients.name("connect-cluster");
        clients.createTopic(topic, 1);
        Path dir = Files.createTempDirectory("gregor-connect");
        Path sinkFile = dir.resolve("sink.txt");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path props = dir.resolve("worker.properties");
        Files.writeString(props, String.join("\n",
                "bootstrap.servers=" + clients.bootstrap(),
                "group.id=" + group,
                "key.converter=org.apache.kafka.connect.storage.StringConverter",
                "value.converter=org.apache.kafka.connect.storage.StringConverter",
                "config.storage.topic=" + group + "-configs",
                "offset.storage.topic=" + group + "-offsets",
                "status.storage.topic=" + group + "-status",
                "config.storage.replication.factor=1",
                "offset.storage.replication.factor=1",
                "status.storage.replication.factor=1",
                "exactly.once.source.support=enabled",
                "offset.flush.interval.ms=500",
                "listeners=http://127.0.0.1:" + port,
                "") );
        String base = "http://127.0.0.1:" + port;

        Process worker = startWorker(props, dir.resolve("worker-1.log"), base);
        try {
            put(base + "/connectors/counter/config", "{\"connector.class\":\"gregor.compat.connect.CountingSourceConnector\","
                    + "\"tasks.max\":\"1\",\"topic\":\"" + topic + "\",\"count\":\"100\"}");
            put(base + "/connectors/file/config", "{\"connector.class\":\"gregor.compat.connect.FileSinkConnector\","
                    + "\"tasks.max\":\"1\",\"topics\":\"" + topic + "\",\"file\":\"" + sinkFile + "\"}");
            awaitLines(sinkFile, 100);
            for (String name : List.of("counter", "file")) {
                String status = get(base + "/connectors/" + name + "/status");
                Expect.that(status.contains("\"state\":\"RUNNING\"") && !status.contains("FAILED"), name + " status " + status);
            }
        } finally {
            stop(worker);
        }

        worker = startWorker(props, dir.resolve("worker-2.log"), base);
        try {
            put(base + "/connectors/counter/config", "{\"connector.class\":\"gregor.compat.connect.CountingSourceConnector\","
                    + "\"tasks.max\":\"1\",\"topic\":\"" + topic + "\",\"count\":\"150\"}");
            awaitLines(sinkFile, 150);
            Thread.sleep(1000); // a duplicate would show up now
            awaitLines(sinkFile, 150);
        } finally {
            stop(worker);
        }

        // Exactly-once source tasks write in transactions: each commit marker takes an offset.
        long end = clients.endOffsetSum(topic, 1);
        Expect.that(end > 150, "the source topic ends at " + end + ", without transaction markers after 150 records");
        for (String suffix : List.of("-configs", "-offsets", "-status")) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, group + suffix);
            Config config = clients.admin().describeConfigs(List.of(res)).all()
                    .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).get(res);
            Expect.equal(config.get("cleanup.policy").value(), "compact", "cleanup.policy of " + group + suffix);
        }
        TopicDescription configs = clients.admin().describeTopics(List.of(group + "-configs")).allTopicNames()
                .get(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS).get(group + "-configs");
        Expect.equal(configs.partitions().size(), 1, "partitions of the config topic");
        return "a distributed worker with exactly-once source support ran a source and a sink connector created over REST;"
                + " 150 lines reached the sink's file once each, in order, across a worker restart;"
                + " its config, offset and status topics are compacted; the source topic ends at " + end + " (commit markers)";
    }

    /** Starts ConnectDistributed with this program's classpath and waits for its REST API. */
    private static Process startWorker(Path props, Path log, String base) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-Xmx256M", "-cp", System.getProperty("java.class.path"),
                "org.apache.kafka.connect.cli.ConnectDistributed", props.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + 2 * Clients.TIMEOUT.toNanos();
        while (true) {
            Expect.that(p.isAlive(), "the worker exited:\n" + tail(log));
            try {
                // 404 until the REST resources are up, 503 while the worker joins its group
                HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/connectors")).GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return p;
                }
            } catch (java.io.IOException notYet) {
                // not listening yet
            }
            Expect.that(System.nanoTime() < deadline, "the worker's REST API did not come up:\n" + tail(log));
            Thread.sleep(200);
        }
    }

    /** Stops a worker as its script's users do (SIGTERM: a graceful shutdown). */
    private static void stop(Process p) throws Exception {
        p.destroy();
        if (!p.waitFor(Clients.TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("the worker did not stop within " + Clients.TIMEOUT);
        }
    }

    /** Waits until the file holds exactly line-0..line-(n-1); fails at once on anything else. */
    private static void awaitLines(Path file, int n) throws Exception {
        long deadline = System.nanoTime() + 2 * Clients.TIMEOUT.toNanos();
        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            want.add("line-" + i);
        }
        List<String> got = List.of();
        while (System.nanoTime() < deadline) {
            got = Files.exists(file) ? Files.readAllLines(file) : List.of();
            Expect.that(got.size() <= n && got.equals(want.subList(0, got.size())),
                    "the sink's file holds " + got.size() + " lines, not a prefix of line-0..line-" + (n - 1) + ": " + got);
            if (got.size() == n) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the sink's file holds " + got.size() + " of " + n + " lines");
    }

    private static String put(String url, String json) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url))
                .header("Content-Type", "application/json").PUT(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
        Expect.that(r.statusCode() / 100 == 2, "PUT " + url + ": " + r.statusCode() + " " + r.body());
        return r.body();
    }

    private static String get(String url) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofString());
        Expect.that(r.statusCode() / 100 == 2, "GET " + url + ": " + r.statusCode() + " " + r.body());
        return r.body();
    }

    private static String tail(Path log) throws Exception {
        List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }
}
