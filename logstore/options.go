package logstore

import "log/slog"

// OpenOptions are how OpenDir and OpenDirs open log dirs, besides the logs'
// default Config.
type OpenOptions struct {
	// RecoveryThreads is num.recovery.threads.per.data.dir: how many logs
	// of a dir are opened (and recovered) at once, and closed at once by
	// Close; below 1 means 1.
	RecoveryThreads int
	// MoveThreads is num.replica.alter.log.dirs.threads: how many logs are
	// copied to another dir at once (the other moves wait their turn);
	// below 1, one per log dir, Kafka's default.
	MoveThreads int
	// Logger receives the log manager's messages: recovery, failed dirs,
	// moves, flushes and retention. Nil: slog.Default().
	Logger *slog.Logger
	// CleanerLogger receives the log cleaner's. Nil: Logger.
	CleanerLogger *slog.Logger
}

// loggers fills in the nil loggers.
func (o OpenOptions) loggers() (log, cleaner *slog.Logger) {
	log, cleaner = o.Logger, o.CleanerLogger
	if log == nil {
		log = slog.Default()
	}
	if cleaner == nil {
		cleaner = log
	}
	return log, cleaner
}
