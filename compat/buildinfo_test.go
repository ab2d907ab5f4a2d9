package compat

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// The matrix rows of the Go clients name the version of each client module
// as the build resolved it. A test binary carries no dependency list in
// runtime/debug.ReadBuildInfo (its Deps are empty), so the versions come
// from `go list -m <module>`, which reads the same go.mod the test binary
// was built from. Asking for the named modules only (not `all`) needs no
// download beyond what the build already fetched.

var moduleVersions = struct {
	sync.Mutex
	byPath map[string]string
}{byPath: map[string]string{}}

// moduleVersion returns the resolved version of the Go module at path,
// without the leading "v".
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	moduleVersions.Lock()
	defer moduleVersions.Unlock()
	if v, ok := moduleVersions.byPath[path]; ok {
		return v
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}", path).Output()
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if err != nil || v == "" {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -m %s: %q %v %s", path, out, err, stderr)
	}
	moduleVersions.byPath[path] = v
	return v
}

// TestModuleVersion checks the helper against modules the compat tests
// link: real semantic versions, not empty.
func TestModuleVersion(t *testing.T) {
	for path, major := range map[string]string{
		"github.com/twmb/franz-go":                      "1",
		"github.com/confluentinc/confluent-kafka-go/v2": "2",
	} {
		v := moduleVersion(t, path)
		if parts := strings.Split(v, "."); len(parts) != 3 || parts[0] != major {
			t.Errorf("%s version %q, want %s.x.y", path, v, major)
		}
	}
}
