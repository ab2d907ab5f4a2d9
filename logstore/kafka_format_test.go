package logstore

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The snapshots in testdata were written by Kafka 4.4's kafka-storage
// format: with --initial-controllers
// "1@127.0.0.1:19093:AAAAAAAAAAAAAAAAAAAAAQ,2@127.0.0.1:29093:AAAAAAAAAAAAAAAAAAAAAg,3@127.0.0.1:39093:AAAAAAAAAAAAAAAAAAAAAw",
// with --standalone (node 1, CONTROLLER://127.0.0.1:19093, directory id
// cg9mycngRLeqjC4emwSWEg), and for controller.quorum.voters, which
// records no voters.
func TestFormattedVoters(t *testing.T) {
	dirID := func(s string) [16]byte {
		u, err := ParseUUID(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	endpoint := func(port uint16) []FormattedEndpoint {
		return []FormattedEndpoint{{Name: "CONTROLLER", Host: "127.0.0.1", Port: port}}
	}
	for _, c := range []struct {
		file string
		want []FormattedVoter
	}{
		{"kafka-4.4-initial-controllers.checkpoint", []FormattedVoter{
			{1, dirID("AAAAAAAAAAAAAAAAAAAAAQ"), endpoint(19093)},
			{2, dirID("AAAAAAAAAAAAAAAAAAAAAg"), endpoint(29093)},
			{3, dirID("AAAAAAAAAAAAAAAAAAAAAw"), endpoint(39093)},
		}},
		{"kafka-4.4-standalone.checkpoint", []FormattedVoter{{1, dirID("cg9mycngRLeqjC4emwSWEg"), endpoint(19093)}}},
		{"kafka-4.4-static-voters.checkpoint", nil},
	} {
		dir := t.TempDir()
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, kraftMetadataDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, bootstrapSnapshot), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := FormattedVoters(dir)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.file, got, err, c.want)
		}
		// A torn snapshot is an error, not an empty voter set.
		if c.want != nil {
			if err := os.WriteFile(filepath.Join(dir, bootstrapSnapshot), data[:len(data)-100], 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := FormattedVoters(dir); err == nil {
				t.Errorf("%s cut short: %+v without an error", c.file, got)
			}
		}
	}
	if got, err := FormattedVoters(t.TempDir()); got != nil || err != nil {
		t.Errorf("a dir kafka-storage did not format: %+v, %v", got, err)
	}
}
