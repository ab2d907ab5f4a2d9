package properties

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	text := "# comment\n! also a comment\n\nnode.id=3\nlisteners = PLAINTEXT://127.0.0.1:9999\nlog.dirs: /tmp/x\nnum.partitions 4\nadvertised.listeners=PLAINTEXT://a:1,\\\n  PLAINTEXT2://b:2\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	props, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node.id": "3", "listeners": "PLAINTEXT://127.0.0.1:9999", "log.dirs": "/tmp/x",
		"num.partitions": "4", "advertised.listeners": "PLAINTEXT://a:1,PLAINTEXT2://b:2"}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
	if len(props) != len(want) {
		t.Errorf("parsed %v", props)
	}
}
