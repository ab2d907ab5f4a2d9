package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
)

// The cluster-level tools: kafka-cluster cluster-id, kafka-storage info
// and format,
// kafka-broker-api-versions and kafka-log-dirs, checked against
// meta.properties, franz-go's ApiVersions and the segment files on disk;
// then, on a three-node cluster, kafka-reassign-partitions,
// kafka-leader-election, kafka-metadata-quorum,
// kafka-verifiable-producer across kill -9s, kafka-log-dirs and
// kafka-topics after a node's log dir fails, and, on another cluster,
// kafka-metadata-quorum add-controller and remove-controller.

// cliApiVersionLine matches one API of kafka-broker-api-versions.
var cliApiVersionLine = regexp.MustCompile(`^(\w+)\((\d+)\): (?:UNSUPPORTED|(\d+)(?: to (\d+))? \[usable: \d+\])`)

// testCluster: the cluster id the tool prints is the one in gregor's
// meta.properties, which kafka-storage info reads as Kafka's; kafka-broker-api-versions lists exactly the APIs and
// version ranges gregor's ApiVersions advertises (as franz-go reads them);
// kafka-log-dirs reports gregor's log dir with each partition's size
// equal to its segment file.
func (e *cliEnv) testCluster(t *testing.T) {
	// Asked first: gregor logs its listener before it opens the log dir
	// and answers once it has.
	out := strings.TrimSpace(e.run(t, "", e.cls.cluster, "cluster-id", "--bootstrap-server", e.p.Addr))
	props, id := readMetaProperties(t, e.dir)
	if out != "Cluster ID: "+id {
		t.Errorf("kafka-cluster cluster-id said %q, meta.properties has %s", out, id)
	}

	e.checkStorageInfo(t, props)
	e.checkFormattedDir(t)
	e.checkFormattedMetadataDir(t)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	versions, err := e.adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
		v.EachKeySorted(func(key, min, max int16) { want[int(key)] = fmt.Sprintf("%d-%d", min, max) })
	}
	out = e.admin(t, e.cls.apiVersions)
	if !strings.HasPrefix(out, e.p.Addr+" (id: 1 rack: null") {
		t.Fatalf("kafka-broker-api-versions:\n%s", out)
	}
	got := map[int]string{}
	for _, l := range cliLines(out)[1:] {
		m := cliApiVersionLine.FindStringSubmatch(l)
		if m == nil {
			if l != ")" {
				t.Errorf("unexpected kafka-broker-api-versions line %q", l)
			}
			continue
		}
		if m[3] == "" {
			continue // UNSUPPORTED
		}
		key, _ := strconv.Atoi(m[2])
		max := m[4]
		if max == "" {
			max = m[3]
		}
		got[key] = m[3] + "-" + max
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("kafka-broker-api-versions shows (key: min-max)\n%v\nApiVersions advertises\n%v", got, want)
	}

	e.checkLogDirs(t, cliConsoleTopic, cliPerfTopic)
	e.checkSingleNodeReassign(t)
	c := clustertest.Start(t, clustertest.Options{LogDirs: 2})
	c.WaitBrokers(t, 3, time.Minute)
	e.checkReassign(t, c)
	e.checkQuorum(t, c)
	e.checkReplication(t, c)
	e.checkFailedLogDir(t, c)
	e.checkVoterChanges(t)
	e.checkDedicatedLayout(t)
}

// readMetaProperties reads dir's meta.properties and its cluster.id.
func readMetaProperties(t *testing.T, dir string) ([]byte, string) {
	t.Helper()
	props, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`(?m)^cluster\.id=(\S+)$`).FindSubmatch(props)
	if id == nil {
		t.Fatalf("meta.properties has no cluster.id:\n%s", props)
	}
	return props, string(id[1])
}

// checkLogDirs runs kafka-log-dirs --describe for topics and compares
// every partition's size with its segment files.
func (e *cliEnv) checkLogDirs(t *testing.T, topics ...string) {
	t.Helper()
	out := e.admin(t, e.cls.logDirs, "--describe", "--topic-list", strings.Join(topics, ","))
	ls := cliLines(out)
	if len(ls) != 3 || ls[1] != "Received log directory information from brokers 1" {
		t.Fatalf("kafka-log-dirs:\n%s", out)
	}
	var desc struct {
		Brokers []struct {
			Broker  int
			LogDirs []struct {
				LogDir     string
				Error      *string
				Partitions []struct {
					Partition string
					Size      int64
					OffsetLag int64
					IsFuture  bool
				}
			}
		}
		Version int
	}
	if err := json.Unmarshal([]byte(ls[2]), &desc); err != nil {
		t.Fatalf("kafka-log-dirs JSON: %v\n%s", err, ls[2])
	}
	if len(desc.Brokers) != 1 || desc.Brokers[0].Broker != 1 || len(desc.Brokers[0].LogDirs) != 1 {
		t.Fatalf("kafka-log-dirs: %+v", desc)
	}
	ld := desc.Brokers[0].LogDirs[0]
	if ld.Error != nil || ld.LogDir != e.dir {
		t.Errorf("log dir %q (error %v), want %s", ld.LogDir, ld.Error, e.dir)
	}
	var got, want []string
	for _, p := range ld.Partitions {
		got = append(got, fmt.Sprintf("%s size %d lag %d future %v", p.Partition, p.Size, p.OffsetLag, p.IsFuture))
	}
	for _, topic := range topics {
		dirs, _ := filepath.Glob(filepath.Join(e.dir, topic+"-*"))
		for _, d := range dirs {
			segs, _ := filepath.Glob(filepath.Join(d, "*.log"))
			var size int64
			for _, s := range segs {
				st, err := os.Stat(s)
				if err != nil {
					t.Fatal(err)
				}
				size += st.Size()
			}
			want = append(want, fmt.Sprintf("%s size %d lag 0 future false", filepath.Base(d), size))
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kafka-log-dirs partitions:\n%s\nsegment files:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkStorageInfo runs kafka-storage info over a server.properties naming
// gregor's log dir: Kafka's reader finds the dir and the same
// meta.properties fields (cluster.id, directory.id, node.id, version).
func (e *cliEnv) checkStorageInfo(t *testing.T, props []byte) {
	t.Helper()
	fields := map[string]string{}
	for _, l := range strings.Split(string(props), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	var kv []string
	for k, v := range fields {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	if len(kv) != 4 {
		t.Errorf("meta.properties fields %v, want cluster.id, directory.id, node.id, version", kv)
	}
	server := filepath.Join(t.TempDir(), "server.properties")
	config := "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n" +
		"listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs=" + e.dir + "\n"
	if err := os.WriteFile(server, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.run(t, "", e.cls.storage, "info", "--config", server)
	want := "Found log directory:\n  " + e.dir + "\n\nFound metadata: {" + strings.Join(kv, ", ") + "}\n"
	if strings.TrimSpace(out) != strings.TrimSpace(want) {
		t.Errorf("kafka-storage info said\n%s\nwant\n%s", out, want)
	}
}
