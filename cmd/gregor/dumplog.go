package main

// gregor dump-log: Kafka's kafka-dump-log.sh (DumpLogSegments) for Gregor's
// log dirs, which are Kafka's format. Flags take Kafka's names and may come
// anywhere among the files; the dumping itself is logstore.DumpFile.

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gregor-broker/gregor/logstore"
)

const dumpLogUsage = `usage: gregor dump-log [flags] FILE...

Prints log dir files as Kafka's DumpLogSegments does: the batches of a .log
segment, the entries of an .index or .timeindex (each checked against its
.log), the aborted transactions of a .txnindex, the producers of a .snapshot,
the epochs of a leader-epoch-checkpoint.
Mismatches and damage are listed on stderr after all files; the exit status
is 1 when a file could not be read or is damaged, 2 for bad usage.

  --print-data-log         print record keys and values (implies --deep-iteration)
  --deep-iteration         print every record, compressed batches included
  --skip-record-metadata   leave offsets, timestamps and sizes out of record lines
  --verify-index           check index entries without printing them
                           (also --verify-index-only)
  --index-sanity-check     only run the check made when an index is loaded
  --files FILE,FILE...     files, comma separated (Kafka's form)
`

// parseDumpLogArgs returns the options and the files to dump.
func parseDumpLogArgs(args []string) (logstore.DumpOptions, []string, error) {
	var opts logstore.DumpOptions
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			files = append(files, a)
			continue
		}
		if a == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "print-data-log":
			opts.PrintData = true
		case "deep-iteration":
			opts.Deep = true
		case "skip-record-metadata":
			opts.SkipRecordMetadata = true
		case "verify-index", "verify-index-only":
			opts.VerifyIndexOnly = true
		case "index-sanity-check":
			opts.IndexSanityOnly = true
		case "files":
			if !hasValue {
				if i+1 >= len(args) {
					return opts, nil, fmt.Errorf("--files needs a comma-separated list")
				}
				i++
				value = args[i]
			}
			for _, f := range strings.Split(value, ",") {
				if f = strings.TrimSpace(f); f != "" {
					files = append(files, f)
				}
			}
			continue
		default:
			return opts, nil, fmt.Errorf("unknown flag %s", a)
		}
		if hasValue {
			return opts, nil, fmt.Errorf("flag --%s takes no value", name)
		}
	}
	if len(files) == 0 {
		return opts, nil, fmt.Errorf("no files given")
	}
	return opts, files, nil
}

// dumpLog runs the command and returns the exit status.
func dumpLog(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprint(stdout, dumpLogUsage)
			return 0
		}
	}
	opts, files, err := parseDumpLogArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "gregor dump-log: %v\n\n%s", err, dumpLogUsage)
		return 2
	}
	out := bufio.NewWriter(stdout)
	status := 0
	var reports []*logstore.DumpReport
	for _, f := range files {
		r, err := logstore.DumpFile(out, f, opts)
		if err != nil {
			out.Flush() // keep what was dumped before the error above it
			fmt.Fprintf(stderr, "gregor dump-log: %v\n", err)
			status = 1
		}
		if r != nil {
			reports = append(reports, r)
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "gregor dump-log: %v\n", err)
		return 1
	}
	for _, r := range reports {
		r.WriteProblems(stderr)
		if r.Corrupt() {
			status = 1
		}
	}
	return status
}
