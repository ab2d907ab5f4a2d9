package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
)

// What kafka-storage format leaves in a log dir, which Gregor reads so that
// a dir prepared as Kafka's docs say starts the same cluster: the
// meta.properties (its cluster id, FormattedClusterID) and, in the
// metadata log's bootstrap snapshot, the voters given with
// --initial-controllers or --standalone (FormattedVoters). The snapshot is
// a record batch file: a control batch with the snapshot header, the
// KRaftVersion and the KRaftVoters records, data batches of metadata
// records, and a control batch with the footer. Gregor only reads it.

// bootstrapSnapshot is where kafka-storage format writes the snapshot.
var bootstrapSnapshot = filepath.Join(kraftMetadataDir, "00000000000000000000-0000000000.checkpoint")

// kraftVotersType is the control record type of KRaftVoters (Kafka's
// ControlRecordType.KRAFT_VOTERS).
const kraftVotersType = 6

// FormattedVoter is one voter of a formatted metadata log.
type FormattedVoter struct {
	ID          int32
	DirectoryID [16]byte
	Endpoints   []FormattedEndpoint
}

// FormattedEndpoint is a voter's listener.
type FormattedEndpoint struct {
	Name, Host string
	Port       uint16
}

// FormattedClusterID is the cluster id of the meta.properties in dir, ""
// when there is none.
func FormattedClusterID(dir string) string {
	m, err := readMetaProperties(filepath.Join(dir, metaPropertiesFile))
	if err != nil {
		return ""
	}
	return m.ClusterID
}

// FormattedVoters returns the voters of the bootstrap snapshot that
// kafka-storage format wrote into dir: none when there is no snapshot, or
// when it names none (a static quorum, controller.quorum.voters).
func FormattedVoters(dir string) ([]FormattedVoter, error) {
	data, err := os.ReadFile(filepath.Join(dir, bootstrapSnapshot))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var voters []FormattedVoter
	err = protocol.EachBatch(data, func(h protocol.BatchHeader, batch []byte) error {
		if h.Attributes&protocol.AttrControl == 0 {
			return nil
		}
		return protocol.Records(batch, func(r *protocol.Record) error {
			if len(r.Key) != 4 || binary.BigEndian.Uint16(r.Key[2:]) != kraftVotersType {
				return nil
			}
			var err error
			voters, err = decodeVoters(r.Value)
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, bootstrapSnapshot), err)
	}
	return voters, nil
}

// decodeVoters reads a VotersRecord (version 0, flexible).
func decodeVoters(value []byte) ([]FormattedVoter, error) {
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return nil, fmt.Errorf("KRaftVoters record version %d, want 0", v)
	}
	var voters []FormattedVoter
	for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
		v := FormattedVoter{ID: r.Int32(), DirectoryID: r.Uuid()}
		for m := r.CompactArrayLen(); m > 0 && r.Ok(); m-- {
			e := FormattedEndpoint{Name: r.CompactString(), Host: r.CompactString(), Port: r.Uint16()}
			skipTags(&r)
			v.Endpoints = append(v.Endpoints, e)
		}
		r.Int16() // the KRaftVersionFeature range
		r.Int16()
		skipTags(&r)
		skipTags(&r)
		voters = append(voters, v)
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("KRaftVoters record: %w", err)
	}
	return voters, nil
}

// skipTags skips a flexible message's tagged fields.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}
