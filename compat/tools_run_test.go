package compat

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Kafka's own command-line tools (kafka-topics, kafka-console-producer, ...)
// run here as Kafka's shell scripts run them: `java -cp '<libs>/*' <main
// class> args`, with the jars of one Kafka release that compat/mk/tools.mk
// copies from Maven Central into ~/.cache/gregor-compat/kafka-tools-<version>.
// The version is the one compat/tools/pom.xml names. Logging goes through
// compat/tools/log4j2.properties: warnings and errors only, on stderr, so
// stdout is the tool's own output and is parsed by the tests.

// cliTools is one installed Kafka release's command-line tools.
type cliTools struct {
	version string // Kafka's version, e.g. 4.4.0
	libs    string // the directory of jars
	log4j   string // the log4j2 configuration file
	classes map[string]bool
	opts    []string // JVM options, as KAFKA_OPTS gives them to Kafka's scripts
}

var pomKafkaVersionRE = regexp.MustCompile(`<kafka\.version>([^<]+)</kafka\.version>`)

// installedJars is where `make compat-deps` copied the jars of
// compat/<pomDir>/pom.xml (~/.cache/gregor-compat/<prefix>-<version>), and
// the Kafka version that pom names.
func installedJars(t *testing.T, pomDir, prefix string) (dir, version string) {
	t.Helper()
	pom, err := os.ReadFile(filepath.Join(pomDir, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := pomKafkaVersionRE.FindSubmatch(pom)
	if m == nil {
		t.Fatalf("compat/%s/pom.xml names no kafka.version", pomDir)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	version = string(m[1])
	return filepath.Join(home, ".cache", "gregor-compat", prefix+"-"+version), version
}

// kafkaCLI finds the tools that `make compat-deps` installed, or fails
// the test saying how to install them.
func kafkaCLI(t *testing.T) *cliTools {
	t.Helper()
	c := &cliTools{classes: map[string]bool{}}
	c.libs, c.version = installedJars(t, "tools", "kafka-tools")
	var err error
	if c.log4j, err = filepath.Abs(filepath.Join("tools", "log4j2.properties")); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java is not installed: run `make compat-deps`")
	}
	// Only the classes of Kafka's own jars are indexed: they name the
	// tools' main classes, which move between packages across releases.
	for _, jar := range []string{"kafka-tools-" + c.version + ".jar", "kafka_2.13-" + c.version + ".jar"} {
		z, err := zip.OpenReader(filepath.Join(c.libs, jar))
		if err != nil {
			t.Fatalf("Kafka %s's tools are not installed (%v): run `make compat-deps`", c.version, err)
		}
		for _, f := range z.File {
			if name, ok := strings.CutSuffix(f.Name, ".class"); ok {
				c.classes[strings.ReplaceAll(name, "/", ".")] = true
			}
		}
		z.Close()
	}
	return c
}

// mainClass returns the first of the candidate class names this release
// has (Kafka moved tools from kafka.* in Scala to org.apache.kafka.tools.*).
func (c *cliTools) mainClass(t *testing.T, candidates ...string) string {
	t.Helper()
	for _, name := range candidates {
		if c.classes[name] {
			return name
		}
	}
	t.Fatalf("Kafka %s has none of %v", c.version, candidates)
	return ""
}

// command builds the java command line of a tool. The JVM's own errors
// go to stderr (its default is stdout, which the tests parse).
//
// Starting a JVM and loading the tools' classes takes most of each run,
// so each main class gets a class-data-sharing archive (JDK 13+ dynamic
// CDS) in the libs dir: the first run of a class writes it to a temporary
// file, which saveArchive renames into place; later runs map it. A missing
// or unusable archive only makes the start slower.
func (c *cliTools) command(ctx context.Context, class string, args ...string) (cmd *exec.Cmd, saveArchive func()) {
	java := []string{"-Xmx256M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Xlog:disable", "-Xlog:all=error:stderr",
		"-Djava.awt.headless=true", "-Dlog4j2.configurationFile=" + c.log4j}
	archive := filepath.Join(c.libs, "cds", class+".jsa")
	saveArchive = func() {}
	if _, err := os.Stat(archive); err == nil {
		java = append(java, "-XX:SharedArchiveFile="+archive)
	} else if os.MkdirAll(filepath.Dir(archive), 0o755) == nil {
		tmp := fmt.Sprintf("%s.%d-%d.tmp", archive, os.Getpid(), time.Now().UnixNano())
		java = append(java, "-XX:ArchiveClassesAtExit="+tmp)
		saveArchive = func() {
			if os.Rename(tmp, archive) != nil {
				os.Remove(tmp)
			}
		}
	}
	java = append(append(java, c.opts...), "-cp", filepath.Join(c.libs, "*"), class)
	return exec.CommandContext(ctx, "java", append(java, args...)...), saveArchive
}

// cliProperties writes a client properties file (for --command-config)
// into a temporary directory and returns its path.
func cliProperties(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".properties")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// cliResult is what a finished tool printed.
type cliResult struct {
	stdout, stderr string
	err            error // nil for exit status 0
}

// try runs a tool to its end with stdin as input.
func (c *cliTools) try(t *testing.T, stdin, class string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, saveArchive := c.command(ctx, class, args...)
	defer saveArchive()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return cliResult{stdout.String(), stderr.String(), err}
}

// run runs a tool that must succeed: exit status 0 and no ERROR logged.
// It returns stdout; stderr is logged.
func (c *cliTools) run(t *testing.T, stdin, class string, args ...string) string {
	t.Helper()
	start := time.Now()
	r := c.try(t, stdin, class, args...)
	short := class[strings.LastIndex(class, ".")+1:]
	t.Logf("%s %s: %v", short, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if r.err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", short, strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "] ERROR ") {
		t.Fatalf("%s %s logged errors:\n%s", short, strings.Join(args, " "), r.stderr)
	}
	if s := strings.TrimSpace(r.stderr); s != "" {
		t.Logf("%s stderr: %s", short, s)
	}
	return r.stdout
}

// cliLines splits output into its non-empty lines, trimmed.
func cliLines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// cliTable parses the column output of kafka-consumer-groups: the rows after
// the header line that starts with header[0], as maps from column name to
// value.
func cliTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	var cols []string
	var rows []map[string]string
	for _, l := range cliLines(out) {
		f := strings.Fields(l)
		if cols == nil {
			if len(f) > 0 && f[0] == "GROUP" {
				cols = f
			}
			continue
		}
		row := map[string]string{}
		for i, v := range f {
			if i < len(cols) {
				row[cols[i]] = v
			}
		}
		rows = append(rows, row)
	}
	if cols == nil {
		t.Fatalf("no GROUP table in:\n%s", out)
	}
	return rows
}
