package logstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// metaProperties is a KRaft (version 1) meta.properties file.
type metaProperties struct {
	Version     int
	NodeID      int32
	ClusterID   string
	DirectoryID [16]byte
}

// javaDate is java.util.Date.toString's layout, which Properties.store
// writes as the second comment line.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

// bytes renders the file as Kafka's PropertiesUtils.writePropertiesFile
// does (Properties.store with an empty comment), keys in the order Kafka's
// Hashtable happens to produce for these four.
func (m metaProperties) bytes(now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("#\n#" + now.Format(javaDate) + "\n")
	fmt.Fprintf(&b, "node.id=%d\n", m.NodeID)
	fmt.Fprintf(&b, "directory.id=%s\n", UUIDString(m.DirectoryID))
	fmt.Fprintf(&b, "version=%d\n", m.Version)
	fmt.Fprintf(&b, "cluster.id=%s\n", m.ClusterID)
	return b.Bytes()
}

// parseProperties reads the simple subset of java.util.Properties that
// meta.properties uses: key=value or key:value lines, # and ! comments.
func parseProperties(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			out[line] = ""
			continue
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out
}

func readMetaProperties(path string) (metaProperties, error) {
	var m metaProperties
	data, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	p := parseProperties(data)
	if m.Version, err = strconv.Atoi(p["version"]); err != nil {
		return m, fmt.Errorf("%s: bad version %q", path, p["version"])
	}
	if m.Version != 1 {
		return m, fmt.Errorf("%s: version %d is not a KRaft meta.properties (want 1)", path, m.Version)
	}
	id, err := strconv.ParseInt(p["node.id"], 10, 32)
	if err != nil {
		return m, fmt.Errorf("%s: bad node.id %q", path, p["node.id"])
	}
	m.NodeID = int32(id)
	if m.ClusterID = p["cluster.id"]; m.ClusterID == "" {
		return m, fmt.Errorf("%s: cluster.id was not found", path)
	}
	if s, ok := p["directory.id"]; ok {
		if m.DirectoryID, err = ParseUUID(s); err != nil {
			return m, fmt.Errorf("%s: directory.id: %w", path, err)
		}
	}
	return m, nil
}

// DirectoryID is the directory.id of the meta.properties in the dir at
// path (zero when the file has none).
func DirectoryID(path string) ([16]byte, error) {
	m, err := readMetaProperties(filepath.Join(path, metaPropertiesFile))
	return m.DirectoryID, err
}

// EnsureMetaProperties gives the dir at path a meta.properties for
// clusterID and nodeID unless it has one (a metadata dir that is no log
// dir, which holds no logs), and returns its directory id.
func EnsureMetaProperties(path, clusterID string, nodeID int32) ([16]byte, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return [16]byte{}, err
	}
	m, err := ensureMetaProperties(path, clusterID, nodeID)
	return m.DirectoryID, err
}
