package loglevel

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// A named logger writes at root's level until it has its own, and again
// after its own is unset; root's level starts as the handler's.
func TestLevelsFollowRootUntilSet(t *testing.T) {
	var out bytes.Buffer
	levels := New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root, group := levels.Logger(Root), levels.Logger("gregor.group").With("k", "v")
	if got := levels.Effective(); got[Root] != "WARN" || got["gregor.group"] != "WARN" {
		t.Fatalf("levels at start: %v, want WARN from the handler", got)
	}
	group.Info("hidden")
	if err := levels.Set("gregor.group", "DEBUG"); err != nil {
		t.Fatal(err)
	}
	group.Debug("shown", "n", 1)
	root.Info("hidden too")
	if err := levels.Unset("gregor.group"); err != nil {
		t.Fatal(err)
	}
	group.Debug("hidden again")
	if err := levels.Set(Root, "TRACE"); err != nil {
		t.Fatal(err)
	}
	group.Log(context.Background(), slog.LevelDebug-4, "traced")
	text := out.String()
	if strings.Contains(text, "hidden") || !strings.Contains(text, "msg=shown k=v n=1") || !strings.Contains(text, "msg=traced") {
		t.Errorf("written:\n%s", text)
	}
	if err := levels.Set("gregor.nothing", "INFO"); err == nil || levels.Exists("gregor.nothing") {
		t.Error("a level was set for a logger that does not exist")
	}
	if err := levels.Set(Root, "VERBOSE"); err == nil {
		t.Error("VERBOSE was taken as a level")
	}
	if err := levels.Unset(Root); err == nil {
		t.Error("root's level was unset")
	}
	if got := ValidLevels(); got != "DEBUG,ERROR,FATAL,INFO,TRACE,WARN" {
		t.Errorf("ValidLevels() = %q, want Kafka's sorted list", got)
	}
}

// A logger created with its own level keeps it whatever root does, until
// that level is deleted.
func TestLoggerAtHasItsOwnLevel(t *testing.T) {
	var out bytes.Buffer
	levels := New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
	requests := levels.LoggerAt("kafka.request.logger", "WARN")
	if err := levels.Set(Root, "TRACE"); err != nil {
		t.Fatal(err)
	}
	requests.Debug("hidden")
	if got := levels.Effective(); got["kafka.request.logger"] != "WARN" || got[Root] != "TRACE" {
		t.Fatalf("levels: %v", got)
	}
	if levels.LoggerAt("kafka.request.logger", "ERROR").Enabled(context.Background(), slog.LevelError) != true ||
		levels.Effective()["kafka.request.logger"] != "WARN" {
		t.Error("asking for the logger again changed its level")
	}
	if err := levels.Unset("kafka.request.logger"); err != nil {
		t.Fatal(err)
	}
	requests.Debug("shown")
	if text := out.String(); strings.Contains(text, "hidden") || !strings.Contains(text, "msg=shown") {
		t.Errorf("written:\n%s", text)
	}
}

// As in log4j, a logger without a level of its own follows its nearest
// dotted ancestor that has one, and root only when none has; a logger's
// own level wins over its ancestors'.
func TestLevelsFollowTheNearestAncestor(t *testing.T) {
	var out bytes.Buffer
	levels := New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	levels.Logger("kafka")
	txn := levels.Logger("kafka.coordinator.transaction")
	group := levels.Logger("org.apache.kafka.coordinator.group")
	if err := levels.Set("kafka", "WARN"); err != nil {
		t.Fatal(err)
	}
	txn.Info("hidden")
	group.Info("group shown")
	if got := levels.Effective(); got["kafka.coordinator.transaction"] != "WARN" || got["org.apache.kafka.coordinator.group"] != "INFO" {
		t.Fatalf("levels with kafka at WARN: %v", got)
	}
	if err := levels.Set("kafka.coordinator.transaction", "DEBUG"); err != nil {
		t.Fatal(err)
	}
	txn.Debug("txn shown")
	if err := levels.Unset("kafka.coordinator.transaction"); err != nil {
		t.Fatal(err)
	}
	txn.Info("hidden again")
	if err := levels.Unset("kafka"); err != nil {
		t.Fatal(err)
	}
	txn.Info("root's again")
	text := out.String()
	if strings.Contains(text, "hidden") || !strings.Contains(text, "group shown") || !strings.Contains(text, "txn shown") ||
		!strings.Contains(text, "root's again") {
		t.Errorf("written:\n%s", text)
	}
}
