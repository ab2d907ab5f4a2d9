package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kafkaVersion is the Apache Kafka release measured; bench/kafka/pom.xml
// names the same one.
const kafkaVersion = "4.1.2"

// jvmPerformanceOpts and jmxOpts are what bin/kafka-run-class.sh sets
// (KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_JMX_OPTS); kafka-server-start.sh adds
// the 1 GB heap and -loggc.
var (
	jvmPerformanceOpts = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
		"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
		"-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"}
	jmxOpts = []string{"-Dcom.sun.management.jmxremote=true",
		"-Dcom.sun.management.jmxremote.authenticate=false", "-Dcom.sun.management.jmxremote.ssl=false"}
)

// fetchKafka resolves Kafka's jars from Maven Central into the cache dir
// (once) and returns the directory holding them.
func fetchKafka(repo, cache string) (string, error) {
	libs := filepath.Join(cache, "kafka-"+kafkaVersion, "libs")
	if m, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-"+kafkaVersion+".jar")); len(m) == 1 {
		return libs, nil
	}
	logf("fetching Apache Kafka %s jars from Maven Central into %s", kafkaVersion, libs)
	cmd := exec.Command("mvn", "-q", "-B", "-f", filepath.Join(repo, "bench/kafka/pom.xml"),
		"dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+libs)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mvn: %w", err)
	}
	return libs, nil
}

// javaCmd builds a java command line the way kafka-run-class.sh does.
func (e *env) javaCmd(heap []string, logDir, log4j string, gcLog bool, class string, args ...string) *exec.Cmd {
	a := append([]string{}, heap...)
	a = append(a, jvmPerformanceOpts...)
	if gcLog {
		a = append(a, "-Xlog:gc*:file="+filepath.Join(logDir, "kafkaServer-gc.log")+":time,tags:filecount=10,filesize=100M")
	}
	a = append(a, jmxOpts...)
	a = append(a, "-Dkafka.logs.dir="+logDir,
		"-Dlog4j2.configurationFile="+filepath.Join(e.repo, "bench/kafka", log4j),
		"-cp", filepath.Join(e.kafkaLibs, "*"), class)
	return exec.Command("java", append(a, args...)...)
}

// startKafka formats the log dir (fresh runs) as `kafka-storage.sh format
// --standalone` does and starts kafka.Kafka as kafka-server-start.sh does.
func (e *env) startKafka(dataDir string, format bool) (*server, error) {
	props := filepath.Join(dataDir, "server.properties")
	port := 0
	if format {
		var err error
		if props, port, err = e.writeProperties(dataDir); err != nil {
			return nil, err
		}
		if err := e.formatKafka(dataDir, props, "--standalone"); err != nil {
			return nil, err
		}
	} else {
		b, err := os.ReadFile(props)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "listeners=PLAINTEXT://127.0.0.1:") {
				fmt.Sscanf(strings.TrimPrefix(line, "listeners=PLAINTEXT://127.0.0.1:"), "%d", &port)
			}
		}
	}
	return e.launchKafka(sysKafka, dataDir, props, port)
}

// kafkaClusterID is the cluster id every Kafka log dir is formatted with.
const kafkaClusterID = "gregorbenchAAAAAAAAAAA"

// formatKafka runs `kafka-storage.sh format -t ID -c props` with extra
// flags (--standalone for one node; none for a static voter set).
func (e *env) formatKafka(dataDir, props string, extra ...string) error {
	args := append([]string{"format", "-t", kafkaClusterID, "-c", props}, extra...)
	cmd := e.javaCmd([]string{"-Xmx256M"}, dataDir, "tools-log4j2.properties", false, "kafka.tools.StorageTool", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafka-storage format: %v\n%s", err, out)
	}
	return nil
}

// launchKafka starts kafka.Kafka on props as kafka-server-start.sh does
// (-Xmx1G -Xms1G) and waits until it answers on its client port.
func (e *env) launchKafka(name, dataDir, props string, port int) (*server, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := e.javaCmd([]string{"-Xmx1G", "-Xms1G"}, dataDir, "log4j2.properties", true, "kafka.Kafka", props)
	return startProcess(name, addr, cmd, filepath.Join(dataDir, "kafka.out"), 5*time.Minute)
}

// perfCmd runs one of Kafka's perf-test tools (kafka-run-class.sh defaults:
// 256 MB heap, tools logging).
func (e *env) perfCmd(class string, args ...string) *exec.Cmd {
	return e.javaCmd([]string{"-Xmx256M"}, e.work, "tools-log4j2.properties", false, class, args...)
}
