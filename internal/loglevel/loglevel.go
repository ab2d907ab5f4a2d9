// Package loglevel holds a node's named loggers and their levels, which
// Kafka's broker-loggers resource shows and changes at runtime
// (kafka-configs --entity-type broker-loggers --entity-name <node id>
// --describe, --alter --add-config gregor.group=DEBUG, --delete-config).
//
// A level is one of Kafka's log4j names (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL). "root" always has one; another logger either has its own or
// follows root's, and deleting its level makes it follow root's again.
// Nothing is persisted: a restart starts from the levels the process
// was started with, as in Kafka.
//
// Each named logger is an slog.Logger over the node's one handler,
// wrapped so that whether a record is written is decided by that
// logger's current level, read on every call.
package loglevel

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Root is the logger every other follows until it has a level of its own.
const Root = "root"

// kafkaLevels maps Kafka's log level names to slog levels; TRACE and
// FATAL lie beyond slog's DEBUG and ERROR.
var kafkaLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERROR": slog.LevelError,
	"FATAL": slog.LevelError + 4,
}

// ValidLevels lists Kafka's level names as its error messages do: sorted,
// comma-separated.
func ValidLevels() string {
	return strings.Join(slices.Sorted(maps.Keys(kafkaLevels)), ",")
}

// Valid reports whether level is one of Kafka's level names.
func Valid(level string) bool {
	_, ok := kafkaLevels[level]
	return ok
}

// Levels is the set of named loggers of one process.
type Levels struct {
	base slog.Handler

	mu    sync.RWMutex
	own   map[string]string // logger -> its level (root always present)
	known map[string]bool
}

// New returns loggers over base, root at the lowest level base writes.
func New(base slog.Handler) *Levels {
	level := "FATAL"
	for _, name := range []string{"ERROR", "WARN", "INFO", "DEBUG", "TRACE"} {
		if base.Enabled(context.Background(), kafkaLevels[name]) {
			level = name
		}
	}
	return &Levels{base: base, own: map[string]string{Root: level}, known: map[string]bool{Root: true}}
}

// Logger returns the named logger, creating it (following root) the
// first time.
func (l *Levels) Logger(name string) *slog.Logger {
	l.mu.Lock()
	l.known[name] = true
	l.mu.Unlock()
	return slog.New(&handler{levels: l, name: name, next: l.base})
}

// Exists reports whether a logger of that name was ever created.
func (l *Levels) Exists(name string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.known[name]
}

// Effective is every logger's level: its own, or root's.
func (l *Levels) Effective() map[string]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := map[string]string{}
	for name := range l.known {
		out[name] = l.levelLocked(name)
	}
	return out
}

func (l *Levels) levelLocked(name string) string {
	if v, ok := l.own[name]; ok {
		return v
	}
	return l.own[Root]
}

// Set gives a logger its own level.
func (l *Levels) Set(name, level string) error {
	if !Valid(level) {
		return fmt.Errorf("not a log level: %s", level)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.known[name] {
		return fmt.Errorf("no logger %s", name)
	}
	l.own[name] = level
	return nil
}

// Unset makes a logger follow root again; root keeps its level.
func (l *Levels) Unset(name string) error {
	if name == Root {
		return fmt.Errorf("root always has a level")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.own, name)
	return nil
}

func (l *Levels) enabled(name string, level slog.Level) bool {
	l.mu.RLock()
	min := kafkaLevels[l.levelLocked(name)]
	l.mu.RUnlock()
	return level >= min
}

// handler writes a record through next when its logger's level lets it.
type handler struct {
	levels *Levels
	name   string
	next   slog.Handler
}

func (h *handler) Enabled(_ context.Context, level slog.Level) bool {
	return h.levels.enabled(h.name, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{levels: h.levels, name: h.name, next: h.next.WithAttrs(attrs)}
}

func (h *handler) WithGroup(group string) slog.Handler {
	return &handler{levels: h.levels, name: h.name, next: h.next.WithGroup(group)}
}
