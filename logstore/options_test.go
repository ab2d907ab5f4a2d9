package logstore

import (
	"bytes"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The log manager's messages (here: recovering a torn tail) go to
// OpenOptions.Logger, the cleaner's to CleanerLogger, none to the default.
// The buffers need no lock: recovery ends within OpenDir, and the clean
// runs on this goroutine (the cleaner threads are stopped).
func TestMessagesGoToTheGivenLoggers(t *testing.T) {
	image, batches := crashImage(t, -1)
	segs, seg, pos := batchPositions(t, image, batches)
	last := len(batches) - 1
	if seg[last] != segs[len(segs)-1] {
		t.Fatal("the last batch is not in the last segment")
	}
	if err := os.Truncate(filepath.Join(image, "crash-0", offsetName(seg[last])+logSuffix), pos[last]+int64(len(batches[last]))/2); err != nil {
		t.Fatal(err)
	}
	var manager, cleaner, other bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&other, nil)))
	d, err := OpenDir(image, "", 1, testConfig(), OpenOptions{Logger: slog.New(slog.NewTextHandler(&manager, nil)),
		CleanerLogger: slog.New(slog.NewTextHandler(&cleaner, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetCleaner(0, time.Second)
	if !strings.Contains(manager.String(), `msg="logstore: invalid batch found during recovery, truncating" segment=`) {
		t.Errorf("the log manager's logger did not get the torn tail's warning:\n%s", manager.String())
	}

	l, err := d.CreateLog(TopicPartition{"compacted", 0}, RandomUUID(), compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	newModel().fillKeyed(t, l, rand.New(rand.NewSource(7)), 80, 10)
	if _, err := d.CleanNow(l.TopicPartition()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cleaner.String(), `msg="logstore: cleaned log" partition=compacted-0 dirty.from=0 dirty.to=`) {
		t.Errorf("the cleaner's logger did not get the clean:\n%s", cleaner.String())
	}
	if strings.Contains(manager.String(), "cleaned log") || strings.Contains(cleaner.String(), "recovery") || other.String() != "" {
		t.Errorf("messages went astray:\nlog manager: %s\ncleaner: %s\ndefault: %s", manager.String(), cleaner.String(), other.String())
	}
}
