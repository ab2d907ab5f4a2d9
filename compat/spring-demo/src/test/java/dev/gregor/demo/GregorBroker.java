package dev.gregor.demo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A Gregor broker for the tests: the real gregor binary as a child process,
 * listening on a free 127.0.0.1 port with its log dir in a temp directory.
 * The binary is the one named by the system property gregor.binary or the
 * environment variable GREGOR_BINARY (the Go compat suite sets it), else it
 * is built with `go build` from the repository this demo lives in. The
 * broker's log goes to target/gregor.log; it is stopped with SIGTERM when
 * the JVM exits.
 */
final class GregorBroker {

	private static final Pattern LISTENING = Pattern.compile("msg=listening listener=PLAINTEXT addr=(\\S+)");

	private static GregorBroker instance;

	private final Process process;

	private final Path dataDir;

	private final String address;

	private GregorBroker(Process process, Path dataDir, String address) {
		this.process = process;
		this.dataDir = dataDir;
		this.address = address;
	}

	/** The broker of this JVM, started on first use. */
	static synchronized GregorBroker get() {
		if (instance == null) {
			try {
				instance = start();
			}
			catch (IOException | InterruptedException ex) {
				throw new IllegalStateException("starting gregor: " + ex.getMessage(), ex);
			}
			Runtime.getRuntime().addShutdownHook(new Thread(instance::stop));
		}
		return instance;
	}

	/** host:port of the PLAINTEXT listener. */
	String bootstrapServers() {
		return this.address;
	}

	private static GregorBroker start() throws IOException, InterruptedException {
		Path binary = binary();
		Path dataDir = Files.createTempDirectory("gregor-spring-demo");
		Process process = new ProcessBuilder(binary.toString(), "serve",
				"--override", "listeners=PLAINTEXT://127.0.0.1:0",
				"--override", "log.dirs=" + dataDir)
			.redirectOutput(ProcessBuilder.Redirect.DISCARD)
			.start();
		CompletableFuture<String> address = new CompletableFuture<>();
		Thread logger = new Thread(() -> copyLog(process, address), "gregor-log");
		logger.setDaemon(true);
		logger.start();
		try {
			return new GregorBroker(process, dataDir, address.get(60, TimeUnit.SECONDS));
		}
		catch (Exception ex) {
			process.destroyForcibly();
			throw new IllegalStateException("gregor did not report its listener; see target/gregor.log", ex);
		}
	}

	/** Copies the broker's stderr to target/gregor.log, watching for the listening line. */
	private static void copyLog(Process process, CompletableFuture<String> address) {
		try (BufferedReader in = new BufferedReader(
				new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8));
				PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of("target", "gregor.log")), true)) {
			String line;
			while ((line = in.readLine()) != null) {
				out.println(line);
				Matcher m = LISTENING.matcher(line);
				if (m.find()) {
					address.complete(m.group(1));
				}
			}
			address.completeExceptionally(new IOException("gregor exited with " + process.waitFor()));
		}
		catch (IOException | InterruptedException ex) {
			address.completeExceptionally(ex);
		}
	}

	private static Path binary() throws IOException, InterruptedException {
		String given = System.getProperty("gregor.binary", System.getenv("GREGOR_BINARY"));
		if (given != null && !given.isBlank()) {
			return Path.of(given);
		}
		Path root = repositoryRoot();
		Path built = Path.of("target", "gregor").toAbsolutePath();
		Process go = new ProcessBuilder("go", "build", "-o", built.toString(), "./cmd/gregor")
			.directory(root.toFile())
			.inheritIO()
			.start();
		if (go.waitFor() != 0) {
			throw new IOException("go build ./cmd/gregor failed in " + root);
		}
		return built;
	}

	/** The nearest directory above this one holding gregor's go.mod. */
	private static Path repositoryRoot() throws IOException {
		for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
			Path mod = dir.resolve("go.mod");
			if (Files.isRegularFile(mod) && Files.readString(mod).contains("github.com/gregor-broker/gregor")) {
				return dir;
			}
		}
		throw new IOException("no gregor go.mod above " + Path.of("").toAbsolutePath()
				+ "; set -Dgregor.binary or GREGOR_BINARY");
	}

	private void stop() {
		this.process.destroy();
		try {
			if (!this.process.waitFor(30, TimeUnit.SECONDS)) {
				this.process.destroyForcibly();
			}
			try (Stream<Path> files = Files.walk(this.dataDir)) {
				for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
					Files.deleteIfExists(p);
				}
			}
		}
		catch (IOException | InterruptedException ex) {
			// The JVM is exiting; a leftover temp dir is all that is lost.
		}
	}

}
