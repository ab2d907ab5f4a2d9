package compat

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// The Spring Boot demo (compat/spring-demo) is a Spring Boot 4 application
// with its own @SpringBootTest, which starts the gregor binary it is given
// (GREGOR_BINARY) on a free port. This test runs it with Maven, offline:
// `make compat-deps` resolved its dependencies into ~/.m2 beforehand. Each
// JUnit method of the demo's test is one feature of the matrix; the
// results come from Surefire's XML report and the versions from a file the
// demo's test writes (the jars' own version information).

// springFeatures maps the demo's test methods to matrix features.
var springFeatures = []struct{ method, feature string }{
	{"topicBeans", "topic-beans"},
	{"templateSend", "template-send"},
	{"json", "json"},
	{"listenerGroup", "listener-group"},
	{"commit", "commit"},
	{"dlt", "dlt"},
	{"retryTopics", "retry-topics"},
	{"transactions", "transactions"},
	{"groupProtocol", "group-protocol"},
}

func TestSpringDemo(t *testing.T) {
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		t.Fatal("mvn not found: run `make compat-deps` first")
	}
	dir, err := filepath.Abs("spring-demo")
	if err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "target", "surefire-reports")
	versionsFile := filepath.Join(dir, "target", "client-versions.properties")
	os.RemoveAll(reports)
	os.Remove(versionsFile)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-o", "-q", "-B", "-Dstyle.color=never",
		"-Dmaven.test.redirectTestOutputToFile=true", "-Dgregor.binary="+bin, "test")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GREGOR_BINARY="+bin)
	// Maven, the forked test JVM and the broker it starts share a process
	// group, killed whole on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, runErr := cmd.CombinedOutput()

	version := springVersion(versionsFile)
	cases, err := readSurefire(reports)
	if err != nil || len(cases) == 0 {
		hint := ""
		if strings.Contains(string(out), "offline") {
			hint = "\nMaven lacks dependencies: run `make compat-deps` first"
		}
		for _, f := range springFeatures {
			record("spring-kafka", version, f.feature, false, "the demo's tests did not run")
		}
		t.Fatalf("mvn test in %s: %v (reports: %v)%s\n%s", dir, runErr, err, hint, lastLines(string(out), 60))
	}
	for _, f := range springFeatures {
		c, ok := cases[f.method]
		switch {
		case !ok:
			record("spring-kafka", version, f.feature, false, "test method did not run")
			t.Errorf("spring-demo: %s did not run", f.method)
		case c.problem != "":
			record("spring-kafka", version, f.feature, false, firstLine(c.problem))
			t.Errorf("spring-demo: %s (%s) failed: %s", f.method, f.feature, c.problem)
		default:
			record("spring-kafka", version, f.feature, true, "")
		}
	}
	mapped := map[string]bool{}
	for _, f := range springFeatures {
		mapped[f.method] = true
	}
	for method, c := range cases {
		if !mapped[method] && c.problem != "" {
			t.Errorf("spring-demo: %s failed: %s", method, c.problem)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("mvn test: %v\n%s", runErr, lastLines(string(out), 60))
	}
	if t.Failed() {
		t.Logf("test output: %s/*-output.txt, broker log: %s", reports, filepath.Join(dir, "target", "gregor.log"))
	}
}

// springVersion is "<spring-kafka> (Boot <v>, kafka-clients <v>)" from the
// file the demo's test writes, or "unknown" when it did not run.
func springVersion(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, val, ok := strings.Cut(sc.Text(), "="); ok {
			v[k] = val
		}
	}
	if v["spring-kafka"] == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s (Boot %s, kafka-clients %s)", v["spring-kafka"], v["spring-boot"], v["kafka-clients"])
}

type surefireCase struct {
	problem string // failure or error message; empty when the test passed
}

// readSurefire reads every TEST-*.xml report in dir, by test method name.
func readSurefire(dir string) (map[string]surefireCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "TEST-*.xml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Surefire reports in %s", dir)
	}
	type problem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
	}
	type report struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure []problem `xml:"failure"`
			Error   []problem `xml:"error"`
			Skipped []problem `xml:"skipped"`
		} `xml:"testcase"`
	}
	cases := map[string]surefireCase{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var suite report
		if err := xml.Unmarshal(data, &suite); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		for _, c := range suite.Cases {
			var msgs []string
			for _, p := range append(c.Failure, c.Error...) {
				msgs = append(msgs, p.Type+": "+p.Message)
			}
			for _, p := range c.Skipped {
				msgs = append(msgs, "skipped "+p.Message)
			}
			cases[strings.TrimSuffix(c.Name, "()")] = surefireCase{problem: strings.Join(msgs, "; ")}
		}
	}
	return cases, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
