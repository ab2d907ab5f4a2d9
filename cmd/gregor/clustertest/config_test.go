package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestExampleConfigs starts config/cluster/node{1,2,3}.properties, with
// only the ports and log dirs moved (the harness's overrides), and checks
// that Gregor knows every key in them and that they form one cluster.
func TestExampleConfigs(t *testing.T) {
	var files []string
	for i := 1; i <= 3; i++ {
		f, err := filepath.Abs(filepath.Join("..", "..", "..", "config", "cluster", fmt.Sprintf("node%d.properties", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	c := Start(t, Options{Properties: files})
	c.WaitBrokers(t, 3, 60*time.Second)
	unknown := regexp.MustCompile(`unknown config key \S+`)
	for _, n := range c.Nodes {
		logs, err := os.ReadFile(n.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if m := unknown.FindAll(logs, -1); m != nil {
			t.Errorf("node %d: %q", n.ID, m)
		}
	}
}
