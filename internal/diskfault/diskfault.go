// Package diskfault makes a directory fail as a dead disk would, for
// tests, the way Kafka's own tests fail a log dir: the directory is moved
// aside and a plain file takes its place. Files already open in it keep
// working; creating, renaming or removing anything under its path fails
// (ENOTDIR), as does listing it, so the next such operation of whatever
// uses the directory meets an I/O error. Nothing is lost: Restore puts
// the directory back as it was.
package diskfault

import (
	"os"
	"testing"
)

// Fail makes dir fail and returns the function that restores it.
func Fail(t testing.TB, dir string) (restore func()) {
	t.Helper()
	if err := os.Rename(dir, dir+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("a failed disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+".aside", dir); err != nil {
			t.Fatal(err)
		}
	}
}
